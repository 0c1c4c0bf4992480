--
-- retention_options (issue 27): Queen's retentionEnabled, retentionSeconds,
-- completedRetentionSeconds and maxWaitTimeSeconds, enforced by retention (the data rules at the
-- retention section of sql/modules/00_core.sql). Every purge here runs at an explicit clock:
-- p_now = the partition's newest segment's created_at plus some seconds, so the answers do not
-- depend on how fast the test runs; "however old" is 3000 s, inside the default window (3600 s:
-- past it the hashes go, and acks resolve messages by their hashes). Data goes, hashes stay
-- (the window has its own clock): a duplicate of a purged message is still a duplicate.
--
\i tests/regress/sql/partition_state.psql
-- The newest segment's time of a partition.
CREATE FUNCTION pg_temp.t(q text, p text) RETURNS timestamptz LANGUAGE sql AS $$
    SELECT max(created_at) FROM queen.log_segments WHERE partition_id = pg_temp.pid(q, p) $$;
-- One purge of a partition at t(q, p) + secs: whether it was eligible before, and what it
-- deleted.
CREATE FUNCTION pg_temp.sweep(q text, p text, secs numeric)
    RETURNS TABLE (eligible boolean, segments_deleted int, txns_deleted int) LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := pg_temp.t(q, p) + make_interval(secs => secs);
BEGIN
    eligible := queen.retention_eligible(pg_temp.pid(q, p), v_now);
    SELECT r.segments_deleted, r.txns_deleted INTO segments_deleted, txns_deleted
      FROM queen.retention_purge(pg_temp.pid(q, p), 1000, v_now) r;
    RETURN NEXT;
END
$$;
-- Push one message (one segment) of transactionId id.
CREATE FUNCTION pg_temp.push1(q text, p text, id text) RETURNS bigint LANGUAGE sql AS $$
    SELECT message_offset FROM queen.push(q, p,
        jsonb_build_array(jsonb_build_object('transactionId', id, 'payload', id))) $$;
-- A wire ack ("completed") of transactionId id on (q, p) for group g.
CREATE FUNCTION pg_temp.ack(q text, p text, id text, g text DEFAULT NULL) RETURNS boolean
    LANGUAGE sql AS $$
    SELECT (queen.ack_messages(jsonb_build_array(jsonb_build_object(
                'transactionId', id,
                'partitionId', queen.partition_uuid(pg_temp.pid(q, p))::text,
                'status', 'completed')), g) -> 0 ->> 'success')::boolean $$;
-- The transactionIds a pop of (q, p) for group g delivers (NULL: nothing, the wire's 204).
CREATE FUNCTION pg_temp.pop(q text, p text, g text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_path_query_array(queen.pop(q, p, g, 100), '$.messages[*].transactionId') $$;

------------------------------------------------------------------------------------------
-- retentionEnabled gates Queen's retentionSeconds (the suite's retentionTest: 10 s, completed
-- 5 s, nobody consuming). Queen's form without the flag stores no age retention; queen's own
-- form (no Queen key) keeps its ungated retentionSeconds.
------------------------------------------------------------------------------------------
SELECT q, queen.configure(q, o) -> 'retentionSeconds' AS kept_for
FROM (VALUES ('ro_age', '{"retentionEnabled": true, "retentionSeconds": 10, "completedRetentionSeconds": 5}'::jsonb),
             ('ro_gate', '{"retentionSeconds": 10, "completedRetentionSeconds": 5}'),
             ('ro_off', '{"retentionEnabled": false, "retentionSeconds": 10}'),
             ('ro_own', '{"retentionSeconds": 10}')) v(q, o);
SELECT name, retention_seconds AS stored FROM queen.queues WHERE name LIKE 'ro\_%' ORDER BY name;
SELECT pg_temp.push1(q, 'p', q || '-' || i) AS queued_offset
FROM unnest(ARRAY['ro_age', 'ro_gate']) q, generate_series(0, 2) i ORDER BY q, i;
-- Nothing is 10 s old at +8 s; at +11 s all of ro_age's data goes (no consumer: the completed
-- rule has nothing completed), ro_gate keeps everything however old.
SELECT * FROM pg_temp.sweep('ro_age', 'p', 8);
SELECT * FROM pg_temp.sweep('ro_gate', 'p', 3000);
SELECT * FROM pg_temp.sweep('ro_age', 'p', 11);
SELECT * FROM pg_temp.state('ro_age', 'p');
SELECT * FROM pg_temp.state('ro_gate', 'p');
-- Popped after the sweep: nothing (204) from ro_age, everything from ro_gate.
SELECT pg_temp.pop('ro_age', 'p') AS age_pop, pg_temp.pop('ro_gate', 'p') AS gate_pop;
-- The hashes stayed in the window: a repeat is still a duplicate (its original's data is gone,
-- so its id is the zero UUID), a new id is queued at the next offset.
SELECT status, message_offset, CASE WHEN status = 'duplicate' THEN message_id END AS original_id
FROM queen.push('ro_age', 'p',
    '[{"transactionId": "ro_age-1", "payload": "again"}, {"transactionId": "ro_age-9", "payload": "new"}]');
