--
-- admin_groups: the consumer-group admin functions of issue 29 (sql/modules/91_admin_groups.sql):
-- figures from offsets and segment times (list, detail, lagging), the time search over the
-- segments' primary key (queen.admin_offset_at), seek to a time / to the end / one partition,
-- deletion on one queue, and their SQLSTATEs.
--
\i tests/regress/sql/sqlstate_of.psql
-- A clean slate: these figures are system-wide, and the tests before this one (same database)
-- leave queues and groups behind.
SELECT count(queen.delete_queue(name)) >= 0 AS queues_cleared FROM queen.queues;
SELECT count(queen.delete_consumer_group(g, true)) >= 0 AS groups_cleared
  FROM (SELECT group_name FROM queen.consumer_subscriptions
        UNION SELECT group_name FROM queen.consumer_state) s(g);
CREATE FUNCTION pg_temp.data(r jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_path_query_array(r, '$.messages[*].data') $$;
CREATE FUNCTION pg_temp.cur(q text, p text, g text) RETURNS bigint LANGUAGE sql AS $$
    SELECT g2.committed_offset FROM queen.consumer_groups g2
     WHERE g2.partition_id = queen.partition_id(q, p) AND g2.group_name = g $$;

-- Five segments on p (offsets 0-1, 2, 3-5, 6, 7), one on q; their times set apart by hand
SELECT count(*) FROM queen.push('adm_q', 'p', '[{"payload":0},{"payload":1}]');
SELECT count(*) FROM queen.push('adm_q', 'p', '[{"payload":2}]');
SELECT count(*) FROM queen.push('adm_q', 'p', '[{"payload":3},{"payload":4},{"payload":5}]');
SELECT count(*) FROM queen.push('adm_q', 'p', '[{"payload":6}]');
SELECT count(*) FROM queen.push('adm_q', 'p', '[{"payload":7}]');
SELECT count(*) FROM queen.push('adm_q', 'q', '[{"payload":"q0"}]');
UPDATE queen.log_segments s SET created_at = timestamptz '2020-01-01Z' + s.base_offset * interval '1 minute'
 WHERE s.partition_id = queen.partition_id('adm_q', 'p');
SELECT base_offset, end_offset, created_at FROM queen.log_segments
 WHERE partition_id = queen.partition_id('adm_q', 'p') ORDER BY base_offset;

-- the first offset created at or after a time (every boundary; before all; after all)
SELECT t.ts, queen.admin_offset_at(queen.partition_id('adm_q', 'p'), -1, 8, t.ts) AS first_at
  FROM (VALUES (timestamptz '2019-12-31Z'), ('2020-01-01 00:00Z'), ('2020-01-01 00:00:01Z'),
               ('2020-01-01 00:02Z'), ('2020-01-01 00:02:30Z'), ('2020-01-01 00:03Z'),
               ('2020-01-01 00:06Z'), ('2020-01-01 00:07Z'), ('2020-01-01 00:07:01Z')) t(ts);

-- a group consumes 3 messages of p (acked); queue mode pops q and keeps its lease
CREATE TEMP TABLE pp AS SELECT queen.pop('adm_q', 'p', 'g/a b', 3) AS r;
SELECT pg_temp.data(r) FROM pp;
SELECT count(*) FILTER (WHERE (x ->> 'success')::boolean) AS acked
  FROM pp, jsonb_array_elements(queen.ack_messages((
       SELECT jsonb_agg(jsonb_build_object('transactionId', m -> 'transactionId', 'partitionId', m -> 'partitionId',
                                           'leaseId', m -> 'leaseId'))
         FROM jsonb_array_elements(r -> 'messages') m), 'g/a b')) x;
SELECT queen.pop('adm_q', 'q') IS NOT NULL AS q_popped;

-- figures: p has 5 pending since 2020 (its oldest pending is offset 3, at 00:03), q 1 leased
SELECT x ->> 'name' AS name, x -> 'topics' AS topics, x ->> 'queueName' AS queue, x -> 'members' AS members,
       x -> 'partitionsWithLag' AS with_lag, x -> 'totalLag' AS total_lag, x ->> 'state' AS state,
       x ->> 'subscriptionMode' AS mode, x -> 'subscriptionTimestamp' AS sub_ts,
       x ->> 'subscriptionCreatedAt' IS NOT NULL AS sub_created,
       (x ->> 'maxTimeLag')::bigint BETWEEN extract(epoch FROM now() - timestamptz '2020-01-01 00:03Z') - 60
                                        AND extract(epoch FROM now() - timestamptz '2020-01-01 00:03Z') + 60 AS lag_of_offset_3
  FROM jsonb_array_elements(queen.admin_consumer_groups()) x;
SELECT jsonb_pretty(queen.admin_consumer_group('g/a b') #- '{adm_q,partitions,0,timeLagSeconds}');
-- an unknown group: 42704 (the broker answers {}; issue 29: no success that found nothing)
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_consumer_group('nobody')$$) AS unknown_group;
SELECT jsonb_array_length(queen.admin_consumer_groups(1, 0)) AS page1,
       jsonb_array_length(queen.admin_consumer_groups(1, 1)) AS page2,
       jsonb_array_length(queen.admin_consumer_groups(10, 2)) AS page3;
-- lagging: over an hour only p (q's message is seconds old); over 0 s both, most lagging first
SELECT x ->> 'consumer_group' AS grp, x ->> 'partition_name' AS part, x -> 'offset_lag' AS offset_lag,
       (x ->> 'time_lag_seconds')::bigint > 3600 * 24 * 365 AS over_a_year,
       x ->> 'oldest_unconsumed_at' AS oldest, x -> 'worker_id' AS worker, x -> 'last_consumed_at' AS last_consumed,
       x ->> 'partition_id' = queen.partition_uuid(queen.partition_id('adm_q', x ->> 'partition_name'))::text AS pid_ok
  FROM jsonb_array_elements(queen.admin_lagging_partitions(3600)) x;
SELECT pg_sleep(1.1);
SELECT x ->> 'partition_name' AS part FROM jsonb_array_elements(queen.admin_lagging_partitions(0)) x;
SELECT jsonb_array_length(queen.admin_lagging_partitions(0, 1, 1)) AS lagging_page2,
       jsonb_array_length(queen.admin_lagging_partitions(0, 1, 2)) AS lagging_page3;

-- seek to a time: cursor before the first offset at or after it; the lease cleared
SELECT queen.seek_consumer_group('g/a b', 'adm_q', false, '2020-01-01 00:06Z') - 'targetTimestamp' AS seek;
SELECT pg_temp.cur('adm_q', 'p', 'g/a b') AS cursor;
SELECT pg_temp.data(queen.pop('adm_q', 'p', 'g/a b', 10)) AS after_seek;
SELECT queen.seek_consumer_group('g/a b', 'adm_q', false, '2000-01-01Z') ->> 'partitionsUpdated' AS back;
SELECT lease_id IS NULL AS lease_cleared, batch_size, acked_count FROM queen.consumer_state
 WHERE partition_id = queen.partition_id('adm_q', 'p') AND group_name = 'g/a b';
SELECT pg_temp.data(queen.pop('adm_q', 'p', 'g/a b', 10)) AS all_again;
-- to the end; then one partition to its end (queue mode on q, whose lease goes)
SELECT queen.seek_consumer_group('g/a b', 'adm_q', true, NULL) AS to_end;
SELECT pg_temp.cur('adm_q', 'p', 'g/a b') AS cursor, queen.pop('adm_q', 'p', 'g/a b') IS NULL AS nothing;
SELECT queen.seek_consumer_group_partition('__QUEUE_MODE__', 'adm_q', 'q') - 'cursorMovedTo' AS part_seek;
SELECT pg_temp.cur('adm_q', 'q', '__QUEUE_MODE__') AS q_cursor,
       (SELECT lease_id IS NULL FROM queen.consumer_state WHERE partition_id = queen.partition_id('adm_q', 'q')
           AND group_name = '__QUEUE_MODE__') AS q_lease_cleared;
-- a group with no position there: 42704 (the broker answers updated false)
SELECT pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group_partition('other', 'adm_q', 'q')$$) AS not_a_member;
SELECT pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group('other', 'adm_q', true, NULL)$$) AS not_a_member_of_queue;
-- retention dropped offsets 0-2: a seek to before everything starts at log_start
UPDATE queen.log_partitions SET log_start = 3 WHERE id = queen.partition_id('adm_q', 'p');
SELECT queen.seek_consumer_group('g/a b', 'adm_q', false, '2000-01-01Z') ->> 'partitionsUpdated' AS back;
SELECT pg_temp.cur('adm_q', 'p', 'g/a b') AS cursor_at_log_start;
SELECT queen.admin_consumer_group('g/a b') -> 'adm_q' -> 'partitions' -> 0 -> 'offsetLag' AS lag_from_log_start;

