--
-- probe_window: the full-window probe reads only rows that can be inside the window
-- (created_at >= now - window, through the (partition_id, created_at) index), whatever the
-- retained history; and it stays exact when the clock stepped back (created_at not monotonic
-- in offset order). queen.probe_cache_stats().rows_read counts the log_txns rows a probe read.
--
CREATE FUNCTION pg_temp.rows_read() RETURNS bigint LANGUAGE sql AS
    $$ SELECT rows_read FROM queen.probe_cache_stats() $$;
CREATE FUNCTION pg_temp.push1(q text, t text) RETURNS TABLE(status text, message_offset bigint)
    LANGUAGE sql AS $$ SELECT status, message_offset FROM queen.push(q, 'p', jsonb_build_array(jsonb_build_object('transactionId', t, 'payload', 1))) $$;

-- History: 20 segments pushed "two hours ago" (no retention run), then 2 recent ones.
SELECT queen.configure('pw', '{"dedupWindowSeconds": 600}') IS NOT NULL AS configured;
SELECT count(*) AS pushed FROM generate_series(1, 20) g, LATERAL pg_temp.push1('pw', 'old-' || g);
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
 WHERE partition_id = queen.partition_id('pw', 'p');
SELECT * FROM pg_temp.push1('pw', 'new-1');
SELECT * FROM pg_temp.push1('pw', 'new-2');

-- Full probe (cache off): reads the 2 in-window rows, not the 20 older ones.
SET queen.probe_cache = off;
SELECT pg_temp.rows_read() AS before \gset
SELECT * FROM pg_temp.push1('pw', 'new-1');          -- duplicate of offset 20
SELECT pg_temp.rows_read() - :before AS rows_read;
SELECT pg_temp.rows_read() AS before \gset
SELECT * FROM pg_temp.push1('pw', 'old-3');          -- out of the window: queued at 22
SELECT pg_temp.rows_read() - :before AS rows_read;
-- The cache's hydration is bounded the same way (window + 5 s of slack).
SET queen.probe_cache = on;
SELECT pg_temp.rows_read() AS before \gset
SELECT * FROM pg_temp.push1('pw', 'new-2');          -- duplicate of offset 21
SELECT pg_temp.rows_read() - :before AS rows_read;

------------------------------------------------------------------------------------------
-- The clock stepped back. Offsets are allocated under the lock in order, but created_at comes
-- from the clock: a row stamped while the clock ran ahead (offset 0, "10 minutes in the
-- future") is followed by rows stamped after it stepped back. Here offsets 1..5 look old
-- (out of the window) while offset 0 is still in it: no bound by offset derived from time
-- could find offset 0 by starting after the old rows; the created_at index does.
------------------------------------------------------------------------------------------
SELECT queen.configure('pw_clock', '{"dedupWindowSeconds": 600}') IS NOT NULL AS configured;
SELECT count(*) AS pushed FROM generate_series(0, 6) g, LATERAL pg_temp.push1('pw_clock', 'c-' || g);
UPDATE queen.log_segments SET created_at = now() + interval '10 minutes'
 WHERE partition_id = queen.partition_id('pw_clock', 'p') AND base_offset = 0;
UPDATE queen.log_segments SET created_at = now() - interval '1 hour'
 WHERE partition_id = queen.partition_id('pw_clock', 'p') AND base_offset BETWEEN 1 AND 5;
-- offset 6 keeps its real (recent) created_at.
CREATE TEMP TABLE clock_answers(cache text, txn text, status text, message_offset bigint);
SET queen.probe_cache = off;
INSERT INTO clock_answers SELECT 'off', t, a.* FROM unnest(ARRAY['c-0', 'c-3', 'c-6']) t, LATERAL pg_temp.push1('pw_clock', t) a;
SELECT * FROM clock_answers ORDER BY cache, txn;
-- The cache gives the same verdicts (a fresh partition in the same shape).
SELECT queen.configure('pw_clock2', '{"dedupWindowSeconds": 600}') IS NOT NULL AS configured;
SELECT count(*) AS pushed FROM generate_series(0, 6) g, LATERAL pg_temp.push1('pw_clock2', 'c-' || g);
UPDATE queen.log_segments SET created_at = now() + interval '10 minutes'
 WHERE partition_id = queen.partition_id('pw_clock2', 'p') AND base_offset = 0;
UPDATE queen.log_segments SET created_at = now() - interval '1 hour'
 WHERE partition_id = queen.partition_id('pw_clock2', 'p') AND base_offset BETWEEN 1 AND 5;
SET queen.probe_cache = on;
INSERT INTO clock_answers SELECT 'on', t, a.* FROM unnest(ARRAY['c-0', 'c-3', 'c-6']) t, LATERAL pg_temp.push1('pw_clock2', t) a;
SELECT txn, status, message_offset FROM clock_answers WHERE cache = 'on' ORDER BY txn;
SELECT count(*) AS differences FROM (
    (SELECT txn, status, message_offset FROM clock_answers WHERE cache = 'off'
     EXCEPT SELECT txn, status, message_offset FROM clock_answers WHERE cache = 'on')
    UNION ALL
    (SELECT txn, status, message_offset FROM clock_answers WHERE cache = 'on'
     EXCEPT SELECT txn, status, message_offset FROM clock_answers WHERE cache = 'off')) d;
-- A vouch narrows by offset (primary key) and still filters by time: c-0 below the vouch is
-- not probed, c-6 above it is.
SELECT idx, status, message_offset FROM queen.push_segment(queen.partition_id('pw_clock', 'p'),
    queen.txn_hash('c-6'),
    '\x5153010001000000'::bytea || '\x018f0000000070008000000000000077'::bytea || '\x01'::bytea
      || '\x03000000'::bytea || convert_to('c-6', 'UTF8') || '\x01000000'::bytea || '\x31'::bytea,
    5, 600);
RESET queen.probe_cache;
