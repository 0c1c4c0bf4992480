-- The schema part of module 60 (a shard's side of a sharded cluster: docs/scale-out.md; its
-- functions are in sql/modules/60_slots.sql, the check in src/pg/storage/slot_fence.cpp):
-- created once, changed only through a delta (sql/upgrade/).

-- One row when this server is a shard of a cluster (none: a single server, the fence is off).
CREATE TABLE queen.shard_membership (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    shard      text NOT NULL,
    slot_count int NOT NULL CHECK (slot_count >= 1 AND slot_count <= 65536
                                   AND (slot_count & (slot_count - 1)) = 0),
    joined_at  timestamptz NOT NULL DEFAULT now()
);

-- The slots this shard owns ('owned'), or is moving off ('moving': fenced, every write of it
-- fails with 55Q02). A slot without a row is not owned here (55Q01).
CREATE TABLE queen.shard_slots (
    slot  int PRIMARY KEY CHECK (slot >= 0),
    state text NOT NULL CHECK (state IN ('owned', 'moving'))
);

-- A queue's placement (queen.configure's "placement"): single_slot keeps every partition of
-- the queue on the slot of (queue, ''). No row: each partition on its own slot.
CREATE TABLE queen.queue_placement (
    queue_id    bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    single_slot boolean NOT NULL
);

SELECT pg_catalog.pg_extension_config_dump('queen.shard_membership', '');
SELECT pg_catalog.pg_extension_config_dump('queen.shard_slots', '');
SELECT pg_catalog.pg_extension_config_dump('queen.queue_placement', '');
