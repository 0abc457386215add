-- Whether the organization's sandboxed builds, one-off commands and instances may connect out
-- (the internet); null: the site's SANDBOX_OUTBOUND. Set by site administrators.
ALTER TABLE organizations
  ADD COLUMN sandbox_outbound boolean;
