-- A restore drill's optional check (issue 31): a query the add-on's owner sets, run read-only and
-- time-limited as the application's role on the drill's restored copy; its row count and first
-- value are recorded with the drill (addons.last_drill), and an error fails the drill.
ALTER TABLE addons
  ADD COLUMN drill_check_query text CHECK (drill_check_query IS NULL OR length(drill_check_query) BETWEEN 1 AND 4000);
