-- An attempt's verdict, compressed: its JSON text under zlib. An attempt recorded from now on
-- keeps its verdict here and JSON null in `verdict`; one recorded before keeps its verdict in
-- `verdict` and nothing here. A verdict compresses to about a sixth of its JSON, so an
-- attempt's row fits in a page instead of running over several.
ALTER TABLE attempts ADD COLUMN verdict_deflate BYTEA;
