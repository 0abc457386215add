-- Each release and deployment carries its environment's slug, and each deployment its release's
-- version (issue 35). The application's detail and list name them for its newest release and
-- deployment: read from the record itself, PostgreSQL no longer sets up two joins to environments
-- and one to releases on every execution of those statements (~35–50 µs each).
--
-- The copies are written by PostgreSQL, never by a caller, so no writer (an import, a fixture, a
-- future route) can store a slug the environment does not have. Neither source value changes today
-- (an environment's slug is fixed at its creation, a release's version at its insert); should one
-- ever change, the triggers at the end pass it on to the copies.
ALTER TABLE releases ADD COLUMN environment_slug text;
UPDATE releases r SET environment_slug = e.slug FROM environments e WHERE e.id = r.environment_id;
ALTER TABLE releases ALTER COLUMN environment_slug SET NOT NULL;

ALTER TABLE deployments ADD COLUMN environment_slug text, ADD COLUMN release_version integer;
UPDATE deployments d SET environment_slug = e.slug, release_version = r.version
  FROM environments e, releases r WHERE e.id = d.environment_id AND r.id = d.release_id;
ALTER TABLE deployments ALTER COLUMN environment_slug SET NOT NULL, ALTER COLUMN release_version SET NOT NULL;

-- A missing environment or release is refused with the foreign key's code (23503), as before these
-- columns; a NULL reference is left to its own NOT NULL constraint (23502).
CREATE FUNCTION slipway_copy_environment_slug() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.environment_id IS NULL THEN RETURN NEW; END IF;
  SELECT e.slug INTO NEW.environment_slug FROM environments e WHERE e.id = NEW.environment_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'environment % does not exist', NEW.environment_id USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE FUNCTION slipway_copy_release_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.release_id IS NULL THEN RETURN NEW; END IF;
  SELECT r.version INTO NEW.release_version FROM releases r WHERE r.id = NEW.release_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'release % does not exist', NEW.release_id USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER releases_environment_slug BEFORE INSERT OR UPDATE OF environment_id, environment_slug ON releases
  FOR EACH ROW EXECUTE FUNCTION slipway_copy_environment_slug();
CREATE TRIGGER deployments_environment_slug BEFORE INSERT OR UPDATE OF environment_id, environment_slug ON deployments
  FOR EACH ROW EXECUTE FUNCTION slipway_copy_environment_slug();
CREATE TRIGGER deployments_release_version BEFORE INSERT OR UPDATE OF release_id, release_version ON deployments
  FOR EACH ROW EXECUTE FUNCTION slipway_copy_release_version();

-- A changed source passes on to its copies (each copy's own trigger above reads the new value).
CREATE FUNCTION slipway_pass_on_environment_slug() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE releases SET environment_slug = NEW.slug WHERE environment_id = NEW.id;
  UPDATE deployments SET environment_slug = NEW.slug WHERE environment_id = NEW.id;
  RETURN NULL;
END $$;

CREATE FUNCTION slipway_pass_on_release_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE deployments SET release_version = NEW.version WHERE release_id = NEW.id;
  RETURN NULL;
END $$;

CREATE TRIGGER environments_pass_on_slug AFTER UPDATE OF slug ON environments
  FOR EACH ROW WHEN (OLD.slug IS DISTINCT FROM NEW.slug) EXECUTE FUNCTION slipway_pass_on_environment_slug();
CREATE TRIGGER releases_pass_on_version AFTER UPDATE OF version ON releases
  FOR EACH ROW WHEN (OLD.version IS DISTINCT FROM NEW.version) EXECUTE FUNCTION slipway_pass_on_release_version();
