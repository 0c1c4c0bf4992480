--
-- queen.push_segments_named beyond resolve_partitions.sql: the metadata rows against the
-- stored state, empty and partly duplicate named segments, a named and an id'd segment in one
-- call, the bad-input SQLSTATEs and messages, and the statement path (queen.direct_write off).
--
SET client_min_messages = warning;
-- SQLSTATE and message of a statement's error (partition ids masked).
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'partition id \d+', 'partition id <id>');
END $$;
CREATE FUNCTION pg_temp.u32(n bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT substr(int4send(n::int), 4, 1) || substr(int4send(n::int), 3, 1) ||
           substr(int4send(n::int), 2, 1) || substr(int4send(n::int), 1, 1) $$;
-- A JSON segment of txns (payload 1), message ids 018f0000-0000-7000-8000-<first + i>.
CREATE FUNCTION pg_temp.seg(first_id int, txns text[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT '\x51530100'::bytea || pg_temp.u32(cardinality(txns)) ||
           COALESCE((SELECT string_agg(decode('018f000000007000800' || lpad((first_id + i)::text, 13, '0'), 'hex') ||
                                       '\x01'::bytea || pg_temp.u32(octet_length(txns[i])) ||
                                       convert_to(txns[i], 'UTF8') || pg_temp.u32(1) || '\x31'::bytea,
                                       ''::bytea ORDER BY i)
                       FROM generate_subscripts(txns, 1) AS i), ''::bytea) $$;
CREATE FUNCTION pg_temp.hashes(txns text[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT COALESCE(string_agg(queen.txn_hash(t), ''::bytea ORDER BY i), ''::bytea)
    FROM unnest(txns) WITH ORDINALITY AS u(t, i) $$;
SELECT queen.configure('pn_w', '{"dedupWindowSeconds": 120}') IS NOT NULL AS configured;
SELECT partition_id AS known FROM queen.resolve_partition('pn_w', 'known') \gset
SELECT count(*) AS pushed FROM queen.push('pn_w', 'known', '[{"transactionId": "k1", "payload": 1}]');

-- One call: a new partition named with a partly duplicate segment (x twice, y), the known
-- partition by id (k1 again, k2), an empty named segment of a new partition, and the known
-- partition's queue's other new partition by name. Metadata rows follow for the named ones.
SELECT seg, idx, status, message_offset, partition_id IS NOT NULL AS has_meta,
       dedup_window_seconds, last_offset, txns_start
FROM queen.push_segments_named(
    ARRAY[NULL, :known, NULL, NULL]::bigint[], ARRAY['pn_a', 'ignored', 'pn_e', 'pn_w'],
    ARRAY['p', 'ignored', 'empty', 'other'],
    ARRAY[pg_temp.hashes('{x,x,y}'), pg_temp.hashes('{k1,k2}'), pg_temp.hashes('{}'), pg_temp.hashes('{o1}')],
    ARRAY[pg_temp.seg(1, '{x,x,y}'), pg_temp.seg(10, '{k1,k2}'), pg_temp.seg(20, '{}'), pg_temp.seg(30, '{o1}')],
    ARRAY[-1, -1, -1, -1]::bigint[], ARRAY[0, 0, 0, 0]);
-- The metadata rows are the stored state after the commit.
CREATE TEMP TABLE pn_meta AS
SELECT * FROM queen.push_segments_named(ARRAY[NULL, NULL]::bigint[], ARRAY['pn_a', 'pn_w'], ARRAY['p', 'known'],
    ARRAY[pg_temp.hashes('{y,z}'), pg_temp.hashes('{k3}')],
    ARRAY[pg_temp.seg(40, '{y,z}'), pg_temp.seg(50, '{k3}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])
WHERE idx = -1;
SELECT m.seg, m.last_offset, m.partition_id = lp.id AS same_id,
       m.dedup_window_seconds = qq.dedup_window_seconds AS same_window,
       m.last_offset = queen.log_end(lp.id, lp.last_offset) AS same_last, m.txns_start = lp.txns_start AS same_start
FROM pn_meta m JOIN queen.log_partitions lp ON lp.id = m.partition_id
JOIN queen.queues qq ON qq.id = lp.queue_id ORDER BY m.seg;
SELECT q.name, p.name, r.message_offset, r.transaction_id
FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id
CROSS JOIN LATERAL queen.read(q.name, p.name, 0, 10) r
WHERE q.name LIKE 'pn\_%' ORDER BY q.name, p.name, r.message_offset;

-- Bad input: the SQLSTATE and message, and nothing created.
SELECT pg_temp.error_of(format($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, %s]::bigint[], ARRAY['pn_w', ''], ARRAY['known', ''], ARRAY[pg_temp.hashes('{d1}'), pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])$q$, :known)) AS named_and_id_same;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, NULL]::bigint[], ARRAY['pn_bad', 'pn_bad'], ARRAY['p', 'p'], ARRAY[pg_temp.hashes('{d1}'), pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])$q$) AS named_twice;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(NULL, ARRAY['pn_bad'], ARRAY['p'], ARRAY[pg_temp.hashes('{d1}')], ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS null_ids;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['pn_bad'], NULL, ARRAY[pg_temp.hashes('{d1}')], ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS null_partitions;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, 1]::bigint[], ARRAY['pn_bad'], ARRAY['p', 'q'], ARRAY[pg_temp.hashes('{d1}')], ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS short_queues;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY[NULL::text], ARRAY['p'], ARRAY[pg_temp.hashes('{d1}')], ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS null_queue;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, NULL]::bigint[], ARRAY['pn_bad', 'pn_bad'], ARRAY['p', ''], ARRAY[pg_temp.hashes('{d1}'), pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])$q$) AS empty_partition;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, NULL]::bigint[], ARRAY['pn_bad', '__queen_x'], ARRAY['p', 'p'], ARRAY[pg_temp.hashes('{d1}'), pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])$q$) AS reserved_queue;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(array_fill(NULL::bigint, ARRAY[10001]), array_fill('pn_bad'::text, ARRAY[10001]), array_fill('p'::text, ARRAY[10001]), '{}', '{}', '{}', '{}')$q$) AS too_many;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['pn_bad'], ARRAY['p'], NULL, ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS null_hashes;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, NULL]::bigint[], ARRAY['pn_bad', 'pn_bad'], ARRAY['p', 'q'], ARRAY[pg_temp.hashes('{d1}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])$q$) AS short_hashes;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['pn_bad'], ARRAY['p'], ARRAY[pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS wrong_hash;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['pn_bad'], ARRAY['p'], ARRAY[NULL::bytea], ARRAY[pg_temp.seg(60, '{d1}')], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS null_element;
SELECT pg_temp.error_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, -5]::bigint[], ARRAY['pn_bad', ''], ARRAY['p', ''], ARRAY[pg_temp.hashes('{d1}'), pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])$q$) AS unknown_id;
SELECT pg_temp.error_of(format($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL, %s]::bigint[], ARRAY['pn_bad', ''], ARRAY['p', ''], ARRAY[pg_temp.hashes('{d1}'), pg_temp.hashes('{d2}')], ARRAY[pg_temp.seg(60, '{d1}'), pg_temp.seg(61, '{d2}')], ARRAY[-1, 99]::bigint[], ARRAY[0, 3600])$q$, :known)) AS vouch_above_last;
SELECT count(*) AS bad_created FROM queen.queues WHERE name IN ('pn_bad', '__queen_x');

