--
-- probe_cache: the per-backend cache that narrows queen.push's probe may never change a
-- verdict. The same workload runs in two fresh queues, once with SET queen.probe_cache = off
-- and once with it on; the answers must be identical (compared with EXCEPT both ways), and
-- the reference run's answers are printed so they are checked against the spec too.
-- The workload commits between steps and includes the traps a cache can fall into: a
-- rolled-back push, a rolled-back subtransaction, a repeat inside one open transaction, a
-- window switched off and on, rows aged out of the window, and rows purged by retention.
--

-- The setting exists (once the library is loaded) and is on by default.
SELECT length(queen.txn_hash('load the library')) AS loaded;
SHOW queen.probe_cache;

CREATE TEMP TABLE answers(q text, step int, idx int, status text, transaction_id text,
                          message_offset bigint, id_matches_log boolean);

CREATE TEMP TABLE last_push(index int, status text, message_id uuid, transaction_id text,
                            message_offset bigint);
-- Record one push's answers: id_matches_log says the answered id is the one the log holds at
-- the answered offset (true for queued and for duplicates of a readable original). The log is
-- read in a later statement, whose snapshot sees what the push wrote.
CREATE PROCEDURE pg_temp.push_and_record(q text, step int, items jsonb) LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM last_push;
    INSERT INTO last_push SELECT * FROM queen.push(q, 'p', items);
    INSERT INTO answers
    SELECT q, step, p.index, p.status, p.transaction_id, p.message_offset,
           p.message_id = (SELECT r.message_id FROM queen.read(q, 'p', p.message_offset, 1) r
                           WHERE r.message_offset = p.message_offset)
    FROM last_push p;
END $$;

CREATE PROCEDURE pg_temp.workload(q text) LANGUAGE plpgsql AS $$
DECLARE
    i int;
    items jsonb;
BEGIN
    -- 1..3: new, partial duplicates, repeats inside one call whose first is itself a duplicate.
    CALL pg_temp.push_and_record(q, 1, '[{"transactionId":"a","payload":1},{"transactionId":"b","payload":2},{"transactionId":"c","payload":3}]');
    COMMIT;
    CALL pg_temp.push_and_record(q, 2, '[{"transactionId":"b","payload":1},{"transactionId":"d","payload":2}]');
    COMMIT;
    CALL pg_temp.push_and_record(q, 3, '[{"transactionId":"a","payload":1},{"transactionId":"a","payload":2},{"transactionId":"e","payload":3}]');
    COMMIT;
    -- 4: a push that rolls back is never learned: r1 is new afterwards. g4, a different id,
    -- takes the offset the rolled-back r1 had, and 41 repeats it: a cache that had learned
    -- the rolled-back rows would claim to know that offset, miss g4 and answer queued (the same
    -- id at the same offset would look right even then).
    PERFORM * FROM queen.push(q, 'p', '[{"transactionId":"r1","payload":1},{"transactionId":"f","payload":1}]');
    ROLLBACK;
    CALL pg_temp.push_and_record(q, 4, '[{"transactionId":"g4","payload":2},{"transactionId":"r1","payload":2}]');
    COMMIT;
    CALL pg_temp.push_and_record(q, 41, '[{"transactionId":"g4","payload":3}]');
    COMMIT;
    -- 5: nor is a push in a subtransaction that rolls back.
    BEGIN
        PERFORM * FROM queen.push(q, 'p', '[{"transactionId":"s1","payload":1}]');
        RAISE EXCEPTION 'roll the subtransaction back';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
    CALL pg_temp.push_and_record(q, 5, '[{"transactionId":"s1","payload":2},{"transactionId":"f","payload":2}]');
    COMMIT;
    -- 6: a repeat later in the same open transaction is a duplicate of the uncommitted first.
    CALL pg_temp.push_and_record(q, 6, '[{"transactionId":"t1","payload":1}]');
    CALL pg_temp.push_and_record(q, 7, '[{"transactionId":"t1","payload":2}]');
    COMMIT;
    -- 8..10: window 0 writes hashes without probing; back to 3600 they count again.
    PERFORM queen.configure(q, '{"dedupWindowSeconds": 0}');
    COMMIT;
    CALL pg_temp.push_and_record(q, 8, '[{"transactionId":"w","payload":1},{"transactionId":"c","payload":1}]');
    COMMIT;
    CALL pg_temp.push_and_record(q, 9, '[{"transactionId":"w","payload":2}]');
    COMMIT;
    PERFORM queen.configure(q, '{"dedupWindowSeconds": 3600}');
    COMMIT;
    CALL pg_temp.push_and_record(q, 10, '[{"transactionId":"w","payload":3},{"transactionId":"c","payload":3}]');
    COMMIT;
    -- 11: rows aged out of the window (still stored) no longer count.
    UPDATE queen.log_segments t SET created_at = t.created_at - interval '2 hours'
    FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id
    WHERE t.partition_id = lp.id AND qu.name = q AND lp.name = 'p' AND t.base_offset <= 2;
    COMMIT;
    CALL pg_temp.push_and_record(q, 11, '[{"transactionId":"a","payload":4},{"transactionId":"d","payload":4}]');
    COMMIT;
    -- 12: rows purged by retention no longer count either (b was in the aged segment).
    PERFORM queen.run_retention();
    COMMIT;
    CALL pg_temp.push_and_record(q, 12, '[{"transactionId":"b","payload":5},{"transactionId":"a","payload":5},{"transactionId":"e","payload":5}]');
    COMMIT;
    -- 13: volume: 40 pushes of 10, each repeating some earlier transactionIds.
    FOR i IN 0..39 LOOP
        items := (SELECT jsonb_agg(jsonb_build_object('transactionId', 'v' || ((i * 10 + k) * 7 % 300), 'payload', k) ORDER BY k)
                  FROM generate_series(0, 9) k);
        CALL pg_temp.push_and_record(q, 100 + i, items);
        COMMIT;
    END LOOP;
