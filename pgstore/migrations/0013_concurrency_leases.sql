-- Concurrency slots shared by every instance on the database (the team
-- and source bounds of dataexec.ConcurrencyOptions), each held under a
-- lease that expires, so an instance that died gives its slots back.
-- Unlogged: a crash of the database forgets them, as it ends their work.
CREATE UNLOGGED TABLE concurrency_leases (
    key        text NOT NULL,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (key, holder)
);

-- askbi_acquire_slots takes one slot of each key (sorted by the caller,
-- so that concurrent callers lock in one order), each below its bound, or
-- none: it returns '' when it took them, else the first key at its bound.
CREATE FUNCTION askbi_acquire_slots(keys text[], maxes int[], who text, ttl double precision) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    i int;
    n int;
BEGIN
    FOR i IN 1 .. cardinality(keys) LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('askbi_slot:' || keys[i], 0));
    END LOOP;
    DELETE FROM concurrency_leases WHERE key = ANY (keys) AND expires_at < now();
    FOR i IN 1 .. cardinality(keys) LOOP
        SELECT count(*) INTO n FROM concurrency_leases WHERE key = keys[i];
        IF n >= maxes[i] THEN
            RETURN keys[i];
        END IF;
    END LOOP;
    INSERT INTO concurrency_leases (key, holder, expires_at)
        SELECT k, who, now() + ttl * interval '1 second' FROM unnest(keys) k;
    RETURN '';
END $$;
