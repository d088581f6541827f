-- Pipeline Builder's tables for SQLite, the embedded default.
-- Times are stored as RFC 3339 text; JSON as text.

CREATE TABLE students (
    id           TEXT PRIMARY KEY NOT NULL,
    display_name TEXT,
    -- 'session': made for a browser and named in its cookie; 'grader': named by a grader.
    origin       TEXT NOT NULL CHECK (origin IN ('session', 'grader')),
    created_at   TEXT NOT NULL
);

CREATE TABLE drafts (
    student    TEXT NOT NULL REFERENCES students (id),
    scenario   TEXT NOT NULL,
    design     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (student, scenario)
);

CREATE TABLE attempts (
    id            TEXT PRIMARY KEY NOT NULL,
    student       TEXT NOT NULL REFERENCES students (id),
    scenario      TEXT NOT NULL,
    scenario_hash TEXT NOT NULL,
    design        TEXT NOT NULL,
    verdict       TEXT NOT NULL,
    score         INTEGER NOT NULL,
    max_score     INTEGER NOT NULL,
    passed        BOOLEAN NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX attempts_by_student ON attempts (student, scenario, created_at);
CREATE INDEX attempts_by_scenario ON attempts (scenario, created_at);

CREATE TABLE grader_tokens (
    name       TEXT PRIMARY KEY NOT NULL,
    -- sha256 of the token, in hex; the token itself is never stored.
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE idempotency_keys (
    caller      TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    status_code INTEGER,
    response    TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (caller, key)
);
