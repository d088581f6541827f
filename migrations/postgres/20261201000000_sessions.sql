-- Sessions apart from students: the cookie holds a random secret, and only its sha256 is kept
-- here. A student's id is public (graders' lists, exports); it no longer opens a session.
CREATE TABLE sessions (
    -- sha256 of the session secret, in hex; the secret itself is never stored.
    secret_hash TEXT PRIMARY KEY,
    student     TEXT NOT NULL REFERENCES students (id),
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_by_student ON sessions (student);

-- Students made for a browser before this migration were named by their id in the old
-- `pb_student` cookie. That cookie is exchanged once for a session (POST /api/session); the
-- flag is then cleared so the old id is never accepted again. Students made later never
-- have it.
ALTER TABLE students ADD COLUMN legacy_cookie BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE students SET legacy_cookie = TRUE WHERE origin = 'session';

-- Each claim of an idempotency key has a random holder; every write to the claim names it,
-- so a holder whose claim was taken over writes nothing.
ALTER TABLE idempotency_keys ADD COLUMN owner TEXT NOT NULL DEFAULT '';
-- Graders' keys were scoped by the token's name, which a new token can take again; they are
-- now scoped by the token's hash, and the old records can no longer be matched.
DELETE FROM idempotency_keys WHERE caller LIKE 'grader:%';
