-- What the sweeper looks for: idempotency records by age, sessions by age.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
CREATE INDEX students_by_origin_and_age ON students (origin, created_at);
