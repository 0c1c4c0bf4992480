--
-- consume_pop: the consuming model of Queen's wire, pops (issue 18, docs/queen-compatibility.md).
-- Wire partition ids; configure with Queen's 15 options; queen.pop by partition and by queue:
-- leases per (partition, group) for leaseTime, an expired lease delivered again exactly once,
-- batch and partition caps under one lease id, fan-out to groups, delayedProcessing,
-- windowBuffer, subscription modes. Time moves through p_now, so nothing sleeps.
--
\i tests/regress/sql/sqlstate_of.psql
-- A pop's answer without its random parts: the top level (leaseId shown as whether it is a UUID,
-- partitionId as whether it is the UUID of the partition named), then one row per message.
CREATE FUNCTION pg_temp.head(r jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT (r - 'messages' - 'leaseId' - 'partitionId')
           || jsonb_build_object('leaseIsUuid', (r ->> 'leaseId') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$',
                                 'partitionIdOk', r ->> 'partitionId' =
                                     queen.partition_uuid(queen.partition_id(r ->> 'queue', r ->> 'partition'))::text,
                                 'count', jsonb_array_length(r -> 'messages')) $$;
CREATE FUNCTION pg_temp.msgs(r jsonb)
    RETURNS TABLE (n bigint, part text, data jsonb, grp text, same_lease boolean, txn_is_id boolean,
                   iso boolean, pid_ok boolean, nulls boolean)
    LANGUAGE sql AS $$
    SELECT o, m ->> 'partition', m -> 'data', m ->> 'consumerGroup', m ->> 'leaseId' = r ->> 'leaseId',
           m ->> 'transactionId' = m ->> 'id',
           (m ->> 'createdAt') ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$',
           m ->> 'partitionId' = queen.partition_uuid(queen.partition_id(r ->> 'queue', m ->> 'partition'))::text,
           m -> 'traceId' = 'null' AND m -> 'producerSub' = 'null'
      FROM jsonb_array_elements(r -> 'messages') WITH ORDINALITY e(m, o) ORDER BY o $$;

------------------------------------------------------------------------------------------
-- Partition ids on the wire: a UUID made of the id, and back.
------------------------------------------------------------------------------------------
SELECT queen.partition_uuid(1) AS one, queen.partition_uuid(255) AS ff,
       queen.partition_uuid(281474976710655) AS max, queen.partition_uuid(281474976710656) AS too_big,
       queen.partition_uuid(-1) AS negative;
SELECT t, queen.partition_of_uuid(t) AS id FROM unnest(ARRAY[
    '00000000-0000-8000-8000-000000000001', '00000000-0000-8000-8000-0000000000FF',
    '00000000-0000-8000-8000-ffffffffffff', '00000000-0000-8000-8000-00000000001',
    '10000000-0000-8000-8000-000000000001', '7', '', NULL]) AS t;
SELECT bool_and(queen.partition_of_uuid(queen.partition_uuid(i)::text) = i) AS round_trip
FROM (SELECT (random() * 281474976710655)::bigint AS i FROM generate_series(1, 1000)
      UNION ALL VALUES (0), (1), (4096), (281474976710655)) s;

------------------------------------------------------------------------------------------
-- configure with Queen's options: all 15 echoed as stored, unsent ones at their defaults,
-- "Default" created, queen's own options beside them.
------------------------------------------------------------------------------------------
CREATE TEMP TABLE cfg1 AS SELECT queen.configure('cpop_cfg', '{"leaseTime": 30, "retryLimit": 1,
    "maxSize": 10, "ttl": 5, "deadLetterQueue": true, "priority": -2, "dedupWindowSeconds": 60}') AS r;
SELECT r - 'queueId' - 'partitionId' AS answer,
       r ->> 'partitionId' = queen.partition_uuid(queen.partition_id('cpop_cfg', 'Default'))::text AS default_id,
       (r ->> 'queueId')::bigint = (SELECT id FROM queen.queues WHERE name = 'cpop_cfg') AS queue_id
FROM cfg1;
-- Upsert: unsent options go back to their defaults; retentionSeconds 0 keeps forever, like null;
-- in Queen's form retentionSeconds holds only with retentionEnabled (the broker's gate), and
-- maxWaitTimeSeconds is a rule of its own (tests/regress/sql/retention_options.sql), so the
-- stored age retention is null here, then 100.
SELECT r -> 'options' AS options, r -> 'retentionSeconds' AS kept_for, r -> 'dedupWindowSeconds' AS win
FROM queen.configure('cpop_cfg', '{"retentionSeconds": 0, "encryptionEnabled": true}') r;
SELECT (queen.configure('cpop_cfg', '{"retentionSeconds": 100, "maxWaitTimeSeconds": 40}')) -> 'retentionSeconds' AS kept_for;
SELECT retention_seconds AS stored FROM queen.queues WHERE name = 'cpop_cfg';
SELECT options FROM queen.queue_options WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'cpop_cfg');
SELECT (queen.configure('cpop_cfg', '{"retentionSeconds": 100, "maxWaitTimeSeconds": 40,
                                     "retentionEnabled": true}')) -> 'retentionSeconds' AS kept_for;
-- One partition "Default", however often configured.
SELECT count(*) AS partitions FROM queen.log_partitions
 WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'cpop_cfg');
