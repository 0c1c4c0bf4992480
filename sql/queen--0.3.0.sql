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
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE queen.log_partitions (
    id          bigserial PRIMARY KEY,
    queue_id    bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name        text NOT NULL,
    last_offset bigint NOT NULL DEFAULT -1,
    log_start   bigint NOT NULL DEFAULT 0,
    txns_start  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
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
-- The full-window probe and the probe cache's hydration read a partition's hash-carrying rows
-- by time (created_at >= window start) through this index, so their cost follows the window,
-- not the retained history (src/pg/probe/partition_probe.cpp). One entry per pushed segment
-- that keeps its hashes (none for a reserved queue's window-0 appends).
CREATE INDEX log_segments_created_idx ON queen.log_segments (partition_id, created_at)
    WHERE hashes IS NOT NULL;

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
-- The schema part of module 20 (streams and producers; its functions and locking protocol are in
-- sql/modules/20_producers.sql): created once, changed only through a delta (sql/upgrade/).

-- One row per stream; partition_id is its partition of queue __queen_streams.
CREATE TABLE queen.streams (
    partition_id       bigint PRIMARY KEY REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    name               text NOT NULL UNIQUE,
    content_type       text NOT NULL,
    ttl_seconds        bigint CHECK (ttl_seconds > 0),
    expires_at         timestamptz,
    closed             boolean NOT NULL DEFAULT false,
    closed_by_producer text,     -- the closing producer tuple (NULL: closed without one)
    closed_by_epoch    bigint,
    closed_by_seq      bigint,
    epoch_floor        bigint NOT NULL DEFAULT 0,  -- raised to every forgotten producer's epoch
    last_stream_seq    text COLLATE "C",           -- Stream-Seq of the last write that sent one
    created_at         timestamptz NOT NULL,
    touched_at         timestamptz NOT NULL,       -- last read or write (TTL streams)
    CHECK (ttl_seconds IS NULL OR expires_at IS NULL)
);

-- One row per (stream, producer): the state the decision reads.
CREATE TABLE queen.stream_producers (
    partition_id       bigint NOT NULL REFERENCES queen.streams (partition_id) ON DELETE CASCADE,
    producer_id        text NOT NULL,
    epoch              bigint NOT NULL,
    seq                bigint NOT NULL,       -- highest applied seq of the epoch
    newest_digest      bytea NOT NULL,        -- BLAKE3-256 of the newest write's body
    newest_start       bigint NOT NULL,       -- its receipt: Stream-Offset ...
    newest_next        bigint NOT NULL,       -- ... Stream-Next-Offset ...
    newest_closed      boolean NOT NULL,      -- ... and whether it closed the stream
    claim_digest       bytea NOT NULL,        -- BLAKE3-256 of the epoch's claim (seq 0)
    claim_closed_epoch bigint,                -- what the claim closed (NULL: nothing)
    claim_closed_seq   bigint,
    last_seen          timestamptz NOT NULL,  -- the newest applied write
    PRIMARY KEY (partition_id, producer_id)
) WITH (fillfactor = 70);
-- No index on last_seen: every applied append updates last_seen, and an indexed column would
-- make each of those updates a new tuple plus an entry in every index; without one the
-- update is HOT (fillfactor leaves the page room). The sweep of idle producers and the
-- eviction (both only for a new producer) scan the stream's producers through the primary
-- key's partition_id prefix (at most 4,096 rows).

SELECT pg_catalog.pg_extension_config_dump('queen.streams', '');
SELECT pg_catalog.pg_extension_config_dump('queen.stream_producers', '');
-- The schema part of module 30 (stream forks; its functions are in
-- sql/modules/30_stream_forks.sql): created once, changed only through a delta (sql/upgrade/).

CREATE TABLE queen.stream_forks (
    name        text PRIMARY KEY,  -- the fork
    source      text NOT NULL,     -- the stream it was forked from
    fork_offset text NOT NULL,     -- where in the source (20 digits, before the sub-offset)
    sub_offset  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL
);
CREATE INDEX stream_forks_source ON queen.stream_forks (source);
SELECT pg_catalog.pg_extension_config_dump('queen.stream_forks', '');
-- The schema part of module 40 (dedup views; its functions and locking are in
-- sql/modules/40_dedup_views.sql): created once, changed only through a delta (sql/upgrade/).

CREATE TABLE queen.dedup_views (
    id                   bigserial PRIMARY KEY,
    name                 text NOT NULL UNIQUE,
    queue_id             bigint NOT NULL REFERENCES queen.queues (id),
    options              jsonb NOT NULL,          -- the normalised options, as created
    key_path             text[] NOT NULL,
    rowtime_path         text[],
    order_rowtime        boolean NOT NULL,
    keep_last            boolean NOT NULL,
    update_before        boolean NOT NULL,
    generate_insert      boolean NOT NULL,
    mini_batch           boolean NOT NULL,
    mini_batch_size      bigint NOT NULL,
    compact_changes      boolean NOT NULL,
    state_ttl_ms         bigint NOT NULL,
    watermark            bigint,                  -- NULL: no watermark yet
    next_seq             bigint NOT NULL DEFAULT 1,
    consumed             bigint NOT NULL DEFAULT 0,
    late_rows            bigint NOT NULL DEFAULT 0,
    rows_without_rowtime bigint NOT NULL DEFAULT 0,
    last_now             timestamptz,
    -- which write of the view's state the tables hold: the writing transaction's full id, set
    -- by every dedup_advance / dedup_watermark / dedup_flush. A backend's in-memory copy of the
    -- state (src/core/views/state_cache.h) is used only while this is the token it wrote.
    state_token          bigint,
    -- how many buckets of queen.dedup_state_buckets the view's keys are spread over (a key's
    -- bucket is its hash modulo this), and how many keys they hold: when the keys pass 32 per
    -- bucket, the call that stores them doubles the buckets and regroups every state
    state_buckets        int NOT NULL DEFAULT 64 CHECK (state_buckets BETWEEN 1 AND 1048576),
    state_keys           bigint NOT NULL DEFAULT 0,
    -- delta rows (queen.dedup_state_buckets rows with a negative bucket) written since the
    -- buckets were last folded, and how many states they hold together (both 0 when the
    -- buckets hold the whole state)
    state_deltas         int NOT NULL DEFAULT 0,
    delta_states         bigint NOT NULL DEFAULT 0,
    created_at           timestamptz NOT NULL DEFAULT now()
);

-- The keyed state, many keys per row: each view's keys are spread by a stable hash of the key
-- (FNV-1a 64 modulo the view's state_buckets, src/core/views/bucket.h) over at most
-- state_buckets rows, each holding the states of its keys packed in key order: per key its
-- kind (1 kept row: keep-last, retracting keep-first, proctime keep-first's flag; 2 pending
-- rowtime keep-first candidate; 3 fired marker), payload (none where only a marker is needed),
-- rowtime, written_at (the processing time of the last write: its TTL clock) and source
-- partition and offset. A call rewrites each bucket it changes once: a few hundred rows
-- instead of one per key. A call that changes few of a large view's keys (a quarter or less
-- of at least 1024) writes only their states instead, as a delta row: bucket -1, -2, ... (the
-- view's state_deltas), the same packed form with keys from any bucket; a key's newest state is
-- in the delta row of highest number holding it, else in its bucket. The call that would take
-- the deltas past one state per key of the view (or past 64 rows) folds them: it rewrites the
-- buckets they touch and deletes them. queen.dedup_state_rows(view) reads it back one row per
-- key.
-- The hot tables (state, changelog, pending) carry no foreign key (a per-row RI check would
-- cost more than the operator): drop_dedup_view deletes their rows itself.
CREATE TABLE queen.dedup_state_buckets (
    view_id bigint NOT NULL,
    bucket  int NOT NULL,
    states  bytea NOT NULL,
    PRIMARY KEY (view_id, bucket)
);
-- Half-empty pages: a bucket's rewrite stays on its page as a HOT update (no index insert);
-- a bucket over ~2 kB is compressed (lz4) and kept in line where it fits.
ALTER TABLE queen.dedup_state_buckets SET (fillfactor = 50);
ALTER TABLE queen.dedup_state_buckets ALTER COLUMN states SET STORAGE MAIN,
    ALTER COLUMN states SET COMPRESSION lz4;

-- The pending rowtime keep-first candidates by rowtime (what a watermark releases). A separate
-- table, not an index on the state: an indexed rowtime would make every state rewrite of a
-- rowtime view a non-HOT update.
-- arrival numbers the candidate row in the view's consumption order: a watermark emits what it
-- releases in that order.
CREATE TABLE queen.dedup_candidates (
    view_id bigint NOT NULL,
    rowtime bigint NOT NULL,
    key     text COLLATE "C" NOT NULL,
    arrival bigint NOT NULL,
    PRIMARY KEY (view_id, rowtime, key)
);

-- The changelog, one row per call that emitted anything: changes holds its changes (seq
-- first_seq..last_seq) packed in seq order (src/core/views/changes.h: kind, key, payload as
-- jsonb's binary form, rowtime, source partition and offset). One tuple per call, not one per change: the
-- per-row heap and index work is what made a changelog cost more than the operator.
CREATE TABLE queen.dedup_change_blocks (
    view_id   bigint NOT NULL,
    first_seq bigint NOT NULL,
    last_seq  bigint NOT NULL,
    changes   bytea NOT NULL,
    PRIMARY KEY (view_id, first_seq)
);
ALTER TABLE queen.dedup_change_blocks ALTER COLUMN changes SET COMPRESSION lz4;

-- The next unconsumed offset of each partition a view has consumed from.
CREATE TABLE queen.dedup_offsets (
    view_id      bigint NOT NULL REFERENCES queen.dedup_views (id) ON DELETE CASCADE,
    partition_id bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    next_offset  bigint NOT NULL,
    PRIMARY KEY (view_id, partition_id)
);

-- The pending mini-batch bundle, in arrival order.
CREATE TABLE queen.dedup_pending (
    view_id       bigint NOT NULL,
    pos           int NOT NULL,
    key           text NOT NULL,
    payload       jsonb NOT NULL,
    rowtime       bigint,
    src_partition text NOT NULL,
    src_offset    bigint NOT NULL,
    PRIMARY KEY (view_id, pos)
);

SELECT pg_catalog.pg_extension_config_dump('queen.dedup_views', '');
SELECT pg_catalog.pg_extension_config_dump('queen.dedup_views_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.dedup_state_buckets', '');
SELECT pg_catalog.pg_extension_config_dump('queen.dedup_candidates', '');
SELECT pg_catalog.pg_extension_config_dump('queen.dedup_change_blocks', '');
SELECT pg_catalog.pg_extension_config_dump('queen.dedup_offsets', '');
SELECT pg_catalog.pg_extension_config_dump('queen.dedup_pending', '');
-- queen: the consuming model of Queen MQ's wire (issue 18): queue options, per (partition,
-- group) consumer state (lease, batch, ack count, retry counter), subscription records and the
-- dead-letter queue. The cursor itself is queen.consumer_groups.committed_offset (the core's
-- table). Functions: sql/modules/60_consume.sql; lock order: the top of sql/modules/00_core.sql.
-- A later version changes these tables here AND in its delta (sql/upgrade/).

-- Queen's 15 queue options as configure stored them (all 15 keys, defaults filled in). A queue
-- without a row has the defaults (queen.consume_defaults()).
CREATE TABLE queen.queue_options (
    queue_id bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    options  jsonb NOT NULL
);

-- One row per (partition, group) that popped there: its lease (lease_id NULL = none; a lease
-- is live while lease_expires_at > now), the size of the batch it delivered, how many of them
-- were acked since, and the retry counter (reset when a batch completes).
CREATE TABLE queen.consumer_state (
    partition_id     bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name       text NOT NULL,
    lease_id         uuid,
    lease_expires_at timestamptz,
    batch_size       int NOT NULL DEFAULT 0,
    acked_count      int NOT NULL DEFAULT 0,
    retry_count      int NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, group_name)
);
CREATE INDEX consumer_state_lease_idx ON queen.consumer_state (lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX consumer_state_group_idx ON queen.consumer_state (group_name);

-- A group's subscription on a queue, fixed at its first pop there (§4 of the wire facts):
-- start_at NULL = all history, else the messages created at or after it. Keyed by the queue's
-- name, not its id: deleting a queue keeps it (the broker's rule); deleting the group drops it.
CREATE TABLE queen.consumer_subscriptions (
    queue_name text NOT NULL,
    group_name text NOT NULL,
    mode       text NOT NULL,
    start_at   timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, group_name)
);

-- The dead-letter queue: a copy of each message a nack (retries exhausted) or a "dlq" ack moved
-- out, with the error; the cursor moved past it.
CREATE TABLE queen.consumer_dlq (
    id             bigserial PRIMARY KEY,
    partition_id   bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name     text NOT NULL,
    message_offset bigint NOT NULL,
    message_id     uuid NOT NULL,
    transaction_id text NOT NULL,
    payload        jsonb,
    error_message  text NOT NULL,
    retry_count    int NOT NULL,
    created_at     timestamptz NOT NULL,
    failed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consumer_dlq_partition_idx ON queen.consumer_dlq (partition_id, failed_at);

SELECT pg_catalog.pg_extension_config_dump('queen.queue_options', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_state', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_subscriptions', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_dlq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_dlq_id_seq', '');
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
-- queen: maintenance mode of Queen MQ's wire (GET/POST /api/v1/system/maintenance; issue 18).
-- While it is on, pushes through the sidecar are parked here, durably (written and committed
-- before the push is answered "buffered"), and pushed through the normal exact path, in push
-- order, when it is switched off. The mode is the database's, so every sidecar in front of it
-- agrees. Functions: sql/modules/70_maintenance.sql; lock order: the top of sql/modules/00_core.sql.
-- A later version changes these tables here AND in its delta (sql/upgrade/).

-- The mode: at most one row (none = off, as a fresh install). Parking takes it FOR SHARE and
-- switching takes it FOR UPDATE, so a switch off waits for every park in flight and its drain
-- sees all of them.
CREATE TABLE queen.maintenance_mode (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    enabled    boolean NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- The parked pushes, in push order (seq). payload is json, not jsonb: the text as it was sent,
-- stored verbatim when delivered. message_id is the id the message gets when the drain stores
-- it (an item sent without a transactionId has that id's text as its transactionId).
CREATE TABLE queen.maintenance_parked (
    seq            bigserial PRIMARY KEY,
    queue          text NOT NULL,
    partition      text NOT NULL,
    transaction_id text NOT NULL,
    message_id     uuid NOT NULL,
    payload        json NOT NULL,
    parked_at      timestamptz NOT NULL DEFAULT now()
);
-- the drain reads one partition's parked messages in push order
CREATE INDEX maintenance_parked_pair_idx ON queen.maintenance_parked (queue, partition, seq);

SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_mode', '');
SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_parked', '');
SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_parked_seq_seq', '');
-- queen: exact, windowed deduplication for message logs kept in PostgreSQL.
-- The routines part of the core: every function and procedure (its tables are in
-- sql/schema/00_core.sql; every privilege is in sql/privileges.sql). Each is written CREATE OR
-- REPLACE and runs again in every upgrade script, so an upgraded database gets exactly a fresh
-- install's routines: nothing here may assume it runs on an empty schema. A routine removed, or
-- whose arguments or result change, is dropped by the version's delta (sql/upgrade/). See
-- "Upgrades" in docs/sql-interface.md and the Makefile.

-- Locking protocol (shared by every write path; see src/pg/queue/push_path.cpp):
--   * a push takes its partition's queen.log_partitions row lock (FOR NO KEY UPDATE) before
--     probing and holds it until commit: the row lock is the partition's write serializer.
--     NO KEY UPDATE (the allocator update never changes a key) still excludes every other
--     pusher, but not the KEY SHARE lock a foreign-key check of consumer_groups takes, so an
--     ack never waits on a push;
--   * anything that locks several partitions (push_segments, transaction, run_retention,
--     drop_queue) takes them in ascending id order, the single global order, so two of them
--     cannot deadlock;
--   * creating partitions waits on other transactions' uncommitted unique-index entries, so
--     creation has a global order too: queen.transaction creates every partition it names
--     sorted by (queue, partition) (collation "C") before it locks any; partition creation
--     only ever happens before partition locks are taken;
--   * queue rows are locked (configure, drop_queue) before any partition row, never after;
--   * acks lock only their consumer group row, after any partition locks their caller holds;
--   * the retention procedure holds at most one partition lock at a time (it commits after
--     each partition's batch). On a shard, a purge takes the partition's slot fence lock in
--     ShareLock mode after the partition row lock, exactly like a push
--     (queen.slot_fence_owns_partition; src/pg/storage/slot_fence.h).
--   * the consuming model (sql/modules/60_consume*.sql) adds, after the partition locks
--     (FOR NO KEY UPDATE by queen.transaction_wire, like a push; FOR KEY SHARE by wire acks,
--     pops and group deletions, which no push conflicts with, only drop_queue's FOR UPDATE): a group's
--     subscription row (created at its first pop of a queue, before any state row; a "new"
--     subscription then creates the group's cursor rows in ascending partition id order), then
--     queen.consumer_state rows (FOR UPDATE) in ascending (partition id, group name
--     COLLATE "C") order, created in that same order, then the queen.consumer_groups row of a
--     (partition, group) whose state row it holds (the cursor), then queen.consumer_dlq
--     inserts. A pop claims several partitions with SKIP LOCKED (partition, then state row),
--     so it never waits on a push nor on another pop while it holds anything; wire acks take
--     their partitions and then every state row they touch before changing any; renewals take
--     state rows only; queen.transaction_wire locks its partitions first, then its state
--     rows, so a transaction mixing pushes and acks never deadlocks with a pop, an ack,
--     another transaction or a queue deletion. A pop is one statement committed on its own
--     (as the sidecar calls it): popping and then pushing in one transaction would hold a
--     state row before a partition lock, against this order.
--   * maintenance mode (sql/modules/70_maintenance.sql): its one row (queen.maintenance_mode)
--     is taken before any partition lock, never after one: FOR SHARE by a park (which takes no
--     partition lock at all), FOR UPDATE by a switch, whose drain then creates the parked
--     messages' partitions in the creation order above and locks them in ascending id order
--     as it pushes them. Nothing else takes that row, so it adds no cycle.
--   * a shard of a cluster (sql/modules/60_slots.sql) takes its slot fence lock (ShareLock on an
--     advisory-class lock of the slot) after the partition row lock of every write (taken
--     together by the lock primitives queen.partitions_lock_for_write /
--     queen.partition_lock_for_write, and in C by partition_lock()), or before
--     creating a partition, or before an ack's group row lock; the consuming model's writers
--     (wire acks, pops, group deletions, queen.transaction_wire) take it after their partition
--     locks and before any state row, a lease renewal before its state rows, the first pop of
--     a "new" subscription before the subscription row, a dedup view's
--     writers after the view row; queen.shard_fence_slot takes it in ExclusiveLock mode and no
--     other lock of queen's, so it never waits in a circle (src/pg/storage/slot_fence.h; every
--     fenced writer: docs/scale-out.md "Fenced writers").

-- ---------------------------------------------------------------- C entry points
CREATE OR REPLACE FUNCTION queen.txn_hash(text) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_txn_hash_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The slot of a partition in a sharded cluster (src/core/common/slot.h; docs/scale-out.md):
-- XXH3_64bits(queue || '\0' || partition) & (slot_count - 1), slot_count a power of two (64 by
-- default). A queue kept on one slot ({"placement": "single_slot"}) is placed by partition ''.
CREATE OR REPLACE FUNCTION queen.slot_of(p_queue text, p_partition text) RETURNS integer
    AS 'MODULE_PATHNAME', 'queen_slot_of_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION queen.slot_of(p_queue text, p_partition text, p_slot_count integer)
    RETURNS integer
    AS 'MODULE_PATHNAME', 'queen_slot_of_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION queen.log_unnest_hashes(bytea, OUT idx int, OUT h bytea) RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'queen_log_unnest_hashes_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Earliest offset at which a hash is stored in a partition's retained hashes
-- (queen.log_segments.hashes), or NULL.
CREATE OR REPLACE FUNCTION queen.log_find_hash(p_partition_id bigint, p_hash bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_log_find_hash_v1'
    LANGUAGE C STABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- Earliest retained offset above p_after holding a hash, or NULL (acks by transactionId; the
-- per-backend ack digest keeps its cost independent of the window: src/pg/queue/ack_lookup.cpp).
-- Internal: no grant.
CREATE OR REPLACE FUNCTION queen.log_find_hash_after(p_partition_id bigint, p_hash bytea, p_after bigint)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_log_find_hash_after_v1'
    LANGUAGE C STABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- p_hint(s): the hinted vouch (src/pg/queue/push_hints.cpp). 12 bytes per hint, big-endian
-- (uint32 message index, strictly ascending; int64 offset at or below p_verified): "this
-- message's earliest in-window occurrence is at that offset". Each hinted original is
-- confirmed against the stored row; one that does not confirm sends the segment to the full
-- probe. NULL or empty: no hints. Ignored with the vouch (p_window NULL or too small).
CREATE OR REPLACE FUNCTION queen.push_segment(p_partition_id bigint, p_hashes bytea, p_segment bytea,
                                   p_verified bigint DEFAULT -1, p_window int DEFAULT NULL,
                                   p_hint bytea DEFAULT NULL)
    RETURNS TABLE (idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_segment_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.push_segments(p_partition_ids bigint[], p_hashes bytea[],
                                    p_segments bytea[], p_verified bigint[] DEFAULT NULL,
                                    p_windows int[] DEFAULT NULL, p_hints bytea[] DEFAULT NULL)
    RETURNS TABLE (seg int, idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_segments_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.push(p_queue text, p_partition text, p_items jsonb)
    RETURNS TABLE (index int, status text, message_id uuid, transaction_id text,
                   message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.read(p_queue text, p_partition text, p_from_offset bigint, p_limit int)
    RETURNS TABLE (message_offset bigint, message_id uuid, transaction_id text, payload jsonb,
                   created_at timestamptz)
    AS 'MODULE_PATHNAME', 'queen_read_v1'
    LANGUAGE C STABLE
    SET search_path = pg_catalog, pg_temp;

-- Per-backend probe cache statistics (for tests and monitoring).
CREATE OR REPLACE FUNCTION queen.probe_cache_stats(OUT partitions int, OUT bytes bigint, OUT hits bigint,
                                        OUT confirmed bigint, OUT fallbacks bigint,
                                        OUT rows_read bigint)
    AS 'MODULE_PATHNAME', 'queen_probe_cache_stats_v1'
    LANGUAGE C VOLATILE;

-- Per-backend counters of the hinted vouch (push_segment(s)' p_hint(s)): segments whose hints
-- were looked at, hints, segments whose hints all confirmed, segments sent to the full probe.
CREATE OR REPLACE FUNCTION queen.push_hint_stats(OUT hinted_segments bigint, OUT hints bigint,
                                      OUT confirmed bigint, OUT fallbacks bigint)
    AS 'MODULE_PATHNAME', 'queen_push_hint_stats_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- reserved queue names
-- Queue names starting with "__queen_" belong to queen's own modules (the streams module keeps
-- its streams in the queue __queen_streams, which it creates and writes through its own
-- functions). Every user-facing entry point that takes a queue name refuses them with 42501
-- (insufficient_privilege) before it reads or writes anything, so no user can push into,
-- configure, transact on, ack in, read or drop such a queue, nor create one. Internal.
CREATE OR REPLACE FUNCTION queen.reserved_queue_guard(p_queue text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_catalog.starts_with(p_queue, '__queen_') THEN
        RAISE EXCEPTION 'queue name "%" is reserved for queen''s internal use', p_queue
            USING ERRCODE = '42501', HINT = 'Queue names starting with "__queen_" are reserved.';
    END IF;
END
$$;

-- The same for every name of an array (the first reserved one is named). Internal.
CREATE OR REPLACE FUNCTION queen.reserved_queue_guard(p_queues text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM queen.reserved_queue_guard(q) FROM pg_catalog.unnest(p_queues) AS q;
END
$$;

-- ---------------------------------------------------------------- partition locks for writing
-- The SQL writers' partition lock primitives: the partition row locks, then the shard's slot
-- fence (issue 20) of those partitions, in one call, so that a writer of partition state cannot
-- take the lock and forget the fence. Every SQL function that writes partition-owned state
-- (log, cursors, leases, DLQ, streams) either takes its partitions through one of these, or is
-- an exemption listed with its reason in tests/regress/sql/slot_fence_primitives.sql (which
-- finds the writers in the catalog; docs/scale-out.md "Fenced writers"). The C push path does
-- the same in src/pg/storage/partition_lock.cpp.
-- Lock order (the protocol above): the queen.log_partitions rows in ascending id order, in the
-- strength asked ('no key update': a push or a transaction; 'key share': acks, pops, group
-- deletions; 'update': drop_queue), then the slot fence lock of each partition (ShareLock,
-- ascending id), then nothing: the caller takes its state rows after. The fence never waits for
-- a partition row (queen.shard_fence_slot takes only the fence lock), so adding it after the
-- row locks adds no cycle.

-- Lock the partitions p_pids (NULLs and repeats ignored; absent ones are skipped) in ascending
-- id order in strength p_strength, then check the slot fence of every distinct id given
-- (55Q02 slot moving, 55Q01 not owned here; a no-op off a shard). Returns the ids locked,
-- ascending. Internal.
CREATE OR REPLACE FUNCTION queen.partitions_lock_for_write(p_pids bigint[], p_strength text)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_locked bigint[];
BEGIN
    IF p_strength = 'no key update' THEN
        SELECT COALESCE(array_agg(l.id ORDER BY l.id), '{}') INTO v_locked
          FROM (SELECT p.id FROM queen.log_partitions p WHERE p.id = ANY (p_pids)
                 ORDER BY p.id FOR NO KEY UPDATE) l;
    ELSIF p_strength = 'key share' THEN
        SELECT COALESCE(array_agg(l.id ORDER BY l.id), '{}') INTO v_locked
          FROM (SELECT p.id FROM queen.log_partitions p WHERE p.id = ANY (p_pids)
                 ORDER BY p.id FOR KEY SHARE) l;
    ELSIF p_strength = 'update' THEN
        SELECT COALESCE(array_agg(l.id ORDER BY l.id), '{}') INTO v_locked
          FROM (SELECT p.id FROM queen.log_partitions p WHERE p.id = ANY (p_pids)
                 ORDER BY p.id FOR UPDATE) l;
    ELSE
        RAISE EXCEPTION 'queen: unknown partition lock strength "%"', p_strength USING ERRCODE = 'XX000';
    END IF;
    -- the fence, after every row lock, before the caller writes anything
    PERFORM queen.slot_fence_check_partition(d.pid)
       FROM (SELECT DISTINCT u.pid FROM pg_catalog.unnest(p_pids) u(pid)
              WHERE u.pid IS NOT NULL ORDER BY 1) d;
    RETURN v_locked;
END
$$;

-- One partition, as queen.partitions_lock_for_write, for a pop: with p_skip the row is taken
-- SKIP LOCKED and a slot this shard may not write (moving, or not its own) is passed by
-- instead of refused (queen.slot_fence_owns_partition: the fence lock held all the same).
-- 'locked' (row locked, fence passed), 'absent' (no such row, or with p_skip one locked by
-- another transaction: nothing locked, nothing checked) or, with p_skip only, 'fenced' (row
-- locked, slot not writable here). Internal.
CREATE OR REPLACE FUNCTION queen.partition_lock_for_write(p_pid bigint, p_strength text,
                                                          p_skip boolean DEFAULT false)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_strength = 'key share' AND p_skip THEN
        PERFORM 1 FROM queen.log_partitions WHERE id = p_pid FOR KEY SHARE SKIP LOCKED;
    ELSIF p_strength = 'key share' THEN
        PERFORM 1 FROM queen.log_partitions WHERE id = p_pid FOR KEY SHARE;
    ELSIF p_strength = 'no key update' AND p_skip THEN
        PERFORM 1 FROM queen.log_partitions WHERE id = p_pid FOR NO KEY UPDATE SKIP LOCKED;
    ELSIF p_strength = 'no key update' THEN
        PERFORM 1 FROM queen.log_partitions WHERE id = p_pid FOR NO KEY UPDATE;
    ELSE
        RAISE EXCEPTION 'queen: unknown partition lock strength "%"', p_strength USING ERRCODE = 'XX000';
    END IF;
    IF NOT FOUND THEN
        RETURN 'absent';
    END IF;
    -- the fence, after the row lock, before the caller writes anything
    IF p_skip THEN
        IF NOT queen.slot_fence_owns_partition(p_pid) THEN
            RETURN 'fenced';
        END IF;
    ELSE
        PERFORM queen.slot_fence_check_partition(p_pid);
    END IF;
    RETURN 'locked';
END
$$;

-- ---------------------------------------------------------------- SQL-level functions

-- Find or create a partition (queue created too); the sidecar's metadata call.
CREATE OR REPLACE FUNCTION queen.resolve_partition(p_queue text, p_partition text,
    OUT partition_id bigint, OUT queue_id bigint, OUT dedup_window_seconds int,
    OUT last_offset bigint, OUT txns_start bigint, OUT dedup_by text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF p_partition IS NULL OR p_partition = '' THEN
        RAISE EXCEPTION 'partition name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    LOOP
        SELECT p.id, q.id, q.dedup_window_seconds, p.last_offset, p.txns_start, q.dedup_by
          INTO partition_id, queue_id, dedup_window_seconds, last_offset, txns_start, dedup_by
          FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE q.name = p_queue AND p.name = p_partition;
        IF FOUND THEN
            RETURN;
        END IF;
        PERFORM queen.slot_fence_check(p_queue, p_partition);  -- a shard's fence (issue 20)
        INSERT INTO queen.queues (name) VALUES (p_queue) ON CONFLICT (name) DO NOTHING;
        INSERT INTO queen.log_partitions (queue_id, name)
            SELECT q.id, p_partition FROM queen.queues q WHERE q.name = p_queue
            ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING;
    END LOOP;
END
$$;

-- Look up an existing partition; 42704 when the queue or partition is unknown.
CREATE OR REPLACE FUNCTION queen.partition_id(p_queue text, p_partition text) RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_qid bigint;
    v_pid bigint;
BEGIN
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', p_queue USING ERRCODE = '42704';
    END IF;
    SELECT id INTO v_pid FROM queen.log_partitions WHERE queue_id = v_qid AND name = p_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition "%" of queue "%" does not exist', p_partition, p_queue
            USING ERRCODE = '42704';
    END IF;
    RETURN v_pid;
END
$$;

-- Full replace of a queue's options; an omitted key returns to its default. Options are queen's
-- own (dedupWindowSeconds, dedupBy; retentionSeconds is shared) and Queen MQ's 15
-- (queen.consume_defaults(): stored, echoed, and honoured where docs/queen-compatibility.md
-- says so); any other key is 22023. A configure naming one of Queen's own 14 keys (the wire's:
-- the client always sends them) also creates the partition "Default", like the broker, and
-- answers {configured, queue, queueId, partitionId (Default's UUID), namespace, task, options
-- (Queen's 15 as stored), dedupWindowSeconds, retentionSeconds, dedupBy}; one naming only
-- queen's own keys creates no partition and answers {queue, dedupWindowSeconds,
-- retentionSeconds, dedupBy} as in 0.2.0 (every unsent option still returns to its default).
-- Locks: the queue row (FOR NO KEY UPDATE), then creates Default (no partition row lock; on a
-- shard of a cluster only the owner of its slot creates it, the others answer partitionId null).
CREATE OR REPLACE FUNCTION queen.configure(p_queue text, p_options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_opts    jsonb := COALESCE(p_options, '{}'::jsonb);
    v_key     text;
    v_window  int := 3600;
    v_ret     int := NULL;
    v_by      text := 'transactionId';
    v_single  boolean := false;  -- placement (issue 20): "single_slot"
    v_old     int;
    v_val     jsonb;
    v_queen   jsonb := queen.consume_defaults();
    v_wire    boolean := false;
    v_qid     bigint;
    v_pid     bigint;
    v_maxwait numeric;
BEGIN
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    IF jsonb_typeof(v_opts) <> 'object' THEN
        RAISE EXCEPTION 'options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR v_key IN SELECT jsonb_object_keys(v_opts) LOOP
        IF v_key NOT IN ('dedupWindowSeconds', 'retentionSeconds', 'dedupBy', 'placement')
           AND NOT (v_queen ? v_key) THEN
            RAISE EXCEPTION 'unknown option "%"', v_key USING ERRCODE = '22023',
                HINT = 'Options are dedupWindowSeconds, dedupBy, placement and Queen''s 15 queue options (docs/queen-compatibility.md).';
        END IF;
        IF v_queen ? v_key AND v_key <> 'retentionSeconds' THEN
            v_wire := true;
        END IF;
    END LOOP;

    v_val := v_opts -> 'dedupWindowSeconds';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 0 OR v_val::numeric > 2147483647 THEN
            RAISE EXCEPTION 'dedupWindowSeconds must be a whole number of seconds >= 0'
                USING ERRCODE = '22023';
        END IF;
        v_window := v_val::int;
    END IF;

    -- retentionSeconds: 0 (Queen's default) or null keeps forever
    v_val := v_opts -> 'retentionSeconds';
    IF v_val IS NOT NULL AND jsonb_typeof(v_val) <> 'null' THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 0 OR v_val::numeric > 2147483647 THEN
            RAISE EXCEPTION 'retentionSeconds must be a whole number of seconds > 0 (or 0 or null: keep)'
                USING ERRCODE = '22023';
        END IF;
        v_ret := NULLIF(v_val::int, 0);
    END IF;

    v_val := v_opts -> 'dedupBy';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'string' OR v_val #>> '{}' NOT IN ('transactionId', 'content') THEN
            RAISE EXCEPTION 'dedupBy must be "transactionId" or "content"' USING ERRCODE = '22023';
        END IF;
        v_by := v_val #>> '{}';
    END IF;

    v_val := v_opts -> 'placement';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'string' OR v_val #>> '{}' NOT IN ('partition', 'single_slot') THEN
            RAISE EXCEPTION 'placement must be "partition" or "single_slot"' USING ERRCODE = '22023';
        END IF;
        v_single := v_val #>> '{}' = 'single_slot';
    END IF;

    -- Queen's options: checked one by one, unsent (or null) ones back to their defaults
    v_queen := queen.consume_options_check(v_opts);
    -- maxWaitTimeSeconds bounds how long a message is kept, like retentionSeconds
    v_maxwait := (v_queen ->> 'maxWaitTimeSeconds')::numeric;
    IF v_maxwait > 0 THEN
        v_ret := least(COALESCE(v_ret, 2147483647), least(v_maxwait, 2147483647)::int);
    END IF;

    SELECT id, dedup_window_seconds INTO v_qid, v_old FROM queen.queues WHERE name = p_queue FOR NO KEY UPDATE;
    IF FOUND THEN
        IF NOT (v_opts ? 'dedupWindowSeconds') AND v_old <> 3600 THEN
            RAISE NOTICE 'queue "%": dedupWindowSeconds was % and is reset to the default 3600', p_queue, v_old
                USING DETAIL = 'configure is a full replace: an omitted option returns to its default.',
                      HINT = 'Name dedupWindowSeconds in every configure call to keep it.';
        END IF;
        UPDATE queen.queues
           SET dedup_window_seconds = v_window, retention_seconds = v_ret, dedup_by = v_by,
               updated_at = now()
         WHERE id = v_qid;
    ELSE
        INSERT INTO queen.queues (name, dedup_window_seconds, retention_seconds, dedup_by)
        VALUES (p_queue, v_window, v_ret, v_by)
        ON CONFLICT (name) DO UPDATE
           SET dedup_window_seconds = EXCLUDED.dedup_window_seconds,
               retention_seconds = EXCLUDED.retention_seconds,
               dedup_by = EXCLUDED.dedup_by, updated_at = now()
        RETURNING id INTO v_qid;
    END IF;
    INSERT INTO queen.queue_options (queue_id, options) VALUES (v_qid, v_queen)
    ON CONFLICT (queue_id) DO UPDATE SET options = EXCLUDED.options;
    -- placement before any partition is created (it cannot change once the queue has some)
    PERFORM queen.queue_set_placement(p_queue, v_single);
    IF v_wire THEN
        BEGIN
            SELECT r.partition_id INTO v_pid FROM queen.resolve_partition(p_queue, 'Default') r;
        EXCEPTION WHEN SQLSTATE '55Q01' THEN
            -- a shard that does not own Default's slot (the router configures every shard;
            -- Default's owner creates it): nothing of it here, partitionId null
            v_pid := NULL;
        END;
    END IF;

    IF NOT v_wire THEN
        IF v_single THEN
            RETURN jsonb_build_object('queue', p_queue, 'dedupWindowSeconds', v_window,
                                      'retentionSeconds', v_ret, 'dedupBy', v_by,
                                      'placement', 'single_slot');
        END IF;
        RETURN jsonb_build_object('queue', p_queue, 'dedupWindowSeconds', v_window,
                                  'retentionSeconds', v_ret, 'dedupBy', v_by);
    END IF;
    RETURN jsonb_build_object('queue', p_queue, 'dedupWindowSeconds', v_window,
                              'retentionSeconds', v_ret, 'dedupBy', v_by,
                              'configured', true, 'queueId', v_qid,
                              'partitionId', queen.partition_uuid(v_pid),
                              'namespace', NULL, 'task', NULL, 'options', v_queen);
END
$$;

-- A consumer group's position: every offset at or below it is acked (-1: none).
CREATE OR REPLACE FUNCTION queen.committed_offset(p_queue text, p_partition text,
                                       p_consumer_group text DEFAULT '__QUEUE_MODE__')
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid bigint := queen.partition_id(p_queue, p_partition);
    v_off bigint;
BEGIN
    SELECT committed_offset INTO v_off FROM queen.consumer_groups
     WHERE partition_id = v_pid AND group_name = p_consumer_group;
    RETURN COALESCE(v_off, -1);
END
$$;

-- ---------------------------------------------------------------- acks
-- A group's position is its committed offset (every offset at or below it is acked) plus the
-- acks above it waiting for the gap below them to fill (queen.consumer_acks).
-- Locks: an ack locks only its consumer group's row (FOR UPDATE, created on first use), after
-- any partition locks its caller holds (queen.transaction), and never a partition row, so acks
-- never wait on pushes. Resolving a transactionId happens under the group lock, so two
-- concurrent acks of one transactionId in one group resolve two different occurrences.

-- Create (if needed) and lock a group's row; returns its committed offset. Internal.
CREATE OR REPLACE FUNCTION queen.ack_lock_group(p_pid bigint, p_group text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pos bigint;
BEGIN
    PERFORM queen.slot_fence_check_partition(p_pid);  -- a shard's fence (issue 20)
    INSERT INTO queen.consumer_groups (partition_id, group_name)
    VALUES (p_pid, p_group) ON CONFLICT DO NOTHING;
    SELECT committed_offset INTO v_pos FROM queen.consumer_groups
     WHERE partition_id = p_pid AND group_name = p_group FOR UPDATE;
    RETURN v_pos;
END
$$;

-- Is offset p_off acked by a group whose (locked) position is p_pos? Internal.
CREATE OR REPLACE FUNCTION queen.ack_is_acked(p_pid bigint, p_group text, p_pos bigint, p_off bigint)
RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_off <= p_pos OR EXISTS (
        SELECT 1 FROM queen.consumer_acks
         WHERE partition_id = p_pid AND group_name = p_group AND message_offset = p_off)
$$;

-- The earliest occurrence of a hash above the group's position that the group has not acked
-- yet, or NULL (every occurrence acked, or none stored). Internal.
CREATE OR REPLACE FUNCTION queen.ack_resolve(p_pid bigint, p_group text, p_pos bigint, p_hash bytea)
RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_off bigint := p_pos;
BEGIN
    LOOP
        v_off := queen.log_find_hash_after(p_pid, p_hash, v_off);
        EXIT WHEN v_off IS NULL OR NOT queen.ack_is_acked(p_pid, p_group, p_pos, v_off);
    END LOOP;
    RETURN v_off;
END
$$;

-- Record the ack of offset p_off (not acked yet) by a group whose row the caller locked at
-- position p_pos; advances the position over the contiguous acked run. Returns the new
-- position. Internal.
CREATE OR REPLACE FUNCTION queen.ack_record(p_pid bigint, p_group text, p_pos bigint, p_off bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pos  bigint := p_pos;
    v_next bigint;
BEGIN
    IF p_off <= v_pos THEN
        RETURN v_pos;
    END IF;
    IF p_off <> v_pos + 1 THEN
        INSERT INTO queen.consumer_acks (partition_id, group_name, message_offset)
        VALUES (p_pid, p_group, p_off) ON CONFLICT DO NOTHING;
        RETURN v_pos;
    END IF;
    v_pos := p_off;
    -- advance over the contiguous run of acks that now follows the position
    FOR v_next IN SELECT message_offset FROM queen.consumer_acks
                   WHERE partition_id = p_pid AND group_name = p_group
                     AND message_offset > v_pos ORDER BY message_offset LOOP
        EXIT WHEN v_next <> v_pos + 1;
        v_pos := v_next;
    END LOOP;
    DELETE FROM queen.consumer_acks
     WHERE partition_id = p_pid AND group_name = p_group AND message_offset <= v_pos;
    UPDATE queen.consumer_groups SET committed_offset = v_pos
     WHERE partition_id = p_pid AND group_name = p_group;
    RETURN v_pos;
END
$$;

-- Check a consumer group name (22023).
CREATE OR REPLACE FUNCTION queen.ack_check_group(p_group text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
END
$$;

-- Ack a message by transactionId: the earliest stored occurrence the group has not acked yet
-- (so a transactionId stored n times, e.g. with window 0, is acked by n acks, in offset
-- order, and the committed offset never sticks). True when the transactionId is stored (acked
-- now, or every occurrence was already acked), false when it is unknown (then nothing
-- changes). Cost independent of the window (queen.log_find_hash_after).
CREATE OR REPLACE FUNCTION queen.ack(p_queue text, p_partition text, p_transaction_id text,
                          p_consumer_group text DEFAULT '__QUEUE_MODE__')
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid  bigint := queen.partition_id(p_queue, p_partition);
    v_hash bytea;
    v_pos  bigint;
    v_off  bigint;
BEGIN
    IF p_transaction_id IS NULL THEN
        RAISE EXCEPTION 'transactionId must not be null' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.ack_check_group(p_consumer_group);
    v_hash := queen.txn_hash(p_transaction_id);
    IF queen.log_find_hash_after(v_pid, v_hash, -1) IS NULL THEN
        RETURN false;
    END IF;
    v_pos := queen.ack_lock_group(v_pid, p_consumer_group);
    v_off := queen.ack_resolve(v_pid, p_consumer_group, v_pos, v_hash);
    IF v_off IS NOT NULL THEN
        PERFORM queen.ack_record(v_pid, p_consumer_group, v_pos, v_off);
    END IF;
    RETURN true;
END
$$;

-- Ack a message by its offset (what queen.read returned). True when this call recorded the
-- ack, false when the group had already acked that offset. 22023 for a negative offset or one
-- above the partition's last offset.
CREATE OR REPLACE FUNCTION queen.ack_offset(p_queue text, p_partition text, p_offset bigint,
                                 p_consumer_group text DEFAULT '__QUEUE_MODE__')
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid  bigint := queen.partition_id(p_queue, p_partition);
    v_last bigint;
    v_pos  bigint;
BEGIN
    PERFORM queen.ack_check_group(p_consumer_group);
    SELECT last_offset INTO v_last FROM queen.log_partitions WHERE id = v_pid;
    IF p_offset IS NULL OR p_offset < 0 OR p_offset > v_last THEN
        RAISE EXCEPTION 'offset % is not a stored offset of partition "%" (0..%)',
            coalesce(p_offset::text, 'NULL'), p_partition, v_last USING ERRCODE = '22023';
    END IF;
    v_pos := queen.ack_lock_group(v_pid, p_consumer_group);
    IF queen.ack_is_acked(v_pid, p_consumer_group, v_pos, p_offset) THEN
        RETURN false;
    END IF;
    PERFORM queen.ack_record(v_pid, p_consumer_group, v_pos, p_offset);
    RETURN true;
END
$$;

-- Several acks of one partition and group in one call, applied in order: p_items is a JSON
-- array of {"transactionId": "..."} or {"offset": n} objects (at most 100000). Every item is
-- checked first (22023: nothing applied). One row per item: status 'acked' (recorded now),
-- 'already_acked', or 'unknown' (transactionId not stored); message_offset is the offset acked
-- (for 'already_acked': the offset given, or the transactionId's earliest stored occurrence;
-- NULL when unknown). A transactionId named twice acks two occurrences, like two acks.
CREATE OR REPLACE FUNCTION queen.ack_batch(p_queue text, p_partition text, p_items jsonb,
                                p_consumer_group text DEFAULT '__QUEUE_MODE__')
RETURNS TABLE (index int, transaction_id text, message_offset bigint, status text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid    bigint := queen.partition_id(p_queue, p_partition);
    v_last   bigint;
    v_item   jsonb;
    v_i      int := 0;
    v_pos    bigint;
    v_locked boolean := false;
    v_hash   bytea;
    v_off    bigint;
    v_first  bigint;
    v_num    numeric;
BEGIN
    PERFORM queen.ack_check_group(p_consumer_group);
    IF p_items IS NULL OR jsonb_typeof(p_items) <> 'array' THEN
        RAISE EXCEPTION 'ack items must be a JSON array' USING ERRCODE = '22023';
    END IF;
    IF jsonb_array_length(p_items) > 100000 THEN
        RAISE EXCEPTION 'at most 100000 acks per call, got %', jsonb_array_length(p_items)
            USING ERRCODE = '22023';
    END IF;
    SELECT last_offset INTO v_last FROM queen.log_partitions WHERE id = v_pid;
    -- 1. check every item
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
        IF jsonb_typeof(v_item) <> 'object'
           OR (SELECT count(*) FROM jsonb_object_keys(v_item)) <> 1
           OR NOT (v_item ? 'transactionId' OR v_item ? 'offset') THEN
            RAISE EXCEPTION 'ack item %: must be {"transactionId": "..."} or {"offset": n}', v_i
                USING ERRCODE = '22023';
        END IF;
        IF v_item ? 'transactionId' AND jsonb_typeof(v_item -> 'transactionId') <> 'string' THEN
            RAISE EXCEPTION 'ack item %: "transactionId" must be a string', v_i USING ERRCODE = '22023';
        END IF;
        IF v_item ? 'offset' THEN
            IF jsonb_typeof(v_item -> 'offset') <> 'number' THEN
                RAISE EXCEPTION 'ack item %: "offset" must be a number', v_i USING ERRCODE = '22023';
            END IF;
            v_num := (v_item ->> 'offset')::numeric;
            IF v_num <> trunc(v_num) OR v_num < 0 OR v_num > v_last THEN
                RAISE EXCEPTION 'ack item %: offset % is not a stored offset of partition "%" (0..%)',
                    v_i, v_num, p_partition, v_last USING ERRCODE = '22023';
            END IF;
        END IF;
        v_i := v_i + 1;
    END LOOP;
    -- 2. apply in order
    v_i := 0;
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_items) LOOP
        index := v_i;
        transaction_id := v_item ->> 'transactionId';
        IF v_item ? 'offset' THEN
            v_off := (v_item ->> 'offset')::bigint;
        ELSE
            v_hash := queen.txn_hash(transaction_id);
            v_off := queen.log_find_hash_after(v_pid, v_hash, -1);
            v_first := v_off;
        END IF;
        IF v_off IS NULL THEN
            message_offset := NULL;
            status := 'unknown';
        ELSE
            IF NOT v_locked THEN
                v_pos := queen.ack_lock_group(v_pid, p_consumer_group);
                v_locked := true;
            END IF;
            IF v_item ? 'transactionId' THEN
                v_off := queen.ack_resolve(v_pid, p_consumer_group, v_pos, v_hash);
            ELSIF queen.ack_is_acked(v_pid, p_consumer_group, v_pos, v_off) THEN
                v_off := NULL;
                message_offset := (v_item ->> 'offset')::bigint;
            END IF;
            IF v_off IS NULL THEN
                status := 'already_acked';
                IF v_item ? 'transactionId' THEN
                    message_offset := v_first;
                END IF;
            ELSE
                v_pos := queen.ack_record(v_pid, p_consumer_group, v_pos, v_off);
                message_offset := v_off;
                status := 'acked';
            END IF;
        END IF;
        RETURN NEXT;
        v_i := v_i + 1;
    END LOOP;
END
$$;

-- Apply push and ack operations atomically and in order.
-- Locks (the global order, see the top of this file): first every partition a push names is
-- created if new, sorted by (queue, partition) in collation "C" (creation waits on other
-- transactions' uncommitted unique-index entries, so it needs one order too); then every
-- partition involved is locked in ascending id order; only then are the operations applied.
-- A duplicate push raises unique_violation and so nothing of the transaction is kept.
CREATE OR REPLACE FUNCTION queen.transaction(p_ops jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ops     jsonb := p_ops -> 'operations';
    v_op      jsonb;
    v_type    text;
    v_pushes  text[] := '{}';   -- queue, partition, queue, partition, ... of push operations
    v_acks    text[] := '{}';   -- the same of ack operations
    v_pids    bigint[] := '{}';
    v_pid     bigint;
    v_pair    record;
    v_results jsonb := '[]';
    v_row     record;
    v_pushed  jsonb;
    v_acked   boolean;
    v_i       int := 0;
BEGIN
    IF p_ops IS NULL OR jsonb_typeof(p_ops) <> 'object' OR v_ops IS NULL
       OR jsonb_typeof(v_ops) <> 'array' THEN
        RAISE EXCEPTION 'transaction must be an object with an "operations" array'
            USING ERRCODE = '22023';
    END IF;
    -- 1. validate every operation and collect the partitions it names
    FOR v_op IN SELECT value FROM jsonb_array_elements(v_ops) LOOP
        IF jsonb_typeof(v_op) <> 'object' THEN
            RAISE EXCEPTION 'operation % is not an object', v_i USING ERRCODE = '22023';
        END IF;
        v_type := v_op ->> 'type';
        IF jsonb_typeof(v_op -> 'queue') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'operation %: "queue" must be a string', v_i USING ERRCODE = '22023';
        END IF;
        PERFORM queen.reserved_queue_guard(v_op ->> 'queue');
        IF v_op ? 'partition' AND jsonb_typeof(v_op -> 'partition') <> 'string' THEN
            RAISE EXCEPTION 'operation %: "partition" must be a string', v_i USING ERRCODE = '22023';
        END IF;
        IF v_type = 'push' THEN
            v_pushes := v_pushes || ARRAY[v_op ->> 'queue', COALESCE(v_op ->> 'partition', 'Default')];
        ELSIF v_type = 'ack' THEN
            IF jsonb_typeof(v_op -> 'transactionId') IS DISTINCT FROM 'string' THEN
                RAISE EXCEPTION 'operation %: "transactionId" must be a string', v_i
                    USING ERRCODE = '22023';
            END IF;
            v_acks := v_acks || ARRAY[v_op ->> 'queue', COALESCE(v_op ->> 'partition', 'Default')];
        ELSE
            RAISE EXCEPTION 'operation %: type must be "push" or "ack"', v_i USING ERRCODE = '22023';
        END IF;
        v_i := v_i + 1;
    END LOOP;
    -- 2. find or create the pushed partitions, in the global creation order
    FOR v_pair IN
        SELECT d.q, d.p FROM (SELECT DISTINCT v_pushes[2 * g - 1] AS q, v_pushes[2 * g] AS p
                                FROM generate_series(1, cardinality(v_pushes) / 2) g) d
         ORDER BY d.q COLLATE "C", d.p COLLATE "C"
    LOOP
        SELECT r.partition_id INTO v_pid FROM queen.resolve_partition(v_pair.q, v_pair.p) r;
        v_pids := v_pids || v_pid;
    END LOOP;
    -- acked partitions must exist (a push earlier in this transaction may have created them)
    FOR v_pair IN
        SELECT d.q, d.p FROM (SELECT DISTINCT v_acks[2 * g - 1] AS q, v_acks[2 * g] AS p
                                FROM generate_series(1, cardinality(v_acks) / 2) g) d
         ORDER BY d.q COLLATE "C", d.p COLLATE "C"
    LOOP
        v_pids := v_pids || queen.partition_id(v_pair.q, v_pair.p);
    END LOOP;
    -- 3. the one global lock order: ascending partition id
    FOR v_pid IN SELECT DISTINCT u FROM unnest(v_pids) u ORDER BY u LOOP
        PERFORM 1 FROM queen.log_partitions WHERE id = v_pid FOR NO KEY UPDATE;
    END LOOP;
    -- 4. apply in order
    v_i := 0;
    FOR v_op IN SELECT value FROM jsonb_array_elements(v_ops) LOOP
        IF v_op ->> 'type' = 'push' THEN
            v_pushed := '[]';
            FOR v_row IN SELECT * FROM queen.push(v_op ->> 'queue',
                                                  COALESCE(v_op ->> 'partition', 'Default'),
                                                  COALESCE(v_op -> 'items', 'null'::jsonb)) LOOP
                IF v_row.status = 'duplicate' THEN
                    RAISE EXCEPTION 'duplicate transactionId "%" in operation %',
                        v_row.transaction_id, v_i
                        USING ERRCODE = '23505',
                              DETAIL = format('original message id %s at offset %s',
                                              v_row.message_id, v_row.message_offset);
                END IF;
                v_pushed := v_pushed || jsonb_build_object(
                    'index', v_row.index, 'message_id', v_row.message_id,
                    'transaction_id', v_row.transaction_id, 'offset', v_row.message_offset,
                    'status', v_row.status);
            END LOOP;
            v_results := v_results || jsonb_build_object('type', 'push', 'items', v_pushed);
        ELSE
            v_acked := queen.ack(v_op ->> 'queue', COALESCE(v_op ->> 'partition', 'Default'),
                                 v_op ->> 'transactionId',
                                 COALESCE(v_op ->> 'consumerGroup', '__QUEUE_MODE__'));
            v_results := v_results || jsonb_build_object('type', 'ack', 'acked', v_acked);
        END IF;
        v_i := v_i + 1;
    END LOOP;
    RETURN jsonb_build_object('success', true, 'results', v_results);
END
$$;

-- ---------------------------------------------------------------- retention
-- Retention drops, per partition and oldest first, the segments' data older than the queue's
-- retention_seconds (when set) and their hashes older than its dedup window (window 0: the
-- hashes whose data is gone, so acks keep resolving), never from a row holding an offset at or
-- above queen.retention_floor(partition). The two clocks meet in one row (queen.log_segments):
-- dropping one side of a row whose other side is kept is an UPDATE (data = '' or hashes and
-- message_ids NULL: a duplicate still names the original id and offset), dropping the last
-- side deletes the row. log_start / txns_start mark where the kept data / hashes begin. Every
-- purge holds that partition's row lock (FOR NO KEY UPDATE), so it serializes with pushes
-- exactly like a push does.

-- Extension point: the lowest offset retention must keep in a partition, or NULL (no floor).
-- A module that must hold messages (dedup views) replaces this with CREATE OR REPLACE.
CREATE OR REPLACE FUNCTION queen.retention_floor(p_partition_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT NULL::bigint $$;

-- Whether a partition has anything retention may delete now (read without locking, so that
-- partitions with nothing eligible are never locked).
CREATE OR REPLACE FUNCTION queen.retention_eligible(p_partition_id bigint, p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE p.id = p_partition_id
           AND ((q.retention_seconds IS NOT NULL AND EXISTS (
                    SELECT 1 FROM (SELECT s.created_at FROM queen.log_segments s
                                    WHERE s.partition_id = p.id AND s.base_offset >= p.log_start
                                      AND octet_length(s.data) > 0
                                    ORDER BY s.base_offset LIMIT 1) o
                     WHERE o.created_at < p_now - make_interval(secs => q.retention_seconds)))
                OR (q.dedup_window_seconds > 0 AND EXISTS (
                    SELECT 1 FROM (SELECT t.created_at FROM queen.log_segments t
                                    WHERE t.partition_id = p.id AND t.base_offset >= p.txns_start
                                      AND t.hashes IS NOT NULL
                                    ORDER BY t.base_offset LIMIT 1) o
                     WHERE o.created_at < p_now - make_interval(secs => q.dedup_window_seconds)))
                -- window 0: a row keeping its hashes below log_start (its data gone); rows do
                -- not straddle log_start, so the oldest such row ends below it
                OR (q.dedup_window_seconds = 0 AND EXISTS (
                    SELECT 1 FROM queen.log_segments t
                     WHERE t.partition_id = p.id AND t.base_offset < p.log_start
                       AND t.hashes IS NOT NULL))))
$$;

-- Purge one partition: lock its row, drop at most p_max_rows sides of rows in all (data
-- first, then hashes), advance log_start / txns_start. Returns how many segments' data and how
-- many rows' hashes it dropped. Internal (no grant).
CREATE OR REPLACE FUNCTION queen.retention_purge(p_partition_id bigint, p_max_rows int, p_now timestamptz,
                                      OUT segments_deleted int, OUT txns_deleted int)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ret   int;
    v_win   int;
    v_start bigint;
    v_tstart bigint;
    v_floor bigint;
    v_upto  bigint;
    v_n     int;
    v_left  int := p_max_rows;
BEGIN
    segments_deleted := 0;
    txns_deleted := 0;
    SELECT q.retention_seconds, q.dedup_window_seconds, p.log_start, p.txns_start
      INTO v_ret, v_win, v_start, v_tstart
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE p.id = p_partition_id FOR NO KEY UPDATE OF p;
    IF NOT FOUND THEN
        RETURN;  -- dropped meanwhile
    END IF;
    -- On a shard, a partition of a slot being moved off it (or not its own) is left alone: the
    -- move's export reads it and its import stores it on the target as it was; retention runs
    -- there once the target owns the slot (queen.slot_fence_owns_partition holds the slot's
    -- fence lock shared to our commit, so a fence waits for this purge or is seen by it).
    IF NOT queen.slot_fence_owns_partition(p_partition_id) THEN
        RETURN;
    END IF;
    v_floor := queen.retention_floor(p_partition_id);
    -- data: the oldest prefix of the kept data older than retention (and below the floor)
    IF v_ret IS NOT NULL THEN
        SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
            SELECT s.end_offset,
                   bool_and(s.created_at < p_now - make_interval(secs => v_ret)
                            AND (v_floor IS NULL OR s.end_offset < v_floor))
                       OVER (ORDER BY s.base_offset) AS all_old
              FROM (SELECT base_offset, end_offset, created_at FROM queen.log_segments
                     WHERE partition_id = p_partition_id AND base_offset >= v_start
                       AND octet_length(data) > 0
                     ORDER BY base_offset LIMIT v_left) s) x
         WHERE x.all_old;
        IF v_n > 0 THEN
            -- a row without hashes goes; one keeping its hashes keeps its offsets and ids
            DELETE FROM queen.log_segments
             WHERE partition_id = p_partition_id AND base_offset >= v_start
               AND base_offset <= v_upto AND hashes IS NULL;
            UPDATE queen.log_segments SET data = ''::bytea
             WHERE partition_id = p_partition_id AND base_offset >= v_start
               AND base_offset <= v_upto AND octet_length(data) > 0;
            UPDATE queen.log_partitions SET log_start = v_upto + 1 WHERE id = p_partition_id;
            segments_deleted := v_n;
            v_left := v_left - v_n;
        END IF;
    END IF;
    IF v_left <= 0 THEN
        RETURN;
    END IF;
    -- hashes: the oldest prefix older than the window (window 0: whose data is gone)
    SELECT log_start INTO v_start FROM queen.log_partitions WHERE id = p_partition_id;
    SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
        SELECT t.end_offset,
               bool_and(CASE WHEN v_win > 0
                             THEN t.created_at < p_now - make_interval(secs => v_win)
                             ELSE t.end_offset < v_start END
                        AND (v_floor IS NULL OR t.end_offset < v_floor))
                   OVER (ORDER BY t.base_offset) AS all_old
          FROM (SELECT base_offset, end_offset, created_at FROM queen.log_segments
                 WHERE partition_id = p_partition_id AND base_offset >= v_tstart
                   AND hashes IS NOT NULL
                 ORDER BY base_offset LIMIT v_left) t) x
     WHERE x.all_old;
    IF v_n > 0 THEN
        -- a row whose data is gone goes; one keeping its data keeps it
        DELETE FROM queen.log_segments
         WHERE partition_id = p_partition_id AND base_offset >= v_tstart
           AND base_offset <= v_upto AND hashes IS NOT NULL AND octet_length(data) = 0;
        UPDATE queen.log_segments SET hashes = NULL, message_ids = NULL
         WHERE partition_id = p_partition_id AND base_offset >= v_tstart
           AND base_offset <= v_upto AND hashes IS NOT NULL;
        UPDATE queen.log_partitions SET txns_start = v_upto + 1 WHERE id = p_partition_id;
        txns_deleted := v_n;
    END IF;
END
$$;

-- Bounded purge in the caller's transaction: at most p_max_rows rows in all, partitions in
-- ascending id order (only those with something eligible are locked). Every lock it takes is
-- held until the caller commits: for a periodic job use queen.run_retention_procedure, which
-- commits after each partition. Returns counts.
CREATE OR REPLACE FUNCTION queen.run_retention(p_max_rows int DEFAULT 10000) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid   bigint;
    v_left  int := p_max_rows;
    v_now   timestamptz := clock_timestamp();
    v_r     record;
    v_segs  bigint := 0;
    v_txns  bigint := 0;
    v_parts int := 0;
    v_skip  int := 0;
BEGIN
    IF p_max_rows IS NULL OR p_max_rows < 1 THEN
        RAISE EXCEPTION 'p_max_rows must be at least 1' USING ERRCODE = '22023';
    END IF;
    FOR v_pid IN SELECT p.id FROM queen.log_partitions p ORDER BY p.id LOOP
        EXIT WHEN v_left <= 0;
        CONTINUE WHEN NOT queen.retention_eligible(v_pid, v_now);
        SELECT * INTO v_r FROM queen.retention_purge(v_pid, v_left, v_now);
        -- a partition the shard's fence made the purge leave alone (its slot moving or gone:
        -- the same answer the purge got, its lock held to our commit) is skipped, not visited
        IF queen.slot_fence_owns_partition(v_pid) THEN
            v_parts := v_parts + 1;
        ELSE
            v_skip := v_skip + 1;
        END IF;
        v_segs := v_segs + v_r.segments_deleted;
        v_txns := v_txns + v_r.txns_deleted;
        v_left := v_left - v_r.segments_deleted - v_r.txns_deleted;
    END LOOP;
    -- partitionsSkipped only when some were (only a shard skips: one server's answer keeps
    -- its three counts)
    RETURN jsonb_build_object('segmentsDeleted', v_segs, 'txnsDeleted', v_txns,
                              'partitionsVisited', v_parts)
        || CASE WHEN v_skip > 0 THEN jsonb_build_object('partitionsSkipped', v_skip) ELSE '{}' END;
END
$$;

-- One step of the committing retention run: purge one batch (at most p_batch_rows rows) of the
-- next eligible partition after p_state's cursor and return the new state, or the final state
-- with "done": true when no partition is left. A partition whose batch was full is visited
-- again by the next step. p_state NULL starts a run.
CREATE OR REPLACE FUNCTION queen.retention_step(p_state jsonb, p_batch_rows int DEFAULT 10000)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_state jsonb := COALESCE(p_state, jsonb_build_object(
        'afterPartitionId', 0, 'segmentsDeleted', 0, 'txnsDeleted', 0,
        'partitionsVisited', 0, 'batches', 0));
    v_after bigint;
    v_pid   bigint;
    v_now   timestamptz := clock_timestamp();
    v_r     record;
BEGIN
    IF p_batch_rows IS NULL OR p_batch_rows < 1 THEN
        RAISE EXCEPTION 'p_batch_rows must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(v_state) <> 'object' OR jsonb_typeof(v_state -> 'afterPartitionId') <> 'number' THEN
        RAISE EXCEPTION 'p_state must be NULL or a state returned by queen.retention_step'
            USING ERRCODE = '22023';
    END IF;
    IF v_state ? 'done' THEN
        RETURN v_state;
    END IF;
    v_after := (v_state ->> 'afterPartitionId')::bigint;
    FOR v_pid IN SELECT p.id FROM queen.log_partitions p WHERE p.id > v_after ORDER BY p.id LOOP
        CONTINUE WHEN NOT queen.retention_eligible(v_pid, v_now);
        SELECT * INTO v_r FROM queen.retention_purge(v_pid, p_batch_rows, v_now);
        IF NOT queen.slot_fence_owns_partition(v_pid) THEN
            -- left alone by the shard's fence (slot moving or gone): skipped, not visited
            RETURN v_state || jsonb_build_object(
                'afterPartitionId', v_pid,
                'partitionsSkipped', COALESCE((v_state ->> 'partitionsSkipped')::bigint, 0)
                    + CASE WHEN v_pid IS DISTINCT FROM (v_state ->> 'lastPartitionId')::bigint
                           THEN 1 ELSE 0 END,
                'lastPartitionId', v_pid,
                'batches', (v_state ->> 'batches')::bigint + 1);
        END IF;
        RETURN v_state || jsonb_build_object(
            -- a full batch may have left more: the next step visits this partition again
            'afterPartitionId', CASE WHEN v_r.segments_deleted + v_r.txns_deleted >= p_batch_rows
                                     THEN v_pid - 1 ELSE v_pid END,
            'segmentsDeleted', (v_state ->> 'segmentsDeleted')::bigint + v_r.segments_deleted,
            'txnsDeleted', (v_state ->> 'txnsDeleted')::bigint + v_r.txns_deleted,
            'lastPartitionId', v_pid,
            'partitionsVisited', (v_state ->> 'partitionsVisited')::bigint
                + CASE WHEN v_pid IS DISTINCT FROM (v_state ->> 'lastPartitionId')::bigint
                       THEN 1 ELSE 0 END,
            'batches', (v_state ->> 'batches')::bigint + 1);
    END LOOP;
    RETURN (v_state - 'afterPartitionId' - 'lastPartitionId') || jsonb_build_object('done', true);
END
$$;

-- Retention that never stalls pushes: CALL it at top level (not inside BEGIN ... COMMIT); it
-- commits after every batch, so it holds at most one partition lock at a time, for one batch.
-- p_pause_seconds sleeps between batches, holding nothing, to leave the machine's CPU and WAL
-- to pushes during a long purge (like vacuum's cost delay). The defaults (2000 rows, 20 ms) are
-- the measured ones of bench/retention/RESULTS.md.
-- SECURITY INVOKER on purpose (a SECURITY DEFINER procedure may not COMMIT): everything it
-- does happens in queen.retention_step, which is SECURITY DEFINER; the body uses no unqualified
-- operator or function, so the caller's search_path cannot change it either.
CREATE OR REPLACE PROCEDURE queen.run_retention_procedure(p_batch_rows int DEFAULT 2000,
                                               p_pause_seconds float8 DEFAULT 0.02,
                                               INOUT result jsonb DEFAULT NULL)
LANGUAGE plpgsql
AS $$
BEGIN
    result := NULL;
    LOOP
        result := queen.retention_step(result, p_batch_rows);
        EXIT WHEN result OPERATOR(pg_catalog.?) 'done';
        COMMIT;
        PERFORM pg_catalog.pg_sleep(p_pause_seconds);
    END LOOP;
END
$$;

-- ---------------------------------------------------------------- explain
-- Why a push of this transactionId would (or would not) be a duplicate now: a jsonb object
-- (docs/sql-interface.md). The same rule as the push's probe: the earliest occurrence at or
-- above txns_start in a segment row's hashes created within the window. Read-only and unlocked: a
-- snapshot answer, not a reservation. Reads the partition's retained hashes (and, when the
-- hash is gone, the retained segments below txns_start): a diagnostic, not a hot path.
CREATE OR REPLACE FUNCTION queen.explain(p_queue text, p_partition text, p_transaction_id text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid     bigint := queen.partition_id(p_queue, p_partition);
    v_win     int;
    v_lstart  bigint;
    v_tstart  bigint;
    v_now     timestamptz := clock_timestamp();
    v_hash    bytea;
    v_off     bigint;
    v_created timestamptz;
    v_ids     bytea;
    v_idx     int;
    v_id      uuid;
    v_dup     boolean := false;
    v_purged  boolean;
    v_reason  text;
    v_left    numeric;
BEGIN
    IF p_transaction_id IS NULL THEN
        RAISE EXCEPTION 'transactionId must not be null' USING ERRCODE = '22023';
    END IF;
    SELECT q.dedup_window_seconds, p.log_start, p.txns_start INTO v_win, v_lstart, v_tstart
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.id = v_pid;
    v_hash := queen.txn_hash(p_transaction_id);
    -- the occurrence a push would answer with: earliest retained one inside the window
    IF v_win > 0 THEN
        SELECT t.base_offset + u.idx, t.created_at, t.message_ids, u.idx
          INTO v_off, v_created, v_ids, v_idx
          FROM queen.log_segments t CROSS JOIN LATERAL queen.log_unnest_hashes(t.hashes) u
         WHERE t.partition_id = v_pid AND t.end_offset >= v_tstart AND t.hashes IS NOT NULL
           AND t.created_at >= v_now - make_interval(secs => v_win)
           AND t.base_offset + u.idx >= v_tstart AND u.h = v_hash
         ORDER BY 1 LIMIT 1;
        v_dup := FOUND;
    END IF;
    IF v_dup THEN
        v_reason := 'inside the window';
        v_purged := v_off < v_lstart;
        v_left := round(greatest(0, extract(epoch FROM
                      v_created + make_interval(secs => v_win) - v_now))::numeric, 3);
    ELSE
        -- not a duplicate: the latest occurrence still known, if any
        SELECT t.base_offset + u.idx, t.created_at, t.message_ids, u.idx
          INTO v_off, v_created, v_ids, v_idx
          FROM queen.log_segments t CROSS JOIN LATERAL queen.log_unnest_hashes(t.hashes) u
         WHERE t.partition_id = v_pid AND t.end_offset >= v_tstart AND t.hashes IS NOT NULL
           AND t.base_offset + u.idx >= v_tstart AND u.h = v_hash
         ORDER BY 1 DESC LIMIT 1;
        IF FOUND THEN
            v_reason := CASE WHEN v_win = 0 THEN 'window is 0: no probe'
                             ELSE 'outside the window' END;
            v_purged := v_off < v_lstart;
            v_left := 0;
        ELSE
            v_ids := NULL;
            IF v_tstart > v_lstart THEN
                -- its hash may be purged while its message is still kept
                SELECT r.message_offset, r.created_at, r.message_id INTO v_off, v_created, v_id
                  FROM queen.read(p_queue, p_partition, v_lstart,
                                  least(v_tstart - v_lstart, 2147483647)::int) r
                 WHERE r.transaction_id = p_transaction_id AND r.message_offset < v_tstart
                 ORDER BY r.message_offset DESC LIMIT 1;
            END IF;
            IF v_off IS NOT NULL THEN
                v_reason := 'hash purged by retention (message still kept)';
                v_purged := true;
                v_left := 0;
            ELSIF v_tstart > 0 THEN
                v_reason := format('not among the retained hashes (offsets below %s were purged)', v_tstart);
                v_purged := NULL;
            ELSE
                v_reason := 'never stored';
                v_purged := false;
            END IF;
        END IF;
    END IF;
    -- the message id a duplicate answer carries (the zero UUID when the segment is gone)
    IF v_off IS NOT NULL AND v_id IS NULL THEN
        IF v_off < v_lstart THEN
            v_id := '00000000-0000-0000-0000-000000000000';
        ELSIF v_ids IS NOT NULL AND length(v_ids) >= (v_idx + 1) * 16 THEN
            v_id := encode(substring(v_ids FROM v_idx * 16 + 1 FOR 16), 'hex')::uuid;
        ELSE
            SELECT r.message_id INTO v_id FROM queen.read(p_queue, p_partition, v_off, 1) r
             WHERE r.message_offset = v_off;
        END IF;
    END IF;
    RETURN jsonb_build_object(
        'queue', p_queue, 'partition', p_partition, 'transactionId', p_transaction_id,
        'duplicate', v_dup, 'reason', v_reason,
        'offset', v_off, 'messageId', v_id, 'createdAt', v_created,
        'dedupWindowSeconds', v_win, 'windowLeftSeconds', v_left,
        'purged', v_purged, 'hashesRetainedFrom', v_tstart, 'segmentsRetainedFrom', v_lstart);
END
$$;

-- ---------------------------------------------------------------- drop_queue
-- Remove a queue and everything under it; 42704 for an unknown queue. Locks: the queue row
-- (FOR UPDATE), then its partitions in ascending id order (FOR UPDATE), so a push waiting on
-- one of them answers 42704 once this commits. Rows keyed by partition id without a foreign
-- key (segments, hashes, acks) are deleted here; everything else goes by ON DELETE CASCADE from
-- queen.queues / queen.log_partitions: a module table that holds per-queue or per-partition
-- rows references one of them ON DELETE CASCADE, and drop_queue leaves no orphan behind.
CREATE OR REPLACE FUNCTION queen.drop_queue(p_queue text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_qid   bigint;
    v_pids  bigint[];
    v_segs  bigint;
    v_txns  bigint;
BEGIN
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_queue FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', p_queue USING ERRCODE = '42704';
    END IF;
    -- its partitions FOR UPDATE in ascending id order, then the shard's fence (issue 20): a
    -- queue with a partition in a moving slot is not dropped here (55Q02; the move's import
    -- would bring it back)
    v_pids := queen.partitions_lock_for_write(
        ARRAY(SELECT id FROM queen.log_partitions WHERE queue_id = v_qid), 'update');
    DELETE FROM queen.consumer_acks WHERE partition_id = ANY (v_pids);
    -- counted as what they held: segments with data, rows with hashes
    SELECT count(*) FILTER (WHERE octet_length(s.data) > 0), count(*) FILTER (WHERE s.hashes IS NOT NULL)
      INTO v_segs, v_txns
      FROM queen.log_segments s WHERE s.partition_id = ANY (v_pids);
    DELETE FROM queen.log_segments WHERE partition_id = ANY (v_pids);
    DELETE FROM queen.queues WHERE id = v_qid;  -- cascades: partitions, consumer groups, modules
    RETURN jsonb_build_object('queue', p_queue, 'partitionsDropped', cardinality(v_pids),
                              'segmentsDeleted', v_segs, 'txnsDeleted', v_txns);
END
$$;

-- Every function of the core runs as the owner with the pinned search_path (the procedure
-- cannot: a SECURITY DEFINER procedure may not COMMIT; see run_retention_procedure). In an
-- upgrade this also meets the modules' functions of the old version: each module's CREATE OR
-- REPLACE below states its own functions' flags again.
DO $$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
                 WHERE p.pronamespace = 'queen'::regnamespace AND p.prokind = 'f' LOOP
        EXECUTE pg_catalog.format(
            'ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', v_fn);
    END LOOP;
END
$$;
-- ================================================================ module: batch partition resolution
-- queen.resolve_partitions: queen.resolve_partition for many (queue, partition) pairs in one
-- statement, so a sidecar flush that meets many new partitions pays one round trip and one
-- commit instead of one transaction per partition; queen.push_segments_named folds that
-- resolution into the push itself (one transaction for a flush of first contacts).
--
-- Locking protocol (the same creation rule as 00_core.sql's): the pairs that do not exist yet are
-- created one by one with queen.resolve_partition's two inserts, sorted by (queue, partition)
-- (collation "C"), queue row first, then partition row: the global creation order queen.transaction uses,
-- so two batches (or a batch and a transaction) creating overlapping sets wait on each other's
-- uncommitted unique-index entries in one order and cannot deadlock. No partition row lock is
-- taken here (creation only ever happens before partition locks). A pair named twice is created
-- once; the UNIQUE constraints make two sessions racing on one pair create it once.

-- Internal (no grant): the body of queen.resolve_partitions, also run by
-- queen.push_segments_named (so the resolution exists once: src/pg/queue/resolve_names.cpp).
-- 22023 when the arrays are not one-dimensional of the same length, for more than 10000 pairs,
-- or for a NULL or empty name; 42501 for a reserved queue name. Lookups read the unique indexes
-- of queen.queues and queen.log_partitions (a plan that cannot degrade into scanning a queue's
-- partitions whatever the statistics say); misses are created as described above, then looked
-- up again.
CREATE OR REPLACE FUNCTION queen.resolve_partitions_core(p_queues text[], p_partitions text[])
RETURNS TABLE (idx int, partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
AS 'MODULE_PATHNAME', 'queen_resolve_partitions_core_v1'
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- For every input position i (0-based): the partition's id, its queue's window, its
-- last_offset and txns_start, created (with its queue) when missing.
CREATE OR REPLACE FUNCTION queen.resolve_partitions(p_queues text[], p_partitions text[])
RETURNS TABLE (idx int, partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM queen.resolve_partitions_core(p_queues, p_partitions) $$;


-- queen.push_segments with first contact folded in: segments whose p_partition_ids entry is
-- NULL name their partition by (p_queues[i], p_partitions[i]) instead; those are resolved
-- (created when missing, as queen.resolve_partitions does: before any partition lock, in the
-- global creation order) and then every segment is pushed as queen.push_segments pushes it, in
-- the same call (its locks: ascending partition id). One round trip and one commit for a flush
-- of new partitions. Rows: push_segments' answer rows (idx >= 0), then one row per named
-- segment with idx = -1 carrying its partition's metadata as this transaction commits it:
-- what its row lock read (held until commit), last_offset advanced past what the call wrote.
-- p_verified, p_windows and p_hints mean what they mean for queen.push_segments and are
-- checked by it (22023 for a malformed hint): a segment's vouch and hints apply to its
-- partition once resolved, so a caller that knows a partition (its id) but not yet whether
-- the others exist still sends its block cache's hinted vouch. A hint that does not confirm
-- sends its segment to the full probe; a wrong hint never changes a verdict.
-- Its pushes run without the per-backend probe cache (a per-call option of the push core;
-- the setting queen.probe_cache is left alone): the sidecar sends here the partitions its memo
-- does not hold (first contacts, and partitions met too long ago to be memoised or held by its
-- block cache), which that cache would learn for a single use while its upkeep grows with
-- every partition it holds; the full probe then reads the partition's in-window rows through
-- the created_at index. Only how much is read changes, never an answer.
-- Bad input: 22023 (arrays of different lengths, a NULL or empty name of a named segment, more
-- than 10000 named segments, a partition twice, push_segments' own checks), 42501 for a
-- reserved queue name (or a partition of one named by id), 42704 for an unknown id.
CREATE OR REPLACE FUNCTION queen.push_segments_named(p_partition_ids bigint[], p_queues text[],
    p_partitions text[], p_hashes bytea[], p_segments bytea[], p_verified bigint[],
    p_windows int[], p_hints bytea[] DEFAULT NULL)
RETURNS TABLE (seg int, idx int, status text, message_id uuid, message_offset bigint,
               partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
AS 'MODULE_PATHNAME', 'queen_push_segments_named_v1'
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
-- ================================================================ module: streams and producers
-- Durable streams with idempotent producers (Ursula's exactly-once writes). The interface is
-- docs/producers.md. A stream is one partition of the reserved queue __queen_streams (no dedup
-- window); its messages go through the shared row-locked push path (queen.stream_write ->
-- push_locked), and each (stream, producer) keeps its epoch/seq state in
-- queen.stream_producers. The decision is the pure C++ state machine of
-- src/core/streams/producer_state.cpp, run by queen.stream_append (src/pg/streams/append.cpp).
--
-- Locking protocol (consistent with 00_core.sql's):
--   * every write of a stream (append, close, create with data, delete) locks the stream's
--     queen.log_partitions row FOR NO KEY UPDATE first and only then reads queen.streams and
--     queen.stream_producers with a fresh snapshot (READ COMMITTED); it holds the lock until
--     commit, so the producer state it read cannot change before its data and state commit
--     together. Each call locks one partition only, so it adds no lock-order cycle; a caller
--     that appends to several streams in one transaction must call them in ascending
--     partition id order (the sidecar does) to keep the one global order.
--   * queen.streams and queen.stream_producers rows are only written while that partition lock
--     is held; their foreign keys take KEY SHARE locks, which NO KEY UPDATE does not block.
--   * an append whose answer is final and writes nothing (a duplicate, a fenced epoch, a key
--     conflict, a closed stream, ...) is first decided on a plain snapshot without any lock:
--     such an answer stays true forever once the state it was read from committed.
--   * REPEATABLE READ / SERIALIZABLE: locking a row that a concurrent append changed fails
--     with 40001 (retry the transaction), as for every push.


-- Its tables queen.streams and queen.stream_producers: sql/schema/20_producers.sql.

-- ---------------------------------------------------------------- C entry points
CREATE OR REPLACE FUNCTION queen.blake3(bytea) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_blake3_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION queen.blake3_hex(bytea) RETURNS text
    AS 'MODULE_PATHNAME', 'queen_blake3_hex_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Append messages to a stream's partition through the row-locked push path (internal).
CREATE OR REPLACE FUNCTION queen.stream_write(p_partition_id bigint, p_messages bytea[],
                                   OUT base_offset bigint, OUT end_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_write_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- The payloads of a stored segment (internal).
CREATE OR REPLACE FUNCTION queen.segment_payloads(bytea) RETURNS bytea[]
    AS 'MODULE_PATHNAME', 'queen_segment_payloads_v1'
    LANGUAGE C IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- The 0-based index of the first message that is not one JSON value, or NULL (internal).
CREATE OR REPLACE FUNCTION queen.stream_json_invalid(bytea[]) RETURNS int
    AS 'MODULE_PATHNAME', 'queen_stream_json_invalid_v1'
    LANGUAGE C IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- small helpers

-- An offset as a stream offset string: 20 zero-padded decimal digits.
CREATE OR REPLACE FUNCTION queen.stream_offset(p_offset bigint) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.lpad(p_offset::text, 20, '0') $$;

-- Parse a stream offset string: '-1' is the start (0); otherwise exactly 20 digits (22023).
-- 'now' is resolved by the reader, not here.
CREATE OR REPLACE FUNCTION queen.stream_offset_parse(p_offset text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_offset = '-1' THEN
        RETURN 0;
    END IF;
    IF p_offset !~ '^[0-9]{20}$' OR p_offset > '09223372036854775807' THEN
        RAISE EXCEPTION 'offset "%" is not a stream offset', p_offset USING ERRCODE = '22023',
            HINT = 'Offsets are the 20-digit strings the stream returned, or -1 / now.';
    END IF;
    RETURN p_offset::bigint;
END
$$;

-- The comparable part of a content type: its media type, lower case, spaces trimmed.
CREATE OR REPLACE FUNCTION queen.stream_media_type(p_content_type text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.lower(pg_catalog.btrim(pg_catalog.split_part(p_content_type, ';', 1))) $$;

-- Reject a bad stream name (22023).
CREATE OR REPLACE FUNCTION queen.stream_check_name(p_name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_name IS NULL OR p_name = '' THEN
        RAISE EXCEPTION 'stream name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.octet_length(p_name) > 1024 THEN
        RAISE EXCEPTION 'stream name is longer than 1024 bytes' USING ERRCODE = '22023';
    END IF;
END
$$;

-- True when a stream row counts as gone at p_now (its TTL ran out or its expiry passed).
CREATE OR REPLACE FUNCTION queen.stream_expired(p_ttl_seconds bigint, p_expires_at timestamptz,
                                     p_touched_at timestamptz, p_now timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (p_expires_at IS NOT NULL AND p_now >= p_expires_at)
        OR (p_ttl_seconds IS NOT NULL
            AND p_now >= p_touched_at + pg_catalog.make_interval(secs => p_ttl_seconds))
$$;

-- Remove a stream completely: its producers, stream row, segments, hashes and partition.
-- The caller holds the partition row lock (internal).
CREATE OR REPLACE FUNCTION queen.stream_purge(p_partition_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM queen.log_segments WHERE partition_id = p_partition_id;  -- with their hashes
    DELETE FROM queen.consumer_acks WHERE partition_id = p_partition_id;
    DELETE FROM queen.log_partitions WHERE id = p_partition_id;  -- cascades streams, producers
END
$$;

-- ---------------------------------------------------------------- create
-- Create a stream (201 created), or confirm an identical one (200 exists), or refuse another
-- configuration (409 conflict). See docs/producers.md.
CREATE OR REPLACE FUNCTION queen.stream_create(p_name text,
                                    p_content_type text DEFAULT 'application/octet-stream',
                                    p_ttl_seconds bigint DEFAULT NULL,
                                    p_expires_at timestamptz DEFAULT NULL,
                                    p_closed boolean DEFAULT false,
                                    p_messages bytea[] DEFAULT NULL,
                                    p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := COALESCE(p_now, pg_catalog.now());
    v_ct     text := COALESCE(NULLIF(pg_catalog.btrim(p_content_type), ''), 'application/octet-stream');
    v_closed boolean := COALESCE(p_closed, false);
    v_qid    bigint;
    v_pid    bigint;
    v_s      queen.streams%ROWTYPE;
    v_last   bigint;
    v_w      record;
BEGIN
    PERFORM queen.stream_check_name(p_name);
    IF p_ttl_seconds IS NOT NULL AND p_ttl_seconds <= 0 THEN
        RAISE EXCEPTION 'ttl must be a positive number of seconds' USING ERRCODE = '22023';
    END IF;
    IF p_ttl_seconds IS NOT NULL AND p_expires_at IS NOT NULL THEN
        RAISE EXCEPTION 'give a TTL or an expiry time, not both' USING ERRCODE = '22023';
    END IF;
    IF p_messages IS NOT NULL AND pg_catalog.array_position(p_messages, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'messages must not contain NULL' USING ERRCODE = '22023';
    END IF;

    INSERT INTO queen.queues (name, dedup_window_seconds) VALUES ('__queen_streams', 0)
        ON CONFLICT (name) DO NOTHING;
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.name = '__queen_streams';
    PERFORM queen.slot_fence_check('__queen_streams', p_name);  -- a shard's fence (issue 20)

    LOOP
        -- the partition of that name, locked (created when absent)
        SELECT p.id, p.last_offset INTO v_pid, v_last FROM queen.log_partitions p
         WHERE p.queue_id = v_qid AND p.name = p_name FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_name)
                ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING;
            CONTINUE;  -- lock it (or the one a concurrent create committed)
        END IF;
        SELECT * INTO v_s FROM queen.streams s WHERE s.partition_id = v_pid;
        IF FOUND AND queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
            PERFORM queen.stream_purge(v_pid);
            CONTINUE;
        END IF;
        EXIT;
    END LOOP;

    IF v_s.partition_id IS NOT NULL THEN
        status := CASE WHEN queen.stream_media_type(v_s.content_type) = queen.stream_media_type(v_ct)
                            AND v_s.ttl_seconds IS NOT DISTINCT FROM p_ttl_seconds
                            AND v_s.expires_at IS NOT DISTINCT FROM p_expires_at
                            AND v_s.closed = v_closed
                       THEN 'exists' ELSE 'conflict' END;
        next_offset := queen.stream_offset(v_last + 1);
        content_type := v_s.content_type;
        closed := v_s.closed;
        RETURN NEXT;
        RETURN;
    END IF;

    IF COALESCE(pg_catalog.cardinality(p_messages), 0) > 0
       AND queen.stream_media_type(v_ct) = 'application/json'
       AND queen.stream_json_invalid(p_messages) IS NOT NULL THEN
        RAISE EXCEPTION 'initial message % is not a JSON value', queen.stream_json_invalid(p_messages)
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO queen.streams (partition_id, name, content_type, ttl_seconds, expires_at, closed,
                               created_at, touched_at)
    VALUES (v_pid, p_name, v_ct, p_ttl_seconds, p_expires_at, v_closed, v_now, v_now);
    IF COALESCE(pg_catalog.cardinality(p_messages), 0) > 0 THEN
        SELECT * INTO v_w FROM queen.stream_write(v_pid, p_messages);
        v_last := v_w.end_offset;
    END IF;
    IF COALESCE(pg_catalog.current_setting('queen.stream_notify', true), 'on')::boolean THEN
        PERFORM pg_catalog.pg_notify('queen_streams', p_name);
    END IF;
    status := 'created';
    next_offset := queen.stream_offset(v_last + 1);
    content_type := v_ct;
    closed := v_closed;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- append
-- Append with or without producer headers; one typed answer row (docs/producers.md). C:
-- src/pg/streams/append.cpp (its header comment states the locking protocol).
CREATE OR REPLACE FUNCTION queen.stream_append(p_name text,
                                    p_messages bytea[],
                                    p_content_type text DEFAULT NULL,
                                    p_producer_id text DEFAULT NULL,
                                    p_producer_epoch bigint DEFAULT NULL,
                                    p_producer_seq bigint DEFAULT NULL,
                                    p_digest text DEFAULT NULL,
                                    p_incarnation text DEFAULT NULL,
                                    p_close boolean DEFAULT false,
                                    p_stream_seq text DEFAULT NULL,
                                    p_body bytea DEFAULT NULL,
                                    p_now timestamptz DEFAULT NULL,
                                    p_expect_apply boolean DEFAULT false)
RETURNS TABLE (status text, stream_offset text, next_offset text, stream_closed boolean,
               producer_epoch bigint, producer_seq bigint, expected_seq bigint,
               received_seq bigint, closed_epoch bigint, closed_seq bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_append_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- close
-- Close a stream without producer headers: 'closed', 'already_closed' or 'not_found'.
CREATE OR REPLACE FUNCTION queen.stream_close(p_name text, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, next_offset text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_a record;
BEGIN
    SELECT * INTO v_a FROM queen.stream_append(p_name, '{}'::bytea[], p_close => true, p_now => p_now);
    status := CASE v_a.status WHEN 'applied' THEN 'closed' ELSE v_a.status END;
    next_offset := v_a.next_offset;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- read
-- Messages from an offset, in one snapshot of the stream's tail (docs/producers.md).
CREATE OR REPLACE FUNCTION queen.stream_read(p_name text, p_offset text DEFAULT '-1',
                                  p_max_messages int DEFAULT 1000,
                                  p_max_bytes int DEFAULT 1048576,
                                  p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, content_type text, messages bytea[], offsets text[],
               next_offset text, up_to_date boolean, closed boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := COALESCE(p_now, pg_catalog.now());
    v_s     record;
    v_from  bigint;
    v_base  bigint;
    v_at    bigint;
    v_bytes bigint := 0;
    v_seg   record;
    v_pay   bytea[];
    v_i     int;
    v_first int;
    v_last  int;
    v_count int := 0;
    v_msgs  bytea[] := '{}';
    v_offs  text[] := '{}';
BEGIN
    PERFORM queen.stream_check_name(p_name);
    IF p_offset IS NULL THEN
        RAISE EXCEPTION 'offset must not be NULL' USING ERRCODE = '22023';
    END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1 THEN
        RAISE EXCEPTION 'p_max_messages and p_max_bytes must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_offset <> 'now' THEN
        v_from := queen.stream_offset_parse(p_offset);
    END IF;
    -- the stream and its tail in one statement: every segment up to that tail is immutable
    SELECT s.partition_id, s.content_type, s.closed, s.ttl_seconds, s.expires_at, s.touched_at,
           lp.last_offset, lp.log_start
      INTO v_s
      FROM queen.streams s JOIN queen.log_partitions lp ON lp.id = s.partition_id
     WHERE s.name = p_name;
    IF NOT FOUND OR queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
        status := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    IF v_from IS NULL OR v_from > v_s.last_offset + 1 THEN
        v_from := v_s.last_offset + 1;
    END IF;
    v_from := GREATEST(v_from, v_s.log_start);
    v_at := v_from;
    -- the segment holding v_from (segments are contiguous): an index probe, not a scan
    SELECT g.base_offset INTO v_base FROM queen.log_segments g
     WHERE g.partition_id = v_s.partition_id AND g.base_offset <= v_from
     ORDER BY g.base_offset DESC LIMIT 1;
    <<segs>>
    FOR v_seg IN SELECT g.base_offset, g.data FROM queen.log_segments g
                  WHERE g.partition_id = v_s.partition_id
                    AND g.base_offset >= COALESCE(v_base, v_from) AND g.end_offset >= v_from
                    AND g.base_offset <= v_s.last_offset
                  ORDER BY g.base_offset LOOP
        v_pay := queen.segment_payloads(v_seg.data);
        v_first := GREATEST(v_from - v_seg.base_offset, 0) + 1;
        v_last := v_first - 1;
        FOR v_i IN v_first..COALESCE(pg_catalog.cardinality(v_pay), 0) LOOP
            EXIT WHEN v_count >= p_max_messages
                OR (v_count > 0 AND v_bytes + pg_catalog.octet_length(v_pay[v_i]) > p_max_bytes);
            v_bytes := v_bytes + pg_catalog.octet_length(v_pay[v_i]);
            v_count := v_count + 1;
            v_last := v_i;
        END LOOP;
        IF v_last >= v_first THEN  -- one slice a segment: no per-message array copies
            v_msgs := v_msgs || v_pay[v_first:v_last];
            v_at := v_seg.base_offset + v_last;
        END IF;
        EXIT segs WHEN v_last < COALESCE(pg_catalog.cardinality(v_pay), 0);  -- a limit stopped it
    END LOOP;
    v_offs := ARRAY(SELECT queen.stream_offset(o) FROM pg_catalog.generate_series(v_from, v_at - 1) o
                     ORDER BY o);
    IF v_s.ttl_seconds IS NOT NULL THEN
        -- a read of a TTL stream writes its touch: on a shard, fenced like a write (issue 20;
        -- a touch kept on the source of a move would be lost, the stream expiring early)
        PERFORM queen.slot_fence_check_partition(v_s.partition_id);
        UPDATE queen.streams s SET touched_at = v_now
         WHERE s.partition_id = v_s.partition_id AND s.touched_at < v_now;
    END IF;
    status := 'ok';
    content_type := v_s.content_type;
    messages := v_msgs;
    offsets := v_offs;
    next_offset := queen.stream_offset(v_at);
    up_to_date := v_at = v_s.last_offset + 1;
    closed := v_s.closed;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- head
-- A stream's metadata: 'ok' or 'not_found'.
CREATE OR REPLACE FUNCTION queen.stream_head(p_name text, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, content_type text, next_offset text, closed boolean,
               ttl_seconds bigint, expires_at timestamptz, created_at timestamptz,
               partition_id bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := COALESCE(p_now, pg_catalog.now());
    v_s   record;
BEGIN
    PERFORM queen.stream_check_name(p_name);
    SELECT s.content_type, s.closed, s.ttl_seconds, s.expires_at, s.created_at, s.touched_at,
           lp.last_offset, s.partition_id
      INTO v_s
      FROM queen.streams s JOIN queen.log_partitions lp ON lp.id = s.partition_id
     WHERE s.name = p_name;
    IF NOT FOUND OR queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
        status := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    status := 'ok';
    content_type := v_s.content_type;
    next_offset := queen.stream_offset(v_s.last_offset + 1);
    closed := v_s.closed;
    ttl_seconds := v_s.ttl_seconds;
    expires_at := v_s.expires_at;
    created_at := v_s.created_at;
    partition_id := v_s.partition_id;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- delete
-- Delete a stream and its history: 'deleted' or 'not_found' (an expired stream is purged and
-- answers not_found).
CREATE OR REPLACE FUNCTION queen.stream_delete(p_name text, p_now timestamptz DEFAULT NULL) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := COALESCE(p_now, pg_catalog.now());
    v_pid bigint;
    v_s   queen.streams%ROWTYPE;
BEGIN
    PERFORM queen.stream_check_name(p_name);
    SELECT s.partition_id INTO v_pid FROM queen.streams s WHERE s.name = p_name;
    IF NOT FOUND THEN
        RETURN 'not_found';
    END IF;
    -- the partition row, then the shard's fence (issue 20)
    PERFORM queen.partitions_lock_for_write(ARRAY[v_pid], 'no key update');
    SELECT * INTO v_s FROM queen.streams s WHERE s.partition_id = v_pid;
    IF NOT FOUND THEN
        RETURN 'not_found';
    END IF;
    PERFORM queen.stream_purge(v_pid);
    IF queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
        RETURN 'not_found';
    END IF;
    IF COALESCE(pg_catalog.current_setting('queen.stream_notify', true), 'on')::boolean THEN
        PERFORM pg_catalog.pg_notify('queen_streams', p_name);
    END IF;
    RETURN 'deleted';
END
$$;

-- ---------------------------------------------------------------- SECURITY DEFINER
-- The module's functions run as the owner with the pinned search_path (grants: sql/privileges.sql).
DO $$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
                 WHERE p.pronamespace = 'queen'::regnamespace AND p.prokind = 'f'
                   AND p.proname IN ('blake3', 'blake3_hex',
                                     'stream_write', 'segment_payloads', 'stream_json_invalid', 'stream_offset',
                                     'stream_offset_parse', 'stream_media_type',
                                     'stream_check_name', 'stream_expired', 'stream_purge',
                                     'stream_create', 'stream_append', 'stream_close',
                                     'stream_read', 'stream_head', 'stream_delete') LOOP
        EXECUTE pg_catalog.format(
            'ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', v_fn);
    END LOOP;
END
$$;
-- queen.stream_append_batch: many stream appends in one call (one transaction, one commit),
-- each decided exactly as queen.stream_append decides it (src/pg/streams/append_batch.cpp).
-- Locking protocol: the names are resolved first without a lock, then the appends are decided
-- in ascending partition id order (queen's one global lock order), each stream's partition
-- row locked FOR NO KEY UPDATE once and held to the end of the transaction; the appends of one
-- stream keep their order. A name that did not resolve is decided last, by name.
CREATE OR REPLACE FUNCTION queen.stream_append_batch(p_names text[],
                                          p_counts int[],
                                          p_messages bytea[],
                                          p_content_types text[] DEFAULT NULL,
                                          p_producer_ids text[] DEFAULT NULL,
                                          p_producer_epochs bigint[] DEFAULT NULL,
                                          p_producer_seqs bigint[] DEFAULT NULL,
                                          p_digests text[] DEFAULT NULL,
                                          p_incarnations text[] DEFAULT NULL,
                                          p_closes boolean[] DEFAULT NULL,
                                          p_stream_seqs text[] DEFAULT NULL,
                                          p_bodies bytea[] DEFAULT NULL,
                                          p_expect_apply boolean[] DEFAULT NULL,
                                          p_now timestamptz DEFAULT NULL)
RETURNS TABLE (ord int, status text, stream_offset text, next_offset text, stream_closed boolean,
               producer_epoch bigint, producer_seq bigint, expected_seq bigint,
               received_seq bigint, closed_epoch bigint, closed_seq bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_append_batch_v1'
    LANGUAGE C VOLATILE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;
-- Forks of Durable Streams (Stream-Forked-From on PUT), built only on the public stream
-- functions of 20_producers.sql. A fork is a new stream whose first messages are a copy of its
-- source's messages before the fork offset (plus, with a sub-offset, the first bytes of the
-- message at the offset, or the next JSON elements), so it never depends on the source's data.
-- What remains of the relation is lifetime: a stream that is deleted or expires while a fork
-- of it (or a fork of a fork ...) is present becomes "gone" (410 on every request, 409 on a
-- create or a fork of it) until the last such descendant is deleted or expires; then its name
-- is free again (nothing else to collect). Every function is a typed answer, never an error
-- a client can cause. Locks: none of its own; the stream functions lock as documented there.
-- Its table queen.stream_forks: sql/schema/30_stream_forks.sql.

-- True when the stream of that name is present (exists and has not expired) at p_now.
CREATE OR REPLACE FUNCTION queen.fork_stream_present(p_name text, p_now timestamptz) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM queen.streams s WHERE s.name = p_name
                   AND NOT queen.stream_expired(s.ttl_seconds, s.expires_at, s.touched_at, p_now))
$$;

-- True when a fork of p_name, or a fork of one of its forks (any depth), is present.
CREATE OR REPLACE FUNCTION queen.fork_has_present_descendant(p_name text, p_now timestamptz) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE d(name, depth) AS (
        SELECT f.name, 1 FROM queen.stream_forks f WHERE f.source = p_name
        UNION
        SELECT f.name, d.depth + 1 FROM queen.stream_forks f JOIN d ON f.source = d.name
         WHERE d.depth < 1000)
    SELECT EXISTS (SELECT 1 FROM d WHERE queen.fork_stream_present(d.name, p_now))
$$;

-- Gone (410): not present, but a present descendant fork still holds it.
CREATE OR REPLACE FUNCTION queen.fork_gone(p_name text, p_now timestamptz DEFAULT NULL) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT NOT queen.fork_stream_present(p_name, COALESCE(p_now, pg_catalog.now()))
       AND queen.fork_has_present_descendant(p_name, COALESCE(p_now, pg_catalog.now()))
$$;

-- Create a stream, or a fork of p_source when p_source is given. Statuses: created (201),
-- exists (200), conflict (409), gone (409: the name is held by its forks), source_not_found
-- (404), source_gone (409), content_type_mismatch (409), bad_offset (400: beyond the source's
-- tail), bad_sub_offset (400: nothing or too little at the offset).
-- p_content_type NULL: the source's (forks) or application/octet-stream.
CREATE OR REPLACE FUNCTION queen.fork_create(p_name text,
                                            p_content_type text DEFAULT NULL,
                                            p_ttl_seconds bigint DEFAULT NULL,
                                            p_expires_at timestamptz DEFAULT NULL,
                                            p_closed boolean DEFAULT false,
                                            p_messages bytea[] DEFAULT NULL,
                                            p_source text DEFAULT NULL,
                                            p_fork_offset text DEFAULT NULL,
                                            p_sub_offset bigint DEFAULT NULL,
                                            p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := COALESCE(p_now, pg_catalog.now());
    v_sub   bigint := COALESCE(p_sub_offset, 0);
    v_fork  queen.stream_forks%ROWTYPE;
    v_src   record;
    v_head  record;
    v_ct    text;
    v_off   bigint;
    v_tail  bigint;
    v_ttl   bigint := p_ttl_seconds;
    v_exp   timestamptz := p_expires_at;
    v_msgs  bytea[] := '{}'::bytea[];
    v_read  record;
    v_at    text;
    v_json  boolean;
BEGIN
    IF queen.fork_gone(p_name, v_now) THEN
        RETURN QUERY SELECT 'gone'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    SELECT * INTO v_fork FROM queen.stream_forks f WHERE f.name = p_name;
    IF p_source IS NULL THEN
        IF FOUND AND queen.fork_stream_present(p_name, v_now) THEN
            RETURN QUERY SELECT 'conflict'::text, NULL::text, NULL::text, NULL::boolean;
            RETURN;
        END IF;
        DELETE FROM queen.stream_forks f WHERE f.name = p_name;  -- a stale fork record
        RETURN QUERY SELECT * FROM queen.stream_create(p_name,
            COALESCE(p_content_type, 'application/octet-stream'), p_ttl_seconds, p_expires_at,
            p_closed, p_messages, v_now);
        RETURN;
    END IF;
    IF queen.fork_stream_present(p_name, v_now) THEN
        -- Idempotent re-creation of the same fork; anything else is a conflict.
        SELECT * INTO v_head FROM queen.stream_head(p_name, v_now);
        IF v_fork.name IS NOT NULL AND v_fork.source = p_source
           AND (p_fork_offset IS NULL OR v_fork.fork_offset = p_fork_offset)
           AND v_fork.sub_offset = v_sub
           AND (p_content_type IS NULL OR queen.stream_media_type(p_content_type)
                                          = queen.stream_media_type(v_head.content_type)) THEN
            RETURN QUERY SELECT 'exists'::text, v_head.next_offset, v_head.content_type, v_head.closed;
        ELSE
            RETURN QUERY SELECT 'conflict'::text, NULL::text, NULL::text, NULL::boolean;
        END IF;
        RETURN;
    END IF;
    IF queen.fork_gone(p_source, v_now) THEN
        RETURN QUERY SELECT 'source_gone'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    SELECT * INTO v_src FROM queen.stream_head(p_source, v_now);
    IF v_src.status <> 'ok' THEN
        RETURN QUERY SELECT 'source_not_found'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    IF p_content_type IS NOT NULL AND queen.stream_media_type(p_content_type)
                                      <> queen.stream_media_type(v_src.content_type) THEN
        RETURN QUERY SELECT 'content_type_mismatch'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    v_ct := COALESCE(p_content_type, v_src.content_type);
    v_json := queen.stream_media_type(v_ct) = 'application/json';
    v_tail := queen.stream_offset_parse(v_src.next_offset);
    v_off := CASE WHEN p_fork_offset IS NULL THEN v_tail ELSE queen.stream_offset_parse(p_fork_offset) END;
    IF v_off < 0 OR v_off > v_tail THEN
        RETURN QUERY SELECT 'bad_offset'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    IF v_sub > 0 AND (v_off >= v_tail OR (v_json AND v_off + v_sub > v_tail)) THEN
        RETURN QUERY SELECT 'bad_sub_offset'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    -- Copy the inherited messages: [0, v_off) (+ v_sub JSON elements).
    v_at := '-1';
    WHILE COALESCE(pg_catalog.array_length(v_msgs, 1), 0)
          < v_off + CASE WHEN v_json THEN v_sub ELSE 0 END LOOP
        SELECT * INTO v_read FROM queen.stream_read(p_source, v_at, 10000, 16777216, v_now);
        EXIT WHEN v_read.status <> 'ok' OR COALESCE(pg_catalog.array_length(v_read.messages, 1), 0) = 0;
        v_msgs := v_msgs || v_read.messages;
        v_at := v_read.next_offset;
    END LOOP;
    v_msgs := v_msgs[1 : v_off + CASE WHEN v_json THEN v_sub ELSE 0 END];
    IF v_sub > 0 AND NOT v_json THEN
        SELECT * INTO v_read FROM queen.stream_read(p_source, queen.stream_offset(v_off), 1, 16777216, v_now);
        IF v_sub > pg_catalog.octet_length(v_read.messages[1]) THEN
            RETURN QUERY SELECT 'bad_sub_offset'::text, NULL::text, NULL::text, NULL::boolean;
            RETURN;
        END IF;
        v_msgs := v_msgs || pg_catalog.substr(v_read.messages[1], 1, v_sub::int);
    END IF;
    IF v_ttl IS NULL AND v_exp IS NULL THEN
        v_ttl := v_src.ttl_seconds;
        v_exp := v_src.expires_at;
    END IF;
    DELETE FROM queen.stream_forks f WHERE f.name = p_name;
    INSERT INTO queen.stream_forks (name, source, fork_offset, sub_offset, created_at)
    VALUES (p_name, p_source, queen.stream_offset(v_off), v_sub, v_now);
    RETURN QUERY SELECT * FROM queen.stream_create(p_name, v_ct, v_ttl, v_exp, p_closed,
                                                   v_msgs || COALESCE(p_messages, '{}'::bytea[]), v_now);
END
$$;

-- DELETE with forks in mind: 'gone' (410) when the name is already held only by its forks,
-- else queen.stream_delete's answer ('deleted' | 'not_found'). A deleted stream with present
-- forks stays gone until they are; one without keeps no fork record.
CREATE OR REPLACE FUNCTION queen.fork_delete(p_name text, p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := COALESCE(p_now, pg_catalog.now());
    v_r   text;
BEGIN
    IF queen.fork_gone(p_name, v_now) THEN
        RETURN 'gone';
    END IF;
    v_r := queen.stream_delete(p_name, v_now);
    IF v_r = 'deleted' AND NOT queen.fork_has_present_descendant(p_name, v_now) THEN
        DELETE FROM queen.stream_forks f WHERE f.name = p_name;
    END IF;
    RETURN v_r;
END
$$;
-- ================================================================ dedup views (module 40)
-- Flink's Deduplicate operator as incremental views over a queue (docs/dedup-views.md).
-- The operator itself is src/core/views/operator.*; the glue (src/pg/views/functions.cpp) keeps its
-- keyed state, changelog, consumed offsets, pending mini-batch and watermark in the tables
-- of sql/schema/40_dedup_views.sql, in the caller's transaction.
--
-- Locking: dedup_advance / dedup_watermark / dedup_flush take the view's queen.dedup_views row
-- FOR NO KEY UPDATE first and hold it to commit: one view's calls serialise, different views never
-- wait on each other. They take no partition lock (they only read the log). drop_dedup_view
-- takes the same row lock. A DELETE of a queue some view reads is refused (2BP01).

-- ---------------------------------------------------------------- creating and dropping

-- Validate p_options and create the view. Bad options raise 22023; an unknown queue 42704.
CREATE OR REPLACE FUNCTION queen.create_dedup_view(p_name text, p_source_queue text, p_options jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_opts    jsonb := COALESCE(p_options, 'null'::jsonb);
    v_k       text;
    v_qid     bigint;
    v_key     text[];
    v_rt      text[];
    v_order   text;
    v_keep    text;
    v_ub      boolean := false;
    v_ins     boolean := true;
    v_mb      boolean := false;
    v_size    bigint := -1;
    v_compact boolean := false;
    v_ttl     bigint := 0;
    v_val     jsonb;
BEGIN
    IF p_name IS NULL OR p_name = '' THEN
        RAISE EXCEPTION 'dedup view name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(v_opts) <> 'object' THEN
        RAISE EXCEPTION 'options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR v_k IN SELECT jsonb_object_keys(v_opts) LOOP
        IF v_k NOT IN ('key', 'order', 'keep', 'rowtime', 'generateUpdateBefore', 'generateInsert',
                       'miniBatchEnabled', 'miniBatchSize', 'compactChanges', 'stateTtlMs') THEN
            RAISE EXCEPTION 'unknown dedup view option "%"', v_k USING ERRCODE = '22023',
                HINT = 'Options are key, order, keep, rowtime, generateUpdateBefore, generateInsert, '
                       'miniBatchEnabled, miniBatchSize, compactChanges and stateTtlMs.';
        END IF;
    END LOOP;
    -- key / rowtime: a field name, or a JSON path as an array of strings
    FOREACH v_k IN ARRAY ARRAY['key', 'rowtime'] LOOP
        v_val := v_opts -> v_k;
        CONTINUE WHEN v_val IS NULL OR (v_k = 'rowtime' AND jsonb_typeof(v_val) = 'null');
        IF jsonb_typeof(v_val) = 'string' AND v_val #>> '{}' <> '' THEN
            v_rt := ARRAY[v_val #>> '{}'];
        ELSIF jsonb_typeof(v_val) = 'array' AND jsonb_array_length(v_val) > 0
              AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_val) e
                               WHERE jsonb_typeof(e) <> 'string') THEN
            v_rt := ARRAY(SELECT e FROM jsonb_array_elements_text(v_val) e);
        ELSE
            RAISE EXCEPTION '% must be a field name or a JSON path (an array of strings)', v_k
                USING ERRCODE = '22023';
        END IF;
        IF v_k = 'key' THEN
            v_key := v_rt;
            v_rt := NULL;
        END IF;
    END LOOP;
    IF v_key IS NULL THEN
        RAISE EXCEPTION 'option "key" is required' USING ERRCODE = '22023';
    END IF;
    v_order := v_opts ->> 'order';
    IF jsonb_typeof(v_opts -> 'order') IS DISTINCT FROM 'string'
       OR v_order NOT IN ('proctime', 'rowtime') THEN
        RAISE EXCEPTION 'option "order" must be "proctime" or "rowtime"' USING ERRCODE = '22023';
    END IF;
    v_keep := v_opts ->> 'keep';
    IF jsonb_typeof(v_opts -> 'keep') IS DISTINCT FROM 'string'
       OR v_keep NOT IN ('first', 'last') THEN
        RAISE EXCEPTION 'option "keep" must be "first" or "last"' USING ERRCODE = '22023';
    END IF;
    IF v_order = 'rowtime' AND v_rt IS NULL THEN
        RAISE EXCEPTION 'option "rowtime" (the payload field holding the event time in ms) is required for order "rowtime"'
            USING ERRCODE = '22023';
    END IF;
    FOREACH v_k IN ARRAY ARRAY['generateUpdateBefore', 'generateInsert', 'miniBatchEnabled',
                               'compactChanges'] LOOP
        v_val := v_opts -> v_k;
        CONTINUE WHEN v_val IS NULL;
        IF jsonb_typeof(v_val) <> 'boolean' THEN
            RAISE EXCEPTION 'option "%" must be true or false', v_k USING ERRCODE = '22023';
        END IF;
        CASE v_k
            WHEN 'generateUpdateBefore' THEN v_ub := v_val::boolean;
            WHEN 'generateInsert' THEN v_ins := v_val::boolean;
            WHEN 'miniBatchEnabled' THEN v_mb := v_val::boolean;
            ELSE v_compact := v_val::boolean;
        END CASE;
    END LOOP;
    v_val := v_opts -> 'miniBatchSize';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR abs(v_val::numeric) > 9223372036854775807 THEN
            RAISE EXCEPTION 'option "miniBatchSize" must be a whole number' USING ERRCODE = '22023';
        END IF;
        v_size := v_val::bigint;
    END IF;
    -- Flink validates the size only when mini-batch is on, for every variant
    IF v_mb AND v_size <= 0 THEN
        RAISE EXCEPTION 'table.exec.mini-batch.size should be greater than 0.' USING ERRCODE = '22023';
    END IF;
    v_val := v_opts -> 'stateTtlMs';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 0 OR v_val::numeric > 9223372036854 THEN
            RAISE EXCEPTION 'option "stateTtlMs" must be a whole number of milliseconds >= 0'
                USING ERRCODE = '22023';
        END IF;
        v_ttl := v_val::bigint;
    END IF;

    SELECT id INTO v_qid FROM queen.queues WHERE name = p_source_queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', p_source_queue USING ERRCODE = '42704';
    END IF;
    IF EXISTS (SELECT 1 FROM queen.dedup_views WHERE name = p_name) THEN
        RAISE EXCEPTION 'dedup view "%" already exists', p_name USING ERRCODE = '42710';
    END IF;
    -- a shard's fence (issue 20): a view over a single_slot queue moves with the queue's slot
    IF EXISTS (SELECT 1 FROM queen.queue_placement pl WHERE pl.queue_id = v_qid AND pl.single_slot) THEN
        PERFORM queen.slot_fence_check(p_source_queue, '');
    END IF;
    INSERT INTO queen.dedup_views (name, queue_id, options, key_path, rowtime_path, order_rowtime,
                                   keep_last, update_before, generate_insert, mini_batch,
                                   mini_batch_size, compact_changes, state_ttl_ms)
    VALUES (p_name, v_qid,
            jsonb_build_object('key', to_jsonb(v_key), 'order', v_order, 'keep', v_keep,
                               'rowtime', to_jsonb(v_rt), 'generateUpdateBefore', v_ub,
                               'generateInsert', v_ins, 'miniBatchEnabled', v_mb,
                               'miniBatchSize', v_size, 'compactChanges', v_compact,
                               'stateTtlMs', v_ttl),
            v_key, v_rt, v_order = 'rowtime', v_keep = 'last', v_ub, v_ins, v_mb, v_size,
            v_compact, v_ttl);
END
$$;

-- The parser behind create_dedup_view_sql (PostgreSQL's raw_parser): the recognised options.
CREATE OR REPLACE FUNCTION queen.dedup_parse_query(p_query text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'queen_dedup_parse_query_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Create a view from Flink's deduplication query shape; returns the options it recognised.
CREATE OR REPLACE FUNCTION queen.create_dedup_view_sql(p_name text, p_query text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parsed jsonb;
BEGIN
    IF p_query IS NULL THEN
        RAISE EXCEPTION 'query must not be NULL' USING ERRCODE = '22023';
    END IF;
    v_parsed := queen.dedup_parse_query(p_query);
    PERFORM queen.create_dedup_view(p_name, v_parsed ->> 'queue', v_parsed -> 'options');
    RETURN v_parsed -> 'options' || jsonb_build_object('queue', v_parsed ->> 'queue',
                                                        'columns', v_parsed -> 'columns');
END
$$;

-- Drop a view with its state, changelog, offsets and pending bundle; 42704 when unknown.
CREATE OR REPLACE FUNCTION queen.drop_dedup_view(p_name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id  bigint;
    v_qid bigint;
BEGIN
    DELETE FROM queen.dedup_views WHERE name = p_name RETURNING id, queue_id INTO v_id, v_qid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    -- a shard's fence (issue 20), after the view row's lock (the delete's), as dedup_advance's
    PERFORM queen.slot_fence_check(q.name, '')
       FROM queen.queues q JOIN queen.queue_placement pl ON pl.queue_id = q.id AND pl.single_slot
      WHERE q.id = v_qid;
    DELETE FROM queen.dedup_state_buckets WHERE view_id = v_id;
    DELETE FROM queen.dedup_candidates WHERE view_id = v_id;
    DELETE FROM queen.dedup_change_blocks WHERE view_id = v_id;
    DELETE FROM queen.dedup_pending WHERE view_id = v_id;
END
$$;

-- A queue some dedup view reads cannot be deleted (queen.drop_queue included): 2BP01.
CREATE OR REPLACE FUNCTION queen.dedup_views_guard_queue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_names text;
BEGIN
    SELECT string_agg(name, ', ' ORDER BY name) INTO v_names
      FROM queen.dedup_views WHERE queue_id = OLD.id;
    IF v_names IS NOT NULL THEN
        RAISE EXCEPTION 'cannot drop queue "%" because dedup views depend on it', OLD.name
            USING ERRCODE = '2BP01', DETAIL = format('dedup views: %s', v_names),
                  HINT = 'Drop them first with queen.drop_dedup_view.';
    END IF;
    RETURN OLD;
END
$$;
CREATE OR REPLACE TRIGGER dedup_views_guard BEFORE DELETE ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.dedup_views_guard_queue();

-- ---------------------------------------------------------------- driving a view

CREATE OR REPLACE FUNCTION queen.dedup_advance(p_name text, p_max_rows int DEFAULT 10000,
                                    p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_advance_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.dedup_watermark(p_name text, p_watermark bigint,
                                      p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_watermark_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.dedup_flush(p_name text, p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_flush_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- reading a view

-- The id of a view, or 42704.
CREATE OR REPLACE FUNCTION queen.dedup_view_id(p_name text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint;
BEGIN
    SELECT id INTO v_id FROM queen.dedup_views WHERE name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    RETURN v_id;
END
$$;

-- The changes of one packed block, seq numbered from p_first_seq.
CREATE OR REPLACE FUNCTION queen.dedup_block_changes(p_first_seq bigint, p_block bytea)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_block_changes_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Persisted changes with seq >= p_from_seq, in seq order, at most p_limit.
CREATE OR REPLACE FUNCTION queen.dedup_changelog(p_name text, p_from_seq bigint DEFAULT 0,
                                      p_limit int DEFAULT 1000)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint := queen.dedup_view_id(p_name);
BEGIN
    IF p_limit IS NULL OR p_limit < 0 THEN
        RAISE EXCEPTION 'p_limit must be >= 0' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT c.seq, c.kind, c.key, c.payload, c.rowtime, c.source_partition, c.source_offset
          FROM queen.dedup_change_blocks b,
               LATERAL queen.dedup_block_changes(b.first_seq, b.changes) c
         WHERE b.view_id = v_id AND b.last_seq >= COALESCE(p_from_seq, 0)
           AND c.seq >= COALESCE(p_from_seq, 0)
         ORDER BY c.seq LIMIT p_limit;
END
$$;

-- The states one bucket row holds, one row per key (an internal helper: no grant).
CREATE OR REPLACE FUNCTION queen.dedup_bucket_states(p_states bytea)
    RETURNS TABLE (key text, kind smallint, payload jsonb, rowtime bigint, written_at timestamptz,
                   src_partition text, src_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_bucket_states_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- A view's keyed state, one row per key as of its last call (expired TTL state included),
-- in key order (bytewise): key (the key's canonical JSON text), kind (1 kept row, 2 pending
-- rowtime keep-first candidate, 3 fired marker), payload (NULL for markers), rowtime (NULL for
-- views without a rowtime field), written_at (the processing time of its last write) and the
-- source partition and offset of its row. 42704 when the view is unknown.
CREATE OR REPLACE FUNCTION queen.dedup_state_rows(p_name text)
    RETURNS TABLE (key text, kind smallint, payload jsonb, rowtime bigint, written_at timestamptz,
                   src_partition text, src_offset bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint := queen.dedup_view_id(p_name);
BEGIN
    RETURN QUERY
        SELECT DISTINCT ON (s.key COLLATE "C") s.key, s.kind, s.payload, s.rowtime, s.written_at,
               s.src_partition, s.src_offset
          FROM queen.dedup_state_buckets b, LATERAL queen.dedup_bucket_states(b.states) s
         WHERE b.view_id = v_id
         ORDER BY s.key COLLATE "C", b.bucket < 0 DESC, b.bucket;
END
$$;

-- Counters and sizes of a view. keys: keys with live state as of the view's last call
-- (expired TTL state not counted); pendingCandidates: rowtime keep-first rows waiting for the
-- watermark; consumed: messages read from the queue; pendingBundle: rows of the open mini-batch.
CREATE OR REPLACE FUNCTION queen.dedup_stats(p_name text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v queen.dedup_views;
BEGIN
    SELECT * INTO v FROM queen.dedup_views WHERE name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    RETURN jsonb_build_object(
        'view', v.name,
        'lateRowsDropped', v.late_rows,
        'rowsWithoutRowtime', v.rows_without_rowtime,
        'consumed', v.consumed,
        'changes', v.next_seq - 1,
        'watermark', v.watermark,
        'keys', (SELECT count(*) FROM (SELECT DISTINCT ON (s.key COLLATE "C") s.kind, s.written_at
                                 FROM queen.dedup_state_buckets b,
                                      LATERAL queen.dedup_bucket_states(b.states) s
                                WHERE b.view_id = v.id
                                ORDER BY s.key COLLATE "C", b.bucket < 0 DESC, b.bucket) s
                  WHERE (v.state_ttl_ms = 0 OR s.kind = 2 OR v.last_now IS NULL
                         OR s.written_at + make_interval(secs => v.state_ttl_ms / 1000.0) > v.last_now)),
        'pendingCandidates', (SELECT count(*) FROM queen.dedup_candidates c WHERE c.view_id = v.id),
        'pendingBundle', (SELECT count(*) FROM queen.dedup_pending p WHERE p.view_id = v.id),
        'stateBuckets', v.state_buckets,
        'offsets', COALESCE((SELECT jsonb_object_agg(p.name, o.next_offset ORDER BY p.name)
                               FROM queen.dedup_offsets o
                               JOIN queen.log_partitions p ON p.id = o.partition_id
                              WHERE o.view_id = v.id), '{}'::jsonb),
        'options', v.options);
END
$$;

-- Retention extension point (see sql/modules/00_core.sql): the lowest offset of the partition that some
-- dedup view over its queue has not consumed yet (0 where a view has consumed nothing of it);
-- NULL when no view reads the queue.
CREATE OR REPLACE FUNCTION queen.retention_floor(p_partition_id bigint) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(COALESCE(o.next_offset, 0))
      FROM queen.log_partitions p
      JOIN queen.dedup_views v ON v.queue_id = p.queue_id
      LEFT JOIN queen.dedup_offsets o ON o.view_id = v.id AND o.partition_id = p.id
     WHERE p.id = p_partition_id
$$;
-- ================================================================ module: shared probe cache
-- What the probe caches of queen.push hold, server-wide (docs/push-path.md). With queen in
-- shared_preload_libraries one cache in shared memory serves every backend, bounded by
-- queen.shared_probe_cache_mb (mode 'shared'); without, each backend keeps its own (mode
-- 'backend': budget_bytes is then queen.probe_cache_mb times the server's backends, what those
-- caches may hold together; partitions and used_bytes are this backend's). backend_budget_bytes
-- is in both modes what the per-backend digests may hold together (queen.probe_cache_mb times
-- the backends): the ack digests, and in mode 'backend' the probe digests too. grows: full
-- digests rebuilt bigger from their own entries (hydrations count those built from the rows).
-- Read-only: no locks beyond the cache's own LWLocks, held for a walk over its directory.

CREATE OR REPLACE FUNCTION queen.probe_cache_shared(
    OUT mode text, OUT budget_bytes bigint, OUT arena_bytes bigint, OUT directory_bytes bigint,
    OUT used_bytes bigint, OUT partitions int, OUT hashes bigint, OUT refused_partitions int,
    OUT bytes_per_hash float8, OUT lookups bigint, OUT hydrations bigint, OUT evictions bigint,
    OUT refusals bigint, OUT invalidations bigint, OUT compactions bigint,
    OUT evict_idle_seconds int, OUT backend_budget_bytes bigint, OUT grows bigint)
    AS 'MODULE_PATHNAME', 'queen_probe_cache_shared_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- One row per shared digest (or refused partition) of this database: bytes is what it holds
-- (resident) or asked for (refused); idle_ms since a push last used it.
CREATE OR REPLACE FUNCTION queen.probe_cache_partitions(
    OUT partition_id bigint, OUT state text, OUT hashes bigint, OUT bytes bigint,
    OUT capacity bigint, OUT verified_upto bigint, OUT idle_ms bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'queen_probe_cache_partitions_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE VIEW queen.probe_cache AS SELECT * FROM queen.probe_cache_shared();
-- queen: the consuming model of Queen MQ's wire (issue 18; the facts are
-- ../shared/reference/queen-client-wire-facts.md, the differences docs/queen-compatibility.md):
-- pops with leases per (partition, group), acks and nacks with retries and the dead-letter
-- queue, lease renewal, subscription modes, queue and group deletion, and the broker's
-- transaction. Its tables are in sql/schema/50_consume.sql; the sidecar's HTTP routes call
-- these functions and add nothing to their semantics.
--
-- Locks (the order is written at the top of sql/modules/00_core.sql):
--   partition rows (ascending id): FOR NO KEY UPDATE by queen.transaction_wire (like a push),
--   FOR KEY SHARE by acks and pops (which no push conflicts with; a queue deletion's FOR
--   UPDATE does, so rows referencing a partition are never created while waiting for it)
--   -> on a shard, the slots' fence locks (ShareLock; src/pg/storage/slot_fence.h): every writer
--      here checks its partitions' slots before any row below (a lease renewal, which locks no
--      partition, first of all; the first pop of a "new" subscription before its row)
--   -> a group's subscription row (created at its first pop of a queue)
--   -> queen.consumer_state rows, FOR UPDATE, ascending (partition id, group name COLLATE "C"),
--      created in that order too
--   -> the queen.consumer_groups row (the cursor) of a (partition, group) whose state row is held
--   -> queen.consumer_dlq inserts.
-- A pop reads through queen.read and claims the partitions of an any-partition pop (partition
-- KEY SHARE, then state row) with SKIP LOCKED, ascending, so it waits on nobody but a
-- concurrent first creator of the same state row. Acks and renewals lock all the state rows they will touch, in
-- the order, before changing anything.

-- ---------------------------------------------------------------- partition ids on the wire
-- The wire's partitionId: a UUID string made of the partition's id (the sidecar writes the same
-- mapping in src/core/common/partition_uuid.h). NULL for NULL.
CREATE OR REPLACE FUNCTION queen.partition_uuid(p_id bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ('00000000-0000-8000-8000-' || pg_catalog.lpad(pg_catalog.to_hex(p_id), 12, '0'))::uuid
     WHERE p_id >= 0 AND p_id < 281474976710656
$$;

-- The partition id of a wire partitionId, or NULL when the text is not of that form.
CREATE OR REPLACE FUNCTION queen.partition_of_uuid(p text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ('x' || pg_catalog.lpad(pg_catalog.substr(p, 25), 16, '0'))::bit(64)::bigint
     WHERE p OPERATOR(pg_catalog.~) '^00000000-0000-8000-8000-[0-9a-fA-F]{12}$'
$$;

-- ---------------------------------------------------------------- options
-- Queen's 15 queue options with the broker's defaults (an unsent option returns to these).
CREATE OR REPLACE FUNCTION queen.consume_defaults() RETURNS jsonb
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT '{"leaseTime": 300, "maxSize": 0, "ttl": 3600, "retryLimit": 3, "retryDelay": 1000,
             "deadLetterQueue": false, "dlqAfterMaxRetries": false, "priority": 0,
             "delayedProcessing": 0, "windowBuffer": 0, "retentionSeconds": 0,
             "completedRetentionSeconds": 0, "retentionEnabled": false,
             "encryptionEnabled": false, "maxWaitTimeSeconds": 0}'::jsonb
$$;

-- The 15 options of a configure call: each sent one checked (numbers: whole, >= 0, except
-- priority, any whole number; flags: booleans; 22023 otherwise), the unsent (or null) ones at
-- their defaults. Keys that are none of the 15 are left to the caller. Internal.
CREATE OR REPLACE FUNCTION queen.consume_options_check(p_opts jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_out jsonb := queen.consume_defaults();
    v_key text;
    v_def jsonb;
    v_val jsonb;
BEGIN
    FOR v_key, v_def IN SELECT key, value FROM jsonb_each(queen.consume_defaults()) LOOP
        v_val := p_opts -> v_key;
        CONTINUE WHEN v_val IS NULL OR jsonb_typeof(v_val) = 'null';
        IF jsonb_typeof(v_def) = 'boolean' THEN
            IF jsonb_typeof(v_val) <> 'boolean' THEN
                RAISE EXCEPTION '% must be true or false', v_key USING ERRCODE = '22023';
            END IF;
        ELSIF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
              OR abs(v_val::numeric) > 2147483647
              OR (v_key <> 'priority' AND v_val::numeric < 0) THEN
            RAISE EXCEPTION '% must be a whole number%', v_key,
                CASE WHEN v_key = 'priority' THEN '' ELSE ' >= 0' END USING ERRCODE = '22023';
        END IF;
        v_out := jsonb_set(v_out, ARRAY[v_key], v_val);
    END LOOP;
    RETURN v_out;
END
$$;

-- A queue's 15 options as stored (the defaults for a queue never configured). Internal.
CREATE OR REPLACE FUNCTION queen.consume_options(p_queue_id bigint) RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE((SELECT o.options FROM queen.queue_options o WHERE o.queue_id = p_queue_id),
                    queen.consume_defaults())
$$;

-- ---------------------------------------------------------------- small helpers
-- A timestamp as the wire writes it: ISO-8601, microseconds, UTC, "Z".
CREATE OR REPLACE FUNCTION queen.consume_iso(p_ts timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.to_char(p_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- The group of a call: a non-empty string, else queue mode.
CREATE OR REPLACE FUNCTION queen.consume_group(p_group text) RETURNS text
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(NULLIF(p_group, ''), '__QUEUE_MODE__')
$$;

-- The highest stored offset of a partition whose message was created before p_start, or -1
-- (binary search with queen.read; messages are stored in creation order). Internal.
CREATE OR REPLACE FUNCTION queen.consume_offset_before(p_queue text, p_partition text,
                                                       p_last bigint, p_start timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_lo  bigint := -1;          -- every stored offset <= v_lo was created before p_start
    v_hi  bigint := p_last + 1;  -- every stored offset >= v_hi was created at or after it
    v_mid bigint;
    v_off bigint;
    v_at  timestamptz;
BEGIN
    WHILE v_hi - v_lo > 1 LOOP
        v_mid := v_lo + (v_hi - v_lo) / 2;
        SELECT r.message_offset, r.created_at INTO v_off, v_at
          FROM queen.read(p_queue, p_partition, v_mid, 1) r;
        IF NOT FOUND OR v_off >= v_hi OR v_at >= p_start THEN
            v_hi := v_mid;
        ELSE
            v_lo := v_off;
        END IF;
    END LOOP;
    RETURN v_lo;
END
$$;

-- A group's subscription start on a queue (NULL: all history), fixed at its first pop there;
-- fresh is true when this call fixed a "new"/"now" subscription (that first pop answers
-- empty; it also starts the group's cursor at the end of every partition stored so far).
-- Queue mode has none. Locks: the subscription row (its insert), then those cursor rows in
-- ascending partition id order, before any state row. Internal.
CREATE OR REPLACE FUNCTION queen.consume_subscription(p_queue text, p_group text, p_mode text,
                                                      p_from text, p_now timestamptz,
                                                      OUT start_at timestamptz, OUT fresh boolean)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_mode  text;
    v_start timestamptz;
BEGIN
    fresh := false;
    IF p_group = '__QUEUE_MODE__' THEN
        RETURN;
    END IF;
    SELECT s.start_at INTO start_at FROM queen.consumer_subscriptions s
     WHERE s.queue_name = p_queue AND s.group_name = p_group;
    IF FOUND THEN
        RETURN;
    END IF;
    IF p_from IN ('now', 'new') OR (p_from IS NULL AND p_mode = 'new') THEN
        v_mode := 'new';
        v_start := p_now;
    ELSIF p_from IS NOT NULL AND p_from <> '' THEN
        BEGIN
            v_start := p_from::timestamptz;
            v_mode := 'from';
        EXCEPTION WHEN OTHERS THEN
            v_start := NULL;
        END;
    END IF;
    IF v_start IS NULL AND v_mode IS NULL AND p_mode = 'new' THEN
        v_mode := 'new';
        v_start := p_now;
    END IF;
    IF v_mode = 'new' THEN
        -- a shard's fence (issue 20), before the subscription row: the cursors below go on every
        -- partition of the queue, so one in a moving slot refuses this first pop (55Q02)
        PERFORM queen.slot_fence_check_partition(p.id)
           FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
          WHERE q.name = p_queue AND p.last_offset >= 0 ORDER BY p.id;
    END IF;
    INSERT INTO queen.consumer_subscriptions (queue_name, group_name, mode, start_at)
    VALUES (p_queue, p_group, COALESCE(v_mode, 'all'), v_start)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
        start_at := v_start;
        fresh := v_mode = 'new';
        IF fresh THEN
            -- every message stored so far is before the subscription: start the group's cursor
            -- on each partition at its end now (ascending id), rather than searching each
            -- partition by time at its first pop there
            INSERT INTO queen.consumer_groups AS g (partition_id, group_name, committed_offset)
            SELECT p.id, p_group, p.last_offset
              FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = p_queue AND p.last_offset >= 0
             ORDER BY p.id
            ON CONFLICT (partition_id, group_name) DO UPDATE
               SET committed_offset = greatest(g.committed_offset, EXCLUDED.committed_offset);
        END IF;
    ELSE
        SELECT s.start_at INTO start_at FROM queen.consumer_subscriptions s
         WHERE s.queue_name = p_queue AND s.group_name = p_group;
    END IF;
END
$$;

-- Copy a message into the dead-letter queue. Internal.
CREATE OR REPLACE FUNCTION queen.consume_to_dlq(p_queue text, p_partition text, p_pid bigint,
                                                p_group text, p_off bigint, p_error text,
                                                p_retries int)
RETURNS void
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO queen.consumer_dlq (partition_id, group_name, message_offset, message_id,
                                    transaction_id, payload, error_message, retry_count, created_at)
    SELECT p_pid, p_group, r.message_offset, r.message_id, r.transaction_id, r.payload, p_error,
           p_retries, r.created_at
      FROM queen.read(p_queue, p_partition, p_off, 1) r
     WHERE r.message_offset = p_off
$$;

-- Move a group's cursor on a partition to at least p_off (creating its row), folding in the
-- acks recorded above it (queen.ack's pending ones) that are now contiguous. Locks the
-- consumer_groups row (its UPDATE or INSERT). Internal.
CREATE OR REPLACE FUNCTION queen.consume_advance(p_pid bigint, p_group text, p_off bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pos  bigint;
    v_next bigint;
BEGIN
    UPDATE queen.consumer_groups SET committed_offset = p_off
     WHERE partition_id = p_pid AND group_name = p_group AND committed_offset < p_off;
    IF NOT FOUND THEN
        INSERT INTO queen.consumer_groups AS g (partition_id, group_name, committed_offset)
        VALUES (p_pid, p_group, p_off)
        ON CONFLICT (partition_id, group_name) DO UPDATE
           SET committed_offset = greatest(g.committed_offset, EXCLUDED.committed_offset)
         WHERE g.committed_offset < EXCLUDED.committed_offset;
        IF NOT FOUND THEN
            RETURN;  -- already at or past p_off
        END IF;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM queen.consumer_acks
                    WHERE partition_id = p_pid AND group_name = p_group) THEN
        RETURN;
    END IF;
    v_pos := p_off;
    FOR v_next IN SELECT message_offset FROM queen.consumer_acks
                   WHERE partition_id = p_pid AND group_name = p_group
                     AND message_offset > v_pos ORDER BY message_offset LOOP
        EXIT WHEN v_next <> v_pos + 1;
        v_pos := v_next;
    END LOOP;
    DELETE FROM queen.consumer_acks
     WHERE partition_id = p_pid AND group_name = p_group AND message_offset <= v_pos;
    IF v_pos > p_off THEN
        UPDATE queen.consumer_groups SET committed_offset = v_pos
         WHERE partition_id = p_pid AND group_name = p_group;
    END IF;
END
$$;
-- queen: acks, nacks and lease renewal of the wire (issue 18; §3.4 and §3.6 of the wire
-- facts). An ack names its message by (partitionId, transactionId); "completed" moves the
-- group's cursor to it and counts it against the batch its pop delivered (the whole batch acked
-- releases the lease and resets the retry counter); "failed" releases the lease for a
-- redelivery until the queue's retryLimit is reached, then moves the message to the
-- dead-letter queue; "dlq" moves it there at once; "retry" releases without counting.
-- Locks: see sql/modules/60_consume.sql. queen.ack_messages takes the partitions it names FOR
-- KEY SHARE (ascending; no push conflicts with it, a queue deletion does), then every existing
-- state row it touches (FOR UPDATE, ascending (partition id, group name "C")) before changing
-- any; then consumer_groups rows (the cursor) and DLQ inserts. queen.renew_lease locks only
-- state rows (in the same order) and inserts nothing.

-- The group of one wire ack: the call's group when given, else the item's consumerGroup when it
-- is a non-empty string, else queue mode. Internal.
CREATE OR REPLACE FUNCTION queen.consume_ack_group(p_item jsonb, p_group text) RETURNS text
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT queen.consume_group(COALESCE(NULLIF(p_group, ''),
        CASE WHEN pg_catalog.jsonb_typeof(p_item -> 'consumerGroup') = 'string'
             THEN p_item ->> 'consumerGroup' END))
$$;

-- Lock the existing state rows of these (partition, group) pairs in the global order. Internal.
CREATE OR REPLACE FUNCTION queen.consume_lock_states(p_pids bigint[], p_groups text[]) RETURNS void
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 1 FROM queen.consumer_state s
     WHERE (s.partition_id, s.group_name) IN (
               SELECT u.pid, u.grp FROM ROWS FROM (pg_catalog.unnest(p_pids), pg_catalog.unnest(p_groups)) AS u(pid, grp))
     ORDER BY s.partition_id, s.group_name COLLATE "C"
       FOR UPDATE OF s
$$;

-- Apply one ack whose state row (if any) the caller holds locked. p_in_txn: the broker's
-- transaction rules (completed creates the cursor even without a pop; failed and dlq go to the
-- DLQ at once with retryCount 0; other statuses are not applied). Returns {success, error,
-- queueName, partitionName, leaseReleased, dlq}. Internal.
CREATE OR REPLACE FUNCTION queen.consume_ack(p_pid bigint, p_group text, p_txn text,
                                             p_status text, p_error text, p_lease text,
                                             p_in_txn boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q        text;
    v_p        text;
    v_qid      bigint;
    v_pos      bigint;
    v_hash     bytea;
    v_off      bigint;
    v_lease_id uuid;
    v_expires  timestamptz;
    v_retries  int;
    v_batch    int;
    v_acked    int;
    v_has      boolean;
    v_status   text := COALESCE(p_status, 'completed');
    v_limit    int;
    v_released boolean := false;
    v_dlq      boolean := false;
    v_count    boolean := false;
BEGIN
    SELECT q.name, p.name, q.id, COALESCE(g.committed_offset, -1), s.partition_id IS NOT NULL,
           s.lease_id, s.lease_expires_at, s.retry_count, s.batch_size, s.acked_count
      INTO v_q, v_p, v_qid, v_pos, v_has, v_lease_id, v_expires, v_retries, v_batch, v_acked
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = p_group
      LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = p_group
     WHERE p.id = p_pid;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('success', false, 'error', 'Message not found', 'queueName', NULL,
                                  'partitionName', NULL, 'leaseReleased', false, 'dlq', false);
    END IF;
    -- the occurrence after the cursor, else an earlier (already consumed) one
    v_hash := queen.txn_hash(p_txn);
    v_off := COALESCE(queen.log_find_hash_after(p_pid, v_hash, v_pos),
                      queen.log_find_hash_after(p_pid, v_hash, -1));
    IF v_off IS NULL THEN
        RETURN jsonb_build_object('success', false, 'error', 'Message not found', 'queueName', v_q,
                                  'partitionName', v_p, 'leaseReleased', false, 'dlq', false);
    END IF;
    IF p_lease IS NOT NULL AND (NOT v_has OR v_lease_id IS NULL
                                OR v_lease_id::text <> lower(p_lease)
                                OR v_expires <= clock_timestamp()) THEN
        RETURN jsonb_build_object('success', false, 'error', 'Invalid or expired lease',
                                  'queueName', v_q, 'partitionName', v_p,
                                  'leaseReleased', false, 'dlq', false);
    END IF;
    IF p_in_txn THEN
        IF v_status NOT IN ('completed', 'failed', 'dlq') THEN
            RETURN jsonb_build_object('success', false, 'error', format('Invalid status "%s"', v_status),
                                      'queueName', v_q, 'partitionName', v_p,
                                      'leaseReleased', false, 'dlq', false);
        END IF;
        IF v_status = 'completed' THEN
            v_count := v_has;
        ELSE
            PERFORM queen.consume_to_dlq(v_q, v_p, p_pid, p_group, v_off,
                                         COALESCE(p_error, 'Unknown error'), 0);
            v_dlq := true;
            IF v_has THEN
                UPDATE queen.consumer_state
                   SET lease_id = NULL, lease_expires_at = NULL, acked_count = 0, retry_count = 0
                 WHERE partition_id = p_pid AND group_name = p_group;
                v_released := true;
            END IF;
        END IF;
        PERFORM queen.consume_advance(p_pid, p_group, v_off);
    ELSE
        IF v_status NOT IN ('completed', 'success', 'failed', 'dlq', 'retry') THEN
            RETURN jsonb_build_object('success', false, 'error', format('Invalid status "%s"', v_status),
                                      'queueName', v_q, 'partitionName', v_p,
                                      'leaseReleased', false, 'dlq', false);
        END IF;
        IF NOT v_has THEN
            -- the group never popped this partition: nothing to move (the broker's answer)
            RETURN jsonb_build_object('success', true, 'error', NULL, 'queueName', v_q,
                                      'partitionName', v_p, 'leaseReleased', false, 'dlq', false);
        END IF;
        v_limit := (queen.consume_options(v_qid) ->> 'retryLimit')::int;
        IF v_status IN ('completed', 'success') THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_off);
            v_count := true;
        ELSIF v_status = 'retry' THEN
            UPDATE queen.consumer_state SET lease_id = NULL, lease_expires_at = NULL, acked_count = 0
             WHERE partition_id = p_pid AND group_name = p_group;
            v_released := true;
        ELSIF v_status = 'failed' AND v_lease_id IS NULL THEN
            -- one retry per delivery: the nacks of a batch after the first find it released
            v_released := true;
        ELSIF v_status = 'failed' AND v_retries < v_limit THEN
            UPDATE queen.consumer_state
               SET lease_id = NULL, lease_expires_at = NULL, acked_count = 0,
                   retry_count = retry_count + 1
             WHERE partition_id = p_pid AND group_name = p_group;
            v_released := true;
        ELSE
            -- failed with the retries exhausted, or dlq
            PERFORM queen.consume_to_dlq(v_q, v_p, p_pid, p_group, v_off,
                COALESCE(p_error, CASE WHEN v_status = 'failed' THEN 'Retries exhausted'
                                       ELSE 'Unknown error' END), v_retries);
            PERFORM queen.consume_advance(p_pid, p_group, v_off);
            v_dlq := true;
            v_count := true;
        END IF;
    END IF;
    IF v_count THEN
        -- the whole batch acked: release the lease, reset the retry counter (the row
        -- as this call found it, under its lock, before any change above)
        v_released := v_acked + 1 >= v_batch;
        UPDATE queen.consumer_state
           SET acked_count = CASE WHEN v_released THEN 0 ELSE acked_count + 1 END,
               lease_id = CASE WHEN v_released THEN NULL ELSE lease_id END,
               lease_expires_at = CASE WHEN v_released THEN NULL ELSE lease_expires_at END,
               retry_count = CASE WHEN v_released THEN 0 ELSE retry_count END
         WHERE partition_id = p_pid AND group_name = p_group;
    END IF;
    RETURN jsonb_build_object('success', true, 'error', NULL, 'queueName', v_q,
                              'partitionName', v_p, 'leaseReleased', COALESCE(v_released, false),
                              'dlq', v_dlq);
END
$$;

-- A run of "completed" acks of one (partition, group) whose state row (if any) the caller holds
-- locked, applied in order exactly as queen.consume_ack applies them one by one, but on the state
-- read once and written once (the cursor moved once, to the highest acked offset): a client's
-- batch ack costs one state write, not one per message. p_items: {index, transactionId, leaseId}
-- objects. Returns the wire's answer items. Internal.
CREATE OR REPLACE FUNCTION queen.consume_ack_run(p_pid bigint, p_group text, p_items jsonb[])
RETURNS jsonb[]
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_q        text;
    v_p        text;
    v_qid      bigint;
    v_pos      bigint;
    v_max      bigint;
    v_has      boolean;
    v_lease_id uuid;
    v_expires  timestamptz;
    v_retries  int;
    v_batch    int;
    v_acked    int;
    v_now      timestamptz := clock_timestamp();
    v_item     jsonb;
    v_hash     bytea;
    v_off      bigint;
    v_lease    text;
    v_released boolean;
    v_error    text;
    v_dirty    boolean := false;
    v_out      jsonb[] := '{}';
BEGIN
    SELECT q.name, p.name, q.id, COALESCE(g.committed_offset, -1), s.partition_id IS NOT NULL,
           s.lease_id, s.lease_expires_at, s.retry_count, s.batch_size, s.acked_count
      INTO v_q, v_p, v_qid, v_pos, v_has, v_lease_id, v_expires, v_retries, v_batch, v_acked
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = p_group
      LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = p_group
     WHERE p.id = p_pid;
    v_max := v_pos;
    FOREACH v_item IN ARRAY p_items LOOP
        v_released := false;
        v_error := NULL;
        v_off := NULL;
        IF v_q IS NOT NULL THEN
            v_hash := queen.txn_hash(v_item ->> 'transactionId');
            v_off := COALESCE(queen.log_find_hash_after(p_pid, v_hash, v_max),
                              queen.log_find_hash_after(p_pid, v_hash, -1));
        END IF;
        v_lease := v_item ->> 'leaseId';
        IF v_off IS NULL THEN
            v_error := 'Message not found';
        ELSIF v_lease IS NOT NULL AND (NOT v_has OR v_lease_id IS NULL
                                       OR v_lease_id::text <> lower(v_lease) OR v_expires <= v_now) THEN
            v_error := 'Invalid or expired lease';
        ELSIF v_has THEN
            -- the cursor moves to it; the whole batch acked releases the lease
            v_max := greatest(v_max, v_off);
            v_released := v_acked + 1 >= v_batch;
            IF v_released THEN
                v_acked := 0;
                v_lease_id := NULL;
                v_expires := NULL;
                v_retries := 0;
            ELSE
                v_acked := v_acked + 1;
            END IF;
            v_dirty := true;
        END IF;
        v_out := v_out || jsonb_build_object(
            'index', v_item -> 'index', 'transactionId', v_item -> 'transactionId',
            'success', v_error IS NULL, 'error', v_error, 'queueName', v_q, 'partitionName', v_p,
            'leaseReleased', v_released, 'dlq', false);
    END LOOP;
    IF v_dirty THEN
        IF v_max > v_pos THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_max);
        END IF;
        UPDATE queen.consumer_state
           SET lease_id = v_lease_id, lease_expires_at = v_expires, retry_count = v_retries,
               acked_count = v_acked
         WHERE partition_id = p_pid AND group_name = p_group;
    END IF;
    RETURN v_out;
END
$$;

-- Wire acks (POST /api/v1/ack and /ack/batch): p_acks is an array of {transactionId,
-- partitionId, status, error, leaseId?, consumerGroup?}; p_group (the batch's consumerGroup)
-- overrides each item's, and neither means queue mode. 22023 (nothing applied) when p_acks is
-- not an array or an item is not an object or lacks a string transactionId or partitionId, or
-- has a non-string status, error or leaseId; 42501 when one names a partition of a queue
-- reserved for queen's modules. The answer: one object per ack, in order,
-- {index, transactionId, success, error, queueName, partitionName, leaseReleased, dlq};
-- failures (unknown message, invalid lease, unknown status) are items, never errors.
-- Consecutive "completed" acks of one (partition, group) are applied as one run
-- (queen.consume_ack_run), every other ack alone (queen.consume_ack), in order.
CREATE OR REPLACE FUNCTION queen.ack_messages(p_acks jsonb, p_group text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_item    jsonb;
    v_i       int := 0;
    v_key     text;
    v_r       jsonb;
    v_out     jsonb[] := '{}';
    v_run     jsonb[] := '{}';
    v_run_pid bigint;
    v_run_grp text;
    v_pids    bigint[] := '{}';
    v_grps    text[] := '{}';
    v_pid     bigint;
    v_grp     text;
BEGIN
    IF p_acks IS NULL OR jsonb_typeof(p_acks) <> 'array' THEN
        RAISE EXCEPTION 'acknowledgments must be an array' USING ERRCODE = '22023';
    END IF;
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_acks) LOOP
        IF jsonb_typeof(v_item) <> 'object' THEN
            RAISE EXCEPTION 'ack %: not an object', v_i USING ERRCODE = '22023';
        END IF;
        FOREACH v_key IN ARRAY ARRAY['transactionId', 'partitionId'] LOOP
            IF jsonb_typeof(v_item -> v_key) IS DISTINCT FROM 'string' THEN
                RAISE EXCEPTION 'ack %: % is required (a string)', v_i, v_key USING ERRCODE = '22023';
            END IF;
        END LOOP;
        FOREACH v_key IN ARRAY ARRAY['status', 'error', 'leaseId'] LOOP
            IF jsonb_typeof(v_item -> v_key) NOT IN ('string', 'null') THEN
                RAISE EXCEPTION 'ack %: % must be a string', v_i, v_key USING ERRCODE = '22023';
            END IF;
        END LOOP;
        -- queen.partition_of_uuid and queen.consume_ack_group, inlined (a call costs more than
        -- the rest of a completed ack)
        v_pids := v_pids || CASE WHEN (v_item ->> 'partitionId') ~ '^00000000-0000-8000-8000-[0-9a-fA-F]{12}$'
                                 THEN ('x' || lpad(substr(v_item ->> 'partitionId', 25), 16, '0'))::bit(64)::bigint END;
        v_grps := v_grps || COALESCE(NULLIF(p_group, ''),
                                     CASE WHEN jsonb_typeof(v_item -> 'consumerGroup') = 'string'
                                          THEN NULLIF(v_item ->> 'consumerGroup', '') END,
                                     '__QUEUE_MODE__');
        v_i := v_i + 1;
    END LOOP;
    -- queen's own queues are nobody's to ack in (42501, before anything is read or written)
    PERFORM queen.reserved_queue_guard(ARRAY(
        SELECT q.name FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE p.id = ANY (v_pids)));
    -- the partitions first (KEY SHARE, ascending: no push conflicts, a queue deletion does),
    -- then the state rows: creating cursor and DLQ rows then never waits on a partition. The
    -- shard's fence (issue 20) comes with the partition locks, before any state row: an ack of
    -- a moving slot's partition refuses the whole call (55Q02) before anything is written
    PERFORM queen.partitions_lock_for_write(v_pids, 'key share');
    PERFORM queen.consume_lock_states(v_pids, v_grps);
    v_i := 0;
    FOR v_item IN SELECT value FROM jsonb_array_elements(p_acks) LOOP
        v_pid := v_pids[v_i + 1];
        v_grp := v_grps[v_i + 1];
        IF cardinality(v_run) > 0 AND (v_pid IS DISTINCT FROM v_run_pid OR v_grp <> v_run_grp
                                       OR COALESCE(v_item ->> 'status', 'completed') NOT IN ('completed', 'success')) THEN
            v_out := v_out || queen.consume_ack_run(v_run_pid, v_run_grp, v_run);
            v_run := '{}';
        END IF;
        IF v_pid IS NOT NULL AND COALESCE(v_item ->> 'status', 'completed') IN ('completed', 'success') THEN
            v_run_pid := v_pid;
            v_run_grp := v_grp;
            v_run := v_run || jsonb_build_object('index', v_i, 'transactionId', v_item -> 'transactionId',
                                                 'leaseId', v_item -> 'leaseId');
        ELSE
            v_r := queen.consume_ack(v_pid, v_grp, v_item ->> 'transactionId', v_item ->> 'status',
                                     v_item ->> 'error', v_item ->> 'leaseId', false);
            v_out := v_out || jsonb_build_object(
                'index', v_i, 'transactionId', v_item ->> 'transactionId',
                'success', v_r -> 'success', 'error', v_r -> 'error',
                'queueName', v_r -> 'queueName', 'partitionName', v_r -> 'partitionName',
                'leaseReleased', v_r -> 'leaseReleased', 'dlq', v_r -> 'dlq');
        END IF;
        v_i := v_i + 1;
    END LOOP;
    IF cardinality(v_run) > 0 THEN
        v_out := v_out || queen.consume_ack_run(v_run_pid, v_run_grp, v_run);
    END IF;
    RETURN to_jsonb(v_out);
END
$$;

-- Extend a live lease (POST /api/v1/lease/:leaseId/extend): every state row holding it and not
-- expired gets expiry max(current, now + p_seconds). The answer is the broker's array
-- [{index, leaseId, success, error, expiresAt}]; an unknown or expired lease is success false.
-- 22023 for p_seconds below 1. Locks the rows in the global order first.
CREATE OR REPLACE FUNCTION queen.renew_lease(p_lease_id text, p_seconds int DEFAULT 60) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now     timestamptz := clock_timestamp();
    v_lease   uuid;
    v_expires timestamptz;
BEGIN
    IF p_seconds IS NULL OR p_seconds < 1 THEN
        RAISE EXCEPTION 'seconds must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_lease_id OPERATOR(pg_catalog.~*) '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        v_lease := p_lease_id::uuid;
        -- a shard's fence (issue 20) before the state rows (as an ack takes it): the rows of a
        -- lease are all written by the pop that took it, so the set read here only shrinks
        PERFORM queen.slot_fence_check_partition(d.pid)
           FROM (SELECT DISTINCT s.partition_id AS pid FROM queen.consumer_state s
                  WHERE s.lease_id = v_lease AND s.lease_expires_at > v_now ORDER BY 1) d;
        PERFORM 1 FROM queen.consumer_state s
         WHERE s.lease_id = v_lease AND s.lease_expires_at > v_now
         ORDER BY s.partition_id, s.group_name COLLATE "C" FOR UPDATE;
        UPDATE queen.consumer_state
           SET lease_expires_at = greatest(lease_expires_at, v_now + make_interval(secs => p_seconds))
         WHERE lease_id = v_lease AND lease_expires_at > v_now;
        SELECT max(s.lease_expires_at) INTO v_expires FROM queen.consumer_state s
         WHERE s.lease_id = v_lease AND s.lease_expires_at > v_now;
    END IF;
    RETURN jsonb_build_array(jsonb_build_object(
        'index', 0, 'leaseId', p_lease_id, 'success', v_expires IS NOT NULL,
        'error', CASE WHEN v_expires IS NULL THEN 'Lease not found or expired' END,
        'expiresAt', queen.consume_iso(v_expires)));
END
$$;
-- queen: the wire's deletes and dead-letter listing (issue 18; §3.7 and §3.8 of the wire
-- facts). Locks: delete_queue is queen.drop_queue's (the queue row, then its partitions
-- ascending; the consuming tables go by ON DELETE CASCADE); delete_consumer_group takes the
-- group's partitions FOR KEY SHARE (ascending), then its state rows in the global order, then
-- deletes its cursors.

-- Delete a queue (DELETE /api/v1/resources/queues/:q): its partitions, messages, consumer
-- state and dead letters; a group's subscription record survives. {deleted: true, queue,
-- existed}, also for a queue that does not exist.
CREATE OR REPLACE FUNCTION queen.delete_queue(p_queue text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_existed boolean;
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    v_existed := EXISTS (SELECT 1 FROM queen.queues WHERE name = p_queue);
    IF v_existed THEN
        BEGIN
            PERFORM queen.drop_queue(p_queue);
        EXCEPTION WHEN undefined_object THEN
            v_existed := false;  -- dropped meanwhile by another call
        END;
    END IF;
    RETURN jsonb_build_object('deleted', true, 'queue', p_queue, 'existed', v_existed);
END
$$;

-- Delete a consumer group (DELETE /api/v1/consumer-groups/:g): its state and cursors on every
-- queue (it starts fresh), and its subscription records unless p_delete_metadata is false.
-- {success: true, consumerGroup, deletedPartitions, metadataDeleted}, also for an unknown group.
CREATE OR REPLACE FUNCTION queen.delete_consumer_group(p_group text, p_delete_metadata boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parts bigint;
BEGIN
    IF p_group IS NULL OR p_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    -- the partitions first (KEY SHARE, ascending), as acks and pops take them, so that a queue
    -- deletion (partitions FOR UPDATE, then their state and cursors) never deadlocks with this
    -- with the shard's fence (issue 20) after the partition locks, before the state rows
    PERFORM queen.partitions_lock_for_write(ARRAY(
        SELECT s.partition_id FROM queen.consumer_state s WHERE s.group_name = p_group
         UNION SELECT g.partition_id FROM queen.consumer_groups g WHERE g.group_name = p_group),
        'key share');
    PERFORM 1 FROM queen.consumer_state s WHERE s.group_name = p_group
     ORDER BY s.partition_id FOR UPDATE;
    WITH st AS (DELETE FROM queen.consumer_state WHERE group_name = p_group RETURNING partition_id),
         cg AS (DELETE FROM queen.consumer_groups WHERE group_name = p_group RETURNING partition_id)
    SELECT count(*) INTO v_parts FROM (SELECT partition_id FROM st UNION SELECT partition_id FROM cg) u;
    DELETE FROM queen.consumer_acks WHERE group_name = p_group;
    IF COALESCE(p_delete_metadata, true) THEN
        DELETE FROM queen.consumer_subscriptions WHERE group_name = p_group;
    END IF;
    RETURN jsonb_build_object('success', true, 'consumerGroup', p_group,
                              'deletedPartitions', v_parts,
                              'metadataDeleted', COALESCE(p_delete_metadata, true));
END
$$;

-- The dead-letter queue of a queue (GET /api/v1/dlq), newest first: {messages: [{id,
-- transactionId, partitionId, queue, partition, consumerGroup, errorMessage, retryCount, data,
-- producerSub, createdAt, failedAt}], pagination: {limit, offset}}. p_group NULL: every group.
-- 22023 for a negative limit or offset; 42501 for a queue reserved for queen's modules.
CREATE OR REPLACE FUNCTION queen.dlq_messages(p_queue text, p_group text DEFAULT NULL,
                                              p_limit int DEFAULT 100, p_offset int DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_msgs jsonb;
BEGIN
    IF p_limit IS NULL OR p_limit < 0 OR p_offset IS NULL OR p_offset < 0 THEN
        RAISE EXCEPTION 'limit and offset must be >= 0' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT COALESCE(jsonb_agg(x.m ORDER BY x.failed_at DESC, x.id DESC), '[]'::jsonb) INTO v_msgs
      FROM (SELECT d.id, d.failed_at,
                   jsonb_build_object('id', d.message_id, 'transactionId', d.transaction_id,
                                      'partitionId', queen.partition_uuid(d.partition_id),
                                      'queue', q.name, 'partition', p.name,
                                      'consumerGroup', d.group_name,
                                      'errorMessage', d.error_message, 'retryCount', d.retry_count,
                                      'data', d.payload, 'producerSub', NULL,
                                      'createdAt', queen.consume_iso(d.created_at),
                                      'failedAt', queen.consume_iso(d.failed_at)) AS m
              FROM queen.consumer_dlq d
              JOIN queen.log_partitions p ON p.id = d.partition_id
              JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = p_queue AND (p_group IS NULL OR d.group_name = p_group)
             ORDER BY d.failed_at DESC, d.id DESC
             LIMIT p_limit OFFSET p_offset) x;
    RETURN jsonb_build_object('messages', v_msgs,
                              'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
END
$$;
-- queen: pops (issue 18; §3.3 and §4 of the wire facts). A pop leases a partition for one
-- group: within a group a partition serves one popper at a time, until every message of the
-- batch it delivered is acked, a nack or "retry" ack releases it, or its lease expires. The
-- messages are those after the group's cursor (queen.consumer_groups.committed_offset), read
-- through queen.read; a pop never deletes anything.
-- Locks: see sql/modules/60_consume.sql. Per partition a pop takes its row FOR KEY SHARE
-- (which no push conflicts with; a queue deletion's FOR UPDATE does), then creates (if
-- missing) and locks its queen.consumer_state row, then at most the consumer_groups row of
-- the same (partition, group) (a subscription's first cursor). The any-partition route takes
-- both with SKIP LOCKED, in ascending partition id order, so it never waits while it holds
-- another partition's state row.

-- Claim one partition for a group under the lease p_lease: NULL when it cannot be claimed now
-- (a live lease in this group, an active window buffer, or, with p_skip, another pop holding
-- its state row), else the messages it delivered as wire objects (an empty array: nothing
-- deliverable now; the partition is then left unleased). Internal.
CREATE OR REPLACE FUNCTION queen.pop_claim(p_queue text, p_partition text, p_pid bigint,
                                           p_last bigint, p_group text, p_lease uuid,
                                           p_batch int, p_opts jsonb, p_start timestamptz,
                                           p_now timestamptz, p_skip boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_window  int := (p_opts ->> 'windowBuffer')::int;
    v_delay   int := (p_opts ->> 'delayedProcessing')::int;
    v_secs    int := (p_opts ->> 'leaseTime')::int;
    v_newest  timestamptz;
    v_created boolean;
    v_lock    text;
    v_lease   uuid;
    v_expires timestamptz;
    v_pos     bigint;
    v_msgs    jsonb;
    v_n       int;
    v_uuid    text := queen.partition_uuid(p_pid)::text;
BEGIN
    IF p_last < 0 THEN
        RETURN '[]'::jsonb;  -- never pushed to
    END IF;
    -- window buffer: the newest message must be older than windowBuffer seconds (no lease taken)
    IF v_window > 0 THEN
        SELECT r.created_at INTO v_newest FROM queen.read(p_queue, p_partition, p_last, 1) r;
        IF v_newest > p_now - make_interval(secs => v_window) THEN
            RETURN NULL;
        END IF;
    END IF;
    v_created := false;
    -- the partition first (KEY SHARE: pushes never conflict, a queue deletion does), so that
    -- creating rows that reference it never waits while this pop holds other state rows; then
    -- the shard's fence (issue 20), before any state row: a pop over a queue passes by a
    -- partition whose slot is moving (or not this shard's), as by a locked one, so the queue's
    -- other slots never pause; a pop of that partition gets 55Q02
    v_lock := queen.partition_lock_for_write(p_pid, 'key share', p_skip);
    IF v_lock = 'absent' THEN
        -- with p_skip: being deleted; else deleted meanwhile
        RETURN CASE WHEN p_skip THEN NULL ELSE '[]'::jsonb END;
    ELSIF v_lock = 'fenced' THEN
        RETURN NULL;
    END IF;
    IF p_skip THEN
        -- never wait for a row another pop holds (an insert would wait for its update)
        SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
         WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            IF EXISTS (SELECT 1 FROM queen.consumer_state s
                        WHERE s.partition_id = p_pid AND s.group_name = p_group) THEN
                RETURN NULL;  -- another pop is claiming it right now
            END IF;
            -- first contact: create the row (waits only for a concurrent first creator)
            INSERT INTO queen.consumer_state (partition_id, group_name) VALUES (p_pid, p_group)
            ON CONFLICT DO NOTHING;
            v_created := FOUND;
            SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
             WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
        END IF;
    ELSE
        INSERT INTO queen.consumer_state (partition_id, group_name) VALUES (p_pid, p_group)
        ON CONFLICT DO NOTHING;
        v_created := FOUND;
        SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
         WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE;
    END IF;
    IF v_lease IS NOT NULL AND v_expires > p_now THEN
        RETURN NULL;  -- leased in this group
    END IF;
    -- a subscription's first contact with this partition: start after the older messages
    IF v_created AND p_start IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM queen.consumer_groups g WHERE g.partition_id = p_pid AND g.group_name = p_group) THEN
        v_pos := queen.consume_offset_before(p_queue, p_partition, p_last, p_start);
        IF v_pos >= 0 THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_pos);
        END IF;
    END IF;
    SELECT COALESCE(g.committed_offset, -1) INTO v_pos FROM (SELECT 1) one
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p_pid AND g.group_name = p_group;
    -- the messages after the cursor, in order, up to the first one still delayed
    SELECT COALESCE(jsonb_agg(x.m ORDER BY x.off), '[]'::jsonb), count(*) INTO v_msgs, v_n
      FROM (SELECT r.message_offset AS off,
                   jsonb_build_object('id', r.message_id, 'transactionId', r.transaction_id,
                                      'traceId', NULL, 'data', r.payload, 'producerSub', NULL,
                                      -- queen.consume_iso, inlined (one call per message costs)
                                      'createdAt', to_char(r.created_at AT TIME ZONE 'UTC',
                                                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                                      'partitionId', v_uuid,
                                      'partition', p_partition, 'leaseId', p_lease,
                                      'consumerGroup', p_group) AS m,
                   bool_and(r.created_at <= p_now - make_interval(secs => v_delay))
                       OVER (ORDER BY r.message_offset) AS due
              FROM queen.read(p_queue, p_partition, v_pos + 1, p_batch) r) x
     WHERE x.due;
    IF v_n = 0 THEN
        UPDATE queen.consumer_state SET lease_id = NULL, lease_expires_at = NULL
         WHERE partition_id = p_pid AND group_name = p_group AND lease_id IS NOT NULL;
        RETURN '[]'::jsonb;
    END IF;
    UPDATE queen.consumer_state
       SET lease_id = p_lease,
           lease_expires_at = p_now + make_interval(secs => CASE WHEN v_secs > 0 THEN v_secs ELSE 60 END),
           batch_size = v_n, acked_count = 0
     WHERE partition_id = p_pid AND group_name = p_group;
    RETURN v_msgs;
END
$$;

-- Pop for a group (NULL or '' = queue mode, "__QUEUE_MODE__"): NULL when there is nothing to
-- deliver (the wire's 204), else the broker's answer {success, queue, partition, partitionId,
-- leaseId, consumerGroup, messages, partitionsClaimed}. p_partition names the partition (the
-- partition route); NULL is the any-partition route: partitions with messages after the
-- group's cursor and no live lease in it, claimed in ascending id order until p_max_partitions
-- are held or p_batch messages gathered, all under one lease id. A lease lasts the queue's
-- leaseTime (0: 60 s). p_now (default clock_timestamp()) is the pop's clock, for tests.
-- 22023 for a NULL queue, a batch or partition cap below 1; an unknown queue or partition is
-- NULL, never an error.
CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text DEFAULT NULL,
                                     p_group text DEFAULT NULL, p_batch int DEFAULT 1,
                                     p_max_partitions int DEFAULT 1,
                                     p_subscription_mode text DEFAULT NULL,
                                     p_subscription_from text DEFAULT NULL,
                                     p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now     timestamptz := COALESCE(p_now, clock_timestamp());
    v_group   text := queen.consume_group(p_group);
    v_lease   uuid := gen_random_uuid();
    v_qid     bigint;
    v_opts    jsonb;
    v_sub     record;
    v_r       record;
    v_got     jsonb;
    v_all     jsonb := '[]'::jsonb;
    v_claimed int := 0;
    v_pid     bigint;
    v_name    text;
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string' USING ERRCODE = '22023';
    END IF;
    IF p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'batch must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_max_partitions IS NULL OR p_max_partitions < 1 THEN
        RAISE EXCEPTION 'partitions must be at least 1' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_queue;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_opts := queen.consume_options(v_qid);
    SELECT * INTO v_sub FROM queen.consume_subscription(p_queue, v_group, p_subscription_mode,
                                                        p_subscription_from, v_now);
    IF v_sub.fresh THEN
        RETURN NULL;  -- a "new" subscription's first pop answers empty
    END IF;
    IF p_partition IS NOT NULL THEN
        SELECT p.id, p.last_offset INTO v_r FROM queen.log_partitions p
         WHERE p.queue_id = v_qid AND p.name = p_partition;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        v_got := queen.pop_claim(p_queue, p_partition, v_r.id, v_r.last_offset, v_group, v_lease,
                                 p_batch, v_opts, v_sub.start_at, v_now, false);
        IF v_got IS NULL OR jsonb_array_length(v_got) = 0 THEN
            RETURN NULL;
        END IF;
        v_all := v_got;
        v_claimed := 1;
        v_pid := v_r.id;
        v_name := p_partition;
    ELSE
        FOR v_r IN
            SELECT p.id, p.name, p.last_offset FROM queen.log_partitions p
              LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = v_group
              LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = v_group
             WHERE p.queue_id = v_qid AND p.last_offset > COALESCE(g.committed_offset, -1)
               AND (s.lease_id IS NULL OR s.lease_expires_at <= v_now)
             ORDER BY p.id
        LOOP
            EXIT WHEN v_claimed >= p_max_partitions OR jsonb_array_length(v_all) >= p_batch;
            v_got := queen.pop_claim(p_queue, v_r.name, v_r.id, v_r.last_offset, v_group, v_lease,
                                     p_batch - jsonb_array_length(v_all), v_opts, v_sub.start_at,
                                     v_now, true);
            CONTINUE WHEN v_got IS NULL OR jsonb_array_length(v_got) = 0;
            IF v_claimed = 0 THEN
                v_pid := v_r.id;
                v_name := v_r.name;
            END IF;
            v_all := v_all || v_got;
            v_claimed := v_claimed + 1;
        END LOOP;
        IF v_claimed = 0 THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN jsonb_build_object('success', true, 'queue', p_queue, 'partition', v_name,
                              'partitionId', queen.partition_uuid(v_pid), 'leaseId', v_lease,
                              'consumerGroup', v_group, 'messages', v_all,
                              'partitionsClaimed', v_claimed);
END
$$;
-- queen: the broker's transaction (issue 18; §3.5 of the wire facts), beside queen's own
-- queen.transaction (unchanged). All or nothing: a failing operation answers success false with
-- the results up to it, and nothing of the call is kept.
-- Locks (the global order, top of sql/modules/00_core.sql): the pushed partitions are created first, in
-- (queue, partition) order (collation "C"); then every partition involved is locked in
-- ascending id order (FOR NO KEY UPDATE); then the acks' state rows in ascending (partition id,
-- group name "C") order; only then are the operations applied (pushes through queen.push, acks
-- through queen.consume_ack: cursors, then DLQ inserts). A pop locks no partition row and
-- waits on nobody while it holds a state row, so this never deadlocks with a pop, an ack or
-- another transaction.

-- POST /api/v1/transaction: p_body is {operations: [...], requiredLeases} (requiredLeases is
-- ignored, like the broker). A push operation is {type: "push", items: [{queue, partition?,
-- payload}]}, each item a new message (its transactionId is its message id; an explicit
-- transactionId or traceId is ignored, as the client never sends one); an ack operation is
-- {type: "ack", transactionId, partitionId, status?, consumerGroup?}. Items are flattened into
-- single operations, applied in order. Answer: {transactionId, success: true, results} with
-- push results {index, type, success, transactionId, messageId, partitionId, queueName} and ack
-- results {index, type, success, transactionId, error, dlq}; or {transactionId, success:
-- false, error, results} (e.g. "ACK operation failed: Message not found") with nothing kept.
-- 22023 for a malformed body (no non-empty operations array, an unknown type, a missing
-- string field); 42501 for a push to, or an ack in, a queue reserved for queen's modules.
CREATE OR REPLACE FUNCTION queen.transaction_wire(p_body jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ops     jsonb := CASE WHEN jsonb_typeof(p_body) = 'object' THEN p_body -> 'operations' END;
    v_flat    jsonb := '[]'::jsonb;  -- one object per single operation
    v_op      jsonb;
    v_item    jsonb;
    v_i       int := 0;
    v_type    text;
    v_key     text;
    v_pids    bigint[] := '{}';
    v_pid     bigint;
    v_pair    record;
    v_row     record;
    v_r       jsonb;
    v_results jsonb := '[]'::jsonb;
    v_error   text;
    v_txn     uuid := gen_random_uuid();
BEGIN
    IF v_ops IS NULL OR jsonb_typeof(v_ops) <> 'array' OR jsonb_array_length(v_ops) = 0 THEN
        RAISE EXCEPTION 'operations must be a non-empty array' USING ERRCODE = '22023';
    END IF;
    -- 1. check every operation and flatten the pushes' items
    FOR v_op IN SELECT value FROM jsonb_array_elements(v_ops) LOOP
        v_type := CASE WHEN jsonb_typeof(v_op) = 'object' THEN v_op ->> 'type' END;
        IF v_type = 'push' THEN
            IF jsonb_typeof(v_op -> 'items') IS DISTINCT FROM 'array' THEN
                RAISE EXCEPTION 'operation %: items must be an array', v_i USING ERRCODE = '22023';
            END IF;
            FOR v_item IN SELECT value FROM jsonb_array_elements(v_op -> 'items') LOOP
                IF jsonb_typeof(v_item) <> 'object' OR jsonb_typeof(v_item -> 'queue') IS DISTINCT FROM 'string'
                   OR jsonb_typeof(v_item -> 'partition') NOT IN ('string', 'null') THEN
                    RAISE EXCEPTION 'operation %: each item needs a string queue (and a string partition, if any)', v_i
                        USING ERRCODE = '22023';
                END IF;
                v_flat := v_flat || jsonb_build_array(jsonb_build_object(
                    'type', 'push', 'queue', v_item -> 'queue',
                    'partition', COALESCE(NULLIF(v_item -> 'partition', 'null'::jsonb), '"Default"'::jsonb),
                    'payload', COALESCE(v_item -> 'payload', 'null'::jsonb)));
            END LOOP;
        ELSIF v_type = 'ack' THEN
            FOREACH v_key IN ARRAY ARRAY['transactionId', 'partitionId'] LOOP
                IF jsonb_typeof(v_op -> v_key) IS DISTINCT FROM 'string' THEN
                    RAISE EXCEPTION 'operation %: % is required (a string)', v_i, v_key USING ERRCODE = '22023';
                END IF;
            END LOOP;
            FOREACH v_key IN ARRAY ARRAY['status', 'consumerGroup'] LOOP
                IF jsonb_typeof(v_op -> v_key) NOT IN ('string', 'null') THEN
                    RAISE EXCEPTION 'operation %: % must be a string', v_i, v_key USING ERRCODE = '22023';
                END IF;
            END LOOP;
            v_flat := v_flat || jsonb_build_array(jsonb_build_object(
                'type', 'ack', 'transactionId', v_op -> 'transactionId',
                'pid', queen.partition_of_uuid(v_op ->> 'partitionId'),
                'status', COALESCE(v_op ->> 'status', 'completed'),
                'group', queen.consume_ack_group(v_op, NULL)));
        ELSE
            RAISE EXCEPTION 'operation %: type must be "push" or "ack"', v_i USING ERRCODE = '22023';
        END IF;
        v_i := v_i + 1;
    END LOOP;
    PERFORM queen.reserved_queue_guard(ARRAY(
        SELECT DISTINCT f ->> 'queue' FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'push'
        UNION
        SELECT q.name FROM jsonb_array_elements(v_flat) f
          JOIN queen.log_partitions p ON p.id = (f ->> 'pid')::bigint
          JOIN queen.queues q ON q.id = p.queue_id
         WHERE f ->> 'type' = 'ack'));

    BEGIN
        -- 2. create the pushed partitions in the global creation order
        FOR v_pair IN
            SELECT d.q, d.p FROM (SELECT DISTINCT f ->> 'queue' AS q, f ->> 'partition' AS p
                                    FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'push') d
             ORDER BY d.q COLLATE "C", d.p COLLATE "C"
        LOOP
            SELECT r.partition_id INTO v_pid FROM queen.resolve_partition(v_pair.q, v_pair.p) r;
            v_pids := v_pids || v_pid;
        END LOOP;
        v_pids := v_pids || ARRAY(SELECT (f ->> 'pid')::bigint FROM jsonb_array_elements(v_flat) f
                                   WHERE f ->> 'type' = 'ack' AND f ->> 'pid' IS NOT NULL);
        -- 3. every partition in ascending id order, then the acks' state rows
        --    with the shard's fence (issue 20) on every partition, after their locks, before
        --    the state rows (the pushes check theirs again in queen.push; the acks' here)
        PERFORM queen.partitions_lock_for_write(v_pids, 'no key update');
        PERFORM queen.consume_lock_states(
            ARRAY(SELECT (f ->> 'pid')::bigint FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'ack'),
            ARRAY(SELECT f ->> 'group' FROM jsonb_array_elements(v_flat) f WHERE f ->> 'type' = 'ack'));
        -- 4. apply in order
        v_i := 0;
        FOR v_op IN SELECT value FROM jsonb_array_elements(v_flat) LOOP
            IF v_op ->> 'type' = 'push' THEN
                SELECT * INTO v_row FROM queen.push(v_op ->> 'queue', v_op ->> 'partition',
                                                    jsonb_build_array(jsonb_build_object('payload', v_op -> 'payload')));
                SELECT p.id INTO v_pid FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
                 WHERE q.name = v_op ->> 'queue' AND p.name = v_op ->> 'partition';
                v_results := v_results || jsonb_build_array(jsonb_build_object(
                    'index', v_i, 'type', 'push', 'success', v_row.status = 'queued',
                    'transactionId', v_row.transaction_id, 'messageId', v_row.message_id,
                    'partitionId', queen.partition_uuid(v_pid), 'queueName', v_op ->> 'queue'));
                IF v_row.status <> 'queued' THEN
                    v_error := format('PUSH operation failed: %s', v_row.status);
                    RAISE EXCEPTION USING ERRCODE = 'QW001';
                END IF;
            ELSE
                v_r := queen.consume_ack((v_op ->> 'pid')::bigint, v_op ->> 'group',
                                         v_op ->> 'transactionId', v_op ->> 'status', NULL, NULL, true);
                v_results := v_results || jsonb_build_array(jsonb_build_object(
                    'index', v_i, 'type', 'ack', 'success', v_r -> 'success',
                    'transactionId', v_op -> 'transactionId', 'error', v_r -> 'error',
                    'dlq', v_r -> 'dlq'));
                IF NOT (v_r ->> 'success')::boolean THEN
                    v_error := format('ACK operation failed: %s', v_r ->> 'error');
                    RAISE EXCEPTION USING ERRCODE = 'QW001';
                END IF;
            END IF;
            v_i := v_i + 1;
        END LOOP;
    EXCEPTION WHEN SQLSTATE 'QW001' THEN
        RETURN jsonb_build_object('transactionId', v_txn, 'success', false, 'error', v_error,
                                  'results', v_results);
    END;
    RETURN jsonb_build_object('transactionId', v_txn, 'success', true, 'results', v_results);
END
$$;
-- ================================================================ module: a shard's side of a cluster
-- A server becomes a shard of a sharded cluster (docs/scale-out.md) when the router's
-- queen.add_shard calls queen.shard_join here; from then it stores writes only for the slots it
-- owns (queen.shard_slots; the check is src/pg/storage/slot_fence.cpp: 55Q01 "slot not owned
-- here", 55Q02 "slot moving"). The router's queen.move_slot moves a slot with these functions:
-- queen.shard_fence_slot on the source (its own transaction: from its commit no write of the
-- slot is stored there), queen.slot_export there, queen.slot_import on the target (one
-- transaction: everything of the slot, then the slot owned), the map switch on the router, then
-- queen.slot_drop on the source. Every function is internal to the router (no grant: the
-- router connects as the shards' owner).
--
-- Locking protocol: shard_fence_slot takes the slot's fence lock in ExclusiveLock mode (it
-- waits for every write that passed the check, and every retention purge that passed
-- queen.slot_fence_owns_partition, which hold the lock in ShareLock mode to their end, taken
-- after the partition row lock) and no other lock of queen's; slot_import takes it too (before any partition exists
-- here, so a push cannot hold one of its rows); slot_drop does not take it (it locks partition
-- rows, in ascending id order, which a fenced push may hold while it waits for the fence lock).

-- ---------------------------------------------------------------- C entry points
-- The creation check of SQL creation paths (resolve_partition, stream_create).
CREATE OR REPLACE FUNCTION queen.slot_fence_check(p_queue text, p_partition text) RETURNS void
    AS 'MODULE_PATHNAME', 'queen_slot_fence_check_v1'
    LANGUAGE C VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- The check for a partition's writes besides its log. Writers that lock the partition call it
-- through queen.partitions_lock_for_write / queen.partition_lock_for_write (sql/modules/00_core.sql);
-- direct callers are the exemptions of tests/regress/sql/slot_fence_primitives.sql
-- (queen.ack_lock_group, queen.renew_lease, ...).
CREATE OR REPLACE FUNCTION queen.slot_fence_check_partition(p_partition_id bigint) RETURNS void
    AS 'MODULE_PATHNAME', 'queen_slot_fence_check_partition_v1'
    LANGUAGE C VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Whether this shard owns the partition's slot (true on a server that is not a shard), the
-- slot's fence lock held in ShareLock mode to the end of the transaction and the state read as
-- committed after it is granted: retention (queen.retention_purge) leaves the partitions of a
-- moving slot alone, and a fence waits for a purge that passed this check.
CREATE OR REPLACE FUNCTION queen.slot_fence_owns_partition(p_partition_id bigint) RETURNS boolean
    AS 'MODULE_PATHNAME', 'queen_slot_fence_owns_partition_v1'
    LANGUAGE C VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- The slot's fence lock in ExclusiveLock mode, to the end of the transaction.
CREATE OR REPLACE FUNCTION queen.slot_fence_lock(p_slot int) RETURNS void
    AS 'MODULE_PATHNAME', 'queen_slot_fence_lock_v1'
    LANGUAGE C VOLATILE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Every backend re-reads the membership and slot states (sent at commit).
CREATE OR REPLACE FUNCTION queen.slot_fence_invalidate() RETURNS void
    AS 'MODULE_PATHNAME', 'queen_slot_fence_invalidate_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- placement
-- The slot of one of this server's partitions (its queue's placement applied), for a slot
-- count.
CREATE OR REPLACE FUNCTION queen.partition_slot(p_queue text, p_partition text, p_single boolean,
                                                p_slot_count int) RETURNS int
LANGUAGE sql IMMUTABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT queen.slot_of(p_queue, CASE WHEN p_single THEN '' ELSE p_partition END, p_slot_count) $$;

-- Store a queue's placement (queen.configure). On a shard, a queue holding partitions here
-- keeps its placement (55000): their slots follow from it.
CREATE OR REPLACE FUNCTION queen.queue_set_placement(p_queue text, p_single boolean) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_qid bigint;
    v_old boolean;
BEGIN
    SELECT q.id, COALESCE(pl.single_slot, false) INTO v_qid, v_old
      FROM queen.queues q LEFT JOIN queen.queue_placement pl ON pl.queue_id = q.id
     WHERE q.name = p_queue;
    IF NOT FOUND OR v_old = p_single THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM queen.shard_membership)
       AND EXISTS (SELECT 1 FROM queen.log_partitions WHERE queue_id = v_qid) THEN
        RAISE EXCEPTION 'queue "%" has partitions on this shard: its placement stays %', p_queue,
            CASE WHEN v_old THEN 'single_slot' ELSE 'partition' END
            USING ERRCODE = '55000',
                  HINT = 'configure is a full replace: name "placement" in every configure call of this queue.';
    END IF;
    IF p_single THEN
        INSERT INTO queen.queue_placement (queue_id, single_slot) VALUES (v_qid, true)
            ON CONFLICT (queue_id) DO UPDATE SET single_slot = true;
    ELSE
        DELETE FROM queen.queue_placement WHERE queue_id = v_qid;
    END IF;
END
$$;

-- ---------------------------------------------------------------- membership
-- Join a cluster as shard p_shard (again: the same answer). Partition and view ids of this
-- shard are drawn from p_id_base upwards (each shard its own range, so they stay unique when
-- slots move); a shard whose ids are already above it keeps them. 55000 when it is a shard of
-- another name or slot count.
CREATE OR REPLACE FUNCTION queen.shard_join(p_shard text, p_slot_count int, p_id_base bigint)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_m record;
BEGIN
    SELECT * INTO v_m FROM queen.shard_membership;
    IF FOUND AND (v_m.shard <> p_shard OR v_m.slot_count <> p_slot_count) THEN
        RAISE EXCEPTION 'this server is shard "%" of a cluster of % slots already', v_m.shard, v_m.slot_count
            USING ERRCODE = '55000';
    END IF;
    IF NOT FOUND THEN
        INSERT INTO queen.shard_membership (shard, slot_count) VALUES (p_shard, p_slot_count);
    END IF;
    IF (SELECT last_value FROM queen.log_partitions_id_seq) < p_id_base THEN
        PERFORM setval('queen.log_partitions_id_seq', p_id_base, false);
    END IF;
    IF (SELECT last_value FROM queen.dedup_views_id_seq) < p_id_base THEN
        PERFORM setval('queen.dedup_views_id_seq', p_id_base, false);
    END IF;
    PERFORM queen.slot_fence_invalidate();
    RETURN jsonb_build_object('shard', p_shard, 'slot_count', p_slot_count,
                              'slots', (SELECT count(*) FROM queen.shard_slots));
END
$$;

-- The partitions of this server with their slot.
CREATE OR REPLACE FUNCTION queen.shard_partitions(OUT partition_id bigint, OUT queue text,
                                                  OUT partition text, OUT slot int)
RETURNS SETOF record
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.id, q.name, p.name,
           queen.partition_slot(q.name, p.name, COALESCE(pl.single_slot, false), m.slot_count)
      FROM queen.shard_membership m, queen.log_partitions p
      JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.queue_placement pl ON pl.queue_id = q.id
$$;

-- Own exactly these slots (the router's first placement of an empty cluster). 55000 when a
-- slot given up holds partitions here or is moving.
CREATE OR REPLACE FUNCTION queen.shard_own_slots(p_slots int[]) RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_slot int;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queen.shard_membership) THEN
        RAISE EXCEPTION 'this server is not a shard' USING ERRCODE = '55000';
    END IF;
    FOR v_slot IN SELECT s.slot FROM queen.shard_slots s
                   WHERE NOT (s.slot = ANY (COALESCE(p_slots, '{}'))) ORDER BY s.slot LOOP
        PERFORM queen.slot_fence_lock(v_slot);
        IF EXISTS (SELECT 1 FROM queen.shard_partitions() sp WHERE sp.slot = v_slot)
           OR (SELECT state FROM queen.shard_slots s WHERE s.slot = v_slot) = 'moving' THEN
            RAISE EXCEPTION 'slot % holds partitions on this shard: move it with queen.move_slot', v_slot
                USING ERRCODE = '55000';
        END IF;
        DELETE FROM queen.shard_slots s WHERE s.slot = v_slot;
    END LOOP;
    INSERT INTO queen.shard_slots (slot, state)
        SELECT u, 'owned' FROM unnest(COALESCE(p_slots, '{}')) u ORDER BY u
        ON CONFLICT (slot) DO NOTHING;
    PERFORM queen.slot_fence_invalidate();
    RETURN (SELECT count(*) FROM queen.shard_slots);
END
$$;

-- ---------------------------------------------------------------- moving a slot
-- The fence of a move's source: wait for every write of the slot that passed the check, then
-- mark it 'moving' (run in a transaction of its own: from its commit nothing of the slot is
-- written here). Again on a fenced slot: the same. 55000 when the slot is not owned here.
CREATE OR REPLACE FUNCTION queen.shard_fence_slot(p_slot int) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM queen.slot_fence_lock(p_slot);
    UPDATE queen.shard_slots SET state = 'moving' WHERE slot = p_slot;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'slot % is not owned by this shard', p_slot USING ERRCODE = '55000';
    END IF;
    PERFORM queen.slot_fence_invalidate();
    RETURN (SELECT count(*) FROM queen.shard_partitions() sp WHERE sp.slot = p_slot);
END
$$;

-- Undo a fence (a move given up before its map switch): the slot is owned again.
CREATE OR REPLACE FUNCTION queen.shard_unfence_slot(p_slot int) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE queen.shard_slots SET state = 'owned' WHERE slot = p_slot;
    PERFORM queen.slot_fence_invalidate();
END
$$;

-- Everything of a slot's partitions, table by table in an order an import can insert them
-- (queues and placement first, then partitions, their rows, streams, views), each row as
-- to_jsonb of the table's row. The slot must be fenced here (55000): nothing changes it meanwhile.
CREATE OR REPLACE FUNCTION queen.slot_export(p_slot int) RETURNS TABLE (tbl text, row_data jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pids bigint[];
    v_qids bigint[];
    v_vids bigint[];
    v_streams text[];
BEGIN
    IF (SELECT state FROM queen.shard_slots s WHERE s.slot = p_slot) IS DISTINCT FROM 'moving' THEN
        RAISE EXCEPTION 'slot % is not fenced on this shard (queen.shard_fence_slot first)', p_slot
            USING ERRCODE = '55000';
    END IF;
    SELECT COALESCE(array_agg(sp.partition_id ORDER BY sp.partition_id), '{}') INTO v_pids
      FROM queen.shard_partitions() sp WHERE sp.slot = p_slot;
    SELECT COALESCE(array_agg(DISTINCT p.queue_id), '{}') INTO v_qids
      FROM queen.log_partitions p WHERE p.id = ANY (v_pids);
    -- views move with their queue, which is then single_slot and so wholly in this slot
    SELECT COALESCE(array_agg(v.id), '{}') INTO v_vids FROM queen.dedup_views v
      JOIN queen.queue_placement pl ON pl.queue_id = v.queue_id AND pl.single_slot
     WHERE v.queue_id = ANY (v_qids);
    SELECT COALESCE(array_agg(s.name), '{}') INTO v_streams FROM queen.streams s
     WHERE s.partition_id = ANY (v_pids);

    RETURN QUERY SELECT 'queues', to_jsonb(q) FROM queen.queues q WHERE q.id = ANY (v_qids);
    RETURN QUERY SELECT 'queue_placement', to_jsonb(x) FROM queen.queue_placement x WHERE x.queue_id = ANY (v_qids);
    RETURN QUERY SELECT 'log_partitions', to_jsonb(x) FROM queen.log_partitions x WHERE x.id = ANY (v_pids) ORDER BY x.id;
    -- segments carry their hashes and message ids (0.3.0: no separate log_txns rows)
    RETURN QUERY SELECT 'log_segments', to_jsonb(x) FROM queen.log_segments x WHERE x.partition_id = ANY (v_pids);
    RETURN QUERY SELECT 'consumer_groups', to_jsonb(x) FROM queen.consumer_groups x WHERE x.partition_id = ANY (v_pids);
    RETURN QUERY SELECT 'consumer_acks', to_jsonb(x) FROM queen.consumer_acks x WHERE x.partition_id = ANY (v_pids);
    -- the consuming model (sql/schema/50_consume.sql): options per queue, leases and counters
    -- per (partition, group), the group's subscription per queue, dead letters per partition
    RETURN QUERY SELECT 'queue_options', to_jsonb(x) FROM queen.queue_options x WHERE x.queue_id = ANY (v_qids);
    RETURN QUERY SELECT 'consumer_subscriptions', to_jsonb(x) FROM queen.consumer_subscriptions x
      WHERE x.queue_name IN (SELECT q.name FROM queen.queues q WHERE q.id = ANY (v_qids));
    RETURN QUERY SELECT 'consumer_state', to_jsonb(x) FROM queen.consumer_state x WHERE x.partition_id = ANY (v_pids);
    RETURN QUERY SELECT 'consumer_dlq', to_jsonb(x) - 'id' FROM queen.consumer_dlq x WHERE x.partition_id = ANY (v_pids) ORDER BY x.id;
    RETURN QUERY SELECT 'streams', to_jsonb(x) FROM queen.streams x WHERE x.partition_id = ANY (v_pids);
    RETURN QUERY SELECT 'stream_producers', to_jsonb(x) FROM queen.stream_producers x WHERE x.partition_id = ANY (v_pids);
    RETURN QUERY SELECT 'stream_forks', to_jsonb(x) FROM queen.stream_forks x WHERE x.name = ANY (v_streams);
    RETURN QUERY SELECT 'dedup_views', to_jsonb(x) FROM queen.dedup_views x WHERE x.id = ANY (v_vids);
    RETURN QUERY SELECT 'dedup_state_buckets', to_jsonb(x) FROM queen.dedup_state_buckets x WHERE x.view_id = ANY (v_vids);
    RETURN QUERY SELECT 'dedup_candidates', to_jsonb(x) FROM queen.dedup_candidates x WHERE x.view_id = ANY (v_vids);
    RETURN QUERY SELECT 'dedup_change_blocks', to_jsonb(x) FROM queen.dedup_change_blocks x WHERE x.view_id = ANY (v_vids);
    RETURN QUERY SELECT 'dedup_offsets', to_jsonb(x) FROM queen.dedup_offsets x WHERE x.view_id = ANY (v_vids);
    RETURN QUERY SELECT 'dedup_pending', to_jsonb(x) FROM queen.dedup_pending x WHERE x.view_id = ANY (v_vids);
END
$$;

-- Store what slot_export gave (rows in its order), then own the slot, in one transaction.
-- Queues are matched by name (created with the source's options when absent here); partition
-- and view ids are kept. 55000 when the slot is owned here or holds partitions here already.
CREATE OR REPLACE FUNCTION queen.slot_import(p_slot int, p_tbls text[], p_rows jsonb[]) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_i    int;
    v_row  jsonb;
    v_qmap jsonb := '{}';  -- source queue id -> local queue id
    v_qid  bigint;
    v_n    bigint := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queen.shard_membership) THEN
        RAISE EXCEPTION 'this server is not a shard' USING ERRCODE = '55000';
    END IF;
    PERFORM queen.slot_fence_lock(p_slot);
    IF EXISTS (SELECT 1 FROM queen.shard_slots s WHERE s.slot = p_slot)
       OR EXISTS (SELECT 1 FROM queen.shard_partitions() sp WHERE sp.slot = p_slot) THEN
        RAISE EXCEPTION 'slot % is already on this shard', p_slot USING ERRCODE = '55000';
    END IF;
    FOR v_i IN 1 .. COALESCE(cardinality(p_tbls), 0) LOOP
        v_row := p_rows[v_i];
        CASE p_tbls[v_i]
        WHEN 'queues' THEN
            INSERT INTO queen.queues (name, dedup_window_seconds, retention_seconds, dedup_by)
            SELECT r.name, r.dedup_window_seconds, r.retention_seconds, r.dedup_by
              FROM jsonb_populate_record(NULL::queen.queues, v_row) r
            ON CONFLICT (name) DO NOTHING;
            SELECT q.id INTO v_qid FROM queen.queues q WHERE q.name = v_row ->> 'name';
            v_qmap := v_qmap || jsonb_build_object(v_row ->> 'id', v_qid);
        WHEN 'queue_placement' THEN
            INSERT INTO queen.queue_placement (queue_id, single_slot)
            VALUES ((v_qmap ->> (v_row ->> 'queue_id'))::bigint, (v_row ->> 'single_slot')::boolean)
            ON CONFLICT (queue_id) DO UPDATE SET single_slot = EXCLUDED.single_slot;
        WHEN 'log_partitions' THEN
            v_row := jsonb_set(v_row, '{queue_id}', v_qmap -> (v_row ->> 'queue_id'));
            INSERT INTO queen.log_partitions SELECT * FROM jsonb_populate_record(NULL::queen.log_partitions, v_row);
        WHEN 'log_segments' THEN
            INSERT INTO queen.log_segments SELECT * FROM jsonb_populate_record(NULL::queen.log_segments, v_row);
        WHEN 'log_txns' THEN
            -- an export of 0.2.0 (after its log_segments rows): the hashes and ids go into the
            -- segment row of the same offsets, or a data-less one when the segment was purged
            UPDATE queen.log_segments s
               SET hashes = decode(substr(v_row ->> 'hashes', 3), 'hex'),
                   message_ids = decode(substr(v_row ->> 'message_ids', 3), 'hex')
             WHERE s.partition_id = (v_row ->> 'partition_id')::bigint
               AND s.base_offset = (v_row ->> 'base_offset')::bigint;
            IF NOT FOUND THEN
                INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at,
                                                message_count, data, hashes, message_ids)
                VALUES ((v_row ->> 'partition_id')::bigint, (v_row ->> 'base_offset')::bigint,
                        (v_row ->> 'end_offset')::bigint, (v_row ->> 'created_at')::timestamptz,
                        ((v_row ->> 'end_offset')::bigint - (v_row ->> 'base_offset')::bigint + 1)::int,
                        ''::bytea, decode(substr(v_row ->> 'hashes', 3), 'hex'),
                        decode(substr(v_row ->> 'message_ids', 3), 'hex'));
            END IF;
        WHEN 'consumer_groups' THEN
            INSERT INTO queen.consumer_groups SELECT * FROM jsonb_populate_record(NULL::queen.consumer_groups, v_row);
        WHEN 'consumer_acks' THEN
            INSERT INTO queen.consumer_acks SELECT * FROM jsonb_populate_record(NULL::queen.consumer_acks, v_row);
        WHEN 'queue_options' THEN
            -- configure ran on every shard: the target's row, when it has one, is the same
            INSERT INTO queen.queue_options (queue_id, options)
            VALUES ((v_qmap ->> (v_row ->> 'queue_id'))::bigint, v_row -> 'options')
            ON CONFLICT (queue_id) DO NOTHING;
        WHEN 'consumer_subscriptions' THEN
            -- a group's subscription is fixed per queue on each shard: the target's own, if any, stays
            INSERT INTO queen.consumer_subscriptions
            SELECT * FROM jsonb_populate_record(NULL::queen.consumer_subscriptions, v_row)
            ON CONFLICT (queue_name, group_name) DO NOTHING;
        WHEN 'consumer_state' THEN
            INSERT INTO queen.consumer_state SELECT * FROM jsonb_populate_record(NULL::queen.consumer_state, v_row);
        WHEN 'consumer_dlq' THEN
            -- dead letters get this shard's ids (the source's would collide with its own)
            INSERT INTO queen.consumer_dlq (partition_id, group_name, message_offset, message_id, transaction_id,
                                            payload, error_message, retry_count, created_at, failed_at)
            SELECT r.partition_id, r.group_name, r.message_offset, r.message_id, r.transaction_id,
                   r.payload, r.error_message, r.retry_count, r.created_at, r.failed_at
              FROM jsonb_populate_record(NULL::queen.consumer_dlq, v_row) r;
        WHEN 'streams' THEN
            INSERT INTO queen.streams SELECT * FROM jsonb_populate_record(NULL::queen.streams, v_row);
        WHEN 'stream_producers' THEN
            INSERT INTO queen.stream_producers SELECT * FROM jsonb_populate_record(NULL::queen.stream_producers, v_row);
        WHEN 'stream_forks' THEN
            INSERT INTO queen.stream_forks SELECT * FROM jsonb_populate_record(NULL::queen.stream_forks, v_row);
        WHEN 'dedup_views' THEN
            v_row := jsonb_set(v_row, '{queue_id}', v_qmap -> (v_row ->> 'queue_id'));
            INSERT INTO queen.dedup_views SELECT * FROM jsonb_populate_record(NULL::queen.dedup_views, v_row);
        WHEN 'dedup_state_buckets' THEN
            INSERT INTO queen.dedup_state_buckets SELECT * FROM jsonb_populate_record(NULL::queen.dedup_state_buckets, v_row);
        WHEN 'dedup_candidates' THEN
            INSERT INTO queen.dedup_candidates SELECT * FROM jsonb_populate_record(NULL::queen.dedup_candidates, v_row);
        WHEN 'dedup_change_blocks' THEN
            INSERT INTO queen.dedup_change_blocks SELECT * FROM jsonb_populate_record(NULL::queen.dedup_change_blocks, v_row);
        WHEN 'dedup_offsets' THEN
            INSERT INTO queen.dedup_offsets SELECT * FROM jsonb_populate_record(NULL::queen.dedup_offsets, v_row);
        WHEN 'dedup_pending' THEN
            INSERT INTO queen.dedup_pending SELECT * FROM jsonb_populate_record(NULL::queen.dedup_pending, v_row);
        ELSE
            RAISE EXCEPTION 'slot_import: unknown table "%"', p_tbls[v_i] USING ERRCODE = '22023';
        END CASE;
        v_n := v_n + 1;
    END LOOP;
    INSERT INTO queen.shard_slots (slot, state) VALUES (p_slot, 'owned');
    PERFORM queen.slot_fence_invalidate();
    RETURN v_n;
END
$$;

-- Drop a slot that moved away: every partition of it and what hangs on them, then the slot
-- row (from then its writes get 55Q01). Only a fenced slot (55000 otherwise).
CREATE OR REPLACE FUNCTION queen.slot_drop(p_slot int) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pids bigint[];
    v_qids bigint[];
    v_vids bigint[];
BEGIN
    -- No fence lock here: the slot is fenced, so no write can pass the check any more; a push
    -- still holding a partition row lock waits for the fence lock's ShareLock, gets it, sees
    -- 'moving' and fails, and the row locks below wait only for that.
    IF (SELECT state FROM queen.shard_slots s WHERE s.slot = p_slot) IS DISTINCT FROM 'moving' THEN
        RAISE EXCEPTION 'slot % is not fenced on this shard', p_slot USING ERRCODE = '55000';
    END IF;
    SELECT COALESCE(array_agg(sp.partition_id ORDER BY sp.partition_id), '{}') INTO v_pids
      FROM queen.shard_partitions() sp WHERE sp.slot = p_slot;
    SELECT COALESCE(array_agg(DISTINCT p.queue_id), '{}') INTO v_qids
      FROM queen.log_partitions p WHERE p.id = ANY (v_pids);
    SELECT COALESCE(array_agg(v.id), '{}') INTO v_vids FROM queen.dedup_views v
      JOIN queen.queue_placement pl ON pl.queue_id = v.queue_id AND pl.single_slot
     WHERE v.queue_id = ANY (v_qids);
    DELETE FROM queen.stream_forks f USING queen.streams s
     WHERE s.partition_id = ANY (v_pids) AND f.name = s.name;
    DELETE FROM queen.dedup_state_buckets WHERE view_id = ANY (v_vids);
    DELETE FROM queen.dedup_candidates WHERE view_id = ANY (v_vids);
    DELETE FROM queen.dedup_change_blocks WHERE view_id = ANY (v_vids);
    DELETE FROM queen.dedup_pending WHERE view_id = ANY (v_vids);
    DELETE FROM queen.dedup_views WHERE id = ANY (v_vids);  -- cascades dedup_offsets
    DELETE FROM queen.log_segments WHERE partition_id = ANY (v_pids);
    DELETE FROM queen.consumer_acks WHERE partition_id = ANY (v_pids);
    PERFORM 1 FROM queen.log_partitions WHERE id = ANY (v_pids) ORDER BY id FOR UPDATE;
    DELETE FROM queen.log_partitions WHERE id = ANY (v_pids);  -- cascades groups, streams
    DELETE FROM queen.shard_slots WHERE slot = p_slot;
    PERFORM queen.slot_fence_invalidate();
    RETURN cardinality(v_pids);
END
$$;
-- ================================================================ module: maintenance mode
-- Queen MQ's maintenance mode (GET/POST /api/v1/system/maintenance; §3.2 and §3.9 of the wire
-- facts): while it is on, pushes are answered "buffered" and parked in
-- queen.maintenance_parked (sql/schema/70_maintenance.sql), committed before the answer; when
-- it is switched off, the switch's own transaction pushes every parked message through the
-- normal exact push path (dedup by transactionId unchanged) and deletes it, so each is
-- delivered exactly once whoever switches, whatever crashes. Pops are not affected.
--
-- Locking protocol (see the top of sql/modules/00_core.sql): the mode row (queen.maintenance_mode) is
-- taken before any partition lock and never after one. queen.maintenance_park takes it FOR
-- SHARE and inserts parked rows (no partition lock); queen.set_maintenance takes it FOR UPDATE,
-- then (switching off) creates the parked messages' partitions in the global creation order
-- (sorted by queue, partition, collation "C"; queen.resolve_partitions, before any partition
-- lock), then pushes them partition by partition in ascending partition id order (each push
-- takes its partition row FOR NO KEY UPDATE, held until commit), then deletes the rows it
-- pushed. A switch therefore waits for every park in flight and its drain sees them all; a park
-- that comes after the switch off finds the mode off and parks nothing (the sidecar then pushes
-- normally); two switches serialize on the row, and the second finds nothing left to push.

-- Internal (no grant): the push of parked messages with their given ids and verbatim JSON
-- text (src/pg/queue/push_parked.cpp), for maintenance_drain only.
CREATE OR REPLACE FUNCTION queen.push_parked(p_partition_id bigint, p_txns text[], p_ids uuid[],
                                             p_payloads text[])
    RETURNS TABLE (idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_parked_v1'
    LANGUAGE C VOLATILE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Internal (no grant): NULL when a transactionId passes the push path's rule, else the push's
-- own 22023 message for it (src/pg/queue/txn_id_check.cpp), so that maintenance_park accepts
-- exactly what queen.push_parked will push.
CREATE OR REPLACE FUNCTION queen.txn_id_problem(p_txn text) RETURNS text
    AS 'MODULE_PATHNAME', 'queen_txn_id_problem_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Whether maintenance mode is on (the sidecar's periodic check; no lock).
CREATE OR REPLACE FUNCTION queen.maintenance_enabled() RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT COALESCE((SELECT enabled FROM queen.maintenance_mode WHERE one), false) $$;

-- GET /api/v1/system/maintenance: {maintenanceMode, popMaintenanceMode, bufferedMessages,
-- bufferHealthy, bufferStats: {parkedMessages, queues, partitions, oldestParkedAt, changedAt}}.
-- popMaintenanceMode is always false (pops keep serving); bufferHealthy is true whenever this
-- answers (the buffer is this database).
CREATE OR REPLACE FUNCTION queen.maintenance_status() RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'maintenanceMode', COALESCE(m.enabled, false),
        'popMaintenanceMode', false,
        'bufferedMessages', p.n,
        'bufferHealthy', true,
        'bufferStats', pg_catalog.jsonb_build_object(
            'parkedMessages', p.n, 'queues', p.queues, 'partitions', p.parts,
            'oldestParkedAt', p.oldest, 'changedAt', m.changed_at))
    FROM (SELECT pg_catalog.count(*) AS n, pg_catalog.count(DISTINCT queue) AS queues,
                 pg_catalog.count(DISTINCT (queue, partition)) AS parts,
                 pg_catalog.min(parked_at) AS oldest
          FROM queen.maintenance_parked) p
    LEFT JOIN queen.maintenance_mode m ON m.one
$$;

-- Park one push request's items while maintenance mode is on: p_items is a JSON array of
-- {queue, partition, transactionId, messageId, payload} (payload any JSON value, kept as the
-- text sent). Every item is checked before anything is written, so that the drain can push
-- each of them: 22023 when p_items is not an array, an item is not an object, queue or
-- partition is not a non-empty string, transactionId is not a non-empty string the push accepts
-- (queen.txn_id_problem: at most 65535 bytes, valid UTF-8, no control character), messageId
-- is not a UUID, or payload is missing; 42501 for a reserved queue (__queen_*). Answers true
-- when the items were parked (in their order), false when maintenance mode is off (nothing
-- written: push them normally).
CREATE OR REPLACE FUNCTION queen.maintenance_park(p_items json) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_bad record;
    v_on boolean;
BEGIN
    IF p_items IS NULL OR pg_catalog.json_typeof(p_items) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'items must be a JSON array' USING ERRCODE = '22023';
    END IF;
    SELECT i - 1 AS idx, why INTO v_bad FROM (
        SELECT i, CASE
            WHEN pg_catalog.json_typeof(e) <> 'object' THEN 'is not a JSON object'
            WHEN pg_catalog.json_typeof(e -> 'queue') IS DISTINCT FROM 'string'
                 OR (e ->> 'queue') = '' THEN '"queue" must be a non-empty string'
            WHEN pg_catalog.json_typeof(e -> 'partition') IS DISTINCT FROM 'string'
                 OR (e ->> 'partition') = '' THEN '"partition" must be a non-empty string'
            WHEN pg_catalog.json_typeof(e -> 'transactionId') IS DISTINCT FROM 'string'
                 OR (e ->> 'transactionId') = '' THEN '"transactionId" must be a non-empty string'
            WHEN queen.txn_id_problem(e ->> 'transactionId') IS NOT NULL
                THEN queen.txn_id_problem(e ->> 'transactionId')
            WHEN pg_catalog.json_typeof(e -> 'messageId') IS DISTINCT FROM 'string'
                 OR (e ->> 'messageId') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                THEN '"messageId" must be a UUID'
            WHEN (e -> 'payload') IS NULL THEN 'has no "payload"'
        END AS why
        FROM pg_catalog.json_array_elements(p_items) WITH ORDINALITY AS t(e, i)) c
    WHERE why IS NOT NULL ORDER BY i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'item %: %', v_bad.idx, v_bad.why USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(ARRAY(
        SELECT DISTINCT e ->> 'queue' FROM pg_catalog.json_array_elements(p_items) AS t(e)));
    SELECT enabled INTO v_on FROM queen.maintenance_mode WHERE one FOR SHARE;
    IF v_on IS NOT TRUE THEN
        RETURN false;
    END IF;
    INSERT INTO queen.maintenance_parked (queue, partition, transaction_id, message_id, payload)
    SELECT e ->> 'queue', e ->> 'partition', e ->> 'transactionId', (e ->> 'messageId')::uuid,
           e -> 'payload'
    FROM pg_catalog.json_array_elements(p_items) WITH ORDINALITY AS t(e, i)
    ORDER BY i;
    RETURN true;
END
$$;

-- Internal (no grant): push every parked message and delete it, under the mode row lock the
-- caller (queen.set_maintenance) holds, so no park and no other drain runs meanwhile. Lock
-- order: the module header. Each partition's messages go in push order (seq), in segments of
-- at most 1000 messages or about 16 MiB of payload. delivered: stored as new messages;
-- duplicates: a transactionId already stored (in the window) or parked twice.
CREATE OR REPLACE FUNCTION queen.maintenance_drain(OUT delivered bigint, OUT duplicates bigint)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queues text[];
    v_parts text[];
    v_ids bigint[] := '{}';
    v_names text[] := '{}';
    v_from int;
    v_to int;
    v_pid bigint;
    v_pair record;
    v_msg record;
    v_txns text[];
    v_mids uuid[];
    v_payloads text[];
    v_bytes bigint;
    v_q int;
    v_d int;
BEGIN
    delivered := 0;
    duplicates := 0;
    SELECT pg_catalog.array_agg(queue ORDER BY queue COLLATE "C", partition COLLATE "C"),
           pg_catalog.array_agg(partition ORDER BY queue COLLATE "C", partition COLLATE "C")
      INTO v_queues, v_parts
      FROM (SELECT DISTINCT queue, partition FROM queen.maintenance_parked) d;
    IF v_queues IS NULL THEN
        RETURN;
    END IF;
    -- every partition first (created when missing), in the global creation order, in blocks
    -- of queen.resolve_partitions' 10000 pairs; no partition lock is taken yet
    v_from := 1;
    WHILE v_from <= pg_catalog.cardinality(v_queues) LOOP
        v_to := LEAST(v_from + 9999, pg_catalog.cardinality(v_queues));
        SELECT v_ids || pg_catalog.array_agg(r.partition_id ORDER BY r.idx) INTO v_ids
          FROM queen.resolve_partitions(v_queues[v_from:v_to], v_parts[v_from:v_to]) r;
        v_from := v_to + 1;
    END LOOP;
    -- then each partition's messages, in ascending partition id order
    FOR v_pair IN
        SELECT u.pid, v_queues[u.i] AS queue, v_parts[u.i] AS partition
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u(pid, i)
        ORDER BY u.pid
    LOOP
        v_txns := '{}';
        v_mids := '{}';
        v_payloads := '{}';
        v_bytes := 0;
        FOR v_msg IN
            SELECT transaction_id, message_id, payload::text AS payload
            FROM queen.maintenance_parked
            WHERE queue = v_pair.queue AND partition = v_pair.partition
            ORDER BY seq
        LOOP
            IF pg_catalog.cardinality(v_txns) >= 1000
               OR v_bytes + pg_catalog.octet_length(v_msg.payload) > 16777216 THEN
                IF pg_catalog.cardinality(v_txns) > 0 THEN
                    SELECT pg_catalog.count(*) FILTER (WHERE p.status = 'queued'),
                           pg_catalog.count(*) FILTER (WHERE p.status <> 'queued')
                      INTO v_q, v_d
                      FROM queen.push_parked(v_pair.pid, v_txns, v_mids, v_payloads) p;
                    delivered := delivered + v_q;
                    duplicates := duplicates + v_d;
                END IF;
                v_txns := '{}';
                v_mids := '{}';
                v_payloads := '{}';
                v_bytes := 0;
            END IF;
            v_txns := v_txns || v_msg.transaction_id;
            v_mids := v_mids || v_msg.message_id;
            v_payloads := v_payloads || v_msg.payload;
            v_bytes := v_bytes + pg_catalog.octet_length(v_msg.payload);
        END LOOP;
        IF pg_catalog.cardinality(v_txns) > 0 THEN
            SELECT pg_catalog.count(*) FILTER (WHERE p.status = 'queued'),
                   pg_catalog.count(*) FILTER (WHERE p.status <> 'queued')
              INTO v_q, v_d
              FROM queen.push_parked(v_pair.pid, v_txns, v_mids, v_payloads) p;
            delivered := delivered + v_q;
            duplicates := duplicates + v_d;
        END IF;
        DELETE FROM queen.maintenance_parked
        WHERE queue = v_pair.queue AND partition = v_pair.partition;
    END LOOP;
END
$$;

-- POST /api/v1/system/maintenance {enabled}: switch maintenance mode on or off for every
-- sidecar of this database. Switching off delivers every parked message in this transaction
-- (queen.maintenance_drain) before it commits. {maintenanceMode, bufferedMessages,
-- bufferHealthy, message}, plus queen's delivered and duplicates (what this call pushed).
-- 22023 for a NULL p_enabled.
CREATE OR REPLACE FUNCTION queen.set_maintenance(p_enabled boolean) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_drained record;
    v_left bigint;
BEGIN
    IF p_enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be a boolean' USING ERRCODE = '22023';
    END IF;
    INSERT INTO queen.maintenance_mode (one, enabled) VALUES (true, false)
    ON CONFLICT (one) DO NOTHING;
    PERFORM 1 FROM queen.maintenance_mode WHERE one FOR UPDATE;
    UPDATE queen.maintenance_mode SET enabled = p_enabled, changed_at = pg_catalog.now()
    WHERE one AND enabled IS DISTINCT FROM p_enabled;
    IF p_enabled THEN
        SELECT pg_catalog.count(*) INTO v_left FROM queen.maintenance_parked;
        RETURN pg_catalog.jsonb_build_object(
            'maintenanceMode', true, 'bufferedMessages', v_left, 'bufferHealthy', true,
            'message', 'Maintenance mode enabled: pushes are parked in PostgreSQL until it is disabled',
            'delivered', 0, 'duplicates', 0);
    END IF;
    SELECT * INTO v_drained FROM queen.maintenance_drain();
    RETURN pg_catalog.jsonb_build_object(
        'maintenanceMode', false, 'bufferedMessages', 0, 'bufferHealthy', true,
        'message', pg_catalog.format('Maintenance mode disabled: %s parked messages delivered',
                                     v_drained.delivered + v_drained.duplicates),
        'delivered', v_drained.delivered, 'duplicates', v_drained.duplicates);
END
$$;
-- Every privilege of queen, in one place: the last part of every install and every upgrade
-- script (after the schema and routines parts; see the Makefile). It states the whole truth, so
-- an upgraded database ends with exactly a fresh install's privileges: it first takes every
-- privilege on schema queen's routines, tables and sequences away from PUBLIC and from the three
-- roles, then grants what each role may do. A routine or table added later gets nothing until a
-- line here grants it; a grant removed here is gone after the next upgrade too.
--
-- Least privilege. Three roles (cluster-wide, so created only when absent; another database's
-- install may create them at the same moment): queen_writer (push, ack, read), queen_reader
-- (read), queen_admin (configure, retention, drop). Every function runs as the extension's owner
-- (SECURITY DEFINER, stated with each routine) with search_path pinned to pg_catalog, pg_temp and
-- every queen object schema-qualified, so nothing in a caller's schemas can stand in for what it
-- calls. No role gets any table privilege: the functions are the only way in (the one view,
-- queen.probe_cache, is read-only). Internal helpers get no grant. CREATE FUNCTION grants EXECUTE
-- to PUBLIC by default, and a SECURITY DEFINER function callable by anyone would bypass the roles:
-- hence the REVOKE from PUBLIC of every routine.
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['queen_writer', 'queen_reader', 'queen_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile by an install in another database
            END;
        END IF;
    END LOOP;
END
$$;

REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC, queen_writer, queen_reader, queen_admin;
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC, queen_writer, queen_reader, queen_admin;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA queen FROM PUBLIC, queen_writer, queen_reader, queen_admin;
GRANT USAGE ON SCHEMA queen TO queen_writer, queen_reader, queen_admin;

-- ---------------------------------------------------------------- every role: read
-- core (sql/modules/00_core.sql)
GRANT EXECUTE ON FUNCTION
    queen.txn_hash(text), queen.log_unnest_hashes(bytea), queen.probe_cache_stats(),
    queen.push_hint_stats(), queen.read(text, text, bigint, int), queen.partition_id(text, text),
    queen.committed_offset(text, text, text), queen.explain(text, text, text)
    TO queen_reader, queen_writer, queen_admin;
-- placement (sql/modules/00_core.sql; docs/scale-out.md)
GRANT EXECUTE ON FUNCTION queen.slot_of(text, text), queen.slot_of(text, text, integer)
    TO queen_reader, queen_writer, queen_admin;
-- shared probe cache (sql/modules/50_probe_cache.sql)
GRANT EXECUTE ON FUNCTION queen.probe_cache_shared(), queen.probe_cache_partitions()
    TO queen_reader, queen_writer, queen_admin;
GRANT SELECT ON queen.probe_cache TO queen_reader, queen_writer, queen_admin;

-- ---------------------------------------------------------------- queen_reader and queen_writer
-- streams (sql/modules/20_producers.sql, 30_stream_forks.sql)
GRANT EXECUTE ON FUNCTION queen.blake3(bytea), queen.blake3_hex(bytea) TO queen_writer, queen_reader;
GRANT EXECUTE ON FUNCTION queen.stream_offset(bigint), queen.stream_offset_parse(text)
    TO queen_writer, queen_reader;
GRANT EXECUTE ON FUNCTION
    queen.stream_read(text, text, int, int, timestamptz),
    queen.stream_head(text, timestamptz)
    TO queen_reader, queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_gone(text, timestamptz) TO queen_reader, queen_writer;
-- dedup views (sql/modules/40_dedup_views.sql)
GRANT EXECUTE ON FUNCTION queen.dedup_changelog(text, bigint, int), queen.dedup_stats(text),
    queen.dedup_state_rows(text) TO queen_reader, queen_writer;

-- ---------------------------------------------------------------- queen_writer: write
-- push and ack (sql/modules/00_core.sql, sql/modules/10_resolve_partitions.sql)
GRANT EXECUTE ON FUNCTION
    queen.resolve_partition(text, text), queen.push(text, text, jsonb),
    queen.push_segment(bigint, bytea, bytea, bigint, int, bytea),
    queen.push_segments(bigint[], bytea[], bytea[], bigint[], int[], bytea[]),
    queen.ack(text, text, text, text), queen.ack_offset(text, text, bigint, text),
    queen.ack_batch(text, text, jsonb, text), queen.transaction(jsonb)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.resolve_partitions(text[], text[]) TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[],
                                                    bigint[], int[], bytea[]) TO queen_writer;
-- streams (sql/modules/20_producers.sql, 21_stream_append_batch.sql, 30_stream_forks.sql)
GRANT EXECUTE ON FUNCTION
    queen.stream_create(text, text, bigint, timestamptz, boolean, bytea[], timestamptz),
    queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text,
                        bytea, timestamptz, boolean),
    queen.stream_close(text, timestamptz),
    queen.stream_delete(text, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.stream_append_batch(text[], int[], bytea[], text[], text[],
    bigint[], bigint[], text[], text[], boolean[], text[], bytea[], boolean[], timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_create(text, text, bigint, timestamptz, boolean,
                                            bytea[], text, text, bigint, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_delete(text, timestamptz) TO queen_writer;
-- dedup views (sql/modules/40_dedup_views.sql)
GRANT EXECUTE ON FUNCTION queen.dedup_advance(text, int, timestamptz),
    queen.dedup_watermark(text, bigint, timestamptz), queen.dedup_flush(text, timestamptz)
    TO queen_writer;

-- ---------------------------------------------------------------- queen_admin: administration
GRANT EXECUTE ON FUNCTION
    queen.configure(text, jsonb), queen.run_retention(int), queen.retention_step(jsonb, int),
    queen.drop_queue(text)
    TO queen_admin;
GRANT EXECUTE ON PROCEDURE queen.run_retention_procedure(int, float8, jsonb) TO queen_admin;
GRANT EXECUTE ON FUNCTION queen.create_dedup_view(text, text, jsonb),
    queen.create_dedup_view_sql(text, text), queen.drop_dedup_view(text) TO queen_admin;

-- ---------------------------------------------------------------- the consuming model (issue 18)
-- sql/modules/60_consume*.sql: wire partition ids and the dead-letter listing for every role;
-- pops, acks, lease renewal and the broker's transaction for writers; deletes for admins.
GRANT EXECUTE ON FUNCTION queen.partition_uuid(bigint), queen.partition_of_uuid(text),
    queen.dlq_messages(text, text, int, int)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION
    queen.pop(text, text, text, int, int, text, text, timestamptz),
    queen.ack_messages(jsonb, text), queen.renew_lease(text, int), queen.transaction_wire(jsonb)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.delete_queue(text), queen.delete_consumer_group(text, boolean)
    TO queen_admin;

-- ---------------------------------------------------------------- maintenance mode (issue 18)
-- sql/modules/70_maintenance.sql: the mode and its status for every role; parking a push for
-- writers; switching for admins (queen.push_parked and queen.maintenance_drain are internal).
GRANT EXECUTE ON FUNCTION queen.maintenance_enabled(), queen.maintenance_status()
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.maintenance_park(json) TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.set_maintenance(boolean) TO queen_admin;
