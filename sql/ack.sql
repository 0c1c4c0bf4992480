--
-- ack: queen.ack(queue, partition, transactionId, group) resolves the transactionId through
-- log_txns (the earliest occurrence, window 0 included) and records the ack; true when
-- resolved, false when unknown. queen.committed_offset shows each group's contiguous acked
-- prefix (-1 = nothing).
--
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;

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
-- so acks resolve, and they resolve to the earliest occurrence.
------------------------------------------------------------------------------------------
SELECT queen.configure('ack_off', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"x","payload":0}]');
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"y","payload":1}]');
SELECT status, message_offset FROM queen.push('ack_off', 'p', '[{"transactionId":"x","payload":2}]');
SELECT queen.ack('ack_off', 'p', 'x') AS ack_x;
SELECT queen.committed_offset('ack_off', 'p') AS committed;      -- offset 0, not 2
SELECT queen.ack('ack_off', 'p', 'y') AS ack_y;
SELECT queen.committed_offset('ack_off', 'p') AS committed;      -- 0 and 1; 2 is not acked

-- Earliest occurrence also when the same transactionId sits twice in one segment.
-- (Whether the repeat inside a window-0 call is written is not pinned here.)
SELECT count(*) AS answers, min(message_offset) FILTER (WHERE transaction_id = 'w') AS first_w
FROM queen.push('ack_off', 'q2',
    '[{"transactionId":"w","payload":0},{"transactionId":"v","payload":1},{"transactionId":"w","payload":2}]');
SELECT queen.ack('ack_off', 'q2', 'w') AS ack_w;
SELECT queen.committed_offset('ack_off', 'q2') AS committed;

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
