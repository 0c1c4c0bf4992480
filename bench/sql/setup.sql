-- The benchmark's own schema: the two baselines' tables, the pool of pre-made hash blobs that
-- fills a partition's window before a large-window measurement, and the helpers run.sh calls
-- between measurements (prefill, cleanup, window size). Loaded into the throwaway database
-- after CREATE EXTENSION queen (when available) and before plref.sql.
CREATE SCHEMA bench;

-- Variant 1: plain INSERT, one row per message, no index at all.
CREATE TABLE bench.plain_msgs (
    partition_id int         NOT NULL,
    txn          text        NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Variant 2: the same rows with a unique (partition, transactionId) index, for ON CONFLICT.
CREATE TABLE bench.oc_msgs (
    partition_id int         NOT NULL,
    txn          text        NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (partition_id, txn)
);

-- Pre-made hash blobs: row k holds 100 distinct 16-byte hashes (md5 of "k:j"), so a window of N
-- hashes is the first N/100 rows. md5 output is as uniform as xxh3's and never equals the hash
-- of a transactionId the client sends, so prefilled hashes never match a pushed one.
CREATE TABLE bench.hash_blobs (
    k      int PRIMARY KEY,
    hashes bytea NOT NULL
);

-- Fill bench.hash_blobs with enough rows for p_hashes hashes (100 per row).
CREATE FUNCTION bench.make_hash_blobs(p_hashes bigint) RETURNS void
LANGUAGE sql AS $$
    TRUNCATE bench.hash_blobs;
    INSERT INTO bench.hash_blobs (k, hashes)
    SELECT k, (SELECT string_agg(decode(md5(k || ':' || j), 'hex'), ''::bytea ORDER BY j)
               FROM generate_series(0, 99) AS j)
    FROM generate_series(0, (p_hashes / 100)::int - 1) AS k;
$$;

-- Create p_parts partitions named p_prefix || i in a queen queue (window already configured by
-- the caller) and give each p_hashes hashes in its window: segment rows of 100 hashes each
-- without data (data = '', as retention leaves a segment whose hashes are still in the window),
-- offsets 0 .. p_hashes-1, created_at = now(), and the allocator moved past them; log_start moves
-- past the prefilled offsets as if retention had already removed their data.
CREATE FUNCTION bench.prefill_queen(p_queue text, p_prefix text, p_parts int, p_hashes bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_pid bigint;
    v_hash_index text;
BEGIN
    -- 0.4.0's hash index (GIN over queen.hash_keys) is dropped for the load and built again
    -- after it, with its own definition: one sorted build instead of p_parts x p_hashes random
    -- entry inserts (the same index, as the ON CONFLICT table's unique index is rebuilt).
    SELECT pg_get_indexdef(i.indexrelid) INTO v_hash_index
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname = 'log_segments_hash_keys_idx'
       AND c.relnamespace = 'queen'::regnamespace;
    IF v_hash_index IS NOT NULL AND p_hashes > 0 THEN
        DROP INDEX queen.log_segments_hash_keys_idx;
    END IF;
    FOR i IN 0 .. p_parts - 1 LOOP
        SELECT r.partition_id INTO v_pid FROM queen.resolve_partition(p_queue, p_prefix || i) AS r;
        IF p_hashes > 0 THEN
            INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at,
                                            message_count, data, hashes)
            SELECT v_pid, k * 100::bigint, k * 100::bigint + 99, now(), 100, ''::bytea, hashes
            FROM bench.hash_blobs WHERE k < p_hashes / 100;
            UPDATE queen.log_partitions
               SET last_offset = p_hashes - 1, log_start = p_hashes
             WHERE id = v_pid;
        END IF;
    END LOOP;
    IF v_hash_index IS NOT NULL AND p_hashes > 0 THEN
        SET LOCAL maintenance_work_mem = '1GB';
        EXECUTE v_hash_index;
    END IF;
END $$;

-- The same for the PL/pgSQL reference's own tables.
CREATE FUNCTION bench.prefill_plref(p_queue text, p_prefix text, p_parts int, p_hashes bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_pid bigint;
BEGIN
    FOR i IN 0 .. p_parts - 1 LOOP
        v_pid := plref.resolve_partition(p_queue, p_prefix || i);
        IF p_hashes > 0 THEN
            INSERT INTO plref.log_txns (partition_id, base_offset, end_offset, created_at, hashes)
            SELECT v_pid, k * 100::bigint, k * 100::bigint + 99, now(), hashes
            FROM bench.hash_blobs WHERE k < p_hashes / 100;
            UPDATE plref.log_partitions
               SET last_offset = p_hashes - 1, log_start = p_hashes
             WHERE id = v_pid;
        END IF;
    END LOOP;
END $$;

-- Average number of offsets allocated per partition of one measurement (= hashes in its window,
-- since nothing ages out during a run): prefill plus what the measurement pushed.
CREATE FUNCTION bench.window_size(p_kind text, p_prefix text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    IF p_kind = 'queen' THEN
        SELECT avg(last_offset + 1)::bigint INTO v FROM queen.log_partitions
         WHERE starts_with(name, p_prefix);
    ELSE
        SELECT avg(last_offset + 1)::bigint INTO v FROM plref.log_partitions
         WHERE starts_with(name, p_prefix);
    END IF;
    RETURN coalesce(v, 0);
END $$;
