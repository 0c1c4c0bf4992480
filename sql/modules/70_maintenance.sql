-- ================================================================ module: maintenance mode
-- Queen MQ's maintenance mode (GET/POST /api/v1/system/maintenance; §3.2 and §3.9 of the wire
-- facts): while it is on, pushes are answered "buffered" and parked in
-- queen.maintenance_parked (sql/schema/70_maintenance.sql), committed before the answer; when
-- it is switched off, the switch's own transaction pushes every parked message through the
-- normal exact push path (dedup by transactionId unchanged) and deletes it, so each is
-- delivered exactly once whoever switches, whatever crashes. Pops are not affected.
--
-- Locking protocol (see the top of sql/modules/00_core.sql): the mode row (queen.maintenance_mode) is
-- taken before any partition lock and never after one. queen.maintenance_park takes it FOR
-- SHARE and inserts parked rows (no partition lock); queen.set_maintenance takes it FOR UPDATE,
-- then (switching off) creates the parked messages' partitions in the global creation order
-- (sorted by queue, partition, collation "C"; queen.resolve_partitions, before any partition
-- lock), then pushes them partition by partition in ascending partition id order (each push
-- takes its partition row FOR NO KEY UPDATE, held until commit), then deletes the rows it
-- pushed. A switch therefore waits for every park in flight and its drain sees them all; a park
-- that comes after the switch off finds the mode off and parks nothing (the sidecar then pushes
-- normally); two switches serialize on the row, and the second finds nothing left to push.

-- Internal (no grant): the push of parked messages with their given ids and verbatim JSON
-- text (src/pg/queue/push_parked.cpp), for maintenance_drain only.
CREATE OR REPLACE FUNCTION queen.push_parked(p_partition_id bigint, p_txns text[], p_ids uuid[],
                                             p_payloads text[])
    RETURNS TABLE (idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_parked_v1'
    LANGUAGE C VOLATILE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Internal (no grant): NULL when a transactionId passes the push path's rule, else the push's
-- own 22023 message for it (src/pg/queue/txn_id_check.cpp), so that maintenance_park accepts
-- exactly what queen.push_parked will push.
CREATE OR REPLACE FUNCTION queen.txn_id_problem(p_txn text) RETURNS text
    AS 'MODULE_PATHNAME', 'queen_txn_id_problem_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Whether maintenance mode is on (the sidecar's periodic check; no lock).
CREATE OR REPLACE FUNCTION queen.maintenance_enabled() RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT COALESCE((SELECT enabled FROM queen.maintenance_mode WHERE one), false) $$;

-- GET /api/v1/system/maintenance: {maintenanceMode, popMaintenanceMode, bufferedMessages,
-- bufferHealthy, bufferStats: {parkedMessages, queues, partitions, oldestParkedAt, changedAt}}.
-- popMaintenanceMode is always false (pops keep serving); bufferHealthy is true whenever this
-- answers (the buffer is this database).
CREATE OR REPLACE FUNCTION queen.maintenance_status() RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'maintenanceMode', COALESCE(m.enabled, false),
        'popMaintenanceMode', false,
        'bufferedMessages', p.n,
        'bufferHealthy', true,
        'bufferStats', pg_catalog.jsonb_build_object(
            'parkedMessages', p.n, 'queues', p.queues, 'partitions', p.parts,
            'oldestParkedAt', p.oldest, 'changedAt', m.changed_at))
    FROM (SELECT pg_catalog.count(*) AS n, pg_catalog.count(DISTINCT queue) AS queues,
                 pg_catalog.count(DISTINCT (queue, partition)) AS parts,
                 pg_catalog.min(parked_at) AS oldest
          FROM queen.maintenance_parked) p
    LEFT JOIN queen.maintenance_mode m ON m.one
$$;

-- Park one push request's items while maintenance mode is on: p_items is a JSON array of
-- {queue, partition, transactionId, messageId, payload} (payload any JSON value, kept as the
-- text sent). Every item is checked before anything is written, so that the drain can push
-- each of them: 22023 when p_items is not an array, an item is not an object, queue or
-- partition is not a non-empty string, transactionId is not a non-empty string the push accepts
-- (queen.txn_id_problem: at most 65535 bytes, valid UTF-8, no control character), messageId
-- is not a UUID, or payload is missing; 42501 for a reserved queue (__queen_*). Answers true
-- when the items were parked (in their order), false when maintenance mode is off (nothing
-- written: push them normally).
CREATE OR REPLACE FUNCTION queen.maintenance_park(p_items json) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_bad record;
    v_on boolean;
