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
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partitions(ARRAY['rps_bad', NULL], ARRAY['a', 'b'])$q$) AS null_queue,
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
\i tests/regress/sql/segment_helpers.psql
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
       pg_temp.sqlstate_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY[NULL::text], ARRAY['p'], ARRAY[''::bytea], ARRAY['\x5153010000000000'::bytea], ARRAY[-1]::bigint[], ARRAY[0])$q$) AS null_queue;
SELECT has_function_privilege('queen_writer', 'queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[], bigint[], int[], bytea[])', 'EXECUTE') AS writer,
       has_function_privilege('queen_reader', 'queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[], bigint[], int[], bytea[])', 'EXECUTE') AS reader,
       has_function_privilege('public', 'queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[], bigint[], int[], bytea[])', 'EXECUTE') AS public,
       has_function_privilege('queen_writer', 'queen.resolve_partitions_core(text[], text[])', 'EXECUTE') AS core_writer;


-- push_segments_named's p_hints: the hinted vouch of push_segments for the segments whose
-- partition id is known, in the same call as a first contact. A hint that confirms answers
-- its message `duplicate` of the hinted original; one that does not confirm sends its segment
-- to the full probe; either way the verdicts are those of an unhinted, unvouched push (a twin
-- partition receives the same messages without vouch or hints).
-- A JSON segment of txns (payload 1), ids mid(first_id), mid(first_id + 1), ...
CREATE FUNCTION pg_temp.segn(first_id int, txns text[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT '\x51530100'::bytea || pg_temp.u32le(cardinality(txns)) ||
           (SELECT string_agg(decode(replace(pg_temp.mid(first_id + i - 1)::text, '-', ''), 'hex') || '\x01'::bytea ||
                              pg_temp.u32le(octet_length(convert_to(txns[i], 'UTF8'))) ||
                              convert_to(txns[i], 'UTF8') || pg_temp.u32le(1) || '\x31'::bytea,
                              ''::bytea ORDER BY i)
              FROM generate_subscripts(txns, 1) AS i) $$;
CREATE FUNCTION pg_temp.hashn(txns text[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT string_agg(queen.txn_hash(t), ''::bytea ORDER BY i) FROM unnest(txns) WITH ORDINALITY AS u(t, i) $$;
-- Hints as (index, offset) pairs: 12 bytes each, big-endian.
CREATE FUNCTION pg_temp.hints(VARIADIC pairs bigint[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT string_agg(int4send(pairs[2 * i - 1]::int) || int8send(pairs[2 * i]), ''::bytea ORDER BY i)
    FROM generate_series(1, cardinality(pairs) / 2) AS i $$;
-- One named push: the known partition h (vouch v, hints), a new partition named (fresh name)
-- and, unhinted and unvouched, the twin t of h. Answers as (segment, idx, status, id number,
-- offset); the new partition's metadata row shows its last offset.
CREATE FUNCTION pg_temp.named_hinted(h bigint, t bigint, fresh text, first_id int, txns text[],
                                     v bigint, hint bytea)
    RETURNS TABLE(seg int, idx int, status text, id int, message_offset bigint, last_offset bigint)
    LANGUAGE sql AS $$
    SELECT seg, idx, status, right(message_id::text, 6)::int, message_offset, last_offset
    FROM queen.push_segments_named(ARRAY[h, NULL, t], ARRAY['', 'rps_h', ''], ARRAY['', fresh, ''],
        ARRAY[pg_temp.hashn(txns), pg_temp.hashn(ARRAY[fresh]), pg_temp.hashn(txns)],
        ARRAY[pg_temp.segn(first_id, txns), pg_temp.segn(first_id + 100, ARRAY[fresh]),
              pg_temp.segn(first_id + 200, txns)],
        ARRAY[v, -1, -1], ARRAY[3600, 0, 0], ARRAY[hint, NULL, NULL])
    ORDER BY idx < 0, seg, idx $$;
SELECT partition_id AS h FROM queen.resolve_partition('rps_h', 'known') \gset
SELECT partition_id AS t FROM queen.resolve_partition('rps_h', 'twin') \gset
-- a, b, c at offsets 0..2 of both (ids 1..3 in h, 201..203 in the twin)
SELECT * FROM pg_temp.named_hinted(:h, :t, 'new0', 1, ARRAY['a', 'b', 'c'], -1, NULL);
SELECT * FROM queen.push_hint_stats();
-- Confirmed: 'c' hinted at 2 and 'a' at 0 are duplicates of them (ids 3 and 1), n1 is probed
-- above the vouch only and queued at 3; the twin answers the same from its full probe.
SELECT * FROM pg_temp.named_hinted(:h, :t, 'new1', 10, ARRAY['c', 'n1', 'a'], 2, pg_temp.hints(0, 2, 2, 0));
SELECT * FROM queen.push_hint_stats();
-- Not confirmed: 'a' hinted at 1 (which holds 'b'), n2 hinted at 3 (which holds n1): the full
-- probe decides, so 'a' is still the duplicate of offset 0 and n2 is queued at 4.
SELECT * FROM pg_temp.named_hinted(:h, :t, 'new2', 20, ARRAY['a', 'n2'], 3, pg_temp.hints(0, 1, 1, 3));
SELECT * FROM queen.push_hint_stats();
-- Confirmed again, the hint at the vouch itself: 'b' at 1 and n2 at 4 (vouch 4) are
-- duplicates, n3 is queued at 5.
SELECT * FROM pg_temp.named_hinted(:h, :t, 'new3', 30, ARRAY['b', 'n2', 'n3'], 4, pg_temp.hints(0, 1, 1, 4));
SELECT * FROM queen.push_hint_stats();
-- What each partition holds: the same transactionIds at the same offsets.
SELECT p.name, r.message_offset, r.transaction_id FROM queen.log_partitions p
JOIN queen.queues q ON q.id = p.queue_id AND q.name = 'rps_h'
CROSS JOIN LATERAL queen.read('rps_h', p.name, 0, 10) r WHERE p.name IN ('known', 'twin')
ORDER BY r.message_offset, p.name;
-- Hints are checked like push_segments' (22023, nothing written, no partition created): one
-- hint list per segment; index below the segment's count; strictly ascending; offset at or
-- below the segment's p_verified (so a named segment, vouched -1, takes none).
SELECT pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segments_named(ARRAY[%s, NULL]::bigint[], ARRAY['', 'rps_hbad'], ARRAY['', 'x'], ARRAY[pg_temp.hashn(ARRAY['z1']), pg_temp.hashn(ARRAY['z2'])], ARRAY[pg_temp.segn(90, ARRAY['z1']), pg_temp.segn(91, ARRAY['z2'])], ARRAY[4, -1]::bigint[], ARRAY[3600, 0], ARRAY[pg_temp.hints(0, 0)])$q$, :h)) AS hint_count,
       pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segments_named(ARRAY[%s, NULL]::bigint[], ARRAY['', 'rps_hbad'], ARRAY['', 'x'], ARRAY[pg_temp.hashn(ARRAY['z1']), pg_temp.hashn(ARRAY['z2'])], ARRAY[pg_temp.segn(90, ARRAY['z1']), pg_temp.segn(91, ARRAY['z2'])], ARRAY[4, -1]::bigint[], ARRAY[3600, 0], ARRAY[pg_temp.hints(1, 0), NULL])$q$, :h)) AS index_range,
       pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segments_named(ARRAY[%s, NULL]::bigint[], ARRAY['', 'rps_hbad'], ARRAY['', 'x'], ARRAY[pg_temp.hashn(ARRAY['a', 'b']), pg_temp.hashn(ARRAY['z2'])], ARRAY[pg_temp.segn(90, ARRAY['a', 'b']), pg_temp.segn(92, ARRAY['z2'])], ARRAY[4, -1]::bigint[], ARRAY[3600, 0], ARRAY[pg_temp.hints(1, 1, 0, 0), NULL])$q$, :h)) AS ascending,
       pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segments_named(ARRAY[%s, NULL]::bigint[], ARRAY['', 'rps_hbad'], ARRAY['', 'x'], ARRAY[pg_temp.hashn(ARRAY['z1']), pg_temp.hashn(ARRAY['z2'])], ARRAY[pg_temp.segn(90, ARRAY['z1']), pg_temp.segn(91, ARRAY['z2'])], ARRAY[2, -1]::bigint[], ARRAY[3600, 0], ARRAY[pg_temp.hints(0, 3), NULL])$q$, :h)) AS above_vouch,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['rps_hbad'], ARRAY['x'], ARRAY[pg_temp.hashn(ARRAY['z2'])], ARRAY[pg_temp.segn(91, ARRAY['z2'])], ARRAY[-1]::bigint[], ARRAY[0], ARRAY[pg_temp.hints(0, 0)])$q$) AS named_hinted;
SELECT count(*) AS hbad_created FROM queen.queues WHERE name = 'rps_hbad';
-- It runs without the per-backend probe cache (the full probe decides; see the module): an
-- unvouched named push to an existing partition leaves that cache as it was, and the setting
-- is what it was afterwards, in a transaction too.
SET queen.probe_cache = on;
SELECT partitions AS cached_before FROM queen.probe_cache_stats() \gset
SELECT count(*) AS rows FROM pg_temp.named_hinted(:h, :t, 'new4', 40, ARRAY['a', 'n4'], -1, NULL);
SELECT partitions = :cached_before AS cache_untouched, current_setting('queen.probe_cache') AS setting
FROM queen.probe_cache_stats();
BEGIN;
SELECT count(*) AS rows FROM pg_temp.named_hinted(:h, :t, 'new5', 50, ARRAY['b', 'n5'], -1, NULL);
SELECT current_setting('queen.probe_cache') AS setting_in_transaction;
COMMIT;
SELECT queen.log_end(id, last_offset) AS h_last_offset FROM queen.log_partitions WHERE id = :h;

SELECT count(queen.drop_queue(name)) AS dropped FROM queen.queues WHERE name LIKE 'rps\_%';
