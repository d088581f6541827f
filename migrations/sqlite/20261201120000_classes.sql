-- Classes: a grader makes one, students join it with its code, and their attempts belong to it.

CREATE TABLE classes (
    id         TEXT PRIMARY KEY NOT NULL,
    name       TEXT NOT NULL,
    -- 8 characters of 23456789ABCDEFGHJKMNPQRSTUVWXYZ (no 0/O, 1/I/L), random.
    join_code  TEXT NOT NULL UNIQUE,
    open       BOOLEAN NOT NULL DEFAULT TRUE,
    -- What the student's app shows before a check: the live preview of every requirement,
    -- only what the design still lacks, or nothing.
    preview    TEXT NOT NULL DEFAULT 'everything' CHECK (preview IN ('everything', 'lacks', 'nothing')),
    -- The name of the grader token that made it.
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE memberships (
    class_id     TEXT NOT NULL REFERENCES classes (id),
    student      TEXT NOT NULL REFERENCES students (id),
    -- Asked once per class when the student joins; 1 to 60 characters, trimmed.
    display_name TEXT NOT NULL,
    joined_at    TEXT NOT NULL,
    PRIMARY KEY (class_id, student)
);
CREATE INDEX memberships_by_student ON memberships (student);

-- The class an attempt was made for (NULL: self-study).
ALTER TABLE attempts ADD COLUMN class_id TEXT REFERENCES classes (id);
CREATE INDEX attempts_by_class ON attempts (class_id, student, scenario, created_at);

-- Verdicts of stored attempts checked again against a newer version of their scenario. Kept
-- beside the attempt's own verdict, never over it; one per attempt and scenario version.
CREATE TABLE regrades (
    attempt       TEXT NOT NULL REFERENCES attempts (id),
    scenario_hash TEXT NOT NULL,
    -- NULL when the design is no longer valid for the scenario; `error` says why.
    verdict       TEXT,
    error         TEXT,
    score         INTEGER NOT NULL,
    max_score     INTEGER NOT NULL,
    passed        BOOLEAN NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (attempt, scenario_hash)
);
