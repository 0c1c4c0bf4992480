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
