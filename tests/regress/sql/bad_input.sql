--
-- bad_input: malformed push items are an ERROR with SQLSTATE 22023 and a precise message,
-- and nothing is written (not even the valid items before the bad one, nor a queue or
-- partition created on first contact).
--
-- SQLSTATE and message of a statement's error.
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION pg_temp.push_error(q text, p text, items jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT pg_temp.error_of(format('SELECT * FROM queen.push(%L, %L, %L::jsonb)', q, p, items)) $$;
CREATE FUNCTION pg_temp.state(q text, p text)
    RETURNS TABLE(last_offset bigint, segments bigint, txns bigint)
    LANGUAGE sql AS $$
    SELECT queen.log_end(lp.id, lp.last_offset),
           (SELECT count(*) FROM queen.log_segments s WHERE octet_length(s.data) > 0 AND s.partition_id = lp.id),
           (SELECT count(*) FROM queen.log_segments t WHERE t.hashes IS NOT NULL AND t.partition_id = lp.id)
    FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id
    WHERE qu.name = q AND lp.name = p $$;

-- An existing partition with one message.
SELECT status, message_offset FROM queen.push('bad_q', 'p', '[{"transactionId":"ok0","payload":0}]');
SELECT * FROM pg_temp.state('bad_q', 'p');

-- Items that are not an array.
SELECT pg_temp.push_error('bad_q', 'p', '{"transactionId":"a","payload":1}') AS object_not_array;
SELECT pg_temp.push_error('bad_q', 'p', '"items"') AS string_not_array;
SELECT pg_temp.push_error('bad_q', 'p', '17') AS number_not_array;
SELECT pg_temp.push_error('bad_q', 'p', 'null') AS json_null_not_array;

-- An item that is not an object (also after a valid item: the valid one is not written).
SELECT pg_temp.push_error('bad_q', 'p', '[1]') AS number_item;
SELECT pg_temp.push_error('bad_q', 'p', '["x"]') AS string_item;
SELECT pg_temp.push_error('bad_q', 'p', '[[]]') AS array_item;
SELECT pg_temp.push_error('bad_q', 'p', '[null]') AS null_item;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"ok1","payload":1}, 5]') AS second_item_bad;

-- payload missing.
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"a"}]') AS payload_missing;
SELECT pg_temp.push_error('bad_q', 'p', '[{}]') AS empty_item;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"ok1","payload":1},{"transactionId":"b"}]') AS second_payload_missing;

-- transactionId not a string.
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":1,"payload":1}]') AS txn_number;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":true,"payload":1}]') AS txn_boolean;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":{"id":"a"},"payload":1}]') AS txn_object;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":["a"],"payload":1}]') AS txn_array;

-- transactionId length: 65,535 bytes is the limit (accepted below), 65,536 is an error; the
-- limit is in bytes, so 21,846 three-byte characters (65,538 bytes) are too long as well.
SELECT pg_temp.push_error('bad_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', repeat('x', 65536), 'payload', 1))) AS txn_65536_bytes;
SELECT pg_temp.push_error('bad_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId',
        repeat(convert_from('\xe282ac'::bytea, 'UTF8'), 21846), 'payload', 1))) AS txn_65538_bytes_in_21846_chars;

-- Control characters: C0 (here 0x01, tab, newline, 0x1f), DEL and C1 (U+0085).
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"a\u0001b","payload":1}]') AS txn_0x01;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"a\tb","payload":1}]') AS txn_tab;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"a\nb","payload":1}]') AS txn_newline;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"a\u001fb","payload":1}]') AS txn_0x1f;
SELECT pg_temp.push_error('bad_q', 'p', '[{"transactionId":"a\u007fb","payload":1}]') AS txn_del;
SELECT pg_temp.push_error('bad_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', 'a' || convert_from('\xc285'::bytea, 'UTF8') || 'b',
                                         'payload', 1))) AS txn_c1_nel;

-- A NULL queue name, an empty partition name ("" is a queue name like any other, as Queen's
-- broker accepts it: tests/regress/sql/empty_queue_name.sql).
SELECT pg_temp.push_error(NULL, 'p', '[{"transactionId":"a","payload":1}]') AS null_queue_name;
SELECT pg_temp.push_error('bad_q', '', '[{"transactionId":"a","payload":1}]') AS empty_partition_name;

-- Nothing above wrote anything.
SELECT * FROM pg_temp.state('bad_q', 'p');
SELECT array_agg(transaction_id) AS stored FROM queen.read('bad_q', 'p', 0, 100);

-- A bad push to a queue and partition never seen creates neither.
SELECT pg_temp.push_error('bad_new', 'p', '[{"transactionId":"a"}]') AS new_queue_payload_missing;
SELECT pg_temp.push_error('bad_q', 'new_p', '[{"transactionId":1,"payload":1}]') AS new_partition_txn_number;
SELECT count(*) AS queue_created FROM queen.queues WHERE name = 'bad_new';
SELECT count(*) AS partition_created FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
WHERE q.name = 'bad_q' AND lp.name = 'new_p';

-- Accepted edges: exactly 65,535 bytes; printable non-ASCII; a space.
SELECT p.status, p.message_offset, octet_length(p.transaction_id) AS txn_bytes
FROM queen.push('bad_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', repeat('x', 65535), 'payload', 1))) p;
SELECT p.status, p.message_offset, p.transaction_id = repeat(convert_from('\xe282ac'::bytea, 'UTF8'), 21845) AS same_txn
FROM queen.push('bad_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId',
        repeat(convert_from('\xe282ac'::bytea, 'UTF8'), 21845), 'payload', 1))) p;
SELECT status, message_offset, transaction_id FROM queen.push('bad_q', 'p', '[{"transactionId":"with space","payload":1}]');
-- and the long one is a duplicate when re-sent.
SELECT p.status, p.message_offset
FROM queen.push('bad_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', repeat('x', 65535), 'payload', 2))) p;
SELECT * FROM pg_temp.state('bad_q', 'p');

-- The errors as a client sees them: ERROR with SQLSTATE 22023.
\set VERBOSITY sqlstate
SELECT * FROM queen.push('bad_q', 'p', '{}');
SELECT * FROM queen.push('bad_q', 'p', '[{"transactionId":"a"}]');
SELECT * FROM queen.push('bad_q', 'p', '[{"transactionId":"a\u0001","payload":1}]');
\set VERBOSITY default
