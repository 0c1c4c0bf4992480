-- queen.slot_of: the placement of a partition in a sharded cluster, the same values as
-- src/core/common/slot.h (tests/unit/test_slot.cpp holds the same vectors).
SELECT q, p, queen.slot_of(q, p) AS slot64, queen.slot_of(q, p, 1024) AS slot1024,
       queen.slot_of(q, p, 1) AS slot1
FROM (VALUES ('orders', 'p1'), ('orders', 'p2'), ('orders', ''), ('', ''), ('ab', 'c'),
             ('a', 'bc'), ('events', 'customer-42')) AS v(q, p);
-- a slot count that is not a power of two: 22023
SELECT queen.slot_of('orders', 'p1', 96);
SELECT queen.slot_of('orders', 'p1', 0);
SELECT queen.slot_of('orders', 'p1', 131072);
-- NULL in, NULL out (STRICT)
SELECT queen.slot_of(NULL, 'p1') IS NULL AS is_null;
-- immutable and parallel safe
SELECT p.provolatile, p.proparallel FROM pg_proc p
WHERE p.oid = 'queen.slot_of(text, text)'::regprocedure;
-- the placement option: accepted and stored on a single server (not a shard: it may change)
SELECT queen.configure('slot_q', '{"placement": "single_slot"}');
SELECT q.name, pl.single_slot FROM queen.queue_placement pl JOIN queen.queues q ON q.id = pl.queue_id
WHERE q.name = 'slot_q';
SELECT status, message_offset FROM queen.push('slot_q', 'a', '[{"transactionId": "s1", "payload": 1}]');
SELECT queen.configure('slot_q', '{"placement": "partition", "dedupWindowSeconds": 3600}');
SELECT count(*) FROM queen.queue_placement pl JOIN queen.queues q ON q.id = pl.queue_id
WHERE q.name = 'slot_q';
SELECT queen.configure('slot_q', '{"placement": "everywhere"}');
-- not a shard: no membership, no slots, writes are never fenced
SELECT (SELECT count(*) FROM queen.shard_membership) AS member, (SELECT count(*) FROM queen.shard_slots) AS slots;
SELECT queen.drop_queue('slot_q') ->> 'partitionsDropped' AS dropped;
