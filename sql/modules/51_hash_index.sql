-- ================================================================ module: the hash index (opt-in)
-- An index that finds a hash (issue 28): GIN over each hash-carrying segment row's keys
-- (queen.hash_keys: 64 bits of each 16-byte hash mixed with the partition,
-- src/core/probe/hash_key.h). When it exists, a push whose window may hold more than
-- queen.probe_index_min_hashes hashes looks its messages up in it instead of reading the window
-- or hydrating a probe cache from it (src/pg/probe/indexed_probe.cpp): a few index pages per
-- message, however large the window, whether or not a cache holds it (a full shared cache, a
-- cold one after a restart or a failover, a server without preloading). The price is paid by
-- every push: one GIN entry per message (docs/push-path.md, "The hash index", has the measured
-- WAL and throughput), so it is off unless an administrator turns it on. fastupdate off: no
-- pending list that every probe would have to read. Partial: rows without hashes (window-0
-- appends, expired hashes) are never probed.

-- The index's keys of one segment row, in row order. IMMUTABLE: the keys depend on the
-- arguments only (the index expression).
CREATE OR REPLACE FUNCTION queen.hash_keys(p_partition_id bigint, p_hashes bytea) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'queen_hash_keys_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Turn the hash index on (build it over every retained row; pushes wait for the build, which
-- holds a SHARE lock on queen.log_segments) or off (drop it). Returns whether it is on. A large
-- table can be indexed without blocking pushes by running, outside a transaction, the CREATE
-- INDEX CONCURRENTLY statement in docs/push-path.md (same name and definition).
--
-- Locks: SHARE on queen.log_segments while building (CREATE INDEX), ACCESS EXCLUSIVE on the
-- index's table while dropping; taken after no other queen lock, held to the end of the caller's
-- transaction.
CREATE OR REPLACE FUNCTION queen.hash_index(p_enabled boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_on boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                             WHERE c.relname = 'log_segments_hash_keys_idx'
                               AND c.relnamespace = 'queen'::pg_catalog.regnamespace);
BEGIN
    IF p_enabled IS NULL THEN
        RAISE EXCEPTION 'queen.hash_index: enabled must be true or false'
            USING ERRCODE = '22023';
    END IF;
    IF p_enabled AND NOT v_on THEN
        BEGIN
            CREATE INDEX log_segments_hash_keys_idx ON queen.log_segments
                USING gin (queen.hash_keys(partition_id, hashes)) WITH (fastupdate = off)
                WHERE hashes IS NOT NULL;
        EXCEPTION WHEN duplicate_table THEN
            NULL;  -- built meanwhile by another caller
        END;
    ELSIF NOT p_enabled AND v_on THEN
        BEGIN
            DROP INDEX queen.log_segments_hash_keys_idx;
        EXCEPTION WHEN undefined_object OR undefined_table THEN
            NULL;  -- dropped meanwhile by another caller
        END;
    END IF;
    RETURN p_enabled;
END $$;
