-- "" is a queue name like any other (Queen's broker accepts queue(""), wire facts §3.1; its
-- client suite configures it): configure, push, dedup, read, pop and drop work on it, exactly
-- as on any queue. NULL stays refused (22023). A partition name is never "".
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- The broker's configure form (one of Queen's options named) answers configured and creates Default.
SELECT r ->> 'configured' AS configured, r ->> 'queue' AS queue, r -> 'options' ->> 'leaseTime' AS lease_time
FROM queen.configure('', '{"leaseTime": 30}') AS r;
SELECT p.name FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id WHERE q.name = '' ORDER BY p.name;

-- Push twice with the same transactionId: the second is a duplicate of the first.
SELECT index, status, message_offset, transaction_id
FROM queen.push('', 'Default', '[{"transactionId": "e1", "payload": {"n": 1}}]');
SELECT index, status, message_offset, transaction_id
FROM queen.push('', 'Default', '[{"transactionId": "e1", "payload": {"n": 2}}, {"transactionId": "e2", "payload": {"n": 3}}]');
SELECT message_offset, transaction_id, payload FROM queen.read('', 'Default', 0, 10);

-- A pop by queue and its ack.
SELECT r ->> 'queue' AS queue, r ->> 'partition' AS partition,
       jsonb_path_query_array(r -> 'messages', '$[*].transactionId') AS txns
FROM queen.pop('', NULL, NULL, 10) AS r;

-- NULL is still refused; a "" partition too.
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure(NULL, '{"leaseTime": 30}')$q$) AS null_configure,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.push(NULL, 'Default', '[{"transactionId": "x", "payload": 1}]')$q$) AS null_push,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.push('', '', '[{"transactionId": "x", "payload": 1}]')$q$) AS empty_partition;

SELECT r ->> 'queue' AS queue, r ->> 'partitionsDropped' AS partitions_dropped FROM queen.drop_queue('') AS r;
SELECT count(*) AS left_over FROM queen.queues WHERE name = '';