-- The statement path (queen.direct_write off) answers the same: an existing partition and a
-- new one by name.
SET queen.direct_write = off;
SELECT seg, idx, status, message_offset, last_offset, txns_start
FROM queen.push_segments_named(ARRAY[NULL, NULL]::bigint[], ARRAY['pn_w', 'pn_s'], ARRAY['known', 'p'],
    ARRAY[pg_temp.hashes('{k1,k9}'), pg_temp.hashes('{s1}')],
    ARRAY[pg_temp.seg(70, '{k1,k9}'), pg_temp.seg(80, '{s1}')], ARRAY[-1, -1]::bigint[], ARRAY[0, 0])
ORDER BY idx = -1, seg, idx;
RESET queen.direct_write;
SELECT name, queen.log_end(id, last_offset) AS last_offset FROM queen.log_partitions WHERE id IN (SELECT lp.id FROM queen.log_partitions lp
  JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name IN ('pn_w', 'pn_s')) ORDER BY name;

-- Several missing partitions of one queue (unsorted, one named twice) are created once each,
-- in byte order (collation "C": upper case first), as one pair at a time would create them.
SELECT idx, partition_id IS NOT NULL AS resolved, last_offset
FROM queen.resolve_partitions(ARRAY['pn_o', 'pn_o', 'pn_o', 'pn_o', 'pn_o'], ARRAY['b', 'a', 'B', 'a', 'c']) ORDER BY idx;
SELECT p.name, rank() OVER (ORDER BY p.id) AS creation
FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'pn_o' ORDER BY p.id;

SELECT count(queen.drop_queue(name)) AS dropped FROM queen.queues WHERE name LIKE 'pn\_%';
