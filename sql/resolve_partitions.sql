--
-- queen.resolve_partitions: queen.resolve_partition for many pairs in one statement (the
-- sidecar's batch resolution). One row per input position (idx, 0-based), in input order;
-- missing queues and partitions are created in (queue, partition) order, each once.
--
SELECT queen.configure('rps_w', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT partition_id AS old FROM queen.resolve_partition('rps_w', 'old') \gset
SELECT count(*) AS pushed FROM queen.push('rps_w', 'old', '[{"transactionId": "a", "payload": 1}, {"transactionId": "b", "payload": 2}]');

-- Input unsorted, one pair twice, one existing partition with data, two new queues.
SELECT r.idx, r.partition_id = :old AS is_old, r.dedup_window_seconds, r.last_offset, r.txns_start
FROM queen.resolve_partitions(ARRAY['rps_z', 'rps_w', 'rps_a', 'rps_z', 'rps_w'],
                              ARRAY['p2', 'old', 'p1', 'p2', 'new']) r ORDER BY r.idx;
-- Created in (queue, partition) order: rps_a/p1, rps_w/new, rps_z/p2; each exactly once.
SELECT q.name, p.name, rank() OVER (ORDER BY p.id) AS creation
FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
WHERE q.name IN ('rps_a', 'rps_z') OR (q.name = 'rps_w' AND p.name = 'new') ORDER BY p.id;
-- The same ids on a second call; nothing new is created.
SELECT count(*) AS partitions_before FROM queen.log_partitions \gset
SELECT bool_and(r.partition_id = q.partition_id) AS same_ids
FROM queen.resolve_partitions(ARRAY['rps_z', 'rps_w', 'rps_a'], ARRAY['p2', 'new', 'p1']) r
CROSS JOIN LATERAL queen.resolve_partition((ARRAY['rps_z', 'rps_w', 'rps_a'])[r.idx + 1],
                                           (ARRAY['p2', 'new', 'p1'])[r.idx + 1]) q;
SELECT count(*) = :partitions_before AS nothing_created FROM queen.log_partitions;
-- Empty arrays: no rows.
SELECT count(*) AS none FROM queen.resolve_partitions('{}', '{}');

-- Bad input: 22023, and nothing is created.
CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(ARRAY['rps_bad'], ARRAY['a', 'b'])$q$) AS lengths,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(NULL, ARRAY['a'])$q$) AS null_array,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(ARRAY['rps_bad', ''], ARRAY['a', 'b'])$q$) AS empty_queue,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(ARRAY['rps_bad', 'rps_bad'], ARRAY['a', NULL])$q$) AS null_partition,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(ARRAY[ARRAY['rps_bad']], ARRAY[ARRAY['a']])$q$) AS two_dims,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(array_fill('rps_bad'::text, ARRAY[10001]), array_fill('a'::text, ARRAY[10001]))$q$) AS too_many;
SELECT count(*) AS bad_created FROM queen.queues WHERE name = 'rps_bad';

-- Least privilege: writers may call it, readers and PUBLIC may not.
SELECT has_function_privilege('queen_writer', 'queen.resolve_partitions(text[], text[])', 'EXECUTE') AS writer,
       has_function_privilege('queen_reader', 'queen.resolve_partitions(text[], text[])', 'EXECUTE') AS reader,
       has_function_privilege('public', 'queen.resolve_partitions(text[], text[])', 'EXECUTE') AS public;

-- queen.push_segments_named: a NULL partition id names the partition instead; it is created
-- and pushed to in one transaction, and its metadata (after the push) follows as idx -1 rows.
CREATE FUNCTION pg_temp.u32le(n bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT decode(lpad(to_hex(n & 255), 2, '0') || lpad(to_hex((n >> 8) & 255), 2, '0') ||
                  lpad(to_hex((n >> 16) & 255), 2, '0') || lpad(to_hex((n >> 24) & 255), 2, '0'), 'hex') $$;
-- A one-entry JSON segment.
CREATE FUNCTION pg_temp.seg1(id uuid, txn text, payload text) RETURNS bytea LANGUAGE sql AS $$
    SELECT '\x5153010001000000'::bytea || decode(replace(id::text, '-', ''), 'hex') || '\x01'::bytea ||
           pg_temp.u32le(octet_length(convert_to(txn, 'UTF8'))) || convert_to(txn, 'UTF8') ||
           pg_temp.u32le(octet_length(convert_to(payload, 'UTF8'))) || convert_to(payload, 'UTF8') $$;
SELECT partition_id AS known FROM queen.resolve_partition('rps_w', 'old') \gset
SELECT seg, idx, status, left(message_id::text, 8) = '018f0000' AS id_sent, message_offset,
       partition_id = :known AS is_known,
       partition_id IS NOT NULL AS has_meta, dedup_window_seconds, last_offset, txns_start
FROM queen.push_segments_named(
    ARRAY[NULL, :known, NULL]::bigint[], ARRAY['rps_n', '', 'rps_w'], ARRAY['p', '', 'fresh'],
    ARRAY[queen.txn_hash('n1'), queen.txn_hash('a'), queen.txn_hash('f1')],
    ARRAY[pg_temp.seg1('018f0000-0000-7000-8000-000000000001', 'n1', '1'),
          pg_temp.seg1('018f0000-0000-7000-8000-000000000002', 'a', '2'),
          pg_temp.seg1('018f0000-0000-7000-8000-000000000003', 'f1', '3')],
    ARRAY[-1, -1, -1]::bigint[], ARRAY[0, 0, 0]) ORDER BY idx, seg;
-- Stored where named; a repeat of n1 by name is a duplicate naming the stored copy.
SELECT message_offset, transaction_id FROM queen.read('rps_n', 'p', 0, 10);
SELECT seg, idx, status, message_id, message_offset, last_offset
FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['rps_n'], ARRAY['p'],
    ARRAY[queen.txn_hash('n1')], ARRAY[pg_temp.seg1('018f0000-0000-7000-8000-000000000009', 'n1', '9')],
    ARRAY[-1]::bigint[], ARRAY[0]) ORDER BY idx;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['rps_n', 'x'], ARRAY['p'], '{}', '{}', '{}', '{}')$q$) AS lengths,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY[''], ARRAY['p'], ARRAY[''::bytea], ARRAY['\x5153010000000000'::bytea], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS empty_queue;
SELECT has_function_privilege('queen_writer', 'queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[], bigint[], int[])', 'EXECUTE') AS writer,
       has_function_privilege('queen_reader', 'queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[], bigint[], int[])', 'EXECUTE') AS reader,
       has_function_privilege('queen_writer', 'queen.resolve_partitions_core(text[], text[])', 'EXECUTE') AS core_writer;

SELECT count(queen.drop_queue(name)) AS dropped FROM queen.queues WHERE name LIKE 'rps\_%';
