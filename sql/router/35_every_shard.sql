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

CREATE OR REPLACE FUNCTION queen.remote_configure(p_conn text, p_queue text, p_options jsonb,
                                                  p_namespace text, p_task text) RETURNS jsonb
LANGUAGE plproxy AS $$ CONNECT p_conn; SELECT queen.configure(p_queue, p_options, p_namespace, p_task); $$;

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
-- while no shard holds a partition of the queue (55000: their slots follow from it). Namespace
-- and task (issue 29) are stored on every shard, as queen.configure stores them.
CREATE OR REPLACE FUNCTION queen.configure(p_queue text, p_options jsonb DEFAULT '{}',
                                           p_namespace text DEFAULT NULL, p_task text DEFAULT NULL)
RETURNS jsonb
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
            v_answers := v_answers || queen.remote_configure(v_conns[v_i], p_queue, p_options, p_namespace, p_task);
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