BEGIN
    IF p_items IS NULL OR pg_catalog.json_typeof(p_items) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'items must be a JSON array' USING ERRCODE = '22023';
    END IF;
    SELECT i - 1 AS idx, why INTO v_bad FROM (
        SELECT i, CASE
            WHEN pg_catalog.json_typeof(e) <> 'object' THEN 'is not a JSON object'
            WHEN pg_catalog.json_typeof(e -> 'queue') IS DISTINCT FROM 'string'
                 THEN '"queue" must be a string'
            WHEN pg_catalog.json_typeof(e -> 'partition') IS DISTINCT FROM 'string'
                 OR (e ->> 'partition') = '' THEN '"partition" must be a non-empty string'
            WHEN pg_catalog.json_typeof(e -> 'transactionId') IS DISTINCT FROM 'string'
                 OR (e ->> 'transactionId') = '' THEN '"transactionId" must be a non-empty string'
            WHEN queen.txn_id_problem(e ->> 'transactionId') IS NOT NULL
                THEN queen.txn_id_problem(e ->> 'transactionId')
            WHEN pg_catalog.json_typeof(e -> 'messageId') IS DISTINCT FROM 'string'
                 OR (e ->> 'messageId') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                THEN '"messageId" must be a UUID'
            WHEN (e -> 'payload') IS NULL THEN 'has no "payload"'
        END AS why
        FROM pg_catalog.json_array_elements(p_items) WITH ORDINALITY AS t(e, i)) c
    WHERE why IS NOT NULL ORDER BY i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'item %: %', v_bad.idx, v_bad.why USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(ARRAY(
        SELECT DISTINCT e ->> 'queue' FROM pg_catalog.json_array_elements(p_items) AS t(e)));
    SELECT enabled INTO v_on FROM queen.maintenance_mode WHERE one FOR SHARE;
    IF v_on IS NOT TRUE THEN
        RETURN false;
    END IF;
    -- issue 27: an encrypted queue parks envelopes only (sql/modules/80_encryption.sql)
    PERFORM queen.encryption_park_guard(p_items);
    INSERT INTO queen.maintenance_parked (queue, partition, transaction_id, message_id, payload)
    SELECT e ->> 'queue', e ->> 'partition', e ->> 'transactionId', (e ->> 'messageId')::uuid,
           e -> 'payload'
    FROM pg_catalog.json_array_elements(p_items) WITH ORDINALITY AS t(e, i)
    ORDER BY i;
    RETURN true;
END
$$;

-- Internal (no grant): push every parked message and delete it, under the mode row lock the
-- caller (queen.set_maintenance) holds, so no park and no other drain runs meanwhile. Lock
-- order: the module header. Each partition's messages go in push order (seq), in segments of
-- at most 1000 messages or about 16 MiB of payload. delivered: stored as new messages;
-- duplicates: a transactionId already stored (in the window) or parked twice.
CREATE OR REPLACE FUNCTION queen.maintenance_drain(OUT delivered bigint, OUT duplicates bigint)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queues text[];
    v_parts text[];
    v_ids bigint[] := '{}';
    v_names text[] := '{}';
    v_from int;
    v_to int;
    v_pid bigint;
    v_pair record;
    v_msg record;
    v_txns text[];
    v_mids uuid[];
    v_payloads text[];
    v_bytes bigint;
    v_q int;
    v_d int;
