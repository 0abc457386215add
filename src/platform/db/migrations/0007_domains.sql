-- Custom domains of application environments, their ownership proof and TLS certificates.

-- A host name belongs to one application environment across the whole platform.
CREATE TABLE domains (
  id                  uuid PRIMARY KEY,
  application_id      uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id      uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  hostname            text NOT NULL,
  -- The platform host name of that environment, which the edge routes this name to.
  route_hostname      text NOT NULL,
  verification_token  text NOT NULL,
  verified_at         timestamptz,
  https_redirect      boolean NOT NULL DEFAULT true,
  hsts                boolean NOT NULL DEFAULT false,
  certificate_status  text NOT NULL DEFAULT 'none' CHECK (certificate_status IN ('none', 'pending', 'issued', 'failed')),
  certificate_error   text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT domains_hostname_key UNIQUE (hostname)
);
CREATE INDEX domains_application_idx ON domains (application_id);

-- Certificates by host name, shared by every edge process (the key encrypted with SECRET_KEY).
CREATE TABLE certificates (
  hostname            text PRIMARY KEY,
  certificate_pem     text NOT NULL,
  private_key_enc     text NOT NULL,
  not_after           timestamptz NOT NULL,
  issued_at           timestamptz NOT NULL DEFAULT now()
);

-- Pending ACME HTTP-01 answers, so whichever edge process the CA reaches can serve them.
CREATE TABLE acme_challenges (
  token               text PRIMARY KEY,
  key_authorization   text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);

-- The platform's ACME account per directory (its key encrypted), created once and reused.
CREATE TABLE acme_accounts (
  directory_url       text PRIMARY KEY,
  account_key_enc     text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);

-- Requests the edge served, per application environment, process type and minute: the
-- edges add their counts every few seconds, so any process reads the same figures.
CREATE TABLE request_stats (
  application_id   uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id   uuid NOT NULL,
  process_type     text NOT NULL,
  minute           timestamptz NOT NULL,
  requests         bigint NOT NULL DEFAULT 0,
  -- Responses by status class: 1xx, 2xx, 3xx, 4xx, 5xx (a request the app never answered counts as 5xx).
  status_classes   bigint[] NOT NULL,
  -- Latency histogram: counts at or under each bound of the edge's LATENCY_BOUNDS_MS, then above the last.
  latency_buckets  bigint[] NOT NULL,
  latency_sum_ms   double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (application_id, environment_id, process_type, minute)
);
