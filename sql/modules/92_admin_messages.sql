-- queen: the admin API's message browser, one message's detail and actions, and the dead-letter
-- queue across queues (issue 29; the broker's lib/schema/procedures/010_messages.sql shapes,
-- the differences in docs/queen-compatibility.md "Admin API"). Everything is read from the
-- extension's own tables in the caller's snapshot: messages decoded out of queen.log_segments
-- through queen.read, statuses from the cursors (queen.consumer_groups), the leases
-- (queen.consumer_state) and queen.consumer_dlq. No copy, no counter table.
--
-- A message's status (the broker's meaning, computed from offsets):
--   dead_letter  a queen.consumer_dlq row holds its (partition, offset), for any group;
--   queue mode (the partition has a __QUEUE_MODE__ cursor or state row; also with bus groups,
--   as the broker): completed when its offset is at or below the queue-mode cursor; processing
--   when it is in the live lease's batch (cursor + 1 .. cursor + batch_size; the broker marks a
--   whole leased partition, queen knows the batch); else pending;
--   bus mode only: completed when every group's cursor passed it, else pending;
--   no group at all: pending.
--
-- Locks: the reads take none (MVCC snapshot of the statement). queen.admin_delete_message and
-- queen.admin_retry_message write; their header comments give their locks in the global order
-- (the top of sql/modules/00_core.sql).

-- The highest offset in [p_lo, p_hi] of partition p_pid whose segment was created before p_t,
-- or p_lo - 1: one before the first created at or after p_t, found by the seek's binary search
-- over the segments' primary key (queen.admin_offset_at, sql/modules/91_admin_groups.sql;
-- never a payload read). p_lo is a retained offset, so every offset searched has its segment.
-- Internal.
CREATE OR REPLACE FUNCTION queen.admin_offset_before(p_pid bigint, p_lo bigint, p_hi bigint,
                                                     p_t timestamptz)
RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT queen.admin_offset_at(p_pid, p_lo - 1, p_hi + 1, p_t) - 1
$$;

-- The consuming state of partition p_pid as the status rules need it (see the top): the
-- queue-mode cursor (NULL: no queue mode), its live batch size (0: no live lease) and lease
-- expiry, and the bus groups' cursors (group names in "C" order). Internal.
CREATE OR REPLACE FUNCTION queen.admin_partition_groups(p_pid bigint, p_now timestamptz,
                                                        OUT qm_cursor bigint, OUT qm_batch int,
                                                        OUT qm_expires timestamptz,
                                                        OUT bus_groups text[],
                                                        OUT bus_cursors bigint[])
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH g AS (
        SELECT n.group_name, COALESCE(c.committed_offset, -1) AS cur, s.lease_id, s.lease_expires_at,
               s.batch_size
          FROM (SELECT group_name FROM queen.consumer_groups WHERE partition_id = p_pid
                UNION SELECT group_name FROM queen.consumer_state WHERE partition_id = p_pid) n
          LEFT JOIN queen.consumer_groups c ON c.partition_id = p_pid AND c.group_name = n.group_name
          LEFT JOIN queen.consumer_state s ON s.partition_id = p_pid AND s.group_name = n.group_name)
    SELECT (SELECT cur FROM g WHERE group_name = '__QUEUE_MODE__'),
           COALESCE((SELECT batch_size FROM g WHERE group_name = '__QUEUE_MODE__'
                      AND lease_id IS NOT NULL AND lease_expires_at > p_now), 0),
           (SELECT lease_expires_at FROM g WHERE group_name = '__QUEUE_MODE__'
               AND lease_id IS NOT NULL AND lease_expires_at > p_now),
           COALESCE((SELECT array_agg(group_name ORDER BY group_name COLLATE "C") FROM g
                      WHERE group_name <> '__QUEUE_MODE__'), '{}'),
           COALESCE((SELECT array_agg(cur ORDER BY group_name COLLATE "C") FROM g
                      WHERE group_name <> '__QUEUE_MODE__'), '{}')
$$;

-- A message's status and busStatus by the rules at the top of this file. Internal.
CREATE OR REPLACE FUNCTION queen.admin_status_of(p_off bigint, p_dead boolean, p_qm_cursor bigint,
                                                 p_qm_batch int, p_bus_cursors bigint[],
                                                 OUT status text, OUT queue_status text,
                                                 OUT consumed_by int, OUT total_groups int)
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_dead THEN 'dead_letter'
                WHEN p_qm_cursor IS NULL AND cardinality(p_bus_cursors) > 0 THEN
                    CASE WHEN (SELECT bool_and(c >= p_off) FROM unnest(p_bus_cursors) c)
                         THEN 'completed' ELSE 'pending' END
                ELSE qs END,
           qs,
           (SELECT count(*)::int FROM unnest(p_bus_cursors) c WHERE c >= p_off),
           cardinality(p_bus_cursors)
      FROM (SELECT CASE WHEN p_dead THEN 'dead_letter'
                        WHEN p_qm_cursor IS NOT NULL AND p_off <= p_qm_cursor THEN 'completed'
                        WHEN p_qm_cursor IS NOT NULL AND p_off <= p_qm_cursor + p_qm_batch
                        THEN 'processing'
                        ELSE 'pending' END AS qs) x
