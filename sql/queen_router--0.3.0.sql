-- queen_router (docs/scale-out.md): a router database holds the cluster's shard list and its
-- versioned slot map, and offers the queen SQL interface with the same names, arguments and
-- answers, each call sent by PL/Proxy to the shard owning its slot. The shards are ordinary
-- PostgreSQL servers with the queen extension. mk/router.mk concatenates sql/router/*.sql into
-- build/sql/queen_router--<version>.sql.
\echo Use "CREATE EXTENSION queen_router CASCADE" to load this file. \quit

-- The cluster: its slot count (a power of two, fixed once a shard is added) and the map's
-- version (bumped by every change of the shard list or the slot map; PL/Proxy and the
-- sidecar's router mode reload the map when it changes). At most one row, written by the first
-- change (queen.router_config_lock); no row means the defaults (64 slots, version 1). A row
-- inserted by CREATE EXTENSION would collide with the dumped one when a dump is restored.
CREATE TABLE queen.router_config (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    slot_count  int NOT NULL DEFAULT 64 CHECK (slot_count >= 1 AND slot_count <= 65536
                                               AND (slot_count & (slot_count - 1)) = 0),
    map_version bigint NOT NULL DEFAULT 1
);

-- The shards, in the order they were added (ordinal k draws partition ids from (k-1) * 2^40).
CREATE TABLE queen.router_shards (
    name     text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_]+$'),
    conninfo text NOT NULL,
    ordinal  int NOT NULL UNIQUE,
    added_at timestamptz NOT NULL DEFAULT now()
);

-- The slot map: every slot's owner (complete once the first shard is added).
CREATE TABLE queen.router_slots (
    slot  int PRIMARY KEY CHECK (slot >= 0),
    shard text NOT NULL REFERENCES queen.router_shards (name)
);

-- Queues configured single_slot ({"placement": "single_slot"}): every partition on the slot
-- of (queue, '').
CREATE TABLE queen.router_queues (
    queue       text PRIMARY KEY,
    single_slot boolean NOT NULL
);

-- Dedup views created through the router, and their queue (a view lives with its queue).
CREATE TABLE queen.router_views (
    name  text PRIMARY KEY,
    queue text NOT NULL
);

-- Every slot move, its phase ('fenced', 'copied', 'switched', 'done', 'failed').
CREATE TABLE queen.router_moves (
    id          bigserial PRIMARY KEY,
    slot        int NOT NULL,
    from_shard  text NOT NULL,
    to_shard    text NOT NULL,
    phase       text NOT NULL,
    rows_moved  bigint,
    partitions  bigint,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    fenced_at   timestamptz,
    switched_at timestamptz,
    finished_at timestamptz,
    error       text
);

SELECT pg_catalog.pg_extension_config_dump('queen.router_config', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_shards', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_slots', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_queues', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_views', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_moves', '');
SELECT pg_catalog.pg_extension_config_dump('queen.router_moves_id_seq', '');
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
-- ================================================================ the queen interface, routed
-- Each function has the queen extension's name, arguments and answer; PL/Proxy runs it on the
-- shard owning its slot (queen.route_slot: the partition's slot, or the queue's one slot when
-- it is single_slot; streams by stream name; views by their queue). A shard's own errors come
-- back with their SQLSTATE; a write that reaches a shard not owning its slot (a move happened
-- meanwhile) fails with 55Q01 or 55Q02 and is safe to retry. PL/Proxy runs every remote call in
-- autocommit: a router transaction does not span shards (queen.transaction is refused across
-- shards, 0A000, before anything is written).

-- ---------------------------------------------------------------- queues: by (queue, partition)
-- Each is a PL/pgSQL function computing the slot once and calling queen.<name>_on (PL/Proxy,
-- RUN ON the slot); a shard that cannot be reached fails with 08006 naming the shard
-- (queen.shard_unreachable), every other error comes back with the shard's own SQLSTATE. The
-- pairs are generated from one list (the DO block below).

-- Whether a PL/Proxy error message is a failed connection to a shard (down, or lost mid-call).
CREATE OR REPLACE FUNCTION queen.is_connection_failure(p_message text) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(p_message ~ '(PQconnectPoll|PQconnectStart|connection to server|server closed the connection|could not connect|Connection refused|lost connection)', false)
$$;

-- Raise 08006 naming the slot's shard when a PL/Proxy error is a failed connection (else return:
-- the caller raises the error unchanged).
CREATE OR REPLACE FUNCTION queen.shard_unreachable(p_slot int, p_message text) RETURNS void
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF queen.is_connection_failure(p_message) THEN
        RAISE EXCEPTION 'shard % (slot %) is unavailable', queen.slot_shard(p_slot), p_slot
            USING ERRCODE = '08006', DETAIL = p_message,
                  HINT = 'Only the slots of that shard fail; retry once it is back.';
    END IF;
END
$$;

-- The routed functions by (queue, partition), from one list: for each row, a pair
--   queen.<name>_on(p_slot int, <params>)  PL/Proxy, RUN ON p_slot, calling queen.<name> there
--   queen.<name>(<params with defaults>)   PL/pgSQL: the slot (queen.route_slot), then <name>_on;
--                                          a connection failure becomes 08006 naming the shard
-- created by format() below. params: the shard function's parameters as declared there (the
-- router's wrapper keeps their defaults; the _on function drops them); result: its RETURNS
-- clause (a TABLE is returned with RETURN QUERY). Privileges: sql/router/90_privileges.sql.
DO $gen$
DECLARE
    r       record;
    v_plain text;     -- the parameters without their defaults
    v_args  text;     -- the parameter names, as call arguments
    v_set   boolean;  -- returns a set (RETURNS TABLE)
BEGIN
    FOR r IN SELECT * FROM (VALUES
        ('push',             'p_queue text, p_partition text, p_items jsonb',
                             'TABLE (index int, status text, message_id uuid, transaction_id text, message_offset bigint)'),
        ('read',             'p_queue text, p_partition text, p_from_offset bigint, p_limit int',
                             'TABLE (message_offset bigint, message_id uuid, transaction_id text, payload jsonb, created_at timestamptz)'),
        ('ack',              'p_queue text, p_partition text, p_transaction_id text, p_consumer_group text DEFAULT ''__QUEUE_MODE__''',
                             'boolean'),
        ('ack_offset',       'p_queue text, p_partition text, p_offset bigint, p_consumer_group text DEFAULT ''__QUEUE_MODE__''',
                             'boolean'),
        ('ack_batch',        'p_queue text, p_partition text, p_items jsonb, p_consumer_group text DEFAULT ''__QUEUE_MODE__''',
                             'TABLE (index int, transaction_id text, message_offset bigint, status text)'),
        ('committed_offset', 'p_queue text, p_partition text, p_consumer_group text DEFAULT ''__QUEUE_MODE__''',
                             'bigint'),
        ('partition_id',     'p_queue text, p_partition text',
                             'bigint'),
        ('explain',          'p_queue text, p_partition text, p_transaction_id text',
                             'jsonb')
    ) AS t(name, params, result)
    LOOP
        v_plain := pg_catalog.regexp_replace(r.params, '\s+DEFAULT\s+[^,]+', '', 'g');
        v_args := pg_catalog.regexp_replace(v_plain, '(\w+)\s+[^,]+', '\1', 'g');
        v_set := r.result LIKE 'TABLE%';
        EXECUTE pg_catalog.format($f$
CREATE OR REPLACE FUNCTION queen.%1$s_on(p_slot int, %2$s)
    RETURNS %3$s
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON p_slot; SELECT %4$squeen.%1$s(%5$s); $$
$f$, r.name, v_plain, r.result, CASE WHEN v_set THEN '* FROM ' ELSE '' END, v_args);
        EXECUTE pg_catalog.format($f$
CREATE OR REPLACE FUNCTION queen.%1$s(%2$s)
    RETURNS %3$s
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_slot int := queen.route_slot(p_queue, p_partition);
BEGIN
    %4$s queen.%1$s_on(v_slot, %5$s);
EXCEPTION WHEN internal_error THEN
    PERFORM queen.shard_unreachable(v_slot, SQLERRM);
    RAISE;
END
$$
$f$, r.name, r.params, r.result, CASE WHEN v_set THEN 'RETURN QUERY SELECT * FROM' ELSE 'RETURN' END, v_args);
    END LOOP;
END
$gen$;

-- ---------------------------------------------------------------- one call per shard
-- queen.transaction on the shard of one slot (the wrapper below chose it).
CREATE OR REPLACE FUNCTION queen.transaction_on(p_slot int, p_ops jsonb) RETURNS jsonb
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON p_slot; SELECT queen.transaction(p_ops); $$;

-- A transaction runs on one shard: every partition it names must live there, else 0A000
-- naming the shards, before anything is written.
CREATE OR REPLACE FUNCTION queen.transaction(p_ops jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_slot   int := 0;
    v_shards text[];
    v_detail text;
BEGIN
    IF jsonb_typeof(p_ops) = 'object' AND jsonb_typeof(p_ops -> 'operations') = 'array' THEN
        SELECT array_agg(DISTINCT queen.slot_shard(s.slot) ORDER BY queen.slot_shard(s.slot)),
               min(s.slot) FILTER (WHERE s.n = 1),
               string_agg(format('%s/%s on %s', s.q, s.p, queen.slot_shard(s.slot)), ', ' ORDER BY s.n)
          INTO v_shards, v_slot, v_detail
          FROM (SELECT o.value ->> 'queue' AS q, COALESCE(o.value ->> 'partition', 'Default') AS p,
                       queen.route_slot(o.value ->> 'queue', COALESCE(o.value ->> 'partition', 'Default')) AS slot,
                       o.n
                  FROM jsonb_array_elements(p_ops -> 'operations') WITH ORDINALITY o(value, n)
                 WHERE jsonb_typeof(o.value) = 'object') s;
        IF cardinality(v_shards) > 1 THEN
            RAISE EXCEPTION 'transaction spans shards %: a transaction runs on one shard',
                array_to_string(v_shards, ', ')
                USING ERRCODE = '0A000', DETAIL = v_detail,
                      HINT = 'Keep the queues of a transaction on one slot: configure them {"placement": "single_slot"}.';
        END IF;
    END IF;
    v_slot := COALESCE(v_slot, 0);
    RETURN queen.transaction_on(v_slot, p_ops);
EXCEPTION WHEN internal_error THEN
    PERFORM queen.shard_unreachable(v_slot, SQLERRM);
    RAISE;
END
$$;

-- ---------------------------------------------------------------- streams: by stream name
CREATE OR REPLACE FUNCTION queen.stream_create(p_name text,
        p_content_type text DEFAULT 'application/octet-stream', p_ttl_seconds bigint DEFAULT NULL,
        p_expires_at timestamptz DEFAULT NULL, p_closed boolean DEFAULT false,
        p_messages bytea[] DEFAULT NULL, p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.stream_append(p_name text, p_messages bytea[],
        p_content_type text DEFAULT NULL, p_producer_id text DEFAULT NULL,
        p_producer_epoch bigint DEFAULT NULL, p_producer_seq bigint DEFAULT NULL,
        p_digest text DEFAULT NULL, p_incarnation text DEFAULT NULL, p_close boolean DEFAULT false,
        p_stream_seq text DEFAULT NULL, p_body bytea DEFAULT NULL, p_now timestamptz DEFAULT NULL,
        p_expect_apply boolean DEFAULT false)
    RETURNS TABLE (status text, stream_offset text, next_offset text, stream_closed boolean,
                   producer_epoch bigint, producer_seq bigint, expected_seq bigint,
                   received_seq bigint, closed_epoch bigint, closed_seq bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.stream_close(p_name text, p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (status text, next_offset text)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.stream_read(p_name text, p_offset text DEFAULT '-1',
        p_max_messages int DEFAULT 1000, p_max_bytes int DEFAULT 1048576,
        p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (status text, content_type text, messages bytea[], offsets text[],
                   next_offset text, up_to_date boolean, closed boolean)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.stream_head(p_name text, p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (status text, content_type text, next_offset text, closed boolean,
                   ttl_seconds bigint, expires_at timestamptz, created_at timestamptz,
                   partition_id bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.stream_delete(p_name text, p_now timestamptz DEFAULT NULL)
    RETURNS text
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.fork_delete(p_name text, p_now timestamptz DEFAULT NULL)
    RETURNS text
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.fork_gone(p_name text, p_now timestamptz DEFAULT NULL)
    RETURNS boolean
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_stream(p_name); $$;

CREATE OR REPLACE FUNCTION queen.fork_create_on(p_slot int, p_name text, p_content_type text,
        p_ttl_seconds bigint, p_expires_at timestamptz, p_closed boolean, p_messages bytea[],
        p_source text, p_fork_offset text, p_sub_offset bigint, p_now timestamptz)
    RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'queen'; RUN ON p_slot;
    SELECT * FROM queen.fork_create(p_name, p_content_type, p_ttl_seconds, p_expires_at, p_closed,
                                    p_messages, p_source, p_fork_offset, p_sub_offset, p_now);
$$;

-- A fork lives with its source: both names on one shard, else 0A000 before anything is written.
CREATE OR REPLACE FUNCTION queen.fork_create(p_name text, p_content_type text DEFAULT NULL,
        p_ttl_seconds bigint DEFAULT NULL, p_expires_at timestamptz DEFAULT NULL,
        p_closed boolean DEFAULT false, p_messages bytea[] DEFAULT NULL,
        p_source text DEFAULT NULL, p_fork_offset text DEFAULT NULL,
        p_sub_offset bigint DEFAULT NULL, p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_slot int := queen.route_stream(p_name);
BEGIN
    IF p_source IS NOT NULL AND queen.slot_shard(queen.route_stream(p_source)) <> queen.slot_shard(v_slot) THEN
        RAISE EXCEPTION 'fork "%" would live on shard %, its source "%" on shard %: a fork lives with its source',
            p_name, queen.slot_shard(v_slot), p_source, queen.slot_shard(queen.route_stream(p_source))
            USING ERRCODE = '0A000';
    END IF;
    RETURN QUERY SELECT * FROM queen.fork_create_on(v_slot, p_name, p_content_type, p_ttl_seconds,
        p_expires_at, p_closed, p_messages, p_source, p_fork_offset, p_sub_offset, p_now);
END
$$;

CREATE OR REPLACE FUNCTION queen.stream_append_batch_on(p_slot int, p_names text[], p_counts int[],
        p_messages bytea[], p_content_types text[], p_producer_ids text[],
        p_producer_epochs bigint[], p_producer_seqs bigint[], p_digests text[],
        p_incarnations text[], p_closes boolean[], p_stream_seqs text[], p_bodies bytea[],
        p_expect_apply boolean[], p_now timestamptz)
    RETURNS TABLE (ord int, status text, stream_offset text, next_offset text, stream_closed boolean,
                   producer_epoch bigint, producer_seq bigint, expected_seq bigint,
                   received_seq bigint, closed_epoch bigint, closed_seq bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'queen'; RUN ON p_slot;
    SELECT * FROM queen.stream_append_batch(p_names, p_counts, p_messages, p_content_types,
        p_producer_ids, p_producer_epochs, p_producer_seqs, p_digests, p_incarnations, p_closes,
        p_stream_seqs, p_bodies, p_expect_apply, p_now);
$$;

-- A batch of appends runs on one shard: every stream it names must live there (0A000).
CREATE OR REPLACE FUNCTION queen.stream_append_batch(p_names text[], p_counts int[],
        p_messages bytea[], p_content_types text[] DEFAULT NULL, p_producer_ids text[] DEFAULT NULL,
        p_producer_epochs bigint[] DEFAULT NULL, p_producer_seqs bigint[] DEFAULT NULL,
        p_digests text[] DEFAULT NULL, p_incarnations text[] DEFAULT NULL,
        p_closes boolean[] DEFAULT NULL, p_stream_seqs text[] DEFAULT NULL,
        p_bodies bytea[] DEFAULT NULL, p_expect_apply boolean[] DEFAULT NULL,
        p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (ord int, status text, stream_offset text, next_offset text, stream_closed boolean,
                   producer_epoch bigint, producer_seq bigint, expected_seq bigint,
                   received_seq bigint, closed_epoch bigint, closed_seq bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_shards text[];
BEGIN
    SELECT array_agg(DISTINCT queen.slot_shard(queen.route_stream(n))) INTO v_shards
      FROM unnest(p_names) n;
    IF cardinality(v_shards) > 1 THEN
        RAISE EXCEPTION 'append batch spans shards %: a batch runs on one shard',
            array_to_string(v_shards, ', ') USING ERRCODE = '0A000';
    END IF;
    RETURN QUERY SELECT * FROM queen.stream_append_batch_on(
        COALESCE(queen.route_stream(p_names[1]), 0), p_names, p_counts, p_messages,
        p_content_types, p_producer_ids, p_producer_epochs, p_producer_seqs, p_digests,
        p_incarnations, p_closes, p_stream_seqs, p_bodies, p_expect_apply, p_now);
END
$$;

-- ---------------------------------------------------------------- dedup views: by their queue
CREATE OR REPLACE FUNCTION queen.create_dedup_view_on(p_slot int, p_name text, p_source_queue text,
                                                      p_options jsonb) RETURNS void
LANGUAGE plproxy AS $$
    CLUSTER 'queen'; RUN ON p_slot;
    SELECT queen.create_dedup_view(p_name, p_source_queue, p_options);
$$;

-- A view gives exactly one server's changelog only over a queue kept on one slot: any other
-- queue is refused (0A000) before anything is written.
CREATE OR REPLACE FUNCTION queen.create_dedup_view(p_name text, p_source_queue text, p_options jsonb)
    RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT COALESCE((SELECT q.single_slot FROM queen.router_queues q WHERE q.queue = p_source_queue), false) THEN
        RAISE EXCEPTION 'queue "%" spreads its partitions over the shards: a dedup view reads a queue kept on one slot',
            p_source_queue USING ERRCODE = '0A000',
            HINT = 'Configure the queue {"placement": "single_slot"} before its first push.';
    END IF;
    IF EXISTS (SELECT 1 FROM queen.router_views v WHERE v.name = p_name) THEN
        RAISE EXCEPTION 'dedup view "%" already exists', p_name USING ERRCODE = '42710';
    END IF;
    PERFORM queen.create_dedup_view_on(queen.route_slot(p_source_queue, ''), p_name,
                                       p_source_queue, p_options);
    INSERT INTO queen.router_views (name, queue) VALUES (p_name, p_source_queue);
END
$$;

CREATE OR REPLACE FUNCTION queen.create_dedup_view_sql(p_name text, p_query text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'create_dedup_view_sql is not offered by the router' USING ERRCODE = '0A000',
        HINT = 'Use queen.create_dedup_view(name, queue, options) with a single_slot queue.';
END
$$;

CREATE OR REPLACE FUNCTION queen.drop_dedup_view_on(p_slot int, p_name text) RETURNS void
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON p_slot; SELECT queen.drop_dedup_view(p_name); $$;

CREATE OR REPLACE FUNCTION queen.drop_dedup_view(p_name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM queen.drop_dedup_view_on(queen.route_view(p_name), p_name);
    DELETE FROM queen.router_views WHERE name = p_name;
END
$$;

CREATE OR REPLACE FUNCTION queen.dedup_advance(p_name text, p_max_rows int DEFAULT 10000,
                                               p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_view(p_name); $$;

CREATE OR REPLACE FUNCTION queen.dedup_watermark(p_name text, p_watermark bigint,
                                                 p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_view(p_name); $$;

CREATE OR REPLACE FUNCTION queen.dedup_flush(p_name text, p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_view(p_name); $$;

CREATE OR REPLACE FUNCTION queen.dedup_changelog(p_name text, p_from_seq bigint DEFAULT 0,
                                                 p_limit int DEFAULT 1000)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_view(p_name); $$;

CREATE OR REPLACE FUNCTION queen.dedup_stats(p_name text) RETURNS jsonb
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_view(p_name); $$;

CREATE OR REPLACE FUNCTION queen.dedup_state_rows(p_name text)
    RETURNS TABLE (key text, kind smallint, payload jsonb, rowtime bigint, written_at timestamptz,
                   src_partition text, src_offset bigint)
LANGUAGE plproxy AS $$ CLUSTER 'queen'; RUN ON queen.route_view(p_name); $$;
-- ================================================================ calls to every shard
-- queen.configure, queen.run_retention and queen.drop_queue run on every shard of the cluster
-- (queen.router_shards, in the order the shards were added, slots or not), each call on a shard
-- its own autocommit transaction: PL/Proxy cannot commit on several servers at once. So that a
-- failure is exact to retry:
--   1. every shard is asked first (queen.every_shard_probe: one read-only call each, also how
--      many partitions of the queue it holds); a shard that cannot be reached fails the call
--      with 08006 "shard S is unavailable: ... changed nothing on any shard" before anything
--      is changed anywhere;
--   2. then the call runs on each shard in turn. A shard lost between 1 and 2 fails it with
--      08006 naming that shard and the shards it already ran on ("ran on s1, s2 only"); a
--      shard's own error (bad options, 22023) comes back unchanged from the first shard, so
--      nothing was changed.
-- The same call again, once the shard is back, ends in the state one server reaches:
-- configure is a full replace (the same options store the same state again), retention deletes
-- what is due when it runs, and drop_queue drops on the shards that still hold the queue (those
-- where it ran already are skipped; 42704 only when no shard holds it, as on one server).
-- The router's own rows (queen.router_queues) change in the router's transaction, which the
-- error rolls back, so the retry finds them as before the failed call.

-- ---------------------------------------------------------------- calls to one shard
-- How many partitions of the queue the shard holds (NULL: the queue is not there).
CREATE OR REPLACE FUNCTION queen.remote_queue_partitions(p_conn text, p_queue text) RETURNS bigint
LANGUAGE plproxy AS $$
    CONNECT p_conn;
    SELECT (SELECT (SELECT count(*) FROM queen.log_partitions p WHERE p.queue_id = q.id)
              FROM queen.queues q WHERE q.name = p_queue) AS remote_queue_partitions;
$$;

CREATE OR REPLACE FUNCTION queen.remote_configure(p_conn text, p_queue text, p_options jsonb) RETURNS jsonb
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.configure(p_queue, p_options); $$;

CREATE OR REPLACE FUNCTION queen.remote_run_retention(p_conn text, p_max_rows int) RETURNS jsonb
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.run_retention(p_max_rows); $$;

-- How many partitions of the queue the shard holds in slots it is moving off (issue 20).
CREATE OR REPLACE FUNCTION queen.remote_queue_moving(p_conn text, p_queue text) RETURNS bigint
LANGUAGE plproxy AS $$
    CONNECT p_conn;
    SELECT count(*) AS remote_queue_moving FROM queen.shard_partitions() sp
      JOIN queen.shard_slots s ON s.slot = sp.slot AND s.state = 'moving'
     WHERE sp.queue = p_queue;
$$;

CREATE OR REPLACE FUNCTION queen.remote_drop_queue(p_conn text, p_queue text) RETURNS jsonb
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.drop_queue(p_queue); $$;

-- ---------------------------------------------------------------- the two phases
-- Raise 08006 naming the shard when a PL/Proxy error is a failed or lost connection (PL/Proxy's
-- own error, or the shard's: class 08, or 57P01-57P03, a shard shutting down or starting),
-- else return: the caller raises the error unchanged. p_done: the shards p_what already ran on.
CREATE OR REPLACE FUNCTION queen.every_shard_unreachable(p_shard text, p_what text, p_done text[],
                                                         p_message text, p_sqlstate text) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF queen.is_connection_failure(p_message) OR p_sqlstate ~ '^(08|57P0[123])' THEN
        RAISE EXCEPTION 'shard % is unavailable: % %', p_shard, p_what,
            CASE WHEN COALESCE(cardinality(p_done), 0) = 0 THEN 'changed nothing on any shard'
                 ELSE format('ran on %s only', array_to_string(p_done, ', ')) END
            USING ERRCODE = '08006', DETAIL = p_message,
                  HINT = 'Run the same call again once the shard is back: it completes on every shard.';
    END IF;
END
$$;

-- Phase 1: every shard (in the order added) with how many partitions of p_queue it holds (NULL:
-- not there; p_queue NULL just checks the shard answers). Every shard answers before this
-- returns; one that cannot be reached: 08006 naming it (nothing was changed). 55000 without
-- shards.
CREATE OR REPLACE FUNCTION queen.every_shard_probe(p_queue text, p_what text,
                                                   OUT shard text, OUT conninfo text, OUT partitions bigint)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_s record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queen.router_shards) THEN
        RAISE EXCEPTION 'the cluster has no shard (queen.add_shard first)' USING ERRCODE = '55000';
    END IF;
    FOR v_s IN SELECT s.name, s.conninfo FROM queen.router_shards s ORDER BY s.ordinal LOOP
        shard := v_s.name;
        conninfo := v_s.conninfo;
        BEGIN
            partitions := queen.remote_queue_partitions(v_s.conninfo, p_queue);
        EXCEPTION WHEN internal_error OR connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
            PERFORM queen.every_shard_unreachable(v_s.name, p_what, '{}', SQLERRM, SQLSTATE);
            RAISE;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;

-- ---------------------------------------------------------------- the routed functions
-- configure on every shard (the answer: the shard's that created the queue's Default
-- partition when the wire's options ask for it, else the first's); a change of placement only
-- while no shard holds a partition of the queue (55000: their slots follow from it).
CREATE OR REPLACE FUNCTION queen.configure(p_queue text, p_options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_single  boolean := COALESCE(jsonb_typeof(p_options) = 'object'
                                  AND p_options ->> 'placement' = 'single_slot', false);
    v_old     boolean;
    v_names   text[];
    v_conns   text[];
    v_parts   bigint[];
    v_answers jsonb[] := '{}';
    v_i       int;
BEGIN
    SELECT q.single_slot INTO v_old FROM queen.router_queues q WHERE q.queue = p_queue FOR UPDATE;
    SELECT array_agg(p.shard ORDER BY p.o), array_agg(p.conninfo ORDER BY p.o), array_agg(p.partitions ORDER BY p.o)
      INTO v_names, v_conns, v_parts
      FROM queen.every_shard_probe(p_queue, 'queen.configure') WITH ORDINALITY p(shard, conninfo, partitions, o);
    IF COALESCE(v_old, false) <> v_single
       AND (SELECT COALESCE(sum(c), 0) FROM unnest(v_parts) c) > 0 THEN
        RAISE EXCEPTION 'queue "%" has partitions: its placement stays %', p_queue,
            CASE WHEN v_old THEN 'single_slot' ELSE 'partition' END
            USING ERRCODE = '55000',
                  HINT = 'configure is a full replace: name "placement" in every configure call of this queue.';
    END IF;
    FOR v_i IN 1 .. cardinality(v_names) LOOP
        BEGIN
            v_answers := v_answers || queen.remote_configure(v_conns[v_i], p_queue, p_options);
        EXCEPTION WHEN internal_error OR connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
            PERFORM queen.every_shard_unreachable(v_names[v_i], 'queen.configure', v_names[1:v_i - 1], SQLERRM, SQLSTATE);
            RAISE;
        END;
    END LOOP;
    IF v_single THEN
        INSERT INTO queen.router_queues (queue, single_slot) VALUES (p_queue, true)
            ON CONFLICT (queue) DO UPDATE SET single_slot = true;
    ELSE
        DELETE FROM queen.router_queues WHERE queue = p_queue;
    END IF;
    RETURN (SELECT a FROM unnest(v_answers) WITH ORDINALITY x(a, o)
             ORDER BY (a ->> 'partitionId') IS NULL, o LIMIT 1);
END
$$;

-- One answer from several shards' answers: number fields summed, the others the first's.
CREATE OR REPLACE FUNCTION queen.merge_answers(p_answers jsonb[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(jsonb_object_agg(y.k, y.v), '{}')
      FROM (SELECT x.k, CASE WHEN bool_and(jsonb_typeof(x.v) = 'number')
                             THEN to_jsonb(sum((x.v #>> '{}')::numeric) FILTER (WHERE jsonb_typeof(x.v) = 'number'))
                             ELSE (array_agg(x.v ORDER BY x.o))[1] END AS v
              FROM (SELECT e.key AS k, e.value AS v, a.o
                      FROM unnest(p_answers) WITH ORDINALITY a(j, o), jsonb_each(a.j) e) x
             GROUP BY x.k) y
$$;

-- Retention on every shard (p_max_rows on each), the counts summed. A shard leaves the
-- partitions of a slot being moved off it alone (queen.retention_purge); the target purges them
-- once it owns the slot.
CREATE OR REPLACE FUNCTION queen.run_retention(p_max_rows int DEFAULT 10000) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_names   text[];
    v_conns   text[];
    v_answers jsonb[] := '{}';
    v_i       int;
BEGIN
    SELECT array_agg(p.shard ORDER BY p.o), array_agg(p.conninfo ORDER BY p.o) INTO v_names, v_conns
      FROM queen.every_shard_probe(NULL, 'queen.run_retention') WITH ORDINALITY p(shard, conninfo, partitions, o);
    FOR v_i IN 1 .. cardinality(v_names) LOOP
        BEGIN
            v_answers := v_answers || queen.remote_run_retention(v_conns[v_i], p_max_rows);
        EXCEPTION WHEN internal_error OR connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
            PERFORM queen.every_shard_unreachable(v_names[v_i], 'queen.run_retention', v_names[1:v_i - 1], SQLERRM, SQLSTATE);
            RAISE;
        END;
    END LOOP;
    RETURN queen.merge_answers(v_answers);
END
$$;

-- drop_queue on every shard holding the queue, the counts summed; a queue no shard holds gets
-- the one server's answer (the first shard's error: 42704, or the reserved-queue refusal).
-- 55Q02 (nothing dropped anywhere) while a slot holding partitions of the queue is being moved:
-- the move's import would bring them back on the target after a drop there. Asked of the
-- source shard of every move not finished (queen.router_moves), before any shard drops; a
-- move fenced after this check is caught by the source's own fence (queen.drop_queue there
-- refuses 55Q02 too; shards before it may have dropped theirs, and the same call again once
-- the move is over completes it, as after a shard lost midway).
CREATE OR REPLACE FUNCTION queen.drop_queue(p_queue text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_names   text[];
    v_conns   text[];
    v_parts   bigint[];
    v_answers jsonb[] := '{}';
    v_done    text[] := '{}';
    v_i       int;
    v_move    record;
BEGIN
    IF EXISTS (SELECT 1 FROM queen.router_views v WHERE v.queue = p_queue) THEN
        RAISE EXCEPTION 'queue "%" is read by dedup views (%): drop them first', p_queue,
            (SELECT string_agg(v.name, ', ' ORDER BY v.name) FROM queen.router_views v WHERE v.queue = p_queue)
            USING ERRCODE = '2BP01';
    END IF;
    FOR v_move IN SELECT DISTINCT ON (m.slot) m.slot, m.from_shard, m.phase FROM queen.router_moves m
                   ORDER BY m.slot, m.id DESC LOOP
        CONTINUE WHEN v_move.phase IN ('done', 'failed');
        IF queen.remote_queue_moving(queen.shard_conninfo(v_move.from_shard), p_queue) > 0 THEN
            RAISE EXCEPTION 'queue "%" has partitions in slot %, which is moving from shard %: nothing was dropped',
                p_queue, v_move.slot, v_move.from_shard
                USING ERRCODE = '55Q02', HINT = 'Retry once the move is over (queen.slot_moves()).';
        END IF;
    END LOOP;
    SELECT array_agg(p.shard ORDER BY p.o), array_agg(p.conninfo ORDER BY p.o), array_agg(p.partitions ORDER BY p.o)
      INTO v_names, v_conns, v_parts
      FROM queen.every_shard_probe(p_queue, 'queen.drop_queue') WITH ORDINALITY p(shard, conninfo, partitions, o);
    IF NOT EXISTS (SELECT 1 FROM unnest(v_parts) c WHERE c IS NOT NULL) THEN
        -- nowhere: the first shard answers as one server does (and changes nothing)
        BEGIN
            RETURN queen.remote_drop_queue(v_conns[1], p_queue);
        EXCEPTION WHEN internal_error OR connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
            PERFORM queen.every_shard_unreachable(v_names[1], 'queen.drop_queue', '{}', SQLERRM, SQLSTATE);
            RAISE;
        END;
    END IF;
    FOR v_i IN 1 .. cardinality(v_names) LOOP
        CONTINUE WHEN v_parts[v_i] IS NULL;
        BEGIN
            v_answers := v_answers || queen.remote_drop_queue(v_conns[v_i], p_queue);
        EXCEPTION
            WHEN undefined_object THEN
                NULL;  -- dropped there meanwhile
            WHEN internal_error OR connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
                PERFORM queen.every_shard_unreachable(v_names[v_i], 'queen.drop_queue', v_done, SQLERRM, SQLSTATE);
                RAISE;
        END;
        v_done := v_done || v_names[v_i];
    END LOOP;
    DELETE FROM queen.router_queues WHERE queue = p_queue;
    RETURN queen.merge_answers(v_answers);
END
$$;
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
-- ================================================================ privileges of the router
-- The same three roles as the queen extension (sql/privileges.sql), created when absent:
-- queen_writer (push, ack, read, streams), queen_reader (read), queen_admin (configure,
-- retention, drop, views). The map readers are open to the three; the operations (add_shard,
-- move_slot, set_slot_count) and the calls to one named shard are the owner's only.
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['queen_writer', 'queen_reader', 'queen_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;
            END;
        END IF;
    END LOOP;
END
$$;

REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL ROUTINES IN SCHEMA plproxy FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC;
GRANT USAGE ON SCHEMA queen, plproxy TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION plproxy.get_cluster_version(text), plproxy.get_cluster_partitions(text),
    plproxy.get_cluster_config(text) TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION queen.shards(), queen.slot_map(), queen.map_version(), queen.slot_count(),
    queen.queue_placement(), queen.slot_of(text, text), queen.slot_of(text, text, integer),
    queen.txn_hash(text), queen.route_slot(text, text), queen.route_stream(text),
    queen.route_view(text), queen.slot_shard(int), queen.slot_moves()
    TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION queen.read(text, text, bigint, int), queen.partition_id(text, text),
    queen.committed_offset(text, text, text), queen.explain(text, text, text),
    queen.stream_read(text, text, int, int, timestamptz), queen.stream_head(text, timestamptz),
    queen.fork_gone(text, timestamptz), queen.dedup_changelog(text, bigint, int),
    queen.dedup_stats(text), queen.dedup_state_rows(text)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.shard_unreachable(int, text),
    queen.read_on(int, text, text, bigint, int), queen.partition_id_on(int, text, text),
    queen.committed_offset_on(int, text, text, text), queen.explain_on(int, text, text, text)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.push_on(int, text, text, jsonb),
    queen.ack_on(int, text, text, text, text), queen.ack_offset_on(int, text, text, bigint, text),
    queen.ack_batch_on(int, text, text, jsonb, text)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.push(text, text, jsonb), queen.ack(text, text, text, text),
    queen.ack_offset(text, text, bigint, text), queen.ack_batch(text, text, jsonb, text),
    queen.transaction(jsonb), queen.transaction_on(int, jsonb),
    queen.stream_create(text, text, bigint, timestamptz, boolean, bytea[], timestamptz),
    queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text,
                        bytea, timestamptz, boolean),
    queen.stream_close(text, timestamptz), queen.stream_delete(text, timestamptz),
    queen.fork_delete(text, timestamptz),
    queen.fork_create(text, text, bigint, timestamptz, boolean, bytea[], text, text, bigint, timestamptz),
    queen.fork_create_on(int, text, text, bigint, timestamptz, boolean, bytea[], text, text, bigint, timestamptz),
    queen.stream_append_batch(text[], int[], bytea[], text[], text[], bigint[], bigint[], text[],
                              text[], boolean[], text[], bytea[], boolean[], timestamptz),
    queen.stream_append_batch_on(int, text[], int[], bytea[], text[], text[], bigint[], bigint[],
                                 text[], text[], boolean[], text[], bytea[], boolean[], timestamptz),
    queen.dedup_advance(text, int, timestamptz), queen.dedup_watermark(text, bigint, timestamptz),
    queen.dedup_flush(text, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.configure(text, jsonb), queen.run_retention(int),
    queen.merge_answers(jsonb[]), queen.drop_queue(text),
    queen.create_dedup_view(text, text, jsonb), queen.create_dedup_view_on(int, text, text, jsonb),
    queen.create_dedup_view_sql(text, text), queen.drop_dedup_view(text),
    queen.drop_dedup_view_on(int, text)
    TO queen_admin;
