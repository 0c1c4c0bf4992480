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