SELECT queen.explain('ro_age', 'p', 'ro_age-1') - 'createdAt' - 'windowLeftSeconds' AS explain;
-- Queen's wire answer echoes the 15 options as stored: retentionEnabled among them.
SELECT o -> 'retentionEnabled' AS enabled, o -> 'retentionSeconds' AS secs,
       o -> 'completedRetentionSeconds' AS completed
FROM queen.queue_options x JOIN queen.queues q ON q.id = x.queue_id, LATERAL (SELECT x.options) y(o)
WHERE q.name = 'ro_age';

------------------------------------------------------------------------------------------
-- completedRetentionSeconds: the segments consumed by every group that popped or acked on the
-- partition, once older than it. A group that popped but acked nothing holds everything.
------------------------------------------------------------------------------------------
SELECT queen.configure('ro_done', '{"retentionEnabled": true, "completedRetentionSeconds": 5}') -> 'retentionSeconds' AS kept_for;
SELECT pg_temp.push1('ro_done', 'p', 'd' || i) AS queued_offset FROM generate_series(0, 3) i;
-- No group yet: nothing is completed, however old.
SELECT * FROM pg_temp.sweep('ro_done', 'p', 3000);
-- Queue mode pops all four and acks d0, d1 (cursor 1); group g2 pops and acks nothing.
SELECT pg_temp.pop('ro_done', 'p') AS qm_pop, pg_temp.pop('ro_done', 'p', 'g2') AS g2_pop;
SELECT pg_temp.ack('ro_done', 'p', 'd0') AS a0, pg_temp.ack('ro_done', 'p', 'd1') AS a1;
SELECT g.group_name, g.committed_offset FROM queen.consumer_groups g
 WHERE g.partition_id = pg_temp.pid('ro_done', 'p') ORDER BY 1;
SELECT queen.retention_acked(pg_temp.pid('ro_done', 'p')) AS acked_by_all;
SELECT * FROM pg_temp.sweep('ro_done', 'p', 3000);
-- g2 acks d0..d2: every group has consumed d0, d1; not yet 5 s old at +3 s, gone at +6 s.
SELECT pg_temp.ack('ro_done', 'p', 'd' || i, 'g2') AS acked FROM generate_series(0, 2) i;
SELECT queen.retention_acked(pg_temp.pid('ro_done', 'p')) AS acked_by_all;
SELECT * FROM pg_temp.sweep('ro_done', 'p', 3);
SELECT * FROM pg_temp.sweep('ro_done', 'p', 6);
SELECT * FROM pg_temp.state('ro_done', 'p');
-- d2 is consumed by g2 only, d3 by nobody: both stay, however old.
SELECT * FROM pg_temp.sweep('ro_done', 'p', 3000);
SELECT message_offset, transaction_id FROM queen.read('ro_done', 'p', 0, 10);
-- A segment goes whole: d4+d5 in one segment; both groups ack d2, d3 and d4 (not d5): d2, d3
-- go, the segment of d4 stays.
SELECT count(*) AS queued FROM queen.push('ro_done', 'p',
    '[{"transactionId": "d4", "payload": 4}, {"transactionId": "d5", "payload": 5}]');
SELECT pg_temp.ack('ro_done', 'p', 'd' || i, g) AS acked
FROM unnest(ARRAY[NULL, 'g2']) g, generate_series(2, 4) i ORDER BY g NULLS FIRST, i;
SELECT queen.retention_acked(pg_temp.pid('ro_done', 'p')) AS acked_by_all;
SELECT * FROM pg_temp.sweep('ro_done', 'p', 6);
SELECT * FROM pg_temp.state('ro_done', 'p');
-- Without retentionEnabled the same options delete nothing.
SELECT queen.configure('ro_done', '{"completedRetentionSeconds": 5}') -> 'configured' AS configured;
SELECT pg_temp.ack('ro_done', 'p', 'd5', g) AS acked FROM unnest(ARRAY[NULL, 'g2']) g;
SELECT * FROM pg_temp.sweep('ro_done', 'p', 3000);
SELECT * FROM pg_temp.state('ro_done', 'p');

