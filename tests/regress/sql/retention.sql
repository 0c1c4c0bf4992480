--
-- retention: queen.run_retention(max_rows) deletes segments older than retention_seconds
-- (when set) and log_txns rows older than the dedup window, in bounded batches under the
-- partition row lock, advancing log_start / txns_start; it answers a jsonb summary.
--
\i tests/regress/sql/partition_state.psql

-- Start from a clean slate: whatever earlier tests left eligible is purged now, so the
-- summaries below count only this test's rows.
SELECT jsonb_typeof(queen.run_retention()) AS answer_type;

-- ret_q: segments kept 60 s, hashes kept 60 s. Six pushes of one message each (offsets 0..5).
SELECT queen.configure('ret_q', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued
FROM generate_series(0, 5) i,
     LATERAL queen.push('ret_q', 'p', jsonb_build_array(jsonb_build_object('transactionId', 'm' || i, 'payload', i)));
SELECT * FROM pg_temp.state('ret_q', 'p');

-- Nothing is old yet: nothing deleted.
SELECT queen.run_retention() - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_q', 'p');

-- Age the first four segments and their hash rows (offsets 0..3) past both limits.
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ret_q', 'p') AND base_offset <= 3;
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ret_q', 'p') AND base_offset <= 3;

-- Bounded batches: with max_rows 1, each call deletes at most one row in all, oldest first,
-- and the watermarks follow.
SELECT queen.run_retention(1) - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_q', 'p');
SELECT queen.run_retention(1) - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_q', 'p');
-- A larger batch finishes the job; the young rows (4, 5) stay.
SELECT queen.run_retention(100) - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_q', 'p');
SELECT queen.run_retention(100) - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_q', 'p');

-- Reading starts at log_start; the allocator is untouched.
SELECT message_offset, transaction_id FROM queen.read('ret_q', 'p', 0, 100);
-- A purged hash is unknown to ack (false) and accepted as new by push (offset 6).
SELECT queen.ack('ret_q', 'p', 'm0') AS ack_purged, queen.ack('ret_q', 'p', 'm4') AS ack_kept;
SELECT status, message_offset FROM queen.push('ret_q', 'p', '[{"transactionId":"m0","payload":"again"}]');
SELECT status, message_offset FROM queen.push('ret_q', 'p', '[{"transactionId":"m5","payload":"again"}]');

-- ret_keep: no retentionSeconds -> segments are kept forever, only hashes follow the window.
SELECT queen.configure('ret_keep', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ret_keep', 'p',
    '[{"transactionId":"k0","payload":0},{"transactionId":"k1","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '1 day'
WHERE partition_id = pg_temp.pid('ret_keep', 'p');
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ret_keep', 'p');
SELECT queen.run_retention() - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_keep', 'p');
SELECT message_offset, transaction_id FROM queen.read('ret_keep', 'p', 0, 100);

-- ret_default: the default window (3600 s) keeps hashes one hour; a 10-minute-old row stays,
-- a 2-hour-old one goes.
SELECT count(*) AS queued FROM queen.push('ret_default', 'p', '[{"transactionId":"d0","payload":0}]');
SELECT count(*) AS queued FROM queen.push('ret_default', 'p', '[{"transactionId":"d1","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
WHERE partition_id = pg_temp.pid('ret_default', 'p') AND base_offset = 0;
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('ret_default', 'p') AND base_offset = 1;
SELECT queen.run_retention() - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_default', 'p');

-- ret_off: with window 0 there is no window to age out of; the hashes stay as long as their
-- segments do, so acks keep resolving; once retention deletes the segments, their hashes go
-- with them.
SELECT queen.configure('ret_off', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ret_off', 'p', '[{"transactionId":"o0","payload":0}]');
SELECT count(*) AS queued FROM queen.push('ret_off', 'p', '[{"transactionId":"o1","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '1 day'
WHERE partition_id = pg_temp.pid('ret_off', 'p');
UPDATE queen.log_segments SET created_at = created_at - interval '1 day'
WHERE partition_id = pg_temp.pid('ret_off', 'p');
SELECT queen.run_retention() - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_off', 'p');
SELECT queen.ack('ret_off', 'p', 'o0') AS ack_o0;
SELECT queen.configure('ret_off', '{"dedupWindowSeconds": 0, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT queen.run_retention() - 'partitionsVisited' AS summary;
SELECT * FROM pg_temp.state('ret_off', 'p');
SELECT queen.ack('ret_off', 'p', 'o1') AS ack_o1;

-- Bad argument: a negative batch size is 22023.
\set VERBOSITY sqlstate
SELECT queen.run_retention(-1);
\set VERBOSITY default

-- Nothing of this test is left to age into eligibility while later tests run (their retention
-- calls would find work that depends on how long the suite took): its queues are dropped.
SELECT count(*) AS dropped FROM queen.queues q
 WHERE q.name LIKE 'ret\_%' AND queen.drop_queue(q.name) IS NOT NULL;
