-- A receipt keeps what a retried approval answers: the call's summary and,
-- for a failed call, its safe error message.
ALTER TABLE approval_receipts
    ADD COLUMN summary       text NOT NULL DEFAULT '',
    ADD COLUMN error_message text NOT NULL DEFAULT '';
