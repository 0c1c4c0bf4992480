--
-- admin_queues: the queue and status views of Queen's admin API (issue 29,
-- sql/modules/90_admin_queues.sql): configure's namespace and task, the per-partition figures
-- (total, pending, processing, completed, dead letters) computed from offsets, cursors, leases
-- and the DLQ, their sums per queue, namespace, task and system, the overview's offset and time
-- lags (segment times pinned by hand), the status' top errors, and the bad arguments.
--
\i tests/regress/sql/sqlstate_of.psql
-- A clean slate: these figures are system-wide, and the tests before this one (same database)
-- leave queues and groups behind.
SELECT count(queen.delete_queue(name)) >= 0 AS queues_cleared FROM queen.queues;
SELECT count(queen.delete_consumer_group(g, true)) >= 0 AS groups_cleared
  FROM (SELECT group_name FROM queen.consumer_subscriptions
        UNION SELECT group_name FROM queen.consumer_state) s(g);
-- A view's answer without its clock-dependent fields (timestamps).
CREATE FUNCTION pg_temp.strip(j jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
BEGIN
    IF jsonb_typeof(j) = 'object' THEN
        SELECT COALESCE(jsonb_object_agg(k, pg_temp.strip(v)), '{}') INTO r FROM jsonb_each(j) AS e(k, v)
         WHERE k NOT IN ('createdAt', 'newestMessage', 'timestamp', 'from', 'to', 'timeRange', 'id');
        RETURN r;
    ELSIF jsonb_typeof(j) = 'array' THEN
        SELECT COALESCE(jsonb_agg(pg_temp.strip(v) ORDER BY n), '[]') INTO r
          FROM jsonb_array_elements(j) WITH ORDINALITY AS e(v, n);
        RETURN r;
    END IF;
    RETURN j;
END $$;
CREATE FUNCTION pg_temp.ack_of(r jsonb, n int, status text) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT jsonb_build_object('transactionId', r -> 'messages' -> n -> 'transactionId',
                              'partitionId', r -> 'messages' -> n -> 'partitionId',
                              'status', status) $$;

-- An empty system.
SELECT pg_temp.strip(queen.admin_overview()) AS empty_overview;
SELECT queen.admin_queues('resources') AS empty_list;

-- configure stores and echoes namespace and task (full replace: unsent = cleared).
SELECT c ->> 'namespace' AS ns, c ->> 'task' AS task, c ->> 'configured' AS configured
  FROM queen.configure('aq_a', '{"retryLimit": 0, "leaseTime": 60}', 'billing', 'invoices') c;
SELECT c -> 'namespace' AS ns, c -> 'task' AS task
  FROM queen.configure('aq_b', '{"leaseTime": 60}') c;
SELECT c ->> 'namespace' AS ns, c -> 'task' AS task
  FROM queen.configure('aq_c', '{"leaseTime": 60}', 'billing', NULL) c;
SELECT name, namespace, task FROM queen.queues WHERE name LIKE 'aq\_%' ORDER BY name;
-- queen's own form is unchanged (no namespace, task in its answer)
SELECT queen.configure('aq_own', '{"dedupWindowSeconds": 60}') AS own_form;
SELECT queen.drop_queue('aq_own');

-- aq_a: p1 holds 5 messages, p2 3; aq_b: Default and x (2).
SELECT count(*) FROM queen.push('aq_a', 'p1', '[{"payload":1},{"payload":2},{"payload":3},{"payload":4},{"payload":5}]');
SELECT count(*) FROM queen.push('aq_a', 'p2', '[{"payload":1},{"payload":2},{"payload":3}]');
SELECT count(*) FROM queen.push('aq_b', 'x', '[{"payload":1},{"payload":2}]');

-- queue mode on p1: pops 2, acks the first: cursor 0, a live lease of 2 with 1 acked.
CREATE TEMP TABLE qm AS SELECT queen.pop('aq_a', 'p1', NULL, 2) AS r;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'completed')))) ->> 'success' AS acked FROM qm;
-- group g1 on p1: pops 4 and acks them all (cursor 3).
CREATE TEMP TABLE g1 AS SELECT queen.pop('aq_a', 'p1', 'g1', 4) AS r;
SELECT count(*) AS acked FROM g1, jsonb_array_elements(queen.ack_messages(jsonb_build_array(
    pg_temp.ack_of(r, 0, 'completed'), pg_temp.ack_of(r, 1, 'completed'),
    pg_temp.ack_of(r, 2, 'completed'), pg_temp.ack_of(r, 3, 'completed')), 'g1')) a
 WHERE (a ->> 'success')::boolean;
