-- Identity as LTI 1.3 defines it. A platform's user is one person per issuer (`sub` is unique
-- within an issuer), and a course is one per issuer and deployment (a context id is unique
-- within a deployment). A platform may give each activity of one course its own client id,
-- so its own registration here (Open edX does by default): keyed by registration, as
-- `lti_users` and `lti_contexts` were, one person became two students and one course two
-- classes. Those two tables are read once more, at the first start after this migration,
-- by the merge in `server/src/lti/merge.rs`, which moves their rows here, merging the
-- students and the classes the old keys had split, and leaves them empty.

-- A platform's user (issuer and `sub`) and the student they are here.
CREATE TABLE lti_identities (
    issuer      TEXT NOT NULL,
    sub         TEXT NOT NULL,
    student     TEXT NOT NULL,
    PRIMARY KEY (issuer, sub)
);

-- The class a platform's course (issuer, deployment and context id) is.
CREATE TABLE lti_courses (
    issuer        TEXT NOT NULL,
    deployment_id TEXT NOT NULL,
    context_id    TEXT NOT NULL,
    class_id      TEXT NOT NULL,
    PRIMARY KEY (issuer, deployment_id, context_id)
);
CREATE INDEX lti_courses_by_class ON lti_courses (class_id);

-- Origins besides those of a registration's own URLs where its line items and scores may
-- be (a Canvas school's own domain, say). The tool sends scores, with the platform's access
-- token, only to these and to the origins of the registration's issuer and endpoints.
CREATE TABLE lti_service_origins (
    platform    TEXT NOT NULL REFERENCES lti_platforms (id) ON DELETE CASCADE,
    origin      TEXT NOT NULL,
    PRIMARY KEY (platform, origin)
);

-- The browser that started a login: the sha256 of the secret of the cookie `/lti/login`
-- set. A launch carrying that cookie signs that browser in; any other launch leaves the
-- browser's session alone. NULL for a login over plain HTTP, where no cookie can make the
-- trip through the platform's cross-site form post.
ALTER TABLE lti_logins ADD COLUMN browser_hash TEXT;
