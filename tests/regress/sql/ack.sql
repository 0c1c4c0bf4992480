--
-- ack: queen.ack(queue, partition, transactionId, group) resolves the transactionId through
-- log_txns (the earliest occurrence the group has not acked yet, window 0 included) and
-- records the ack; true when the transactionId is stored, false when unknown.
-- queen.ack_offset acks one offset; queen.ack_batch several items in one call. queen.committed_offset shows each group's contiguous acked
-- prefix (-1 = nothing).
--
\i tests/regress/sql/sqlstate_of.psql

-- Offsets 0..3 = a, b, c, d (two segments), 4 = e.
SELECT count(*) AS queued FROM queen.push('ack_q', 'p',
    '[{"transactionId":"a","payload":0},{"transactionId":"b","payload":1}]');
SELECT count(*) AS queued FROM queen.push('ack_q', 'p',
    '[{"transactionId":"c","payload":2},{"transactionId":"d","payload":3},{"transactionId":"e","payload":4}]');

-- Nothing acked yet.
SELECT queen.committed_offset('ack_q', 'p') AS committed_default_group,
       queen.committed_offset('ack_q', 'p', 'g1') AS committed_g1;

-- Acks out of order: the committed offset advances only over the contiguous acked prefix.
SELECT queen.ack('ack_q', 'p', 'b') AS ack_b;
SELECT queen.committed_offset('ack_q', 'p') AS committed;        -- gap at 0
SELECT queen.ack('ack_q', 'p', 'a') AS ack_a;
SELECT queen.committed_offset('ack_q', 'p') AS committed;        -- 0 and 1 acked
SELECT queen.ack('ack_q', 'p', 'd') AS ack_d;
SELECT queen.committed_offset('ack_q', 'p') AS committed;        -- gap at 2
SELECT queen.ack('ack_q', 'p', 'c') AS ack_c;
SELECT queen.committed_offset('ack_q', 'p') AS committed;        -- 0..3 across the segment boundary

-- An unknown transactionId does not resolve: false, nothing changes.
SELECT queen.ack('ack_q', 'p', 'zz') AS ack_unknown;
SELECT queen.committed_offset('ack_q', 'p') AS committed;

-- Groups are independent; the default group is '__QUEUE_MODE__'.
SELECT queen.ack('ack_q', 'p', 'a', 'g1') AS g1_ack_a;
SELECT queen.committed_offset('ack_q', 'p', 'g1') AS committed_g1,
       queen.committed_offset('ack_q', 'p', '__QUEUE_MODE__') AS committed_queue_mode,
       queen.committed_offset('ack_q', 'p', 'never') AS committed_unseen_group;
-- The positions live in queen.consumer_groups.
SELECT group_name, committed_offset FROM queen.consumer_groups
WHERE partition_id = (SELECT lp.id FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
                      WHERE q.name = 'ack_q' AND lp.name = 'p')
ORDER BY group_name;

-- Acks resolve in the partition named, not in a sibling.
SELECT count(*) AS queued FROM queen.push('ack_q', 'other', '[{"transactionId":"only-here","payload":0}]');
SELECT queen.ack('ack_q', 'p', 'only-here') AS wrong_partition,
       queen.ack('ack_q', 'other', 'only-here') AS right_partition;
SELECT queen.committed_offset('ack_q', 'other') AS committed_other;

------------------------------------------------------------------------------------------
-- Window 0: no probe, so one transactionId can be stored twice; log_txns is still written,
-- so acks resolve. Each ack of a transactionId acks the earliest occurrence the group has not
-- acked yet: x at 0 and 2 is acked by two acks, and the committed offset reaches 2.
------------------------------------------------------------------------------------------
SELECT queen.configure('ack_off', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"x","payload":0}]');
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"y","payload":1}]');
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"x","payload":2}]');
SELECT queen.ack('ack_off', 'p', 'x') AS ack_x;
SELECT queen.committed_offset('ack_off', 'p') AS committed;      -- offset 0
SELECT queen.ack('ack_off', 'p', 'x') AS ack_x_again;
SELECT queen.committed_offset('ack_off', 'p') AS committed;      -- 0 acked, 2 waits for 1
SELECT message_offset FROM queen.consumer_acks
 WHERE partition_id = queen.partition_id('ack_off', 'p') AND group_name = '__QUEUE_MODE__';
SELECT queen.ack('ack_off', 'p', 'y') AS ack_y;
SELECT queen.committed_offset('ack_off', 'p') AS committed;      -- 0, 1, 2: never stuck
-- Every occurrence acked: still true (the transactionId is known), nothing changes.
SELECT queen.ack('ack_off', 'p', 'x') AS ack_x_third;
SELECT queen.committed_offset('ack_off', 'p') AS committed;
-- Another group starts from scratch: its first ack of x is offset 0 again.
SELECT queen.ack('ack_off', 'p', 'x', 'g2') AS g2_ack_x;
SELECT queen.committed_offset('ack_off', 'p', 'g2') AS committed_g2;

