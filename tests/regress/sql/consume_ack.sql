--
-- consume_ack: wire acks and nacks (queen.ack_messages), lease renewal (queen.renew_lease) and
-- the dead-letter queue (queen.dlq_messages) of issue 18. "completed" moves the cursor and
-- releases the lease when the whole batch is acked; "failed" releases for a redelivery until
-- retryLimit, then moves the message to the DLQ; "dlq" at once; "retry" releases without
-- counting; a leaseId must be the group's live lease; an unknown message is an item, not an
-- error.
--
\i tests/regress/sql/sqlstate_of.psql
-- One wire ack of message n (0-based) of a pop's answer.
CREATE FUNCTION pg_temp.ack_of(r jsonb, n int, status text, extra jsonb DEFAULT '{}') RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT jsonb_build_object('transactionId', r -> 'messages' -> n -> 'transactionId',
                              'partitionId', r -> 'messages' -> n -> 'partitionId',
                              'status', status) || extra $$;
-- The data of a pop's messages.
CREATE FUNCTION pg_temp.data(r jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_path_query_array(r, '$.messages[*].data') $$;
CREATE FUNCTION pg_temp.state(q text, p text, g text DEFAULT '__QUEUE_MODE__')
    RETURNS TABLE (leased boolean, batch_size int, acked_count int, retry_count int, cursor bigint)
    LANGUAGE sql AS $$
    SELECT s.lease_id IS NOT NULL, s.batch_size, s.acked_count, s.retry_count,
           queen.committed_offset(q, p, g)
      FROM queen.consumer_state s WHERE s.partition_id = queen.partition_id(q, p) AND s.group_name = g $$;

SELECT queen.configure('cack_q', '{"leaseTime": 60, "retryLimit": 1}') ->> 'configured' AS configured;
SELECT count(*) AS queued FROM queen.push('cack_q', 'p',
    '[{"payload":"m0"},{"payload":"m1"},{"payload":"m2"},{"payload":"m3"},{"payload":"m4"}]');

------------------------------------------------------------------------------------------
-- completed: the cursor moves; the lease is released with the batch's last ack.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE p1 AS SELECT queen.pop('cack_q', 'p', NULL, 2) AS r;
SELECT pg_temp.data(r) FROM p1;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'completed')))) - 'transactionId' AS item
FROM p1;
SELECT * FROM pg_temp.state('cack_q', 'p');
SELECT queen.pop('cack_q', 'p') IS NULL AS still_leased;
-- The item names the message's transactionId; status null means completed; leaseId checked.
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(
           pg_temp.ack_of(r, 1, NULL, jsonb_build_object('leaseId', r -> 'leaseId', 'error', NULL))))) ->> 'transactionId'
       = r -> 'messages' -> 1 ->> 'transactionId' AS names_it
FROM p1;
SELECT * FROM pg_temp.state('cack_q', 'p');
SELECT pg_temp.data(queen.pop('cack_q', 'p', NULL, 1)) AS next;

------------------------------------------------------------------------------------------
-- The lease check, unknown messages, unknown statuses, groups that never popped.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE p2 AS SELECT queen.pop('cack_q', 'p', NULL, 1,
    p_now => clock_timestamp() + interval '61 s') AS r;   -- m2 again: its lease expired
SELECT pg_temp.data(r) FROM p2;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(
    pg_temp.ack_of(r, 0, 'completed', '{"leaseId": "6d7a4c0e-0d4b-4f7e-9a55-7d2b8b9e0a11"}'),
    pg_temp.ack_of(r, 0, 'completed', '{"leaseId": "not a uuid"}'),
    jsonb_build_object('transactionId', 'nope', 'partitionId', r -> 'partitionId'),
    jsonb_build_object('transactionId', r -> 'messages' -> 0 -> 'transactionId', 'partitionId', '42'),
    jsonb_build_object('transactionId', r -> 'messages' -> 0 -> 'transactionId',
                       'partitionId', '00000000-0000-8000-8000-0000ffffffff'),
    pg_temp.ack_of(r, 0, 'sideways')))) - 'transactionId' AS item
FROM p2;
SELECT * FROM pg_temp.state('cack_q', 'p');
-- A group with no state on the partition: success, nothing moves.
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'completed')), 'never')) -> 'success' AS success,
       queen.committed_offset('cack_q', 'p', 'never') AS cursor
FROM p2;
SELECT count(*) AS states FROM queen.consumer_state WHERE group_name = 'never';
-- The call's group overrides the item's; without it the item's; a null or non-string group
-- means queue mode.
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(
           pg_temp.ack_of(r, 0, 'completed', '{"consumerGroup": "__QUEUE_MODE__"}')), 'never')) -> 'leaseReleased' AS released
FROM p2;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(
           pg_temp.ack_of(r, 0, 'completed', '{"consumerGroup": "never"}')))) -> 'leaseReleased' AS released
