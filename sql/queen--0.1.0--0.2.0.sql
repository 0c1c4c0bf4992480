\echo Use "ALTER EXTENSION queen UPDATE TO '0.2.0'" to load this file. \quit
-- queen 0.1.0 -> 0.2.0: the hand-written delta. The Makefile appends the replayed part of
-- sql/queen.sql (every function, the pg_dump registrations, roles and grants) and the modules
-- (new in 0.2.0) and sql/finish/privileges.sql to build sql/queen--0.1.0--0.2.0.sql.
--
-- 1. Table changes between the two versions' CREATE TABLE sections.
--    (Every later table change of sql/queen.sql must be repeated here.)
--    The window-bounded probe reads log_txns by (partition_id, created_at).
CREATE INDEX log_txns_created_idx ON queen.log_txns (partition_id, created_at);
--
-- 2. Drop every function of 0.1.0; the replayed part creates the 0.2.0 ones, so an upgraded
--    database has exactly a fresh install's functions (bodies, signatures, SECURITY DEFINER,
--    search_path, grants). Objects of users that depend on one of these functions make the
--    update fail (nothing is changed then); drop and recreate them around the update.
--    Sessions keep working: prepared statements re-plan against the new functions.
DROP FUNCTION queen.txn_hash(text);
DROP FUNCTION queen.log_unnest_hashes(bytea);
DROP FUNCTION queen.log_find_hash(bigint, bytea);
DROP FUNCTION queen.push_segment(bigint, bytea, bytea, bigint, int);
DROP FUNCTION queen.push_segments(bigint[], bytea[], bytea[], bigint[], int[]);
DROP FUNCTION queen.push(text, text, jsonb);
DROP FUNCTION queen.read(text, text, bigint, int);
DROP FUNCTION queen.probe_cache_stats();
DROP FUNCTION queen.resolve_partition(text, text);
DROP FUNCTION queen.partition_id(text, text);
DROP FUNCTION queen.configure(text, jsonb);
DROP FUNCTION queen.committed_offset(text, text, text);
DROP FUNCTION queen.ack(text, text, text, text);
DROP FUNCTION queen.transaction(jsonb);
DROP FUNCTION queen.run_retention(int);

