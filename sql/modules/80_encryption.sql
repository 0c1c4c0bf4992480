-- ================================================================ module: payload encryption
-- Queen MQ's encryptionEnabled (issue 27; docs/encryption.md). The sidecar encrypts every payload
-- of an encrypted queue (AES-256-GCM, key from its environment) before it reaches SQL and
-- decrypts what it returns; the database never sees a key nor a plaintext of such a queue. What
-- the extension does is refuse: a queue with queen.queues.encryption_enabled takes only
-- encryption envelopes (src/core/common/envelope_shape.h), checked by every push under the
-- partition row lock (src/pg/queue/push_encryption.cpp), by the maintenance park (below) and so by
-- the drain. configure switches the flag (queen.queue_set_encryption): on only while the queue
-- holds no message (log, DLQ, parked pushes), off at any time (stored envelopes stay encrypted).
--
-- Locking protocol (the top of sql/modules/00_core.sql): switching a queue's encryption on takes
-- its queue row FOR UPDATE (after configure's FOR NO KEY UPDATE: a stronger lock on the same
-- row, so no new order), then the queue's advisory encryption lock (queen.encryption_lock_key)
-- in exclusive mode, then every partition row of the queue in ascending id order
-- (queen.partitions_lock_for_write: the fence comes with it) and rewrites them. So a partition
-- cannot be created meanwhile (its insert's foreign-key check waits for the queue row), a push
-- in flight finishes before the emptiness check sees its segment, and a push that read the
-- queue row before the switch committed reads it again when it gets its partition row
-- (src/pg/storage/partition_lock.cpp, step 7). A park takes the advisory lock of each of its
-- queues in shared mode, in name order, after the maintenance mode row and before inserting
-- (it takes no queue or partition row): a park in flight finishes before a switch's check, and
-- one that comes after it reads the flag committed. Nothing else takes the advisory lock.

-- Internal (no grant): the push guard's test of a payload's text form (C).
CREATE OR REPLACE FUNCTION queen.payload_is_envelope(p_payload text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'queen_payload_is_envelope_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Internal (no grant): the key of a queue's advisory encryption lock (a switch takes it
-- exclusive, a park shared).
CREATE OR REPLACE FUNCTION queen.encryption_lock_key(p_queue text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.hashtextextended('queen.encryption' || chr(31) || p_queue, 27)
$$;

-- Internal (no grant): whether a queue holds any message whose payload a table keeps: a log
-- segment whose data retention has not dropped, a dead-letter copy, a parked push.
CREATE OR REPLACE FUNCTION queen.queue_holds_messages(p_qid bigint, p_queue text) RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM queen.log_partitions p
                     JOIN queen.log_segments s ON s.partition_id = p.id
                    WHERE p.queue_id = p_qid AND pg_catalog.octet_length(s.data) > 0)
        OR EXISTS (SELECT 1 FROM queen.log_partitions p
                     JOIN queen.consumer_dlq d ON d.partition_id = p.id
                    WHERE p.queue_id = p_qid)
        OR EXISTS (SELECT 1 FROM queen.maintenance_parked m WHERE m.queue = p_queue)
$$;

-- Internal (no grant; called by queen.configure with the queue row it holds): set a queue's
-- encryption flag. Unchanged: nothing. Off: at once (a NOTICE says what stays encrypted). On:
-- under the locks of this module's header, and only while the queue holds no message (55QE1,
-- nothing changed), in READ COMMITTED (0A000 otherwise: the emptiness check must see what
-- committed while it waited for its locks).
CREATE OR REPLACE FUNCTION queen.queue_set_encryption(p_qid bigint, p_queue text, p_on boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_old boolean;
BEGIN
    SELECT encryption_enabled INTO v_old FROM queen.queues WHERE id = p_qid;
    IF v_old IS NOT DISTINCT FROM p_on THEN
        RETURN;
    END IF;
    IF NOT p_on THEN
        UPDATE queen.queues SET encryption_enabled = false WHERE id = p_qid;
        RAISE NOTICE 'queue "%": encryptionEnabled is now false: new payloads are stored as sent', p_queue
            USING DETAIL = 'Payloads stored while it was true stay encrypted and are still decrypted by a sidecar holding their key.',
                  HINT = 'configure is a full replace: name encryptionEnabled in every configure call to keep it.';
        RETURN;
    END IF;
    IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'switching encryptionEnabled on needs READ COMMITTED'
            USING ERRCODE = '0A000';
    END IF;
    PERFORM 1 FROM queen.queues WHERE id = p_qid FOR UPDATE;
    PERFORM pg_catalog.pg_advisory_xact_lock(queen.encryption_lock_key(p_queue));
    PERFORM queen.partitions_lock_for_write(
        ARRAY(SELECT p.id FROM queen.log_partitions p WHERE p.queue_id = p_qid), 'no key update');
    -- a new row version of every partition: a push that read the queue row before this
    -- commit sees its partition row moved and reads the flag again (partition_lock.cpp, 7)
    UPDATE queen.log_partitions SET last_offset = last_offset WHERE queue_id = p_qid;
    IF queen.queue_holds_messages(p_qid, p_queue) THEN
        RAISE EXCEPTION 'queue "%" holds messages: encryptionEnabled can only be switched on for an empty queue', p_queue
            USING ERRCODE = '55QE1',
                  HINT = 'Encrypt a new queue, or delete this one (or let retention empty it) first; see docs/encryption.md.';
    END IF;
    UPDATE queen.queues SET encryption_enabled = true WHERE id = p_qid;
END
$$;

-- Internal (no grant; called by queen.maintenance_park once the mode is on): take the advisory
-- encryption lock of every queue of the items (shared, in name order), then refuse (22QE1) an
-- item of an encrypted queue whose payload is not an envelope, read by a later statement (a
-- snapshot taken after the locks).
CREATE OR REPLACE FUNCTION queen.encryption_park_guard(p_items json) RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_bad record;
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(queen.encryption_lock_key(d.q))
       FROM (SELECT DISTINCT e ->> 'queue' AS q
               FROM pg_catalog.json_array_elements(p_items) AS t(e) ORDER BY 1) d;
    SELECT t.i - 1 AS idx, q.name INTO v_bad
      FROM pg_catalog.json_array_elements(p_items) WITH ORDINALITY AS t(e, i)
      JOIN queen.queues q ON q.name = t.e ->> 'queue'
     WHERE q.encryption_enabled AND NOT queen.payload_is_envelope((t.e -> 'payload')::text)
     ORDER BY t.i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'item %: queue "%" is encrypted and this payload is not an encryption envelope',
            v_bad.idx, v_bad.name USING ERRCODE = '22QE1',
            HINT = 'Push to an encrypted queue through a sidecar that holds the queue''s key (QUEEN_ENCRYPTION_KEY); see docs/encryption.md.';
    END IF;
END
$$;

-- The sidecar's memo of what its pushes must do per queue: for each existing queue named, its
-- encryption flag and its dedupBy (a queue not returned does not exist: it would be created
-- unencrypted, dedup by transactionId). Read-only.
CREATE OR REPLACE FUNCTION queen.queue_modes(p_queues text[])
RETURNS TABLE (queue text, encryption_enabled boolean, dedup_by text)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT q.name, q.encryption_enabled, q.dedup_by FROM queen.queues q
     WHERE q.name = ANY (p_queues) ORDER BY q.name
$$;