$$;

-- A timestamp filter of the admin routes: NULL for NULL or '', else the text as a timestamptz
-- (22023 when it is not one). Internal.
CREATE OR REPLACE FUNCTION queen.admin_time_arg(p_name text, p_value text) RETURNS timestamptz
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_value IS NULL OR p_value = '' THEN
        RETURN NULL;
    END IF;
    RETURN p_value::timestamptz;
EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format OR invalid_parameter_value
          OR invalid_text_representation THEN
    RAISE EXCEPTION '% must be a timestamp', p_name USING ERRCODE = '22023';
END
$$;

-- The message browser (GET /api/v1/messages): a page of the retained messages newest first
-- (created_at, then partition id and offset, descending), filtered by queue, partition, status
-- (pending, processing, completed, dead_letter) and creation time (from: inclusive, default an
-- hour ago; to: the whole minute it names, default now's, as the broker), as
-- {messages: [{id, transactionId, partitionId, queuePath, queue, partition, namespace, task,
-- status, queueStatus, busStatus: {consumedBy, totalGroups}, traceId, producerSub,
-- queuePriority, createdAt, leaseExpiresAt, payload}], mode: {hasQueueMode, busGroupsCount,
-- type}, pagination: {limit, offset}}. limit 1..1000 (default 200), offset 0..10000.
--
-- Cost (bounded, never a scan of messages): with N = offset + limit, one primary-key probe per
-- candidate partition reads its newest segment's row head (created_at, offsets; never the
-- payload), plus a binary search of its segments when a `to` filter cuts into it; the N
-- partitions with the newest heads are the only ones that can hold the first N messages; their
-- segments are then read newest first in rounds (each partition's fetch doubled only while its
-- oldest fetched segment could still be among the first N), and only the segments overlapping
-- the page are decoded (queen.read). A status filter is offset arithmetic per partition (the
-- cursor and lease give each status an offset range); dead letters come from
-- queen.consumer_dlq. Reserved queues ("__queen_") are left out; naming one is 42501.
CREATE OR REPLACE FUNCTION queen.admin_messages(p_queue text DEFAULT NULL, p_partition text DEFAULT NULL,
                                                p_status text DEFAULT NULL, p_from text DEFAULT NULL,
                                                p_to text DEFAULT NULL, p_limit int DEFAULT 200,
                                                p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now    timestamptz := now();
    v_from   timestamptz;
    v_to     timestamptz;
    v_n      bigint;
    v_pids   bigint[];
    v_los    bigint[];
    v_his    bigint[];
    v_lims   int[];
    v_more   bigint[];
    v_rounds int := 0;
    v_msgs   jsonb;
    v_mode   jsonb;
    v_segs   jsonb;
    v_parts  jsonb;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'limit must be a whole number from 1 to 1000' USING ERRCODE = '22023';
    END IF;
    IF p_offset IS NULL OR p_offset < 0 OR p_offset > 10000 THEN
        RAISE EXCEPTION 'offset must be a whole number from 0 to 10000' USING ERRCODE = '22023';
    END IF;
    IF p_status IS NOT NULL AND p_status NOT IN ('pending', 'processing', 'completed', 'dead_letter') THEN
        RAISE EXCEPTION 'status must be pending, processing, completed or dead_letter'
            USING ERRCODE = '22023';
    END IF;
    IF p_queue IS NOT NULL THEN
        PERFORM queen.reserved_queue_guard(p_queue);
    END IF;
    v_from := COALESCE(queen.admin_time_arg('from', p_from), v_now - interval '1 hour');
    v_to := date_trunc('minute', COALESCE(queen.admin_time_arg('to', p_to), v_now)) + interval '1 minute';
    v_n := p_offset::bigint + p_limit;

    -- the candidate partitions: consuming state, the offset range of the status filter (dead
    -- letters inside it are skipped below), the newest segment in range (one primary-key
    -- probe), the range cut by `to` when that segment is not before it (a binary search)
    WITH c AS (
        SELECT p.id AS pid, q.name AS queue, p.name AS part, q.namespace AS ns, q.task,
               COALESCE((o.options ->> 'priority')::int, 0) AS priority, p.log_start,
               e.last_offset,
               g.qm_cursor, g.qm_batch, g.qm_expires, g.bus_groups, g.bus_cursors,
               (SELECT min(x) FROM unnest(g.bus_cursors) x) AS bus_min
          FROM queen.log_partitions p
          JOIN queen.queues q ON q.id = p.queue_id
          LEFT JOIN queen.queue_options o ON o.queue_id = q.id
          CROSS JOIN LATERAL (SELECT queen.log_end(p.id, p.last_offset) AS last_offset) e
          CROSS JOIN LATERAL queen.admin_partition_groups(p.id, v_now) g
         WHERE (p_queue IS NULL OR q.name = p_queue)
           AND (p_partition IS NULL OR p.name = p_partition)
           AND NOT pg_catalog.starts_with(q.name, '__queen_')
           AND e.last_offset >= p.log_start),
    r AS (
        SELECT c.*,
               CASE p_status
                   WHEN 'processing' THEN greatest(c.log_start, COALESCE(c.qm_cursor, c.last_offset) + 1)
                   WHEN 'pending' THEN greatest(c.log_start, COALESCE(c.qm_cursor + c.qm_batch,
                                                                     c.bus_min, c.log_start - 1) + 1)
                   ELSE c.log_start END AS lo,
               CASE p_status
                   WHEN 'completed' THEN least(c.last_offset, COALESCE(c.qm_cursor, c.bus_min, c.log_start - 1))
                   WHEN 'processing' THEN CASE WHEN c.qm_cursor IS NULL THEN c.log_start - 1
                                               ELSE least(c.last_offset, c.qm_cursor + c.qm_batch) END
                   ELSE c.last_offset END AS hi
          FROM c),
    h AS (
        SELECT r.*, (SELECT s.created_at FROM queen.log_segments s
                      WHERE s.partition_id = r.pid AND s.base_offset <= r.hi
                      ORDER BY s.base_offset DESC LIMIT 1) AS head_at
          FROM r WHERE r.lo <= r.hi),
    h2 AS (
        SELECT h.*, CASE WHEN h.head_at >= v_to THEN queen.admin_offset_before(h.pid, h.lo, h.hi, v_to)
                         ELSE h.hi END AS hi2
          FROM h),
    h3 AS (
        SELECT h2.*, CASE WHEN h2.hi2 = h2.hi THEN h2.head_at
                          ELSE (SELECT s.created_at FROM queen.log_segments s
                                 WHERE s.partition_id = h2.pid AND s.base_offset <= h2.hi2
                                 ORDER BY s.base_offset DESC LIMIT 1) END AS head2
          FROM h2)
    SELECT (SELECT jsonb_build_object(
               'hasQueueMode', COALESCE(bool_or(qm_cursor IS NOT NULL), false),
               'busGroupsCount', (SELECT count(DISTINCT g) FROM c, unnest(c.bus_groups) g),
               'type', CASE WHEN NOT COALESCE(bool_or(qm_cursor IS NOT NULL), false)
                                 AND bool_or(cardinality(bus_groups) > 0) THEN 'bus'
                            WHEN bool_or(qm_cursor IS NOT NULL)
                                 AND NOT bool_or(cardinality(bus_groups) > 0) THEN 'queue'
                            WHEN bool_or(qm_cursor IS NOT NULL) THEN 'hybrid'
                            ELSE 'none' END) FROM c),
           (SELECT COALESCE(jsonb_agg(jsonb_build_object(
                       'pid', pid, 'queue', queue, 'part', part, 'ns', ns, 'task', task,
                       'priority', priority,
                       'lo', lo, 'hi', hi2, 'qm_cursor', qm_cursor, 'qm_batch', qm_batch,
                       'qm_expires', qm_expires, 'bus_groups', bus_groups,
                       'bus_cursors', bus_cursors, 'head_at', head2)), '[]')
              FROM h3 WHERE lo <= hi2 AND head2 >= v_from AND head2 < v_to)
      INTO v_mode, v_parts;

    IF p_status = 'dead_letter' THEN
        -- the dead letters' own rows (one per message, whichever groups dead-lettered it)
        SELECT COALESCE(jsonb_agg(m ORDER BY at DESC, pid DESC, off DESC), '[]'::jsonb) INTO v_msgs
          FROM (SELECT d.created_at AS at, d.partition_id AS pid, d.message_offset AS off,
                       jsonb_build_object('id', d.message_id, 'transactionId', d.transaction_id,
                           'partitionId', queen.partition_uuid(d.partition_id),
                           'queuePath', x.queue || '/' || x.part, 'queue', x.queue,
                           'partition', x.part, 'namespace', x.ns, 'task', x.task,
                           'status', 'dead_letter', 'queueStatus', 'dead_letter',
                           'busStatus', jsonb_build_object(
                               'consumedBy', (SELECT count(*) FROM unnest(x.bus_cursors) c
                                               WHERE c >= d.message_offset),
                               'totalGroups', cardinality(x.bus_groups)),
                           'traceId', NULL, 'producerSub', NULL, 'queuePriority', x.priority,
                           'createdAt', queen.consume_iso(d.created_at),
                           'leaseExpiresAt', queen.consume_iso(x.qm_expires),
                           'payload', d.payload) AS m
                  FROM (SELECT DISTINCT ON (d.partition_id, d.message_offset) d.*
                          FROM queen.consumer_dlq d
                         WHERE d.created_at >= v_from AND d.created_at < v_to
                           AND d.partition_id IN (SELECT p.id FROM queen.log_partitions p
                                                   JOIN queen.queues q ON q.id = p.queue_id
                                                  WHERE (p_queue IS NULL OR q.name = p_queue)
                                                    AND (p_partition IS NULL OR p.name = p_partition)
                                                    AND NOT pg_catalog.starts_with(q.name, '__queen_'))
                         ORDER BY d.partition_id, d.message_offset, d.id DESC) d
                  CROSS JOIN LATERAL (
                      SELECT q.name AS queue, p.name AS part, q.namespace AS ns, q.task,
                             COALESCE((o.options ->> 'priority')::int, 0) AS priority, g.*
                        FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
                        LEFT JOIN queen.queue_options o ON o.queue_id = q.id
                        CROSS JOIN LATERAL queen.admin_partition_groups(p.id, v_now) g
                       WHERE p.id = d.partition_id) x
                 ORDER BY d.created_at DESC, d.partition_id DESC, d.message_offset DESC
                 LIMIT p_limit OFFSET p_offset) y;
        RETURN jsonb_build_object('messages', v_msgs, 'mode', v_mode,
                                  'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
    END IF;

    -- with a status filter, a partition's head may be a dead letter (not of that status): take
    -- as many more partitions and messages as there are dead letters in the ranges
    IF p_status IS NOT NULL THEN
        v_n := v_n + (SELECT count(DISTINCT (d.partition_id, d.message_offset))
                        FROM jsonb_to_recordset(v_parts) x(pid bigint, lo bigint, hi bigint)
                        JOIN queen.consumer_dlq d ON d.partition_id = x.pid
                       WHERE d.message_offset BETWEEN x.lo AND x.hi);
    END IF;
    -- only the N partitions with the newest heads can hold the first N messages
    SELECT array_agg(pid ORDER BY head_at DESC, pid DESC), array_agg(lo ORDER BY head_at DESC, pid DESC),
           array_agg(hi ORDER BY head_at DESC, pid DESC)
      INTO v_pids, v_los, v_his
      FROM (SELECT * FROM jsonb_to_recordset(v_parts) x(pid bigint, lo bigint, hi bigint, head_at timestamptz)
             ORDER BY head_at DESC, pid DESC LIMIT v_n) t;
    IF v_pids IS NULL THEN
        RETURN jsonb_build_object('messages', '[]'::jsonb, 'mode', v_mode,
                                  'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
    END IF;
    v_lims := array_fill(least(v_n, v_n / cardinality(v_pids) + 2)::int, ARRAY[cardinality(v_pids)]);

    -- rounds: fetch each partition's newest v_lims[i] segments (row heads only), order them,
    -- find the segment where the count reaches N; a partition whose fetch was cut while its
    -- oldest fetched segment is not past that point gets twice as many next round
    LOOP
        v_rounds := v_rounds + 1;
        WITH f AS (
            SELECT u.pid, u.lo, u.hi, u.lim, s.base_offset AS b, s.end_offset AS e, s.created_at AS t,
                   count(*) OVER (PARTITION BY u.pid) AS got,
                   row_number() OVER (PARTITION BY u.pid ORDER BY s.base_offset) AS rn_old
              FROM unnest(v_pids, v_los, v_his, v_lims) u(pid, lo, hi, lim)
              CROSS JOIN LATERAL (SELECT s.base_offset, s.end_offset, s.created_at
                                    FROM queen.log_segments s
                                   WHERE s.partition_id = u.pid AND s.base_offset <= u.hi
                                     AND s.end_offset >= u.lo
                                   ORDER BY s.base_offset DESC LIMIT u.lim) s),
        ins AS (
            SELECT f.*, greatest(f.b, f.lo) AS b2, least(f.e, f.hi) AS e2,
                   least(f.e, f.hi) - greatest(f.b, f.lo) + 1
                   - CASE WHEN p_status IS NULL THEN 0 ELSE (
                         SELECT count(DISTINCT d.message_offset) FROM queen.consumer_dlq d
                          WHERE d.partition_id = f.pid
                            AND d.message_offset BETWEEN greatest(f.b, f.lo) AND least(f.e, f.hi)) END AS n
              FROM f WHERE f.t >= v_from AND f.t < v_to),
        ord AS (
            SELECT ins.*, sum(n) OVER (ORDER BY t DESC, pid DESC, b DESC) AS cum FROM ins),
        thr AS (SELECT t, pid, b FROM ord WHERE cum >= v_n ORDER BY cum LIMIT 1),
        cut AS (  -- partitions whose fetch was cut with older segments possibly still in range
            SELECT f.pid, f.t, f.b FROM f
             WHERE f.rn_old = 1 AND f.got = f.lim AND f.lim < v_n AND f.t >= v_from
               AND (NOT EXISTS (SELECT 1 FROM thr)
                    OR EXISTS (SELECT 1 FROM thr WHERE (f.t, f.pid, f.b) >= (thr.t, thr.pid, thr.b))))
        SELECT (SELECT array_agg(pid) FROM cut),
               (SELECT COALESCE(jsonb_agg(jsonb_build_object('pid', pid, 'b', b2, 'e', e2,
                                                             'start', cum - n) ORDER BY cum), '[]')
                  FROM ord WHERE cum > p_offset AND cum - n < p_offset::bigint + p_limit)
          INTO v_more, v_segs;
        EXIT WHEN v_more IS NULL OR v_rounds >= 40;
        SELECT array_agg(CASE WHEN u.pid = ANY (v_more) THEN least(u.lim::bigint * 2, v_n)::int
                              ELSE u.lim END ORDER BY u.i)
          INTO v_lims
          FROM unnest(v_pids, v_lims) WITH ORDINALITY u(pid, lim, i);
    END LOOP;

    -- decode only the segments overlapping the page, then number the messages in order
    SELECT COALESCE(jsonb_agg(z.m ORDER BY z.pos), '[]'::jsonb) INTO v_msgs
      FROM (SELECT y.m, y.pos FROM (
              SELECT row_number() OVER (ORDER BY r.created_at DESC, x.pid DESC, r.message_offset DESC)
                     - 1 + min((sg ->> 'start')::bigint) OVER () AS pos,
                     jsonb_build_object('id', r.message_id, 'transactionId', r.transaction_id,
                         'partitionId', queen.partition_uuid(x.pid),
                         'queuePath', x.queue || '/' || x.part, 'queue', x.queue,
                         'partition', x.part, 'namespace', x.ns, 'task', x.task,
                         'status', st.status, 'queueStatus', st.queue_status,
                         'busStatus', jsonb_build_object('consumedBy', st.consumed_by,
                                                         'totalGroups', st.total_groups),
                         'traceId', NULL, 'producerSub', NULL, 'queuePriority', x.priority,
                         'createdAt', queen.consume_iso(r.created_at),
                         'leaseExpiresAt', queen.consume_iso(x.qm_expires),
                         'payload', r.payload) AS m
                FROM jsonb_array_elements(v_segs) sg
                JOIN jsonb_to_recordset(v_parts) x(pid bigint, queue text, part text, ns text,
                                                   task text, priority int,
                                                   qm_cursor bigint, qm_batch int,
                                                   qm_expires timestamptz, bus_groups text[],
                                                   bus_cursors bigint[])
                  ON x.pid = (sg ->> 'pid')::bigint
                CROSS JOIN LATERAL queen.read(x.queue, x.part, (sg ->> 'b')::bigint,
                                              ((sg ->> 'e')::bigint - (sg ->> 'b')::bigint + 1)::int) r
                CROSS JOIN LATERAL queen.admin_status_of(r.message_offset,
                    EXISTS (SELECT 1 FROM queen.consumer_dlq d WHERE d.partition_id = x.pid
                                                                 AND d.message_offset = r.message_offset),
                    x.qm_cursor, x.qm_batch, x.bus_cursors) st
               WHERE r.message_offset <= (sg ->> 'e')::bigint
                 AND (p_status IS NULL OR st.status = p_status)) y
             WHERE y.pos >= p_offset AND y.pos < p_offset::bigint + p_limit) z;
    RETURN jsonb_build_object('messages', v_msgs, 'mode', v_mode,
                              'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
END
$$;

-- The partition of a wire partitionId (42704 when it is not one of queen's partition ids, or
-- that partition does not exist). Internal.
CREATE OR REPLACE FUNCTION queen.admin_partition_arg(p_partition_id text, OUT pid bigint,
                                                     OUT queue text, OUT part text,
                                                     OUT log_start bigint, OUT last_offset bigint,
                                                     OUT queue_id bigint)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT p.id, q.name, p.name, p.log_start, queen.log_end(p.id, p.last_offset), q.id
      INTO pid, queue, part, log_start, last_offset, queue_id
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE p.id = queen.partition_of_uuid(p_partition_id)
       AND NOT pg_catalog.starts_with(q.name, '__queen_');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition % not found', p_partition_id USING ERRCODE = '42704';
    END IF;
END
$$;

-- The offset of a transactionId's retained message in a partition, or NULL: its earliest
-- retained occurrence whose dedup hash is still kept (queen.log_find_hash_after, the acks' own
-- lookup; a transactionId occurs twice in a partition only when pushed again outside the dedup
-- window, and the older one is answered). Internal.
CREATE OR REPLACE FUNCTION queen.admin_find_message(p_pid bigint, p_log_start bigint, p_txn text)
RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT queen.log_find_hash_after(p_pid, queen.txn_hash(p_txn), p_log_start - 1)
$$;

-- One message (GET /api/v1/messages/:partitionId/:transactionId), the broker's detail shape:
-- {id, transactionId, partitionId, queuePath, queue, partition, namespace, task, status,
-- payload, isEncrypted, traceId, producerSub, createdAt, errorMessage, retryCount,
-- leaseExpiresAt, queueConfig: {leaseTime, retryLimit, retryDelay, ttl, priority},
-- mode: {hasQueueMode, busGroupsCount, consumedByGroups, type}, consumerGroups: [{name,
-- consumed, leaseExpiresAt}], offset}. Which occurrence: queen.admin_find_message's (the
-- oldest retained); a message no longer in the log but still a dead letter is answered from
-- its dead-letter copy (the newest). 42704 when neither holds it.
CREATE OR REPLACE FUNCTION queen.admin_message(p_partition_id text, p_txn text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now  timestamptz := now();
    v_p    record;
    v_g    record;
    v_off  bigint;
    v_id   uuid;
    v_pay  jsonb;
    v_at   timestamptz;
    v_dlq  record;
    v_st   record;
    v_opts jsonb;
    v_q    record;
BEGIN
    IF p_txn IS NULL OR p_txn = '' THEN
        RAISE EXCEPTION 'transactionId must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_p FROM queen.admin_partition_arg(p_partition_id);
    v_off := queen.admin_find_message(v_p.pid, v_p.log_start, p_txn);
    IF v_off IS NOT NULL AND v_off <= v_p.last_offset THEN
        SELECT r.message_id, r.payload, r.created_at INTO v_id, v_pay, v_at
          FROM queen.read(v_p.queue, v_p.part, v_off, 1) r
         WHERE r.message_offset = v_off AND r.transaction_id = p_txn;
        IF NOT FOUND THEN
            v_off := NULL;
        END IF;
    ELSE
        v_off := NULL;
    END IF;
    SELECT d.* INTO v_dlq FROM queen.consumer_dlq d
     WHERE d.partition_id = v_p.pid AND d.transaction_id = p_txn
       AND (v_off IS NULL OR d.message_offset = v_off)
     ORDER BY d.id DESC LIMIT 1;
    IF v_off IS NULL THEN
        IF v_dlq.id IS NULL THEN
            RAISE EXCEPTION 'message % not found in partition %', p_txn, p_partition_id
                USING ERRCODE = '42704';
        END IF;
        v_off := v_dlq.message_offset;
        v_id := v_dlq.message_id;
        v_pay := v_dlq.payload;
        v_at := v_dlq.created_at;
    END IF;
    SELECT * INTO v_g FROM queen.admin_partition_groups(v_p.pid, v_now);
    SELECT * INTO v_st FROM queen.admin_status_of(v_off, v_dlq.id IS NOT NULL, v_g.qm_cursor,
                                                  v_g.qm_batch, v_g.bus_cursors);
    v_opts := queen.consume_options(v_p.queue_id);
    SELECT q.namespace, q.task INTO v_q FROM queen.queues q WHERE q.id = v_p.queue_id;
    RETURN jsonb_build_object(
        'id', v_id, 'transactionId', p_txn, 'partitionId', queen.partition_uuid(v_p.pid),
        'queuePath', v_p.queue || '/' || v_p.part, 'queue', v_p.queue, 'partition', v_p.part,
        'namespace', v_q.namespace, 'task', v_q.task, 'status', v_st.status, 'payload', v_pay,
        'isEncrypted', queen.payload_is_envelope(v_pay::text),
        'traceId', NULL, 'producerSub', NULL, 'createdAt', queen.consume_iso(v_at),
        'errorMessage', v_dlq.error_message, 'retryCount', v_dlq.retry_count,
        'leaseExpiresAt', queen.consume_iso(v_g.qm_expires),
        'queueConfig', jsonb_build_object('leaseTime', v_opts -> 'leaseTime',
                                          'retryLimit', v_opts -> 'retryLimit',
                                          'retryDelay', v_opts -> 'retryDelay',
                                          'ttl', v_opts -> 'ttl', 'priority', v_opts -> 'priority'),
        'mode', jsonb_build_object(
            'hasQueueMode', v_g.qm_cursor IS NOT NULL,
            'busGroupsCount', cardinality(v_g.bus_groups),
            'consumedByGroups', v_st.consumed_by,
            'type', CASE WHEN v_g.qm_cursor IS NULL AND cardinality(v_g.bus_groups) > 0 THEN 'bus'
                         WHEN v_g.qm_cursor IS NOT NULL AND cardinality(v_g.bus_groups) = 0 THEN 'queue'
                         WHEN v_g.qm_cursor IS NOT NULL THEN 'hybrid'
                         ELSE 'none' END),
        'consumerGroups', (
            SELECT COALESCE(jsonb_agg(jsonb_build_object(
                       'name', n.group_name,
                       'consumed', COALESCE(c.committed_offset, -1) >= v_off,
                       'leaseExpiresAt', CASE WHEN s.lease_id IS NOT NULL AND s.lease_expires_at > v_now
                                              THEN queen.consume_iso(s.lease_expires_at) END)
                       ORDER BY n.group_name COLLATE "C"), '[]'::jsonb)
              FROM (SELECT group_name FROM queen.consumer_groups WHERE partition_id = v_p.pid
                    UNION SELECT group_name FROM queen.consumer_state WHERE partition_id = v_p.pid) n
              LEFT JOIN queen.consumer_groups c ON c.partition_id = v_p.pid AND c.group_name = n.group_name
              LEFT JOIN queen.consumer_state s ON s.partition_id = v_p.pid AND s.group_name = n.group_name),
        'offset', v_off);
END
$$;

-- DELETE /api/v1/messages/:partitionId/:transactionId. The log is append-only, so what can be
-- deleted exactly is a dead letter: this deletes the transactionId's queen.consumer_dlq rows in
-- the partition (every group's, or p_group's only) and answers {success: true, partitionId,
-- transactionId, deleted: n, message}. A message that is in the log but not a dead letter:
-- 55000 (the sidecar's 409 not_deletable; nothing changes; the retention options remove
-- messages); neither: 42704.
-- Locks: the partition row FOR KEY SHARE (queen.partition_lock_for_write, with the shard's
-- fence), then the dead-letter rows (their DELETE). That is the global order (partition rows,
-- then consumer_dlq last; the top of sql/modules/00_core.sql): a push does not conflict with
-- KEY SHARE, a queue deletion's FOR UPDATE of the partition waits or is waited for before any
-- other lock, and no writer takes a dead-letter row before a partition row, so no cycle.
CREATE OR REPLACE FUNCTION queen.admin_delete_message(p_partition_id text, p_txn text,
                                                      p_group text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_p   record;
    v_n   bigint;
BEGIN
    IF p_txn IS NULL OR p_txn = '' THEN
        RAISE EXCEPTION 'transactionId must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_p FROM queen.admin_partition_arg(p_partition_id);
    IF queen.partition_lock_for_write(v_p.pid, 'key share') = 'absent' THEN
        RAISE EXCEPTION 'partition % not found', p_partition_id USING ERRCODE = '42704';
    END IF;
    WITH d AS (DELETE FROM queen.consumer_dlq
                WHERE partition_id = v_p.pid AND transaction_id = p_txn
                  AND (p_group IS NULL OR group_name = queen.consume_group(p_group))
                RETURNING 1)
    SELECT count(*) INTO v_n FROM d;
    IF v_n = 0 THEN
        IF queen.admin_find_message(v_p.pid, v_p.log_start, p_txn) IS NOT NULL THEN
            RAISE EXCEPTION 'message % is not a dead letter: the log is append-only, only a dead letter can be deleted', p_txn
                USING ERRCODE = '55000',
                      HINT = 'Messages leave the log by the retention options (retentionSeconds, completedRetentionSeconds).';
        END IF;
        RAISE EXCEPTION 'message % not found in partition %', p_txn, p_partition_id
            USING ERRCODE = '42704';
    END IF;
    RETURN jsonb_build_object('success', true, 'partitionId', queen.partition_uuid(v_p.pid),
                              'transactionId', p_txn, 'deleted', v_n,
                              'message', 'Dead letter deleted');
END
$$;

-- POST /api/v1/messages/:partitionId/:transactionId/retry: a dead letter delivered again to
-- its group, once. Mechanism: the newest dead-letter row of the transactionId in the partition
-- (of p_group when given) is deleted and its stored payload is appended to the same partition
-- as a new message whose transactionId is "<transactionId>.retry-<dead-letter id>" (queen.push:
-- exactly once by the dedup of that derived id too); the group's cursor reaches it like any
-- message. Since every group reading the partition would get the new message, a retry is
-- refused (55000, the sidecar's 409 not_retryable) while another group reads the partition
-- (a cursor or state row there, or a subscription to the queue): only then is it delivered to
-- its group alone. Answers {success: true, partitionId, transactionId, consumerGroup,
-- retriedAs: {transactionId, messageId, offset}}; 42704 when no such dead letter exists (also
-- for the second of two retries of the same one).
-- Locks: the partition row FOR NO KEY UPDATE (queen.partition_lock_for_write, with the shard's
-- fence: the lock a push takes, so two retries of one dead letter serialize here and the
-- second finds the row gone), then the dead-letter row (FOR UPDATE, then its DELETE), then
-- queen.push of the same partition (it takes the row lock already held, and nothing else of
-- the consuming model). That is the global order: partition rows first, consumer_dlq last; a
-- push or transaction waits for or is waited for on the partition row before holding anything
-- this takes; acks and pops take KEY SHARE, which does not conflict.
CREATE OR REPLACE FUNCTION queen.admin_retry_message(p_partition_id text, p_txn text,
                                                     p_group text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_p     record;
    v_d     record;
    v_other text;
    v_new   text;
    v_r     record;
BEGIN
    IF p_txn IS NULL OR p_txn = '' THEN
        RAISE EXCEPTION 'transactionId must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_p FROM queen.admin_partition_arg(p_partition_id);
    IF queen.partition_lock_for_write(v_p.pid, 'no key update') = 'absent' THEN
        RAISE EXCEPTION 'partition % not found', p_partition_id USING ERRCODE = '42704';
    END IF;
    SELECT d.* INTO v_d FROM queen.consumer_dlq d
     WHERE d.partition_id = v_p.pid AND d.transaction_id = p_txn
       AND (p_group IS NULL OR d.group_name = queen.consume_group(p_group))
     ORDER BY d.id DESC LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'message % is not a dead letter of this partition', p_txn
            USING ERRCODE = '42704';
    END IF;
    SELECT n.g INTO v_other
      FROM (SELECT group_name AS g FROM queen.consumer_groups WHERE partition_id = v_p.pid
            UNION SELECT group_name FROM queen.consumer_state WHERE partition_id = v_p.pid
            UNION SELECT group_name FROM queen.consumer_subscriptions WHERE queue_name = v_p.queue) n
     WHERE n.g <> v_d.group_name ORDER BY n.g COLLATE "C" LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'group % also reads partition %: a retry appends the message again, which every group reading it would get', v_other, p_partition_id
            USING ERRCODE = '55000';
    END IF;
    DELETE FROM queen.consumer_dlq WHERE id = v_d.id;
    v_new := v_d.transaction_id || '.retry-' || v_d.id;
    SELECT r.status, r.message_id, r.message_offset INTO v_r
      FROM queen.push(v_p.queue, v_p.part,
                      jsonb_build_array(jsonb_build_object('transactionId', v_new,
                                                           'payload', v_d.payload))) r;
    IF v_r.status <> 'queued' THEN
        RAISE EXCEPTION 'the retry of dead letter % was already appended', v_d.id USING ERRCODE = '55000';
    END IF;
    RETURN jsonb_build_object('success', true, 'partitionId', queen.partition_uuid(v_p.pid),
                              'transactionId', p_txn, 'consumerGroup', v_d.group_name,
                              'retriedAs', jsonb_build_object('transactionId', v_new,
                                                              'messageId', v_r.message_id,
                                                              'offset', v_r.message_offset));
END
$$;

-- The dead-letter queue across queues (GET /api/v1/dlq), newest first: the broker's
-- {messages: [{id, transactionId, partitionId, queue, partition, consumerGroup, errorMessage,
-- retryCount, data, producerSub, createdAt, failedAt}], pagination: {limit, offset}} plus
-- total (the dead letters matching the filters: a count of queen.consumer_dlq rows, never of
-- messages). Filters: queue, consumerGroup, partition, from/to (failedAt, inclusive; to NULL:
-- now). NULL filters match all; reserved queues are left out (naming one is 42501). 22023 for
-- a limit outside 0..1000 or a negative offset.
CREATE OR REPLACE FUNCTION queen.admin_dlq(p_queue text DEFAULT NULL, p_group text DEFAULT NULL,
                                           p_partition text DEFAULT NULL, p_from text DEFAULT NULL,
                                           p_to text DEFAULT NULL, p_limit int DEFAULT 100,
                                           p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_from  timestamptz;
    v_to    timestamptz;
    v_msgs  jsonb;
    v_total bigint;
BEGIN
    IF p_limit IS NULL OR p_limit < 0 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'limit must be a whole number from 0 to 1000' USING ERRCODE = '22023';
    END IF;
    IF p_offset IS NULL OR p_offset < 0 THEN
        RAISE EXCEPTION 'offset must be a whole number >= 0' USING ERRCODE = '22023';
    END IF;
    IF p_queue IS NOT NULL THEN
        PERFORM queen.reserved_queue_guard(p_queue);
    END IF;
    v_from := queen.admin_time_arg('from', p_from);
    v_to := queen.admin_time_arg('to', p_to);
    WITH m AS (
        SELECT d.*, q.name AS queue, p.name AS part
          FROM queen.consumer_dlq d
          JOIN queen.log_partitions p ON p.id = d.partition_id
          JOIN queen.queues q ON q.id = p.queue_id
         WHERE (p_queue IS NULL OR q.name = p_queue)
           AND NOT pg_catalog.starts_with(q.name, '__queen_')
           AND (p_partition IS NULL OR p.name = p_partition)
           AND (p_group IS NULL OR d.group_name = queen.consume_group(p_group))
           AND (v_from IS NULL OR d.failed_at >= v_from)
           AND (v_to IS NULL OR d.failed_at <= v_to))
    SELECT (SELECT count(*) FROM m),
           (SELECT COALESCE(jsonb_agg(x.o ORDER BY x.failed_at DESC, x.id DESC), '[]'::jsonb)
              FROM (SELECT m.id, m.failed_at,
                           jsonb_build_object('id', m.message_id, 'transactionId', m.transaction_id,
                                              'partitionId', queen.partition_uuid(m.partition_id),
                                              'queue', m.queue, 'partition', m.part,
                                              'consumerGroup', m.group_name,
                                              'errorMessage', m.error_message,
                                              'retryCount', m.retry_count, 'data', m.payload,
                                              'producerSub', NULL,
                                              'createdAt', queen.consume_iso(m.created_at),
                                              'failedAt', queen.consume_iso(m.failed_at)) AS o
                      FROM m ORDER BY m.failed_at DESC, m.id DESC
                     LIMIT p_limit OFFSET p_offset) x)
      INTO v_total, v_msgs;
    RETURN jsonb_build_object('messages', v_msgs,
                              'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset),
                              'total', v_total);
END
$$;