-- queue mode on p2: pops 1 and nacks it (retryLimit 0: to the DLQ, cursor past it).
CREATE TEMP TABLE qm2 AS SELECT queen.pop('aq_a', 'p2', NULL, 1) AS r;
SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'failed')))) ->> 'success' AS nacked FROM qm2;
SELECT count(*) AS dlq_rows FROM queen.consumer_dlq;

-- Per partition, the largest over groups: p1 total 5, queue mode pending 4 (processing 1),
-- g1 pending 1, completed max(1, 4) = 4; p2 total 3, pending 2, dead letter 1, completed 0;
-- Default of aq_a: nothing.
SELECT partition_id IS NOT NULL AS has_id, name, total, pending, processing, completed, dead_letter, consumed
  FROM queen.admin_partition_figures(ARRAY(SELECT id FROM queen.queues WHERE name = 'aq_a'))
 ORDER BY name;

-- The lists (newest first).
SELECT pg_temp.strip(queen.admin_queues('resources')) AS resources_queues;
SELECT pg_temp.strip(queen.admin_queues('status', 100, 0, 'billing')) AS status_queues_billing;
SELECT pg_temp.strip(queen.admin_queues('status', 1, 1)) AS status_queues_page;
SELECT pg_temp.strip(queen.admin_queues('resources', 10, 0, NULL, 'invoices')) AS by_task;
-- One queue.
SELECT pg_temp.strip(queen.admin_queue('aq_a')) AS resources_queue;
SELECT pg_temp.strip(queen.admin_queue('aq_a', 1, 1)) -> 'partitions' AS second_partition_only;
SELECT (queen.admin_queue('aq_a') -> 'partitions' -> 1 ->> 'id')
       = queen.partition_uuid(queen.partition_id('aq_a', 'p1'))::text AS wire_partition_id;
SELECT pg_temp.strip(queen.admin_queue_detail('aq_a')) AS status_queue;
SELECT pg_temp.strip(queen.admin_partitions('aq_b')) AS partitions_b;
SELECT jsonb_array_length(queen.admin_partitions() -> 'partitions') AS all_partitions;
-- Namespaces, tasks, overview, status.
SELECT queen.admin_groupings('namespace') AS namespaces;
SELECT queen.admin_groupings('task') AS tasks;
-- The overview's time lags pinned: each partition's one segment pushed 100 s (aq_a/p1), 40 s
-- (aq_a/p2) and 10 s (aq_b/x) before the overview's clock (now(), one transaction): the
-- lagging partitions' oldest pending ages 100, 40, 10 (avg 50, median 40); the offset lag
-- over all six partitions (pending 4, 2, 2, 0, 0, 0): avg 1 (8/6), median 1, min 0, max 4.
BEGIN;
UPDATE queen.log_segments s SET created_at = now() - v.age * interval '1 second'
  FROM (VALUES ('aq_a', 'p1', 100), ('aq_a', 'p2', 40), ('aq_b', 'x', 10)) v(q, p, age)
 WHERE s.partition_id = queen.partition_id(v.q, v.p);
SELECT pg_temp.strip(queen.admin_overview()) AS overview;
COMMIT;
SELECT pg_temp.strip(queen.admin_status()) AS status;
SELECT pg_temp.strip(queen.admin_status(NULL, NULL, 'aq_b')) AS status_b;
SELECT queen.admin_status(now() - interval '7 days', now()) -> 'bucketMinutes' AS week_buckets;
-- Analytics: the retained messages per bucket.
SELECT (SELECT sum((p ->> 'messages')::int) FROM jsonb_array_elements(a -> 'dataPoints') p) AS messages,
       jsonb_array_length(a -> 'dataPoints') BETWEEN 3 AND 4 AS points, a ->> 'interval' AS iv
  FROM queen.admin_analytics(now() - interval '2 hours', now() + interval '1 minute') a;
SELECT (SELECT sum((p ->> 'messages')::int) FROM jsonb_array_elements(a -> 'dataPoints') p) AS messages_b
  FROM queen.admin_analytics(now() - interval '1 hour', now() + interval '1 minute', 'minute', 'aq_b') a;
