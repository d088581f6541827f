-- A student's progress (which scenarios they tried and passed, read with every catalogue) is
-- answered from this index alone. An attempt's row holds its verdict, several kilobytes,
-- before `passed`, so reading `passed` from the row means going through the verdict's pages.
DROP INDEX attempts_by_student;
CREATE INDEX attempts_by_student ON attempts (student, scenario, created_at, passed);
