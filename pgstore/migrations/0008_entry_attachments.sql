-- A user message's attachments: [{"name", "type", "size", "truncated",
-- "text"}], never image bytes; "text" only when the sharing level was rows.
ALTER TABLE conversation_entries ADD COLUMN attachments json;