SELECT jsonb_array_length(queen.admin_analytics(NULL, NULL, 'day') -> 'dataPoints') BETWEEN 1 AND 2 AS default_day;

-- Bad arguments and unknown queues.
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_queue('nope')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_queue_detail('nope')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_partitions('nope')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_queue('__queen_x')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_queues('resources', 10001)$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_queues('resources', 10, -1)$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_queues('other')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_analytics(NULL, NULL, 'week')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_analytics(now(), now() - interval '1 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_analytics(now() - interval '30 days', now(), 'minute')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_status(now(), now() - interval '1 s')$$);
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_groupings('color')$$);

-- A lease that expired is not processing.
UPDATE queen.consumer_state SET lease_expires_at = now() - interval '1 s'
 WHERE group_name = '__QUEUE_MODE__' AND lease_id IS NOT NULL;
SELECT name, pending, processing FROM queen.admin_partition_figures(
    ARRAY(SELECT id FROM queen.queues WHERE name = 'aq_a')) ORDER BY name;

-- A group's first lease on a partition (a state row, no cursor yet) is processing: group g2
-- pops both messages of aq_b/x: pending 2, processing 2 (until 0.4.0 it showed 0).
SELECT jsonb_array_length(queen.pop('aq_b', 'x', 'g2', 2) -> 'messages') AS popped;
SELECT name, total, pending, processing, completed, consumed FROM queen.admin_partition_figures(
    ARRAY(SELECT id FROM queen.queues WHERE name = 'aq_b')) ORDER BY name;

SELECT queen.drop_queue('aq_a'), queen.drop_queue('aq_b'), queen.drop_queue('aq_c');

-- The time lag of a partition is its worst-lagging group's (the one furthest behind): the age
-- of the segment holding that group's cursor + 1, not of the partition's first segment.
-- aq_lag/p: three segments (offsets 0, 1-2, 3) pushed 300, 200 and 100 s before the clock;
-- g1 acked offset 0 and g2 offsets 0-2: the worst is g1 (pending 3), its oldest pending
-- message offset 1 (200 s). aq_lag/done: g1 consumed its one message (nothing pending, no
-- time lag). aq_lag/fresh: 2 messages 20 s old that no group reads (pending 2, 20 s).
SELECT count(*) FROM queen.push('aq_lag', 'p', '[{"payload":0}]');
SELECT count(*) FROM queen.push('aq_lag', 'p', '[{"payload":1},{"payload":2}]');
SELECT count(*) FROM queen.push('aq_lag', 'p', '[{"payload":3}]');
SELECT count(*) FROM queen.push('aq_lag', 'done', '[{"payload":0}]');
SELECT count(*) FROM queen.push('aq_lag', 'fresh', '[{"payload":0},{"payload":1}]');
CREATE TEMP TABLE lg1 AS SELECT queen.pop('aq_lag', 'p', 'g1', 1) AS r;
CREATE TEMP TABLE lg2 AS SELECT queen.pop('aq_lag', 'p', 'g2', 3) AS r;
CREATE TEMP TABLE lg3 AS SELECT queen.pop('aq_lag', 'done', 'g1', 1) AS r;
SELECT count(*) AS acked FROM (
    SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'completed')), 'g1')) a FROM lg1
    UNION ALL
    SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'completed'),
        pg_temp.ack_of(r, 1, 'completed'), pg_temp.ack_of(r, 2, 'completed')), 'g2')) FROM lg2
    UNION ALL
    SELECT jsonb_array_elements(queen.ack_messages(jsonb_build_array(pg_temp.ack_of(r, 0, 'completed')), 'g1')) FROM lg3) x
 WHERE (a ->> 'success')::boolean;
SELECT name, total, pending FROM queen.admin_partition_figures(
    ARRAY(SELECT id FROM queen.queues WHERE name = 'aq_lag')) ORDER BY name;
-- time over the lagging p (200) and fresh (20): avg 110, median 110, min 20, max 200; offset
-- over p, done, fresh (3, 0, 2): avg 2 (5/3), median 2, min 0, max 3.
BEGIN;
UPDATE queen.log_segments s SET created_at = now() - v.age * interval '1 second'
  FROM (VALUES ('p', 0, 300), ('p', 1, 200), ('p', 3, 100), ('done', 0, 50), ('fresh', 0, 20)) v(p, base, age)
 WHERE s.partition_id = queen.partition_id('aq_lag', v.p) AND s.base_offset = v.base;
