-- The classes a page of GET /api/classes lists, newest first, and the classes one grader
-- token has made (counted against the limit per token), each found by an index.
CREATE INDEX classes_by_created ON classes (created_at, id);
CREATE INDEX classes_by_maker ON classes (created_by);
