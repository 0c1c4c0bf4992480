--
-- hash_index (issue 28): with the opt-in hash index on (queen.hash_index(true): GIN over
-- queen.hash_keys, log_segments_hash_keys_idx), a window that may hold more hashes than
-- queen.probe_index_min_hashes is probed through it and never read whole; without it, as
-- before. Its verdicts are the window read's, row for row: same answers for the same
-- pushes with the index (min 0) and without it (min -1), including rows out of the window,
-- rows whose hashes expired, rows updated in place (HOT), the same transactionId in another
-- partition, repeats inside one call, a bitmap gone lossy, and an index dropped by hand.
--
SET queen.probe_cache = off;  -- every probe is the authoritative one (index or window read)
CREATE FUNCTION pg_temp.push(q text, p text, ids text[]) RETURNS TABLE(status text, message_offset bigint)
    LANGUAGE sql AS $$
    SELECT status, message_offset FROM queen.push(q, p,
        (SELECT jsonb_agg(jsonb_build_object('transactionId', t, 'payload', 1) ORDER BY o)
           FROM unnest(ids) WITH ORDINALITY u(t, o))) $$;
-- Whether a bitmap scan of the hash index for these keys reads lossy pages (EXPLAIN ANALYZE's
-- "Heap Blocks: ... lossy=N").
CREATE FUNCTION pg_temp.explain_lossy(k bigint[]) RETURNS TABLE(lossy boolean)
    LANGUAGE plpgsql AS $$
DECLARE
    l text;
BEGIN
    SET LOCAL enable_seqscan = off;
    FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT 1 FROM queen.log_segments '
                     'WHERE queen.hash_keys(partition_id, hashes) && $1 AND hashes IS NOT NULL' USING k LOOP
        IF l ~ 'lossy=[1-9]' THEN lossy := true; RETURN NEXT; END IF;
    END LOOP;
END $$;
CREATE FUNCTION pg_temp.index_probes() RETURNS bigint LANGUAGE sql AS
    $$ SELECT queen.probe_index_stats() $$;

-- The key function: one key per 16-byte hash, in row order; the partition mixed in; NULL and
-- bad lengths.
SELECT queen.hash_keys(0, '\x0102030405060708ffffffffffffffff'::bytea) AS partition_0,
       queen.hash_keys(7, '\x0102030405060708ffffffffffffffff'::bytea) AS partition_7;
SELECT cardinality(queen.hash_keys(1, queen.txn_hash('a') || queen.txn_hash('b') || queen.txn_hash('a'))) AS keys_of_three,
       queen.hash_keys(1, ''::bytea) AS no_keys, queen.hash_keys(1, NULL) AS null_keys;
