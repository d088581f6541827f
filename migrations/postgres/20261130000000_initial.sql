-- Pipeline Builder's tables for PostgreSQL, used when several servers share one database.

CREATE TABLE students (
    id           TEXT PRIMARY KEY,
    display_name TEXT,
    -- 'session': made for a browser and named in its cookie; 'grader': named by a grader.
    origin       TEXT NOT NULL CHECK (origin IN ('session', 'grader')),
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE drafts (
    student    TEXT NOT NULL REFERENCES students (id),
    scenario   TEXT NOT NULL,
    design     JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (student, scenario)
);

CREATE TABLE attempts (
    id            TEXT PRIMARY KEY,
    student       TEXT NOT NULL REFERENCES students (id),
    scenario      TEXT NOT NULL,
    scenario_hash TEXT NOT NULL,
    design        JSONB NOT NULL,
    verdict       JSONB NOT NULL,
    score         INTEGER NOT NULL,
    max_score     INTEGER NOT NULL,
    passed        BOOLEAN NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX attempts_by_student ON attempts (student, scenario, created_at);
CREATE INDEX attempts_by_scenario ON attempts (scenario, created_at);

CREATE TABLE grader_tokens (
    name       TEXT PRIMARY KEY,
    -- sha256 of the token, in hex; the token itself is never stored.
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);

CREATE TABLE idempotency_keys (
    caller      TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    status_code INTEGER,
    -- The answer's exact bytes, so that a replay is byte for byte the first answer.
    response    TEXT,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (caller, key)
);