-- queen's own options alone: the 0.2.0 answer, no partition created, Queen's options reset.
SELECT queen.configure('cpop_own', '{"dedupWindowSeconds": 10}') AS answer,
       (SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE q.name = 'cpop_own') AS partitions;
-- Bad options: 22023, nothing changed (an unknown key included: the sidecar drops those).
SELECT o AS options, pg_temp.sqlstate_of(format('SELECT queen.configure(%L, %L)', 'cpop_cfg', o)) AS sqlstate
FROM unnest(ARRAY[
    '{"leaseTime": -1}', '{"leaseTime": "30"}', '{"retryLimit": 1.5}', '{"priority": 2.5}',
    '{"encryptionEnabled": 1}', '{"deadLetterQueue": "yes"}', '{"maxSize": 99999999999}',
    '{"retentionSeconds": -1}', '{"namespace": "x"}']) AS o;
SELECT options -> 'maxWaitTimeSeconds' AS max_wait FROM queen.queue_options
 WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'cpop_cfg');

------------------------------------------------------------------------------------------
-- Empty answers are NULL (the wire's 204), never errors.
------------------------------------------------------------------------------------------
SELECT queen.pop('cpop_nope') IS NULL AS unknown_queue,
       queen.pop('cpop_cfg', 'nope') IS NULL AS unknown_partition,
       queen.pop('cpop_cfg', 'Default') IS NULL AS never_pushed,
       queen.pop('cpop_cfg') IS NULL AS only_empty_partitions;
SELECT b, m, pg_temp.sqlstate_of(format('SELECT queen.pop(%L, NULL, NULL, %s, %s)', 'cpop_cfg', b, m)) AS sqlstate
FROM (VALUES (0, 1), (1, 0), (-1, 1)) v(b, m);
SELECT pg_temp.sqlstate_of('SELECT queen.pop(NULL)') AS null_queue,
       pg_temp.sqlstate_of($$SELECT queen.pop('__queen_streams')$$) AS reserved;

------------------------------------------------------------------------------------------
-- The partition route: a lease per (partition, group).
------------------------------------------------------------------------------------------
SELECT queen.configure('cpop_q', '{"leaseTime": 30}') ->> 'configured' AS configured;
SELECT count(*) AS queued FROM queen.push('cpop_q', 'p1', '[{"payload":1},{"payload":2},{"payload":3}]');
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
CREATE TEMP TABLE pop1 AS SELECT queen.pop('cpop_q', 'p1', NULL, 2) AS r;
SELECT pg_temp.head(r) FROM pop1;
SELECT m.* FROM pop1, pg_temp.msgs(r) m;
-- Leased in queue mode: nothing, also by queue, until the lease ends (30 s).
SELECT queen.pop('cpop_q', 'p1', NULL, 10) IS NULL AS leased,
       queen.pop('cpop_q', NULL, NULL, 10) IS NULL AS leased_any,
       queen.pop('cpop_q', 'p1', NULL, 10, 1, NULL, NULL, (SELECT t FROM t0) + interval '29 s') IS NULL AS leased_at_29s;
SELECT lease_id = ((SELECT r FROM pop1) ->> 'leaseId')::uuid AS lease, batch_size, acked_count, retry_count,
       lease_expires_at - (SELECT t FROM t0) BETWEEN interval '30 s' AND interval '31 s' AS expires_in_30s
FROM queen.consumer_state WHERE partition_id = queen.partition_id('cpop_q', 'p1');
-- Another group has its own lease on the same partition (fan-out).
SELECT m.part, m.data, m.grp FROM pg_temp.msgs(queen.pop('cpop_q', 'p1', 'g1', 5)) m;
SELECT m.part, m.data, m.grp FROM pg_temp.msgs(queen.pop('cpop_q', 'p1', 'g2', 1)) m;
-- The lease expired (31 s later): the same messages again, under a new lease, exactly once.
CREATE TEMP TABLE pop2 AS
SELECT queen.pop('cpop_q', 'p1', NULL, 2, 1, NULL, NULL, (SELECT t FROM t0) + interval '31 s') AS r;
SELECT m.data, (SELECT r FROM pop2) ->> 'leaseId' <> (SELECT r FROM pop1) ->> 'leaseId' AS new_lease
FROM pop2, pg_temp.msgs(r) m;
SELECT queen.pop('cpop_q', 'p1', NULL, 2, 1, NULL, NULL, (SELECT t FROM t0) + interval '32 s') IS NULL AS held_again;
-- leaseTime 0 means 60 s.
SELECT queen.configure('cpop_q', '{"leaseTime": 0}') -> 'options' -> 'leaseTime' AS lease_time;
SELECT count(*) AS queued FROM queen.push('cpop_q', 'p0', '[{"payload":"z"}]');
CREATE TEMP TABLE t1 AS SELECT clock_timestamp() AS t;
SELECT jsonb_array_length(queen.pop('cpop_q', 'p0', NULL, 1, 1, NULL, NULL, (SELECT t FROM t1)) -> 'messages') AS got;
SELECT lease_expires_at - (SELECT t FROM t1) AS lease
FROM queen.consumer_state WHERE partition_id = queen.partition_id('cpop_q', 'p0');

------------------------------------------------------------------------------------------
-- The any-partition route: partitions with messages after the cursor and no live lease, in
-- ascending id order, until p_max_partitions are held or p_batch messages gathered (a global
-- cap), all under one lease id.
------------------------------------------------------------------------------------------
SELECT queen.configure('cpop_any', '{"leaseTime": 60}') ->> 'configured' AS configured;
SELECT count(*) FROM queen.push('cpop_any', 'a', '[{"payload":"a1"},{"payload":"a2"}]');
SELECT count(*) FROM queen.push('cpop_any', 'b', '[{"payload":"b1"},{"payload":"b2"},{"payload":"b3"}]');
SELECT count(*) FROM queen.push('cpop_any', 'c', '[{"payload":"c1"}]');
-- partitions 1: exactly one partition (never the empty Default).
CREATE TEMP TABLE any1 AS SELECT queen.pop('cpop_any', NULL, 'ga', 10, 1) AS r;
SELECT pg_temp.head(r) FROM any1;
-- partitions 3, batch 4: the cap ends the claims inside "b" (two of its three).
CREATE TEMP TABLE any2 AS SELECT queen.pop('cpop_any', NULL, 'gb', 4, 3) AS r;
SELECT pg_temp.head(r) FROM any2;
SELECT m.part, m.data, m.same_lease, m.pid_ok FROM any2, pg_temp.msgs(r) m;
-- The rest for gb: "a" and "b" are leased, so only "c".
SELECT m.part, m.data FROM pg_temp.msgs(queen.pop('cpop_any', NULL, 'gb', 10, 10)) m;
SELECT queen.pop('cpop_any', NULL, 'gb', 10, 10) IS NULL AS all_leased;
-- Queue mode pops everything of the three partitions at once.
SELECT pg_temp.head(queen.pop('cpop_any', NULL, NULL, 100, 10)) AS queue_mode;

------------------------------------------------------------------------------------------
-- delayedProcessing: only messages at least that old; windowBuffer: a partition whose newest
-- message is younger than it is not popped at all (no lease taken).
------------------------------------------------------------------------------------------
SELECT queen.configure('cpop_delay', '{"delayedProcessing": 2}') ->> 'configured' AS configured;
SELECT count(*) FROM queen.push('cpop_delay', 'p', '[{"payload":"d1"}]');
SELECT queen.pop('cpop_delay', 'p') IS NULL AS too_new;
SELECT m.data FROM pg_temp.msgs(queen.pop('cpop_delay', 'p', NULL, 10, 1, NULL, NULL, clock_timestamp() + interval '3 s')) m;
SELECT queen.configure('cpop_window', '{"windowBuffer": 2}') ->> 'configured' AS configured;
SELECT count(*) FROM queen.push('cpop_window', 'p', '[{"payload":"w1"},{"payload":"w2"}]');
SELECT queen.pop('cpop_window', 'p') IS NULL AS buffering, queen.pop('cpop_window') IS NULL AS buffering_any;
SELECT count(*) AS states FROM queen.consumer_state WHERE partition_id = queen.partition_id('cpop_window', 'p');
SELECT m.data FROM pg_temp.msgs(queen.pop('cpop_window', NULL, NULL, 10, 1, NULL, NULL, clock_timestamp() + interval '3 s')) m;

------------------------------------------------------------------------------------------
-- Subscription modes (groups only), fixed at a group's first pop of a queue.
------------------------------------------------------------------------------------------
SELECT count(*) FROM queen.push('cpop_sub', 'p', '[{"payload":"old1"},{"payload":"old2"}]');
-- "new": the first pop answers empty, then only messages created after it.
SELECT queen.pop('cpop_sub', NULL, 'sn', 10, 1, 'new') IS NULL AS first_pop_empty;
SELECT count(*) FROM queen.push('cpop_sub', 'p', '[{"payload":"new1"}]');
SELECT count(*) FROM queen.push('cpop_sub', 'q', '[{"payload":"new2"}]');  -- a partition created later
SELECT m.part, m.data FROM pg_temp.msgs(queen.pop('cpop_sub', NULL, 'sn', 10, 10, 'all')) m;  -- the mode stays "new"
-- subscriptionFrom=now is the same; another mode string ("new-only") means all history.
SELECT queen.pop('cpop_sub', 'p', 'snow', 10, 1, NULL, 'now') IS NULL AS first_pop_empty;
SELECT queen.pop('cpop_sub', 'p', 'snow', 10) IS NULL AS nothing_newer;
SELECT m.data FROM pg_temp.msgs(queen.pop('cpop_sub', 'p', 'sonly', 10, 1, 'new-only')) m;
-- subscriptionFrom=<timestamp>: messages created at or after it.
SELECT m.data FROM pg_temp.msgs(queen.pop('cpop_sub', 'p', 'sts', 10, 1, NULL,
    (SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
       FROM queen.read('cpop_sub', 'p', 2, 1)))) m;
SELECT group_name, mode, start_at IS NOT NULL AS has_start FROM queen.consumer_subscriptions
 WHERE queue_name = 'cpop_sub' ORDER BY 1;
-- Queue mode has no subscription: all history.
SELECT m.data FROM pg_temp.msgs(queen.pop('cpop_sub', 'p', NULL, 10, 1, 'new')) m;
