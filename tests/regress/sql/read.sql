--
-- read: queen.read(queue, partition, from_offset, limit) returns the log in offset order,
-- across segment boundaries, from from_offset, at most limit rows.
--
\i tests/regress/sql/sqlstate_of.psql

-- Three pushes: segments [0..2], [3..4], [5].
CREATE TEMP TABLE pushed AS
SELECT * FROM queen.push('read_q', 'p',
    '[{"transactionId":"r0","payload":{"k":"v","n":0}},
      {"transactionId":"r1","payload":"text"},
      {"transactionId":"r2","payload":[1,2,3]}]');
INSERT INTO pushed SELECT * FROM queen.push('read_q', 'p',
    '[{"transactionId":"r3","payload":42},{"transactionId":"r4","payload":true}]');
INSERT INTO pushed SELECT * FROM queen.push('read_q', 'p',
    '[{"transactionId":"r3","payload":"dup"},{"transactionId":"r5","payload":{"nested":{"x":[null]}}}]');

-- Everything: offsets in order, the pushed ids and transactionIds, payloads as JSON values,
-- created_at set and not in the future.
SELECT r.message_offset, r.transaction_id, r.payload, jsonb_typeof(r.payload) AS kind,
       r.message_id = p.message_id AS same_id,
       r.created_at IS NOT NULL AND r.created_at <= now() AS created_ok
FROM queen.read('read_q', 'p', 0, 100) r
LEFT JOIN pushed p ON p.message_offset = r.message_offset AND p.status = 'queued'
ORDER BY r.message_offset;

-- Rows come back in offset order without an ORDER BY (checked, not assumed).
SELECT array_agg(message_offset) AS offsets FROM queen.read('read_q', 'p', 0, 100);

-- from / limit, across a segment boundary and from inside a segment.
SELECT array_agg(message_offset) AS from_1_limit_3 FROM queen.read('read_q', 'p', 1, 3);
SELECT array_agg(message_offset) AS from_4_limit_10 FROM queen.read('read_q', 'p', 4, 10);
SELECT array_agg(message_offset) AS from_5_limit_1 FROM queen.read('read_q', 'p', 5, 1);
-- Past the end, or limit 0: no rows.
SELECT count(*) AS past_end FROM queen.read('read_q', 'p', 6, 10);
SELECT count(*) AS limit_0 FROM queen.read('read_q', 'p', 0, 0);

-- Paging by the last offset seen covers every message exactly once.
WITH RECURSIVE pages(next_from, got) AS (
    SELECT 0::bigint, ARRAY[]::bigint[]
    UNION ALL
    SELECT (SELECT max(message_offset) + 1 FROM queen.read('read_q', 'p', next_from, 2)),
           got || (SELECT array_agg(message_offset) FROM queen.read('read_q', 'p', next_from, 2))
    FROM pages
    WHERE EXISTS (SELECT 1 FROM queen.read('read_q', 'p', next_from, 2))
)
SELECT got AS paged FROM pages ORDER BY cardinality(got) DESC LIMIT 1;

-- An existing but empty partition reads as empty.
SELECT count(*) AS resolved FROM queen.resolve_partition('read_q', 'empty');
SELECT count(*) AS empty_read FROM queen.read('read_q', 'empty', 0, 10);

-- Unknown queue or partition: 42704, and read creates nothing.
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.read('read_nope', 'p', 0, 10)$q$) AS unknown_queue,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.read('read_q', 'nope', 0, 10)$q$) AS unknown_partition;
SELECT count(*) AS created FROM queen.queues WHERE name = 'read_nope';
SELECT count(*) AS created FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
WHERE q.name = 'read_q' AND lp.name = 'nope';

-- Negative limit or offset: 22023.
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.read('read_q', 'p', 0, -1)$q$) AS negative_limit,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.read('read_q', 'p', -1, 10)$q$) AS negative_offset;

-- The messages a client sees (terse).
\set VERBOSITY terse
SELECT * FROM queen.read('read_nope', 'p', 0, 10);
SELECT * FROM queen.read('read_q', 'p', 0, -1);
\set VERBOSITY default