FROM p2;
SELECT * FROM pg_temp.state('cack_q', 'p');
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(
           pg_temp.ack_of(r, 0, 'completed', '{"consumerGroup": 7}')))) -> 'leaseReleased' AS released_queue_mode
FROM p2;
SELECT * FROM pg_temp.state('cack_q', 'p');

------------------------------------------------------------------------------------------
-- failed: retried (retryLimit 1), then the dead-letter queue; the cursor moves past it.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE p3 AS SELECT queen.pop('cack_q', 'p', NULL, 1) AS r;
SELECT pg_temp.data(r) FROM p3;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'failed')))) - 'transactionId' AS item
FROM p3;
SELECT * FROM pg_temp.state('cack_q', 'p');
CREATE TEMP TABLE p4 AS SELECT queen.pop('cack_q', 'p', NULL, 1) AS r;
SELECT pg_temp.data(r) AS redelivered FROM p4;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(
           pg_temp.ack_of(r, 0, 'failed', '{"error": "boom"}')))) - 'transactionId' AS item
FROM p4;
SELECT * FROM pg_temp.state('cack_q', 'p');
SELECT pg_temp.data(queen.pop('cack_q', 'p', NULL, 1)) AS next;
-- dlq: at once; retry: released, not counted.
CREATE TEMP TABLE p5 AS SELECT queen.pop('cack_q', 'p', NULL, 1, p_now => clock_timestamp() + interval '61 s') AS r;
SELECT pg_temp.data(r) FROM p5;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'retry')))) - 'transactionId' AS item
FROM p5;
SELECT * FROM pg_temp.state('cack_q', 'p');
CREATE TEMP TABLE p6 AS SELECT queen.pop('cack_q', 'p', NULL, 1) AS r;
SELECT pg_temp.data(r) FROM p6;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'dlq')))) - 'transactionId' AS item
FROM p6;
SELECT * FROM pg_temp.state('cack_q', 'p');
SELECT queen.pop('cack_q', 'p') IS NULL AS drained;
-- A nacked batch: the first nack releases and counts once, the others find it released.
SELECT count(*) AS queued FROM queen.push('cack_q', 'b', '[{"payload":"b0"},{"payload":"b1"}]');
CREATE TEMP TABLE p7 AS SELECT queen.pop('cack_q', 'b', NULL, 2) AS r;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'failed'), pg_temp.ack_of(r, 1, 'failed')))) - 'transactionId' AS item
FROM p7;
SELECT * FROM pg_temp.state('cack_q', 'b');
-- The retries are spent: the whole batch goes to the DLQ, the lease released with its last one.
CREATE TEMP TABLE p8 AS SELECT queen.pop('cack_q', 'b', NULL, 2) AS r;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'failed'), pg_temp.ack_of(r, 1, 'failed')))) - 'transactionId' AS item
FROM p8;
SELECT * FROM pg_temp.state('cack_q', 'b');

------------------------------------------------------------------------------------------
-- The dead-letter queue, newest first, with limit and offset.
------------------------------------------------------------------------------------------
SELECT m ->> 'partition' AS part, m -> 'data' AS data, m ->> 'errorMessage' AS error,
       m -> 'retryCount' AS retries, m ->> 'consumerGroup' AS grp, m ->> 'queue' AS queue,
       m ->> 'transactionId' = m ->> 'id' AS txn_is_id,
       m ->> 'partitionId' = queen.partition_uuid(queen.partition_id('cack_q', m ->> 'partition'))::text AS pid_ok,
       (m ->> 'failedAt') ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$' AND (m ->> 'createdAt') <= (m ->> 'failedAt') AS times
FROM jsonb_array_elements(queen.dlq_messages('cack_q') -> 'messages') m;
SELECT queen.dlq_messages('cack_q', NULL, 1, 1) -> 'pagination' AS pagination,
       jsonb_path_query_array(queen.dlq_messages('cack_q', NULL, 1, 1), '$.messages[*].data') AS data,
       queen.dlq_messages('cack_q', 'other') AS other_group,
       queen.dlq_messages('cack_nope') AS unknown_queue;
SELECT pg_temp.sqlstate_of($$SELECT queen.dlq_messages('cack_q', NULL, -1)$$) AS negative_limit,
       pg_temp.sqlstate_of($$SELECT queen.dlq_messages('cack_q', NULL, 1, -1)$$) AS negative_offset;

