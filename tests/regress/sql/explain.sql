--
-- explain: queen.explain(queue, partition, transactionId) says whether a push of that id now
-- would be a duplicate, which original it would name (offset, message id, created_at), how
-- much of the window is left, and whether retention purged it. It must agree with the push.
--
\i tests/regress/sql/sqlstate_of.psql
\i tests/regress/sql/partition_state.psql
-- The stable part of an explanation (times and ids are checked separately).
CREATE FUNCTION pg_temp.ex(q text, p text, t text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT queen.explain(q, p, t) - 'createdAt' - 'messageId' - 'windowLeftSeconds' - 'queue'
           - 'partition' $$;
-- The id and created_at the explanation names, compared with the stored message.
CREATE FUNCTION pg_temp.ex_matches_log(q text, p text, t text)
    RETURNS TABLE(id_matches boolean, created_matches boolean) LANGUAGE sql AS $$
    SELECT (e ->> 'messageId')::uuid = r.message_id, (e ->> 'createdAt')::timestamptz = r.created_at
    FROM (SELECT queen.explain(q, p, t) AS e) x
    LEFT JOIN LATERAL queen.read(q, p, (x.e ->> 'offset')::bigint, 1) r ON true $$;

-- Bad input: unknown queue or partition 42704, NULL transactionId 22023.
SELECT pg_temp.sqlstate_of($q$SELECT queen.explain('ex_nope', 'p', 'a')$q$) AS unknown_queue;
SELECT queen.configure('ex_q', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ex_q', 'p', '[{"transactionId":"a","payload":1},{"transactionId":"b","payload":2}]');
SELECT pg_temp.sqlstate_of($q$SELECT queen.explain('ex_q', 'nope', 'a')$q$) AS unknown_partition;
SELECT pg_temp.sqlstate_of($q$SELECT queen.explain('ex_q', 'p', NULL)$q$) AS null_transaction_id;

-- Inside the window: a duplicate of offset 0, with its id and time, most of 60 s left.
SELECT pg_temp.ex('ex_q', 'p', 'a');
SELECT * FROM pg_temp.ex_matches_log('ex_q', 'p', 'a');
SELECT (queen.explain('ex_q', 'p', 'a') ->> 'windowLeftSeconds')::numeric BETWEEN 50 AND 60 AS window_left_ok;
-- ... and the push agrees: duplicate, same offset, same id.
SELECT p.status, p.message_offset, p.message_id = (queen.explain('ex_q', 'p', 'a') ->> 'messageId')::uuid AS same_id
FROM queen.push('ex_q', 'p', '[{"transactionId":"a","payload":9}]') p;

-- Never stored.
SELECT pg_temp.ex('ex_q', 'p', 'zzz');

-- Outside the window (its hash row aged 10 minutes): not a duplicate; the stored occurrence
-- is still named, with no window left.
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ex_q', 'p');
SELECT pg_temp.ex('ex_q', 'p', 'a');
SELECT queen.explain('ex_q', 'p', 'a') -> 'windowLeftSeconds' AS window_left;
SELECT status, message_offset FROM queen.push('ex_q', 'p', '[{"transactionId":"a","payload":3}]');
-- Accepted again at offset 2: now that is the original a push would name.
SELECT pg_temp.ex('ex_q', 'p', 'a');
SELECT * FROM pg_temp.ex_matches_log('ex_q', 'p', 'a');

-- Segment purged, hash kept (retention 60 s, window 3600 s): still a duplicate, the zero
-- UUID as the id (exactly what the push answers), purged true.
SELECT queen.configure('ex_r', '{"dedupWindowSeconds": 3600, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ex_r', 'p', '[{"transactionId":"c","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ex_r', 'p');
SELECT * FROM queen.retention_purge(pg_temp.pid('ex_r', 'p'), 100, clock_timestamp());
SELECT pg_temp.ex('ex_r', 'p', 'c');
SELECT queen.explain('ex_r', 'p', 'c') ->> 'messageId' AS message_id;
SELECT status, message_offset, message_id FROM queen.push('ex_r', 'p', '[{"transactionId":"c","payload":2}]');

-- Hash purged, message kept (window 60 s, no retention): not a duplicate, purged true, the
-- message found in the kept segments.
SELECT queen.configure('ex_h', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ex_h', 'p', '[{"transactionId":"d","payload":1},{"transactionId":"d2","payload":2}]');
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ex_h', 'p');
SELECT * FROM queen.retention_purge(pg_temp.pid('ex_h', 'p'), 100, clock_timestamp());
SELECT pg_temp.ex('ex_h', 'p', 'd2');
SELECT * FROM pg_temp.ex_matches_log('ex_h', 'p', 'd2');

-- Hash and segment purged: nothing is known any more (purged null, offset null).
SELECT queen.configure('ex_b', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ex_b', 'p', '[{"transactionId":"e","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ex_b', 'p');
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ex_b', 'p');
SELECT * FROM queen.retention_purge(pg_temp.pid('ex_b', 'p'), 100, clock_timestamp());
SELECT pg_temp.ex('ex_b', 'p', 'e');
SELECT queen.explain('ex_b', 'p', 'e') -> 'messageId' AS message_id;

-- Window 0: no probe, never a duplicate; the latest occurrence is named.
SELECT queen.configure('ex_0', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('ex_0', 'p', '[{"transactionId":"f","payload":1}]');
SELECT status, message_offset FROM queen.push('ex_0', 'p', '[{"transactionId":"f","payload":2}]');
SELECT pg_temp.ex('ex_0', 'p', 'f');
SELECT * FROM pg_temp.ex_matches_log('ex_0', 'p', 'f');
