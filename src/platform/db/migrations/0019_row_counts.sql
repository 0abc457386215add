-- Exact totals for the paginated lists of an application (images, releases, deployments),
-- kept by triggers so page 1 does not count 10^5 index entries per request (issue 15).
-- One row per (table, application, environment); images have no environment and use the nil uuid.
-- Statement-level triggers add or subtract per statement, so a bulk insert or a cascade costs one
-- upsert per application and environment it touched, not one per row.
CREATE TABLE row_counts (
  table_name text NOT NULL,
  application_id uuid NOT NULL,
  environment_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
  n bigint NOT NULL,
  PRIMARY KEY (table_name, application_id, environment_id)
);

-- TG_ARGV[0]: the column holding the environment, or '' for none.
CREATE FUNCTION slipway_count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  env text := CASE WHEN TG_ARGV[0] = '' THEN '''00000000-0000-0000-0000-000000000000''::uuid' ELSE quote_ident(TG_ARGV[0]) END;
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE format(
      'INSERT INTO row_counts (table_name, application_id, environment_id, n)
       SELECT %L, application_id, %s, count(*) FROM changed GROUP BY 2, 3 ORDER BY 2, 3
       ON CONFLICT (table_name, application_id, environment_id) DO UPDATE SET n = row_counts.n + excluded.n',
      TG_TABLE_NAME, env);
  ELSE
    EXECUTE format(
      'UPDATE row_counts c SET n = c.n - d.n
       FROM (SELECT application_id, %s AS environment_id, count(*) AS n FROM changed GROUP BY 1, 2) d
       WHERE c.table_name = %L AND c.application_id = d.application_id AND c.environment_id = d.environment_id',
      env, TG_TABLE_NAME);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER images_count_insert AFTER INSERT ON images REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION slipway_count_rows('');
CREATE TRIGGER images_count_delete AFTER DELETE ON images REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION slipway_count_rows('');
CREATE TRIGGER releases_count_insert AFTER INSERT ON releases REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION slipway_count_rows('environment_id');
CREATE TRIGGER releases_count_delete AFTER DELETE ON releases REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION slipway_count_rows('environment_id');
CREATE TRIGGER deployments_count_insert AFTER INSERT ON deployments REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION slipway_count_rows('environment_id');
CREATE TRIGGER deployments_count_delete AFTER DELETE ON deployments REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION slipway_count_rows('environment_id');

-- Counts of a deleted application or environment go with it (their rows were counted down to 0).
CREATE FUNCTION slipway_forget_row_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM row_counts WHERE %I = $1', TG_ARGV[0]) USING OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER applications_forget_row_counts AFTER DELETE ON applications
  FOR EACH ROW EXECUTE FUNCTION slipway_forget_row_counts('application_id');
CREATE TRIGGER environments_forget_row_counts AFTER DELETE ON environments
  FOR EACH ROW EXECUTE FUNCTION slipway_forget_row_counts('environment_id');

-- The rows already there.
INSERT INTO row_counts (table_name, application_id, n)
  SELECT 'images', application_id, count(*) FROM images GROUP BY application_id;
INSERT INTO row_counts (table_name, application_id, environment_id, n)
  SELECT 'releases', application_id, environment_id, count(*) FROM releases GROUP BY application_id, environment_id;
INSERT INTO row_counts (table_name, application_id, environment_id, n)
  SELECT 'deployments', application_id, environment_id, count(*) FROM deployments GROUP BY application_id, environment_id;