-- deletion on one queue: state, cursors, subscription there; the group's other queue kept
SELECT count(*) FROM queen.push('adm_o', 'o', '[{"payload":"o0"}]');
SELECT pg_temp.data(queen.pop('adm_o', 'o', 'g/a b', 1)) AS other_queue;
SELECT queen.delete_consumer_group_for_queue('g/a b', 'adm_q', true) AS deleted;
SELECT (SELECT count(*) FROM queen.consumer_state WHERE group_name = 'g/a b') AS states_left,
       (SELECT count(*) FROM queen.consumer_groups WHERE group_name = 'g/a b') AS cursors_left,
       (SELECT string_agg(queue_name, ',') FROM queen.consumer_subscriptions WHERE group_name = 'g/a b') AS subs_left;
SELECT queen.delete_consumer_group_for_queue('g/a b', 'adm_o', false) AS kept_metadata;
SELECT count(*) AS subs_kept FROM queen.consumer_subscriptions WHERE group_name = 'g/a b';
-- nothing of the group there: 42704 (the broker answers 200 with 0)
SELECT pg_temp.sqlstate_of($$SELECT queen.delete_consumer_group_for_queue('g/a b', 'never_was')$$) AS none;

-- errors
SELECT pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group('', 'adm_q', true, NULL)$$) AS empty_group,
       pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group('g', 'adm_q', false, NULL)$$) AS neither,
       pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group('g', 'adm_q', true, now())$$) AS both,
       pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group('g', 'no_such_q', true, NULL)$$) AS unknown_queue,
       pg_temp.sqlstate_of($$SELECT queen.seek_consumer_group_partition('g', 'adm_q', 'nope')$$) AS unknown_partition,
       pg_temp.sqlstate_of($$SELECT queen.admin_consumer_groups(0, 0)$$) AS bad_limit,
       pg_temp.sqlstate_of($$SELECT queen.admin_lagging_partitions(-1)$$) AS bad_lag,
       pg_temp.sqlstate_of($$SELECT queen.delete_consumer_group_for_queue('g', '')$$) AS empty_queue,
       pg_temp.sqlstate_of($$SELECT queen.admin_consumer_group('')$$) AS empty_detail;

SELECT queen.delete_queue('adm_q') ->> 'deleted', queen.delete_queue('adm_o') ->> 'deleted';
SELECT queen.delete_consumer_group('g/a b') ->> 'success', queen.delete_consumer_group('__QUEUE_MODE__') ->> 'success';
