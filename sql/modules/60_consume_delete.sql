-- queen: the wire's deletes and dead-letter listing (issue 18; §3.7 and §3.8 of the wire
-- facts). Locks: delete_queue is queen.drop_queue's (the queue row, then its partitions
-- ascending; the consuming tables go by ON DELETE CASCADE); delete_consumer_group takes the
-- group's partitions FOR KEY SHARE (ascending), then its state rows in the global order, then
-- deletes its cursors.

-- Delete a queue (DELETE /api/v1/resources/queues/:q): its partitions, messages, consumer
-- state and dead letters; a group's subscription record survives. {deleted: true, queue,
-- existed}, also for a queue that does not exist.
CREATE OR REPLACE FUNCTION queen.delete_queue(p_queue text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_existed boolean;
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    v_existed := EXISTS (SELECT 1 FROM queen.queues WHERE name = p_queue);
    IF v_existed THEN
        BEGIN
            PERFORM queen.drop_queue(p_queue);
        EXCEPTION WHEN undefined_object THEN
            v_existed := false;  -- dropped meanwhile by another call
        END;
    END IF;
    RETURN jsonb_build_object('deleted', true, 'queue', p_queue, 'existed', v_existed);
END
$$;

-- Delete a consumer group (DELETE /api/v1/consumer-groups/:g): its state and cursors on every
-- queue (it starts fresh), and its subscription records unless p_delete_metadata is false.
-- {success: true, consumerGroup, deletedPartitions, metadataDeleted}, also for an unknown group.
CREATE OR REPLACE FUNCTION queen.delete_consumer_group(p_group text, p_delete_metadata boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parts bigint;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    -- the partitions first (KEY SHARE, ascending), as acks and pops take them, so that a queue
    -- deletion (partitions FOR UPDATE, then their state and cursors) never deadlocks with this
    -- with the shard's fence (issue 20) after the partition locks, before the state rows
    PERFORM queen.partitions_lock_for_write(ARRAY(
        SELECT s.partition_id FROM queen.consumer_state s WHERE s.group_name = p_group
         UNION SELECT g.partition_id FROM queen.consumer_groups g WHERE g.group_name = p_group),
        'key share');
    PERFORM 1 FROM queen.consumer_state s WHERE s.group_name = p_group
     ORDER BY s.partition_id FOR UPDATE;
    WITH st AS (DELETE FROM queen.consumer_state WHERE group_name = p_group RETURNING partition_id),
         cg AS (DELETE FROM queen.consumer_groups WHERE group_name = p_group RETURNING partition_id)
    SELECT count(*) INTO v_parts FROM (SELECT partition_id FROM st UNION SELECT partition_id FROM cg) u;
    DELETE FROM queen.consumer_acks WHERE group_name = p_group;
    IF COALESCE(p_delete_metadata, true) THEN
        DELETE FROM queen.consumer_subscriptions WHERE group_name = p_group;
    END IF;
    RETURN jsonb_build_object('success', true, 'consumerGroup', p_group,
                              'deletedPartitions', v_parts,
                              'metadataDeleted', COALESCE(p_delete_metadata, true));
END
$$;

-- The dead-letter queue of a queue (GET /api/v1/dlq), newest first: {messages: [{id,
-- transactionId, partitionId, queue, partition, consumerGroup, errorMessage, retryCount, data,
-- producerSub, createdAt, failedAt}], pagination: {limit, offset}}. p_group NULL: every group.
-- 22023 for a negative limit or offset; 42501 for a queue reserved for queen's modules.
CREATE OR REPLACE FUNCTION queen.dlq_messages(p_queue text, p_group text DEFAULT NULL,
                                              p_limit int DEFAULT 100, p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_msgs jsonb;
BEGIN
    IF p_limit IS NULL OR p_limit < 0 OR p_offset IS NULL OR p_offset < 0 THEN
        RAISE EXCEPTION 'limit and offset must be >= 0' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT COALESCE(jsonb_agg(x.m ORDER BY x.failed_at DESC, x.id DESC), '[]'::jsonb) INTO v_msgs
      FROM (SELECT d.id, d.failed_at,
                   jsonb_build_object('id', d.message_id, 'transactionId', d.transaction_id,
                                      'partitionId', queen.partition_uuid(d.partition_id),
                                      'queue', q.name, 'partition', p.name,
                                      'consumerGroup', d.group_name,
                                      'errorMessage', d.error_message, 'retryCount', d.retry_count,
                                      'data', d.payload, 'producerSub', NULL,
                                      'createdAt', queen.consume_iso(d.created_at),
                                      'failedAt', queen.consume_iso(d.failed_at)) AS m
              FROM queen.consumer_dlq d
              JOIN queen.log_partitions p ON p.id = d.partition_id
              JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = p_queue AND (p_group IS NULL OR d.group_name = p_group)
             ORDER BY d.failed_at DESC, d.id DESC
             LIMIT p_limit OFFSET p_offset) x;
    RETURN jsonb_build_object('messages', v_msgs,
                              'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
END
$$;
