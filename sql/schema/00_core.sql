-- queen: exact, windowed deduplication for message logs kept in PostgreSQL.
-- The schema part of the core: its tables and indexes and their pg_dump registrations, created
-- once by CREATE EXTENSION. A later version changes them here (what a fresh install creates) AND
-- in its hand-written delta sql/upgrade/<from>--<to>.sql (what an upgrade runs): see "Upgrades" in
-- docs/sql-interface.md. The functions over these tables are in sql/modules/00_core.sql.
\echo Use "CREATE EXTENSION queen" to load this file. \quit

CREATE TABLE queen.queues (
    id                   bigserial PRIMARY KEY,
    name                 text NOT NULL UNIQUE,
    dedup_window_seconds int NOT NULL DEFAULT 3600 CHECK (dedup_window_seconds >= 0),
    retention_seconds    int CHECK (retention_seconds > 0),
    dedup_by             text NOT NULL DEFAULT 'transactionId'
                         CHECK (dedup_by IN ('transactionId', 'content')),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    -- issue 27: Queen's encryptionEnabled, the flag every push reads with the partition row
    -- lock (no extra lookup): true = every payload stored must be a sidecar's encryption
    -- envelope (docs/encryption.md). Only queen.configure changes it (never to true while the
    -- queue holds messages); queue_options keeps the option's echo.
    encryption_enabled   boolean NOT NULL DEFAULT false,
    -- issue 29: Queen's namespace and task of the queue (configure's top-level fields; NULL
    -- when not sent), echoed by configure and listed by the admin views
    -- (sql/modules/90_admin_queues.sql)
    namespace            text,
    task                 text
);

CREATE TABLE queen.log_partitions (
    id          bigserial PRIMARY KEY,
    queue_id    bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name        text NOT NULL,
    last_offset bigint NOT NULL DEFAULT -1,
    log_start   bigint NOT NULL DEFAULT 0,
    txns_start  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- issue 28: the window is read from the primary key (no created_at index); rows at or
    -- below unordered_upto may carry created_at out of base_offset order (history written
    -- before 0.4.0, a restored older dump, a hand-edited created_at), the newest of them being
    -- unordered_newest; rows above it are monotone. NULL: not checked yet (the default, so a
    -- restored 0.3.0 dump or an imported slot is checked at its first push); -1: every row is
    -- in order. src/pg/storage/log_scan.cpp has the rule and why it is exact.
    unordered_upto   bigint,
    unordered_newest timestamptz,
    UNIQUE (queue_id, name)
);

-- One row per pushed segment; data is the segment encoding of src/core/common/segment_codec.h.
-- Column order is read positionally by src/pg/storage/log_scan.cpp: keep it.
--   hashes       the 16-byte xxh3_128 hashes of the segment's messages, in offset order (what
--                the probe reads); NULL when none are kept: appends to a reserved queue of
--                window 0 (never probed), or once retention dropped them (older than the window)
--   message_ids  their 16-byte message ids (so a duplicate's original id is read here, not out
--                of data; NULL in rows written by other tools: then data is read)
-- Retention keeps data and hashes on two clocks (retentionSeconds, the window): a segment whose
-- data expired while its hashes are still kept has data = '' (its offsets below the partition's
-- log_start, so no reader reaches it), one whose hashes expired while its data is kept has
-- hashes NULL; the row goes when both are gone. hashes and message_ids are STORAGE MAIN (inline
-- up to ~250 messages a row) so the probe reads them without ever detoasting data.
CREATE TABLE queen.log_segments (
    partition_id  bigint NOT NULL,
    base_offset   bigint NOT NULL,
    end_offset    bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    message_count int NOT NULL,
    data          bytea NOT NULL,
    hashes        bytea,
    message_ids   bytea,
    PRIMARY KEY (partition_id, base_offset)
);
-- lz4: segments are written once and read back whole; pglz cost more CPU than the rest of a push.
ALTER TABLE queen.log_segments ALTER COLUMN data SET COMPRESSION lz4;
ALTER TABLE queen.log_segments ALTER COLUMN hashes SET STORAGE MAIN;
ALTER TABLE queen.log_segments ALTER COLUMN message_ids SET STORAGE MAIN;
-- No index but the primary key (issue 28, 0.4.0: the (partition_id, created_at) index of 0.3.0 is
-- gone, one index entry less per push). A push stamps created_at = greatest(now, the partition's
-- newest row's created_at) under the partition lock (src/pg/queue/push_write.cpp), so the rows
-- above the partition's unordered_upto are monotone and the rows created since a time are a top
-- range of the primary key, read backwards from the newest row; the rows at or below
-- unordered_upto (older history) are read by primary key and filtered by time while their
-- newest stamp is inside the window (src/pg/storage/log_scan.cpp). A hand-edited created_at is
-- caught by the trigger queen.log_segments_order_guard (sql/modules/00_core.sql).

-- issue 28, 0.4.0: hash runs. A partition's stored hashes sorted by key, in immutable runs, so a
-- probe of a window too large to read (or to hold in a probe cache) costs a few index descents
-- per message, and no cache has to be warm (after a restart, a failover, without preloading).
-- One row per chunk of a run (about 160 entries of 12 bytes: a hash's first 8 bytes, its offset
-- minus run_lo): the run covers the partition's rows with base_offset in [run_lo, run_hi];
-- key_hi is the chunk's last key; the newest run's last chunk carries `runs`, the list of every
-- run of the partition ({lo, hi, lo, hi, ...}, ascending). Derived data, like an index: built
-- and merged by queen.push under the partition lock (src/pg/probe/runs_probe.cpp says how and
-- why it is exact), dumped with the rows they describe (so a restored database needs no
-- rebuild), dropped with their partition.
CREATE TABLE queen.log_hash_runs (
    partition_id bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    run_lo       bigint NOT NULL,
    key_hi       bigint NOT NULL,
    run_hi       bigint NOT NULL,
    entries      bytea NOT NULL,
    runs         bigint[],
    PRIMARY KEY (partition_id, run_lo, key_hi)
);
ALTER TABLE queen.log_hash_runs ALTER COLUMN entries SET STORAGE MAIN;

CREATE TABLE queen.consumer_groups (
    partition_id     bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name       text NOT NULL,
    committed_offset bigint NOT NULL DEFAULT -1,
    PRIMARY KEY (partition_id, group_name)
);

CREATE TABLE queen.consumer_acks (
    partition_id   bigint NOT NULL,
    group_name     text NOT NULL,
    message_offset bigint NOT NULL,
    PRIMARY KEY (partition_id, group_name, message_offset)
);

-- ---------------------------------------------------------------- backup
-- Every table and sequence holding user data is extension configuration, so pg_dump dumps its
-- rows (and the sequences' positions) and a restore into a fresh database is complete.
SELECT pg_catalog.pg_extension_config_dump('queen.queues', '');
SELECT pg_catalog.pg_extension_config_dump('queen.queues_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_partitions', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_partitions_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_segments', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_groups', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_acks', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_hash_runs', '');
