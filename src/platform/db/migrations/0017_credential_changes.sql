-- Processes cache verified credentials for a few seconds (CREDENTIAL_CACHE_SECONDS). Every change
-- that can revoke one announces the user concerned on `slipway_credentials`, whatever code path
-- (or cascade) made it, so every process drops its cached entries at once.
-- The trigger's argument names the column holding the user's id.
CREATE FUNCTION slipway_credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('slipway_credentials', to_jsonb(OLD) ->> TG_ARGV[0]);
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_credentials_changed
  AFTER DELETE OR UPDATE OF token_hash, user_id, expires_at ON api_keys
  FOR EACH ROW EXECUTE FUNCTION slipway_credentials_changed('user_id');

CREATE TRIGGER sessions_credentials_changed
  AFTER DELETE OR UPDATE OF token_hash, user_id, expires_at ON sessions
  FOR EACH ROW EXECUTE FUNCTION slipway_credentials_changed('user_id');

CREATE TRIGGER users_credentials_changed
  AFTER DELETE OR UPDATE OF username, email, is_admin, password_hash ON users
  FOR EACH ROW EXECUTE FUNCTION slipway_credentials_changed('id');
