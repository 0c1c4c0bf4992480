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
