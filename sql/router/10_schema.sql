-- queen_router (docs/scale-out.md): a router database holds the cluster's shard list and its
-- versioned slot map, and offers the queen SQL interface with the same names, arguments and
-- answers, each call sent by PL/Proxy to the shard owning its slot. The shards are ordinary
-- PostgreSQL servers with the queen extension. mk/router.mk concatenates sql/router/*.sql into
-- build/sql/queen_router--<version>.sql.
\echo Use "CREATE EXTENSION queen_router CASCADE" to load this file. \quit

-- The cluster: its slot count (a power of two, fixed once a shard is added) and the map's
-- version (bumped by every change of the shard list or the slot map; PL/Proxy and the
-- sidecar's router mode reload the map when it changes). At most one row, written by the first
-- change (queen.router_config_lock); no row means the defaults (64 slots, version 1). A row
-- inserted by CREATE EXTENSION would collide with the dumped one when a dump is restored.
CREATE TABLE queen.router_config (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    slot_count  int NOT NULL DEFAULT 64 CHECK (slot_count >= 1 AND slot_count <= 65536
                                               AND (slot_count & (slot_count - 1)) = 0),
    map_version bigint NOT NULL DEFAULT 1
);

-- The shards, in the order they were added (ordinal k draws partition ids from (k-1) * 2^40).
CREATE TABLE queen.router_shards (
    name     text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_]+$'),
    conninfo text NOT NULL,
    ordinal  int NOT NULL UNIQUE,
    added_at timestamptz NOT NULL DEFAULT now()
);

-- The slot map: every slot's owner (complete once the first shard is added).
CREATE TABLE queen.router_slots (
    slot  int PRIMARY KEY CHECK (slot >= 0),
    shard text NOT NULL REFERENCES queen.router_shards (name)
);

-- Queues configured single_slot ({"placement": "single_slot"}): every partition on the slot
-- of (queue, '').
CREATE TABLE queen.router_queues (
    queue       text PRIMARY KEY,
    single_slot boolean NOT NULL
);

-- Dedup views created through the router, and their queue (a view lives with its queue).
CREATE TABLE queen.router_views (
    name  text PRIMARY KEY,
    queue text NOT NULL
);

-- Every slot move, its phase ('fenced', 'copied', 'switched', 'done', 'failed').
CREATE TABLE queen.router_moves (
    id          bigserial PRIMARY KEY,
    slot        int NOT NULL,
    from_shard  text NOT NULL,
    to_shard    text NOT NULL,
    phase       text NOT NULL,
    rows_moved  bigint,
    partitions  bigint,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    fenced_at   timestamptz,
    switched_at timestamptz,
    finished_at timestamptz,
    error       text
);

SELECT pg_catalog.pg_extension_config_dump('queen.router_config', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_shards', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_slots', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_queues', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_views', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_moves', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_moves_id_seq', '');
