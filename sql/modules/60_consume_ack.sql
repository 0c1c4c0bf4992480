-- queen: acks, nacks and lease renewal of the wire (issue 18; §3.4 and §3.6 of the wire
-- facts). An ack names its message by (partitionId, transactionId); "completed" moves the
-- group's cursor to it and counts it against the batch its pop delivered (the whole batch acked
-- releases the lease and resets the retry counter); "failed" releases the lease for a
-- redelivery until the queue's retryLimit is reached, then moves the message to the
-- dead-letter queue; "dlq" moves it there at once; "retry" releases without counting.
-- Locks: see sql/modules/60_consume.sql. queen.ack_messages takes the partitions it names FOR
-- KEY SHARE (ascending; no push conflicts with it, a queue deletion does), then every existing
-- state row it touches (FOR UPDATE, ascending (partition id, group name "C")) before changing
-- any; then consumer_groups rows (the cursor) and DLQ inserts. queen.renew_lease locks only
-- state rows (in the same order) and inserts nothing.

-- The group of one wire ack: the call's group when given, else the item's consumerGroup when it
-- is a non-empty string, else queue mode. Internal.
CREATE OR REPLACE FUNCTION queen.consume_ack_group(p_item jsonb, p_group text) RETURNS text
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT queen.consume_group(COALESCE(NULLIF(p_group, ''),
        CASE WHEN pg_catalog.jsonb_typeof(p_item -> 'consumerGroup') = 'string'
             THEN p_item ->> 'consumerGroup' END))
$$;

-- Lock the existing state rows of these (partition, group) pairs in the global order. Internal.
CREATE OR REPLACE FUNCTION queen.consume_lock_states(p_pids bigint[], p_groups text[]) RETURNS void
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 1 FROM queen.consumer_state s
     WHERE (s.partition_id, s.group_name) IN (
               SELECT u.pid, u.grp FROM ROWS FROM (pg_catalog.unnest(p_pids), pg_catalog.unnest(p_groups)) AS u(pid, grp))
     ORDER BY s.partition_id, s.group_name COLLATE "C"
       FOR UPDATE OF s
$$;

