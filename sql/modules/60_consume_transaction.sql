-- queen: the broker's transaction (issue 18; §3.5 of the wire facts), beside queen's own
-- queen.transaction (unchanged). All or nothing: a failing operation answers success false with
-- the results up to it, and nothing of the call is kept.
-- Locks (the global order, top of sql/modules/00_core.sql): the pushed partitions are created first, in
-- (queue, partition) order (collation "C"); then every partition involved is locked in
-- ascending id order (FOR NO KEY UPDATE); then the acks' state rows in ascending (partition id,
-- group name "C") order; only then are the operations applied (pushes through queen.push, acks
-- through queen.consume_ack: cursors, then DLQ inserts). A pop locks no partition row and
-- waits on nobody while it holds a state row, so this never deadlocks with a pop, an ack or
-- another transaction.

-- POST /api/v1/transaction: p_body is {operations: [...], requiredLeases} (requiredLeases is
-- ignored, like the broker). A push operation is {type: "push", items: [{queue, partition?,
-- payload}]}, each item a new message (its transactionId is its message id; an explicit
-- transactionId or traceId is ignored, as the client never sends one); an ack operation is
-- {type: "ack", transactionId, partitionId, status?, consumerGroup?}. Items are flattened into
-- single operations, applied in order. Answer: {transactionId, success: true, results} with
-- push results {index, type, success, transactionId, messageId, partitionId, queueName} and ack
-- results {index, type, success, transactionId, error, dlq}; or {transactionId, success:
-- false, error, results} (e.g. "ACK operation failed: Message not found") with nothing kept.
-- 22023 for a malformed body (no non-empty operations array, an unknown type, a missing
-- string field); 42501 for a push to, or an ack in, a queue reserved for queen's modules.
CREATE OR REPLACE FUNCTION queen.transaction_wire(p_body jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ops     jsonb := CASE WHEN jsonb_typeof(p_body) = 'object' THEN p_body -> 'operations' END;
    v_flat    jsonb := '[]'::jsonb;  -- one object per single operation
    v_op      jsonb;
    v_item    jsonb;
    v_i       int := 0;
    v_type    text;
    v_key     text;
    v_pids    bigint[] := '{}';
    v_pid     bigint;
    v_pair    record;
    v_row     record;
    v_r       jsonb;
    v_results jsonb := '[]'::jsonb;
    v_error   text;
    v_txn     uuid := gen_random_uuid();
BEGIN
    IF v_ops IS NULL OR jsonb_typeof(v_ops) <> 'array' OR jsonb_array_length(v_ops) = 0 THEN
        RAISE EXCEPTION 'operations must be a non-empty array' USING ERRCODE = '22023';
    END IF;
    -- 1. check every operation and flatten the pushes' items
    FOR v_op IN SELECT value FROM jsonb_array_elements(v_ops) LOOP
        v_type := CASE WHEN jsonb_typeof(v_op) = 'object' THEN v_op ->> 'type' END;
        IF v_type = 'push' THEN
            IF jsonb_typeof(v_op -> 'items') IS DISTINCT FROM 'array' THEN
                RAISE EXCEPTION 'operation %: items must be an array', v_i USING ERRCODE = '22023';
            END IF;
            FOR v_item IN SELECT value FROM jsonb_array_elements(v_op -> 'items') LOOP
                IF jsonb_typeof(v_item) <> 'object' OR jsonb_typeof(v_item -> 'queue') IS DISTINCT FROM 'string'
                   OR jsonb_typeof(v_item -> 'partition') NOT IN ('string', 'null') THEN
                    RAISE EXCEPTION 'operation %: each item needs a string queue (and a string partition, if any)', v_i
                        USING ERRCODE = '22023';
                END IF;
                v_flat := v_flat || jsonb_build_array(jsonb_build_object(
                    'type', 'push', 'queue', v_item -> 'queue',
                    'partition', COALESCE(NULLIF(v_item -> 'partition', 'null'::jsonb), '"Default"'::jsonb),
                    'payload', COALESCE(v_item -> 'payload', 'null'::jsonb)));
            END LOOP;
        ELSIF v_type = 'ack' THEN
            FOREACH v_key IN ARRAY ARRAY['transactionId', 'partitionId'] LOOP
                IF jsonb_typeof(v_op -> v_key) IS DISTINCT FROM 'string' THEN
                    RAISE EXCEPTION 'operation %: % is required (a string)', v_i, v_key USING ERRCODE = '22023';
                END IF;
            END LOOP;
            FOREACH v_key IN ARRAY ARRAY['status', 'consumerGroup'] LOOP
                IF jsonb_typeof(v_op -> v_key) NOT IN ('string', 'null') THEN
                    RAISE EXCEPTION 'operation %: % must be a string', v_i, v_key USING ERRCODE = '22023';
                END IF;
            END LOOP;
            v_flat := v_flat || jsonb_build_array(jsonb_build_object(
                'type', 'ack', 'transactionId', v_op -> 'transactionId',
                'pid', queen.partition_of_uuid(v_op ->> 'partitionId'),
                'status', COALESCE(v_op ->> 'status', 'completed'),
                'group', queen.consume_ack_group(v_op, NULL)));
        ELSE
            RAISE EXCEPTION 'operation %: type must be "push" or "ack"', v_i USING ERRCODE = '22023';
        END IF;
        v_i := v_i + 1;
    END LOOP;
    PERFORM queen.reserved_queue_guard(ARRAY(
        SELECT DISTINCT f ->> 'queue' FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'push'
        UNION
        SELECT q.name FROM jsonb_array_elements(v_flat) f
          JOIN queen.log_partitions p ON p.id = (f ->> 'pid')::bigint
          JOIN queen.queues q ON q.id = p.queue_id
         WHERE f ->> 'type' = 'ack'));

    BEGIN
        -- 2. create the pushed partitions in the global creation order
        FOR v_pair IN
            SELECT d.q, d.p FROM (SELECT DISTINCT f ->> 'queue' AS q, f ->> 'partition' AS p
                                    FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'push') d
             ORDER BY d.q COLLATE "C", d.p COLLATE "C"
        LOOP
            SELECT r.partition_id INTO v_pid FROM queen.resolve_partition(v_pair.q, v_pair.p) r;
            v_pids := v_pids || v_pid;
        END LOOP;
        v_pids := v_pids || ARRAY(SELECT (f ->> 'pid')::bigint FROM jsonb_array_elements(v_flat) f
                                   WHERE f ->> 'type' = 'ack' AND f ->> 'pid' IS NOT NULL);
        -- 3. every partition in ascending id order, then the acks' state rows
        --    with the shard's fence (issue 20) on every partition, after their locks, before
        --    the state rows (the pushes check theirs again in queen.push; the acks' here)
        PERFORM queen.partitions_lock_for_write(v_pids, 'no key update');
        PERFORM queen.consume_lock_states(
            ARRAY(SELECT (f ->> 'pid')::bigint FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'ack'),
            ARRAY(SELECT f ->> 'group' FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'ack'));
        -- 4. apply in order
        v_i := 0;
        FOR v_op IN SELECT value FROM jsonb_array_elements(v_flat) LOOP
            IF v_op ->> 'type' = 'push' THEN
                SELECT * INTO v_row FROM queen.push(v_op ->> 'queue', v_op ->> 'partition',
                                                    jsonb_build_array(jsonb_build_object('payload', v_op -> 'payload')));
                SELECT p.id INTO v_pid FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
                 WHERE q.name = v_op ->> 'queue' AND p.name = v_op ->> 'partition';
                v_results := v_results || jsonb_build_array(jsonb_build_object(
                    'index', v_i, 'type', 'push', 'success', v_row.status = 'queued',
                    'transactionId', v_row.transaction_id, 'messageId', v_row.message_id,
                    'partitionId', queen.partition_uuid(v_pid), 'queueName', v_op ->> 'queue'));
                IF v_row.status <> 'queued' THEN
                    v_error := format('PUSH operation failed: %s', v_row.status);
                    RAISE EXCEPTION USING ERRCODE = 'QW001';
                END IF;
            ELSE
                v_r := queen.consume_ack((v_op ->> 'pid')::bigint, v_op ->> 'group',
                                         v_op ->> 'transactionId', v_op ->> 'status', NULL, NULL, true);
                v_results := v_results || jsonb_build_array(jsonb_build_object(
                    'index', v_i, 'type', 'ack', 'success', v_r -> 'success',
                    'transactionId', v_op -> 'transactionId', 'error', v_r -> 'error',
                    'dlq', v_r -> 'dlq'));
                IF NOT (v_r ->> 'success')::boolean THEN
                    v_error := format('ACK operation failed: %s', v_r ->> 'error');
                    RAISE EXCEPTION USING ERRCODE = 'QW001';
                END IF;
            END IF;
            v_i := v_i + 1;
        END LOOP;
    EXCEPTION WHEN SQLSTATE 'QW001' THEN
        RETURN jsonb_build_object('transactionId', v_txn, 'success', false, 'error', v_error,
                                  'results', v_results);
    END;
    RETURN jsonb_build_object('transactionId', v_txn, 'success', true, 'results', v_results);
END
$$;
