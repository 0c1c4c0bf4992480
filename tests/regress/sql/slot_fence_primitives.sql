--
-- slot_fence_primitives: every SQL function that writes partition-owned state is fenced (issue 20:
-- on a shard, a write to a slot being moved is refused with 55Q02, one not owned with 55Q01).
-- The writers are found in the catalog, not listed by hand: every SQL or PL/pgSQL function of
-- schema queen whose body inserts into, updates or deletes from a table holding a partition's
-- state (its log, cursors, leases, DLQ, stream rows, a view's state). Each must take its
-- partitions through a fencing primitive (queen.partitions_lock_for_write /
-- queen.partition_lock_for_write: the row locks, then the fence), or be listed below with how it
-- is fenced and why it does not use the primitive. A new writer that does neither fails this
-- test. The C writers (push, push_segment(s), transaction, stream append/close, dedup_advance)
-- fence in src/pg/storage/partition_lock.cpp, resolve_names.cpp and views/functions.cpp.
-- The fence's behaviour itself: tests/isolation/specs/slot_fence_writers.spec, retention_fence.spec.
--

-- The tables holding partition-owned state (moved with a slot by queen.slot_export/slot_import).
CREATE TEMP TABLE fence_tables (t) AS VALUES
    ('log_partitions'), ('log_segments'), ('consumer_groups'), ('consumer_acks'),
    ('consumer_state'), ('consumer_dlq'), ('consumer_subscriptions'), ('streams'),
    ('stream_producers'), ('stream_forks'), ('dedup_views'), ('dedup_state_buckets'),
    ('dedup_candidates'), ('dedup_change_blocks'), ('dedup_offsets'), ('dedup_pending');

-- The exemptions: writers that do not take their partitions through a primitive, how each is
-- fenced (checked below) and why.
--   check   calls a raw fence check itself (queen.slot_fence_check, _check_partition,
--           _owns_partition): it holds no partition row lock to take, or it skips instead
--   via     fenced by the function named in detail, which it calls before writing
--   helper  internal: writes only under its callers' fence (every caller must be fenced)
--   mover   the slot move itself (runs on a fenced slot by design)
CREATE TEMP TABLE fence_exempt (fn, kind, detail) AS VALUES
    ('resolve_partition', 'check', 'creation check by names before the inserts: no row to lock yet'),
    ('stream_create', 'check', 'creation check by names before its partition is created or locked'),
    ('stream_read', 'check', 'a TTL touch of a read: reads take no partition lock'),
    ('ack_lock_group', 'check', 'acks never lock the partition row: the check comes before the group row'),
    ('renew_lease', 'check', 'takes state rows only: the check comes before them'),
    ('consume_subscription', 'check', 'the first pop of a "new" subscription: every partition of the queue before the subscription row, no partition lock'),
    ('create_dedup_view', 'check', 'the view fence: slot_of(queue, '''') of a single_slot queue, before the view row'),
    ('drop_dedup_view', 'check', 'the view fence, after the view row lock'),
    ('retention_purge', 'check', 'retention skips a moving slot (slot_fence_owns_partition) instead of refusing'),
    ('retention_step', 'check', 'skips a moving slot''s partitions before queen.retention_purge'),
    ('run_retention', 'check', 'skips a moving slot''s partitions before queen.retention_purge'),
    ('fork_create', 'via', 'stream_create'),
    ('fork_delete', 'via', 'stream_delete'),
    ('ack_record', 'helper', 'the ack''s position, after queen.ack_lock_group'),
    ('consume_ack', 'helper', 'one wire ack, under its caller''s partition locks'),
    ('consume_ack_run', 'helper', 'a run of wire acks, under its caller''s partition locks'),
    ('admin_group_set_cursors', 'helper', 'a seek''s cursors, under its caller''s partition locks'),
    ('consume_advance', 'helper', 'the cursor, under its caller''s partition lock'),
    ('consume_to_dlq', 'helper', 'a DLQ row, under its caller''s partition lock'),
    ('stream_purge', 'helper', 'an expired or deleted stream, under its caller''s partition lock'),
    ('slot_import', 'mover', 'the target of a move: the slot is not owned there until it commits'),
    ('slot_drop', 'mover', 'the source of a move, after the map switched away from it');

-- queen's SQL routines, with the partition-state tables each writes and the queen routines it calls.
CREATE TEMP VIEW fence_routines AS
SELECT p.oid, p.proname::text AS fn,
       ARRAY(SELECT DISTINCT lower(m[2]) FROM regexp_matches(p.prosrc,
                 '(insert\s+into|update|delete\s+from)\s+queen\.(\w+)', 'gi') m
              WHERE lower(m[2]) IN (SELECT t FROM fence_tables) ORDER BY 1) AS writes,
       ARRAY(SELECT DISTINCT m[1] FROM regexp_matches(p.prosrc, 'queen\.(\w+)\s*\(', 'g') m
             ORDER BY 1) AS calls
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'queen'::regnamespace AND l.lanname IN ('sql', 'plpgsql');

-- The fenced routines: the primitives, the 'check' and 'via' exemptions, and (transitively)
-- every routine that calls one of them.
CREATE TEMP VIEW fence_fenced AS
WITH RECURSIVE f(fn) AS (
    SELECT fn FROM fence_routines
     WHERE fn IN ('partitions_lock_for_write', 'partition_lock_for_write')
        OR calls && ARRAY['partitions_lock_for_write', 'partition_lock_for_write']
        OR fn IN (SELECT e.fn FROM fence_exempt e WHERE e.kind IN ('check', 'via'))
  UNION
    SELECT r.fn FROM fence_routines r JOIN f ON f.fn = ANY (r.calls)
)
SELECT DISTINCT fn FROM f;

-- Every writer and how it is fenced (a new writer changes this list: say here how it is fenced).
SELECT r.fn, r.writes,
       CASE WHEN r.calls && ARRAY['partitions_lock_for_write', 'partition_lock_for_write']
            THEN 'primitive' ELSE e.kind END AS fence
  FROM fence_routines r LEFT JOIN fence_exempt e ON e.fn = r.fn
 WHERE cardinality(r.writes) > 0
 ORDER BY r.fn COLLATE "C", 2::text;

-- Violations (none expected):
--   a writer neither calling a primitive nor listed;
CREATE TEMP VIEW fence_violations AS
SELECT r.fn, 'writes ' || array_to_string(r.writes, ', ') || ' unfenced: take the partitions with queen.partitions_lock_for_write' AS problem
  FROM fence_routines r
 WHERE cardinality(r.writes) > 0
   AND NOT r.calls && ARRAY['partitions_lock_for_write', 'partition_lock_for_write']
   AND r.fn NOT IN (SELECT fn FROM fence_exempt)
UNION ALL
--   a 'check' exemption that no longer calls a raw fence check;
SELECT e.fn, 'listed as check but calls no slot_fence_check*/slot_fence_owns_partition'
  FROM fence_exempt e JOIN fence_routines r ON r.fn = e.fn
 WHERE e.kind = 'check'
   AND NOT r.calls && ARRAY['slot_fence_check', 'slot_fence_check_partition', 'slot_fence_owns_partition']
UNION ALL
--   a raw fence check outside the primitives and the 'check' exemptions (use the primitive);
SELECT r.fn, 'calls a raw slot fence check: use queen.partitions_lock_for_write or list it'
  FROM fence_routines r
 WHERE r.calls && ARRAY['slot_fence_check', 'slot_fence_check_partition', 'slot_fence_owns_partition']
   AND r.fn NOT IN ('partitions_lock_for_write', 'partition_lock_for_write')
   AND r.fn NOT IN (SELECT fn FROM fence_exempt WHERE kind = 'check')
UNION ALL
--   a 'via' exemption that no longer calls its fenced callee, or whose callee is not fenced;
SELECT e.fn, 'listed as fenced via ' || e.detail || ', which it does not call or which is not fenced'
  FROM fence_exempt e JOIN fence_routines r ON r.fn = e.fn
 WHERE e.kind = 'via'
   AND (NOT e.detail = ANY (r.calls)
        OR e.detail NOT IN (SELECT fn FROM fence_routines
                             WHERE calls && ARRAY['partitions_lock_for_write', 'partition_lock_for_write']
                                OR fn IN (SELECT x.fn FROM fence_exempt x WHERE x.kind = 'check')))
UNION ALL
--   a helper called by no routine, or by one that is neither fenced nor a helper itself;
SELECT e.fn, 'helper called by ' || COALESCE(c.fn, 'no routine') || ', which is not fenced'
  FROM fence_exempt e
  LEFT JOIN fence_routines c ON e.fn = ANY (c.calls)
 WHERE e.kind = 'helper'
   AND (c.fn IS NULL
        OR (c.fn NOT IN (SELECT fn FROM fence_fenced)
            AND c.fn NOT IN (SELECT x.fn FROM fence_exempt x WHERE x.kind = 'helper')))
UNION ALL
--   a listed exemption that is gone or no longer writes (keep the list true).
SELECT e.fn, 'listed but ' || CASE WHEN r.fn IS NULL THEN 'no such SQL routine' ELSE 'writes no partition state' END
  FROM fence_exempt e LEFT JOIN fence_routines r ON r.fn = e.fn
 WHERE r.fn IS NULL
    OR (cardinality(r.writes) = 0
        AND NOT r.calls && ARRAY['slot_fence_check', 'slot_fence_check_partition', 'slot_fence_owns_partition']);
SELECT * FROM fence_violations ORDER BY 1, 2;

-- The check works: a new writer of a cursor table without the fence is caught, and so is a
-- helper whose new caller is not fenced.
CREATE FUNCTION queen.fence_test_unfenced(p_pid bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ BEGIN DELETE FROM queen.consumer_groups WHERE partition_id = p_pid; END $$;
CREATE FUNCTION queen.fence_test_caller(p_pid bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ BEGIN PERFORM queen.consume_advance(p_pid, 'g', 0); END $$;
SELECT * FROM fence_violations ORDER BY 1, 2;
DROP FUNCTION queen.fence_test_unfenced(bigint);
DROP FUNCTION queen.fence_test_caller(bigint);
SELECT count(*) AS violations FROM fence_violations;

-- The primitives: rows locked in ascending order, absent ids skipped, the strength checked.
SELECT count(*) FROM queen.push('fence_prim', 'b', '[{"transactionId": "f1", "payload": 1}]');
SELECT count(*) FROM queen.push('fence_prim', 'a', '[{"transactionId": "f2", "payload": 2}]');
SELECT queen.partitions_lock_for_write(
           ARRAY[queen.partition_id('fence_prim', 'b'), NULL, -1, queen.partition_id('fence_prim', 'a'),
                 queen.partition_id('fence_prim', 'b')], 'key share')
       = ARRAY(SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
                WHERE q.name = 'fence_prim' ORDER BY p.id) AS locked_ascending;
SELECT queen.partition_lock_for_write(queen.partition_id('fence_prim', 'a'), 'no key update') AS one,
       queen.partition_lock_for_write(-1, 'key share', true) AS gone;
SELECT queen.partitions_lock_for_write(ARRAY[1::bigint], 'share');
