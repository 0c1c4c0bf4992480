-- queen: the consuming model of Queen MQ's wire (issue 18; the facts are
-- ../shared/reference/queen-client-wire-facts.md, the differences docs/queen-compatibility.md):
-- pops with leases per (partition, group), acks and nacks with retries and the dead-letter
-- queue, lease renewal, subscription modes, queue and group deletion, and the broker's
-- transaction. Its tables are in sql/schema/50_consume.sql; the sidecar's HTTP routes call
-- these functions and add nothing to their semantics.
--
-- Locks (the order is written at the top of sql/modules/00_core.sql):
--   partition rows (ascending id): FOR NO KEY UPDATE by queen.transaction_wire (like a push),
--   FOR KEY SHARE by acks and pops (which no push conflicts with; a queue deletion's FOR
--   UPDATE does, so rows referencing a partition are never created while waiting for it)
--   -> on a shard, the slots' fence locks (ShareLock; src/pg/storage/slot_fence.h): every writer
--      here checks its partitions' slots before any row below (a lease renewal, which locks no
--      partition, first of all; the first pop of a "new" subscription before its row)
--   -> a group's subscription row (created at its first pop of a queue)
--   -> a pop's first contact with a (partition, group): the state row's creator key (an
--      advisory transaction lock, pops only; sql/modules/60_consume_pop.sql)
--   -> queen.consumer_state rows, FOR UPDATE, ascending (partition id, group name COLLATE "C"),
--      created in that order too
--   -> the queen.consumer_groups row (the cursor) of a (partition, group) whose state row is held
--   -> queen.consumer_dlq inserts.
-- A pop reads through queen.read and claims the partitions of an any-partition pop (partition
-- KEY SHARE, then state row) with SKIP LOCKED, a first contact's creator key with a try-lock,
-- so it never waits for another pop (not even for one creating the same state row). Acks and
-- renewals lock all the state rows they will touch, in the order, before changing anything.

