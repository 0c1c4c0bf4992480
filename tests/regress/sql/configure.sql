--
-- configure: queen.configure(queue, options jsonb) is a FULL REPLACE of dedupWindowSeconds,
-- retentionSeconds and dedupBy: an omitted key returns to its default (3600, null,
-- "transactionId"), with a NOTICE when that silently turns a non-default dedup window back
-- to 3600. Bad options are 22023 and change nothing.
--
\i tests/regress/sql/sqlstate_of.psql
CREATE FUNCTION pg_temp.settings(q text)
    RETURNS TABLE(dedup_window_seconds int, retention_seconds int, dedup_by text)
    LANGUAGE sql AS $$
    SELECT dedup_window_seconds, retention_seconds, dedup_by FROM queen.queues WHERE name = q $$;

-- configure creates an unknown queue; the answer is the queue's effective settings.
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 600, "retentionSeconds": 7200, "dedupBy": "content"}');
SELECT * FROM pg_temp.settings('cfg_q');

-- Full replace: naming only retentionSeconds resets the window (NOTICE: 600 -> 3600) and dedupBy.
SELECT queen.configure('cfg_q', '{"retentionSeconds": 100}');
SELECT * FROM pg_temp.settings('cfg_q');

-- An empty object resets everything; the window already is 3600, so no NOTICE.
SELECT queen.configure('cfg_q', '{}');
SELECT * FROM pg_temp.settings('cfg_q');

-- Naming the default window explicitly, or keeping a non-default one, raises no NOTICE.
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 0}');
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 0, "retentionSeconds": 5}');
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 3600}');
SELECT * FROM pg_temp.settings('cfg_q');

-- The trap the specification warns about: a queue created with dedup off silently gets the
-- one-hour window back from a configure that does not name it (NOTICE).
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 0}');
SELECT queen.configure('cfg_q', '{"dedupBy": "transactionId"}');
SELECT * FROM pg_temp.settings('cfg_q');

-- The window set by configure is the one push uses: with 0 a repeat is queued again.
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('cfg_q', 'p', '[{"transactionId":"k","payload":1}]');
SELECT status, message_offset FROM queen.push('cfg_q', 'p', '[{"transactionId":"k","payload":1}]');
SELECT queen.configure('cfg_q', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('cfg_q', 'p', '[{"transactionId":"k","payload":1}]');

------------------------------------------------------------------------------------------
-- dedupBy "content": an item without a transactionId is identified by a hash of its
-- payload's canonical bytes; the answer's transaction_id shows the identity used.
------------------------------------------------------------------------------------------
SELECT queen.configure('cfg_content', '{"dedupBy": "content"}') IS NOT NULL AS configured;
SELECT * FROM pg_temp.settings('cfg_content');
CREATE TEMP TABLE c1 AS
SELECT * FROM queen.push('cfg_content', 'p', '[{"payload":{"a":1,"b":[1,2]}}]');
SELECT index, status, message_offset,
       transaction_id IS NOT NULL AS has_identity,
       transaction_id <> message_id::text AS identity_is_not_the_id
FROM c1;
-- The same payload again (other key order and spacing: the same canonical JSON) ->
-- duplicate with the first's id and the same identity.
SELECT p.status, p.message_offset, p.message_id = c1.message_id AS original_id,
       p.transaction_id = c1.transaction_id AS same_identity
FROM c1, queen.push('cfg_content', 'p', '[{"payload":{ "b" : [1,2], "a":1 }}]') p;
-- Identical payloads twice in one call: the second follows the first.
SELECT index, status, message_offset,
       message_id = first_value(message_id) OVER (ORDER BY index) AS first_id,
       transaction_id = first_value(transaction_id) OVER (ORDER BY index) AS same_identity
FROM queen.push('cfg_content', 'p', '[{"payload":"same"},{"payload":"same"}]')
ORDER BY index;
-- A different payload is new.
SELECT status, message_offset,
       transaction_id <> (SELECT transaction_id FROM c1) AS other_identity
FROM queen.push('cfg_content', 'p', '[{"payload":{"a":2,"b":[1,2]}}]');
-- An explicit transactionId still wins over content: a new transactionId with a stored
-- payload is queued, and the answer shows that transactionId.
SELECT status, message_offset, transaction_id
FROM queen.push('cfg_content', 'p', '[{"transactionId":"explicit","payload":{"a":1,"b":[1,2]}}]');
-- The identity is what log_txns holds: the stored message's transaction_id hashes to its row.
SELECT r.message_offset, u.h = queen.txn_hash(r.transaction_id) AS hash_matches
FROM queen.read('cfg_content', 'p', 0, 100) r
JOIN queen.log_segments t ON t.hashes IS NOT NULL AND t.partition_id = (SELECT lp.id FROM queen.log_partitions lp
                                           JOIN queen.queues q ON q.id = lp.queue_id
                                           WHERE q.name = 'cfg_content' AND lp.name = 'p')
                     AND r.message_offset BETWEEN t.base_offset AND t.end_offset
JOIN queen.log_unnest_hashes(t.hashes) u ON u.idx = r.message_offset - t.base_offset
ORDER BY r.message_offset;
-- An ack by the content identity resolves.
SELECT queen.ack('cfg_content', 'p', (SELECT transaction_id FROM c1)) AS acked;
SELECT queen.committed_offset('cfg_content', 'p') AS committed;
-- Back to dedupBy transactionId: the same payload without transactionId is a new message.
SELECT queen.configure('cfg_content', '{}') IS NOT NULL AS configured;
SELECT status, message_offset, transaction_id = message_id::text AS txn_is_id
FROM queen.push('cfg_content', 'p', '[{"payload":{"a":1,"b":[1,2]}}]');

------------------------------------------------------------------------------------------
-- Bad options: 22023 each, and the queue's settings are unchanged.
------------------------------------------------------------------------------------------
SELECT queen.configure('cfg_bad', '{"dedupWindowSeconds": 120, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT o AS options, pg_temp.sqlstate_of(format('SELECT queen.configure(%L, %L)', 'cfg_bad', o)) AS sqlstate
FROM unnest(ARRAY[
    '[]',                                   -- not an object
    '"dedupWindowSeconds"',                 -- not an object
    '{"dedupWindowSeconds": -1}',           -- negative window
    '{"dedupWindowSeconds": "60"}',         -- not a number
    '{"dedupWindowSeconds": 1.5}',          -- not an integer
    '{"dedupWindowSeconds": 99999999999}',  -- out of range
    '{"retentionSeconds": -5}',             -- negative retention
    '{"retentionSeconds": "x"}',            -- not a number
    '{"dedupBy": "payload"}',               -- unknown identity
    '{"dedupBy": 1}',                       -- not a string
    '{"dedupWindow": 60}'                   -- unknown key (a typo would otherwise reset the window)
]) AS o;
SELECT * FROM pg_temp.settings('cfg_bad');
-- One message shown in full (terse: message only).
\set VERBOSITY terse
SELECT queen.configure('cfg_bad', '{"dedupWindowSeconds": -1}');
\set VERBOSITY default
-- Bad options on an unknown queue do not create it.
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure('cfg_never', '{"dedupBy": "nope"}')$q$) AS sqlstate;
SELECT count(*) AS created FROM queen.queues WHERE name = 'cfg_never';
