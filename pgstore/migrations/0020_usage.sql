-- The usage view and the token budgets (package usage): the audit log it
-- reads (access.AuditEntry: never text, arguments or data), each model
-- call's usage record (usage.Charge) and the budgets (usage.Budget).
CREATE TABLE audit_log (
	id bigserial PRIMARY KEY,
	at timestamptz NOT NULL,
	action text NOT NULL,
	user_id text NOT NULL,
	team_id text NOT NULL,
	auth text NOT NULL,
	credential_id text NOT NULL DEFAULT '',
	target jsonb NOT NULL,
	outcome text NOT NULL,
	duration_us bigint NOT NULL,
	details jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_team_at ON audit_log (team_id, at);
CREATE INDEX audit_log_at ON audit_log (at);

CREATE TABLE usage_charges (
	id bigserial PRIMARY KEY,
	at timestamptz NOT NULL,
	team_id text NOT NULL,
	user_id text NOT NULL,
	provider text NOT NULL,
	model text NOT NULL,
	input_tokens bigint NOT NULL,
	cached_input_tokens bigint NOT NULL,
	cache_write_tokens bigint NOT NULL,
	output_tokens bigint NOT NULL,
	cost_micros bigint NOT NULL
);
-- Budgets sum a team's, or one member's, charges since a period began.
CREATE INDEX usage_charges_team_at ON usage_charges (team_id, at);
CREATE INDEX usage_charges_team_user_at ON usage_charges (team_id, user_id, at);

CREATE TABLE usage_budgets (
	team_id text NOT NULL,
	user_id text NOT NULL DEFAULT '', -- '' for the whole team
	period text NOT NULL CHECK (period IN ('day', 'month')),
	tokens bigint NOT NULL CHECK (tokens > 0),
	set_by text NOT NULL,
	set_at timestamptz NOT NULL,
	PRIMARY KEY (team_id, user_id, period)
);
