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
            INSERT INTO queen.queues (name, dedup_window_seconds, retention_seconds, dedup_by,
                                      encryption_enabled)
            SELECT r.name, r.dedup_window_seconds, r.retention_seconds, r.dedup_by,
                   COALESCE(r.encryption_enabled, false)
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
