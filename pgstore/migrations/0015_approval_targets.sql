-- The entities an approval's arguments name, by name, as its card showed
-- them when the call was proposed ([{"type", "id", "name", ...}]): what
-- its receipt names after a reload, also once they are gone. NULL for
-- none, as for an approval stored before.
ALTER TABLE approvals ADD COLUMN targets json;
