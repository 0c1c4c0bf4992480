-- ================================================================ the map and its readers
-- The pinned read API (the sidecar's --router mode reads it): shards(), slot_map(),
-- map_version(), slot_count(), queue_placement(). And PL/Proxy's cluster configuration
-- functions for the cluster 'queen': one PL/Proxy partition per slot, each the connection
-- string of the slot's shard (one string repeats: RUN ON ALL runs once per shard).

CREATE OR REPLACE FUNCTION queen.shards() RETURNS TABLE (name text, conninfo text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT s.name, s.conninfo FROM queen.router_shards s ORDER BY s.ordinal $$;

CREATE OR REPLACE FUNCTION queen.slot_map() RETURNS TABLE (slot int, shard text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT m.slot, m.shard FROM queen.router_slots m ORDER BY m.slot $$;

CREATE OR REPLACE FUNCTION queen.map_version() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT COALESCE((SELECT c.map_version FROM queen.router_config c), 1) $$;

CREATE OR REPLACE FUNCTION queen.slot_count() RETURNS int
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT COALESCE((SELECT c.slot_count FROM queen.router_config c), 64) $$;

CREATE OR REPLACE FUNCTION queen.queue_placement() RETURNS TABLE (queue text, single_slot boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT q.queue, q.single_slot FROM queen.router_queues q ORDER BY q.queue $$;

-- The placement hash (the same C function as the queen extension's: src/core/common/slot.h).
CREATE OR REPLACE FUNCTION queen.slot_of(p_queue text, p_partition text) RETURNS integer
    AS 'MODULE_PATHNAME', 'queen_slot_of_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION queen.slot_of(p_queue text, p_partition text, p_slot_count integer)
    RETURNS integer
    AS 'MODULE_PATHNAME', 'queen_slot_of_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION queen.txn_hash(text) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_txn_hash_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The slot of a queue's partition, its placement applied (a NULL name routes to slot 0,
-- whose shard answers the shard's own 22023).
CREATE OR REPLACE FUNCTION queen.route_slot(p_queue text, p_partition text) RETURNS int
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(queen.slot_of(p_queue,
                                  CASE WHEN COALESCE((SELECT q.single_slot FROM queen.router_queues q
                                                       WHERE q.queue = p_queue), false)
                                       THEN '' ELSE p_partition END,
                                  queen.slot_count()), 0)
$$;

-- The slot of a stream (streams are partitions of the queue __queen_streams, named by stream).
CREATE OR REPLACE FUNCTION queen.route_stream(p_name text) RETURNS int
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(queen.slot_of('__queen_streams', p_name,
                                  queen.slot_count()), 0)
$$;

-- The slot of a dedup view: its queue's (single_slot) slot; 42704 for an unknown view.
CREATE OR REPLACE FUNCTION queen.route_view(p_name text) RETURNS int
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queue text;
BEGIN
    SELECT v.queue INTO v_queue FROM queen.router_views v WHERE v.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    RETURN queen.route_slot(v_queue, '');
END
$$;

-- The shard owning a slot.
CREATE OR REPLACE FUNCTION queen.slot_shard(p_slot int) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT m.shard FROM queen.router_slots m WHERE m.slot = p_slot $$;

-- ---------------------------------------------------------------- PL/Proxy's configuration
CREATE SCHEMA IF NOT EXISTS plproxy;

-- The cluster's version: the map's (PL/Proxy reloads the partitions when it changes).
CREATE OR REPLACE FUNCTION plproxy.get_cluster_version(p_cluster_name text) RETURNS int4
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_cluster_name <> 'queen' THEN
        RAISE EXCEPTION 'unknown cluster "%"', p_cluster_name USING ERRCODE = '42704';
    END IF;
    RETURN (queen.map_version() % 2147483647)::int4;
END
$$;

-- One connection string per slot, in slot order (the slot count is a power of two).
CREATE OR REPLACE FUNCTION plproxy.get_cluster_partitions(p_cluster_name text) RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_cluster_name <> 'queen' THEN
        RAISE EXCEPTION 'unknown cluster "%"', p_cluster_name USING ERRCODE = '42704';
    END IF;
    IF (SELECT count(*) FROM queen.router_slots) <> queen.slot_count() THEN
        RAISE EXCEPTION 'the cluster has no shard yet' USING ERRCODE = '55000',
            HINT = 'Add one: SELECT queen.add_shard(name, conninfo).';
    END IF;
    RETURN QUERY SELECT s.conninfo FROM queen.router_slots m
                   JOIN queen.router_shards s ON s.name = m.shard ORDER BY m.slot;
END
$$;

-- PL/Proxy's connection settings: its defaults (a connection timeout belongs in the shard's
-- connection string: connect_timeout=N).
CREATE OR REPLACE FUNCTION plproxy.get_cluster_config(IN p_cluster_name text, OUT key text, OUT val text)
RETURNS SETOF record
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT NULL::text, NULL::text WHERE false $$;
