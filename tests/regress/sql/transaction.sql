--
-- transaction: queen.transaction(ops jsonb) applies push and ack operations atomically, in
-- order. Any duplicate push inside raises unique_violation (23505) and the whole transaction
-- rolls back; any other error does too.
--
\i tests/regress/sql/sqlstate_of.psql
CREATE FUNCTION pg_temp.state(q text, p text)
    RETURNS TABLE(last_offset bigint, segments bigint, txns bigint)
    LANGUAGE sql AS $$
    SELECT queen.log_end(lp.id, lp.last_offset),
           (SELECT count(*) FROM queen.log_segments s WHERE octet_length(s.data) > 0 AND s.partition_id = lp.id),
           (SELECT count(*) FROM queen.log_segments t WHERE t.hashes IS NOT NULL AND t.partition_id = lp.id)
    FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id
    WHERE qu.name = q AND lp.name = p $$;

-- In order: a push, then an ack of the message it just pushed (same transaction), then a
-- push to another queue (created on first contact).
CREATE TEMP TABLE tx1 AS SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_q","partition":"p","items":[
        {"transactionId":"t1","payload":1},{"transactionId":"t2","payload":2}]},
    {"type":"ack","queue":"tx_q","partition":"p","transactionId":"t1"},
    {"type":"push","queue":"tx_q2","partition":"p","items":[{"transactionId":"t1","payload":3}]}]}') AS answer;
-- The answer: one result per operation, in order (ids compared with the log, not printed).
SELECT jsonb_typeof(answer) AS answer_type FROM tx1;
SELECT o.n - 1 AS op, o.r ->> 'type' AS type, o.r -> 'acked' AS acked,
       (SELECT jsonb_agg(jsonb_build_object('status', i ->> 'status', 'offset', i -> 'offset',
                                            'transaction_id', i ->> 'transaction_id')
                         ORDER BY (i ->> 'index')::int)
        FROM jsonb_array_elements(o.r -> 'items') i) AS items,
       (SELECT bool_and((i ->> 'message_id')::uuid =
                        (SELECT message_id FROM queen.read(CASE o.n WHEN 1 THEN 'tx_q' ELSE 'tx_q2' END, 'p',
                                                           (i ->> 'offset')::bigint, 1)))
        FROM jsonb_array_elements(o.r -> 'items') i) AS ids_match_log
FROM tx1, jsonb_array_elements(tx1.answer -> 'results') WITH ORDINALITY AS o(r, n)
ORDER BY o.n;
SELECT * FROM pg_temp.state('tx_q', 'p');
SELECT * FROM pg_temp.state('tx_q2', 'p');
SELECT queen.committed_offset('tx_q', 'p') AS committed;
SELECT message_offset, transaction_id, payload FROM queen.read('tx_q', 'p', 0, 10);

-- The messages a transaction pushed are ordinary messages: a later push of them is a
-- duplicate with the transaction's ids.
SELECT status, message_offset, message_id = (SELECT message_id FROM queen.read('tx_q', 'p', 1, 1)) AS original_id
FROM queen.push('tx_q', 'p', '[{"transactionId":"t2","payload":0}]');

------------------------------------------------------------------------------------------
-- Duplicates inside a transaction: 23505 and nothing kept.
------------------------------------------------------------------------------------------
-- (1) a duplicate of a stored message, after an ack and a good push.
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"ack","queue":"tx_q","partition":"p","transactionId":"t2"},
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t3","payload":3}]},
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t1","payload":1}]}]}')$q$) AS stored_duplicate;
-- (2) two push operations of one new transactionId: the second is a duplicate of the first.
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t4","payload":1}]},
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t4","payload":2}]}]}')$q$) AS cross_op_duplicate;
-- (3) one transactionId twice in the items of one push operation.
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_q","partition":"p","items":[
        {"transactionId":"t5","payload":1},{"transactionId":"t5","payload":2}]}]}')$q$) AS in_op_duplicate;
-- (4) a duplicate after a push to a queue that did not exist: the queue is not created either.
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_fresh","partition":"p","items":[{"transactionId":"f1","payload":1}]},
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t1","payload":1}]}]}')$q$) AS duplicate_after_new_queue;
-- Nothing of any of them was kept.
SELECT * FROM pg_temp.state('tx_q', 'p');
SELECT queen.committed_offset('tx_q', 'p') AS committed;
SELECT count(*) AS fresh_queue FROM queen.queues WHERE name = 'tx_fresh';
SELECT array_agg(transaction_id ORDER BY message_offset) AS stored FROM queen.read('tx_q', 'p', 0, 100);

------------------------------------------------------------------------------------------
-- Other errors roll the whole transaction back too.
------------------------------------------------------------------------------------------
-- An ack on an unknown queue (42704) after a push.
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t6","payload":1}]},
    {"type":"ack","queue":"tx_nope","partition":"p","transactionId":"t6"}]}')$q$) AS ack_unknown_queue;
-- A malformed item in a later operation (22023).
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t7","payload":1}]},
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":7,"payload":1}]}]}')$q$) AS bad_item;
SELECT * FROM pg_temp.state('tx_q', 'p');

-- Malformed operations: 22023.
SELECT o AS ops, pg_temp.sqlstate_of(format('SELECT queen.transaction(%L)', o)) AS sqlstate
FROM unnest(ARRAY[
    '[]',                                                            -- not an object
    '{}',                                                            -- no operations
    '{"operations":{}}',                                             -- operations not an array
    '{"operations":[1]}',                                            -- operation not an object
    '{"operations":[{"type":"pop","queue":"tx_q","partition":"p"}]}', -- unknown type
    '{"operations":[{"type":"push","partition":"p","items":[]}]}',   -- push without queue
    '{"operations":[{"type":"push","queue":"tx_q","partition":"p"}]}', -- push without items
    '{"operations":[{"type":"ack","queue":"tx_q","partition":"p"}]}'   -- ack without transactionId
]) AS o;
SELECT * FROM pg_temp.state('tx_q', 'p');

-- The duplicate error as a client sees it (terse).
\set VERBOSITY terse
SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"tx_q","partition":"p","items":[{"transactionId":"t2","payload":1}]}]}');
\set VERBOSITY default