-- Apply one ack whose state row (if any) the caller holds locked. p_in_txn: the broker's
-- transaction rules (completed creates the cursor even without a pop; failed and dlq go to the
-- DLQ at once with retryCount 0; other statuses are not applied). Returns {success, error,
-- queueName, partitionName, leaseReleased, dlq}. Internal.
CREATE OR REPLACE FUNCTION queen.consume_ack(p_pid bigint, p_group text, p_txn text,
                                             p_status text, p_error text, p_lease text,
                                             p_in_txn boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q        text;
    v_p        text;
    v_qid      bigint;
    v_pos      bigint;
    v_hash     bytea;
    v_off      bigint;
    v_lease_id uuid;
    v_expires  timestamptz;
    v_retries  int;
    v_batch    int;
    v_acked    int;
    v_has      boolean;
    v_status   text := COALESCE(p_status, 'completed');
    v_limit    int;
    v_released boolean := false;
    v_dlq      boolean := false;
    v_count    boolean := false;
BEGIN
    SELECT q.name, p.name, q.id, COALESCE(g.committed_offset, -1), s.partition_id IS NOT NULL,
           s.lease_id, s.lease_expires_at, s.retry_count, s.batch_size, s.acked_count
      INTO v_q, v_p, v_qid, v_pos, v_has, v_lease_id, v_expires, v_retries, v_batch, v_acked
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = p_group
      LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = p_group
     WHERE p.id = p_pid;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('success', false, 'error', 'Message not found', 'queueName', NULL,
                                  'partitionName', NULL, 'leaseReleased', false, 'dlq', false);
    END IF;
    -- the occurrence after the cursor, else an earlier (already consumed) one
    v_hash := queen.txn_hash(p_txn);
    v_off := COALESCE(queen.log_find_hash_after(p_pid, v_hash, v_pos),
                      queen.log_find_hash_after(p_pid, v_hash, -1));
    IF v_off IS NULL THEN
        RETURN jsonb_build_object('success', false, 'error', 'Message not found', 'queueName', v_q,
                                  'partitionName', v_p, 'leaseReleased', false, 'dlq', false);
    END IF;
    IF p_lease IS NOT NULL AND (NOT v_has OR v_lease_id IS NULL
                                OR v_lease_id::text <> lower(p_lease)
                                OR v_expires <= clock_timestamp()) THEN
        RETURN jsonb_build_object('success', false, 'error', 'Invalid or expired lease',
                                  'queueName', v_q, 'partitionName', v_p,
                                  'leaseReleased', false, 'dlq', false);
    END IF;
    IF p_in_txn THEN
        IF v_status NOT IN ('completed', 'failed', 'dlq') THEN
            RETURN jsonb_build_object('success', false, 'error', format('Invalid status "%s"', v_status),
                                      'queueName', v_q, 'partitionName', v_p,
                                      'leaseReleased', false, 'dlq', false);
        END IF;
        IF v_status = 'completed' THEN
            v_count := v_has;
        ELSE
            PERFORM queen.consume_to_dlq(v_q, v_p, p_pid, p_group, v_off,
                                         COALESCE(p_error, 'Unknown error'), 0);
            v_dlq := true;
            IF v_has THEN
                UPDATE queen.consumer_state
                   SET lease_id = NULL, lease_expires_at = NULL, acked_count = 0, retry_count = 0
                 WHERE partition_id = p_pid AND group_name = p_group;
                v_released := true;
            END IF;
        END IF;
        PERFORM queen.consume_advance(p_pid, p_group, v_off);
    ELSE
        IF v_status NOT IN ('completed', 'success', 'failed', 'dlq', 'retry') THEN
            RETURN jsonb_build_object('success', false, 'error', format('Invalid status "%s"', v_status),
                                      'queueName', v_q, 'partitionName', v_p,
                                      'leaseReleased', false, 'dlq', false);
        END IF;
        IF NOT v_has THEN
            -- the group never popped this partition: nothing to move (the broker's answer)
            RETURN jsonb_build_object('success', true, 'error', NULL, 'queueName', v_q,
                                      'partitionName', v_p, 'leaseReleased', false, 'dlq', false);
        END IF;
        v_limit := (queen.consume_options(v_qid) ->> 'retryLimit')::int;
        IF v_status IN ('completed', 'success') THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_off);
            v_count := true;
        ELSIF v_status = 'retry' THEN
            UPDATE queen.consumer_state SET lease_id = NULL, lease_expires_at = NULL, acked_count = 0
             WHERE partition_id = p_pid AND group_name = p_group;
            v_released := true;
        ELSIF v_status = 'failed' AND v_lease_id IS NULL THEN
            -- one retry per delivery: the nacks of a batch after the first find it released
            v_released := true;
        ELSIF v_status = 'failed' AND v_retries < v_limit THEN
            UPDATE queen.consumer_state
               SET lease_id = NULL, lease_expires_at = NULL, acked_count = 0,
                   retry_count = retry_count + 1
             WHERE partition_id = p_pid AND group_name = p_group;
            v_released := true;
        ELSE
            -- failed with the retries exhausted, or dlq
            PERFORM queen.consume_to_dlq(v_q, v_p, p_pid, p_group, v_off,
                COALESCE(p_error, CASE WHEN v_status = 'failed' THEN 'Retries exhausted'
                                       ELSE 'Unknown error' END), v_retries);
            PERFORM queen.consume_advance(p_pid, p_group, v_off);
            v_dlq := true;
            v_count := true;
        END IF;
    END IF;
    IF v_count THEN
        -- the whole batch acked: release the lease, reset the retry counter (the row
        -- as this call found it, under its lock, before any change above)
        v_released := v_acked + 1 >= v_batch;
        UPDATE queen.consumer_state
           SET acked_count = CASE WHEN v_released THEN 0 ELSE acked_count + 1 END,
               lease_id = CASE WHEN v_released THEN NULL ELSE lease_id END,
               lease_expires_at = CASE WHEN v_released THEN NULL ELSE lease_expires_at END,
               retry_count = CASE WHEN v_released THEN 0 ELSE retry_count END
         WHERE partition_id = p_pid AND group_name = p_group;
    END IF;
    RETURN jsonb_build_object('success', true, 'error', NULL, 'queueName', v_q,
                              'partitionName', v_p, 'leaseReleased', COALESCE(v_released, false),
                              'dlq', v_dlq);
END
$$;

-- A run of "completed" acks of one (partition, group) whose state row (if any) the caller holds
-- locked, applied in order exactly as queen.consume_ack applies them one by one, but on the state
-- read once and written once (the cursor moved once, to the highest acked offset): a client's
-- batch ack costs one state write, not one per message. p_items: {index, transactionId, leaseId}
-- objects. Returns the wire's answer items. Internal.
CREATE OR REPLACE FUNCTION queen.consume_ack_run(p_pid bigint, p_group text, p_items jsonb[])
RETURNS jsonb[]
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q        text;
    v_p        text;
    v_qid      bigint;
    v_pos      bigint;
    v_max      bigint;
    v_has      boolean;
    v_lease_id uuid;
    v_expires  timestamptz;
    v_retries  int;
    v_batch    int;
    v_acked    int;
    v_now      timestamptz := clock_timestamp();
    v_item     jsonb;
    v_hash     bytea;
    v_off      bigint;
    v_lease    text;
    v_released boolean;
    v_error    text;
    v_dirty    boolean := false;
    v_out      jsonb[] := '{}';
BEGIN
    SELECT q.name, p.name, q.id, COALESCE(g.committed_offset, -1), s.partition_id IS NOT NULL,
           s.lease_id, s.lease_expires_at, s.retry_count, s.batch_size, s.acked_count
      INTO v_q, v_p, v_qid, v_pos, v_has, v_lease_id, v_expires, v_retries, v_batch, v_acked
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = p_group
      LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = p_group
     WHERE p.id = p_pid;
    v_max := v_pos;
    FOREACH v_item IN ARRAY p_items LOOP
        v_released := false;
        v_error := NULL;
        v_off := NULL;
        IF v_q IS NOT NULL THEN
            v_hash := queen.txn_hash(v_item ->> 'transactionId');
            v_off := COALESCE(queen.log_find_hash_after(p_pid, v_hash, v_max),
                              queen.log_find_hash_after(p_pid, v_hash, -1));
        END IF;
        v_lease := v_item ->> 'leaseId';
        IF v_off IS NULL THEN
            v_error := 'Message not found';
        ELSIF v_lease IS NOT NULL AND (NOT v_has OR v_lease_id IS NULL
                                       OR v_lease_id::text <> lower(v_lease) OR v_expires <= v_now) THEN
            v_error := 'Invalid or expired lease';
        ELSIF v_has THEN
            -- the cursor moves to it; the whole batch acked releases the lease
            v_max := greatest(v_max, v_off);
            v_released := v_acked + 1 >= v_batch;
            IF v_released THEN
                v_acked := 0;
                v_lease_id := NULL;
                v_expires := NULL;
                v_retries := 0;
            ELSE
                v_acked := v_acked + 1;
            END IF;
            v_dirty := true;
        END IF;
        v_out := v_out || jsonb_build_object(
            'index', v_item -> 'index', 'transactionId', v_item -> 'transactionId',
            'success', v_error IS NULL, 'error', v_error, 'queueName', v_q, 'partitionName', v_p,
            'leaseReleased', v_released, 'dlq', false);
    END LOOP;
    IF v_dirty THEN
        IF v_max > v_pos THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_max);
        END IF;
        UPDATE queen.consumer_state
           SET lease_id = v_lease_id, lease_expires_at = v_expires, retry_count = v_retries,
               acked_count = v_acked
         WHERE partition_id = p_pid AND group_name = p_group;
    END IF;
    RETURN v_out;
