-- queen: pops (issue 18; §3.3 and §4 of the wire facts). A pop leases a partition for one
-- group: within a group a partition serves one popper at a time, until every message of the
-- batch it delivered is acked, a nack or "retry" ack releases it, or its lease expires. The
-- messages are those after the group's cursor (queen.consumer_groups.committed_offset), read
-- through queen.read; a pop never deletes anything.
--
-- Finding partitions (issue 27). A pop by queue (the any-partition route) never lists the
-- queue's partitions: it walks them in id order through log_partitions_queue_idx (queue_id, id:
-- columns no push changes, so a push's update of last_offset stays HOT and writes nothing more),
-- from a random point of the queue's id span (from its first id when the span is under 64 ids),
-- wrapping around once. Each step is one statement returning the next candidate (messages after
-- the group's cursor, no live lease in it), passing over drained and leased partitions by
-- itself; the pop claims it or, when another pop holds or creates it, goes on from there, until
-- the claims fill p_max_partitions or p_batch. With a backlog the first candidate is usually
-- claimable, so a pop costs the same at 50 or 50,000 partitions; with k of a queue's P
-- partitions deliverable a pop passes over about P/(k+1); a pop that finds nothing passes over
-- all P once (the price of an empty answer: no push writes anything the consuming side could
-- index). Concurrent pops start apart, so they rarely meet. A pop makes at most 64 first
-- contacts (state rows it creates, each holding its creator key until commit, and advisory
-- locks fill PostgreSQL's shared lock table); past that it claims only partitions the group
-- has a state row on, and the next pop goes on.
--
-- Locks (the global order: the top of sql/modules/00_core.sql; the consuming model's:
-- sql/modules/60_consume.sql). A claim of one (partition, group) takes, in this order:
--   1. the partition row FOR KEY SHARE (no push conflicts with it; a queue deletion's FOR UPDATE
--      does), then the partition's slot fence on a shard;
--   2. only when the group has no state row there yet (a first contact): the row's creator key,
--      a transaction-level advisory lock on queen.consume_creator_key(partition, group) that
--      every pop creating that row holds until it commits;
--   3. its queen.consumer_state row FOR UPDATE (inserted first when missing);
--   4. at most the consumer_groups row of the same (partition, group) (a subscription's first
--      cursor).
-- A pop by partition claims one partition and may wait at each step. A pop by queue takes 1 and
-- 3 with SKIP LOCKED and 2 with a try-lock, so it never waits for another pop: neither for a
-- state row another pop holds nor for one another pop is inserting (an INSERT ... ON CONFLICT
-- would wait for that insert's commit; the key says it is under way, and with the key held no
-- twin insert can be; only a row created and committed in the instant between the pop's read
-- and its insert can still make that insert wait, for the row's next writer, as before).
-- Why the keys add no deadlock: the only transaction that waits for a key is a pop by
-- partition at step 2, holding nothing but its partition's KEY SHARE lock; a key's holder never
-- waits for a key (a pop by queue only tries them; a pop by partition takes one), and only a
-- queue deletion can wait for a KEY SHARE lock, and it takes its partitions before any state
-- row or key. So no cycle of waits can pass through a key.

-- The creator key of a (partition, group)'s state row: a transaction-level advisory lock key
-- (a 64-bit hash; a collision only costs a skipped candidate or a short wait). Internal.
CREATE OR REPLACE FUNCTION queen.consume_creator_key(p_pid bigint, p_group text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.hashtextextended(p_pid::text || '/' || p_group, 27)
$$;

-- Claim one partition for a group under the lease p_lease: NULL when it cannot be claimed now
-- (a live lease in this group, an active window buffer, or, with p_skip, another pop holding
-- its state row), else the messages it delivered as wire objects (an empty array: nothing
-- deliverable now; the partition is then left unleased). Internal.
CREATE OR REPLACE FUNCTION queen.pop_claim(p_queue text, p_partition text, p_pid bigint,
                                           p_last bigint, p_group text, p_lease uuid,
                                           p_batch int, p_opts jsonb, p_start timestamptz,
                                           p_now timestamptz, p_skip boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_window  int := (p_opts ->> 'windowBuffer')::int;
    v_delay   int := (p_opts ->> 'delayedProcessing')::int;
    v_secs    int := (p_opts ->> 'leaseTime')::int;
    v_newest  timestamptz;
    v_created boolean;
    v_lock    text;
    v_lease   uuid;
    v_expires timestamptz;
    v_pos     bigint;
    v_msgs    jsonb;
    v_n       int;
    v_uuid    text := queen.partition_uuid(p_pid)::text;
BEGIN
    IF p_last < 0 THEN
        RETURN '[]'::jsonb;  -- never pushed to
    END IF;
    -- window buffer: the newest message must be older than windowBuffer seconds (no lease taken)
    IF v_window > 0 THEN
        SELECT r.created_at INTO v_newest FROM queen.read(p_queue, p_partition, p_last, 1) r;
        IF v_newest > p_now - make_interval(secs => v_window) THEN
            RETURN NULL;
        END IF;
    END IF;
    v_created := false;
    -- the partition first (KEY SHARE: pushes never conflict, a queue deletion does), so that
    -- creating rows that reference it never waits while this pop holds other state rows; then
    -- the shard's fence (issue 20), before any state row: a pop over a queue passes by a
    -- partition whose slot is moving (or not this shard's), as by a locked one, so the queue's
    -- other slots never pause; a pop of that partition gets 55Q02
    v_lock := queen.partition_lock_for_write(p_pid, 'key share', p_skip);
    IF v_lock = 'absent' THEN
        -- with p_skip: being deleted; else deleted meanwhile
        RETURN CASE WHEN p_skip THEN NULL ELSE '[]'::jsonb END;
    ELSIF v_lock = 'fenced' THEN
        RETURN NULL;
    END IF;
    IF p_skip THEN
        -- never wait for a row another pop holds or is creating: read it first (no lock)
        SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
         WHERE s.partition_id = p_pid AND s.group_name = p_group;
        IF FOUND THEN
            IF v_lease IS NOT NULL AND v_expires > p_now THEN
                RETURN NULL;  -- leased in this group
            END IF;
            SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
             WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                RETURN NULL;  -- another pop is claiming it right now
            END IF;
        ELSE
            -- first contact: the row's creator key, tried, never waited for (another pop is
            -- creating the row now); every creator holds it until commit, so the insert below
            -- never meets an uncommitted twin to wait for
            IF NOT pg_try_advisory_xact_lock(queen.consume_creator_key(p_pid, p_group)) THEN
                RETURN NULL;
            END IF;
            INSERT INTO queen.consumer_state (partition_id, group_name) VALUES (p_pid, p_group)
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RETURN NULL;  -- created by a pop that committed since the read: pass it by
            END IF;
            v_created := true;  -- this pop's row: locked, no lease
        END IF;
    ELSE
        SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires FROM queen.consumer_state s
         WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE;
        IF NOT FOUND THEN
            -- first contact: wait for a concurrent creator (its key), then create the row
            PERFORM pg_advisory_xact_lock(queen.consume_creator_key(p_pid, p_group));
            INSERT INTO queen.consumer_state (partition_id, group_name) VALUES (p_pid, p_group)
            ON CONFLICT DO NOTHING;
            v_created := FOUND;
            IF NOT v_created THEN
                -- created by the creator waited for
                SELECT s.lease_id, s.lease_expires_at INTO v_lease, v_expires
                  FROM queen.consumer_state s
                 WHERE s.partition_id = p_pid AND s.group_name = p_group FOR UPDATE;
                IF NOT FOUND THEN
                    RETURN '[]'::jsonb;  -- its group deleted meanwhile
                END IF;
            END IF;
        END IF;
    END IF;
    IF v_lease IS NOT NULL AND v_expires > p_now THEN
        RETURN NULL;  -- leased in this group
    END IF;
    -- a subscription's first contact with this partition: start after the older messages
    IF v_created AND p_start IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM queen.consumer_groups g WHERE g.partition_id = p_pid AND g.group_name = p_group) THEN
        v_pos := queen.consume_offset_before(p_queue, p_partition, p_last, p_start);
        IF v_pos >= 0 THEN
            PERFORM queen.consume_advance(p_pid, p_group, v_pos);
        END IF;
    END IF;
    SELECT COALESCE(g.committed_offset, -1) INTO v_pos FROM (SELECT 1) one
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p_pid AND g.group_name = p_group;
    -- the messages after the cursor, in order, up to the first one still delayed
    SELECT COALESCE(jsonb_agg(x.m ORDER BY x.off), '[]'::jsonb), count(*) INTO v_msgs, v_n
      FROM (SELECT r.message_offset AS off,
                   jsonb_build_object('id', r.message_id, 'transactionId', r.transaction_id,
                                      'traceId', NULL, 'data', r.payload, 'producerSub', NULL,
                                      -- queen.consume_iso, inlined (one call per message costs)
                                      'createdAt', to_char(r.created_at AT TIME ZONE 'UTC',
                                                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                                      'partitionId', v_uuid,
                                      'partition', p_partition, 'leaseId', p_lease,
                                      'consumerGroup', p_group) AS m,
                   bool_and(r.created_at <= p_now - make_interval(secs => v_delay))
                       OVER (ORDER BY r.message_offset) AS due
              FROM queen.read(p_queue, p_partition, v_pos + 1, p_batch) r) x
     WHERE x.due;
    IF v_n = 0 THEN
        UPDATE queen.consumer_state SET lease_id = NULL, lease_expires_at = NULL
         WHERE partition_id = p_pid AND group_name = p_group AND lease_id IS NOT NULL;
        RETURN '[]'::jsonb;
    END IF;
    UPDATE queen.consumer_state
       SET lease_id = p_lease,
           lease_expires_at = p_now + make_interval(secs => CASE WHEN v_secs > 0 THEN v_secs ELSE 60 END),
           batch_size = v_n, acked_count = 0
     WHERE partition_id = p_pid AND group_name = p_group;
    RETURN v_msgs;
END
$$;

-- Pop for a group (NULL or '' = queue mode, "__QUEUE_MODE__"): NULL when there is nothing to
-- deliver (the wire's 204), else the broker's answer {success, queue, partition, partitionId,
-- leaseId, consumerGroup, messages, partitionsClaimed}. p_partition names the partition (the
-- partition route); NULL is the any-partition route: partitions with messages after the
-- group's cursor and no live lease in it, claimed in ascending id order from a random one (from
-- the first when the queue's ids span under 64; wrapping around) until p_max_partitions are
-- held or p_batch messages gathered, all under one lease id (see the top of this file). A
-- lease lasts the queue's leaseTime (0: 60 s). p_now (default clock_timestamp()) is the pop's
-- clock, for tests.
-- 22023 for a NULL queue, a batch or partition cap below 1; an unknown queue or partition is
-- NULL, never an error.
CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text DEFAULT NULL,
                                     p_group text DEFAULT NULL, p_batch int DEFAULT 1,
                                     p_max_partitions int DEFAULT 1,
                                     p_subscription_mode text DEFAULT NULL,
                                     p_subscription_from text DEFAULT NULL,
                                     p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now     timestamptz := COALESCE(p_now, clock_timestamp());
    v_group   text := queen.consume_group(p_group);
    v_lease   uuid := gen_random_uuid();
    v_qid     bigint;
    v_opts    jsonb;
    v_sub     record;
    v_r       record;
    v_got     jsonb;
    v_all     jsonb := '[]'::jsonb;
    v_claimed int := 0;
    v_count   int := 0;
    v_pid     bigint;
    v_name    text;
    v_lo      bigint;
    v_hi      bigint;
    v_start   bigint;
    v_from    bigint;
    v_to      bigint;
    v_fresh   int := 0;  -- first contacts tried (each may hold a creator key until commit)
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION 'queue name must be a string' USING ERRCODE = '22023';
    END IF;
    IF p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'batch must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_max_partitions IS NULL OR p_max_partitions < 1 THEN
        RAISE EXCEPTION 'partitions must be at least 1' USING ERRCODE = '22023';
    END IF;
    PERFORM queen.reserved_queue_guard(p_queue);
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_queue;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_opts := queen.consume_options(v_qid);
    SELECT * INTO v_sub FROM queen.consume_subscription(p_queue, v_group, p_subscription_mode,
                                                        p_subscription_from, v_now);
    IF v_sub.fresh THEN
        RETURN NULL;  -- a "new" subscription's first pop answers empty
    END IF;
    IF p_partition IS NOT NULL THEN
        SELECT p.id, queen.log_end(p.id, p.last_offset) AS last_offset INTO v_r FROM queen.log_partitions p
         WHERE p.queue_id = v_qid AND p.name = p_partition;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        v_got := queen.pop_claim(p_queue, p_partition, v_r.id, v_r.last_offset, v_group, v_lease,
                                 p_batch, v_opts, v_sub.start_at, v_now, false);
        IF v_got IS NULL OR jsonb_array_length(v_got) = 0 THEN
            RETURN NULL;
        END IF;
        v_all := v_got;
        v_claimed := 1;
        v_pid := v_r.id;
        v_name := p_partition;
    ELSE
        -- the queue's partition ids span [v_lo, v_hi] (two probes of log_partitions_queue_idx);
        -- a span under 64 ids is scanned from its start, a longer one from a random point
        -- (wrapping around), so that concurrent pops start apart. The planner must take
        -- that index, not the primary key: ids grow with time, so a queue's partitions sit
        -- after every older queue's, and a walk of the primary key from the lowest id (what
        -- min()/max() or `queue_id = v_qid ORDER BY id` get, the planner assuming the queue's
        -- rows are spread evenly) filters out all of them first (measured: 803 rows for one
        -- pop). Hence queue_id as a closed range of one value: the equality the planner would
        -- drop from ORDER BY (queue_id, id) stays, and only log_partitions_queue_idx gives
        -- that order.
        SELECT p.id INTO v_lo FROM queen.log_partitions p
         WHERE p.queue_id >= v_qid AND p.queue_id <= v_qid ORDER BY p.queue_id, p.id LIMIT 1;
        SELECT p.id INTO v_hi FROM queen.log_partitions p
         WHERE p.queue_id >= v_qid AND p.queue_id <= v_qid
         ORDER BY p.queue_id DESC, p.id DESC LIMIT 1;
        IF v_lo IS NULL THEN
            RETURN NULL;
        END IF;
        v_start := CASE WHEN v_hi - v_lo < 64 THEN v_lo
                        ELSE v_lo + floor(random() * (v_hi - v_lo + 1))::bigint END;
        v_from := v_start;
        v_to := v_hi;
        LOOP
            -- the next candidate in [v_from, v_to]: messages after the group's cursor and no
            -- live lease in it, as this statement sees them (the claim checks again under its
            -- locks); the drained and leased partitions before it are passed over inside the
            -- one statement
            -- (the log's end as queen.log_end computes it, written out here: a function call
            -- per partition passed over would cost more than the index descent)
            SELECT p.id, p.name, e.last_offset, s.partition_id IS NULL AS fresh INTO v_r
              FROM queen.log_partitions p
             CROSS JOIN LATERAL (SELECT GREATEST(p.last_offset,
                                     (SELECT le.end_offset FROM queen.log_segments le
                                       WHERE le.partition_id = p.id
                                       ORDER BY le.base_offset DESC LIMIT 1)) AS last_offset) e
              LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = v_group
              LEFT JOIN queen.consumer_state s ON s.partition_id = p.id AND s.group_name = v_group
             WHERE p.queue_id >= v_qid AND p.queue_id <= v_qid  -- the index's order (above)
               AND p.id >= v_from AND p.id <= v_to
               AND e.last_offset > COALESCE(g.committed_offset, -1)
               AND (s.lease_id IS NULL OR s.lease_expires_at <= v_now)
               AND (s.partition_id IS NOT NULL OR v_fresh < 64)
             ORDER BY p.queue_id, p.id
             LIMIT 1;
            IF NOT FOUND THEN
                -- this range is exhausted: then the ids before the start, once
                EXIT WHEN v_to < v_start OR v_start = v_lo;
                v_from := v_lo;
                v_to := v_start - 1;
                CONTINUE;
            END IF;
            v_from := v_r.id + 1;
            IF v_r.fresh THEN
                v_fresh := v_fresh + 1;
            END IF;
            v_got := queen.pop_claim(p_queue, v_r.name, v_r.id, v_r.last_offset, v_group, v_lease,
                                     p_batch - v_count, v_opts, v_sub.start_at, v_now, true);
            CONTINUE WHEN v_got IS NULL OR jsonb_array_length(v_got) = 0;
            IF v_claimed = 0 THEN
                v_pid := v_r.id;
                v_name := v_r.name;
            END IF;
            v_all := v_all || v_got;
            v_count := v_count + jsonb_array_length(v_got);
            v_claimed := v_claimed + 1;
            EXIT WHEN v_claimed >= p_max_partitions OR v_count >= p_batch;
        END LOOP;
        IF v_claimed = 0 THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN jsonb_build_object('success', true, 'queue', p_queue, 'partition', v_name,
                              'partitionId', queen.partition_uuid(v_pid), 'leaseId', v_lease,
                              'consumerGroup', v_group, 'messages', v_all,
                              'partitionsClaimed', v_claimed);
END
$$;
