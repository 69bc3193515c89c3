-- The integration.token_expiring event is written once per token (src/worker/expiring-tokens.ts): the expiry it
-- warned of is kept here, so a reconnect (a new expires_at) is warned of again, and an hourly run never twice.
ALTER TABLE integrations ADD COLUMN expiry_warned_for timestamptz;
