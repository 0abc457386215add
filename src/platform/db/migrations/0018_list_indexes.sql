-- Deployment lists and the latest deployment read newest first by id (time-ordered UUIDv7):
-- without these, page 1 of an application with 10^5 deployments sorted them all.
CREATE INDEX deployments_app_id_idx ON deployments (application_id, id DESC);
CREATE INDEX deployments_app_env_id_idx ON deployments (application_id, environment_id, id DESC);
