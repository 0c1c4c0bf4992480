-- queen: the queue and status views of Queen's admin API (issue 29): the queue list, one queue,
-- its partitions, namespaces, tasks, the overview, the status and the analytics series, as the
-- broker's procedures answer them (get_queues_v2, get_queue_v2, get_namespaces_v2, get_tasks_v2,
-- get_system_overview_v3, get_status_v3, get_status_queues_v2, get_queue_detail_v2,
-- get_analytics_v1). The sidecar serves them (sidecar/api/admin_queue_routes.cpp);
-- docs/queen-compatibility.md lists each route and its differences.
--
-- The figures, computed at each call from the offsets (never a stored copy that can drift):
-- a partition retains the offsets log_start..last_offset, so for a partition p and a consumer
-- group g (a queen.consumer_groups row: its cursor committed_offset c, -1 when g has only a
-- queen.consumer_state row there, as at its first lease; its state row: the lease, batch_size,
-- acked_count):
--   total       = last_offset - log_start + 1   the retained messages (>= 0)
--   pending_g   = last_offset - max(c, log_start - 1)
--                                              not yet committed by g (in a lease or not)
--   processing_g = batch_size - acked_count, at most pending_g, while g's lease is live
--                  (lease_id set, lease_expires_at > now()), else 0
--   deadLetter_g = g's queen.consumer_dlq rows on p
--   completed_g = total - pending_g - deadLetter_g (>= 0): committed and not dead-lettered
-- A partition's figure is the largest over its groups (the broker's rule: the worst-lagging
-- group's view of the partition); a partition no group has a cursor on has pending = total
-- and the rest 0. A queue's, namespace's, task's or the system's figure is the sum over its
-- partitions. Where the broker answers pending without the processing ones (the queue list,
-- namespaces, tasks, the overview), pending here is the sum of pending minus the sum of
-- processing (>= 0); the one-queue views and the status list answer pending with them, as it
-- does. consumed (cursor.totalConsumed) = the sum over groups of c + 1: every offset a group
-- moved past, retained or not.
-- Cost: one pass over the partitions concerned (log_partitions_queue_idx) hash-joined with their
-- consumer_groups, consumer_state and consumer_dlq rows; never a read of messages (1 queue of
-- 1M messages in 10,000 partitions: 55-65 ms a summary route over HTTP; docs/queen-compatibility.md). The analytics series reads queen.log_segments
-- rows (one per pushed segment, not per message) of the time range asked.
-- Locks: none. Every function is STABLE: the whole answer is read in one snapshot, the one the
-- writes of offsets, cursors and leases (made under their partition and state row locks,
-- sql/modules/00_core.sql) committed into, so its figures are consistent with one another.
-- Queues whose names start with "__queen_" (internal) are never listed.
-- Names sort in collation "C" (byte order: p10 before p2, B before a), wherever a list is
-- ordered by name; the broker's ORDER BY name uses its database's collation, which puts p10
-- before p2 too (docs/queen-compatibility.md, "Order by name"); "C" keeps the order, and so
-- the pages, independent of the database's locale.

