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