-- The same transactionId twice in one window-0 call is written twice (window 0 stores every
-- item); acks take the occurrences in offset order.
SELECT index, status, message_offset FROM queen.push('ack_off', 'q2',
    '[{"transactionId":"w","payload":0},{"transactionId":"v","payload":1},{"transactionId":"w","payload":2}]');
SELECT queen.ack('ack_off', 'q2', 'w') AS ack_w;
SELECT queen.committed_offset('ack_off', 'q2') AS committed;     -- 0
SELECT queen.ack('ack_off', 'q2', 'w') AS ack_w_again;
SELECT queen.ack('ack_off', 'q2', 'v') AS ack_v;
SELECT queen.committed_offset('ack_off', 'q2') AS committed;     -- 2

-- A repeat accepted again once its window had passed (window > 0): the old occurrence and
-- the new one are both acked by two acks.
SELECT queen.configure('ack_aged', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('ack_aged', 'p', '[{"transactionId":"r","payload":0}]');
UPDATE queen.log_segments SET created_at = created_at - interval '1 hour'
 WHERE partition_id = queen.partition_id('ack_aged', 'p');
SELECT status, message_offset FROM queen.push('ack_aged', 'p', '[{"transactionId":"r","payload":1}]');
SELECT queen.ack('ack_aged', 'p', 'r') AS ack_r, queen.ack('ack_aged', 'p', 'r') AS ack_r_again;
SELECT queen.committed_offset('ack_aged', 'p') AS committed;     -- 1

-- A warm backend (its ack digest already read the partition) sees later pushes: x pushed a
-- third time after the acks above is acked by the next ack, at offset 3.
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"x","payload":3}]');
SELECT queen.ack('ack_off', 'p', 'x') AS ack_x_fourth;
SELECT queen.committed_offset('ack_off', 'p') AS committed;      -- 3

-- Hashes purged by retention cannot be resolved, also by a warm backend: false.
SELECT queen.configure('ack_purge', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ack_purge', 'p',
    '[{"transactionId":"old","payload":0},{"transactionId":"warm","payload":1}]');
SELECT queen.ack('ack_purge', 'p', 'warm', 'gp') AS ack_warm;   -- reads the partition
UPDATE queen.log_segments SET created_at = created_at - interval '1 hour'
 WHERE partition_id = queen.partition_id('ack_purge', 'p');
SELECT (queen.run_retention(1000) ->> 'txnsDeleted')::int >= 1 AS purged;
SELECT count(*) AS queued FROM queen.push('ack_purge', 'p', '[{"transactionId":"new","payload":2}]');
SELECT queen.ack('ack_purge', 'p', 'old', 'gp') AS ack_purged,
       queen.ack('ack_purge', 'p', 'new', 'gp') AS ack_new;
SELECT queen.committed_offset('ack_purge', 'p', 'gp') AS committed,
       (SELECT array_agg(message_offset) FROM queen.consumer_acks
         WHERE partition_id = queen.partition_id('ack_purge', 'p') AND group_name = 'gp') AS pending;
-- ... but by offset it can still be acked.
SELECT queen.ack_offset('ack_purge', 'p', 0, 'gp') AS ack_offset_0;
SELECT queen.committed_offset('ack_purge', 'p', 'gp') AS committed;

------------------------------------------------------------------------------------------
-- Ack by offset: true when recorded now, false when the group had already acked it.
------------------------------------------------------------------------------------------
SELECT count(*) AS queued FROM queen.push('ack_o', 'p',
    '[{"transactionId":"o0","payload":0},{"transactionId":"o1","payload":1},{"transactionId":"o2","payload":2}]');
SELECT queen.ack_offset('ack_o', 'p', 1) AS ack_1;
SELECT queen.ack_offset('ack_o', 'p', 1) AS ack_1_again;
SELECT queen.committed_offset('ack_o', 'p') AS committed;        -- -1: 0 missing
SELECT queen.ack_offset('ack_o', 'p', 0) AS ack_0;
SELECT queen.committed_offset('ack_o', 'p') AS committed;        -- 1
SELECT queen.ack_offset('ack_o', 'p', 0) AS ack_0_again;
-- Mixed with acks by transactionId: o2's only occurrence, then nothing left to ack.
SELECT queen.ack('ack_o', 'p', 'o2') AS ack_o2, queen.ack_offset('ack_o', 'p', 2) AS ack_2_again;
SELECT queen.committed_offset('ack_o', 'p') AS committed;        -- 2
-- Bad offsets: 22023 (negative, above the last offset, NULL); a bad group: 22023.
SELECT pg_temp.sqlstate_of($q$SELECT queen.ack_offset('ack_o', 'p', -1)$q$) AS negative,
       pg_temp.sqlstate_of($q$SELECT queen.ack_offset('ack_o', 'p', 3)$q$) AS above_last,
       pg_temp.sqlstate_of($q$SELECT queen.ack_offset('ack_o', 'p', NULL)$q$) AS null_offset,
       pg_temp.sqlstate_of($q$SELECT queen.ack_offset('ack_o', 'p', 0, '')$q$) AS empty_group,
       pg_temp.sqlstate_of($q$SELECT queen.ack_offset('ack_o', 'nope', 0)$q$) AS unknown_partition;

