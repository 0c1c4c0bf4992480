--
-- consume_transaction: the broker's transaction (queen.transaction_wire) and the wire's deletes
-- (queen.delete_queue, queen.delete_consumer_group) of issue 18. A transaction is all or
-- nothing with a flat answer; each pushed item is a new message (its transactionId is its
-- message id); an ack of an unknown message fails the whole call and keeps nothing.
--
\i tests/regress/sql/sqlstate_of.psql
-- A transaction's answer without its random parts.
CREATE FUNCTION pg_temp.shape(r jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT (r - 'transactionId' - 'results')
           || jsonb_build_object('txnIsUuid', (r ->> 'transactionId') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$',
                                 'results', (SELECT COALESCE(jsonb_agg(
                                     CASE WHEN x ->> 'type' = 'push'
                                          THEN (x - 'transactionId' - 'messageId' - 'partitionId')
                                               || jsonb_build_object('txnIsId', x ->> 'transactionId' = x ->> 'messageId',
                                                                     'pidOk', x ->> 'partitionId' = queen.partition_uuid(queen.partition_of_uuid(x ->> 'partitionId'))::text)
                                          ELSE x - 'transactionId' END ORDER BY o), '[]')
                                     FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY e(x, o))) $$;
CREATE FUNCTION pg_temp.ack_op(r jsonb, n int, status text, grp text DEFAULT NULL) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT jsonb_build_object('type', 'ack', 'transactionId', r -> 'messages' -> n -> 'transactionId',
                              'partitionId', r -> 'messages' -> n -> 'partitionId', 'status', status,
                              'consumerGroup', grp) $$;
CREATE FUNCTION pg_temp.log(q text, p text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT COALESCE(jsonb_agg(payload ORDER BY message_offset), '[]') FROM queen.read(q, p, 0, 100) $$;

SELECT queen.configure('ctx_src', '{"leaseTime": 1}') ->> 'configured' AS configured;
SELECT count(*) AS queued FROM queen.push('ctx_src', 'p', '[{"payload":"s0"},{"payload":"s1"},{"payload":"s2"}]');

------------------------------------------------------------------------------------------
-- Push and ack in one call: flat results in call order (items flattened), the cursor moves,
-- the pushes are there at once; identical items are two messages.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE pop1 AS SELECT queen.pop('ctx_src', 'p') AS r;
SELECT jsonb_path_query_array(r, '$.messages[*].data') AS popped FROM pop1;
CREATE TEMP TABLE tx1 AS SELECT queen.transaction_wire(jsonb_build_object(
    'operations', jsonb_build_array(
        jsonb_build_object('type', 'push', 'items', jsonb_build_array(
            jsonb_build_object('queue', 'ctx_dst', 'payload', jsonb_build_object('n', 1)),
            jsonb_build_object('queue', 'ctx_dst', 'payload', jsonb_build_object('n', 1)),
            jsonb_build_object('queue', 'ctx_dst', 'partition', 'x', 'payload', NULL, 'transactionId', 'dropped'))),
        pg_temp.ack_op(r, 0, 'completed')),
    'requiredLeases', jsonb_build_array(r -> 'leaseId'))) AS t FROM pop1;
SELECT jsonb_pretty(pg_temp.shape(t)) FROM tx1;
SELECT (t -> 'results' -> 3 ->> 'transactionId') = (SELECT r -> 'messages' -> 0 ->> 'transactionId' FROM pop1) AS ack_names_it,
       (t -> 'results' -> 0 ->> 'messageId') <> (t -> 'results' -> 1 ->> 'messageId') AS two_messages
FROM tx1;
SELECT pg_temp.log('ctx_dst', 'Default') AS dst_default, pg_temp.log('ctx_dst', 'x') AS dst_x,
       queen.committed_offset('ctx_src', 'p') AS src_cursor;
-- The ack completed the popped batch: the lease is released, the next message is served.
SELECT jsonb_path_query_array(queen.pop('ctx_src', 'p'), '$.messages[*].data') AS next;

------------------------------------------------------------------------------------------
-- All or nothing: an ack of an unknown message fails the call, nothing of it is kept.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE tx2 AS SELECT queen.transaction_wire(jsonb_build_object('operations', jsonb_build_array(
    jsonb_build_object('type', 'push', 'items', jsonb_build_array(
        jsonb_build_object('queue', 'ctx_dst', 'payload', 'lost'),
        jsonb_build_object('queue', 'ctx_new', 'payload', 'lost too'))),
    jsonb_build_object('type', 'ack', 'transactionId', 'nope',
                       'partitionId', queen.partition_uuid(queen.partition_id('ctx_src', 'p'))),
    jsonb_build_object('type', 'push', 'items', jsonb_build_array(
        jsonb_build_object('queue', 'ctx_dst', 'payload', 'never reached')))))) AS t;
SELECT jsonb_pretty(pg_temp.shape(t)) FROM tx2;
SELECT pg_temp.log('ctx_dst', 'Default') AS dst_unchanged,
       (SELECT count(*) FROM queen.queues WHERE name = 'ctx_new') AS new_queue_created;
-- A partitionId of no partition, and a status the broker's transaction does not know.
SELECT pg_temp.shape(queen.transaction_wire(jsonb_build_object('operations', jsonb_build_array(
    jsonb_build_object('type', 'ack', 'transactionId', 'x', 'partitionId', 'not-a-uuid'))))) AS bad_partition;
SELECT pg_temp.shape(queen.transaction_wire(jsonb_build_object('operations', jsonb_build_array(
    pg_temp.ack_op(r, 0, 'retry'))))) AS bad_status
FROM pop1;

------------------------------------------------------------------------------------------
-- failed (and dlq) in a transaction: to the DLQ at once, retryCount 0, "Unknown error";
-- completed by a group that never popped creates its cursor.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE pop2 AS SELECT queen.pop('ctx_src', 'p', NULL, 1, p_now => clock_timestamp() + interval '2 s') AS r;
SELECT jsonb_path_query_array(r, '$.messages[*].data') AS popped FROM pop2;
SELECT pg_temp.shape(queen.transaction_wire(jsonb_build_object('operations', jsonb_build_array(
    pg_temp.ack_op(r, 0, 'failed'))))) AS nack
FROM pop2;
SELECT jsonb_path_query_array(queen.dlq_messages('ctx_src'), '$.messages[*] ? (@.data == "s1")') #- '{0,id}' #- '{0,transactionId}'
       #- '{0,partitionId}' #- '{0,createdAt}' #- '{0,failedAt}' AS dead;
SELECT queen.committed_offset('ctx_src', 'p') AS cursor, queen.pop('ctx_src', 'p') IS NOT NULL AS next_served;
SELECT pg_temp.shape(queen.transaction_wire(jsonb_build_object('operations', jsonb_build_array(
    pg_temp.ack_op(r, 0, 'completed', 'fresh'))))) AS group_ack
FROM pop2;
SELECT queen.committed_offset('ctx_src', 'p', 'fresh') AS fresh_cursor;

------------------------------------------------------------------------------------------
-- Malformed bodies: 22023.
------------------------------------------------------------------------------------------
SELECT b AS body, pg_temp.sqlstate_of(format('SELECT queen.transaction_wire(%L)', b)) AS sqlstate
FROM unnest(ARRAY[
    '{}', '{"operations": []}', '{"operations": {}}', '[]',
    '{"operations": [{"type": "pop"}]}',
    '{"operations": [{"type": "push"}]}',
    '{"operations": [{"type": "push", "items": [{"payload": 1}]}]}',
    '{"operations": [{"type": "push", "items": [{"queue": "q", "partition": 5}]}]}',
    '{"operations": [{"type": "ack", "partitionId": "x"}]}',
    '{"operations": [{"type": "ack", "transactionId": "x", "partitionId": "x", "status": 1}]}']) AS b;
SELECT pg_temp.sqlstate_of($$SELECT queen.transaction_wire('{"operations": [{"type": "push", "items": [{"queue": "__queen_x", "payload": 1}]}]}')$$) AS reserved;
SELECT count(*) AS stream_created FROM queen.stream_create('ctx_stream', 'application/json');
SELECT pg_temp.sqlstate_of(format('SELECT queen.transaction_wire(%L)', jsonb_build_object('operations', jsonb_build_array(
           jsonb_build_object('type', 'ack', 'transactionId', 'x', 'partitionId', queen.partition_uuid(p.id)))))) AS reserved_ack
FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = '__queen_streams' LIMIT 1;

------------------------------------------------------------------------------------------
-- Deleting a consumer group: its state and cursors on every queue go (it starts fresh); its
-- subscriptions too unless asked to keep them.
------------------------------------------------------------------------------------------
SELECT count(*) FROM queen.push('ctx_grp', 'p', '[{"payload":"g0"},{"payload":"g1"}]');
SELECT queen.pop('ctx_grp', NULL, 'cg', 10, 1, 'new') IS NULL AS subscribed_new;
SELECT count(*) FROM queen.push('ctx_grp', 'p', '[{"payload":"g2"}]');
SELECT jsonb_path_query_array(queen.pop('ctx_grp', 'p', 'cg', 10), '$.messages[*].data') AS after_subscribing;
SELECT queen.delete_consumer_group('cg', false) AS kept_metadata;
SELECT jsonb_path_query_array(queen.pop('ctx_grp', 'p', 'cg', 10), '$.messages[*].data') AS fresh_same_subscription;
SELECT queen.delete_consumer_group('cg') AS deleted;
SELECT jsonb_path_query_array(queen.pop('ctx_grp', 'p', 'cg', 10), '$.messages[*].data') AS fresh_all_history;
SELECT queen.delete_consumer_group('nobody') AS unknown_group,
       pg_temp.sqlstate_of($$SELECT queen.delete_consumer_group('')$$) AS empty_name;

------------------------------------------------------------------------------------------
-- Deleting a queue: partitions, messages, state and dead letters go; subscriptions stay.
------------------------------------------------------------------------------------------
SELECT queen.delete_queue('ctx_src') AS deleted;
SELECT queen.delete_queue('ctx_src') AS again, queen.delete_queue('ctx_never') AS never;
SELECT (SELECT count(*) FROM queen.queues WHERE name = 'ctx_src') AS queues,
       (SELECT count(*) FROM queen.consumer_dlq d WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = d.partition_id)) AS orphan_dlq,
       (SELECT count(*) FROM queen.consumer_state s WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id)) AS orphan_state,
       queen.pop('ctx_src') IS NULL AS pop_empty;
SELECT queen.delete_queue('ctx_grp') ->> 'existed' AS existed,
       (SELECT count(*) FROM queen.consumer_subscriptions WHERE queue_name = 'ctx_grp') AS subscriptions_kept;
SELECT pg_temp.sqlstate_of($$SELECT queen.delete_queue(NULL)$$) AS null_name,
       pg_temp.sqlstate_of($$SELECT queen.delete_queue('__queen_streams')$$) AS reserved;
