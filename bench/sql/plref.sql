-- plref: the benchmark's PL/pgSQL implementation of the probe-then-allocate push, written from
-- the specification (shared/reference/queen-deduplication.md, "The probe: before allocation,
-- under the lock"), in its own schema with its own tables of the same shape as queen's.
--
-- run.sh replaces the two placeholders before loading this file:
--   @TXN_HASH@       queen.txn_hash            (or plref.standin_txn_hash before queen exists)
--   @UNNEST_HASHES@  queen.log_unnest_hashes   (or plref.standin_unnest_hashes)
--
-- Per push, as the reference does it: lock the partition row FOR UPDATE; probe log_txns rows of
-- the window, each blob unnested and joined with the unnested incoming hashes (one SQL join per
-- hash, the reference's CPU cost per hash in the window); MIN original offset per match; first
-- occurrence wins inside the call; allocate contiguous offsets for the survivors only; write one
-- segment row (jsonb here, the survivors) and one log_txns row. A duplicate writes nothing.
CREATE SCHEMA plref;

CREATE TABLE plref.queues (
    id                   bigserial PRIMARY KEY,
    name                 text NOT NULL UNIQUE,
    dedup_window_seconds int  NOT NULL DEFAULT 3600,
    created_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE plref.log_partitions (
    id          bigserial PRIMARY KEY,
    queue_id    bigint NOT NULL REFERENCES plref.queues (id),
    name        text   NOT NULL,
    last_offset bigint NOT NULL DEFAULT -1,
    log_start   bigint NOT NULL DEFAULT 0,
    txns_start  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
);

-- One row per push: the survivors as a jsonb array of {"id","txn","payload"} in offset order.
CREATE TABLE plref.log_segments (
    partition_id  bigint NOT NULL,
    base_offset   bigint NOT NULL,
    end_offset    bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    message_count int    NOT NULL,
    data          jsonb  NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);

-- One row per push: the survivors' 16-byte hashes concatenated in offset order.
CREATE TABLE plref.log_txns (
    partition_id bigint NOT NULL,
    base_offset  bigint NOT NULL,
    end_offset   bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    hashes       bytea  NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
) WITH (toast_tuple_target = 8160);
ALTER TABLE plref.log_txns ALTER COLUMN hashes SET STORAGE MAIN;  -- as queen.log_txns

-- Stand-in for queen.txn_hash until the extension exists: md5 is also 16 bytes.
CREATE FUNCTION plref.standin_txn_hash(text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT decode(md5($1), 'hex') $$;

-- Stand-in for queen.log_unnest_hashes until the extension exists.
CREATE FUNCTION plref.standin_unnest_hashes(bytea) RETURNS TABLE (idx int, h bytea)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT i, substr($1, i * 16 + 1, 16) FROM generate_series(0, length($1) / 16 - 1) AS i
$$;

-- Create or update a queue with the given dedup window (seconds); returns its id.
CREATE FUNCTION plref.configure(p_queue text, p_window int) RETURNS bigint
LANGUAGE sql AS $$
    INSERT INTO plref.queues (name, dedup_window_seconds) VALUES (p_queue, p_window)
    ON CONFLICT (name) DO UPDATE SET dedup_window_seconds = excluded.dedup_window_seconds
    RETURNING id
$$;

-- Find or create (queue, partition); returns the partition id.
CREATE FUNCTION plref.resolve_partition(p_queue text, p_partition text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_qid bigint;
    v_pid bigint;
BEGIN
    SELECT id INTO v_qid FROM plref.queues WHERE name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO plref.queues (name) VALUES (p_queue) ON CONFLICT (name) DO NOTHING;
        SELECT id INTO v_qid FROM plref.queues WHERE name = p_queue;
    END IF;
    SELECT id INTO v_pid FROM plref.log_partitions WHERE queue_id = v_qid AND name = p_partition;
    IF v_pid IS NULL THEN
        INSERT INTO plref.log_partitions (queue_id, name) VALUES (v_qid, p_partition)
        ON CONFLICT (queue_id, name) DO NOTHING;
        SELECT id INTO v_pid FROM plref.log_partitions WHERE queue_id = v_qid AND name = p_partition;
    END IF;
    RETURN v_pid;
END $$;

-- The push: items [{"transactionId"?, "payload"}]; p_verified narrows the probe as in the
-- reference (-1 = the whole window). Same answer shape as queen.push.
CREATE FUNCTION plref.push(p_queue text, p_partition text, p_items jsonb, p_verified bigint DEFAULT -1)
RETURNS TABLE (index int, status text, message_id uuid, transaction_id text, message_offset bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_pid        bigint;
    v_window     int;
    v_last       bigint;
    v_txns_start bigint;
    v_now        timestamptz;
    v_from       bigint;
    v_n          int;
    v_m          int := 0;          -- survivors
    v_ids        uuid[];
    v_txns       text[];
    v_hashes     bytea[];
    v_payloads   jsonb[];
    v_leader     int[];             -- position of the first item with the same hash
    v_blob       bytea;             -- the incoming hashes, concatenated
    v_probe      bigint[];          -- original offset per item found by the probe, else NULL
    v_status     text[];
    v_msg        uuid[];
    v_off        bigint[];
    v_keep       int[] := '{}';     -- survivor positions, in order
    v_bad        int;
BEGIN
    IF jsonb_typeof(p_items) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'items must be a JSON array' USING ERRCODE = '22023';
    END IF;
    SELECT min(o) INTO v_bad
      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(item, o)
     WHERE jsonb_typeof(item) <> 'object' OR NOT item ? 'payload'
        OR (item ? 'transactionId' AND jsonb_typeof(item -> 'transactionId') <> 'string');
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'item % is malformed', v_bad - 1 USING ERRCODE = '22023';
    END IF;

    v_pid := plref.resolve_partition(p_queue, p_partition);

    -- The per-partition write serializer, taken before the probe.
    SELECT p.last_offset, p.txns_start, q.dedup_window_seconds
      INTO v_last, v_txns_start, v_window
      FROM plref.log_partitions p JOIN plref.queues q ON q.id = p.queue_id
     WHERE p.id = v_pid
       FOR UPDATE OF p;

    -- Items: message ids, identities (a missing transactionId takes the id's text), hashes.
    SELECT array_agg(x.id ORDER BY x.o), array_agg(x.txn ORDER BY x.o),
           array_agg(@TXN_HASH@(x.txn) ORDER BY x.o), array_agg(x.payload ORDER BY x.o)
      INTO v_ids, v_txns, v_hashes, v_payloads
      FROM (SELECT e.o, e.id, coalesce(e.item ->> 'transactionId', e.id::text) AS txn,
                   e.item -> 'payload' AS payload
              FROM (SELECT o, item, gen_random_uuid() AS id
                      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS a(item, o)) e) x;
    v_n := coalesce(cardinality(v_ids), 0);
    IF v_n = 0 THEN
        RETURN;
    END IF;

    -- First occurrence wins inside the call.
    SELECT array_agg(s.l ORDER BY s.o), string_agg(s.h, ''::bytea ORDER BY s.o)
      INTO v_leader, v_blob
      FROM (SELECT o::int AS o, h, min(o::int) OVER (PARTITION BY h) AS l
              FROM unnest(v_hashes) WITH ORDINALITY AS t(h, o)) s;

    -- The probe, under the lock, in a fresh statement snapshot (READ COMMITTED). EXECUTE plans
    -- it with the actual values every time: a cached generic plan (estimated for any partition)
    -- falls into a sequential scan of the whole table with per-row sorts, the "plan trap" issue 2
    -- describes, and would make this baseline slower than a careful PL/pgSQL author's.
    v_now := clock_timestamp();
    v_from := greatest(coalesce(p_verified, -1), v_txns_start - 1);
    IF v_window > 0 AND v_last > v_from THEN
        EXECUTE $probe$
            SELECT array_agg(d.off ORDER BY g.i)
              FROM generate_series(0, $1 - 1) AS g(i)
              LEFT JOIN (
                  SELECT ih.idx, min(t.base_offset + th.idx) AS off
                    FROM plref.log_txns t
                   CROSS JOIN LATERAL @UNNEST_HASHES@(t.hashes) th
                    JOIN @UNNEST_HASHES@($2) ih ON ih.h = th.h
                   WHERE t.partition_id = $3
                     AND t.end_offset > $4
                     AND t.created_at >= $5 - make_interval(secs => $6)
                   GROUP BY ih.idx) d ON d.idx = g.i
        $probe$ INTO v_probe USING v_n, v_blob, v_pid, v_from, v_now, v_window;
    END IF;

    -- Verdicts for leaders; survivors get contiguous offsets in item order.
    v_status := array_fill(NULL::text, ARRAY[v_n]);
    v_msg := array_fill(NULL::uuid, ARRAY[v_n]);
    v_off := array_fill(NULL::bigint, ARRAY[v_n]);
    FOR i IN 1 .. v_n LOOP
        IF v_leader[i] <> i THEN
            CONTINUE;
        ELSIF v_probe[i] IS NOT NULL THEN
            v_status[i] := 'duplicate';
            v_off[i] := v_probe[i];
        ELSE
            v_status[i] := 'queued';
            v_off[i] := v_last + 1 + v_m;
            v_msg[i] := v_ids[i];
            v_m := v_m + 1;
            v_keep := v_keep || i;
        END IF;
    END LOOP;

    -- Original message ids of stored duplicates (the zero UUID when the segment is gone).
    IF v_m < v_n THEN
        SELECT array_agg(CASE WHEN v_status[g.i] = 'duplicate'
                              THEN coalesce(s.id, '00000000-0000-0000-0000-000000000000'::uuid)
                              ELSE v_msg[g.i] END ORDER BY g.i)
          INTO v_msg
          FROM generate_series(1, v_n) AS g(i)
          LEFT JOIN LATERAL (
              SELECT CASE WHEN seg.end_offset >= v_off[g.i]
                          THEN (seg.data -> (v_off[g.i] - seg.base_offset)::int ->> 'id')::uuid
                     END AS id
                FROM plref.log_segments seg
               WHERE v_status[g.i] = 'duplicate'
                 AND seg.partition_id = v_pid AND seg.base_offset <= v_off[g.i]
               ORDER BY seg.base_offset DESC
               LIMIT 1) s ON true;
        -- Followers inherit their leader's final answer.
        FOR i IN 1 .. v_n LOOP
            IF v_leader[i] <> i THEN
                v_status[i] := 'duplicate';
                v_off[i] := v_off[v_leader[i]];
                v_msg[i] := v_msg[v_leader[i]];
            END IF;
        END LOOP;
    END IF;

    -- Allocate and write: one segment row and one log_txns row; a duplicate writes nothing.
    IF v_m > 0 THEN
        UPDATE plref.log_partitions SET last_offset = v_last + v_m WHERE id = v_pid;
        INSERT INTO plref.log_segments (partition_id, base_offset, end_offset, created_at, message_count, data)
        SELECT v_pid, v_last + 1, v_last + v_m, v_now, v_m,
               jsonb_agg(jsonb_build_object('id', v_ids[u.k], 'txn', v_txns[u.k], 'payload', v_payloads[u.k])
                         ORDER BY u.o)
          FROM unnest(v_keep) WITH ORDINALITY AS u(k, o);
        INSERT INTO plref.log_txns (partition_id, base_offset, end_offset, created_at, hashes)
        SELECT v_pid, v_last + 1, v_last + v_m, v_now, string_agg(v_hashes[u.k], ''::bytea ORDER BY u.o)
          FROM unnest(v_keep) WITH ORDINALITY AS u(k, o);
    END IF;

    RETURN QUERY
        SELECT (g.i - 1)::int, v_status[g.i], v_msg[g.i], v_txns[g.i], v_off[g.i]
          FROM generate_series(1, v_n) AS g(i);
END $$;
