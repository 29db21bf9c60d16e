-- The tokens of a turn's model calls, summed (ask.Turn.Usage): zero for a
-- turn stored before, or whose provider reported none.
ALTER TABLE conversation_turns
	ADD COLUMN input_tokens bigint NOT NULL DEFAULT 0,
	ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0,
	ADD COLUMN cache_write_tokens bigint NOT NULL DEFAULT 0,
	ADD COLUMN output_tokens bigint NOT NULL DEFAULT 0;