-- A timestamp as the broker writes it (UTC, milliseconds, Z); NULL stays NULL. Internal.
CREATE OR REPLACE FUNCTION queen.admin_ts(p_ts timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.to_char(p_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- The figures of every partition of the queues p_queue_ids (the header above), or of those of
-- them in p_pids when given. Set-based (hash joins over the partitions' cursor, state and
-- dead-letter rows), so its cost is linear in the partitions and their groups. Internal.
CREATE OR REPLACE FUNCTION queen.admin_partition_figures(p_queue_ids bigint[],
                                                         p_pids bigint[] DEFAULT NULL)
RETURNS TABLE (queue_id bigint, partition_id bigint, name text, created_at timestamptz,
               total bigint, pending bigint, processing bigint, completed bigint,
               dead_letter bigint, consumed bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH p AS MATERIALIZED (
        SELECT p.queue_id, p.id, p.name, p.created_at, e.last_offset, p.log_start,
               pg_catalog.int8larger(e.last_offset - p.log_start + 1, 0) AS total
          FROM queen.log_partitions p
         CROSS JOIN LATERAL (SELECT queen.log_end(p.id, p.last_offset) AS last_offset) e
         WHERE p.queue_id = ANY (p_queue_ids)
           AND (p_pids IS NULL OR p.id = ANY (p_pids))),
    d AS (
        SELECT d.partition_id, d.group_name, count(*) AS n
          FROM queen.consumer_dlq d
         WHERE d.partition_id IN (SELECT p.id FROM p)
         GROUP BY 1, 2),
    -- the (partition, group) pairs: a cursor or a state row (a group's first lease on a
    -- partition has a state row and no cursor yet: cursor -1, as the pop reads it)
    k AS (
        SELECT cg.partition_id, cg.group_name FROM queen.consumer_groups cg
         WHERE cg.partition_id IN (SELECT p.id FROM p)
        UNION
        SELECT cs.partition_id, cs.group_name FROM queen.consumer_state cs
         WHERE cs.partition_id IN (SELECT p.id FROM p)),
    y AS (
        SELECT k.partition_id, p.total,
               pg_catalog.int8larger(p.last_offset - pg_catalog.int8larger(
                   COALESCE(cg.committed_offset, -1), p.log_start - 1), 0) AS pending,
               pg_catalog.int8larger(COALESCE(cg.committed_offset, -1) + 1, 0) AS consumed,
               cs.lease_id, cs.lease_expires_at,
               COALESCE(cs.batch_size, 0)::bigint AS batch_size,
               COALESCE(cs.acked_count, 0)::bigint AS acked_count,
               COALESCE(d.n, 0) AS dlq
          FROM k
          JOIN p ON p.id = k.partition_id
          LEFT JOIN queen.consumer_groups cg
            ON cg.partition_id = k.partition_id AND cg.group_name = k.group_name
          LEFT JOIN queen.consumer_state cs
            ON cs.partition_id = k.partition_id AND cs.group_name = k.group_name
          LEFT JOIN d ON d.partition_id = k.partition_id AND d.group_name = k.group_name),
    g AS (
        SELECT y.partition_id, max(y.pending) AS pending,
               max(CASE WHEN y.lease_id IS NOT NULL AND y.lease_expires_at > pg_catalog.now()
                        THEN pg_catalog.int8smaller(
                                 pg_catalog.int8larger(y.batch_size - y.acked_count, 0), y.pending)
                        ELSE 0 END) AS processing,
               max(pg_catalog.int8larger(y.total - y.pending - y.dlq, 0)) AS completed,
               max(y.dlq) AS dead_letter, sum(y.consumed)::bigint AS consumed
          FROM y GROUP BY y.partition_id)
    SELECT p.queue_id, p.id, p.name, p.created_at, p.total,
           COALESCE(g.pending, p.total), COALESCE(g.processing, 0), COALESCE(g.completed, 0),
           COALESCE(g.dead_letter, 0), COALESCE(g.consumed, 0)
      FROM p LEFT JOIN g ON g.partition_id = p.id
$$;

-- The queues listed (names not "__queen_"), filtered by exact namespace, task and name when
-- given, in the broker's order (newest first, then name). Internal.
CREATE OR REPLACE FUNCTION queen.admin_queue_set(p_namespace text, p_task text, p_queue text)
RETURNS SETOF queen.queues
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT q.* FROM queen.queues q
     WHERE NOT pg_catalog.starts_with(q.name, '__queen_')
       AND (p_namespace IS NULL OR q.namespace = p_namespace)
       AND (p_task IS NULL OR q.task = p_task)
       AND (p_queue IS NULL OR q.name = p_queue)
     ORDER BY q.created_at DESC, q.name COLLATE "C"
$$;

-- limit and offset of a list: 22023 unless 0 <= offset and 0 <= limit <= p_cap. Internal.
CREATE OR REPLACE FUNCTION queen.admin_check_page(p_limit int, p_offset int, p_cap int) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_limit IS NULL OR p_limit < 0 OR p_limit > p_cap THEN
        RAISE EXCEPTION 'limit must be a whole number from 0 to %', p_cap USING ERRCODE = '22023';
    END IF;
    IF p_offset IS NULL OR p_offset < 0 THEN
        RAISE EXCEPTION 'offset must be a whole number >= 0' USING ERRCODE = '22023';
    END IF;
END
$$;

-- GET /api/v1/resources/queues and /api/v1/status/queues: one page of queues (at most 10,000)
-- with their figures. p_form 'resources': {queues:[{id, name, namespace, task, createdAt,
-- partitions, messages:{total, pending (without processing), processing, completed,
-- deadLetter}}]}; 'status': {queues:[... messages:{total, pending (with processing),
-- processing, completed, deadLetter}], pagination:{limit, offset}}.
CREATE OR REPLACE FUNCTION queen.admin_queues(p_form text, p_limit int DEFAULT 1000,
                                              p_offset int DEFAULT 0, p_namespace text DEFAULT NULL,
                                              p_task text DEFAULT NULL, p_queue text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ids  bigint[];
    v_list jsonb;
BEGIN
    IF p_form IS NULL OR p_form NOT IN ('resources', 'status') THEN
        RAISE EXCEPTION 'form must be "resources" or "status"' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.admin_check_page(p_limit, p_offset, 10000);
    SELECT pg_catalog.array_agg(s.id) INTO v_ids
      FROM (SELECT q.id FROM queen.admin_queue_set(p_namespace, p_task, p_queue) q
            LIMIT p_limit OFFSET p_offset) s;
    WITH f AS (
        SELECT f.queue_id, count(*) AS partitions, sum(f.total) AS total,
               sum(f.pending) AS pending, sum(f.processing) AS processing,
               sum(f.completed) AS completed, sum(f.dead_letter) AS dead_letter
          FROM queen.admin_partition_figures(COALESCE(v_ids, '{}')) f
         GROUP BY f.queue_id)
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
               'id', q.id, 'name', q.name, 'namespace', q.namespace, 'task', q.task,
               'createdAt', queen.admin_ts(q.created_at),
               'partitions', COALESCE(f.partitions, 0),
               'messages', jsonb_build_object(
                   'total', COALESCE(f.total, 0),
                   'pending', CASE WHEN p_form = 'status' THEN COALESCE(f.pending, 0)
                                   ELSE GREATEST(COALESCE(f.pending - f.processing, 0), 0) END,
                   'processing', COALESCE(f.processing, 0),
                   'completed', COALESCE(f.completed, 0),
                   'deadLetter', COALESCE(f.dead_letter, 0)))
               ORDER BY q.created_at DESC, q.name COLLATE "C"), '[]'::jsonb)
      INTO v_list
      FROM queen.queues q LEFT JOIN f ON f.queue_id = q.id
     WHERE q.id = ANY (COALESCE(v_ids, '{}'));
    IF p_form = 'status' THEN
        RETURN jsonb_build_object('queues', v_list,
                                  'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
    END IF;
    RETURN jsonb_build_object('queues', v_list);
END
$$;

-- One partition's object of the one-queue views. Internal.
CREATE OR REPLACE FUNCTION queen.admin_partition_json(p_id bigint, p_name text,
                                                      p_created timestamptz, p_total bigint,
                                                      p_pending bigint, p_processing bigint,
                                                      p_completed bigint, p_dead bigint)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_build_object(
        'id', queen.partition_uuid(p_id), 'name', p_name,
        'createdAt', queen.admin_ts(p_created),
        'stats', jsonb_build_object('total', p_total, 'pending', p_pending,
                                    'processing', p_processing, 'completed', p_completed,
                                    'failed', 0, 'deadLetter', p_dead),
        'oldestMessage', NULL,
        'newestMessage', (SELECT queen.admin_ts(s.created_at) FROM queen.log_segments s
                           WHERE s.partition_id = p_id ORDER BY s.base_offset DESC LIMIT 1))
$$;

-- The queue named p_queue, listed (not "__queen_"); 42704 "Queue not found" otherwise. Internal.
CREATE OR REPLACE FUNCTION queen.admin_queue_row(p_queue text) RETURNS queen.queues
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q queen.queues;
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_q FROM queen.queues WHERE name = p_queue
       AND NOT pg_catalog.starts_with(name, '__queen_');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Queue not found' USING ERRCODE = '42704';
    END IF;
    RETURN v_q;
END
$$;

-- GET /api/v1/resources/queues/:queue: {id, name, namespace, task, createdAt, options (Queen's
-- 15 as stored), partitions:[{id, name, createdAt, stats:{total, pending, processing, completed,
-- failed, deadLetter}, oldestMessage, newestMessage}] (by name, one page: p_limit at most
-- 10,000), totals:{the same six, over every partition}}; 42704 for an unknown queue.
CREATE OR REPLACE FUNCTION queen.admin_queue(p_queue text, p_limit int DEFAULT 10000,
                                             p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q      queen.queues := queen.admin_queue_row(p_queue);
    v_parts  jsonb;
    v_totals jsonb;
BEGIN
    PERFORM queen.admin_check_page(p_limit, p_offset, 10000);
    WITH f AS MATERIALIZED (SELECT * FROM queen.admin_partition_figures(ARRAY[v_q.id])),
         page AS (SELECT * FROM f ORDER BY f.name COLLATE "C" LIMIT p_limit OFFSET p_offset)
    SELECT jsonb_build_object('total', COALESCE(sum(f.total), 0),
                              'pending', COALESCE(sum(f.pending), 0),
                              'processing', COALESCE(sum(f.processing), 0),
                              'completed', COALESCE(sum(f.completed), 0),
                              'failed', 0,
                              'deadLetter', COALESCE(sum(f.dead_letter), 0)),
           COALESCE((SELECT jsonb_agg(queen.admin_partition_json(a.partition_id, a.name,
                                          a.created_at, a.total, a.pending, a.processing,
                                          a.completed, a.dead_letter)
                                      ORDER BY a.name COLLATE "C")
                       FROM page a), '[]'::jsonb)
      INTO v_totals, v_parts
      FROM f;
    RETURN jsonb_build_object(
        'id', v_q.id, 'name', v_q.name, 'namespace', v_q.namespace, 'task', v_q.task,
        'createdAt', queen.admin_ts(v_q.created_at),
        'options', COALESCE((SELECT o.options FROM queen.queue_options o WHERE o.queue_id = v_q.id),
                            queen.consume_defaults()),
        'partitions', v_parts, 'totals', v_totals);
END
$$;

-- GET /api/v1/status/queues/:queue: {queue:{id, name, namespace, task, priority, createdAt,
-- config:{leaseTime, retryLimit, retryDelay, ttl, maxQueueSize, deadLetterQueue}},
-- partitions:[{id, name, createdAt, messages:{...}, stats:{...} (the same six figures),
-- cursor:{totalConsumed, batchesConsumed (not recorded: 0)}, lastActivity (not recorded:
-- null), oldestMessage, newestMessage}] (every partition, by name, at most 10,000 a page),
-- totals:{messages:{...}, and the six again}}; 42704 for an unknown queue.
CREATE OR REPLACE FUNCTION queen.admin_queue_detail(p_queue text, p_limit int DEFAULT 10000,
                                                    p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q      queen.queues := queen.admin_queue_row(p_queue);
    v_opts   jsonb;
    v_parts  jsonb;
    v_six    jsonb;
BEGIN
    PERFORM queen.admin_check_page(p_limit, p_offset, 10000);
    v_opts := COALESCE((SELECT o.options FROM queen.queue_options o WHERE o.queue_id = v_q.id),
                       queen.consume_defaults());
    WITH f AS MATERIALIZED (SELECT * FROM queen.admin_partition_figures(ARRAY[v_q.id])),
         page AS (SELECT * FROM f ORDER BY f.name COLLATE "C" LIMIT p_limit OFFSET p_offset)
    SELECT jsonb_build_object('total', COALESCE(sum(f.total), 0),
                              'pending', COALESCE(sum(f.pending), 0),
                              'processing', COALESCE(sum(f.processing), 0),
                              'completed', COALESCE(sum(f.completed), 0),
                              'failed', 0,
                              'deadLetter', COALESCE(sum(f.dead_letter), 0)),
           COALESCE((SELECT jsonb_agg(j.base - 'stats' || jsonb_build_object(
                                          'messages', j.base -> 'stats', 'stats', j.base -> 'stats',
                                          'cursor', jsonb_build_object('totalConsumed', a.consumed,
                                                                       'batchesConsumed', 0),
                                          'lastActivity', NULL)
                                      ORDER BY a.name COLLATE "C")
                       FROM page a
                      CROSS JOIN LATERAL (SELECT queen.admin_partition_json(a.partition_id, a.name,
                                              a.created_at, a.total, a.pending, a.processing,
                                              a.completed, a.dead_letter) AS base) j), '[]'::jsonb)
      INTO v_six, v_parts
      FROM f;
    RETURN jsonb_build_object(
        'queue', jsonb_build_object(
            'id', v_q.id, 'name', v_q.name, 'namespace', v_q.namespace, 'task', v_q.task,
            'priority', v_opts -> 'priority', 'createdAt', queen.admin_ts(v_q.created_at),
            'config', jsonb_build_object(
                'leaseTime', v_opts -> 'leaseTime', 'retryLimit', v_opts -> 'retryLimit',
                'retryDelay', v_opts -> 'retryDelay', 'ttl', v_opts -> 'ttl',
                'maxQueueSize', v_opts -> 'maxSize', 'deadLetterQueue', v_opts -> 'deadLetterQueue')),
        'partitions', v_parts,
        'totals', jsonb_build_object('messages', v_six) || v_six);
END
$$;

-- GET /api/v1/resources/partitions?queue&limit&offset (no broker route; the client's
-- getPartitions): {partitions:[{id, name, queue, createdAt, stats:{...}, oldestMessage,
-- newestMessage}], pagination:{limit, offset}}: one page (at most 10,000) of the partitions of
-- one queue (42704 when unknown) or of every listed queue, by queue then partition name.
CREATE OR REPLACE FUNCTION queen.admin_partitions(p_queue text DEFAULT NULL,
                                                  p_limit int DEFAULT 1000, p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ids   bigint[];
    v_parts jsonb;
BEGIN
    PERFORM queen.admin_check_page(p_limit, p_offset, 10000);
    IF p_queue IS NOT NULL THEN
        v_ids := ARRAY[(queen.admin_queue_row(p_queue)).id];
    ELSE
        SELECT pg_catalog.array_agg(q.id) INTO v_ids FROM queen.admin_queue_set(NULL, NULL, NULL) q;
    END IF;
    WITH page AS (
        SELECT p.id, p.name, q.name AS queue
          FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE p.queue_id = ANY (COALESCE(v_ids, '{}'))
         ORDER BY q.name COLLATE "C", p.name COLLATE "C"
         LIMIT p_limit OFFSET p_offset)
    SELECT COALESCE(jsonb_agg(queen.admin_partition_json(f.partition_id, f.name, f.created_at,
                                  f.total, f.pending, f.processing, f.completed, f.dead_letter)
                              || jsonb_build_object('queue', page.queue)
                              ORDER BY page.queue COLLATE "C", page.name COLLATE "C"), '[]'::jsonb)
      INTO v_parts
      FROM page
      JOIN queen.admin_partition_figures(COALESCE(v_ids, '{}'),
                                         ARRAY(SELECT page.id FROM page)) f
        ON f.partition_id = page.id;
    RETURN jsonb_build_object('partitions', v_parts,
                              'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
END
$$;

-- GET /api/v1/resources/namespaces (p_kind 'namespace') and /api/v1/resources/tasks
-- ('task'): {namespaces|tasks:[{namespace|task, queues, partitions, messages:{total, pending
-- (without processing)}}]} over the queues that name one (by name).
CREATE OR REPLACE FUNCTION queen.admin_groupings(p_kind text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_list jsonb;
BEGIN
    IF p_kind IS NULL OR p_kind NOT IN ('namespace', 'task') THEN
        RAISE EXCEPTION 'kind must be "namespace" or "task"' USING ERRCODE = '22023';
    END IF;
    WITH q AS (
        SELECT s.id, CASE WHEN p_kind = 'namespace' THEN s.namespace ELSE s.task END AS k
          FROM queen.admin_queue_set(NULL, NULL, NULL) s),
    f AS (
        SELECT f.queue_id, count(*) AS partitions, sum(f.total) AS total,
               sum(f.pending) AS pending, sum(f.processing) AS processing
          FROM queen.admin_partition_figures(
                   ARRAY(SELECT q.id FROM q WHERE q.k IS NOT NULL)) f
         GROUP BY f.queue_id),
    g AS (
        SELECT q.k, count(*) AS queues, COALESCE(sum(f.partitions), 0) AS partitions,
               COALESCE(sum(f.total), 0) AS total,
               GREATEST(COALESCE(sum(f.pending), 0) - COALESCE(sum(f.processing), 0), 0) AS pending
          FROM q LEFT JOIN f ON f.queue_id = q.id
         WHERE q.k IS NOT NULL
         GROUP BY q.k)
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
               p_kind, g.k, 'queues', g.queues, 'partitions', g.partitions,
               'messages', jsonb_build_object('total', g.total, 'pending', g.pending))
               ORDER BY g.k COLLATE "C"), '[]'::jsonb)
      INTO v_list FROM g;
    RETURN jsonb_build_object(CASE WHEN p_kind = 'namespace' THEN 'namespaces' ELSE 'tasks' END,
                              v_list);
END
$$;

-- GET /api/v1/resources/overview: {queues, partitions, namespaces, tasks, messages:{total,
-- pending (without processing), processing, completed, failed (not recorded: 0), deadLetter},
-- lag:{time:{avg, median, min, max}, offset:{avg, median, min, max}}, throughput:
-- {ingestedPerSecond, processedPerSecond} (not recorded: 0), timestamp, statsAge (0: the
-- figures are live)}.
-- lag, whole numbers, over the listed queues' partitions, each seen as its worst-lagging group
-- sees it (the figures of queen.admin_partition_figures: the largest pending over its groups,
-- every retained message when no group reads it):
--   offset  the partitions' pending counts, over every partition (one with nothing pending
--           counts 0, as the broker's average does);
--   time    the age in whole seconds (at `timestamp`, the statement's now()) of each
--           partition's oldest pending message, computed as the group views compute it
--           (sql/modules/91_admin_groups.sql: the created_at of the log_segments row holding
--           offset last_offset - pending + 1, the cursor + 1 of the group furthest behind),
--           over the partitions with something pending (the broker's average skips those
--           without: their oldest pending time is null); all 0 when nothing is pending.
-- avg and median are rounded to the nearest whole number (halves away from zero); median is
-- the middle value (the mean of the two middle ones for an even count). The broker answers
-- the same fields in the same units (seconds, messages), read from its periodic statistics
-- table (get_system_overview_v3: averages over queues of per-queue figures, refreshed every
-- few seconds); its min and offset median are always 0. Cost: the figures' pass over the
-- partitions, plus one probe of the segments' primary key per partition with something
-- pending (no message read, no scan of the log).
CREATE OR REPLACE FUNCTION queen.admin_overview() RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ids bigint[];
    v_r   record;
BEGIN
    SELECT pg_catalog.array_agg(q.id) INTO v_ids FROM queen.admin_queue_set(NULL, NULL, NULL) q;
    WITH f AS MATERIALIZED (
        SELECT f.partition_id, f.total, f.pending, f.processing, f.completed, f.dead_letter
          FROM queen.admin_partition_figures(COALESCE(v_ids, '{}')) f),
    -- the age of each partition's oldest pending message: one probe of the segments' primary
    -- key, as queen.admin_group_members takes it
    t AS (
        SELECT pg_catalog.int8larger(
                   floor(extract(epoch FROM pg_catalog.now() - o.created_at))::bigint, 0) AS age
          FROM f
          JOIN queen.log_partitions p ON p.id = f.partition_id
         CROSS JOIN LATERAL (SELECT sg.created_at FROM queen.log_segments sg
                              WHERE sg.partition_id = f.partition_id
                                AND sg.base_offset <= queen.log_end(p.id, p.last_offset) - f.pending + 1
                              ORDER BY sg.base_offset DESC LIMIT 1) o
         WHERE f.pending > 0),
    a AS (
        SELECT count(*) AS partitions, COALESCE(sum(f.total), 0) AS total,
               COALESCE(sum(f.pending), 0) AS pending,
               COALESCE(sum(f.processing), 0) AS processing,
               COALESCE(sum(f.completed), 0) AS completed, COALESCE(sum(f.dead_letter), 0) AS dead,
               COALESCE(round(avg(f.pending)), 0)::bigint AS off_avg,
               COALESCE(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY f.pending))::numeric),
                        0)::bigint AS off_median,
               COALESCE(min(f.pending), 0) AS off_min, COALESCE(max(f.pending), 0) AS off_max
          FROM f),
    b AS (
        SELECT COALESCE(round(avg(t.age)), 0)::bigint AS t_avg,
               COALESCE(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY t.age))::numeric),
                        0)::bigint AS t_median,
               COALESCE(min(t.age), 0) AS t_min, COALESCE(max(t.age), 0) AS t_max
          FROM t)
    SELECT a.*, b.* INTO v_r FROM a, b;
    RETURN jsonb_build_object(
        'queues', COALESCE(pg_catalog.array_length(v_ids, 1), 0),
        'partitions', v_r.partitions,
        'namespaces', (SELECT count(DISTINCT q.namespace) FROM queen.queues q
                        WHERE q.id = ANY (COALESCE(v_ids, '{}'))),
        'tasks', (SELECT count(DISTINCT q.task) FROM queen.queues q
                   WHERE q.id = ANY (COALESCE(v_ids, '{}'))),
        'messages', jsonb_build_object(
            'total', v_r.total, 'pending', GREATEST(v_r.pending - v_r.processing, 0),
            'processing', v_r.processing, 'completed', v_r.completed, 'failed', 0,
            'deadLetter', v_r.dead),
        'lag', jsonb_build_object(
            'time', jsonb_build_object('avg', v_r.t_avg, 'median', v_r.t_median,
                                       'min', v_r.t_min, 'max', v_r.t_max),
            'offset', jsonb_build_object('avg', v_r.off_avg, 'median', v_r.off_median,
                                         'min', v_r.off_min, 'max', v_r.off_max)),
        'throughput', jsonb_build_object('ingestedPerSecond', 0, 'processedPerSecond', 0),
        'timestamp', queen.admin_ts(pg_catalog.now()),
        'statsAge', 0);
