-- Edge processes of their own (SLIPWAY_ROLE=edge, issue 14): the routes the workers publish,
-- and each edge process's progress, so a worker stops a retired instance only once every live
-- edge has switched away from it and finished the requests it had sent there.

-- Host name → the web instances serving it: [{instance_id, host, port, ready, application_id, environment_id, process_type}].
CREATE TABLE edge_routes (
  hostname    text PRIMARY KEY,
  upstreams   jsonb NOT NULL,
  version     bigint NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row: bumped in the same transaction as every route change (a sequence is not transactional).
CREATE TABLE edge_route_version (
  id       boolean PRIMARY KEY DEFAULT true CHECK (id),
  version  bigint NOT NULL
);
INSERT INTO edge_route_version (version) VALUES (0);

-- A running edge process: alive while its heartbeat is fresh; `drained_version` is the route
-- version it serves with no request left in flight to an instance an older version named.
CREATE TABLE edge_nodes (
  id               uuid PRIMARY KEY,
  hostname         text NOT NULL,
  pid              integer NOT NULL,
  drained_version  bigint NOT NULL DEFAULT 0,
  heartbeat_at     timestamptz NOT NULL DEFAULT now()
);
