-- A cancel asked of a running pipeline job (POST /deployments/{id}/cancel): its worker, in any
-- process, sees it at its next heartbeat and aborts the job.
ALTER TABLE pipeline_jobs ADD COLUMN cancel_requested_at timestamptz;