BEGIN
    delivered := 0;
    duplicates := 0;
    SELECT pg_catalog.array_agg(queue ORDER BY queue COLLATE "C", partition COLLATE "C"),
           pg_catalog.array_agg(partition ORDER BY queue COLLATE "C", partition COLLATE "C")
      INTO v_queues, v_parts
      FROM (SELECT DISTINCT queue, partition FROM queen.maintenance_parked) d;
    IF v_queues IS NULL THEN
        RETURN;
    END IF;
    -- every partition first (created when missing), in the global creation order, in blocks
    -- of queen.resolve_partitions' 10000 pairs; no partition lock is taken yet
    v_from := 1;
    WHILE v_from <= pg_catalog.cardinality(v_queues) LOOP
        v_to := LEAST(v_from + 9999, pg_catalog.cardinality(v_queues));
        SELECT v_ids || pg_catalog.array_agg(r.partition_id ORDER BY r.idx) INTO v_ids
          FROM queen.resolve_partitions(v_queues[v_from:v_to], v_parts[v_from:v_to]) r;
        v_from := v_to + 1;
    END LOOP;
    -- then each partition's messages, in ascending partition id order
    FOR v_pair IN
        SELECT u.pid, v_queues[u.i] AS queue, v_parts[u.i] AS partition
        FROM pg_catalog.unnest(v_ids) WITH ORDINALITY AS u(pid, i)
        ORDER BY u.pid
    LOOP
        v_txns := '{}';
        v_mids := '{}';
        v_payloads := '{}';
        v_bytes := 0;
        FOR v_msg IN
            SELECT transaction_id, message_id, payload::text AS payload
            FROM queen.maintenance_parked
            WHERE queue = v_pair.queue AND partition = v_pair.partition
            ORDER BY seq
        LOOP
            IF pg_catalog.cardinality(v_txns) >= 1000
               OR v_bytes + pg_catalog.octet_length(v_msg.payload) > 16777216 THEN
                IF pg_catalog.cardinality(v_txns) > 0 THEN
                    SELECT pg_catalog.count(*) FILTER (WHERE p.status = 'queued'),
                           pg_catalog.count(*) FILTER (WHERE p.status <> 'queued')
                      INTO v_q, v_d
                      FROM queen.push_parked(v_pair.pid, v_txns, v_mids, v_payloads) p;
                    delivered := delivered + v_q;
                    duplicates := duplicates + v_d;
                END IF;
                v_txns := '{}';
                v_mids := '{}';
                v_payloads := '{}';
                v_bytes := 0;
            END IF;
            v_txns := v_txns || v_msg.transaction_id;
            v_mids := v_mids || v_msg.message_id;
            v_payloads := v_payloads || v_msg.payload;
            v_bytes := v_bytes + pg_catalog.octet_length(v_msg.payload);
        END LOOP;
        IF pg_catalog.cardinality(v_txns) > 0 THEN
            SELECT pg_catalog.count(*) FILTER (WHERE p.status = 'queued'),
                   pg_catalog.count(*) FILTER (WHERE p.status <> 'queued')
              INTO v_q, v_d
              FROM queen.push_parked(v_pair.pid, v_txns, v_mids, v_payloads) p;
            delivered := delivered + v_q;
            duplicates := duplicates + v_d;
        END IF;
        DELETE FROM queen.maintenance_parked
        WHERE queue = v_pair.queue AND partition = v_pair.partition;
    END LOOP;
END
$$;

-- POST /api/v1/system/maintenance {enabled}: switch maintenance mode on or off for every
-- sidecar of this database. Switching off delivers every parked message in this transaction
-- (queen.maintenance_drain) before it commits. {maintenanceMode, bufferedMessages,
-- bufferHealthy, message}, plus queen's delivered and duplicates (what this call pushed).
-- 22023 for a NULL p_enabled.
CREATE OR REPLACE FUNCTION queen.set_maintenance(p_enabled boolean) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_drained record;
    v_left bigint;
BEGIN
    IF p_enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be a boolean' USING ERRCODE = '22023';
    END IF;
    INSERT INTO queen.maintenance_mode (one, enabled) VALUES (true, false)
    ON CONFLICT (one) DO NOTHING;
    PERFORM 1 FROM queen.maintenance_mode WHERE one FOR UPDATE;
    UPDATE queen.maintenance_mode SET enabled = p_enabled, changed_at = pg_catalog.now()
    WHERE one AND enabled IS DISTINCT FROM p_enabled;
    IF p_enabled THEN
        SELECT pg_catalog.count(*) INTO v_left FROM queen.maintenance_parked;
        RETURN pg_catalog.jsonb_build_object(
            'maintenanceMode', true, 'bufferedMessages', v_left, 'bufferHealthy', true,
            'message', 'Maintenance mode enabled: pushes are parked in PostgreSQL until it is disabled',
            'delivered', 0, 'duplicates', 0);
    END IF;
    SELECT * INTO v_drained FROM queen.maintenance_drain();
    RETURN pg_catalog.jsonb_build_object(
        'maintenanceMode', false, 'bufferedMessages', 0, 'bufferHealthy', true,
        'message', pg_catalog.format('Maintenance mode disabled: %s parked messages delivered',
                                     v_drained.delivered + v_drained.duplicates),
        'delivered', v_drained.delivered, 'duplicates', v_drained.duplicates);
END
$$;
