-- The portfolio component's tables at schema version 1 (sqlite), as quantdesk c69a7df
-- created them: frozen, so the migration to later versions is tested from the real thing.

CREATE TABLE schema_versions (
	component VARCHAR(64) NOT NULL,
	version INTEGER NOT NULL,
	PRIMARY KEY (component)
);

CREATE TABLE portfolios (
	id INTEGER NOT NULL,
	name VARCHAR(64) NOT NULL,
	currency VARCHAR(3) NOT NULL,
	initial_cash VARCHAR(30) NOT NULL,
	cash VARCHAR(30) NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (name)
);

CREATE TABLE holdings (
	id INTEGER NOT NULL,
	portfolio_id INTEGER NOT NULL,
	symbol VARCHAR(32) NOT NULL,
	shares BIGINT NOT NULL,
	avg_cost VARCHAR(30) NOT NULL,
	sector VARCHAR(22),
	opened_at DATETIME NOT NULL,
	updated_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT uq_holdings_portfolio_symbol UNIQUE (portfolio_id, symbol),
	FOREIGN KEY(portfolio_id) REFERENCES portfolios (id),
	CONSTRAINT holding_sector CHECK (sector IN ('Communication Services', 'Consumer Discretionary', 'Consumer Staples', 'Energy', 'Financials', 'Health Care', 'Industrials', 'Information Technology', 'Materials', 'Real Estate', 'Utilities'))
);

CREATE TABLE trades (
	id INTEGER NOT NULL,
	portfolio_id INTEGER NOT NULL,
	idempotency_key VARCHAR(1100) NOT NULL,
	symbol VARCHAR(32) NOT NULL,
	side VARCHAR(4) NOT NULL,
	shares BIGINT NOT NULL,
	price VARCHAR(30) NOT NULL,
	value VARCHAR(30) NOT NULL,
	fees VARCHAR(30) NOT NULL,
	cash_change VARCHAR(30) NOT NULL,
	realized_pnl VARCHAR(30),
	executed_at DATETIME NOT NULL,
	rationale TEXT NOT NULL,
	stop_loss VARCHAR(30),
	take_profit VARCHAR(30),
	source TEXT NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(portfolio_id) REFERENCES portfolios (id),
	UNIQUE (idempotency_key),
	CONSTRAINT trade_side CHECK (side IN ('BUY', 'SELL'))
);

CREATE INDEX ix_trades_portfolio_id ON trades (portfolio_id, id);

CREATE TABLE snapshots (
	id INTEGER NOT NULL,
	portfolio_id INTEGER NOT NULL,
	snapshot_key VARCHAR(1100) NOT NULL,
	as_of DATETIME NOT NULL,
	total_value VARCHAR(30) NOT NULL,
	cash VARCHAR(30) NOT NULL,
	equity VARCHAR(30) NOT NULL,
	positions TEXT NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(portfolio_id) REFERENCES portfolios (id),
	UNIQUE (snapshot_key)
);

CREATE INDEX ix_snapshots_portfolio_as_of ON snapshots (portfolio_id, as_of);

CREATE TABLE decisions (
	id INTEGER NOT NULL,
	portfolio_id INTEGER NOT NULL,
	decision_key VARCHAR(1100) NOT NULL,
	as_of DATETIME NOT NULL,
	status VARCHAR(13) NOT NULL,
	decision TEXT NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(portfolio_id) REFERENCES portfolios (id),
	UNIQUE (decision_key),
	CONSTRAINT decision_status CHECK (status IN ('approved_auto', 'approved', 'rejected', 'expired'))
);

CREATE INDEX ix_decisions_portfolio_id ON decisions (portfolio_id, id);

INSERT INTO schema_versions (component, version) VALUES ('portfolio', 1);