SELECT queen.admin_overview() -> 'lag' AS lag;
-- the group views agree on p: g1's time lag 200 s, g2's 100 s
SELECT v.g AS grp, p -> 'timeLagSeconds' AS time_lag, p -> 'offsetLag' AS offset_lag
  FROM (VALUES ('g1'), ('g2')) v(g)
 CROSS JOIN LATERAL jsonb_each(queen.admin_consumer_group(v.g)) g
 CROSS JOIN LATERAL jsonb_array_elements(g.value -> 'partitions') p
 WHERE p ->> 'partition' = 'p' AND g.key = 'aq_lag'
 ORDER BY v.g;
COMMIT;
-- A clock behind a segment's time (it stepped back) reads as no lag, never a negative one.
BEGIN;
UPDATE queen.log_segments s SET created_at = now() + interval '1 hour'
 WHERE s.partition_id = queen.partition_id('aq_lag', 'fresh');
SELECT queen.admin_overview() -> 'lag' -> 'time' AS time_lag;
ROLLBACK;
-- no dead letter: topErrors []
SELECT queen.admin_status(NULL, NULL, 'aq_lag') -> 'deadLetterQueue' AS dlq_none;
SELECT queen.drop_queue('aq_lag');

-- topErrors: the 5 error messages most dead letters carry, most first, then by text ("C").
-- aq_dlq (retryLimit 0): 7 messages nacked with the errors boom, boom, bad, c1..c4; and one
-- with none ("Retries exhausted"): 7 distinct errors, 8 dead letters.
SELECT c ->> 'configured' AS configured FROM queen.configure('aq_dlq', '{"retryLimit": 0}') c;
SELECT count(*) FROM queen.push('aq_dlq', 'p', '[{"payload":0},{"payload":1},{"payload":2},{"payload":3},{"payload":4},{"payload":5},{"payload":6},{"payload":7}]');
CREATE TEMP TABLE dq AS SELECT queen.pop('aq_dlq', 'p', NULL, 8) AS r;
SELECT count(*) AS nacked FROM dq, jsonb_array_elements(queen.ack_messages((
    SELECT jsonb_agg(pg_temp.ack_of(r, n::int - 1, 'failed')
                     || CASE WHEN e IS NULL THEN '{}' ELSE jsonb_build_object('error', e) END ORDER BY n)
      FROM unnest(ARRAY['boom', 'c4', 'bad', 'boom', 'c2', 'c3', 'c1', NULL]) WITH ORDINALITY u(e, n)))) a
 WHERE (a ->> 'success')::boolean;
SELECT queen.admin_status(NULL, NULL, 'aq_dlq') -> 'deadLetterQueue' AS dlq;
SELECT queen.drop_queue('aq_dlq');

-- Names sort in collation "C", as the broker's ORDER BY name does digit by digit (p10 before
-- p2; docs/queen-compatibility.md, "Order by name"): a queue's partitions and a group's.
SELECT count(*) FROM (VALUES ('p2'), ('p10'), ('p1'), ('a'), ('B')) v(p),
       queen.push('aq_ord', v.p, '[{"payload":0}]');
SELECT count(*) AS popped FROM (VALUES ('p2'), ('p10'), ('p1'), ('a'), ('B')) v(p),
       jsonb_array_elements(queen.pop('aq_ord', v.p, 'g_ord', 1) -> 'messages');
SELECT jsonb_path_query_array(queen.admin_queue('aq_ord'), '$.partitions[*].name') AS queue_order,
       jsonb_path_query_array(queen.admin_queue_detail('aq_ord'), '$.partitions[*].name') AS detail_order,
       jsonb_path_query_array(queen.admin_partitions('aq_ord'), '$.partitions[*].name') AS partitions_order,
       jsonb_path_query_array(queen.admin_consumer_group('g_ord'), '$.aq_ord.partitions[*].partition') AS group_order;
SELECT queen.drop_queue('aq_ord') ->> 'partitionsDropped' AS dropped,
       queen.delete_consumer_group('g_ord', true) ->> 'success' AS group_deleted;
