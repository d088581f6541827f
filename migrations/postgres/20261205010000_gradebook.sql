-- Scores staff set by hand for a member of a class at a scenario, kept beside the computed
-- ones: the gradebook shows both, and grade passback sends the one set by hand.
CREATE TABLE score_overrides (
    class_id  TEXT NOT NULL REFERENCES classes (id),
    student   TEXT NOT NULL REFERENCES students (id),
    scenario  TEXT NOT NULL,
    score     INTEGER NOT NULL CHECK (score >= 0),
    max_score INTEGER NOT NULL,
    reason    TEXT NOT NULL,
    -- The staff account, or "admin:" and a token's name.
    set_by    TEXT NOT NULL,
    set_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (class_id, student, scenario)
);
CREATE INDEX score_overrides_by_student ON score_overrides (student, scenario);
