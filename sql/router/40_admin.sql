-- ================================================================ operations: shards and moves
-- queen.set_slot_count (before the first shard), queen.add_shard, queen.move_slot. The calls to
-- one named shard go through PL/Proxy's CONNECT to the shard's connection string (these
-- functions get no grant: a connection string given by a caller would reach any server).
--
-- Locking protocol: add_shard and move_slot lock queen.router_config's row first (FOR UPDATE:
-- one change of the map at a time), then the rows they change. A move's fence on the source
-- (queen.shard_fence_slot) is its own remote transaction, committed before anything is copied.

-- The cluster's configuration row, created with the defaults when missing, locked FOR UPDATE
-- (the first lock of every change of the map; a concurrent first change waits on the insert).
CREATE OR REPLACE FUNCTION queen.router_config_lock() RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO queen.router_config DEFAULT VALUES ON CONFLICT (one) DO NOTHING;
    PERFORM 1 FROM queen.router_config FOR UPDATE;
END
$$;

-- ---------------------------------------------------------------- calls to one shard
CREATE OR REPLACE FUNCTION queen.remote_join(p_conn text, p_shard text, p_slot_count int, p_id_base bigint)
    RETURNS jsonb
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.shard_join(p_shard, p_slot_count, p_id_base); $$;

CREATE OR REPLACE FUNCTION queen.remote_own_slots(p_conn text, p_slots int[]) RETURNS int
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.shard_own_slots(p_slots); $$;

CREATE OR REPLACE FUNCTION queen.remote_partition_total(p_conn text) RETURNS bigint
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT count(*)::bigint FROM queen.log_partitions; $$;

CREATE OR REPLACE FUNCTION queen.remote_slot_state(p_conn text, p_slot int) RETURNS text
LANGUAGE plproxy AS $$
    CONNECT p_conn;
    SELECT (SELECT s.state FROM queen.shard_slots s WHERE s.slot = p_slot) AS remote_slot_state;
$$;

CREATE OR REPLACE FUNCTION queen.remote_fence(p_conn text, p_slot int) RETURNS bigint
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.shard_fence_slot(p_slot); $$;

CREATE OR REPLACE FUNCTION queen.remote_unfence(p_conn text, p_slot int) RETURNS void
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.shard_unfence_slot(p_slot); $$;

CREATE OR REPLACE FUNCTION queen.remote_export(p_conn text, p_slot int)
    RETURNS TABLE (tbl text, row_data jsonb)
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT * FROM queen.slot_export(p_slot); $$;

CREATE OR REPLACE FUNCTION queen.remote_import(p_conn text, p_slot int, p_tbls text[], p_rows jsonb[])
    RETURNS bigint
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.slot_import(p_slot, p_tbls, p_rows); $$;

CREATE OR REPLACE FUNCTION queen.remote_drop(p_conn text, p_slot int) RETURNS bigint
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.slot_drop(p_slot); $$;

-- The shard's connection string (42704 for an unknown shard).
CREATE OR REPLACE FUNCTION queen.shard_conninfo(p_shard text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v text;
BEGIN
    SELECT s.conninfo INTO v FROM queen.router_shards s WHERE s.name = p_shard;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist', p_shard USING ERRCODE = '42704';
    END IF;
    RETURN v;
END
$$;

-- ---------------------------------------------------------------- the cluster
-- The slot count of a cluster without shards yet (a power of two, 1..65536; 55000 once a shard
-- is added).
CREATE OR REPLACE FUNCTION queen.set_slot_count(p_slot_count int) RETURNS int
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM queen.router_config_lock();
    IF queen.slot_count() = p_slot_count THEN
        RETURN p_slot_count;
    END IF;
    IF EXISTS (SELECT 1 FROM queen.router_shards) THEN
        RAISE EXCEPTION 'the slot count is fixed once a shard is added' USING ERRCODE = '55000';
    END IF;
    IF p_slot_count IS NULL OR p_slot_count < 1 OR p_slot_count > 65536
       OR (p_slot_count & (p_slot_count - 1)) <> 0 THEN
        RAISE EXCEPTION 'slot count % is not a power of two between 1 and 65536', p_slot_count
            USING ERRCODE = '22023';
    END IF;
    UPDATE queen.router_config SET slot_count = p_slot_count, map_version = map_version + 1;
    RETURN p_slot_count;
END
$$;

-- Add a shard (a server with the queen extension). It joins the cluster (its partition ids are
-- drawn from its own range). The first shard owns every slot; while the cluster holds no
-- partition at all, every add spreads the slots over the shards again (slot s on the shard
-- added (s mod n)-th); once it holds data, a new shard gets slots only by queen.move_slot.
-- Answers {"shard", "slots"}: how many slots it owns. 42710 for a name already added.
CREATE OR REPLACE FUNCTION queen.add_shard(p_name text, p_conninfo text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n       int;
    v_ordinal int;
    v_slots   int;
    v_total   bigint := 0;
    v_s       record;
BEGIN
    PERFORM queen.router_config_lock();
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9_]+$' THEN
        RAISE EXCEPTION 'a shard name is letters, digits and _' USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM queen.router_shards s WHERE s.name = p_name) THEN
        RAISE EXCEPTION 'shard "%" exists already', p_name USING ERRCODE = '42710';
    END IF;
    v_ordinal := COALESCE((SELECT max(s.ordinal) FROM queen.router_shards s), 0) + 1;
    v_slots := queen.slot_count();
    PERFORM queen.remote_join(p_conninfo, p_name, v_slots, (v_ordinal - 1)::bigint << 40);
    INSERT INTO queen.router_shards (name, conninfo, ordinal) VALUES (p_name, p_conninfo, v_ordinal);
    FOR v_s IN SELECT s.conninfo FROM queen.router_shards s LOOP
        v_total := v_total + queen.remote_partition_total(v_s.conninfo);
    END LOOP;
    IF v_total = 0 THEN  -- an empty cluster: spread every slot over the shards
        v_n := v_ordinal;
        DELETE FROM queen.router_slots;
        INSERT INTO queen.router_slots (slot, shard)
            SELECT g, s.name FROM generate_series(0, v_slots - 1) g
              JOIN queen.router_shards s ON s.ordinal = (g % v_n) + 1;
        FOR v_s IN SELECT s.name, s.conninfo FROM queen.router_shards s ORDER BY s.ordinal LOOP
            PERFORM queen.remote_own_slots(v_s.conninfo,
                (SELECT COALESCE(array_agg(m.slot ORDER BY m.slot), '{}') FROM queen.router_slots m
                  WHERE m.shard = v_s.name));
        END LOOP;
    ELSE
        PERFORM queen.remote_own_slots(p_conninfo, '{}');
    END IF;
    UPDATE queen.router_config SET map_version = map_version + 1;
    RETURN jsonb_build_object('shard', p_name,
                              'slots', (SELECT count(*) FROM queen.router_slots m WHERE m.shard = p_name));
