-- Each application's last release version (issue 35). A release takes the next one with
-- INSERT … ON CONFLICT DO UPDATE in the statement that inserts the release: the counter's row is
-- locked for that one statement and the version is read from its newest row (never a snapshot
-- older than the lock), where a release used to lock the application's row, read max(version)
-- and write in a transaction of several round trips, every other release waiting behind it.
CREATE TABLE release_versions (
  application_id uuid PRIMARY KEY REFERENCES applications (id) ON DELETE CASCADE,
  last_version   integer NOT NULL
);

INSERT INTO release_versions (application_id, last_version)
  SELECT application_id, max(version) FROM releases GROUP BY application_id;
