-- Staff: named accounts with a role in each class they work on. A token that belongs to an
-- account acts as that account (and may be limited to reading); a token without one is a
-- server administrator's, which may do everything.

CREATE TABLE staff_accounts (
    -- 1 to 64 characters, no spaces: how the CLI, the API and the audit log name the account.
    name       TEXT PRIMARY KEY NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    -- The student row of a person who came by an LTI launch with a staff role: their launch's
    -- session signs them in as this account. NULL for an account made by the CLI.
    student    TEXT UNIQUE
);

CREATE TABLE class_staff (
    class_id   TEXT NOT NULL REFERENCES classes (id),
    account    TEXT NOT NULL REFERENCES staff_accounts (name),
    -- owner: everything, staff included; ta: the dashboard, attempts and regrading;
    -- viewer: reading only.
    role       TEXT NOT NULL CHECK (role IN ('owner', 'ta', 'viewer')),
    granted_by TEXT NOT NULL,
    granted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (class_id, account)
);
CREATE INDEX class_staff_by_account ON class_staff (account);

-- The account a token acts for (NULL: a server administrator's token), and whether it may
-- only read.
ALTER TABLE grader_tokens ADD COLUMN account TEXT REFERENCES staff_accounts (name);
ALTER TABLE grader_tokens ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT FALSE;

-- Every change staff make to a class: who (the token's account, or "admin:" and the token's
-- name), when, what, and the details in words.
CREATE TABLE audit_log (
    id       BIGSERIAL PRIMARY KEY,
    at       TIMESTAMPTZ NOT NULL,
    actor    TEXT NOT NULL,
    class_id TEXT,
    action   TEXT NOT NULL,
    detail   TEXT NOT NULL
);
CREATE INDEX audit_log_by_class ON audit_log (class_id, id);
