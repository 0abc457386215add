-- Issue 27, references across organizations.
-- A GitHub App installation serves the one organization it is linked to, by the App's setup flow
-- (an organization admin who installed it, proven by GitHub) or by a site administrator. An
-- application may name, and the platform mints tokens and reports for, only its organization's
-- installations. Nothing is linked by this migration: an id an application named before could be
-- another organization's.
CREATE TABLE github_installation_links (
  installation_id  bigint PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  linked_by        uuid REFERENCES users (id) ON DELETE SET NULL,
  -- `setup` (the App's setup flow) or `admin` (a site administrator).
  linked_via       text NOT NULL CHECK (linked_via IN ('setup', 'admin')),
  linked_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX github_installation_links_organization_idx ON github_installation_links (organization_id);

-- Custom domains: a claim no longer reserves a name (a squatter could hold it before its owner
-- came). Any application may claim a name; the first to prove it by DNS owns it, and a verified
-- name cannot be claimed or verified by another.
ALTER TABLE domains DROP CONSTRAINT domains_hostname_key;
CREATE UNIQUE INDEX domains_verified_hostname_key ON domains (hostname) WHERE verified_at IS NOT NULL;
CREATE UNIQUE INDEX domains_application_hostname_key ON domains (application_id, hostname);