END
$$;

-- Wire acks (POST /api/v1/ack and /ack/batch): p_acks is an array of {transactionId,
-- partitionId, status, error, leaseId?, consumerGroup?}; p_group (the batch's consumerGroup)
-- overrides each item's, and neither means queue mode. 22023 (nothing applied) when p_acks is
-- not an array or an item is not an object or lacks a string transactionId or partitionId, or
-- has a non-string status, error or leaseId; 42501 when one names a partition of a queue
-- reserved for queen's modules. The answer: one object per ack, in order,
-- {index, transactionId, success, error, queueName, partitionName, leaseReleased, dlq};
-- failures (unknown message, invalid lease, unknown status) are items, never errors.
-- Consecutive "completed" acks of one (partition, group) are applied as one run
-- (queen.consume_ack_run), every other ack alone (queen.consume_ack), in order.
CREATE OR REPLACE FUNCTION queen.ack_messages(p_acks jsonb, p_group text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_item    jsonb;
    v_i       int := 0;
    v_key     text;
    v_r       jsonb;
    v_out     jsonb[] := '{}';
    v_run     jsonb[] := '{}';
    v_run_pid bigint;
    v_run_grp text;
    v_pids    bigint[] := '{}';
    v_grps    text[] := '{}';
    v_pid     bigint;
    v_grp     text;
BEGIN
    IF p_acks IS NULL OR jsonb_typeof(p_acks) <> 'array' THEN
        RAISE EXCEPTION 'acknowledgments must be an array' USING ERRCODE = '22023';
    END IF;
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_acks) LOOP
        IF jsonb_typeof(v_item) <> 'object' THEN
            RAISE EXCEPTION 'ack %: not an object', v_i USING ERRCODE = '22023';
        END IF;
        FOREACH v_key IN ARRAY ARRAY['transactionId', 'partitionId'] LOOP
            IF jsonb_typeof(v_item -> v_key) IS DISTINCT FROM 'string' THEN
                RAISE EXCEPTION 'ack %: % is required (a string)', v_i, v_key USING ERRCODE = '22023';
            END IF;
        END LOOP;
        FOREACH v_key IN ARRAY ARRAY['status', 'error', 'leaseId'] LOOP
            IF jsonb_typeof(v_item -> v_key) NOT IN ('string', 'null') THEN
                RAISE EXCEPTION 'ack %: % must be a string', v_i, v_key USING ERRCODE = '22023';
            END IF;
        END LOOP;
        -- queen.partition_of_uuid and queen.consume_ack_group, inlined (a call costs more than
        -- the rest of a completed ack)
        v_pids := v_pids || CASE WHEN (v_item ->> 'partitionId') ~ '^00000000-0000-8000-8000-[0-9a-fA-F]{12}$'
                                 THEN ('x' || lpad(substr(v_item ->> 'partitionId', 25), 16, '0'))::bit(64)::bigint END;
        v_grps := v_grps || COALESCE(NULLIF(p_group, ''),
                                     CASE WHEN jsonb_typeof(v_item -> 'consumerGroup') = 'string'
                                          THEN NULLIF(v_item ->> 'consumerGroup', '') END,
                                     '__QUEUE_MODE__');
        v_i := v_i + 1;
    END LOOP;
    -- queen's own queues are nobody's to ack in (42501, before anything is read or written)
    PERFORM queen.reserved_queue_guard(ARRAY(
        SELECT q.name FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE p.id = ANY (v_pids)));
    -- the partitions first (KEY SHARE, ascending: no push conflicts, a queue deletion does),
    -- then the state rows: creating cursor and DLQ rows then never waits on a partition. The
    -- shard's fence (issue 20) comes with the partition locks, before any state row: an ack of
    -- a moving slot's partition refuses the whole call (55Q02) before anything is written
    PERFORM queen.partitions_lock_for_write(v_pids, 'key share');
    PERFORM queen.consume_lock_states(v_pids, v_grps);
    v_i := 0;
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_acks) LOOP
        v_pid := v_pids[v_i + 1];
        v_grp := v_grps[v_i + 1];
        IF cardinality(v_run) > 0 AND (v_pid IS DISTINCT FROM v_run_pid OR v_grp <> v_run_grp
                                       OR COALESCE(v_item ->> 'status', 'completed') NOT IN ('completed', 'success')) THEN
            v_out := v_out || queen.consume_ack_run(v_run_pid, v_run_grp, v_run);
            v_run := '{}';
        END IF;
        IF v_pid IS NOT NULL AND COALESCE(v_item ->> 'status', 'completed') IN ('completed', 'success') THEN
            v_run_pid := v_pid;
            v_run_grp := v_grp;
            v_run := v_run || jsonb_build_object('index', v_i, 'transactionId', v_item -> 'transactionId',
                                                 'leaseId', v_item -> 'leaseId');
        ELSE
            v_r := queen.consume_ack(v_pid, v_grp, v_item ->> 'transactionId', v_item ->> 'status',
                                     v_item ->> 'error', v_item ->> 'leaseId', false);
            v_out := v_out || jsonb_build_object(
                'index', v_i, 'transactionId', v_item ->> 'transactionId',
                'success', v_r -> 'success', 'error', v_r -> 'error',
                'queueName', v_r -> 'queueName', 'partitionName', v_r -> 'partitionName',
                'leaseReleased', v_r -> 'leaseReleased', 'dlq', v_r -> 'dlq');
        END IF;
        v_i := v_i + 1;
    END LOOP;
    IF cardinality(v_run) > 0 THEN
        v_out := v_out || queen.consume_ack_run(v_run_pid, v_run_grp, v_run);
    END IF;
    RETURN to_jsonb(v_out);
