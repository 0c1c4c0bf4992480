-- ================================================================ module: batch partition resolution
-- queen.resolve_partitions: queen.resolve_partition for many (queue, partition) pairs in one
-- statement, so a sidecar flush that meets many new partitions pays one round trip and one
-- commit instead of one transaction per partition.
--
-- Locking protocol (the same creation rule as queen.sql's): the pairs that do not exist yet are
-- created one by one through queen.resolve_partition, sorted by (queue, partition) (collation
-- "C"), queue row first, then partition row: the global creation order queen.transaction uses,
-- so two batches (or a batch and a transaction) creating overlapping sets wait on each other's
-- uncommitted unique-index entries in one order and cannot deadlock. No partition row lock is
-- taken here (creation only ever happens before partition locks). A pair named twice is created
-- once; the UNIQUE constraints make two sessions racing on one pair create it once.

-- For every input position i (0-based): the partition's id, its queue's window, its
-- last_offset and txns_start, created (with its queue) when missing.
CREATE FUNCTION queen.resolve_partitions(p_queues text[], p_partitions text[])
RETURNS TABLE (idx int, partition_id bigint, dedup_window_seconds int, last_offset bigint,
               txns_start bigint)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n      int := COALESCE(cardinality(p_queues), 0);
    v_pair   record;
    v_found  int;
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
    LOOP
        -- create what is missing, in the global creation order
        FOR v_pair IN
            SELECT d.q, d.p
              FROM (SELECT DISTINCT u.q, u.p FROM unnest(p_queues, p_partitions) AS u(q, p)) d
             WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions lp
                                 JOIN queen.queues qq ON qq.id = lp.queue_id
                                WHERE qq.name = d.q AND lp.name = d.p)
             ORDER BY d.q COLLATE "C", d.p COLLATE "C"
        LOOP
            PERFORM 1 FROM queen.resolve_partition(v_pair.q, v_pair.p);
        END LOOP;
        -- every position answered from one snapshot; a queue dropped meanwhile: again
        SELECT count(*) INTO v_found
          FROM unnest(p_queues, p_partitions) AS u(q, p)
          JOIN queen.queues qq ON qq.name = u.q
          JOIN queen.log_partitions lp ON lp.queue_id = qq.id AND lp.name = u.p;
        EXIT WHEN v_found = v_n;
    END LOOP;
    RETURN QUERY
        SELECT (u.i - 1)::int, lp.id, qq.dedup_window_seconds, lp.last_offset, lp.txns_start
          FROM unnest(p_queues, p_partitions) WITH ORDINALITY AS u(q, p, i)
          JOIN queen.queues qq ON qq.name = u.q
          JOIN queen.log_partitions lp ON lp.queue_id = qq.id AND lp.name = u.p
         ORDER BY u.i;
END
$$;

REVOKE ALL ON FUNCTION queen.resolve_partitions(text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.resolve_partitions(text[], text[]) TO queen_writer;
