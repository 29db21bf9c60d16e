-- The items of the active context a user message was sent with:
-- [{"entity_type", "id", "name", "label"}], safe references kept with the
-- message after the items leave the context or are deleted. NULL for
-- none, as for a message stored before.
ALTER TABLE conversation_entries ADD COLUMN context json;