\set VERBOSITY terse
SELECT queen.hash_keys(1, '\x01'::bytea);
\set VERBOSITY default
-- Off by default; on and off again by queen.hash_index (idempotent; NULL is an error).
SELECT count(*) AS index_by_default FROM pg_indexes WHERE indexname = 'log_segments_hash_keys_idx';
SELECT queen.hash_index(true) AS on_1, queen.hash_index(true) AS on_2;
SELECT indexdef FROM pg_indexes WHERE indexname = 'log_segments_hash_keys_idx';
SELECT queen.hash_index(false) AS off_1, queen.hash_index(false) AS off_2;
\set VERBOSITY terse
SELECT queen.hash_index(NULL);
\set VERBOSITY default
-- Without the index a large window is read, as before 0.4.0 (no indexed probe).
SELECT queen.configure('hi_none', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS none;
SELECT count(*) AS pushed FROM generate_series(0, 19) s,
       LATERAL pg_temp.push('hi_none', 'p', ARRAY(SELECT 'n-' || (s * 100 + g) FROM generate_series(0, 99) g));
SET queen.probe_index_min_hashes = 0;
SELECT pg_temp.index_probes() AS before \gset
SELECT * FROM pg_temp.push('hi_none', 'p', ARRAY['n-1999', 'n-new']);
SELECT pg_temp.index_probes() - :before AS index_probes_without_index;
RESET queen.probe_index_min_hashes;
SELECT queen.hash_index(true) AS on_for_the_rest;

-- Two queues, the same history: 30 segments of 100 messages (3,000 hashes) per partition.
SELECT queen.configure('hi_idx', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS idx,
       queen.configure('hi_scan', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS scan;
SELECT count(*) AS pushed
  FROM generate_series(0, 29) s, unnest(ARRAY['hi_idx', 'hi_scan']) q,
       LATERAL pg_temp.push(q, 'p', ARRAY(SELECT 'm-' || (s * 100 + g) FROM generate_series(0, 99) g));
-- Rows out of the window: segments 0..4 stamped two hours ago (a uniform shift keeps the order).
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
 WHERE partition_id IN (queen.partition_id('hi_idx', 'p'), queen.partition_id('hi_scan', 'p'))
   AND base_offset < 500;
-- Hashes expired on segment 5 (as retention drops them: data kept, hashes NULL).
UPDATE queen.log_segments SET hashes = NULL
 WHERE partition_id IN (queen.partition_id('hi_idx', 'p'), queen.partition_id('hi_scan', 'p'))
   AND base_offset = 500;
-- A row updated in place without touching its hashes (a HOT chain: the index entry names the
-- chain's root): segment 6's data emptied as retention does.
UPDATE queen.log_segments SET data = ''::bytea
 WHERE partition_id IN (queen.partition_id('hi_idx', 'p'), queen.partition_id('hi_scan', 'p'))
   AND base_offset = 600;
-- The same transactionIds in another partition of hi_idx only: never a duplicate across partitions.
SELECT count(*) AS other_partition FROM pg_temp.push('hi_idx', 'other', ARRAY['m-2999', 'm-1500', 'm-650']);

-- The calls: duplicates in the window, out of it, expired, in the HOT row, new ids, a repeat
-- inside the call (the follower inherits the leader's answer).
CREATE TEMP TABLE calls (n int, ids text[]);
INSERT INTO calls VALUES
  (1, ARRAY['m-2999']),                                  -- duplicate (newest segment)
  (2, ARRAY['m-700', 'fresh-1', 'm-700', 'm-1234']),      -- duplicates, a new id, a repeat
  (3, ARRAY['m-10', 'm-499']),                           -- out of the window: new
  (4, ARRAY['m-550']),                                   -- hashes expired: new
  (5, ARRAY['m-650', 'm-699']),                          -- the HOT-updated row: duplicates
  (6, ARRAY['fresh-1', 'fresh-2', 'm-10']);               -- the earlier call's new rows: duplicates

SET queen.probe_index_min_hashes = 0;
SELECT pg_temp.index_probes() AS before \gset
CREATE TEMP TABLE via_index AS
SELECT c.n, r.ord, r.status, r.message_offset
  FROM calls c, LATERAL (SELECT row_number() OVER () AS ord, * FROM pg_temp.push('hi_idx', 'p', c.ids)) r;
SELECT pg_temp.index_probes() - :before AS index_probes;

SET queen.probe_index_min_hashes = -1;
SELECT pg_temp.index_probes() AS before \gset
CREATE TEMP TABLE via_scan AS
SELECT c.n, r.ord, r.status, r.message_offset
  FROM calls c, LATERAL (SELECT row_number() OVER () AS ord, * FROM pg_temp.push('hi_scan', 'p', c.ids)) r;
SELECT pg_temp.index_probes() - :before AS index_probes;

SELECT * FROM via_index ORDER BY n, ord;
SELECT count(*) AS differing FROM (SELECT * FROM via_index EXCEPT SELECT * FROM via_scan) d;

-- The default threshold (1024): this 3,000-hash window goes through the index, a small one not.
RESET queen.probe_index_min_hashes;
SHOW queen.probe_index_min_hashes;
SELECT queen.configure('hi_small', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS small;
SELECT count(*) AS pushed FROM pg_temp.push('hi_small', 'p', ARRAY['s-1', 's-2']);
SELECT pg_temp.index_probes() AS before \gset
SELECT * FROM pg_temp.push('hi_small', 'p', ARRAY['s-1']);
SELECT pg_temp.index_probes() - :before AS index_probes_small;
SELECT * FROM pg_temp.push('hi_idx', 'p', ARRAY['m-1000']);
SELECT pg_temp.index_probes() - :before AS index_probes_large;

-- A bitmap that goes lossy: 6,000 one-message rows about five to a page (fillfactor 10 while
-- they are written), then one call of their 6,000 ids with work_mem at its minimum (a bitmap
-- of about 1,000 exact pages at most). Whole pages are then read back, every row on them
-- checked; the answers stay exact. EXPLAIN of the same bitmap scan shows the lossy pages.
SELECT queen.configure('hi_lossy', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS lossy;
ALTER TABLE queen.log_segments SET (fillfactor = 10);
SELECT count(*) AS pushed FROM generate_series(1, 6000) g, LATERAL pg_temp.push('hi_lossy', 'p', ARRAY['l-' || g]);
ALTER TABLE queen.log_segments RESET (fillfactor);
SET work_mem = '64kB';
SET queen.probe_index_min_hashes = 0;
SELECT count(*) FILTER (WHERE l.lossy) > 0 AS bitmap_went_lossy
  FROM (SELECT queen.hash_keys(queen.partition_id('hi_lossy', 'p'), string_agg(queen.txn_hash('l-' || g), ''::bytea ORDER BY g)) AS k
          FROM generate_series(1, 6000) g) keys,
       LATERAL pg_temp.explain_lossy(keys.k) l;
SELECT status, count(*), min(message_offset), max(message_offset)
  FROM pg_temp.push('hi_lossy', 'p', ARRAY(SELECT 'l-' || g FROM generate_series(1, 6000) g)
                                     || ARRAY['l-new'])
 GROUP BY status ORDER BY status;
RESET work_mem;

-- The index dropped: the window is read instead, with the same answers; then built again.
SELECT queen.hash_index(false) AS off;
SELECT pg_temp.index_probes() AS before \gset
SELECT * FROM pg_temp.push('hi_idx', 'p', ARRAY['m-2500', 'fresh-3']);
SELECT pg_temp.index_probes() - :before AS index_probes_without_index;
SELECT queen.hash_index(true) AS on_again;
SELECT * FROM pg_temp.push('hi_idx', 'p', ARRAY['fresh-3', 'm-2501']);
SELECT pg_temp.index_probes() - :before AS index_probes_rebuilt;
RESET queen.probe_index_min_hashes;
RESET queen.probe_cache;
SELECT queen.hash_index(false) AS off_at_the_end;
