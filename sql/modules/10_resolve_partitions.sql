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
-- queen.push_segments_named (so the resolution exists once).
CREATE FUNCTION queen.resolve_partitions_core(p_queues text[], p_partitions text[])
RETURNS TABLE (idx int, partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n      int := COALESCE(cardinality(p_queues), 0);
    v_pair   record;
    v_pid    bigint[];
    v_win    int[];
    v_last   bigint[];
    v_start  bigint[];
    v_miss   int[];
    v_again  int[];
    v_i      int;
    v_id     bigint;
    v_w      int;
    v_lo     bigint;
    v_ts     bigint;
BEGIN
    IF p_queues IS NULL OR p_partitions IS NULL OR cardinality(p_partitions) <> v_n
       OR array_ndims(p_queues) > 1 OR array_ndims(p_partitions) > 1 THEN
        RAISE EXCEPTION 'queues and partitions must be one-dimensional arrays of the same length'
            USING ERRCODE = '22023';
    END IF;
    IF v_n > 10000 THEN
        RAISE EXCEPTION 'at most 10000 partitions per call (got %)', v_n USING ERRCODE = '22023';
    END IF;
    IF v_n = 0 THEN
        RETURN;
    END IF;
    IF array_position(p_queues, NULL) IS NOT NULL OR '' = ANY (p_queues) THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF array_position(p_partitions, NULL) IS NOT NULL OR '' = ANY (p_partitions) THEN
        RAISE EXCEPTION 'partition name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queues);  -- 42501 for a reserved queue name
    p_queues := ARRAY(SELECT unnest(p_queues));  -- subscripts from 1 whatever the input's
    p_partitions := ARRAY(SELECT unnest(p_partitions));
    v_miss := ARRAY(SELECT generate_series(1, v_n));
    LOOP
        -- one unique-index lookup per position (a plan that cannot degrade into scanning a
        -- queue's partitions whatever the statistics say)
        v_again := '{}';
        FOREACH v_i IN ARRAY v_miss LOOP
            SELECT lp.id, qq.dedup_window_seconds, lp.last_offset, lp.txns_start
              INTO v_id, v_w, v_lo, v_ts
              FROM queen.queues qq JOIN queen.log_partitions lp ON lp.queue_id = qq.id
             WHERE qq.name = p_queues[v_i] AND lp.name = p_partitions[v_i];
            IF FOUND THEN
                v_pid[v_i] := v_id;
                v_win[v_i] := v_w;
                v_last[v_i] := v_lo;
                v_start[v_i] := v_ts;
            ELSE
                v_again := v_again || v_i;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(v_again) = 0;
        v_miss := v_again;
        -- create what is missing, in the global creation order (then look again: a queue
        -- dropped meanwhile makes another round)
        FOR v_pair IN
            SELECT DISTINCT p_queues[m] COLLATE "C" AS q, p_partitions[m] COLLATE "C" AS p
              FROM unnest(v_miss) AS m ORDER BY 1, 2
        LOOP
            -- queen.resolve_partition's two inserts (queue row first), inline
            INSERT INTO queen.queues (name) VALUES (v_pair.q) ON CONFLICT (name) DO NOTHING;
            INSERT INTO queen.log_partitions (queue_id, name)
                SELECT qq.id, v_pair.p FROM queen.queues qq WHERE qq.name = v_pair.q
                ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING;
        END LOOP;
    END LOOP;
    RETURN QUERY SELECT (g - 1)::int, v_pid[g], v_win[g], v_last[g], v_start[g]
                   FROM generate_series(1, v_n) AS g;
END
$$;

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
-- global creation order) and then every segment is pushed by queen.push_segments in the same
-- transaction (its locks: ascending partition id). One round trip and one commit for a flush
-- of new partitions. Rows: push_segments' answer rows (idx >= 0), then one row per named
-- segment with idx = -1 carrying its partition's metadata read after the push, under the row
-- lock push_segments holds until commit (so last_offset is exactly the committed state).
-- p_verified, p_windows and p_hints mean what they mean for queen.push_segments and are
-- checked by it (22023 for a malformed hint): a segment's vouch and hints apply to its
-- partition once resolved, so a caller that knows a partition (its id) but not yet whether
-- the others exist still sends its block cache's hinted vouch. A hint that does not confirm
-- sends its segment to the full probe; a wrong hint never changes a verdict.
-- It runs without the per-backend probe cache (queen.probe_cache off while it runs, set
-- back before it returns; an error rolls the setting back with the transaction): the
-- sidecar sends here the partitions its memo does not hold (first contacts, and partitions
-- met too long ago to be memoised or held by its block cache), which that cache would learn
-- for a single use while its upkeep grows with every partition it holds; the full probe then
-- reads the partition's in-window rows through the created_at index. Only how much is read
-- changes, never an answer.
CREATE FUNCTION queen.push_segments_named(p_partition_ids bigint[], p_queues text[],
    p_partitions text[], p_hashes bytea[], p_segments bytea[], p_verified bigint[],
    p_windows int[], p_hints bytea[] DEFAULT NULL)
RETURNS TABLE (seg int, idx int, status text, message_id uuid, message_offset bigint,
               partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n     int := COALESCE(cardinality(p_partition_ids), 0);
    v_pids  bigint[] := p_partition_ids;
    v_pos   int[];
    v_q     text[];
    v_p     text[];
    v_r     record;
    v_cache text := COALESCE(pg_catalog.current_setting('queen.probe_cache', true), 'on');
BEGIN
    IF p_partition_ids IS NULL OR p_queues IS NULL OR p_partitions IS NULL
       OR cardinality(p_queues) <> v_n OR cardinality(p_partitions) <> v_n THEN
        RAISE EXCEPTION 'partition ids, queues and partitions must be arrays of the same length'
            USING ERRCODE = '22023';
    END IF;
    v_pids := ARRAY(SELECT unnest(p_partition_ids));  -- subscripts from 1 whatever the input's
    p_queues := ARRAY(SELECT unnest(p_queues));
    p_partitions := ARRAY(SELECT unnest(p_partitions));
    SELECT array_agg(i ORDER BY i), array_agg(p_queues[i] ORDER BY i),
           array_agg(p_partitions[i] ORDER BY i)
      INTO v_pos, v_q, v_p
      FROM generate_subscripts(v_pids, 1) AS i
     WHERE v_pids[i] IS NULL;
    IF v_pos IS NOT NULL THEN
        FOR v_r IN SELECT r.idx, r.partition_id FROM queen.resolve_partitions_core(v_q, v_p) r LOOP
            v_pids[v_pos[v_r.idx + 1]] := v_r.partition_id;
        END LOOP;
    END IF;
    PERFORM pg_catalog.set_config('queen.probe_cache', 'off', true);
    RETURN QUERY
        SELECT s.seg, s.idx, s.status, s.message_id, s.message_offset,
               NULL::bigint, NULL::int, NULL::bigint, NULL::bigint
          FROM queen.push_segments(v_pids, p_hashes, p_segments, p_verified, p_windows,
                                    p_hints) s;
    PERFORM pg_catalog.set_config('queen.probe_cache', v_cache, true);
    -- a new statement: its snapshot sees this transaction's pushes
    IF v_pos IS NOT NULL THEN
        RETURN QUERY
            SELECT (i - 1)::int, -1, NULL::text, NULL::uuid, NULL::bigint,
                   lp.id, qq.dedup_window_seconds, lp.last_offset, lp.txns_start
              FROM unnest(v_pos) AS i
              JOIN queen.log_partitions lp ON lp.id = v_pids[i]
              JOIN queen.queues qq ON qq.id = lp.queue_id
             ORDER BY i;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[],
                                                 bigint[], int[], bytea[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[],
                                                    bigint[], int[], bytea[]) TO queen_writer;