END
$$;

-- The broker's bucket for a time range of p_minutes minutes (get_status_v3). Internal.
CREATE OR REPLACE FUNCTION queen.admin_bucket_minutes(p_minutes numeric) RETURNS int
LANGUAGE sql IMMUTABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_minutes <= 60 THEN 1 WHEN p_minutes <= 360 THEN 5
                WHEN p_minutes <= 1440 THEN 15 WHEN p_minutes <= 10080 THEN 60 ELSE 360 END
$$;

-- GET /api/v1/status?from&to&queue&namespace&task: get_status_v3's shape. The counts queen
-- holds are real, over the queues the filters select: queues (those holding messages:
-- {id, name, namespace, task, partitions, totalConsumed}), messages {total, pending (without
-- processing), processing, completed, failed 0, deadLetter, requests and batchEfficiency 0},
-- leases (live ones: active, partitionsWithLeases, totalBatchSize, totalAcked),
-- deadLetterQueue {totalMessages, affectedPartitions, topErrors}, errors {dbErrors 0,
-- ackFailed 0, dlqMessages}. topErrors: [{error, count}], the 5 error messages most dead
-- letters of those counted in totalMessages carry (queen.consumer_dlq.error_message, as the
-- ack that dead-lettered each recorded it), most first, then by text ("C"); the shape the dashboard's DeadLetter view reads and Queen's
-- get_status_v1 answered (its get_status_v3 answers [] always). What queen does not record is
-- answered as the broker answers an empty system: throughput [] (pointCount 0), workers [].
-- from/to default to the last hour.
CREATE OR REPLACE FUNCTION queen.admin_status(p_from timestamptz DEFAULT NULL,
                                              p_to timestamptz DEFAULT NULL,
                                              p_queue text DEFAULT NULL,
                                              p_namespace text DEFAULT NULL,
                                              p_task text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_to    timestamptz := COALESCE(p_to, pg_catalog.now());
    v_from  timestamptz := COALESCE(p_from, COALESCE(p_to, pg_catalog.now()) - interval '1 hour');
    v_ids   bigint[];
    v_pids  bigint[];
    v_r     record;
    v_qs    jsonb;
    v_lease jsonb;
    v_dlq   record;
BEGIN
    IF v_from > v_to THEN
        RAISE EXCEPTION 'from must not be after to' USING ERRCODE = '22023';
    END IF;
    SELECT pg_catalog.array_agg(q.id) INTO v_ids
      FROM queen.admin_queue_set(p_namespace, p_task, p_queue) q;
    v_ids := COALESCE(v_ids, '{}');
    WITH f AS MATERIALIZED (SELECT * FROM queen.admin_partition_figures(v_ids)),
         t AS (SELECT COALESCE(sum(f.total), 0) AS total, COALESCE(sum(f.pending), 0) AS pending,
                      COALESCE(sum(f.processing), 0) AS processing,
                      COALESCE(sum(f.completed), 0) AS completed,
                      COALESCE(sum(f.dead_letter), 0) AS dead,
                      pg_catalog.array_agg(f.partition_id) AS pids FROM f),
         perq AS (SELECT f.queue_id, count(*) AS partitions, sum(f.total) AS total,
                         sum(f.consumed) AS consumed FROM f GROUP BY f.queue_id)
    SELECT t.*, (SELECT COALESCE(jsonb_agg(jsonb_build_object(
                     'id', q.id, 'name', q.name, 'namespace', q.namespace, 'task', q.task,
                     'partitions', perq.partitions, 'totalConsumed', perq.consumed)
                     ORDER BY q.created_at DESC, q.name COLLATE "C"), '[]'::jsonb)
                   FROM perq JOIN queen.queues q ON q.id = perq.queue_id
                  WHERE perq.total > 0) AS qs
      INTO v_r FROM t;
    v_pids := COALESCE(v_r.pids, '{}');
    SELECT jsonb_build_object('active', count(*),
                              'partitionsWithLeases', count(DISTINCT cs.partition_id),
                              'totalBatchSize', COALESCE(sum(cs.batch_size), 0),
                              'totalAcked', COALESCE(sum(cs.acked_count), 0))
      INTO v_lease
      FROM queen.consumer_state cs
     WHERE cs.partition_id = ANY (v_pids)
       AND cs.lease_id IS NOT NULL AND cs.lease_expires_at > pg_catalog.now();
    WITH e AS (
        SELECT d.partition_id, d.error_message FROM queen.consumer_dlq d
         WHERE d.partition_id = ANY (v_pids)),
    top AS (
        SELECT e.error_message, count(*) AS n FROM e GROUP BY e.error_message
         ORDER BY count(*) DESC, e.error_message COLLATE "C" LIMIT 5)
    SELECT (SELECT count(*) FROM e) AS n, (SELECT count(DISTINCT e.partition_id) FROM e) AS parts,
           (SELECT COALESCE(jsonb_agg(jsonb_build_object('error', top.error_message, 'count', top.n)
                                      ORDER BY top.n DESC, top.error_message COLLATE "C"),
                            '[]'::jsonb) FROM top) AS top_errors
      INTO v_dlq;
    RETURN jsonb_build_object(
        'timeRange', jsonb_build_object('from', queen.admin_ts(v_from), 'to', queen.admin_ts(v_to)),
        'bucketMinutes', queen.admin_bucket_minutes(extract(epoch FROM v_to - v_from) / 60),
        'pointCount', 0,
        'throughput', '[]'::jsonb,
        'queues', v_r.qs,
        'messages', jsonb_build_object(
            'total', v_r.total, 'pending', GREATEST(v_r.pending - v_r.processing, 0),
            'processing', v_r.processing, 'completed', v_r.completed, 'failed', 0,
            'deadLetter', v_r.dead,
            'requests', jsonb_build_object('push', 0, 'pop', 0, 'ack', 0),
            'batchEfficiency', jsonb_build_object('push', 0, 'pop', 0, 'ack', 0)),
        'leases', v_lease,
        'deadLetterQueue', jsonb_build_object('totalMessages', v_dlq.n,
                                              'affectedPartitions', v_dlq.parts,
                                              'topErrors', v_dlq.top_errors),
        'workers', '[]'::jsonb,
        'errors', jsonb_build_object('dbErrors', 0, 'ackFailed', 0, 'dlqMessages', v_dlq.n),
        'statsAge', 0);
END
$$;

-- GET /api/v1/status/analytics?from&to&interval&queue&namespace&task: get_analytics_v1's
-- {dataPoints:[{timestamp, messages}], interval, from, to}: per UTC bucket (minute, hour or
-- day; hour by default) from from's bucket to to's, the retained messages of the selected
-- queues pushed in it (a segment's messages share its push time, log_segments.created_at).
-- from/to default to the last 24 hours; at most 10,000 buckets (22023 beyond).
CREATE OR REPLACE FUNCTION queen.admin_analytics(p_from timestamptz DEFAULT NULL,
                                                 p_to timestamptz DEFAULT NULL,
                                                 p_interval text DEFAULT NULL,
                                                 p_queue text DEFAULT NULL,
                                                 p_namespace text DEFAULT NULL,
                                                 p_task text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_to   timestamptz := COALESCE(p_to, pg_catalog.now());
    v_from timestamptz := COALESCE(p_from, COALESCE(p_to, pg_catalog.now()) - interval '24 hours');
    v_iv   text := COALESCE(p_interval, 'hour');
    v_w    interval;
    v_ids  bigint[];
    v_pts  jsonb;
BEGIN
    IF v_iv NOT IN ('minute', 'hour', 'day') THEN
        RAISE EXCEPTION 'interval must be minute, hour or day' USING ERRCODE = '22023';
    END IF;
    IF v_from > v_to THEN
        RAISE EXCEPTION 'from must not be after to' USING ERRCODE = '22023';
    END IF;
    v_w := ('1 ' || v_iv)::interval;
    IF extract(epoch FROM pg_catalog.date_trunc(v_iv, v_to AT TIME ZONE 'UTC')
                          - pg_catalog.date_trunc(v_iv, v_from AT TIME ZONE 'UTC'))
       / extract(epoch FROM v_w) >= 10000 THEN
        RAISE EXCEPTION 'from..to spans more than 10000 buckets of one %', v_iv
            USING ERRCODE = '22023';
    END IF;
    SELECT pg_catalog.array_agg(q.id) INTO v_ids
      FROM queen.admin_queue_set(p_namespace, p_task, p_queue) q;
    WITH b AS (
        SELECT pg_catalog.generate_series(pg_catalog.date_trunc(v_iv, v_from AT TIME ZONE 'UTC'),
                                          pg_catalog.date_trunc(v_iv, v_to AT TIME ZONE 'UTC'),
                                          v_w) AS bucket),
    m AS (
        SELECT pg_catalog.date_trunc(v_iv, s.created_at AT TIME ZONE 'UTC') AS bucket,
               -- (a visible row ends at or below the log's end, queen.log_end)
               sum(s.end_offset - pg_catalog.int8larger(s.base_offset, p.log_start) + 1) AS n
          FROM queen.log_partitions p
          JOIN queen.log_segments s ON s.partition_id = p.id
         WHERE p.queue_id = ANY (COALESCE(v_ids, '{}'))
           AND s.created_at >= v_from AND s.created_at <= v_to
           AND s.end_offset >= p.log_start
         GROUP BY 1)
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
               'timestamp', pg_catalog.to_char(b.bucket, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'messages', COALESCE(m.n, 0)) ORDER BY b.bucket), '[]'::jsonb)
      INTO v_pts
      FROM b LEFT JOIN m ON m.bucket = b.bucket;
    RETURN jsonb_build_object('dataPoints', v_pts, 'interval', v_iv,
                              'from', queen.admin_ts(v_from), 'to', queen.admin_ts(v_to));
END
$$;
