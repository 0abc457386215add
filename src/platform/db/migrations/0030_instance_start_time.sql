-- The start time of an instance's process (/proc/<pid>/stat field 22, clock ticks since boot),
-- recorded with its pid: a restarted control plane re-adopts the instance only when both match,
-- so a pid the kernel gave to another process is never taken for it.
ALTER TABLE instances
  ADD COLUMN pid_start_ticks text;