END
$$;

-- Move a slot to another shard with everything of its partitions (messages, offsets, hashes,
-- consumer positions, producer states, view state); a procedure, since each step commits:
--   1. fence the source (its own remote transaction: from then no write of the slot is stored
--      there; writes of the slot get 55Q02 and are safe to retry);
--   2. export there and import on the target in one remote transaction (the target owns the
--      slot when it commits);
--   3. switch the map (version bump; commit): writes go to the target, a late one reaching the
--      source gets 55Q01 and goes to the target after a map refresh;
--   4. drop the slot on the source.
-- Other slots never pause. Run again after a failure, it goes on where the move stopped (a
-- move given up before step 3 unfences the source). 42704 unknown shard, 22023 bad slot.
-- (No pinned search_path: a procedure with a SET clause may not COMMIT, as for
-- queen.run_retention_procedure; every name in it is schema-qualified.)
CREATE OR REPLACE PROCEDURE queen.move_slot(p_slot integer, p_to_shard text)
LANGUAGE plpgsql
AS $$
DECLARE
    v_from     text;
    v_from_c   text;
    v_to_c     text;
    v_move     bigint;
    v_tbls     text[];
    v_rows     jsonb[];
    v_n        bigint;
    v_parts    bigint;
    v_state    text;
    v_pending  record;
BEGIN
    IF p_slot IS NULL OR p_slot < 0 OR p_slot >= queen.slot_count() THEN
        RAISE EXCEPTION 'slot % is not in [0, %)', p_slot, queen.slot_count() USING ERRCODE = '22023';
    END IF;
    v_to_c := queen.shard_conninfo(p_to_shard);
    v_from := queen.slot_shard(p_slot);
    IF v_from = p_to_shard THEN
        -- already there: finish a move that stopped after its switch (drop on the source)
        FOR v_pending IN SELECT m.id, m.from_shard FROM queen.router_moves m
                          WHERE m.slot = p_slot AND m.to_shard = p_to_shard AND m.phase = 'switched' LOOP
            PERFORM queen.remote_drop(queen.shard_conninfo(v_pending.from_shard), p_slot);
            UPDATE queen.router_moves SET phase = 'done', finished_at = clock_timestamp()
             WHERE id = v_pending.id;
        END LOOP;
        RETURN;
    END IF;
    v_from_c := queen.shard_conninfo(v_from);
    INSERT INTO queen.router_moves (slot, from_shard, to_shard, phase)
        VALUES (p_slot, v_from, p_to_shard, 'fencing') RETURNING id INTO v_move;
    COMMIT;
    -- 1. the fence
    v_parts := queen.remote_fence(v_from_c, p_slot);
    UPDATE queen.router_moves SET phase = 'fenced', fenced_at = clock_timestamp(), partitions = v_parts
     WHERE id = v_move;
    COMMIT;
    -- 2. the copy (skipped when a previous run imported already)
    BEGIN
        v_state := queen.remote_slot_state(v_to_c, p_slot);
        IF v_state IS NULL THEN
            SELECT array_agg(e.tbl ORDER BY e.o), array_agg(e.row_data ORDER BY e.o)
              INTO v_tbls, v_rows
              FROM queen.remote_export(v_from_c, p_slot) WITH ORDINALITY e(tbl, row_data, o);
            v_n := queen.remote_import(v_to_c, p_slot, COALESCE(v_tbls, '{}'), COALESCE(v_rows, '{}'));
        END IF;
    EXCEPTION WHEN OTHERS THEN
        PERFORM queen.remote_unfence(v_from_c, p_slot);
        UPDATE queen.router_moves SET phase = 'failed', error = SQLERRM, finished_at = clock_timestamp()
         WHERE id = v_move;
        COMMIT;
        RAISE;
    END;
    -- 3. the switch
    PERFORM queen.router_config_lock();
    UPDATE queen.router_slots SET shard = p_to_shard WHERE slot = p_slot;
    UPDATE queen.router_config SET map_version = map_version + 1;
    UPDATE queen.router_moves SET phase = 'switched', switched_at = clock_timestamp(), rows_moved = v_n
     WHERE id = v_move;
    COMMIT;
    -- 4. the source's copy goes
    PERFORM queen.remote_drop(v_from_c, p_slot);
    UPDATE queen.router_moves SET phase = 'done', finished_at = clock_timestamp() WHERE id = v_move;
    COMMIT;
END
$$;

-- The moves, newest first.
CREATE OR REPLACE FUNCTION queen.slot_moves() RETURNS SETOF queen.router_moves
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM queen.router_moves ORDER BY id DESC $$;
