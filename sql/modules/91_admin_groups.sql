-- queen: the consumer-group admin routes of Queen's broker (issue 29): the groups list with
-- members, lag and state, one group's detail, the lagging partitions, seek (to the end, to a
-- time, one partition to the end) and a group's deletion on one queue. Shapes: the broker's
-- lib/schema/procedures/008_consumer_groups.sql (field names and JSON types); differences:
-- docs/queen-compatibility.md. Names sort in collation "C" (p10 before p2, as the broker's
-- ORDER BY name in its database's collation; docs/queen-compatibility.md, "Order by name").
--
-- Figures. A group's member is a partition where it has a state row (queen.consumer_state) or
-- a cursor (queen.consumer_groups). Its cursor is committed_offset (-1 when absent), read as at
-- least log_start - 1 (retention dropped what is below). Pending (the broker's offset lag) is
-- last_offset - cursor: offsets arithmetic, no message is read or counted; acks recorded above
-- a gap (queen.consumer_acks) are still counted pending. The time lag is the age of the oldest
-- pending message: the created_at of the queen.log_segments row holding cursor + 1 (one probe
-- of the segments' primary key per partition with something pending). Every figure is read in
-- one statement's snapshot of the tables the pops and acks write.
--
-- Locks of the writers (the global order: the top of sql/modules/00_core.sql; the consuming
-- model's: sql/modules/60_consume.sql), the same as queen.delete_consumer_group:
--   1. the group's partitions on the queue, FOR KEY SHARE in ascending id order, then on a
--      shard their slot fences (queen.partitions_lock_for_write), as acks and pops take them:
--      no push conflicts with it, a queue deletion (FOR UPDATE) does and is ordered before;
--   2. the group's queen.consumer_state rows there, FOR UPDATE, ascending partition id (one
--      group: the global (partition, group "C") order), all of them before any write;
--   3. then the cursor rows (queen.consumer_groups) in ascending partition id order, and the
--      group's recorded acks (queen.consumer_acks) there.
-- Why safe: acks, pops and renewals take the same state rows in the same order after their
-- partitions (KEY SHARE locks do not conflict with each other), so a seek and an ack or a pop
-- of the same (partition, group) serialize on the state row and never wait in a circle; a pop
-- by queue passes a state row the seek holds (SKIP LOCKED). A lease the seek clears is gone:
-- an ack naming it afterwards answers "Invalid or expired lease", as for an expired one, and
-- changes nothing; an ack that won the state row first is applied, then overwritten by the
-- seek's cursor (the seek is the later write). A pop after the seek delivers from the new
-- cursor + 1.

-- The first retained offset of partition p_pid in [p_lo + 1, p_hi - 1] whose message was
-- created at or after p_ts, or p_hi when none: a binary search on the segments' primary key
-- (partition_id, base_offset), O(log(p_hi - p_lo)) index probes, no segment decoded. A
-- segment's messages share its created_at, and a partition's segments are written in
-- created_at order (taken under the partition's lock). Internal.
CREATE OR REPLACE FUNCTION queen.admin_offset_at(p_pid bigint, p_lo bigint, p_hi bigint,
                                                 p_ts timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_lo  bigint := p_lo;  -- every offset <= v_lo is before p_ts (or not retained)
    v_hi  bigint := p_hi;  -- every retained offset >= v_hi is at or after p_ts
    v_mid bigint;
    v_seg record;
BEGIN
    WHILE v_hi - v_lo > 1 LOOP
        v_mid := v_lo + (v_hi - v_lo) / 2;
        SELECT s.base_offset, s.end_offset, s.created_at INTO v_seg
          FROM queen.log_segments s
         WHERE s.partition_id = p_pid AND s.base_offset <= v_mid
         ORDER BY s.base_offset DESC LIMIT 1;
        IF NOT FOUND THEN
            v_lo := v_mid;                                  -- no offset at or below it
        ELSIF v_seg.created_at >= p_ts THEN
            v_hi := greatest(v_seg.base_offset, v_lo + 1);  -- its offsets above v_lo qualify
        ELSE
            v_lo := greatest(v_seg.end_offset, v_mid);      -- none of its offsets (or a gap)
        END IF;
    END LOOP;
    RETURN v_hi;
END
$$;

-- One row per (partition, group) member, with its figures (see the top of this file); p_group
-- NULL: every group. Internal (the admin functions below read it).
CREATE OR REPLACE FUNCTION queen.admin_group_members(p_group text)
RETURNS TABLE (group_name text, queue_name text, partition_id bigint, partition_name text,
               cursor_offset bigint, has_cursor boolean, pending bigint,
               oldest_pending_at timestamptz, lease_active boolean)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH m AS (
        SELECT s.partition_id, s.group_name FROM queen.consumer_state s
         WHERE p_group IS NULL OR s.group_name = p_group
        UNION
        SELECT g.partition_id, g.group_name FROM queen.consumer_groups g
         WHERE p_group IS NULL OR g.group_name = p_group
    ), f AS (
        SELECT m.group_name, q.name AS queue_name, p.id AS partition_id, p.name AS partition_name,
               greatest(COALESCE(g.committed_offset, -1), p.log_start - 1) AS cursor_offset,
               g.partition_id IS NOT NULL AND g.committed_offset >= 0 AS has_cursor,
               greatest(queen.log_end(p.id, p.last_offset) - greatest(COALESCE(g.committed_offset, -1), p.log_start - 1), 0)
                   AS pending,
               s.lease_id IS NOT NULL AND s.lease_expires_at > pg_catalog.clock_timestamp()
                   AS lease_active
          FROM m
          JOIN queen.log_partitions p ON p.id = m.partition_id
          JOIN queen.queues q ON q.id = p.queue_id
          LEFT JOIN queen.consumer_groups g ON g.partition_id = m.partition_id AND g.group_name = m.group_name
          LEFT JOIN queen.consumer_state s ON s.partition_id = m.partition_id AND s.group_name = m.group_name
    )
    SELECT f.group_name, f.queue_name, f.partition_id, f.partition_name, f.cursor_offset,
           f.has_cursor, f.pending,
           CASE WHEN f.pending > 0 THEN
               (SELECT sg.created_at FROM queen.log_segments sg
                 WHERE sg.partition_id = f.partition_id AND sg.base_offset <= f.cursor_offset + 1
                 ORDER BY sg.base_offset DESC LIMIT 1) END,
           f.lease_active
      FROM f
$$;

-- GET /api/v1/consumer-groups: the broker's array, one object per (group, queue), by name then
-- queue: {name, topics: [queue], queueName, members, partitionsWithLag, totalLag, maxTimeLag,
-- state, subscriptionMode, subscriptionTimestamp, subscriptionCreatedAt}. totalLag is the exact
-- pending count (the broker answers null); maxTimeLag the age in seconds of the oldest pending
-- message; state "Lagging" (maxTimeLag over 300), else "Stable" (a cursor moved on some
-- member), else "Dead". p_limit (1..10000) and p_offset page the array (22023 otherwise).
CREATE OR REPLACE FUNCTION queen.admin_consumer_groups(p_limit int DEFAULT 1000, p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_out jsonb;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 OR p_offset IS NULL OR p_offset < 0 THEN
        RAISE EXCEPTION 'limit must be 1..10000 and offset >= 0' USING ERRCODE = '22023';
    END IF;
    WITH a AS (
        SELECT m.group_name, m.queue_name, count(*) AS members,
               count(*) FILTER (WHERE m.pending > 0) AS with_lag,
               sum(m.pending) AS total_lag,
               COALESCE(max(greatest(0, floor(extract(epoch FROM v_now - m.oldest_pending_at))))::bigint, 0)
                   AS max_lag,
               bool_or(m.has_cursor) AS consumed
          FROM queen.admin_group_members(NULL) m
         GROUP BY m.group_name, m.queue_name
         ORDER BY m.group_name COLLATE "C", m.queue_name COLLATE "C"
         LIMIT p_limit OFFSET p_offset
    )
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
               'name', a.group_name, 'topics', jsonb_build_array(a.queue_name),
               'queueName', a.queue_name, 'members', a.members,
               'partitionsWithLag', a.with_lag, 'totalLag', a.total_lag, 'maxTimeLag', a.max_lag,
               'state', CASE WHEN a.max_lag > 300 THEN 'Lagging'
                             WHEN a.consumed THEN 'Stable' ELSE 'Dead' END,
               'subscriptionMode', s.mode,
               'subscriptionTimestamp', queen.consume_iso(s.start_at),
               'subscriptionCreatedAt', queen.consume_iso(s.created_at))
             ORDER BY a.group_name COLLATE "C", a.queue_name COLLATE "C"), '[]'::jsonb)
      INTO v_out
      FROM a
      LEFT JOIN queen.consumer_subscriptions s ON s.queue_name = a.queue_name AND s.group_name = a.group_name;
    RETURN v_out;
END
$$;

-- GET /api/v1/consumer-groups/:group: the broker's object keyed by queue name, each
-- {partitions: [{partition, workerId, lastConsumedAt, totalConsumed, offsetLag, timeLagSeconds,
-- leaseActive}]} by partition name. 42704 for a group that is a member nowhere (the broker
-- answers {}: issue 29 wants no success that found nothing).
-- workerId and lastConsumedAt are null (queen records neither); totalConsumed is the cursor's
-- offset + 1 (the messages behind it, retained or not).
CREATE OR REPLACE FUNCTION queen.admin_consumer_group(p_group text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_out jsonb;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    WITH parts AS (
        SELECT m.queue_name,
               jsonb_agg(jsonb_build_object(
                   'partition', m.partition_name, 'workerId', NULL, 'lastConsumedAt', NULL,
                   'totalConsumed', m.cursor_offset + 1, 'offsetLag', m.pending,
                   'timeLagSeconds', COALESCE(greatest(0, floor(extract(epoch FROM v_now - m.oldest_pending_at)))::bigint, 0),
                   'leaseActive', m.lease_active)
                 ORDER BY m.partition_name COLLATE "C") AS list
          FROM queen.admin_group_members(p_group) m
         GROUP BY m.queue_name
    )
    SELECT COALESCE(jsonb_object_agg(parts.queue_name, jsonb_build_object('partitions', parts.list)),
                    '{}'::jsonb)
      INTO v_out FROM parts;
    IF v_out = '{}'::jsonb THEN
        RAISE EXCEPTION 'consumer group "%" does not exist', p_group USING ERRCODE = '42704';
    END IF;
    RETURN v_out;
END
$$;

-- GET /api/v1/consumer-groups/lagging?minLagSeconds=: the broker's array of the members whose
-- oldest pending message is older than p_min_lag seconds, most lagging first: {consumer_group,
-- queue_name, partition_name, partition_id (the wire's partition UUID), worker_id (null),
-- offset_lag, time_lag_seconds, lag_hours, oldest_unconsumed_at, last_consumed_at (null)}.
-- p_limit (1..10000) and p_offset page it; 22023 otherwise or for a negative p_min_lag.
CREATE OR REPLACE FUNCTION queen.admin_lagging_partitions(p_min_lag int DEFAULT 3600,
                                                          p_limit int DEFAULT 1000,
                                                          p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_out jsonb;
BEGIN
    IF p_min_lag IS NULL OR p_min_lag < 0 THEN
        RAISE EXCEPTION 'minLagSeconds must be a whole number >= 0' USING ERRCODE = '22023';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 OR p_offset IS NULL OR p_offset < 0 THEN
        RAISE EXCEPTION 'limit must be 1..10000 and offset >= 0' USING ERRCODE = '22023';
    END IF;
    WITH l AS (
        SELECT m.*, floor(extract(epoch FROM v_now - m.oldest_pending_at))::bigint AS lag
          FROM queen.admin_group_members(NULL) m
         WHERE m.oldest_pending_at IS NOT NULL
    ), t AS (
        SELECT * FROM l WHERE l.lag > p_min_lag
         ORDER BY l.lag DESC, l.group_name COLLATE "C", l.queue_name COLLATE "C",
                  l.partition_name COLLATE "C"
         LIMIT p_limit OFFSET p_offset
    )
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
               'consumer_group', t.group_name, 'queue_name', t.queue_name,
               'partition_name', t.partition_name, 'partition_id', queen.partition_uuid(t.partition_id),
               'worker_id', NULL, 'offset_lag', t.pending, 'time_lag_seconds', t.lag,
               'lag_hours', round(t.lag / 3600.0, 2),
               'oldest_unconsumed_at', queen.consume_iso(t.oldest_pending_at),
               'last_consumed_at', NULL)
             ORDER BY t.lag DESC, t.group_name COLLATE "C", t.queue_name COLLATE "C",
                      t.partition_name COLLATE "C"), '[]'::jsonb)
      INTO v_out FROM t;
    RETURN v_out;
END
$$;

-- Lock a group's state rows among partitions p_pids FOR UPDATE, ascending (step 2 of the
-- order at the top of this file), after its caller took the partitions (step 1:
-- queen.partitions_lock_for_write, 'key share'). Internal.
CREATE OR REPLACE FUNCTION queen.admin_group_lock(p_group text, p_pids bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM queen.consumer_state s
     WHERE s.group_name = p_group AND s.partition_id = ANY (p_pids)
     ORDER BY s.partition_id FOR UPDATE;
END
$$;

-- Move a group's cursor on partitions p_pids (ascending) to p_cursors (same order), whose
-- locks the caller holds (queen.admin_group_lock): the cursor set (created when missing), the
-- acks recorded there dropped, the lease cleared (batch, ack count and retry counter reset), so
-- that the next pop delivers from the new cursor + 1. Returns how many it moved. Internal: a
-- helper under its callers' partition locks and fences (tests/regress/sql/slot_fence_primitives.sql).
CREATE OR REPLACE FUNCTION queen.admin_group_set_cursors(p_group text, p_pids bigint[],
                                                         p_cursors bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n int;
BEGIN
    UPDATE queen.consumer_state
       SET lease_id = NULL, lease_expires_at = NULL, batch_size = 0, acked_count = 0, retry_count = 0
     WHERE group_name = p_group AND partition_id = ANY (p_pids);
    INSERT INTO queen.consumer_groups AS g (partition_id, group_name, committed_offset)
    SELECT u.pid, p_group, u.cur
      FROM ROWS FROM (pg_catalog.unnest(p_pids), pg_catalog.unnest(p_cursors)) AS u(pid, cur)
     ORDER BY u.pid
    ON CONFLICT (partition_id, group_name) DO UPDATE SET committed_offset = EXCLUDED.committed_offset;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM queen.consumer_acks WHERE group_name = p_group AND partition_id = ANY (p_pids);
    RETURN v_n;
END
$$;

-- The partitions of queue p_qid where group p_group is a member (a state row or a cursor), in
-- ascending id order (the order their locks are taken in); the seek's and the per-queue
-- deletion's targets, read before their locks (each reads its targets again after them).
-- Internal.
CREATE OR REPLACE FUNCTION queen.admin_group_queue_pids(p_group text, p_qid bigint)
RETURNS bigint[]
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ARRAY(SELECT DISTINCT m.pid FROM (
                     SELECT s.partition_id AS pid FROM queen.consumer_state s WHERE s.group_name = p_group
                     UNION SELECT g.partition_id FROM queen.consumer_groups g WHERE g.group_name = p_group) m
                   JOIN queen.log_partitions p ON p.id = m.pid AND p.queue_id = p_qid
                  ORDER BY m.pid)
$$;

-- POST /api/v1/consumer-groups/:group/queues/:queue/seek: move the group's cursor on every
-- partition of the queue where it is a member (a state row or a cursor; the broker's rule:
-- partitions it never touched keep their first-pop start) to the end (p_to_end: the last
-- stored offset, every pending message skipped) or to the time p_ts (the next pop delivers the
-- first message created at or after p_ts; none: nothing pending; all: from the oldest
-- retained). Leases there are cleared (locks and why: the top of this file). The broker's
-- answer {success, consumerGroup, queueName, seekToEnd, targetTimestamp, partitionsUpdated}.
-- 22023 for an empty group, or neither or both of p_to_end and p_ts; 42704 for an unknown
-- queue, or a group that is a member of none of its partitions (the broker answers 200 with
-- partitionsUpdated 0: issue 29 wants no success that did nothing); 42501 for a queue reserved
-- for queen's modules.
CREATE OR REPLACE FUNCTION queen.seek_consumer_group(p_group text, p_queue text,
                                                     p_to_end boolean, p_ts timestamptz)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_qid     bigint;
    v_pids    bigint[];
    v_cursors bigint[];
    v_n       int := 0;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF COALESCE(p_to_end, false) = (p_ts IS NOT NULL) THEN
        RAISE EXCEPTION 'Must specify either ''toEnd'': true or ''timestamp''' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.name = p_queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', p_queue USING ERRCODE = '42704';
    END IF;
    v_pids := queen.admin_group_queue_pids(p_group, v_qid);
    IF cardinality(v_pids) = 0 THEN
        RAISE EXCEPTION 'consumer group "%" has no position on queue "%"', p_group, p_queue
            USING ERRCODE = '42704';
    END IF;
    IF cardinality(v_pids) > 0 THEN
        PERFORM queen.partitions_lock_for_write(v_pids, 'key share');
        PERFORM queen.admin_group_lock(p_group, v_pids);
        -- the targets read after the locks (a partition deleted meanwhile is skipped)
        SELECT COALESCE(array_agg(p.id ORDER BY p.id), '{}'),
               COALESCE(array_agg(CASE WHEN p_to_end THEN queen.log_end(p.id, p.last_offset)
                                       ELSE queen.admin_offset_at(p.id, p.log_start - 1,
                                                                  queen.log_end(p.id, p.last_offset) + 1,
                                                                  p_ts) - 1 END
                                  ORDER BY p.id), '{}')
          INTO v_pids, v_cursors
          FROM queen.log_partitions p WHERE p.id = ANY (v_pids);
        v_n := queen.admin_group_set_cursors(p_group, v_pids, v_cursors);
    END IF;
    RETURN jsonb_build_object('success', true, 'consumerGroup', p_group, 'queueName', p_queue,
                              'seekToEnd', COALESCE(p_to_end, false),
                              'targetTimestamp', queen.consume_iso(p_ts),
                              'partitionsUpdated', v_n);
END
$$;

-- POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek: the group's
-- cursor on that one partition to its end (every pending message skipped), its lease cleared;
-- only where the group is a member (else 42704; the broker answers updated false). The broker's answer
-- {success, consumerGroup, queueName, partitionName, updated, cursorMovedTo} (cursorMovedTo:
-- when the last message was created; null for an empty partition). 22023 for an empty group;
-- 42704 for an unknown queue or partition; 42501 for a reserved queue.
CREATE OR REPLACE FUNCTION queen.seek_consumer_group_partition(p_group text, p_queue text,
                                                               p_partition text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid  bigint;
    v_last bigint;
    v_at   timestamptz;
    v_n    int := 0;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT p.id INTO v_pid FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE q.name = p_queue AND p.name = p_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition "%" of queue "%" does not exist', p_partition, p_queue
            USING ERRCODE = '42704';
    END IF;
    IF EXISTS (SELECT 1 FROM queen.consumer_state s WHERE s.partition_id = v_pid AND s.group_name = p_group)
       OR EXISTS (SELECT 1 FROM queen.consumer_groups g WHERE g.partition_id = v_pid AND g.group_name = p_group) THEN
        PERFORM queen.partitions_lock_for_write(ARRAY[v_pid], 'key share');
        PERFORM queen.admin_group_lock(p_group, ARRAY[v_pid]);
        SELECT queen.log_end(p.id, p.last_offset) INTO v_last FROM queen.log_partitions p WHERE p.id = v_pid;
        IF FOUND THEN
            v_n := queen.admin_group_set_cursors(p_group, ARRAY[v_pid], ARRAY[v_last]);
        END IF;
    ELSE
        RAISE EXCEPTION 'consumer group "%" has no position on partition "%" of queue "%"',
            p_group, p_partition, p_queue USING ERRCODE = '42704';
    END IF;
    SELECT s.created_at INTO v_at FROM queen.log_segments s
     WHERE s.partition_id = v_pid ORDER BY s.base_offset DESC LIMIT 1;
    RETURN jsonb_build_object('success', true, 'consumerGroup', p_group, 'queueName', p_queue,
                              'partitionName', p_partition, 'updated', v_n > 0,
                              'cursorMovedTo', queen.consume_iso(v_at));
END
$$;

-- DELETE /api/v1/consumer-groups/:group/queues/:queue?deleteMetadata=: the group's state on
-- that one queue (cursors, leases, recorded acks; its dead letters stay, as the broker keeps
-- them), so that it starts there afresh, and its subscription record there unless
-- p_delete_metadata is false. Its other queues are untouched. The broker's answer {success,
-- consumerGroup, queueName, deletedPartitions, metadataDeleted}; 42704 when the group has
-- nothing there, neither state nor a subscription record (the broker answers 200: issue 29
-- wants no success that did nothing; a subscription record outlives its queue, so a deleted
-- queue's record can still be deleted here). Locks: the top
-- of this file (the partitions, then the state rows, then the cursors). 22023 for an empty
-- group or queue; 42501 for a reserved queue.
CREATE OR REPLACE FUNCTION queen.delete_consumer_group_for_queue(p_group text, p_queue text,
                                                                 p_delete_metadata boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pids bigint[];
    v_n    bigint;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    v_pids := queen.admin_group_queue_pids(p_group,
                                           (SELECT q.id FROM queen.queues q WHERE q.name = p_queue));
    IF cardinality(v_pids) > 0 THEN
        PERFORM queen.partitions_lock_for_write(v_pids, 'key share');
        PERFORM queen.admin_group_lock(p_group, v_pids);
        WITH st AS (DELETE FROM queen.consumer_state
                     WHERE group_name = p_group AND partition_id = ANY (v_pids) RETURNING partition_id),
             cg AS (DELETE FROM queen.consumer_groups
                     WHERE group_name = p_group AND partition_id = ANY (v_pids) RETURNING partition_id)
        SELECT count(*) INTO v_n FROM (SELECT partition_id FROM st UNION SELECT partition_id FROM cg) u;
        DELETE FROM queen.consumer_acks WHERE group_name = p_group AND partition_id = ANY (v_pids);
    END IF;
    IF COALESCE(v_n, 0) = 0 AND NOT EXISTS (SELECT 1 FROM queen.consumer_subscriptions s
                                             WHERE s.queue_name = p_queue AND s.group_name = p_group) THEN
        RAISE EXCEPTION 'consumer group "%" has nothing on queue "%"', p_group, p_queue
            USING ERRCODE = '42704';
    END IF;
    IF COALESCE(p_delete_metadata, true) THEN
        DELETE FROM queen.consumer_subscriptions WHERE queue_name = p_queue AND group_name = p_group;
    END IF;
    RETURN jsonb_build_object('success', true, 'consumerGroup', p_group, 'queueName', p_queue,
                              'deletedPartitions', COALESCE(v_n, 0),
                              'metadataDeleted', COALESCE(p_delete_metadata, true));
END
$$;
