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
--     configure switching a queue's encryption on takes it FOR UPDATE, then the queue's
--     advisory encryption lock, then its partition rows (sql/modules/80_encryption.sql);
--   * acks lock only their consumer group row, after any partition locks their caller holds;
--   * an UPDATE of queen.log_segments that changes a row's created_at, base_offset or
--     partition_id (by hand: queen never does) takes the partition row FOR NO KEY UPDATE and
--     its fence after its segment rows' locks (trigger queen.log_segments_order_guard, issue
--     28). The only queen writer that locks stored segment rows under a partition lock is a
--     purge of those rows: edit history with retention stopped, or one of the two is cancelled
--     as a deadlock (40P01) rather than waiting forever;
--   * the retention procedure holds at most one partition lock at a time (it commits after
--     each partition's batch). The periodic sweeps' session advisory lock
--     (queen.retention_sweep_lock) is taken before a sweep's first batch and only ever tried,
--     never waited for, so it adds no wait to this order. On a shard, a purge takes the partition's slot fence lock in
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
--     inserts. A pop claims several partitions with SKIP LOCKED (partition, then state row;
--     a first contact's creator key, an advisory lock taken just before the state row it
--     creates, with a try-lock), so it never waits on a push nor on another pop while it
--     holds anything; wire acks take
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

-- issue 28: the lowest base_offset of a partition's rows with created_at >= p_since, or the
-- largest int8 when none, from the primary key and no created_at index: a binary search over
-- the rows above the partition's unordered_upto (monotone), a forward read of the rows at or
-- below it while their newest stamp unordered_newest is >= p_since (all of them while the
-- partition is not checked yet). Callers read [start, last] and keep their created_at predicate
-- too (src/pg/storage/log_scan.cpp). Internal: no grant (queen.explain is SECURITY DEFINER; the
-- sidecar's queen_window statement reads queen's tables, so its role owns them).
CREATE OR REPLACE FUNCTION queen.log_window_start(p_partition_id bigint, p_since timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_log_window_start_v1'
    LANGUAGE C STABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- issue 28: keeps queen.log_partitions.unordered_upto true when created_at is edited by hand (the
-- tests do, a repair might): an updated row that is out of order with its neighbours above the
-- partition's unordered_upto, or newer than unordered_newest at or below it, resets the
-- partition to "not checked" (NULL), and its next push reads its history once to find the
-- boundary again (src/pg/storage/log_scan.cpp). Queen itself never changes created_at, base_offset
-- or partition_id of a stored row (retention changes data and hashes only), so no push or purge
-- fires it. Lock order: after the updated segment rows' own locks it takes the partition row as
-- a writer does (queen.partition_lock_for_write: FOR NO KEY UPDATE, then the slot fence on a
-- shard), held to commit, so a push never checks or stamps against a half-seen edit.
CREATE OR REPLACE FUNCTION queen.log_segments_order_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_upto   bigint;
    v_newest timestamptz;
    v_prev   timestamptz;
    v_next   timestamptz;
BEGIN
    IF queen.partition_lock_for_write(NEW.partition_id, 'no key update') = 'absent' THEN
        RETURN NULL;
    END IF;
    SELECT p.unordered_upto, p.unordered_newest INTO v_upto, v_newest
      FROM queen.log_partitions p WHERE p.id = NEW.partition_id;
    IF v_upto IS NULL THEN
        RETURN NULL;  -- no such partition, or not checked yet: its next push checks it
    END IF;
    IF NEW.base_offset <= v_upto THEN
        IF NEW.created_at <= v_newest THEN
            RETURN NULL;
        END IF;
    ELSE
        SELECT s.created_at INTO v_prev FROM queen.log_segments s
         WHERE s.partition_id = NEW.partition_id AND s.base_offset < NEW.base_offset
           AND s.base_offset > v_upto
         ORDER BY s.base_offset DESC LIMIT 1;
        SELECT s.created_at INTO v_next FROM queen.log_segments s
         WHERE s.partition_id = NEW.partition_id AND s.base_offset > NEW.base_offset
         ORDER BY s.base_offset LIMIT 1;
        IF (v_prev IS NULL OR v_prev <= NEW.created_at)
           AND (v_next IS NULL OR NEW.created_at <= v_next) THEN
            RETURN NULL;
        END IF;
    END IF;
    UPDATE queen.log_partitions SET unordered_upto = NULL, unordered_newest = NULL
     WHERE id = NEW.partition_id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER log_segments_order_guard
    AFTER UPDATE ON queen.log_segments FOR EACH ROW
    WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at
          OR OLD.base_offset IS DISTINCT FROM NEW.base_offset
          OR OLD.partition_id IS DISTINCT FROM NEW.partition_id)
    EXECUTE FUNCTION queen.log_segments_order_guard();

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

-- How many of this backend's probes went through the hash index (issue 28: windows larger
-- than queen.probe_index_min_hashes; src/pg/probe/indexed_probe.cpp).
CREATE OR REPLACE FUNCTION queen.probe_index_stats() RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_probe_index_stats_v1'
    LANGUAGE C VOLATILE;