END
$$;

-- Extend a live lease (POST /api/v1/lease/:leaseId/extend): every state row holding it and not
-- expired gets expiry max(current, now + p_seconds). The answer is the broker's array
-- [{index, leaseId, success, error, expiresAt}]; an unknown or expired lease is success false.
-- 22023 for p_seconds below 1. Locks the rows in the global order first.
CREATE OR REPLACE FUNCTION queen.renew_lease(p_lease_id text, p_seconds int DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now     timestamptz := clock_timestamp();
    v_lease   uuid;
    v_expires timestamptz;
BEGIN
    IF p_seconds IS NULL OR p_seconds < 1 THEN
        RAISE EXCEPTION 'seconds must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_lease_id OPERATOR(pg_catalog.~*) '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        v_lease := p_lease_id::uuid;
        -- a shard's fence (issue 20) before the state rows (as an ack takes it): the rows of a
        -- lease are all written by the pop that took it, so the set read here only shrinks
        PERFORM queen.slot_fence_check_partition(d.pid)
           FROM (SELECT DISTINCT s.partition_id AS pid FROM queen.consumer_state s
                  WHERE s.lease_id = v_lease AND s.lease_expires_at > v_now ORDER BY 1) d;
        PERFORM 1 FROM queen.consumer_state s
         WHERE s.lease_id = v_lease AND s.lease_expires_at > v_now
         ORDER BY s.partition_id, s.group_name COLLATE "C" FOR UPDATE;
        UPDATE queen.consumer_state
           SET lease_expires_at = greatest(lease_expires_at, v_now + make_interval(secs => p_seconds))
         WHERE lease_id = v_lease AND lease_expires_at > v_now;
        SELECT max(s.lease_expires_at) INTO v_expires FROM queen.consumer_state s
         WHERE s.lease_id = v_lease AND s.lease_expires_at > v_now;
    END IF;
    RETURN jsonb_build_array(jsonb_build_object(
        'index', 0, 'leaseId', p_lease_id, 'success', v_expires IS NOT NULL,
        'error', CASE WHEN v_expires IS NULL THEN 'Lease not found or expired' END,
        'expiresAt', queen.consume_iso(v_expires)));
END
$$;
