-- Due dates: one for the whole class, one per scenario, and later ones for one student
-- (extensions); and what happens to an attempt after its due date.
ALTER TABLE classes ADD COLUMN due_at TEXT;
ALTER TABLE classes ADD COLUMN late_policy TEXT NOT NULL DEFAULT 'accept' CHECK (late_policy IN ('accept', 'refuse'));

CREATE TABLE class_deadlines (
    class_id TEXT NOT NULL REFERENCES classes (id),
    scenario TEXT NOT NULL,
    due_at   TEXT NOT NULL,
    -- 'staff' set it, or the learning platform's line item ('platform'); staff's wins.
    source   TEXT NOT NULL CHECK (source IN ('staff', 'platform')),
    PRIMARY KEY (class_id, scenario)
);

CREATE TABLE extensions (
    class_id TEXT NOT NULL REFERENCES classes (id),
    student  TEXT NOT NULL REFERENCES students (id),
    -- '' for every scenario of the class.
    scenario TEXT NOT NULL,
    due_at   TEXT NOT NULL,
    set_by   TEXT NOT NULL,
    set_at   TEXT NOT NULL,
    PRIMARY KEY (class_id, student, scenario)
);
