-- The pipeline: images (builds), releases, deployments, the runtime's instances,
-- metric samples, GitHub hooks, and the bookkeeping of durable pipeline jobs.

CREATE TABLE images (
  id               uuid PRIMARY KEY,
  application_id   uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  version          integer NOT NULL,
  status           text NOT NULL DEFAULT 'building' CHECK (status IN ('building', 'built', 'error')),
  built            boolean NOT NULL DEFAULT false,
  error            boolean NOT NULL DEFAULT false,
  error_detail     text,
  repository_name  text NOT NULL,             -- org/project/app
  image_id         text,                      -- content digest sha256:…
  build_slug       text,
  build_ref        text,                      -- the ref asked for (branch, tag or commit)
  commit_sha       text,
  dockerfile       text,
  procfile         text,
  processes        jsonb,                     -- {name: {cmd, env}}
  image_metadata   jsonb,
  artifact_path    text,                      -- where the built artifact lives on disk
  log_text         text NOT NULL DEFAULT '',
  build_step       jsonb,                     -- {steps, current, substep?}
  job_id           text,
  started_at       timestamptz,
  finished_at      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT images_app_version_key UNIQUE (application_id, version)
);
CREATE INDEX images_app_built_idx ON images (application_id, version DESC) WHERE built;

CREATE TABLE releases (
  id                     uuid PRIMARY KEY,
  application_id         uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id         uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  version                integer NOT NULL,
  platform               text NOT NULL DEFAULT 'wind',
  image_ref              uuid REFERENCES images (id) ON DELETE RESTRICT,
  status                 text NOT NULL DEFAULT 'building' CHECK (status IN ('building', 'built', 'error')),
  built                  boolean NOT NULL DEFAULT false,
  error                  boolean NOT NULL DEFAULT false,
  error_detail           text,
  configuration          jsonb,             -- frozen config for DISPLAY (secrets masked)
  configuration_sealed   text,              -- frozen values, sealed, used to run
  process_counts         jsonb,
  process_pod_classes    jsonb,
  processes              jsonb,
  health_check_path      text NOT NULL DEFAULT '/',
  health_check_host      text,
  deployment_timeout     integer NOT NULL DEFAULT 180,
  image_changes          jsonb,             -- {added, removed, changed}
  configuration_changes  jsonb,             -- {added, removed, changed}
  release_metadata       jsonb,
  commit_sha             text,
  log_text               text NOT NULL DEFAULT '',
  build_step             jsonb,
  job_id                 text,
  started_at             timestamptz,
  finished_at            timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT releases_app_env_version_key UNIQUE (application_id, environment_id, version)
);
CREATE INDEX releases_image_idx ON releases (image_ref);

CREATE TABLE deployments (
  id              uuid PRIMARY KEY,
  application_id  uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id  uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  release_id      uuid NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
  status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'deploying', 'complete', 'error')),
  complete        boolean NOT NULL DEFAULT false,
  error           boolean NOT NULL DEFAULT false,
  error_detail    text,
  deploy_metadata jsonb,                    -- includes the app's url through the router
  deploy_log      text NOT NULL DEFAULT '',
  deploy_step     jsonb,
  job_id          text,
  started_at      timestamptz,
  finished_at     timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deployments_app_env_created_idx ON deployments (application_id, environment_id, created_at DESC);
CREATE INDEX deployments_release_idx ON deployments (release_id);

-- The runtime's record of the processes it runs.
CREATE TABLE instances (
  id              uuid PRIMARY KEY,
  application_id  uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id  uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  release_id      uuid REFERENCES releases (id) ON DELETE CASCADE,
  deployment_id   uuid REFERENCES deployments (id) ON DELETE SET NULL,
  process_type    text NOT NULL,
  ordinal         integer NOT NULL,
  host            text,
  port            integer,
  pid             integer,
  state           text NOT NULL DEFAULT 'starting' CHECK (state IN ('starting', 'healthy', 'running', 'crashed', 'stopped')),
  restart_count   integer NOT NULL DEFAULT 0,
  worker_id       text,
  started_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instances_app_env_idx ON instances (application_id, environment_id);

CREATE TABLE metric_samples (
  application_id      uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id      uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  sampled_at          timestamptz NOT NULL,
  cpu_usage_m         integer NOT NULL DEFAULT 0,
  memory_usage_bytes  bigint NOT NULL DEFAULT 0,
  pod_count           integer NOT NULL DEFAULT 0,
  restart_count       integer NOT NULL DEFAULT 0,
  PRIMARY KEY (application_id, environment_id, sampled_at)
);

CREATE TABLE github_hooks (
  id           uuid PRIMARY KEY,
  event        text NOT NULL,
  delivery_id  text,
  repository   text,
  ref          text,
  after_sha    text,
  payload      jsonb NOT NULL,
  triggered    jsonb NOT NULL DEFAULT '[]',   -- which applications were started
  created_at   timestamptz NOT NULL DEFAULT now()
);

-- Processes that run pipeline jobs; a stale heartbeat marks one as dead.
CREATE TABLE workers (
  id            text PRIMARY KEY,
  hostname      text NOT NULL,
  pid           integer NOT NULL,
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now(),
  stopped_at    timestamptz
);

-- Which worker runs which pipeline job right now (a row lives while the job runs), so a
-- restart can settle the jobs of a dead worker instead of leaving them active.
CREATE TABLE job_runs (
  job_id          uuid PRIMARY KEY,
  worker_id       text NOT NULL,
  kind            text NOT NULL,
  application_id  uuid,
  data            jsonb NOT NULL,
  started_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_runs_worker_idx ON job_runs (worker_id);