END $$;

CREATE TEMP TABLE stats AS SELECT 'start' AS at, * FROM queen.probe_cache_stats();
SET queen.probe_cache = off;
CALL pg_temp.workload('pc_off');
INSERT INTO stats SELECT 'off', * FROM queen.probe_cache_stats();
SET queen.probe_cache = on;
CALL pg_temp.workload('pc_on');
INSERT INTO stats SELECT 'on', * FROM queen.probe_cache_stats();
RESET queen.probe_cache;

-- The cache was really off in the first run (no digest consulted) and really used in the
-- second (its hits were confirmed against the stored rows). partitions_cached: the run's queue
-- has a digest (in the shared cache when queen is preloaded, which holds other tests' digests
-- too; else in this backend's cache, which held none before).
SELECT b.at AS run, b.hits - a.hits > 0 AS had_hits, b.confirmed - a.confirmed > 0 AS had_confirmed_hits,
       CASE WHEN (SELECT mode FROM queen.probe_cache) = 'shared'
            THEN EXISTS (SELECT FROM queen.probe_cache_partitions() c
                           JOIN queen.log_partitions lp ON lp.id = c.partition_id
                           JOIN queen.queues q ON q.id = lp.queue_id
                          WHERE q.name = 'pc_' || b.at AND c.state = 'resident')
            ELSE b.partitions > 0 END AS partitions_cached
FROM stats a JOIN stats b ON (a.at, b.at) IN (('start', 'off'), ('off', 'on'))
ORDER BY b.at DESC;

-- The reference run (cache off), steps 1..12 (and 41).
SELECT step, idx, status, transaction_id, message_offset, id_matches_log
FROM answers WHERE q = 'pc_off' AND step < 100 ORDER BY step, idx;
-- The volume steps in summary.
SELECT status, count(*) AS n, bool_and(id_matches_log) AS ids_match_log, max(message_offset) AS max_offset
FROM answers WHERE q = 'pc_off' AND step >= 100 GROUP BY status ORDER BY status;

-- Cache on gives exactly the same answers.
SELECT count(*) AS answers_off, (SELECT count(*) FROM answers WHERE q = 'pc_on') AS answers_on
FROM answers WHERE q = 'pc_off';
SELECT count(*) AS differences FROM (
    (SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = 'pc_off'
     EXCEPT ALL
     SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = 'pc_on')
    UNION ALL
    (SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = 'pc_on'
     EXCEPT ALL
     SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = 'pc_off')) d;
-- And the same stored logs.
SELECT count(*) AS log_differences FROM (
    (SELECT message_offset, transaction_id, payload FROM queen.read('pc_off', 'p', 0, 10000)
     EXCEPT SELECT message_offset, transaction_id, payload FROM queen.read('pc_on', 'p', 0, 10000))
    UNION ALL
    (SELECT message_offset, transaction_id, payload FROM queen.read('pc_on', 'p', 0, 10000)
     EXCEPT SELECT message_offset, transaction_id, payload FROM queen.read('pc_off', 'p', 0, 10000))) d;

-- The direct write path (queen.direct_write, on above) against the SQL statements it replaces:
-- the same workload with queen.direct_write = off, cache on and off, gives the same answers
-- and stored logs as the reference run.
SET queen.direct_write = off;
SET queen.probe_cache = on;
CALL pg_temp.workload('dw_off_pc_on');
SET queen.probe_cache = off;
CALL pg_temp.workload('dw_off_pc_off');
RESET queen.probe_cache;
RESET queen.direct_write;
SELECT v.q, (SELECT count(*) FROM answers a WHERE a.q = v.q) AS answers,
       (SELECT count(*) FROM (
           (SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = 'pc_off'
            EXCEPT ALL
            SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = v.q)
           UNION ALL
           (SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = v.q
            EXCEPT ALL
            SELECT step, idx, status, transaction_id, message_offset, id_matches_log FROM answers WHERE q = 'pc_off')) d)
         AS differences,
       (SELECT count(*) FROM (
           (SELECT message_offset, transaction_id, payload FROM queen.read('pc_off', 'p', 0, 10000)
            EXCEPT SELECT message_offset, transaction_id, payload FROM queen.read(v.q, 'p', 0, 10000))
           UNION ALL
           (SELECT message_offset, transaction_id, payload FROM queen.read(v.q, 'p', 0, 10000)
            EXCEPT SELECT message_offset, transaction_id, payload FROM queen.read('pc_off', 'p', 0, 10000))) d)
         AS log_differences
FROM (VALUES ('dw_off_pc_on'), ('dw_off_pc_off')) v(q) ORDER BY v.q;
-- Stored rows are the same too, column by column (offsets, counts, hashes; times and ids differ).
CREATE TEMP VIEW stored AS
SELECT q.name AS q, t.base_offset, t.end_offset, t.hashes, s.message_count, length(t.message_ids) AS ids_len
  FROM queen.log_segments t JOIN queen.log_partitions lp ON lp.id = t.partition_id
  JOIN queen.queues q ON q.id = lp.queue_id
  LEFT JOIN queen.log_segments s ON s.partition_id = t.partition_id AND s.base_offset = t.base_offset
 WHERE t.hashes IS NOT NULL;
SELECT (SELECT count(*) FROM stored WHERE q = 'pc_off') AS rows_ref, count(*) AS row_differences FROM (
    (SELECT base_offset, end_offset, hashes, message_count, ids_len FROM stored WHERE q = 'pc_off'
     EXCEPT ALL
     SELECT base_offset, end_offset, hashes, message_count, ids_len FROM stored WHERE q = 'dw_off_pc_off')
    UNION ALL
    (SELECT base_offset, end_offset, hashes, message_count, ids_len FROM stored WHERE q = 'dw_off_pc_off'
     EXCEPT ALL
     SELECT base_offset, end_offset, hashes, message_count, ids_len FROM stored WHERE q = 'pc_off')) d;
SELECT (SELECT queen.log_end(lp.id, lp.last_offset) FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
         WHERE q.name = 'pc_off') AS last_offset_ref,
       (SELECT queen.log_end(lp.id, lp.last_offset) FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
         WHERE q.name = 'dw_off_pc_off') AS last_offset_sql;