-- ---------------------------------------------------------------- partition ids on the wire
-- The wire's partitionId: a UUID string made of the partition's id (the sidecar writes the same
-- mapping in src/core/common/partition_uuid.h). NULL for NULL.
CREATE OR REPLACE FUNCTION queen.partition_uuid(p_id bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ('00000000-0000-8000-8000-' || pg_catalog.lpad(pg_catalog.to_hex(p_id), 12, '0'))::uuid
     WHERE p_id >= 0 AND p_id < 281474976710656
$$;

-- The partition id of a wire partitionId, or NULL when the text is not of that form.
CREATE OR REPLACE FUNCTION queen.partition_of_uuid(p text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ('x' || pg_catalog.lpad(pg_catalog.substr(p, 25), 16, '0'))::bit(64)::bigint
     WHERE p OPERATOR(pg_catalog.~) '^00000000-0000-8000-8000-[0-9a-fA-F]{12}$'
$$;

-- ---------------------------------------------------------------- options
-- Queen's 15 queue options with the broker's defaults (an unsent option returns to these).
CREATE OR REPLACE FUNCTION queen.consume_defaults() RETURNS jsonb
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT '{"leaseTime": 300, "maxSize": 0, "ttl": 3600, "retryLimit": 3, "retryDelay": 1000,
             "deadLetterQueue": false, "dlqAfterMaxRetries": false, "priority": 0,
             "delayedProcessing": 0, "windowBuffer": 0, "retentionSeconds": 0,
             "completedRetentionSeconds": 0, "retentionEnabled": false,
             "encryptionEnabled": false, "maxWaitTimeSeconds": 0}'::jsonb
$$;

-- The 15 options of a configure call: each sent one checked (numbers: whole, >= 0, except
-- priority, any whole number; flags: booleans; 22023 otherwise), the unsent (or null) ones at
-- their defaults. Keys that are none of the 15 are left to the caller. Internal.
CREATE OR REPLACE FUNCTION queen.consume_options_check(p_opts jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_out jsonb := queen.consume_defaults();
    v_key text;
    v_def jsonb;
    v_val jsonb;
BEGIN
    FOR v_key, v_def IN SELECT key, value FROM jsonb_each(queen.consume_defaults()) LOOP
        v_val := p_opts -> v_key;
        CONTINUE WHEN v_val IS NULL OR jsonb_typeof(v_val) = 'null';
        IF jsonb_typeof(v_def) = 'boolean' THEN
            IF jsonb_typeof(v_val) <> 'boolean' THEN
                RAISE EXCEPTION '% must be true or false', v_key USING ERRCODE = '22023';
            END IF;
        ELSIF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
              OR abs(v_val::numeric) > 2147483647
              OR (v_key <> 'priority' AND v_val::numeric < 0) THEN
            RAISE EXCEPTION '% must be a whole number%', v_key,
                CASE WHEN v_key = 'priority' THEN '' ELSE ' >= 0' END USING ERRCODE = '22023';
        END IF;
        v_out := jsonb_set(v_out, ARRAY[v_key], v_val);
    END LOOP;
    RETURN v_out;
END
$$;

-- A queue's 15 options as stored (the defaults for a queue never configured). Internal.
CREATE OR REPLACE FUNCTION queen.consume_options(p_queue_id bigint) RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE((SELECT o.options FROM queen.queue_options o WHERE o.queue_id = p_queue_id),
                    queen.consume_defaults())
$$;

-- ---------------------------------------------------------------- small helpers
-- A timestamp as the wire writes it: ISO-8601, microseconds, UTC, "Z".
CREATE OR REPLACE FUNCTION queen.consume_iso(p_ts timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.to_char(p_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- The group of a call: a non-empty string, else queue mode.
CREATE OR REPLACE FUNCTION queen.consume_group(p_group text) RETURNS text
LANGUAGE sql IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(NULLIF(p_group, ''), '__QUEUE_MODE__')
$$;

-- The highest stored offset of a partition whose message was created before p_start, or -1
-- (binary search with queen.read; messages are stored in creation order). Internal.
CREATE OR REPLACE FUNCTION queen.consume_offset_before(p_queue text, p_partition text,
                                                       p_last bigint, p_start timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_lo  bigint := -1;          -- every stored offset <= v_lo was created before p_start
    v_hi  bigint := p_last + 1;  -- every stored offset >= v_hi was created at or after it
    v_mid bigint;
    v_off bigint;
    v_at  timestamptz;
BEGIN
    WHILE v_hi - v_lo > 1 LOOP
        v_mid := v_lo + (v_hi - v_lo) / 2;
        SELECT r.message_offset, r.created_at INTO v_off, v_at
          FROM queen.read(p_queue, p_partition, v_mid, 1) r;
        IF NOT FOUND OR v_off >= v_hi OR v_at >= p_start THEN
            v_hi := v_mid;
        ELSE
            v_lo := v_off;
        END IF;
    END LOOP;
    RETURN v_lo;
END
$$;

-- A group's subscription start on a queue (NULL: all history), fixed at its first pop there;
-- fresh is true when this call fixed a "new"/"now" subscription (that first pop answers
-- empty; it also starts the group's cursor at the end of every partition stored so far).
-- Queue mode has none. Locks: the subscription row (its insert), then those cursor rows in
-- ascending partition id order, before any state row. Internal.
CREATE OR REPLACE FUNCTION queen.consume_subscription(p_queue text, p_group text, p_mode text,
                                                      p_from text, p_now timestamptz,
                                                      OUT start_at timestamptz, OUT fresh boolean)
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_mode  text;
    v_start timestamptz;
BEGIN
    fresh := false;
    IF p_group = '__QUEUE_MODE__' THEN
        RETURN;
    END IF;
    SELECT s.start_at INTO start_at FROM queen.consumer_subscriptions s
     WHERE s.queue_name = p_queue AND s.group_name = p_group;
    IF FOUND THEN
        RETURN;
    END IF;
    IF p_from IN ('now', 'new') OR (p_from IS NULL AND p_mode = 'new') THEN
        v_mode := 'new';
        v_start := p_now;
    ELSIF p_from IS NOT NULL AND p_from <> '' THEN
        BEGIN
            v_start := p_from::timestamptz;
            v_mode := 'from';
        EXCEPTION WHEN OTHERS THEN
            v_start := NULL;
        END;
    END IF;
    IF v_start IS NULL AND v_mode IS NULL AND p_mode = 'new' THEN
        v_mode := 'new';
        v_start := p_now;
    END IF;
    IF v_mode = 'new' THEN
        -- a shard's fence (issue 20), before the subscription row: the cursors below go on every
        -- partition of the queue, so one in a moving slot refuses this first pop (55Q02)
        PERFORM queen.slot_fence_check_partition(p.id)
           FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
          WHERE q.name = p_queue AND queen.log_end(p.id, p.last_offset) >= 0 ORDER BY p.id;
    END IF;
    INSERT INTO queen.consumer_subscriptions (queue_name, group_name, mode, start_at)
    VALUES (p_queue, p_group, COALESCE(v_mode, 'all'), v_start)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
        start_at := v_start;
        fresh := v_mode = 'new';
        IF fresh THEN
            -- every message stored so far is before the subscription: start the group's cursor
            -- on each partition at its end now (ascending id), rather than searching each
            -- partition by time at its first pop there
            INSERT INTO queen.consumer_groups AS g (partition_id, group_name, committed_offset)
            SELECT p.id, p_group, queen.log_end(p.id, p.last_offset)
              FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
             WHERE q.name = p_queue AND queen.log_end(p.id, p.last_offset) >= 0
             ORDER BY p.id
            ON CONFLICT (partition_id, group_name) DO UPDATE
               SET committed_offset = greatest(g.committed_offset, EXCLUDED.committed_offset);
        END IF;
    ELSE
        SELECT s.start_at INTO start_at FROM queen.consumer_subscriptions s
         WHERE s.queue_name = p_queue AND s.group_name = p_group;
    END IF;
END
$$;

-- Copy a message into the dead-letter queue. Internal.
CREATE OR REPLACE FUNCTION queen.consume_to_dlq(p_queue text, p_partition text, p_pid bigint,
                                                p_group text, p_off bigint, p_error text,
                                                p_retries int)
RETURNS void
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO queen.consumer_dlq (partition_id, group_name, message_offset, message_id,
                                    transaction_id, payload, error_message, retry_count, created_at)
    SELECT p_pid, p_group, r.message_offset, r.message_id, r.transaction_id, r.payload, p_error,
           p_retries, r.created_at
      FROM queen.read(p_queue, p_partition, p_off, 1) r
     WHERE r.message_offset = p_off
$$;

-- Move a group's cursor on a partition to at least p_off (creating its row), folding in the
-- acks recorded above it (queen.ack's pending ones) that are now contiguous. Locks the
-- consumer_groups row (its UPDATE or INSERT). Internal.
CREATE OR REPLACE FUNCTION queen.consume_advance(p_pid bigint, p_group text, p_off bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pos  bigint;
    v_next bigint;
BEGIN
    UPDATE queen.consumer_groups SET committed_offset = p_off
     WHERE partition_id = p_pid AND group_name = p_group AND committed_offset < p_off;
    IF NOT FOUND THEN
        INSERT INTO queen.consumer_groups AS g (partition_id, group_name, committed_offset)
        VALUES (p_pid, p_group, p_off)
        ON CONFLICT (partition_id, group_name) DO UPDATE
           SET committed_offset = greatest(g.committed_offset, EXCLUDED.committed_offset)
         WHERE g.committed_offset < EXCLUDED.committed_offset;
        IF NOT FOUND THEN
            RETURN;  -- already at or past p_off
        END IF;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM queen.consumer_acks
                    WHERE partition_id = p_pid AND group_name = p_group) THEN
        RETURN;
    END IF;
    v_pos := p_off;
    FOR v_next IN SELECT message_offset FROM queen.consumer_acks
                   WHERE partition_id = p_pid AND group_name = p_group
                     AND message_offset > v_pos ORDER BY message_offset LOOP
        EXIT WHEN v_next <> v_pos + 1;
        v_pos := v_next;
    END LOOP;
    DELETE FROM queen.consumer_acks
     WHERE partition_id = p_pid AND group_name = p_group AND message_offset <= v_pos;
    IF v_pos > p_off THEN
        UPDATE queen.consumer_groups SET committed_offset = v_pos
         WHERE partition_id = p_pid AND group_name = p_group;
    END IF;
END
$$;
