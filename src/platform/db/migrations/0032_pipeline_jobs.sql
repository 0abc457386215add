-- The pipeline's jobs in a table of Slipway's own. The fair fetch (one job per application at a
-- time and in order, caps per organization and per creating user) is SQL over this table, so it
-- no longer reads or writes pg-boss's private tables; pg-boss keeps the side queues (webhook
-- deliveries) through its public API.
CREATE TABLE pipeline_jobs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  kind text NOT NULL,
  -- Jobs of one application run one at a time, oldest first.
  application_id text NOT NULL,
  -- Whose budgets the job counts against (null: no known organization, no cap).
  organization_id text,
  owner_id text,
  data jsonb NOT NULL,
  state text NOT NULL DEFAULT 'created' CHECK (state IN ('created', 'active', 'completed', 'failed')),
  -- Times the job was started again after an interruption (recovery puts it back to waiting).
  retry_count integer NOT NULL DEFAULT 0,
  output jsonb,
  created_on timestamptz NOT NULL DEFAULT now(),
  started_on timestamptz,
  completed_on timestamptz
);

-- One running job per application, whatever races between workers.
CREATE UNIQUE INDEX pipeline_jobs_one_active_per_application ON pipeline_jobs (application_id) WHERE state = 'active';
-- The fetch and the queue caps read only the live jobs.
CREATE INDEX pipeline_jobs_live ON pipeline_jobs (created_on, id) WHERE state IN ('created', 'active');
-- Retention sweeps and metrics read the settled ones by age.
CREATE INDEX pipeline_jobs_settled ON pipeline_jobs (completed_on) WHERE state IN ('completed', 'failed');

-- An upgrade keeps the pipeline jobs still waiting or running in pg-boss's queue, with their ids
-- (the records of builds and deployments name them). Read once, here, for the move.
DO $$
BEGIN
  IF to_regclass('pgboss.job') IS NOT NULL THEN
    INSERT INTO pipeline_jobs (id, kind, application_id, organization_id, owner_id, data, state, retry_count, created_on, started_on)
    SELECT j.id, j.data->>'kind', coalesce(j.singleton_key, j.data->>'applicationId'), j.data->>'organizationId',
           coalesce(j.data->>'ownerId', j.data->>'organizationId'), j.data,
           CASE WHEN j.state::text = 'active' THEN 'active' ELSE 'created' END, j.retry_count, j.created_on, j.started_on
    FROM pgboss.job j
    WHERE j.name = 'pipeline' AND j.state::text IN ('created', 'retry', 'active')
      AND j.data->>'kind' IS NOT NULL AND coalesce(j.singleton_key, j.data->>'applicationId') IS NOT NULL
    ON CONFLICT DO NOTHING;
  END IF;
END $$;