------------------------------------------------------------------------------------------
-- Batch acks: in order, one row per item.
------------------------------------------------------------------------------------------
SELECT queen.configure('ack_b', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('ack_b', 'p',
    '[{"transactionId":"b0","payload":0},{"transactionId":"b1","payload":1},{"transactionId":"b0","payload":2},{"transactionId":"b3","payload":3}]');
SELECT * FROM queen.ack_batch('ack_b', 'p',
    '[{"transactionId":"b0"},{"transactionId":"b0"},{"transactionId":"b0"},{"offset":1},{"transactionId":"nope"},{"offset":1}]', 'g');
SELECT queen.committed_offset('ack_b', 'p', 'g') AS committed;    -- 2
SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"transactionId":"b3"}]', 'g');
SELECT queen.committed_offset('ack_b', 'p', 'g') AS committed;    -- 3
SELECT count(*) AS empty_batch FROM queen.ack_batch('ack_b', 'p', '[]', 'g');
-- An unknown-only batch creates no group.
SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"transactionId":"nope"}]', 'g-none');
SELECT count(*) AS groups_created FROM queen.consumer_groups WHERE group_name = 'g-none';
-- Every item is checked before anything is applied: 22023, and the group is unchanged.
SELECT label, pg_temp.sqlstate_of(q) AS sqlstate FROM (VALUES
    ('not an array', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '{"offset":0}', 'h')$q$),
    ('null items', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', NULL, 'h')$q$),
    ('item not an object', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0}, "b1"]', 'h')$q$),
    ('both keys', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0, "transactionId":"b1"}]', 'h')$q$),
    ('unknown key', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0}, {"id":"b1"}]', 'h')$q$),
    ('transactionId not a string', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0}, {"transactionId":7}]', 'h')$q$),
    ('offset a string', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":"0"}]', 'h')$q$),
    ('offset fractional', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0}, {"offset":1.5}]', 'h')$q$),
    ('offset above last', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0}, {"offset":4}]', 'h')$q$),
    ('offset negative', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":-1}]', 'h')$q$),
    ('empty group', $q$SELECT * FROM queen.ack_batch('ack_b', 'p', '[{"offset":0}]', '')$q$),
    ('unknown queue', $q$SELECT * FROM queen.ack_batch('ack_nope', 'p', '[{"offset":0}]', 'h')$q$)
) AS t(label, q);
SELECT count(*) AS groups_h FROM queen.consumer_groups WHERE group_name = 'h';

-- queen.transaction's ack operation follows the same rule.
SELECT queen.transaction('{"operations": [
    {"type": "ack", "queue": "ack_b", "partition": "p", "transactionId": "b0", "consumerGroup": "t"},
    {"type": "ack", "queue": "ack_b", "partition": "p", "transactionId": "b0", "consumerGroup": "t"}]}') -> 'results' AS results;
SELECT queen.committed_offset('ack_b', 'p', 't') AS committed_t,
       (SELECT array_agg(message_offset ORDER BY message_offset) FROM queen.consumer_acks
         WHERE partition_id = queen.partition_id('ack_b', 'p') AND group_name = 't') AS pending_t;

------------------------------------------------------------------------------------------
-- Unknown queue or partition: 42704, for ack and committed_offset alike; nothing created.
------------------------------------------------------------------------------------------
SELECT pg_temp.sqlstate_of($q$SELECT queen.ack('ack_nope', 'p', 'a')$q$) AS ack_unknown_queue,
       pg_temp.sqlstate_of($q$SELECT queen.ack('ack_q', 'nope', 'a')$q$) AS ack_unknown_partition,
       pg_temp.sqlstate_of($q$SELECT queen.committed_offset('ack_nope', 'p')$q$) AS committed_unknown_queue,
       pg_temp.sqlstate_of($q$SELECT queen.committed_offset('ack_q', 'nope')$q$) AS committed_unknown_partition;
SELECT count(*) AS created FROM queen.queues WHERE name = 'ack_nope';
\set VERBOSITY terse
SELECT queen.ack('ack_nope', 'p', 'a');
\set VERBOSITY default
