-- Concurrency slots shared by every instance, as in 0013, without its
-- churn: 0013 inserted a lease row per take and deleted it on release,
-- so counting a busy key's leases read every row it had dead since the
-- last vacuum, and a take slowed as the server ran (BenchmarkLeases, 8
-- concurrent takers: 0.7 ms a take over the first 3,000, 1.8 ms over the
-- first 10,000). Here a key has one row per slot, up to its bound, and a
-- take or a release updates only columns no index holds, which
-- PostgreSQL writes beside the row on its page (a HOT update): the index
-- of a busy key keeps one entry per slot, and the old versions are
-- pruned when the page is next read. Room is left on each page for them.
-- 0013's table and function stay for the instances of the release before
-- during an upgrade. Unlogged: a crash of the database forgets the
-- slots, as it ends their work.
CREATE UNLOGGED TABLE concurrency_slots (
    key        text NOT NULL,
    slot       int NOT NULL,
    holder     text,
    expires_at timestamptz,
    PRIMARY KEY (key, slot)
) WITH (fillfactor = 50);

-- askbi_take_slots takes one free slot of each key (sorted by the caller,
-- so that concurrent callers lock in one order), each key's below its
-- bound, or none: it returns '' when it took them, else the first key at
-- its bound. A slot is free when no one holds it or its holder's lease
-- has run out. A key's rows are made up to its bound the first time it
-- is full with fewer.
CREATE FUNCTION askbi_take_slots(keys text[], maxes int[], who text, ttl double precision) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    i int;
    s int;
    taken int[] := '{}';
BEGIN
    FOR i IN 1 .. cardinality(keys) LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('askbi_slot:' || keys[i], 0));
    END LOOP;
    FOR i IN 1 .. cardinality(keys) LOOP
        SELECT slot INTO s FROM concurrency_slots
            WHERE key = keys[i] AND slot < maxes[i] AND (holder IS NULL OR expires_at < now())
            ORDER BY slot LIMIT 1;
        IF NOT FOUND AND (SELECT count(*) FROM concurrency_slots WHERE key = keys[i] AND slot < maxes[i]) < maxes[i] THEN
            INSERT INTO concurrency_slots (key, slot)
                SELECT keys[i], g FROM generate_series(0, maxes[i] - 1) g ON CONFLICT DO NOTHING;
            SELECT slot INTO s FROM concurrency_slots
                WHERE key = keys[i] AND slot < maxes[i] AND (holder IS NULL OR expires_at < now())
                ORDER BY slot LIMIT 1;
        END IF;
        IF NOT FOUND THEN
            RETURN keys[i];
        END IF;
        taken := taken || s;
    END LOOP;
    FOR i IN 1 .. cardinality(keys) LOOP
        UPDATE concurrency_slots SET holder = who, expires_at = now() + ttl * interval '1 second'
            WHERE key = keys[i] AND slot = taken[i];
    END LOOP;
    RETURN '';
END $$;
