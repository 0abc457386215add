-- Commands run inside running instances (`slipway exec`): who opened one, where, what, and how it ended.
-- A session is opened by POST .../instances/{instance}/exec and attached once, within a minute, over a WebSocket.
CREATE TABLE exec_sessions (
  id              uuid PRIMARY KEY,
  application_id  uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id  uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  instance_id     uuid NOT NULL,
  instance_name   text NOT NULL,
  user_id         uuid REFERENCES users (id) ON DELETE SET NULL,
  command         text,
  tty             boolean NOT NULL DEFAULT false,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz,
  finished_at     timestamptz,
  exit_code       integer
);
CREATE INDEX exec_sessions_application ON exec_sessions (application_id, created_at DESC);
