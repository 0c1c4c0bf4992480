--
-- hash_runs (issue 28, 0.4.0): a window that may hold more hashes than
-- queen.probe_index_min_hashes is probed through its partition's hash runs (queen.log_hash_runs:
-- its hashes sorted by key in immutable runs, kept by the push under the partition lock), a few
-- index reads per message instead of a read of the window. Their verdicts are the window read's,
-- call for call: the same pushes with runs (queue hr_runs) and without (hr_scan, queen.hash_runs
-- off), across rows out of the window, expired hashes, rows updated in place, another
-- partition, repeats in a call, runs built and merged one call at a time, the purge watermark
-- moving, a damaged or emptied runs table, a rolled-back build, and a partition dropped.
--
SET queen.probe_cache = off;  -- every probe is the authoritative one (runs or window read)
CREATE FUNCTION pg_temp.push(q text, p text, ids text[]) RETURNS TABLE(status text, message_offset bigint)
    LANGUAGE sql AS $$
    SELECT status, message_offset FROM queen.push(q, p,
        (SELECT jsonb_agg(jsonb_build_object('transactionId', t, 'payload', 1) ORDER BY o)
           FROM unnest(ids) WITH ORDINALITY u(t, o))) $$;
CREATE TEMP TABLE r_runs (ord bigint, status text, message_offset bigint);
CREATE TEMP TABLE r_scan (ord bigint, status text, message_offset bigint);
-- One queue's pushes with runs, the other's without, answers side by side.
CREATE FUNCTION pg_temp.both(ids text[]) RETURNS TABLE(ord bigint, status text, message_offset bigint, same boolean)
    LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL queen.hash_runs = on;
    TRUNCATE r_runs, r_scan;
    INSERT INTO r_runs SELECT row_number() OVER (), * FROM pg_temp.push('hr_runs', 'p', ids);
    SET LOCAL queen.hash_runs = off;
    INSERT INTO r_scan SELECT row_number() OVER (), * FROM pg_temp.push('hr_scan', 'p', ids);
    RETURN QUERY SELECT a.ord, a.status, a.message_offset,
                        a.status = b.status AND a.message_offset = b.message_offset
                   FROM r_runs a JOIN r_scan b USING (ord) ORDER BY a.ord;
END $$;
CREATE FUNCTION pg_temp.runs(q text, p text DEFAULT 'p')
    RETURNS TABLE(run_lo bigint, run_hi bigint, chunks bigint, entries bigint)
    LANGUAGE sql AS $$
    SELECT run_lo, run_hi, count(*), sum(octet_length(entries)) / 12
      FROM queen.log_hash_runs WHERE partition_id = queen.partition_id(q, p)
     GROUP BY 1, 2 ORDER BY 1 $$;
-- The list the newest run carries.
CREATE FUNCTION pg_temp.listed(q text) RETURNS bigint[] LANGUAGE sql AS $$
    SELECT runs FROM queen.log_hash_runs WHERE partition_id = queen.partition_id(q, 'p')
     ORDER BY run_lo DESC, key_hi DESC LIMIT 1 $$;

