-- Issue 27, identity at the edges.
-- The audit keeps both addresses of a request: the socket's peer (a proxy, when there is one)
-- and the client address derived from X-Forwarded-For through the trusted hops only.
ALTER TABLE audit_log ADD COLUMN peer_address text;
-- Refused requests (403) are audited too: who tried what, aggregated per actor, route and minute.
ALTER TABLE audit_log ADD COLUMN denied boolean NOT NULL DEFAULT false;

-- Addresses an account signed in from successfully: an address that failed for many accounts,
-- or an account under attack from many addresses, still lets its known users in.
CREATE TABLE login_known_addresses (
  account         text NOT NULL,
  address         text NOT NULL,
  last_success_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account, address)
);
CREATE INDEX login_known_addresses_last_success ON login_known_addresses (last_success_at);
