--
-- edges: every row of the specification's "edges" table (queen-deduplication.md), in order.
--
\i tests/regress/sql/partition_state.psql
-- The id a partition stored at an offset (read back from the log).
CREATE FUNCTION pg_temp.id_at(q text, p text, o bigint) RETURNS uuid LANGUAGE sql AS $$
    SELECT message_id FROM queen.read(q, p, o, 1) WHERE message_offset = o $$;

------------------------------------------------------------------------------------------
-- Edge 1: the same transactionId twice in one request body -> the second item is a
-- duplicate carrying the first's message id (and offset). Only one message is written.
------------------------------------------------------------------------------------------
SELECT index, status, transaction_id, message_offset,
       message_id = first_value(message_id) OVER (ORDER BY index) AS first_id
FROM queen.push('edges_same', 'p', '[{"transactionId":"t1","payload":1},{"transactionId":"t1","payload":2}]')
ORDER BY index;
SELECT * FROM pg_temp.state('edges_same', 'p');
SELECT message_offset, payload FROM queen.read('edges_same', 'p', 0, 10);

------------------------------------------------------------------------------------------
-- Edge 2: the same transactionId in a later request, inside the window -> duplicate with the
-- original message id; nothing written.
------------------------------------------------------------------------------------------
SELECT status, message_offset FROM queen.push('edges_later', 'p', '[{"transactionId":"t2","payload":1}]');
SELECT * FROM pg_temp.state('edges_later', 'p');
SELECT status, message_offset, message_id = pg_temp.id_at('edges_later', 'p', 0) AS original_id
FROM queen.push('edges_later', 'p', '[{"transactionId":"t2","payload":2}]');
SELECT * FROM pg_temp.state('edges_later', 'p');