SHOW queen.hash_runs;
-- A small window has no runs and is read, as before.
SELECT queen.configure('hr_small', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS small;
SELECT count(*) AS pushed FROM generate_series(0, 9) s,
       LATERAL pg_temp.push('hr_small', 'p', ARRAY(SELECT 's-' || (s * 100 + g) FROM generate_series(0, 99) g));
SELECT queen.probe_runs_stats() AS before \gset
SELECT * FROM pg_temp.push('hr_small', 'p', ARRAY['s-5', 's-new']);
SELECT queen.probe_runs_stats() - :before AS runs_probes_small, count(*) AS runs_small
  FROM pg_temp.runs('hr_small');

-- Two queues, the same history: 30 segments of 100 messages (3,000 hashes) per partition. The
-- first run is written once the window passes 1,024 offsets, then one per 32 and merged by four.
SELECT queen.configure('hr_runs', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS runs,
       queen.configure('hr_scan', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS scan;
SELECT count(*) AS pushed
  FROM generate_series(0, 29) s, unnest(ARRAY['hr_runs', 'hr_scan']) q,
       LATERAL pg_temp.push(q, 'p', ARRAY(SELECT 'm-' || (s * 100 + g) FROM generate_series(0, 99) g));
SELECT * FROM pg_temp.runs('hr_runs');
SELECT pg_temp.listed('hr_runs');
-- Rows out of the window: segments 0..4 stamped two hours ago (a uniform shift keeps the order).
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
 WHERE partition_id IN (queen.partition_id('hr_runs', 'p'), queen.partition_id('hr_scan', 'p'))
   AND base_offset < 500;
-- Hashes expired on segment 5 (as retention drops them: data kept, hashes NULL).
UPDATE queen.log_segments SET hashes = NULL, message_ids = NULL
 WHERE partition_id IN (queen.partition_id('hr_runs', 'p'), queen.partition_id('hr_scan', 'p'))
   AND base_offset = 500;
-- A row updated in place without touching its hashes: segment 6's data emptied.
UPDATE queen.log_segments SET data = ''::bytea
 WHERE partition_id IN (queen.partition_id('hr_runs', 'p'), queen.partition_id('hr_scan', 'p'))
   AND base_offset = 600;
-- The same transactionIds in another partition of hr_runs only: never a duplicate across partitions.
SELECT count(*) AS other_partition FROM pg_temp.push('hr_runs', 'other', ARRAY['m-2999', 'm-1500', 'm-650']);

-- The calls: duplicates in the window, out of it, expired, in the updated row, new ids, a repeat
-- inside the call (the follower inherits the leader's answer), the earlier call's new rows.
SELECT queen.probe_runs_stats() AS before \gset
SELECT * FROM pg_temp.both(ARRAY['m-2999']);
SELECT * FROM pg_temp.both(ARRAY['m-700', 'fresh-1', 'm-700', 'm-1234']);
SELECT * FROM pg_temp.both(ARRAY['m-10', 'm-499']);
SELECT * FROM pg_temp.both(ARRAY['m-550']);
SELECT * FROM pg_temp.both(ARRAY['m-650', 'm-699']);
SELECT * FROM pg_temp.both(ARRAY['fresh-1', 'fresh-2', 'm-10']);
SELECT queen.probe_runs_stats() - :before AS runs_probes;

-- 200 one-message calls, every fifth a duplicate of an older one, every seventh of the one just
-- before: runs are written and merged between them; every answer the same as the window read's.
SELECT count(*) FILTER (WHERE NOT b.same) AS differing, count(*) FILTER (WHERE b.status = 'duplicate') AS duplicates,
       count(*) AS answers
  FROM generate_series(1, 200) g,
       LATERAL pg_temp.both(ARRAY[CASE WHEN g % 5 = 0 THEN 'm-' || (g * 13 % 3000)
                                       WHEN g % 7 = 0 THEN 'one-' || (g - 1)
                                       ELSE 'one-' || g END]) b;
SELECT * FROM pg_temp.runs('hr_runs');
SELECT pg_temp.listed('hr_runs');

-- Retention moved the purge watermark to 1,500 (the hashes below it dropped): runs wholly below
-- it go and merges drop the entries below it; answers unchanged.
UPDATE queen.log_segments SET hashes = NULL, message_ids = NULL
 WHERE partition_id IN (queen.partition_id('hr_runs', 'p'), queen.partition_id('hr_scan', 'p'))
   AND end_offset < 1500;
UPDATE queen.log_partitions SET txns_start = 1500
 WHERE id IN (queen.partition_id('hr_runs', 'p'), queen.partition_id('hr_scan', 'p'));
SELECT count(*) FILTER (WHERE NOT b.same) AS differing, count(*) FILTER (WHERE b.status = 'duplicate') AS duplicates,
       count(*) AS answers
  FROM generate_series(1, 40) g,
       LATERAL pg_temp.both(ARRAY['m-' || (g * 97 % 3000), 'late-' || g]) b;
SELECT count(*) AS runs_below_watermark FROM pg_temp.runs('hr_runs') WHERE run_hi < 1500;
SELECT min(run_lo) <= 1500 AS first_run_covers_watermark FROM pg_temp.runs('hr_runs');

-- A damaged list (the newest run's list gone): not trusted, the window is read with the same
-- answers, and the next upkeep builds the partition's runs again from its rows.
UPDATE queen.log_hash_runs SET runs = NULL WHERE partition_id = queen.partition_id('hr_runs', 'p');
SELECT queen.probe_runs_stats() AS before \gset
SELECT * FROM pg_temp.both(ARRAY['m-2998', 'one-3', 'damaged-1']);
SELECT queen.probe_runs_stats() - :before AS runs_probes_damaged;
SELECT * FROM pg_temp.runs('hr_runs');
SELECT * FROM pg_temp.both(ARRAY['m-2997', 'damaged-1', 'damaged-2']);
SELECT queen.probe_runs_stats() - :before AS runs_probes_rebuilt;

-- The runs emptied by hand: the same, then built again.
TRUNCATE queen.log_hash_runs;
SELECT * FROM pg_temp.both(ARRAY['m-2996', 'emptied-1']);
SELECT count(*) > 0 AS rebuilt FROM pg_temp.runs('hr_runs');
SELECT * FROM pg_temp.both(ARRAY['emptied-1', 'm-1600']);

-- A build rolled back with its push: the runs are as before.
CREATE TEMP TABLE runs_before AS SELECT * FROM pg_temp.runs('hr_runs');
BEGIN;
SELECT count(*) AS pushed FROM generate_series(1, 40) g, LATERAL pg_temp.push('hr_runs', 'p', ARRAY['rb-' || g]);
SELECT count(*) > 0 AS changed_inside
  FROM (SELECT * FROM pg_temp.runs('hr_runs') EXCEPT SELECT * FROM runs_before) d;
ROLLBACK;
SELECT count(*) AS differing_after_rollback
  FROM (SELECT * FROM pg_temp.runs('hr_runs') EXCEPT SELECT * FROM runs_before
        UNION ALL SELECT * FROM runs_before EXCEPT SELECT * FROM pg_temp.runs('hr_runs')) d;
SELECT * FROM pg_temp.push('hr_runs', 'p', ARRAY['rb-1']);

-- queen.probe_index_min_hashes -1: never through runs (nor built).
SET queen.probe_index_min_hashes = -1;
SELECT queen.probe_runs_stats() AS before \gset
SELECT * FROM pg_temp.push('hr_runs', 'p', ARRAY['rb-1', 'm-2999']);
SELECT queen.probe_runs_stats() - :before AS runs_probes_min_off;
RESET queen.probe_index_min_hashes;

-- A partition dropped takes its runs with it.
SELECT queen.partition_id('hr_runs', 'p') AS pid \gset
DELETE FROM queen.log_partitions WHERE id = :pid;
SELECT count(*) AS runs_of_dropped FROM queen.log_hash_runs WHERE partition_id = :pid;
RESET queen.probe_cache;