------------------------------------------------------------------------------------------
-- maxWaitTimeSeconds: messages still pending for some group once older than it (not gated by
-- retentionEnabled, like the broker). The suite's retentionTestMaxTime: nobody consuming.
------------------------------------------------------------------------------------------
SELECT queen.configure('ro_wait', '{"maxWaitTimeSeconds": 10}') -> 'retentionSeconds' AS kept_for;
SELECT pg_temp.push1('ro_wait', 'p', 'w' || i) AS queued_offset FROM generate_series(0, 2) i;
SELECT * FROM pg_temp.sweep('ro_wait', 'p', 8);
SELECT * FROM pg_temp.sweep('ro_wait', 'p', 11);
SELECT * FROM pg_temp.state('ro_wait', 'p');
SELECT pg_temp.pop('ro_wait', 'p') AS pop;
-- Consumed by every group: left alone (the broker keeps them for completedRetentionSeconds).
SELECT queen.configure('ro_wait2', '{"maxWaitTimeSeconds": 10}') -> 'configured' AS configured;
SELECT pg_temp.push1('ro_wait2', 'p', 'v' || i) AS queued_offset FROM generate_series(0, 2) i;
SELECT pg_temp.pop('ro_wait2', 'p') AS qm_pop;
SELECT pg_temp.ack('ro_wait2', 'p', 'v' || i) AS acked FROM generate_series(0, 2) i;
SELECT * FROM pg_temp.sweep('ro_wait2', 'p', 3000);
-- A new pending message: kept while younger than 10 s; once it is older, it goes, and the
-- consumed segments below it go with it (the log is a prefix: see "The data rules").
SELECT pg_temp.push1('ro_wait2', 'p', 'v3') AS queued_offset;
SELECT * FROM pg_temp.sweep('ro_wait2', 'p', 8);
SELECT * FROM pg_temp.sweep('ro_wait2', 'p', 11);
SELECT * FROM pg_temp.state('ro_wait2', 'p');
-- A group that consumed nothing keeps every message pending: queue mode has acked all, g2 has
-- popped but acked nothing, so the old ones go.
SELECT queen.configure('ro_wait3', '{"maxWaitTimeSeconds": 10}') -> 'configured' AS configured;
SELECT pg_temp.push1('ro_wait3', 'p', 'u' || i) AS queued_offset FROM generate_series(0, 1) i;
SELECT pg_temp.pop('ro_wait3', 'p') AS qm_pop, pg_temp.pop('ro_wait3', 'p', 'g2') AS g2_pop;
SELECT pg_temp.ack('ro_wait3', 'p', 'u' || i) AS acked FROM generate_series(0, 1) i;
SELECT * FROM pg_temp.sweep('ro_wait3', 'p', 11);
SELECT * FROM pg_temp.state('ro_wait3', 'p');

------------------------------------------------------------------------------------------
-- The rules together, through the committing sweep (queen.retention_step at the real clock):
-- aged rows (2 hours old) of a queue with every rule go; a queue with none keeps them.
------------------------------------------------------------------------------------------
SELECT queen.configure('ro_all', '{"retentionEnabled": true, "retentionSeconds": 3600,
    "completedRetentionSeconds": 60, "maxWaitTimeSeconds": 600, "dedupWindowSeconds": 86400}') -> 'retentionSeconds' AS kept_for;
SELECT queen.configure('ro_none', '{"leaseTime": 60, "dedupWindowSeconds": 86400}') -> 'retentionSeconds' AS kept_for;
SELECT pg_temp.push1(q, 'p', q || i) AS queued_offset
FROM unnest(ARRAY['ro_all', 'ro_none']) q, generate_series(0, 1) i ORDER BY q, i;
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
 WHERE partition_id IN (pg_temp.pid('ro_all', 'p'), pg_temp.pid('ro_none', 'p'));
CREATE TEMP TABLE ro_run AS SELECT queen.retention_step(NULL) AS s;
DO $$
BEGIN
    WHILE NOT (SELECT s ? 'done' FROM ro_run) LOOP
        UPDATE ro_run SET s = queen.retention_step(s);
    END LOOP;
END
$$;
SELECT * FROM pg_temp.state('ro_all', 'p');
SELECT * FROM pg_temp.state('ro_none', 'p');

------------------------------------------------------------------------------------------
-- The sweeps' lock: taken and seen in pg_locks, released; releasing what is not held is false
-- (tests/isolation/specs/retention_sweep_lock.spec: a second session is refused while held).
------------------------------------------------------------------------------------------
SELECT queen.retention_sweep_lock() AS taken;
SELECT count(*) AS held FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 1903519077 AND objid = 1919251557 AND objsubid = 2
   AND pid = pg_backend_pid();
SELECT queen.retention_sweep_unlock() AS released;
SET client_min_messages = error;
SELECT queen.retention_sweep_unlock() AS released_again;
RESET client_min_messages;

-- Nothing of this test is left to age into eligibility while later tests run (their retention
-- calls would find work that depends on how long the suite took): its queues are dropped.
SELECT count(*) AS dropped FROM queen.queues q
 WHERE q.name LIKE 'ro\_%' AND queen.drop_queue(q.name) IS NOT NULL;
