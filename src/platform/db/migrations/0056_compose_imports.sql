-- Compose imports (issue 34): which application or add-on each service of a project's Compose
-- file became, so that importing the same file again updates them instead of creating copies.
CREATE TABLE compose_imports (
  project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  service         text NOT NULL,
  -- Exactly one of the two: an application (built or image) or an add-on (postgres, redis).
  application_id  uuid REFERENCES applications (id) ON DELETE CASCADE,
  addon_id        uuid REFERENCES addons (id) ON DELETE CASCADE,
  -- The image reference an image service was last deployed from (a changed tag deploys again).
  image           text,
  imported_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, service),
  CHECK ((application_id IS NULL) <> (addon_id IS NULL))
);
