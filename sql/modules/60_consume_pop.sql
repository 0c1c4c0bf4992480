-- queen: pops (issue 18; §3.3 and §4 of the wire facts). A pop leases a partition for one
-- group: within a group a partition serves one popper at a time, until every message of the
-- batch it delivered is acked, a nack or "retry" ack releases it, or its lease expires. The
-- messages are those after the group's cursor (queen.consumer_groups.committed_offset), read
-- through queen.read; a pop never deletes anything.
-- Locks: see sql/modules/60_consume.sql. Per partition a pop takes its row FOR KEY SHARE
-- (which no push conflicts with; a queue deletion's FOR UPDATE does), then creates (if
-- missing) and locks its queen.consumer_state row, then at most the consumer_groups row of
-- the same (partition, group) (a subscription's first cursor). The any-partition route takes
-- both with SKIP LOCKED, in ascending partition id order, so it never waits while it holds
-- another partition's state row.

-- Claim one partition for a group under the lease p_lease: NULL when it cannot be claimed now
-- (a live lease in this group, an active window buffer, or, with p_skip, another pop holding
-- its state row), else the messages it delivered as wire objects (an empty array: nothing
-- deliverable now; the partition is then left unleased). Internal.
CREATE OR REPLACE FUNCTION queen.pop_claim(p_queue text, p_partition text, p_pid bigint,
                                           p_last bigint, p_group text, p_lease uuid,
                                           p_batch int, p_opts jsonb, p_start timestamptz,
                                           p_now timestamptz, p_skip boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_window  int := (p_opts ->> 'windowBuffer')::int;
    v_delay   int := (p_opts ->> 'delayedProcessing')::int;
    v_secs    int := (p_opts ->> 'leaseTime')::int;
    v_newest  timestamptz;
    v_created boolean;
    v_lock    text;
    v_lease   uuid;
    v_expires timestamptz;
    v_pos     bigint;
    v_msgs    jsonb;
    v_n       int;
    v_uuid    text := queen.partition_uuid(p_pid)::text;
BEGIN
    IF p_last < 0 THEN
        RETURN '[]'::jsonb;  -- never pushed to
    END IF;
    -- window buffer: the newest message must be older than windowBuffer seconds (no lease taken)
    IF v_window > 0 THEN
        SELECT r.created_at INTO v_newest FROM queen.read(p_queue, p_partition, p_last, 1) r;
        IF v_newest > p_now - make_interval(secs => v_window) THEN
            RETURN NULL;
        END IF;
    END IF;
    v_created := false;
    -- the partition first (KEY SHARE: pushes never conflict, a queue deletion does), so that
    -- creating rows that reference it never waits while this pop holds other state rows; then
    -- the shard's fence (issue 20), before any state row: a pop over a queue passes by a
    -- partition whose slot is moving (or not this shard's), as by a locked one, so the queue's
    -- other slots never pause; a pop of that partition gets 55Q02
    v_lock := queen.partition_lock_for_write(p_pid, 'key share', p_skip);
    IF v_lock = 'absent' THEN
        -- with p_skip: being deleted; else deleted meanwhile
        RETURN CASE WHEN p_skip THEN NULL ELSE '[]'::jsonb END;
    ELSIF v_lock = 'fenced' THEN
        RETURN NULL;
    END IF;
    IF p_skip THEN
        -- never wait for a row another pop holds (an insert would wait for its update)
        SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
         WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            IF EXISTS (SELECT 1 FROM queen.consumer_state s
                        WHERE s.partition_id = p_pid AND s.group_name = p_group) THEN
                RETURN NULL;  -- another pop is claiming it right now
            END IF;
            -- first contact: create the row (waits only for a concurrent first creator)
            INSERT INTO queen.consumer_state (partition_id, group_name) VALUES (p_pid, p_group)
            ON CONFLICT DO NOTHING;
            v_created := FOUND;
            SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
             WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
        END IF;
    ELSE
        INSERT INTO queen.consumer_state (partition_id, group_name) VALUES (p_pid, p_group)
        ON CONFLICT DO NOTHING;
        v_created := FOUND;
        SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
         WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE;
    END IF;
    IF v_lease IS NOT NULL AND v_expires > p_now THEN
        RETURN NULL;  -- leased in this group
    END IF;
    -- a subscription's first contact with this partition: start after the older messages
    IF v_created AND p_start IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM queen.consumer_groups g WHERE g.partition_id = p_pid AND g.group_name = p_group) THEN
        v_pos := queen.consume_offset_before(p_queue, p_partition, p_last, p_start);
        IF v_pos >= 0 THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_pos);
        END IF;
    END IF;
    SELECT COALESCE(g.committed_offset, -1) INTO v_pos FROM (SELECT 1) one
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p_pid AND g.group_name = p_group;
    -- the messages after the cursor, in order, up to the first one still delayed
    SELECT COALESCE(jsonb_agg(x.m ORDER BY x.off), '[]'::jsonb), count(*) INTO v_msgs, v_n
      FROM (SELECT r.message_offset AS off,
                   jsonb_build_object('id', r.message_id, 'transactionId', r.transaction_id,
                                      'traceId', NULL, 'data', r.payload, 'producerSub', NULL,
                                      -- queen.consume_iso, inlined (one call per message costs)
                                      'createdAt', to_char(r.created_at AT TIME ZONE 'UTC',
                                                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                                      'partitionId', v_uuid,
                                      'partition', p_partition, 'leaseId', p_lease,
                                      'consumerGroup', p_group) AS m,
                   bool_and(r.created_at <= p_now - make_interval(secs => v_delay))
                       OVER (ORDER BY r.message_offset) AS due
              FROM queen.read(p_queue, p_partition, v_pos + 1, p_batch) r) x
     WHERE x.due;
    IF v_n = 0 THEN
        UPDATE queen.consumer_state SET lease_id = NULL, lease_expires_at = NULL
         WHERE partition_id = p_pid AND group_name = p_group AND lease_id IS NOT NULL;
        RETURN '[]'::jsonb;
    END IF;
    UPDATE queen.consumer_state
       SET lease_id = p_lease,
           lease_expires_at = p_now + make_interval(secs => CASE WHEN v_secs > 0 THEN v_secs ELSE 60 END),
           batch_size = v_n, acked_count = 0
     WHERE partition_id = p_pid AND group_name = p_group;
    RETURN v_msgs;
END
$$;

-- Pop for a group (NULL or '' = queue mode, "__QUEUE_MODE__"): NULL when there is nothing to
-- deliver (the wire's 204), else the broker's answer {success, queue, partition, partitionId,
-- leaseId, consumerGroup, messages, partitionsClaimed}. p_partition names the partition (the
-- partition route); NULL is the any-partition route: partitions with messages after the
-- group's cursor and no live lease in it, claimed in ascending id order until p_max_partitions
-- are held or p_batch messages gathered, all under one lease id. A lease lasts the queue's
-- leaseTime (0: 60 s). p_now (default clock_timestamp()) is the pop's clock, for tests.
-- 22023 for a NULL queue, a batch or partition cap below 1; an unknown queue or partition is
-- NULL, never an error.
CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text DEFAULT NULL,
                                     p_group text DEFAULT NULL, p_batch int DEFAULT 1,
                                     p_max_partitions int DEFAULT 1,
                                     p_subscription_mode text DEFAULT NULL,
                                     p_subscription_from text DEFAULT NULL,
                                     p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now     timestamptz := COALESCE(p_now, clock_timestamp());
    v_group   text := queen.consume_group(p_group);
    v_lease   uuid := gen_random_uuid();
    v_qid     bigint;
    v_opts    jsonb;
    v_sub     record;
    v_r       record;
    v_got     jsonb;
    v_all     jsonb := '[]'::jsonb;
    v_claimed int := 0;
    v_pid     bigint;
    v_name    text;
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string' USING ERRCODE = '22023';
    END IF;
    IF p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'batch must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_max_partitions IS NULL OR p_max_partitions < 1 THEN
        RAISE EXCEPTION 'partitions must be at least 1' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_queue;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_opts := queen.consume_options(v_qid);
    SELECT * INTO v_sub FROM queen.consume_subscription(p_queue, v_group, p_subscription_mode,
                                                        p_subscription_from, v_now);
    IF v_sub.fresh THEN
        RETURN NULL;  -- a "new" subscription's first pop answers empty
    END IF;
    IF p_partition IS NOT NULL THEN
        SELECT p.id, p.last_offset INTO v_r FROM queen.log_partitions p
         WHERE p.queue_id = v_qid AND p.name = p_partition;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        v_got := queen.pop_claim(p_queue, p_partition, v_r.id, v_r.last_offset, v_group, v_lease,
                                 p_batch, v_opts, v_sub.start_at, v_now, false);
        IF v_got IS NULL OR jsonb_array_length(v_got) = 0 THEN
            RETURN NULL;
        END IF;
        v_all := v_got;
        v_claimed := 1;
        v_pid := v_r.id;
        v_name := p_partition;
    ELSE
        FOR v_r IN
            SELECT p.id, p.name, p.last_offset FROM queen.log_partitions p
              LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = v_group
              LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = v_group
             WHERE p.queue_id = v_qid AND p.last_offset > COALESCE(g.committed_offset, -1)
               AND (s.lease_id IS NULL OR s.lease_expires_at <= v_now)
             ORDER BY p.id
        LOOP
            EXIT WHEN v_claimed >= p_max_partitions OR jsonb_array_length(v_all) >= p_batch;
            v_got := queen.pop_claim(p_queue, v_r.name, v_r.id, v_r.last_offset, v_group, v_lease,
                                     p_batch - jsonb_array_length(v_all), v_opts, v_sub.start_at,
                                     v_now, true);
            CONTINUE WHEN v_got IS NULL OR jsonb_array_length(v_got) = 0;
            IF v_claimed = 0 THEN
                v_pid := v_r.id;
                v_name := v_r.name;
            END IF;
            v_all := v_all || v_got;
            v_claimed := v_claimed + 1;
        END LOOP;
        IF v_claimed = 0 THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN jsonb_build_object('success', true, 'queue', p_queue, 'partition', v_name,
                              'partitionId', queen.partition_uuid(v_pid), 'leaseId', v_lease,
                              'consumerGroup', v_group, 'messages', v_all,
                              'partitionsClaimed', v_claimed);
END
$$;