------------------------------------------------------------------------------------------
-- Edge 3: the original segment already deleted by retention -> duplicate, but the message id
-- is the zero UUID (the original cannot be read back). The hashes outlive the segment: they
-- follow the dedup window (3600 s here), the segment follows retentionSeconds (60 s).
------------------------------------------------------------------------------------------
SELECT queen.configure('edges_ret', '{"retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('edges_ret', 'p', '[{"transactionId":"r1","payload":1}]');
SELECT status, message_offset FROM queen.push('edges_ret', 'p', '[{"transactionId":"r2","payload":2}]');
-- Age the first segment (only the segment: its log_txns row stays inside the window).
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
WHERE partition_id = pg_temp.pid('edges_ret', 'p') AND base_offset = 0;
SELECT queen.run_retention() IS NOT NULL AS ran;
-- The first segment is gone (log_start advanced to 1), both hash rows remain.
SELECT * FROM pg_temp.state('edges_ret', 'p');
SELECT message_offset, transaction_id FROM queen.read('edges_ret', 'p', 0, 10);
-- r1 again: duplicate of offset 0 with the zero UUID; r2 again: duplicate with its real id.
SELECT index, status, transaction_id, message_offset,
       message_id = '00000000-0000-0000-0000-000000000000' AS zero_uuid,
       message_id = pg_temp.id_at('edges_ret', 'p', 1) AS readable_original
FROM queen.push('edges_ret', 'p', '[{"transactionId":"r1","payload":3},{"transactionId":"r2","payload":4}]')
ORDER BY index;
-- Nothing written.
SELECT * FROM pg_temp.state('edges_ret', 'p');

------------------------------------------------------------------------------------------
-- Edge 4: the transactionId re-pushed after the window elapsed -> accepted as new.
-- (a) the hash row is still stored but older than the window (no retention run yet);
-- (b) retention purged the hash row (txns_start advances).
------------------------------------------------------------------------------------------
SELECT queen.configure('edges_win', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
-- (a)
SELECT status, message_offset FROM queen.push('edges_win', 'a', '[{"transactionId":"w1","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
WHERE partition_id = pg_temp.pid('edges_win', 'a');
UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
WHERE partition_id = pg_temp.pid('edges_win', 'a');
SELECT status, message_offset, message_id <> pg_temp.id_at('edges_win', 'a', 0) AS new_id
FROM queen.push('edges_win', 'a', '[{"transactionId":"w1","payload":2}]');
SELECT * FROM pg_temp.state('edges_win', 'a');
-- Inside the window again: the new occurrence (offset 1) is now the one that counts.
SELECT status, message_offset, message_id = pg_temp.id_at('edges_win', 'a', 1) AS id_of_offset_1
FROM queen.push('edges_win', 'a', '[{"transactionId":"w1","payload":3}]');
-- (b)
SELECT status, message_offset FROM queen.push('edges_win', 'b', '[{"transactionId":"w1","payload":1}]');
UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
WHERE partition_id = pg_temp.pid('edges_win', 'b');
SELECT queen.run_retention() IS NOT NULL AS ran;
-- The hash row is gone and txns_start moved past it (no retentionSeconds: the segment stays).
SELECT * FROM pg_temp.state('edges_win', 'b');
SELECT status, message_offset, message_id <> pg_temp.id_at('edges_win', 'b', 0) AS new_id
FROM queen.push('edges_win', 'b', '[{"transactionId":"w1","payload":2}]');
SELECT * FROM pg_temp.state('edges_win', 'b');

------------------------------------------------------------------------------------------
-- Edge 5: the same transactionId in a different partition (or queue) -> accepted:
-- deduplication is per partition.
------------------------------------------------------------------------------------------
SELECT status, message_offset FROM queen.push('edges_part', 'pA', '[{"transactionId":"t5","payload":1}]');
SELECT status, message_offset, message_id <> pg_temp.id_at('edges_part', 'pA', 0) AS new_id
FROM queen.push('edges_part', 'pB', '[{"transactionId":"t5","payload":1}]');
SELECT status, message_offset, message_id <> pg_temp.id_at('edges_part', 'pA', 0) AS new_id
FROM queen.push('edges_part2', 'pA', '[{"transactionId":"t5","payload":1}]');
-- and both partitions still see their own copy as a duplicate.
SELECT status, message_offset, message_id = pg_temp.id_at('edges_part', 'pB', 0) AS own_original
FROM queen.push('edges_part', 'pB', '[{"transactionId":"t5","payload":1}]');

------------------------------------------------------------------------------------------
-- Edge 6: dedupWindowSeconds 0 -> no probe (a repeat is queued again), but log_txns is still
-- written, so an ack by transactionId still resolves (to the earliest occurrence).
------------------------------------------------------------------------------------------
SELECT queen.configure('edges_off', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT name, dedup_window_seconds FROM queen.queues WHERE name = 'edges_off';
SELECT status, message_offset FROM queen.push('edges_off', 'p', '[{"transactionId":"z","payload":1}]');
SELECT status, message_offset, message_id <> pg_temp.id_at('edges_off', 'p', 0) AS new_id
FROM queen.push('edges_off', 'p', '[{"transactionId":"z","payload":2}]');
SELECT * FROM pg_temp.state('edges_off', 'p');
SELECT base_offset, end_offset, hashes = queen.txn_hash('z') AS hash_of_z
FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = pg_temp.pid('edges_off', 'p') ORDER BY base_offset;
SELECT queen.ack('edges_off', 'p', 'z') AS acked;
SELECT queen.committed_offset('edges_off', 'p') AS committed;

------------------------------------------------------------------------------------------
-- Edge 7: configure without dedupWindowSeconds resets the window to 3600 (full replace), with
-- a NOTICE because a non-default window silently returns to the default. From then on the
-- hashes written while dedup was off count: z is a duplicate of its earliest occurrence.
------------------------------------------------------------------------------------------
SELECT queen.configure('edges_off', '{"retentionSeconds": 86400}') IS NOT NULL AS configured;
SELECT name, dedup_window_seconds, retention_seconds FROM queen.queues WHERE name = 'edges_off';
SELECT status, message_offset, message_id = pg_temp.id_at('edges_off', 'p', 0) AS earliest_id
FROM queen.push('edges_off', 'p', '[{"transactionId":"z","payload":3}]');
SELECT * FROM pg_temp.state('edges_off', 'p');

------------------------------------------------------------------------------------------
-- Edge 8: a duplicate inside queen.transaction -> unique_violation (23505) naming the
-- transactionId, and nothing of the transaction is kept, the ack before it included.
------------------------------------------------------------------------------------------
SELECT status, message_offset FROM queen.push('edges_tx', 'p',
    '[{"transactionId":"x1","payload":1},{"transactionId":"x2","payload":2}]');
DO $$
DECLARE
    msg text;
    det text;
BEGIN
    PERFORM queen.transaction('{"operations":[
        {"type":"ack","queue":"edges_tx","partition":"p","transactionId":"x1","consumerGroup":"g"},
        {"type":"push","queue":"edges_tx","partition":"p","items":[{"transactionId":"new1","payload":1}]},
        {"type":"push","queue":"edges_tx","partition":"p","items":[{"transactionId":"x2","payload":2}]}]}');
    RAISE NOTICE 'no error';
EXCEPTION WHEN unique_violation THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
    RAISE NOTICE 'SQLSTATE %, names the transactionId: %', SQLSTATE,
        position('x2' IN coalesce(msg, '') || ' ' || coalesce(det, '')) > 0;
END $$;
-- Nothing kept: no ack (committed -1), no new1, the allocator and rows unchanged.
SELECT queen.committed_offset('edges_tx', 'p', 'g') AS committed;
SELECT * FROM pg_temp.state('edges_tx', 'p');
SELECT message_offset, transaction_id FROM queen.read('edges_tx', 'p', 0, 10);
-- The same error seen by a client (terse: the message only).
\set VERBOSITY terse
SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"edges_tx","partition":"p","items":[{"transactionId":"x2","payload":2}]}]}');
\set VERBOSITY default
-- Without the duplicate the same operations apply.
SELECT queen.transaction('{"operations":[
    {"type":"ack","queue":"edges_tx","partition":"p","transactionId":"x1","consumerGroup":"g"},
    {"type":"push","queue":"edges_tx","partition":"p","items":[{"transactionId":"new1","payload":1}]}]}')
    IS NOT NULL AS applied;
SELECT queen.committed_offset('edges_tx', 'p', 'g') AS committed;
SELECT * FROM pg_temp.state('edges_tx', 'p');

-- Leave no aged rows behind for later tests.
SELECT queen.run_retention() IS NOT NULL AS ran;