-- How many of this backend's probes went through the hash runs (issue 28: windows larger than
-- queen.probe_index_min_hashes without the hash index; src/pg/probe/runs_probe.cpp).
CREATE OR REPLACE FUNCTION queen.probe_runs_stats() RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_probe_runs_stats_v1'
    LANGUAGE C VOLATILE;

-- Per-backend counters of the hinted vouch (push_segment(s)' p_hint(s)): segments whose hints
-- were looked at, hints, segments whose hints all confirmed, segments sent to the full probe.
CREATE OR REPLACE FUNCTION queen.push_hint_stats(OUT hinted_segments bigint, OUT hints bigint,
                                      OUT confirmed bigint, OUT fallbacks bigint)
    AS 'MODULE_PATHNAME', 'queen_push_hint_stats_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- issue 28: the newest created_at this backend's pushes stamped in the current transaction (NULL
-- when it stamped none). A push stamps greatest(now, the partition's newest row's created_at),
-- which can be ahead of the clock after it stepped back; the sidecar's block cache stamps the
-- pushed hashes with greatest(clock_timestamp(), this) so it never expires one before the
-- database does (sidecar/push/block_cache.h).
CREATE OR REPLACE FUNCTION queen.push_last_stamp() RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'queen_push_last_stamp_v1'
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

-- issue 28: the true end of partition p_partition_id's log, given its log_partitions.last_offset
-- p_last_offset: a push no longer updates the column (src/pg/storage/partition_end.h), so the
-- end is the greater of the column (a floor: retention raises it to the end it deletes before
-- deleting the newest rows, so offsets never go back) and the newest segment row's end_offset
-- (one backward descent of the primary key). Every SQL reader of last_offset reads it through
-- this. Internal.
CREATE OR REPLACE FUNCTION queen.log_end(p_partition_id bigint, p_last_offset bigint)
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT GREATEST(p_last_offset, (SELECT s.end_offset FROM queen.log_segments s
                                     WHERE s.partition_id = p_partition_id
                                     ORDER BY s.base_offset DESC LIMIT 1))
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
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string, not NULL' USING ERRCODE = '22023';
    END IF;
    IF p_partition IS NULL OR p_partition = '' THEN
        RAISE EXCEPTION 'partition name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    LOOP
        SELECT p.id, q.id, q.dedup_window_seconds, queen.log_end(p.id, p.last_offset), p.txns_start, q.dedup_by
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
-- The answer's retentionSeconds is the age retention stored in queues.retention_seconds: in
-- Queen's form, retentionSeconds only with retentionEnabled (else null), like the broker.
-- p_namespace and p_task (issue 29): Queen's namespace and task, stored with the queue (NULL:
-- none; configure is a full replace, so an unsent one is cleared) and answered in Queen's form.
-- Locks: the queue row (FOR NO KEY UPDATE), then creates Default (no partition row lock; on a
-- shard of a cluster only the owner of its slot creates it, the others answer partitionId null).
CREATE OR REPLACE FUNCTION queen.configure(p_queue text, p_options jsonb DEFAULT '{}',
                                           p_namespace text DEFAULT NULL,
                                           p_task text DEFAULT NULL) RETURNS jsonb
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
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string, not NULL' USING ERRCODE = '22023';
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
    -- Queen's form gates retentionSeconds on retentionEnabled, as the broker does (queen's own
    -- form has no such flag: its retentionSeconds always holds). completedRetentionSeconds and
    -- maxWaitTimeSeconds are read from the stored options by retention itself (see "The data
    -- rules" at retention below).
    IF v_wire AND NOT (v_queen ->> 'retentionEnabled')::boolean THEN
        v_ret := NULL;
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
               namespace = p_namespace, task = p_task, updated_at = now()
         WHERE id = v_qid;
    ELSE
        INSERT INTO queen.queues (name, dedup_window_seconds, retention_seconds, dedup_by,
                                  namespace, task)
        VALUES (p_queue, v_window, v_ret, v_by, p_namespace, p_task)
        ON CONFLICT (name) DO UPDATE
           SET dedup_window_seconds = EXCLUDED.dedup_window_seconds,
               retention_seconds = EXCLUDED.retention_seconds,
               dedup_by = EXCLUDED.dedup_by, namespace = EXCLUDED.namespace,
               task = EXCLUDED.task, updated_at = now()
        RETURNING id INTO v_qid;
    END IF;
    INSERT INTO queen.queue_options (queue_id, options) VALUES (v_qid, v_queen)
    ON CONFLICT (queue_id) DO UPDATE SET options = EXCLUDED.options;
    -- issue 27: the flag every push reads (on only while the queue is empty: 55QE1)
    PERFORM queen.queue_set_encryption(v_qid, p_queue, (v_queen ->> 'encryptionEnabled')::boolean);
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
                              'namespace', p_namespace, 'task', p_task, 'options', v_queen);
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
    SELECT queen.log_end(id, last_offset) INTO v_last FROM queen.log_partitions WHERE id = v_pid;
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
    SELECT queen.log_end(id, last_offset) INTO v_last FROM queen.log_partitions WHERE id = v_pid;
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
-- Retention drops, per partition and oldest first, the segments' data its queue's data rules
-- let go (below) and their hashes older than its dedup window (window 0: the hashes whose data
-- is gone, so acks keep resolving), never from a row holding an offset at or above
-- queen.retention_floor(partition). The two clocks meet in one row (queen.log_segments):
-- dropping one side of a row whose other side is kept is an UPDATE (data = '' or hashes and
-- message_ids NULL: a duplicate still names the original id and offset), dropping the last
-- side deletes the row. log_start / txns_start mark where the kept data / hashes begin. Every
-- purge holds that partition's row lock (FOR NO KEY UPDATE), so it serializes with pushes
-- exactly like a push does.
--
-- The data rules (issue 27; docs/sql-interface.md "Retention"). A segment's data may go when,
-- at the purge's clock p_now, one of these holds for it; the data dropped is the longest
-- prefix of the kept segments (ascending offsets, whole segments) for which every segment
-- qualifies:
--   age       queues.retention_seconds is set and the segment is older than it (queen's own
--             retentionSeconds; from Queen's configure only with retentionEnabled: configure
--             stores it so);
--   completed Queen's completedRetentionSeconds > 0 with retentionEnabled, the segment is older
--             than it, and every message of it is at or below the cursor of every group that
--             popped or acked on the partition (none: nothing is completed);
--   max wait  Queen's maxWaitTimeSeconds > 0 (not gated by retentionEnabled, like the broker),
--             the segment is older than it, and it holds a message still pending for some group
--             (above the lowest cursor; every message is pending when no group has popped), or
--             the oldest pending message of the partition is older than it too. A segment
--             consumed by every group is thus dropped by max wait only together with older
--             pending ones: the log is a prefix, so it cannot keep the consumed ones below a
--             gap the way the broker's table does (docs/queen-compatibility.md).
-- Hashes are never touched by these rules: the dedup window has its own clock.
-- Cursors move only forward and acks do not wait for the purge's row lock (they take KEY
-- SHARE), so a cursor read here can only be older than the truth: the purge then keeps more.