-- ================================================================ REPLAYED BY UPGRADES
-- Everything below runs again at each ALTER EXTENSION UPDATE (after the delta dropped the old
-- version's functions): only CREATE FUNCTION/PROCEDURE, registrations, roles and grants here,
-- each of which must also succeed on a database that already holds the tables.

-- ---------------------------------------------------------------- C entry points
CREATE FUNCTION queen.txn_hash(text) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_txn_hash_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION queen.log_unnest_hashes(bytea, OUT idx int, OUT h bytea) RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'queen_log_unnest_hashes_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Earliest offset at which a hash is stored in a partition's retained log_txns rows, or NULL.
CREATE FUNCTION queen.log_find_hash(p_partition_id bigint, p_hash bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_log_find_hash_v1'
    LANGUAGE C STABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- Earliest retained offset above p_after holding a hash, or NULL (acks by transactionId; the
-- per-backend ack digest keeps its cost independent of the window: src/pg/ack_lookup.cpp).
-- Internal: no grant.
CREATE FUNCTION queen.log_find_hash_after(p_partition_id bigint, p_hash bytea, p_after bigint)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_log_find_hash_after_v1'
    LANGUAGE C STABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- p_hint(s): the hinted vouch (src/pg/push_hints.cpp). 12 bytes per hint, big-endian
-- (uint32 message index, strictly ascending; int64 offset at or below p_verified): "this
-- message's earliest in-window occurrence is at that offset". Each hinted original is
-- confirmed against the stored row; one that does not confirm sends the segment to the full
-- probe. NULL or empty: no hints. Ignored with the vouch (p_window NULL or too small).
CREATE FUNCTION queen.push_segment(p_partition_id bigint, p_hashes bytea, p_segment bytea,
                                   p_verified bigint DEFAULT -1, p_window int DEFAULT NULL,
                                   p_hint bytea DEFAULT NULL)
    RETURNS TABLE (idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_segment_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.push_segments(p_partition_ids bigint[], p_hashes bytea[],
                                    p_segments bytea[], p_verified bigint[] DEFAULT NULL,
                                    p_windows int[] DEFAULT NULL, p_hints bytea[] DEFAULT NULL)
    RETURNS TABLE (seg int, idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_segments_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.push(p_queue text, p_partition text, p_items jsonb)
    RETURNS TABLE (index int, status text, message_id uuid, transaction_id text,
                   message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.read(p_queue text, p_partition text, p_from_offset bigint, p_limit int)
    RETURNS TABLE (message_offset bigint, message_id uuid, transaction_id text, payload jsonb,
                   created_at timestamptz)
    AS 'MODULE_PATHNAME', 'queen_read_v1'
    LANGUAGE C STABLE
    SET search_path = pg_catalog, pg_temp;

-- Per-backend probe cache statistics (for tests and monitoring).
CREATE FUNCTION queen.probe_cache_stats(OUT partitions int, OUT bytes bigint, OUT hits bigint,
                                        OUT confirmed bigint, OUT fallbacks bigint,
                                        OUT rows_read bigint)
    AS 'MODULE_PATHNAME', 'queen_probe_cache_stats_v1'
    LANGUAGE C VOLATILE;

-- Per-backend counters of the hinted vouch (push_segment(s)' p_hint(s)): segments whose hints
-- were looked at, hints, segments whose hints all confirmed, segments sent to the full probe.
CREATE FUNCTION queen.push_hint_stats(OUT hinted_segments bigint, OUT hints bigint,
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
CREATE FUNCTION queen.reserved_queue_guard(p_queue text) RETURNS void
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
CREATE FUNCTION queen.reserved_queue_guard(p_queues text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM queen.reserved_queue_guard(q) FROM pg_catalog.unnest(p_queues) AS q;
END
$$;

-- ---------------------------------------------------------------- SQL-level functions

-- Find or create a partition (queue created too); the sidecar's metadata call.
CREATE FUNCTION queen.resolve_partition(p_queue text, p_partition text,
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
        INSERT INTO queen.queues (name) VALUES (p_queue) ON CONFLICT (name) DO NOTHING;
        INSERT INTO queen.log_partitions (queue_id, name)
            SELECT q.id, p_partition FROM queen.queues q WHERE q.name = p_queue
            ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING;
    END LOOP;
END
$$;

-- Look up an existing partition; 42704 when the queue or partition is unknown.
CREATE FUNCTION queen.partition_id(p_queue text, p_partition text) RETURNS bigint
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

-- Full replace of a queue's options; an omitted key returns to its default.
CREATE FUNCTION queen.configure(p_queue text, p_options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_opts    jsonb := COALESCE(p_options, '{}'::jsonb);
    v_key     text;
    v_window  int := 3600;
    v_ret     int := NULL;
    v_by      text := 'transactionId';
    v_old     int;
    v_val     jsonb;
BEGIN
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    IF jsonb_typeof(v_opts) <> 'object' THEN
        RAISE EXCEPTION 'options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR v_key IN SELECT jsonb_object_keys(v_opts) LOOP
        IF v_key NOT IN ('dedupWindowSeconds', 'retentionSeconds', 'dedupBy') THEN
            RAISE EXCEPTION 'unknown option "%"', v_key USING ERRCODE = '22023',
                HINT = 'Options are dedupWindowSeconds, retentionSeconds and dedupBy.';
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

    v_val := v_opts -> 'retentionSeconds';
    IF v_val IS NOT NULL AND jsonb_typeof(v_val) <> 'null' THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 1 OR v_val::numeric > 2147483647 THEN
            RAISE EXCEPTION 'retentionSeconds must be a whole number of seconds > 0 (or null)'
                USING ERRCODE = '22023';
        END IF;
        v_ret := v_val::int;
    END IF;

    v_val := v_opts -> 'dedupBy';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'string' OR v_val #>> '{}' NOT IN ('transactionId', 'content') THEN
            RAISE EXCEPTION 'dedupBy must be "transactionId" or "content"' USING ERRCODE = '22023';
        END IF;
        v_by := v_val #>> '{}';
    END IF;

    SELECT dedup_window_seconds INTO v_old FROM queen.queues WHERE name = p_queue FOR NO KEY UPDATE;
    IF FOUND THEN
        IF NOT (v_opts ? 'dedupWindowSeconds') AND v_old <> 3600 THEN
            RAISE NOTICE 'queue "%": dedupWindowSeconds was % and is reset to the default 3600', p_queue, v_old
                USING DETAIL = 'configure is a full replace: an omitted option returns to its default.',
                      HINT = 'Name dedupWindowSeconds in every configure call to keep it.';
        END IF;
        UPDATE queen.queues
           SET dedup_window_seconds = v_window, retention_seconds = v_ret, dedup_by = v_by,
               updated_at = now()
         WHERE name = p_queue;
    ELSE
        INSERT INTO queen.queues (name, dedup_window_seconds, retention_seconds, dedup_by)
        VALUES (p_queue, v_window, v_ret, v_by)
        ON CONFLICT (name) DO UPDATE
           SET dedup_window_seconds = EXCLUDED.dedup_window_seconds,
               retention_seconds = EXCLUDED.retention_seconds,
               dedup_by = EXCLUDED.dedup_by, updated_at = now();
    END IF;

    RETURN jsonb_build_object('queue', p_queue, 'dedupWindowSeconds', v_window,
                              'retentionSeconds', v_ret, 'dedupBy', v_by);
END
$$;

-- A consumer group's position: every offset at or below it is acked (-1: none).
CREATE FUNCTION queen.committed_offset(p_queue text, p_partition text,
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
CREATE FUNCTION queen.ack_lock_group(p_pid bigint, p_group text) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pos bigint;
BEGIN
    INSERT INTO queen.consumer_groups (partition_id, group_name)
    VALUES (p_pid, p_group) ON CONFLICT DO NOTHING;
    SELECT committed_offset INTO v_pos FROM queen.consumer_groups
     WHERE partition_id = p_pid AND group_name = p_group FOR UPDATE;
    RETURN v_pos;
END
$$;

-- Is offset p_off acked by a group whose (locked) position is p_pos? Internal.
CREATE FUNCTION queen.ack_is_acked(p_pid bigint, p_group text, p_pos bigint, p_off bigint)
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
CREATE FUNCTION queen.ack_resolve(p_pid bigint, p_group text, p_pos bigint, p_hash bytea)
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
CREATE FUNCTION queen.ack_record(p_pid bigint, p_group text, p_pos bigint, p_off bigint)
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
CREATE FUNCTION queen.ack_check_group(p_group text) RETURNS void
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
CREATE FUNCTION queen.ack(p_queue text, p_partition text, p_transaction_id text,
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
CREATE FUNCTION queen.ack_offset(p_queue text, p_partition text, p_offset bigint,
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
CREATE FUNCTION queen.ack_batch(p_queue text, p_partition text, p_items jsonb,
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
CREATE FUNCTION queen.transaction(p_ops jsonb) RETURNS jsonb
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
-- Retention deletes, per partition and oldest first, the segments older than the queue's
-- retention_seconds (when set) and the log_txns rows older than its dedup window (window 0:
-- the hash rows whose segment is gone, so acks keep resolving), never a row holding an offset
-- at or above queen.retention_floor(partition). Every purge holds that partition's row lock
-- (FOR NO KEY UPDATE), so it serializes with pushes exactly like a push does.

-- Extension point: the lowest offset retention must keep in a partition, or NULL (no floor).
-- A module that must hold messages (dedup views) replaces this with CREATE OR REPLACE.
CREATE FUNCTION queen.retention_floor(p_partition_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT NULL::bigint $$;

-- Whether a partition has anything retention may delete now (read without locking, so that
-- partitions with nothing eligible are never locked).
CREATE FUNCTION queen.retention_eligible(p_partition_id bigint, p_now timestamptz)
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
                                    WHERE s.partition_id = p.id
                                    ORDER BY s.base_offset LIMIT 1) o
                     WHERE o.created_at < p_now - make_interval(secs => q.retention_seconds)))
                OR EXISTS (
                    SELECT 1 FROM (SELECT t.created_at, t.end_offset FROM queen.log_txns t
                                    WHERE t.partition_id = p.id
                                    ORDER BY t.base_offset LIMIT 1) o
                     WHERE CASE WHEN q.dedup_window_seconds > 0
                                THEN o.created_at < p_now - make_interval(secs => q.dedup_window_seconds)
                                ELSE o.end_offset < p.log_start END)))
$$;

-- Purge one partition: lock its row, delete at most p_max_rows rows in all (segments first,
-- then hashes), advance log_start / txns_start. Returns what it deleted. Internal (no grant).
CREATE FUNCTION queen.retention_purge(p_partition_id bigint, p_max_rows int, p_now timestamptz,
                                      OUT segments_deleted int, OUT txns_deleted int)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ret   int;
    v_win   int;
    v_start bigint;
    v_floor bigint;
    v_upto  bigint;
    v_n     int;
    v_left  int := p_max_rows;
BEGIN
    segments_deleted := 0;
    txns_deleted := 0;
    SELECT q.retention_seconds, q.dedup_window_seconds INTO v_ret, v_win
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE p.id = p_partition_id FOR NO KEY UPDATE OF p;
    IF NOT FOUND THEN
        RETURN;  -- dropped meanwhile
    END IF;
    v_floor := queen.retention_floor(p_partition_id);
    -- segments: the oldest prefix older than retention (and below the floor)
    IF v_ret IS NOT NULL THEN
        SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
            SELECT s.end_offset,
                   bool_and(s.created_at < p_now - make_interval(secs => v_ret)
                            AND (v_floor IS NULL OR s.end_offset < v_floor))
                       OVER (ORDER BY s.base_offset) AS all_old
              FROM (SELECT base_offset, end_offset, created_at FROM queen.log_segments
                     WHERE partition_id = p_partition_id
                     ORDER BY base_offset LIMIT v_left) s) x
         WHERE x.all_old;
        IF v_n > 0 THEN
            DELETE FROM queen.log_segments
             WHERE partition_id = p_partition_id AND base_offset <= v_upto;
            UPDATE queen.log_partitions SET log_start = v_upto + 1 WHERE id = p_partition_id;
            segments_deleted := v_n;
            v_left := v_left - v_n;
        END IF;
    END IF;
    IF v_left <= 0 THEN
        RETURN;
    END IF;
    -- hashes: the oldest prefix older than the window (window 0: whose segment is gone)
    SELECT log_start INTO v_start FROM queen.log_partitions WHERE id = p_partition_id;
    SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
        SELECT t.end_offset,
               bool_and(CASE WHEN v_win > 0
                             THEN t.created_at < p_now - make_interval(secs => v_win)
                             ELSE t.end_offset < v_start END
                        AND (v_floor IS NULL OR t.end_offset < v_floor))
                   OVER (ORDER BY t.base_offset) AS all_old
          FROM (SELECT base_offset, end_offset, created_at FROM queen.log_txns
                 WHERE partition_id = p_partition_id
                 ORDER BY base_offset LIMIT v_left) t) x
     WHERE x.all_old;
    IF v_n > 0 THEN
        DELETE FROM queen.log_txns WHERE partition_id = p_partition_id AND base_offset <= v_upto;
        UPDATE queen.log_partitions SET txns_start = v_upto + 1 WHERE id = p_partition_id;
        txns_deleted := v_n;
    END IF;
END
$$;

-- Bounded purge in the caller's transaction: at most p_max_rows rows in all, partitions in
-- ascending id order (only those with something eligible are locked). Every lock it takes is
-- held until the caller commits: for a periodic job use queen.run_retention_procedure, which
-- commits after each partition. Returns counts.
CREATE FUNCTION queen.run_retention(p_max_rows int DEFAULT 10000) RETURNS jsonb
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
BEGIN
    IF p_max_rows IS NULL OR p_max_rows < 1 THEN
        RAISE EXCEPTION 'p_max_rows must be at least 1' USING ERRCODE = '22023';
    END IF;
    FOR v_pid IN SELECT p.id FROM queen.log_partitions p ORDER BY p.id LOOP
        EXIT WHEN v_left <= 0;
        CONTINUE WHEN NOT queen.retention_eligible(v_pid, v_now);
        SELECT * INTO v_r FROM queen.retention_purge(v_pid, v_left, v_now);
        v_parts := v_parts + 1;
        v_segs := v_segs + v_r.segments_deleted;
        v_txns := v_txns + v_r.txns_deleted;
        v_left := v_left - v_r.segments_deleted - v_r.txns_deleted;
    END LOOP;
    RETURN jsonb_build_object('segmentsDeleted', v_segs, 'txnsDeleted', v_txns,
                              'partitionsVisited', v_parts);
END
$$;

-- One step of the committing retention run: purge one batch (at most p_batch_rows rows) of the
-- next eligible partition after p_state's cursor and return the new state, or the final state
-- with "done": true when no partition is left. A partition whose batch was full is visited
-- again by the next step. p_state NULL starts a run.
CREATE FUNCTION queen.retention_step(p_state jsonb, p_batch_rows int DEFAULT 10000)
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
-- the measured ones of bench/results/retention-purge.md.
-- SECURITY INVOKER on purpose (a SECURITY DEFINER procedure may not COMMIT): everything it
-- does happens in queen.retention_step, which is SECURITY DEFINER; the body uses no unqualified
-- operator or function, so the caller's search_path cannot change it either.
CREATE PROCEDURE queen.run_retention_procedure(p_batch_rows int DEFAULT 2000,
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
-- above txns_start in a log_txns row created within the window. Read-only and unlocked: a
-- snapshot answer, not a reservation. Reads the partition's retained hashes (and, when the
-- hash is gone, the retained segments below txns_start): a diagnostic, not a hot path.
CREATE FUNCTION queen.explain(p_queue text, p_partition text, p_transaction_id text)
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
          FROM queen.log_txns t CROSS JOIN LATERAL queen.log_unnest_hashes(t.hashes) u
         WHERE t.partition_id = v_pid AND t.end_offset >= v_tstart
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
          FROM queen.log_txns t CROSS JOIN LATERAL queen.log_unnest_hashes(t.hashes) u
         WHERE t.partition_id = v_pid AND t.end_offset >= v_tstart
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
CREATE FUNCTION queen.drop_queue(p_queue text) RETURNS jsonb
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
    SELECT COALESCE(array_agg(l.id ORDER BY l.id), '{}') INTO v_pids
      FROM (SELECT id FROM queen.log_partitions WHERE queue_id = v_qid ORDER BY id FOR UPDATE) l;
    DELETE FROM queen.consumer_acks WHERE partition_id = ANY (v_pids);
    DELETE FROM queen.log_txns WHERE partition_id = ANY (v_pids);
    GET DIAGNOSTICS v_txns = ROW_COUNT;
    DELETE FROM queen.log_segments WHERE partition_id = ANY (v_pids);
    GET DIAGNOSTICS v_segs = ROW_COUNT;
    DELETE FROM queen.queues WHERE id = v_qid;  -- cascades: partitions, consumer groups, modules
    RETURN jsonb_build_object('queue', p_queue, 'partitionsDropped', cardinality(v_pids),
                              'segmentsDeleted', v_segs, 'txnsDeleted', v_txns);
END
$$;

-- ---------------------------------------------------------------- backup
-- Every table and sequence holding user data is extension configuration, so pg_dump dumps its
-- rows (and the sequences' positions) and a restore into a fresh database is complete.
SELECT pg_catalog.pg_extension_config_dump('queen.queues', '');
SELECT pg_catalog.pg_extension_config_dump('queen.queues_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_partitions', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_partitions_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_segments', '');
SELECT pg_catalog.pg_extension_config_dump('queen.log_txns', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_groups', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_acks', '');

-- ---------------------------------------------------------------- roles and privileges
-- Least privilege. Three roles (cluster-wide, so created only when absent; another database's
-- install may create them at the same moment): queen_writer (push, ack, read), queen_reader
-- (read), queen_admin (configure, retention, drop). Every function runs as the extension's owner
-- (SECURITY DEFINER) with search_path pinned to pg_catalog, pg_temp and every queen object
-- schema-qualified, so nothing in a caller's schemas can stand in for what it calls. No role
-- gets any table privilege: the functions are the only way in. Internal helpers get no grant.
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

-- Every function of the core runs as the owner with the pinned search_path (the procedure
-- cannot: a SECURITY DEFINER procedure may not COMMIT; see run_retention_procedure).
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

REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC;
GRANT USAGE ON SCHEMA queen TO queen_writer, queen_reader, queen_admin;
-- read
GRANT EXECUTE ON FUNCTION
    queen.txn_hash(text), queen.log_unnest_hashes(bytea), queen.probe_cache_stats(),
    queen.push_hint_stats(), queen.read(text, text, bigint, int), queen.partition_id(text, text),
    queen.committed_offset(text, text, text), queen.explain(text, text, text)
    TO queen_reader, queen_writer, queen_admin;
-- push and ack
GRANT EXECUTE ON FUNCTION
    queen.resolve_partition(text, text), queen.push(text, text, jsonb),
    queen.push_segment(bigint, bytea, bytea, bigint, int, bytea),
    queen.push_segments(bigint[], bytea[], bytea[], bigint[], int[], bytea[]),
    queen.ack(text, text, text, text), queen.ack_offset(text, text, bigint, text),
    queen.ack_batch(text, text, jsonb, text), queen.transaction(jsonb)
    TO queen_writer;
-- administration
GRANT EXECUTE ON FUNCTION
    queen.configure(text, jsonb), queen.run_retention(int), queen.retention_step(jsonb, int),
    queen.drop_queue(text)
    TO queen_admin;
GRANT EXECUTE ON PROCEDURE queen.run_retention_procedure(int, float8, jsonb) TO queen_admin;
-- ================================================================ module: batch partition resolution
-- queen.resolve_partitions: queen.resolve_partition for many (queue, partition) pairs in one
-- statement, so a sidecar flush that meets many new partitions pays one round trip and one
-- commit instead of one transaction per partition; queen.push_segments_named folds that
-- resolution into the push itself (one transaction for a flush of first contacts).
--
-- Locking protocol (the same creation rule as queen.sql's): the pairs that do not exist yet are
-- created one by one with queen.resolve_partition's two inserts, sorted by (queue, partition)
-- (collation "C"), queue row first, then partition row: the global creation order queen.transaction uses,
-- so two batches (or a batch and a transaction) creating overlapping sets wait on each other's
-- uncommitted unique-index entries in one order and cannot deadlock. No partition row lock is
-- taken here (creation only ever happens before partition locks). A pair named twice is created
-- once; the UNIQUE constraints make two sessions racing on one pair create it once.

-- Internal (no grant): the body of queen.resolve_partitions, also run by
-- queen.push_segments_named (so the resolution exists once: src/pg/resolve_names.cpp).
-- 22023 when the arrays are not one-dimensional of the same length, for more than 10000 pairs,
-- or for a NULL or empty name; 42501 for a reserved queue name. Lookups read the unique indexes
-- of queen.queues and queen.log_partitions (a plan that cannot degrade into scanning a queue's
-- partitions whatever the statistics say); misses are created as described above, then looked
-- up again.
CREATE FUNCTION queen.resolve_partitions_core(p_queues text[], p_partitions text[])
RETURNS TABLE (idx int, partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
AS 'MODULE_PATHNAME', 'queen_resolve_partitions_core_v1'
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- For every input position i (0-based): the partition's id, its queue's window, its
-- last_offset and txns_start, created (with its queue) when missing.
CREATE FUNCTION queen.resolve_partitions(p_queues text[], p_partitions text[])
RETURNS TABLE (idx int, partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM queen.resolve_partitions_core(p_queues, p_partitions) $$;

REVOKE ALL ON FUNCTION queen.resolve_partitions_core(text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.resolve_partitions(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.resolve_partitions(text[], text[]) TO queen_writer;

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
CREATE FUNCTION queen.push_segments_named(p_partition_ids bigint[], p_queues text[],
    p_partitions text[], p_hashes bytea[], p_segments bytea[], p_verified bigint[],
    p_windows int[], p_hints bytea[] DEFAULT NULL)
RETURNS TABLE (seg int, idx int, status text, message_id uuid, message_offset bigint,
               partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
AS 'MODULE_PATHNAME', 'queen_push_segments_named_v1'
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[],
                                                 bigint[], int[], bytea[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[],
                                                    bigint[], int[], bytea[]) TO queen_writer;
-- ================================================================ module: streams and producers
-- Durable streams with idempotent producers (Ursula's exactly-once writes). The interface is
-- docs/producers.md. A stream is one partition of the reserved queue __queen_streams (no dedup
-- window); its messages go through the shared row-locked push path (queen.stream_write ->
-- push_locked), and each (stream, producer) keeps its epoch/seq state in
-- queen.stream_producers. The decision is the pure C++ state machine of
-- src/core/producer_state.cpp, run by queen.stream_append (src/pg/producer_append.cpp).
--
-- Locking protocol (consistent with queen.sql's):
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

-- ---------------------------------------------------------------- C entry points
CREATE FUNCTION queen.blake3(bytea) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_blake3_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION queen.blake3_hex(bytea) RETURNS text
    AS 'MODULE_PATHNAME', 'queen_blake3_hex_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Append messages to a stream's partition through the row-locked push path (internal).
CREATE FUNCTION queen.stream_write(p_partition_id bigint, p_messages bytea[],
                                   OUT base_offset bigint, OUT end_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_write_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- The payloads of a stored segment (internal).
CREATE FUNCTION queen.segment_payloads(bytea) RETURNS bytea[]
    AS 'MODULE_PATHNAME', 'queen_segment_payloads_v1'
    LANGUAGE C IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- The 0-based index of the first message that is not one JSON value, or NULL (internal).
CREATE FUNCTION queen.stream_json_invalid(bytea[]) RETURNS int
    AS 'MODULE_PATHNAME', 'queen_stream_json_invalid_v1'
    LANGUAGE C IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- small helpers

-- An offset as a stream offset string: 20 zero-padded decimal digits.
CREATE FUNCTION queen.stream_offset(p_offset bigint) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.lpad(p_offset::text, 20, '0') $$;

-- Parse a stream offset string: '-1' is the start (0); otherwise exactly 20 digits (22023).
-- 'now' is resolved by the reader, not here.
CREATE FUNCTION queen.stream_offset_parse(p_offset text) RETURNS bigint
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
CREATE FUNCTION queen.stream_media_type(p_content_type text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.lower(pg_catalog.btrim(pg_catalog.split_part(p_content_type, ';', 1))) $$;

-- Reject a bad stream name (22023).
CREATE FUNCTION queen.stream_check_name(p_name text) RETURNS void
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
CREATE FUNCTION queen.stream_expired(p_ttl_seconds bigint, p_expires_at timestamptz,
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
CREATE FUNCTION queen.stream_purge(p_partition_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM queen.log_segments WHERE partition_id = p_partition_id;
    DELETE FROM queen.log_txns WHERE partition_id = p_partition_id;
    DELETE FROM queen.consumer_acks WHERE partition_id = p_partition_id;
    DELETE FROM queen.log_partitions WHERE id = p_partition_id;  -- cascades streams, producers
END
$$;

-- ---------------------------------------------------------------- create
-- Create a stream (201 created), or confirm an identical one (200 exists), or refuse another
-- configuration (409 conflict). See docs/producers.md.
CREATE FUNCTION queen.stream_create(p_name text,
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
-- src/pg/producer_append.cpp (its header comment states the locking protocol).
CREATE FUNCTION queen.stream_append(p_name text,
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
CREATE FUNCTION queen.stream_close(p_name text, p_now timestamptz DEFAULT NULL)
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
CREATE FUNCTION queen.stream_read(p_name text, p_offset text DEFAULT '-1',
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
CREATE FUNCTION queen.stream_head(p_name text, p_now timestamptz DEFAULT NULL)
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
CREATE FUNCTION queen.stream_delete(p_name text, p_now timestamptz DEFAULT NULL) RETURNS text
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
    PERFORM 1 FROM queen.log_partitions lp WHERE lp.id = v_pid FOR NO KEY UPDATE;
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

-- ---------------------------------------------------------------- privileges
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
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
    END LOOP;
END
$$;
REVOKE ALL ON queen.streams, queen.stream_producers FROM PUBLIC;
GRANT USAGE ON SCHEMA queen TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION queen.blake3(bytea), queen.blake3_hex(bytea) TO queen_writer, queen_reader;
GRANT EXECUTE ON FUNCTION queen.stream_offset(bigint), queen.stream_offset_parse(text)
    TO queen_writer, queen_reader;
GRANT EXECUTE ON FUNCTION
    queen.stream_create(text, text, bigint, timestamptz, boolean, bytea[], timestamptz),
    queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text,
                        bytea, timestamptz, boolean),
    queen.stream_close(text, timestamptz),
    queen.stream_delete(text, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION
    queen.stream_read(text, text, int, int, timestamptz),
    queen.stream_head(text, timestamptz)
    TO queen_reader, queen_writer;
-- queen.stream_append_batch: many stream appends in one call (one transaction, one commit),
-- each decided exactly as queen.stream_append decides it (src/pg/stream_append_batch.cpp).
-- Locking protocol: the names are resolved first without a lock, then the appends are decided
-- in ascending partition id order (queen's one global lock order), each stream's partition
-- row locked FOR NO KEY UPDATE once and held to the end of the transaction; the appends of one
-- stream keep their order. A name that did not resolve is decided last, by name.
CREATE FUNCTION queen.stream_append_batch(p_names text[],
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
REVOKE ALL ON FUNCTION queen.stream_append_batch(text[], int[], bytea[], text[], text[], bigint[],
    bigint[], text[], text[], boolean[], text[], bytea[], boolean[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.stream_append_batch(text[], int[], bytea[], text[], text[],
    bigint[], bigint[], text[], text[], boolean[], text[], bytea[], boolean[], timestamptz)
    TO queen_writer;
-- Forks of Durable Streams (Stream-Forked-From on PUT), built only on the public stream
-- functions of 20_producers.sql. A fork is a new stream whose first messages are a copy of its
-- source's messages before the fork offset (plus, with a sub-offset, the first bytes of the
-- message at the offset, or the next JSON elements), so it never depends on the source's data.
-- What remains of the relation is lifetime: a stream that is deleted or expires while a fork
-- of it (or a fork of a fork ...) is present becomes "gone" (410 on every request, 409 on a
-- create or a fork of it) until the last such descendant is deleted or expires; then its name
-- is free again (nothing else to collect). Every function is a typed answer, never an error
-- a client can cause. Locks: none of its own; the stream functions lock as documented there.

CREATE TABLE queen.stream_forks (
    name        text PRIMARY KEY,  -- the fork
    source      text NOT NULL,     -- the stream it was forked from
    fork_offset text NOT NULL,     -- where in the source (20 digits, before the sub-offset)
    sub_offset  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL
);
CREATE INDEX stream_forks_source ON queen.stream_forks (source);
SELECT pg_catalog.pg_extension_config_dump('queen.stream_forks', '');

-- True when the stream of that name is present (exists and has not expired) at p_now.
CREATE FUNCTION queen.fork_stream_present(p_name text, p_now timestamptz) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM queen.streams s WHERE s.name = p_name
                   AND NOT queen.stream_expired(s.ttl_seconds, s.expires_at, s.touched_at, p_now))
$$;

-- True when a fork of p_name, or a fork of one of its forks (any depth), is present.
CREATE FUNCTION queen.fork_has_present_descendant(p_name text, p_now timestamptz) RETURNS boolean
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
CREATE FUNCTION queen.fork_gone(p_name text, p_now timestamptz DEFAULT NULL) RETURNS boolean
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
CREATE FUNCTION queen.fork_create(p_name text,
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
CREATE FUNCTION queen.fork_delete(p_name text, p_now timestamptz DEFAULT NULL)
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

REVOKE ALL ON FUNCTION queen.fork_stream_present(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.fork_has_present_descendant(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.fork_gone(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.fork_create(text, text, bigint, timestamptz, boolean, bytea[],
                                                   text, text, bigint, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.fork_delete(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON queen.stream_forks FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.fork_gone(text, timestamptz) TO queen_reader, queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_create(text, text, bigint, timestamptz, boolean,
                                                      bytea[], text, text, bigint, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_delete(text, timestamptz) TO queen_writer;
-- ================================================================ dedup views (module 40)
-- Flink's Deduplicate operator as incremental views over a queue (docs/dedup-views.md).
-- The operator itself is src/core/dedup_operator.*; the glue (src/pg/dedup_views.cpp) keeps its
-- keyed state, changelog, consumed offsets, pending mini-batch and watermark in the tables
-- below, in the caller's transaction.
--
-- Locking: dedup_advance / dedup_watermark / dedup_flush take the view's queen.dedup_views row
-- FOR NO KEY UPDATE first and hold it to commit: one view's calls serialise, different views never
-- wait on each other. They take no partition lock (they only read the log). drop_dedup_view
-- takes the same row lock. A DELETE of a queue some view reads is refused (2BP01).

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
    -- state (src/core/dedup_state_cache.h) is used only while this is the token it wrote.
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
-- (FNV-1a 64 modulo the view's state_buckets, src/core/dedup_bucket.h) over at most
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
-- first_seq..last_seq) packed in seq order (src/core/dedup_changes.h: kind, key, payload as
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

-- ---------------------------------------------------------------- creating and dropping

-- Validate p_options and create the view. Bad options raise 22023; an unknown queue 42704.
CREATE FUNCTION queen.create_dedup_view(p_name text, p_source_queue text, p_options jsonb)
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
CREATE FUNCTION queen.dedup_parse_query(p_query text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'queen_dedup_parse_query_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Create a view from Flink's deduplication query shape; returns the options it recognised.
CREATE FUNCTION queen.create_dedup_view_sql(p_name text, p_query text) RETURNS jsonb
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
CREATE FUNCTION queen.drop_dedup_view(p_name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint;
BEGIN
    DELETE FROM queen.dedup_views WHERE name = p_name RETURNING id INTO v_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    DELETE FROM queen.dedup_state_buckets WHERE view_id = v_id;
    DELETE FROM queen.dedup_candidates WHERE view_id = v_id;
    DELETE FROM queen.dedup_change_blocks WHERE view_id = v_id;
    DELETE FROM queen.dedup_pending WHERE view_id = v_id;
END
$$;

-- A queue some dedup view reads cannot be deleted (queen.drop_queue included): 2BP01.
CREATE FUNCTION queen.dedup_views_guard_queue() RETURNS trigger
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
CREATE TRIGGER dedup_views_guard BEFORE DELETE ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.dedup_views_guard_queue();

-- ---------------------------------------------------------------- driving a view

CREATE FUNCTION queen.dedup_advance(p_name text, p_max_rows int DEFAULT 10000,
                                    p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_advance_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.dedup_watermark(p_name text, p_watermark bigint,
                                      p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_watermark_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.dedup_flush(p_name text, p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_flush_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- reading a view

-- The id of a view, or 42704.
CREATE FUNCTION queen.dedup_view_id(p_name text) RETURNS bigint
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
CREATE FUNCTION queen.dedup_block_changes(p_first_seq bigint, p_block bytea)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_block_changes_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Persisted changes with seq >= p_from_seq, in seq order, at most p_limit.
CREATE FUNCTION queen.dedup_changelog(p_name text, p_from_seq bigint DEFAULT 0,
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
CREATE FUNCTION queen.dedup_bucket_states(p_states bytea)
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
CREATE FUNCTION queen.dedup_state_rows(p_name text)
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
CREATE FUNCTION queen.dedup_stats(p_name text) RETURNS jsonb
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

-- Retention extension point (see sql/queen.sql): the lowest offset of the partition that some
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

-- ---------------------------------------------------------------- privileges
REVOKE ALL ON TABLE queen.dedup_views, queen.dedup_state_buckets, queen.dedup_candidates, queen.dedup_change_blocks,
    queen.dedup_offsets, queen.dedup_pending FROM PUBLIC;
REVOKE ALL ON SEQUENCE queen.dedup_views_id_seq FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.create_dedup_view(text, text, jsonb),
    queen.dedup_parse_query(text), queen.create_dedup_view_sql(text, text),
    queen.drop_dedup_view(text), queen.dedup_views_guard_queue(),
    queen.dedup_advance(text, int, timestamptz), queen.dedup_watermark(text, bigint, timestamptz),
    queen.dedup_flush(text, timestamptz), queen.dedup_view_id(text),
    queen.dedup_changelog(text, bigint, int), queen.dedup_stats(text),
    queen.dedup_block_changes(bigint, bytea), queen.dedup_bucket_states(bytea),
    queen.dedup_state_rows(text), queen.retention_floor(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.create_dedup_view(text, text, jsonb),
    queen.create_dedup_view_sql(text, text), queen.drop_dedup_view(text) TO queen_admin;
GRANT EXECUTE ON FUNCTION queen.dedup_advance(text, int, timestamptz),
    queen.dedup_watermark(text, bigint, timestamptz), queen.dedup_flush(text, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.dedup_changelog(text, bigint, int), queen.dedup_stats(text),
    queen.dedup_state_rows(text) TO queen_reader, queen_writer;
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

CREATE FUNCTION queen.probe_cache_shared(
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
CREATE FUNCTION queen.probe_cache_partitions(
    OUT partition_id bigint, OUT state text, OUT hashes bigint, OUT bytes bigint,
    OUT capacity bigint, OUT verified_upto bigint, OUT idle_ms bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'queen_probe_cache_partitions_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE VIEW queen.probe_cache AS SELECT * FROM queen.probe_cache_shared();

REVOKE ALL ON FUNCTION queen.probe_cache_shared(), queen.probe_cache_partitions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.probe_cache_shared(), queen.probe_cache_partitions()
    TO queen_reader, queen_writer, queen_admin;
GRANT SELECT ON queen.probe_cache TO queen_reader, queen_writer, queen_admin;
-- The last part of every install and upgrade script (after sql/queen.sql and the modules; see
-- the Makefile): whatever a module forgot, no routine of schema queen stays executable by
-- PUBLIC (CREATE FUNCTION grants EXECUTE to PUBLIC by default, and a SECURITY DEFINER function
-- callable by anyone would bypass the roles). Grants to queen_writer / queen_reader /
-- queen_admin made by the core and the modules are kept.
REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA queen FROM PUBLIC;
