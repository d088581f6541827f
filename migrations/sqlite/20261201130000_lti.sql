-- LTI 1.3: the tool's signing keys, the platforms registered with it, the logins in flight
-- (state and nonce, each used once), and which student a platform's user is.

-- The tool's RSA keys. The newest key that is not retired signs; every key retired less
-- than a day ago is still published, so tokens it signed can still be verified.
CREATE TABLE lti_keys (
    kid         TEXT PRIMARY KEY NOT NULL,
    -- PKCS#8 PEM of the private key.
    private_pem TEXT NOT NULL,
    -- The public key's modulus and exponent, base64url, as the JWKS publishes them.
    n           TEXT NOT NULL,
    e           TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    retired_at  TEXT
);

CREATE TABLE lti_platforms (
    id          TEXT PRIMARY KEY NOT NULL,
    issuer      TEXT NOT NULL,
    client_id   TEXT NOT NULL,
    auth_url    TEXT NOT NULL,
    token_url   TEXT NOT NULL,
    jwks_url    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (issuer, client_id)
);

CREATE TABLE lti_deployments (
    platform      TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    deployment_id TEXT NOT NULL,
    PRIMARY KEY (platform, deployment_id)
);

-- A login started by a platform: the launch that follows must carry this state, and a token
-- with this nonce; both are spent by the first launch that uses them.
CREATE TABLE lti_logins (
    state       TEXT PRIMARY KEY NOT NULL,
    nonce       TEXT NOT NULL,
    platform    TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    used_at     TEXT
);
CREATE INDEX lti_logins_by_created ON lti_logins (created_at);

-- A platform's user (`sub`) and the student they are here.
CREATE TABLE lti_users (
    platform    TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    sub         TEXT NOT NULL,
    student     TEXT NOT NULL,
    PRIMARY KEY (platform, sub)
);

-- Where a launched student's score for a scenario goes: the line item of the resource link
-- they launched from. The score to send is derived from the attempts themselves (the best
-- one), so it is as durable as they are; what was last accepted by the platform, and when
-- to try again after a refusal, are kept here.
CREATE TABLE lti_grade_targets (
    student        TEXT NOT NULL,
    scenario       TEXT NOT NULL,
    platform       TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    sub            TEXT NOT NULL,
    lineitem       TEXT NOT NULL,
    -- The score the platform accepted last, and the time of the newest attempt it counted.
    sent_score     INTEGER,
    sent_through   TEXT,
    -- The timestamp of the last score sent; each new one is later.
    sent_timestamp TEXT,
    tries          INTEGER NOT NULL DEFAULT 0,
    next_try_at    TEXT,
    last_error     TEXT,
    PRIMARY KEY (student, scenario, lineitem)
);

-- A launch's way out of a frame that cannot keep a session: a one-time code, given to the
-- launched page in its URL's fragment, that opens a session of the same student in a new
-- window (GET /lti/resume). Only the code's sha256 is kept.
CREATE TABLE lti_handoffs (
    code_hash   TEXT PRIMARY KEY,
    student     TEXT NOT NULL,
    target      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    used_at     TEXT
);

-- The class a platform's course (its LTI context) is: made at the first launch from it.
CREATE TABLE lti_contexts (
    platform    TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    context_id  TEXT NOT NULL,
    class_id    TEXT NOT NULL,
    PRIMARY KEY (platform, context_id)
);

-- The line item made for a resource link whose launches named none: made once, then reused.
CREATE TABLE lti_line_items (
    platform      TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    resource_link TEXT NOT NULL,
    lineitem      TEXT NOT NULL,
    PRIMARY KEY (platform, resource_link)
);