------------------------------------------------------------------------------------------
-- A batch ack of an any-partition pop (several partitions, one lease): every completed ack
-- of a partition counts against its batch; a nack in the middle of one partition's acks
-- releases it there: an ack after it naming the lease is refused, one without a leaseId
-- still moves the cursor.
------------------------------------------------------------------------------------------
SELECT count(*) AS queued FROM queen.push('cack_multi', 'x', '[{"payload":"x0"},{"payload":"x1"},{"payload":"x2"}]');
SELECT count(*) AS queued FROM queen.push('cack_multi', 'y', '[{"payload":"y0"},{"payload":"y1"}]');
CREATE TEMP TABLE pm AS SELECT queen.pop('cack_multi', NULL, 'gm', 10, 2) AS r;
SELECT pg_temp.data(r), r -> 'partitionsClaimed' AS claimed FROM pm;
SELECT x ->> 'index' AS i, x ->> 'partitionName' AS part, x -> 'success' AS ok, x -> 'leaseReleased' AS released,
       x -> 'dlq' AS dlq, x ->> 'error' AS error
FROM pm, jsonb_array_elements(queen.ack_messages(jsonb_build_array(
    pg_temp.ack_of(r, 0, 'completed', jsonb_build_object('leaseId', r -> 'leaseId')),
    pg_temp.ack_of(r, 1, NULL),
    pg_temp.ack_of(r, 3, 'success'),
    pg_temp.ack_of(r, 4, 'completed'),
    pg_temp.ack_of(r, 2, 'failed'),
    pg_temp.ack_of(r, 2, 'completed', jsonb_build_object('leaseId', r -> 'leaseId')),
    pg_temp.ack_of(r, 2, 'completed')), 'gm')) x;
SELECT * FROM pg_temp.state('cack_multi', 'x', 'gm');
SELECT * FROM pg_temp.state('cack_multi', 'y', 'gm');
SELECT queen.pop('cack_multi', NULL, 'gm', 10, 2) IS NULL AS all_consumed;

------------------------------------------------------------------------------------------
-- Malformed requests: 22023, nothing applied.
------------------------------------------------------------------------------------------
SELECT a AS acks, pg_temp.sqlstate_of(format('SELECT queen.ack_messages(%L)', a)) AS sqlstate
FROM unnest(ARRAY[
    '{"transactionId": "x"}', '[1]', '[{"partitionId": "00000000-0000-8000-8000-000000000001"}]',
    '[{"transactionId": "x"}]', '[{"transactionId": 1, "partitionId": "x"}]',
    '[{"transactionId": "x", "partitionId": 1}]',
    '[{"transactionId": "x", "partitionId": "x", "status": true}]',
    '[{"transactionId": "x", "partitionId": "x", "leaseId": 5}]']) AS a;
SELECT queen.ack_messages('[]') AS empty;
-- A partition of a queue reserved for queen's modules (the streams' queue): 42501.
SELECT count(*) AS stream_created FROM queen.stream_create('cack_stream', 'application/json');
SELECT pg_temp.sqlstate_of(format('SELECT queen.ack_messages(%L)', jsonb_build_array(jsonb_build_object(
           'transactionId', 'x', 'partitionId', queen.partition_uuid(p.id))))) AS reserved,
       pg_temp.sqlstate_of($$SELECT queen.dlq_messages('__queen_streams')$$) AS reserved_dlq
FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name = '__queen_streams' LIMIT 1;

------------------------------------------------------------------------------------------
-- Lease renewal: every live row holding the lease, expiry max(current, now + seconds).
------------------------------------------------------------------------------------------
SELECT count(*) AS queued FROM queen.push('cack_q', 'r1', '[{"payload":"r1"}]');
SELECT count(*) AS queued FROM queen.push('cack_q', 'r2', '[{"payload":"r2"}]');
CREATE TEMP TABLE p9 AS SELECT queen.pop('cack_q', NULL, 'gr', 10, 5) AS r;
SELECT r -> 'partitionsClaimed' AS claimed FROM p9;
CREATE TEMP TABLE before AS SELECT max(lease_expires_at) AS e FROM queen.consumer_state
 WHERE lease_id = ((SELECT r FROM p9) ->> 'leaseId')::uuid;
SELECT x - 'leaseId' - 'expiresAt' AS item, x ->> 'leaseId' = r ->> 'leaseId' AS same,
       (x ->> 'expiresAt')::timestamptz > (SELECT e FROM before) + interval '200 s' AS extended
FROM p9, jsonb_array_elements(queen.renew_lease(r ->> 'leaseId', 300)) x;
SELECT count(*) AS rows, count(DISTINCT lease_expires_at) AS one_expiry FROM queen.consumer_state
 WHERE lease_id = ((SELECT r FROM p9) ->> 'leaseId')::uuid;
-- A shorter renewal never shortens it.
SELECT (x ->> 'expiresAt')::timestamptz > (SELECT e FROM before) + interval '200 s' AS kept
FROM p9, jsonb_array_elements(queen.renew_lease(r ->> 'leaseId', 1)) x;
SELECT queen.renew_lease('6d7a4c0e-0d4b-4f7e-9a55-7d2b8b9e0a11') AS unknown,
       queen.renew_lease('nope') AS not_a_uuid;
SELECT pg_temp.sqlstate_of($$SELECT queen.renew_lease('x', 0)$$) AS zero_seconds;