-- Extension point: the lowest offset retention must keep in a partition, or NULL (no floor).
-- A module that must hold messages (dedup views) replaces this with CREATE OR REPLACE.
CREATE OR REPLACE FUNCTION queen.retention_floor(p_partition_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT NULL::bigint $$;

-- The offset every group with state on a partition has consumed: the lowest cursor of the
-- groups that popped (queen.consumer_state) or acked (queen.consumer_groups) there, -1 for a
-- group without a cursor; NULL when no group has. Internal.
CREATE OR REPLACE FUNCTION queen.retention_acked(p_partition_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- (written out again in queen.retention_next: keep the two alike)
    SELECT least((SELECT min(c.committed_offset) FROM queen.consumer_groups c
                   WHERE c.partition_id = p_partition_id),
                 (SELECT -1 FROM queen.consumer_state s
                   WHERE s.partition_id = p_partition_id
                     AND NOT EXISTS (SELECT 1 FROM queen.consumer_groups c
                                      WHERE c.partition_id = s.partition_id
                                        AND c.group_name = s.group_name)
                   LIMIT 1))
$$;

-- Queen's two cursor rules of a queue's stored options (NULL: the defaults): done_seconds is
-- completedRetentionSeconds when retentionEnabled is true (else NULL), wait_seconds is
-- maxWaitTimeSeconds (NULL for 0). Internal.
CREATE OR REPLACE FUNCTION queen.retention_option_seconds(p_options jsonb, OUT done_seconds int,
                                                          OUT wait_seconds int)
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_options -> 'retentionEnabled' = 'true'::jsonb
                 AND jsonb_typeof(p_options -> 'completedRetentionSeconds') = 'number'
                 AND (p_options ->> 'completedRetentionSeconds')::numeric >= 1
                THEN least((p_options ->> 'completedRetentionSeconds')::numeric, 2147483647)::int END,
           CASE WHEN jsonb_typeof(p_options -> 'maxWaitTimeSeconds') = 'number'
                 AND (p_options ->> 'maxWaitTimeSeconds')::numeric >= 1
                THEN least((p_options ->> 'maxWaitTimeSeconds')::numeric, 2147483647)::int END
$$;

-- The Queen rules of a partition at p_now (see "The data rules" above), from its queue's stored
-- options (NULL: the defaults, no rule): done_seconds (completedRetentionSeconds when
-- retentionEnabled, else NULL), wait_seconds (maxWaitTimeSeconds, NULL for 0), acked
-- (queen.retention_acked, -1 when no group) and waited (the oldest message still pending for
-- some group, at or above log_start, is older than wait_seconds). Internal.
CREATE OR REPLACE FUNCTION queen.retention_rules(p_partition_id bigint, p_log_start bigint,
                                                 p_options jsonb, p_now timestamptz,
                                                 OUT done_seconds int, OUT wait_seconds int,
                                                 OUT acked bigint, OUT waited boolean)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_from bigint;
    v_end  bigint;
    v_at   timestamptz;
BEGIN
    acked := -1;
    waited := false;
    SELECT o.done_seconds, o.wait_seconds INTO done_seconds, wait_seconds
      FROM queen.retention_option_seconds(p_options) o;
    IF done_seconds IS NULL AND wait_seconds IS NULL THEN
        RETURN;
    END IF;
    acked := COALESCE(queen.retention_acked(p_partition_id), -1);
    IF wait_seconds IS NULL THEN
        RETURN;
    END IF;
    -- the oldest kept pending message: in the segment holding v_from, else the next segment
    v_from := greatest(acked + 1, p_log_start);
    SELECT s.end_offset, s.created_at INTO v_end, v_at FROM queen.log_segments s
     WHERE s.partition_id = p_partition_id AND s.base_offset >= p_log_start
       AND s.base_offset <= v_from AND octet_length(s.data) > 0
     ORDER BY s.base_offset DESC LIMIT 1;
    IF NOT FOUND OR v_end < v_from THEN
        SELECT s.created_at INTO v_at FROM queen.log_segments s
         WHERE s.partition_id = p_partition_id AND s.base_offset > v_from
           AND octet_length(s.data) > 0
         ORDER BY s.base_offset LIMIT 1;
        IF NOT FOUND THEN
            RETURN;  -- nothing pending is kept
        END IF;
    END IF;
    waited := v_at < p_now - make_interval(secs => wait_seconds);
END
$$;

-- The first partition after p_after (ascending ids, up to p_last when given) that has something
-- retention may delete at p_now, or NULL: one set-based pass over the partitions, read without
-- locking, so that partitions with nothing eligible are never locked. Eligible: the oldest kept
-- hash row is past the window (window 0: a row keeps its hashes below log_start), or the oldest
-- kept segment qualifies under a data rule (for max wait, with the oldest pending message
-- looked up only when that segment is consumed by every group). The same rules as
-- queen.retention_purge, which decides again under the row lock.
CREATE OR REPLACE FUNCTION queen.retention_next(p_after bigint, p_now timestamptz,
                                                p_last bigint DEFAULT NULL) RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH r AS MATERIALIZED (
        SELECT q.id, q.dedup_window_seconds AS win, q.retention_seconds AS ret,
               x.done_seconds AS done, x.wait_seconds AS wait,
               least(q.retention_seconds, x.done_seconds, x.wait_seconds) AS soonest
          FROM queen.queues q
          LEFT JOIN queen.queue_options o ON o.queue_id = q.id
          LEFT JOIN LATERAL queen.retention_option_seconds(o.options) x ON true)
    SELECT p.id
      FROM queen.log_partitions p
      JOIN r ON r.id = p.queue_id
      -- the oldest kept segment, read only for queues with a data rule
      LEFT JOIN LATERAL (SELECT s.end_offset, s.created_at FROM queen.log_segments s
                          WHERE r.soonest IS NOT NULL
                            AND s.partition_id = p.id AND s.base_offset >= p.log_start
                            AND octet_length(s.data) > 0
                          ORDER BY s.base_offset LIMIT 1) d ON true
      -- the groups' cursors, read only when that segment is old enough for a cursor rule
      -- (queen.retention_acked written out: a call per partition costs more than the reads)
      LEFT JOIN LATERAL (SELECT COALESCE(least(
                                    (SELECT min(c.committed_offset) FROM queen.consumer_groups c
                                      WHERE c.partition_id = p.id),
                                    (SELECT -1 FROM queen.consumer_state cs
                                      WHERE cs.partition_id = p.id
                                        AND NOT EXISTS (SELECT 1 FROM queen.consumer_groups c
                                                         WHERE c.partition_id = cs.partition_id
                                                           AND c.group_name = cs.group_name)
                                      LIMIT 1)), -1) AS acked
                           FROM (SELECT 1) one
                          WHERE (r.done IS NOT NULL OR r.wait IS NOT NULL)
                            AND d.created_at < p_now - make_interval(secs => least(r.done, r.wait))
                         OFFSET 0) a
        ON true
     WHERE p.id > p_after AND (p_last IS NULL OR p.id <= p_last)
       AND ((r.win > 0 AND (SELECT t.created_at FROM queen.log_segments t
                             WHERE t.partition_id = p.id AND t.base_offset >= p.txns_start
                               AND t.hashes IS NOT NULL
                             ORDER BY t.base_offset LIMIT 1) < p_now - make_interval(secs => r.win))
            OR (r.win = 0 AND EXISTS (SELECT 1 FROM queen.log_segments t
                                       WHERE t.partition_id = p.id AND t.base_offset < p.log_start
                                         AND t.hashes IS NOT NULL))
            -- (each rule's IS NOT NULL first: a NULL comparison would not stop the AND)
            OR (r.ret IS NOT NULL AND d.created_at < p_now - make_interval(secs => r.ret))
            OR (r.done IS NOT NULL AND d.created_at < p_now - make_interval(secs => r.done)
                AND d.end_offset <= a.acked)
            OR (r.wait IS NOT NULL AND d.created_at < p_now - make_interval(secs => r.wait)
                AND (d.end_offset > a.acked
                     -- consumed by every group: the oldest pending message (in the segment
                     -- holding acked + 1, else the next one) must be past max wait too
                     OR (SELECT z.created_at FROM (
                             (SELECT u.base_offset, u.end_offset, u.created_at FROM queen.log_segments u
                               WHERE u.partition_id = p.id AND u.base_offset >= p.log_start
                                 AND u.base_offset <= a.acked + 1
                               ORDER BY u.base_offset DESC LIMIT 1)
                             UNION ALL
                             (SELECT u.base_offset, u.end_offset, u.created_at FROM queen.log_segments u
                               WHERE u.partition_id = p.id AND u.base_offset > a.acked + 1
                               ORDER BY u.base_offset LIMIT 1)) z
                          WHERE z.end_offset > a.acked
                          ORDER BY z.base_offset LIMIT 1) < p_now - make_interval(secs => r.wait))))
     ORDER BY p.id
     LIMIT 1
$$;

-- Whether one partition has anything retention may delete now (queen.retention_next on it).
CREATE OR REPLACE FUNCTION queen.retention_eligible(p_partition_id bigint, p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT queen.retention_next(p_partition_id - 1, p_now, p_partition_id) IS NOT NULL $$;

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
    v_opts  jsonb;
    v_r     record;
    v_floor bigint;
    v_upto  bigint;
    v_n     int;
    v_left  int := p_max_rows;
BEGIN
    segments_deleted := 0;
    txns_deleted := 0;
    SELECT q.retention_seconds, q.dedup_window_seconds, p.log_start, p.txns_start, o.options
      INTO v_ret, v_win, v_start, v_tstart, v_opts
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.queue_options o ON o.queue_id = q.id
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
    -- Queen's rules, read under the row lock (the cursors: see "The data rules" above)
    SELECT * INTO v_r FROM queen.retention_rules(p_partition_id, v_start, v_opts, p_now);
    -- data: the oldest prefix of the kept data that some data rule lets go (and below the floor)
    IF v_ret IS NOT NULL OR v_r.done_seconds IS NOT NULL OR v_r.wait_seconds IS NOT NULL THEN
        SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
            SELECT s.end_offset,
                   bool_and(((v_ret IS NOT NULL
                              AND s.created_at < p_now - make_interval(secs => v_ret))
                             OR (v_r.done_seconds IS NOT NULL
                                 AND s.created_at < p_now - make_interval(secs => v_r.done_seconds)
                                 AND s.end_offset <= v_r.acked)
                             OR (v_r.wait_seconds IS NOT NULL
                                 AND s.created_at < p_now - make_interval(secs => v_r.wait_seconds)
                                 AND (s.end_offset > v_r.acked OR v_r.waited)))
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
            -- the column keeps the end of what goes (issue 28: the newest rows may go)
            UPDATE queen.log_partitions SET log_start = v_upto + 1,
                   last_offset = GREATEST(last_offset, v_upto) WHERE id = p_partition_id;
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
        -- the column keeps the end of what goes (issue 28: the newest rows may go)
        UPDATE queen.log_partitions SET txns_start = v_upto + 1,
               last_offset = GREATEST(last_offset, v_upto) WHERE id = p_partition_id;
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
    v_pid := 0;
    LOOP
        EXIT WHEN v_left <= 0;
        v_pid := queen.retention_next(v_pid, v_now);
        EXIT WHEN v_pid IS NULL;
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
    v_pid := queen.retention_next(v_after, v_now);
    IF v_pid IS NOT NULL THEN
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
    END IF;
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

-- The periodic sweeps' lock (the sidecar's --retention-interval-ms sweep and
-- scripts/retention-loop.sh): a session-level advisory lock, (0x71756565, 0x72657465) of
-- pg_try_advisory_lock's two-key space, so that one sweep runs at a time across every sidecar
-- and loop of the database and the others skip their turn instead of repeating its reads.
-- Nothing else depends on it: any number of retention_step callers stay exact without it (each
-- purge rereads its partition under the row lock), so the worker and direct callers do not
-- take it. Held across the sweep's commits; released by retention_sweep_unlock or when the
-- session ends. true when taken (each true is released by one unlock).
CREATE OR REPLACE FUNCTION queen.retention_sweep_lock() RETURNS boolean
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.pg_try_advisory_lock(1903519077, 1919251557) $$;

-- Release the sweeps' lock taken by this session (false when it held none).
CREATE OR REPLACE FUNCTION queen.retention_sweep_unlock() RETURNS boolean
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.pg_advisory_unlock(1903519077, 1919251557) $$;

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
           -- issue 28: the window from the primary key (no created_at index since 0.4.0)
           AND t.base_offset >= queen.log_window_start(v_pid, v_now - make_interval(secs => v_win))
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
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string, not NULL' USING ERRCODE = '22023';
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
