-- Issue 33: maintenance mode per environment. A row means the edge answers every request for the
-- environment's applications with a 503 page while their instances keep running.
CREATE TABLE environment_maintenance (
  environment_id uuid PRIMARY KEY REFERENCES environments (id) ON DELETE CASCADE,
  -- Tenant text shown on the page (escaped by the edge); null: the default page naming the application.
  message        text CHECK (message IS NULL OR char_length(message) <= 2000),
  retry_after    integer NOT NULL CHECK (retry_after BETWEEN 1 AND 86400),
  enabled_by     uuid REFERENCES users (id) ON DELETE SET NULL,
  enabled_at     timestamptz NOT NULL DEFAULT now()
);
