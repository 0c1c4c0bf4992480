--
-- window_zero: dedupWindowSeconds = 0 turns deduplication off entirely. Nothing is probed,
-- and a repeat INSIDE one call is written like a repeat in the next call: every item is
-- queued at its own offset with its own message id. So how a client (or the sidecar, which
-- fuses requests) splits or joins calls never changes what is stored. With a window > 0 the
-- first occurrence in a call leads and the later ones answer duplicate of it.
--
SELECT queen.configure('wz', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
CREATE TEMP TABLE wz_answers AS
SELECT * FROM queen.push('wz', 'p',
    '[{"transactionId":"x","payload":0},{"transactionId":"x","payload":1},{"transactionId":"y","payload":2},{"transactionId":"x","payload":3}]');
SELECT index, status, transaction_id, message_offset FROM wz_answers ORDER BY index;
SELECT count(DISTINCT message_id) AS distinct_ids FROM wz_answers;
-- Stored as four messages, read back in order with their own payloads.
SELECT message_offset, transaction_id, payload FROM queen.read('wz', 'p', 0, 10);
-- The next call repeats x again: queued too (no probe).
SELECT index, status, message_offset FROM queen.push('wz', 'p', '[{"transactionId":"x","payload":4}]');

-- The binary path does the same.
SELECT partition_id AS wzb FROM queen.resolve_partition('wz', 'bin') \gset
SELECT idx, status, message_offset FROM queen.push_segment(:wzb,
    queen.txn_hash('r') || queen.txn_hash('r'),
    '\x5153010002000000'::bytea
      || '\x018f0000000070008000000000000001'::bytea || '\x01'::bytea || '\x01000000'::bytea || '\x72'::bytea || '\x01000000'::bytea || '\x31'::bytea
      || '\x018f0000000070008000000000000002'::bytea || '\x01'::bytea || '\x01000000'::bytea || '\x72'::bytea || '\x01000000'::bytea || '\x32'::bytea,
    -1, 0);

-- queen.transaction with window 0: repeats are not duplicates, so no 23505.
SELECT jsonb_path_query_array(queen.transaction('{"operations": [
    {"type": "push", "queue": "wz", "partition": "t",
     "items": [{"transactionId": "q", "payload": 1}, {"transactionId": "q", "payload": 2}]}]}'),
    '$.results[0].items[*].status') AS statuses;

-- Contrast: the same call with a window > 0 — the repeats follow the first occurrence.
SELECT index, status, transaction_id, message_offset FROM queen.push('wz_on', 'p',
    '[{"transactionId":"x","payload":0},{"transactionId":"x","payload":1},{"transactionId":"y","payload":2},{"transactionId":"x","payload":3}]');

-- Turning the window on later: the probe finds the earliest stored occurrence.
SELECT queen.configure('wz', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS configured;
SELECT index, status, message_offset FROM queen.push('wz', 'p', '[{"transactionId":"x","payload":5}]');
