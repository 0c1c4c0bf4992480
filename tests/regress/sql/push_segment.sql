--
-- push_segment / push_segments: the binary path. The caller sends a segment blob encoded as
-- src/core/common/segment_codec.h says (header 'Q' 'S' 0x01 0x00 + u32le count; entries: 16-byte id,
-- content type byte (1 = JSON), u32le txn length, txn, u32le payload length, payload), the
-- 16-byte xxh3_128 hashes of the transactionIds, and p_verified (the caller's vouch that none
-- of the hashes occurs at or below that offset; -1 or NULL = probe the whole window) with
-- p_window, the window the vouch was made for (a vouch without it is ignored).
-- The caller chooses the message ids, so ids are printed raw here.
--

\i tests/regress/sql/segment_helpers.psql
-- A segment blob: one JSON entry per array element.
CREATE FUNCTION pg_temp.test_segment(ids uuid[], txns text[], payloads text[]) RETURNS bytea
    LANGUAGE sql AS $$
    SELECT '\x51530100'::bytea || pg_temp.u32le(coalesce(cardinality(ids), 0)) ||
           coalesce((SELECT string_agg(decode(replace(ids[i]::text, '-', ''), 'hex') || '\x01'::bytea ||
                                       pg_temp.u32le(octet_length(convert_to(txns[i], 'UTF8'))) ||
                                       convert_to(txns[i], 'UTF8') ||
                                       pg_temp.u32le(octet_length(convert_to(payloads[i], 'UTF8'))) ||
                                       convert_to(payloads[i], 'UTF8'),
                                       ''::bytea ORDER BY i)
                     FROM generate_subscripts(ids, 1) AS i), ''::bytea) $$;
-- A one-entry segment with any content type and raw payload bytes.
CREATE FUNCTION pg_temp.test_segment_raw(id uuid, ctype int, txn text, payload bytea) RETURNS bytea
    LANGUAGE sql AS $$
    SELECT '\x5153010001000000'::bytea || decode(replace(id::text, '-', ''), 'hex') ||
           decode(lpad(to_hex(ctype), 2, '0'), 'hex') ||
           pg_temp.u32le(octet_length(convert_to(txn, 'UTF8'))) || convert_to(txn, 'UTF8') ||
           pg_temp.u32le(octet_length(payload)) || payload $$;
-- Push one segment of (ids, txns, payloads) with the matching hashes; a vouch is made for
-- the default window (3600 s), which every queue here has or undercuts.
CREATE FUNCTION pg_temp.seg(pid bigint, ids int[], txns text[], verified bigint)
    RETURNS TABLE(idx int, status text, message_id uuid, message_offset bigint) LANGUAGE sql AS $$
    SELECT * FROM queen.push_segment(pid, pg_temp.test_hashes(txns),
        pg_temp.test_segment((SELECT array_agg(pg_temp.mid(x) ORDER BY o) FROM unnest(ids) WITH ORDINALITY AS u(x, o)),
                             txns,
                             (SELECT array_agg(format('{"id":%s}', x) ORDER BY o) FROM unnest(ids) WITH ORDINALITY AS u(x, o))),
        verified, 3600) $$;
\i tests/regress/sql/sqlstate_of.psql
CREATE FUNCTION pg_temp.state(pid bigint)
    RETURNS TABLE(last_offset bigint, segments bigint, txns bigint) LANGUAGE sql AS $$
    SELECT queen.log_end(lp.id, lp.last_offset),
           (SELECT count(*) FROM queen.log_segments s WHERE octet_length(s.data) > 0 AND s.partition_id = lp.id),
           (SELECT count(*) FROM queen.log_segments t WHERE t.hashes IS NOT NULL AND t.partition_id = lp.id)
    FROM queen.log_partitions lp WHERE lp.id = pid $$;

-- The helper encodes exactly the documented layout (one entry, spelled out byte by byte).
SELECT pg_temp.test_segment(ARRAY[pg_temp.mid(1)], ARRAY['ab'], ARRAY['{}'])
     = '\x5153010001000000'::bytea || '\x018f0000000070008000000000000001'::bytea || '\x01'::bytea ||
       '\x02000000'::bytea || '\x6162'::bytea || '\x02000000'::bytea || '\x7b7d'::bytea AS layout_ok;

------------------------------------------------------------------------------------------
-- resolve_partition: creates queue and partition on first contact, returns the same id after.
------------------------------------------------------------------------------------------
SELECT partition_id AS pid FROM queen.resolve_partition('seg_q', 'p0') \gset
SELECT partition_id = :pid AS same_id, dedup_window_seconds, last_offset, txns_start
FROM queen.resolve_partition('seg_q', 'p0');

------------------------------------------------------------------------------------------
-- push_segment: new entries are queued with the caller's ids at contiguous offsets.
------------------------------------------------------------------------------------------
SELECT * FROM pg_temp.seg(:pid, ARRAY[1, 2, 3], ARRAY['s1', 's2', 's3'], -1);
SELECT * FROM pg_temp.state(:pid);
-- The blob is stored unchanged when every message survives; log_txns holds the hashes.
SELECT base_offset, end_offset, message_count,
       data = pg_temp.test_segment(ARRAY[pg_temp.mid(1), pg_temp.mid(2), pg_temp.mid(3)],
                                   ARRAY['s1', 's2', 's3'],
                                   ARRAY['{"id":1}', '{"id":2}', '{"id":3}']) AS blob_unchanged
FROM queen.log_segments WHERE partition_id = :pid;
SELECT base_offset, end_offset, hashes = pg_temp.test_hashes(ARRAY['s1', 's2', 's3']) AS hashes_ok
FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = :pid;
-- The SQL read path sees the same messages.
SELECT message_offset, message_id, transaction_id, payload FROM queen.read('seg_q', 'p0', 0, 100);

-- A retry with other ids: every entry is a duplicate carrying the ORIGINAL ids and offsets;
-- nothing written. NULL p_verified means the full probe, like -1.
SELECT * FROM pg_temp.seg(:pid, ARRAY[11, 12, 13], ARRAY['s1', 's2', 's3'], -1);
SELECT * FROM pg_temp.seg(:pid, ARRAY[11, 12, 13], ARRAY['s1', 's2', 's3'], NULL);
SELECT * FROM pg_temp.state(:pid);

-- A partially duplicate segment: survivors written in the same call with contiguous offsets
-- (3, 4); a repeat inside the segment follows its first occurrence.
SELECT * FROM pg_temp.seg(:pid, ARRAY[21, 22, 23, 24], ARRAY['s2', 's4', 's4', 's5'], -1);
SELECT * FROM pg_temp.state(:pid);
SELECT base_offset, end_offset, message_count FROM queen.log_segments WHERE partition_id = :pid ORDER BY base_offset;
SELECT base_offset, hashes = pg_temp.test_hashes(ARRAY['s4', 's5']) AS survivors_only
FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = :pid AND base_offset = 3;
SELECT message_offset, message_id, transaction_id, payload FROM queen.read('seg_q', 'p0', 3, 100);

-- An empty segment answers nothing and writes nothing.
SELECT count(*) AS answers FROM queen.push_segment(:pid, ''::bytea, pg_temp.test_segment(ARRAY[]::uuid[], ARRAY[]::text[], ARRAY[]::text[]), -1);
SELECT * FROM pg_temp.state(:pid);

------------------------------------------------------------------------------------------
-- p_verified narrowing: with a TRUE vouch the verdicts are those of the full probe.
-- Partition va always probes the whole window (-1); partition vb receives the tightest true
-- vouch (one below the lowest stored occurrence of any of the segment's hashes, else
-- last_offset). The answers must be identical.
------------------------------------------------------------------------------------------
SELECT partition_id AS va FROM queen.resolve_partition('seg_q', 'va') \gset
SELECT partition_id AS vb FROM queen.resolve_partition('seg_q', 'vb') \gset
CREATE TEMP TABLE vouch(part text, step int, idx int, status text, message_id uuid, message_offset bigint);
INSERT INTO vouch SELECT 'va', 1, * FROM pg_temp.seg(:va, ARRAY[101, 102], ARRAY['v1', 'v2'], -1);
INSERT INTO vouch SELECT 'vb', 1, * FROM pg_temp.seg(:vb, ARRAY[101, 102], ARRAY['v1', 'v2'], -1);
INSERT INTO vouch SELECT 'va', 2, * FROM pg_temp.seg(:va, ARRAY[103, 104], ARRAY['v3', 'v2'], -1);
INSERT INTO vouch SELECT 'vb', 2, * FROM pg_temp.seg(:vb, ARRAY[103, 104], ARRAY['v3', 'v2'], 0);
INSERT INTO vouch SELECT 'va', 3, * FROM pg_temp.seg(:va, ARRAY[105], ARRAY['v4'], -1);
INSERT INTO vouch SELECT 'vb', 3, * FROM pg_temp.seg(:vb, ARRAY[105], ARRAY['v4'], 2);
INSERT INTO vouch SELECT 'va', 4, * FROM pg_temp.seg(:va, ARRAY[106, 107, 108], ARRAY['v4', 'v5', 'v3'], -1);
INSERT INTO vouch SELECT 'vb', 4, * FROM pg_temp.seg(:vb, ARRAY[106, 107, 108], ARRAY['v4', 'v5', 'v3'], 1);
INSERT INTO vouch SELECT 'va', 5, * FROM pg_temp.seg(:va, ARRAY[109], ARRAY['v5'], -1);
INSERT INTO vouch SELECT 'vb', 5, * FROM pg_temp.seg(:vb, ARRAY[109], ARRAY['v5'], 3);
SELECT step, idx, status, message_id, message_offset FROM vouch WHERE part = 'va' ORDER BY step, idx;
SELECT count(*) AS differences FROM (
    (SELECT step, idx, status, message_id, message_offset FROM vouch WHERE part = 'va'
     EXCEPT SELECT step, idx, status, message_id, message_offset FROM vouch WHERE part = 'vb')
    UNION ALL
    (SELECT step, idx, status, message_id, message_offset FROM vouch WHERE part = 'vb'
     EXCEPT SELECT step, idx, status, message_id, message_offset FROM vouch WHERE part = 'va')) d;
SELECT (SELECT last_offset FROM pg_temp.state(:va)) = (SELECT last_offset FROM pg_temp.state(:vb)) AS same_allocator;

------------------------------------------------------------------------------------------
-- Bad calls: 22023 (hash blob length, hash mismatch, malformed segment, bad transactionId)
-- or 42704 (unknown partition id); nothing written.
------------------------------------------------------------------------------------------
SELECT * FROM pg_temp.state(:pid);
\set seg3 'pg_temp.test_segment(ARRAY[pg_temp.mid(31), pg_temp.mid(32), pg_temp.mid(33)], ARRAY[''e1'', ''e2'', ''e3''], ARRAY[''1'', ''2'', ''3''])'
SELECT label, pg_temp.sqlstate_of(q) AS sqlstate FROM (VALUES
    ('hashes one short',
     format('SELECT * FROM queen.push_segment(%s, substr(pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), 1, 47), %s, -1)', :pid, :'seg3')),
    ('hashes for two of three',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'']), %s, -1)', :pid, :'seg3')),
    ('hashes for four of three',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'',''e4'']), %s, -1)', :pid, :'seg3')),
    ('hash mismatch (e2 hashed as x2)',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''x2'',''e3'']), %s, -1)', :pid, :'seg3')),
    ('hash of a stored transactionId for a new one',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''s1'',''e3'']), %s, -1)', :pid, :'seg3')),
    ('bad magic',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), overlay(%s placing ''\x5a''::bytea from 1), -1)', :pid, :'seg3')),
    ('bad version',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), overlay(%s placing ''\x02''::bytea from 3), -1)', :pid, :'seg3')),
    ('truncated',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), substr(%s, 1, 60), -1)', :pid, :'seg3')),
    ('trailing bytes',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), %s || ''\x00''::bytea, -1)', :pid, :'seg3')),
    ('header count larger than entries',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), overlay(%s placing ''\x04''::bytea from 5), -1)', :pid, :'seg3')),
    ('unknown content type',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), overlay(%s placing ''\x09''::bytea from 25), -1)', :pid, :'seg3')),
    ('transactionId with a control character',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[E''a\x01b'']), pg_temp.test_segment(ARRAY[pg_temp.mid(34)], ARRAY[E''a\x01b''], ARRAY[''1'']), -1)', :pid)),
    ('transactionId of 65,536 bytes',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[repeat(''y'', 65536)]), pg_temp.test_segment(ARRAY[pg_temp.mid(35)], ARRAY[repeat(''y'', 65536)], ARRAY[''1'']), -1)', :pid)),
    ('JSON entry whose payload is not JSON',
     format('SELECT * FROM queen.push_segment(%s, queen.txn_hash(''bad-json''), pg_temp.test_segment_raw(pg_temp.mid(36), 1, ''bad-json'', convert_to(''not json'', ''UTF8'')), -1)', :pid)),
    ('text entry that is not UTF-8',
     format('SELECT * FROM queen.push_segment(%s, queen.txn_hash(''bad-text''), pg_temp.test_segment_raw(pg_temp.mid(37), 2, ''bad-text'', ''\xc328''::bytea), -1)', :pid)),
    ('unknown partition id',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), %s, -1)', 9223372036854775807, :'seg3')),
    ('negative partition id',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''e1'',''e2'',''e3'']), %s, -1)', -1, :'seg3'))
) AS t(label, q);
SELECT * FROM pg_temp.state(:pid);
-- The same segment with the right hashes is fine.
SELECT * FROM queen.push_segment(:pid, pg_temp.test_hashes(ARRAY['e1', 'e2', 'e3']), :seg3, -1);

------------------------------------------------------------------------------------------
-- Content types: text (2) and octets (3) are stored as sent and read back as JSON strings
-- (text as itself, octets as their hex form).
------------------------------------------------------------------------------------------
SELECT partition_id AS pct FROM queen.resolve_partition('seg_q', 'types') \gset
SELECT * FROM queen.push_segment(:pct, queen.txn_hash('t-text'),
    pg_temp.test_segment_raw(pg_temp.mid(38), 2, 't-text', convert_to('plain text', 'UTF8')), -1);
SELECT * FROM queen.push_segment(:pct, queen.txn_hash('t-octets'),
    pg_temp.test_segment_raw(pg_temp.mid(39), 3, 't-octets', '\xff00'::bytea), -1);
SELECT message_offset, message_id, transaction_id, payload FROM queen.read('seg_q', 'types', 0, 10);

------------------------------------------------------------------------------------------
-- Window 0 on the binary path: no probe, the hashes are still written.
------------------------------------------------------------------------------------------
SELECT queen.configure('seg_off', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT partition_id AS poff FROM queen.resolve_partition('seg_off', 'p') \gset
SELECT dedup_window_seconds FROM queen.resolve_partition('seg_off', 'p');
SELECT * FROM pg_temp.seg(:poff, ARRAY[41], ARRAY['o1'], -1);
SELECT * FROM pg_temp.seg(:poff, ARRAY[42], ARRAY['o1'], -1);
SELECT * FROM pg_temp.state(:poff);
-- An ack resolves to the earliest occurrence (offset 0).
SELECT queen.ack('seg_off', 'p', 'o1') AS acked;
SELECT queen.committed_offset('seg_off', 'p') AS committed;

------------------------------------------------------------------------------------------
-- push_segments: several partitions in one call. seg is the 0-based input position; answers
-- come in input order; a duplicate-only segment in one partition does not stop the others.
------------------------------------------------------------------------------------------
SELECT partition_id AS pa FROM queen.resolve_partition('seg_multi', 'a') \gset
SELECT partition_id AS pb FROM queen.resolve_partition('seg_multi', 'b') \gset
SELECT * FROM pg_temp.seg(:pb, ARRAY[50], ARRAY['m0'], -1);
-- b (input position 0) gets a duplicate and a new entry; a (position 1) gets two new ones.
SELECT * FROM queen.push_segments(
    ARRAY[:pb, :pa]::bigint[],
    ARRAY[pg_temp.test_hashes(ARRAY['m0', 'm1']), pg_temp.test_hashes(ARRAY['m0', 'm2'])],
    ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(51), pg_temp.mid(52)], ARRAY['m0', 'm1'], ARRAY['1', '2']),
          pg_temp.test_segment(ARRAY[pg_temp.mid(53), pg_temp.mid(54)], ARRAY['m0', 'm2'], ARRAY['3', '4'])],
    ARRAY[-1, -1]::bigint[]);
SELECT 'a' AS part, * FROM pg_temp.state(:pa) UNION ALL SELECT 'b', * FROM pg_temp.state(:pb);
-- Only duplicates in b, NULL vouch entries, new in a: b writes nothing, a writes.
SELECT * FROM queen.push_segments(
    ARRAY[:pa, :pb]::bigint[],
    ARRAY[pg_temp.test_hashes(ARRAY['m3']), pg_temp.test_hashes(ARRAY['m1', 'm0'])],
    ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(55)], ARRAY['m3'], ARRAY['5']),
          pg_temp.test_segment(ARRAY[pg_temp.mid(56), pg_temp.mid(57)], ARRAY['m1', 'm0'], ARRAY['6', '7'])],
    ARRAY[NULL, NULL]::bigint[]);
SELECT 'a' AS part, * FROM pg_temp.state(:pa) UNION ALL SELECT 'b', * FROM pg_temp.state(:pb);

-- Bad calls: the same partition twice, arrays of different lengths, a bad hash in one
-- segment (22023), an unknown partition id (42704); nothing written anywhere.
\set sa 'pg_temp.test_segment(ARRAY[pg_temp.mid(61)], ARRAY[''n1''], ARRAY[''1''])'
\set ha 'pg_temp.test_hashes(ARRAY[''n1''])'
\set sb 'pg_temp.test_segment(ARRAY[pg_temp.mid(62)], ARRAY[''n2''], ARRAY[''2''])'
\set hb 'pg_temp.test_hashes(ARRAY[''n2''])'
SELECT label, pg_temp.sqlstate_of(q) AS sqlstate FROM (VALUES
    ('same partition twice',
     format('SELECT * FROM queen.push_segments(ARRAY[%s, %s]::bigint[], ARRAY[%s, %s], ARRAY[%s, %s], ARRAY[-1, -1]::bigint[])', :pa, :pa, :'ha', :'hb', :'sa', :'sb')),
    ('three ids, two segments',
     format('SELECT * FROM queen.push_segments(ARRAY[%s, %s, %s]::bigint[], ARRAY[%s, %s], ARRAY[%s, %s], ARRAY[-1, -1]::bigint[])', :pa, :pb, :pid, :'ha', :'hb', :'sa', :'sb')),
    ('one verified for two',
     format('SELECT * FROM queen.push_segments(ARRAY[%s, %s]::bigint[], ARRAY[%s, %s], ARRAY[%s, %s], ARRAY[-1]::bigint[])', :pa, :pb, :'ha', :'hb', :'sa', :'sb')),
    ('bad hash in the second segment',
     format('SELECT * FROM queen.push_segments(ARRAY[%s, %s]::bigint[], ARRAY[%s, %s], ARRAY[%s, %s], ARRAY[-1, -1]::bigint[])', :pa, :pb, :'ha', :'ha', :'sa', :'sb')),
    ('unknown partition in the second position',
     format('SELECT * FROM queen.push_segments(ARRAY[%s, %s]::bigint[], ARRAY[%s, %s], ARRAY[%s, %s], ARRAY[-1, -1]::bigint[])', :pa, 9223372036854775807, :'ha', :'hb', :'sa', :'sb'))
) AS t(label, q);
SELECT 'a' AS part, * FROM pg_temp.state(:pa) UNION ALL SELECT 'b', * FROM pg_temp.state(:pb);
-- A vouch covers only the window it was made for (p_window). Here 'old' was pushed, then
-- aged out of a 60 s window; the window then grows to 3600 s, which brings 'old' back in.
-- A vouch made for the 60 s window is ignored (full probe: duplicate); so is a vouch without
-- p_window (it cannot be checked against the window: full probe, duplicate of offset 0).
SELECT queen.configure('vouch_win', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT partition_id AS vw FROM queen.resolve_partition('vouch_win', 'p') \gset
SELECT idx, status, message_offset FROM queen.push_segment(:vw, pg_temp.test_hashes(ARRAY['old']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(900)], ARRAY['old'], ARRAY['1']), -1, 60);
UPDATE queen.log_segments SET created_at = created_at - interval '120 seconds' WHERE partition_id = :vw;
SELECT idx, status, message_offset FROM queen.push_segment(:vw, pg_temp.test_hashes(ARRAY['old']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(901)], ARRAY['old'], ARRAY['2']), 0, 60);
SELECT queen.configure('vouch_win', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS configured;
SELECT idx, status, message_offset, message_id = pg_temp.mid(900) AS original
FROM queen.push_segment(:vw, pg_temp.test_hashes(ARRAY['old']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(902)], ARRAY['old'], ARRAY['3']), 1, 60);
SELECT seg, idx, status, message_offset FROM queen.push_segments(ARRAY[:vw]::bigint[],
    ARRAY[pg_temp.test_hashes(ARRAY['old'])],
    ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(903)], ARRAY['old'], ARRAY['4'])],
    ARRAY[1]::bigint[], ARRAY[60]);
SELECT idx, status, message_offset FROM queen.push_segment(:vw, pg_temp.test_hashes(ARRAY['old']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(904)], ARRAY['old'], ARRAY['5']), 1);
SELECT * FROM queen.push_segment(:vw, pg_temp.test_hashes(ARRAY['x']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(905)], ARRAY['x'], ARRAY['6']), 1, -2);
-- Content type 4 (binary jsonb) is written only by queen.push itself: a client cannot send it.
SELECT * FROM queen.push_segment(:vw, pg_temp.test_hashes(ARRAY['jb']),
    pg_temp.test_segment_raw(pg_temp.mid(906), 4, 'jb', '\x01000020'::bytea), -1);

------------------------------------------------------------------------------------------
-- A vouch can only narrow a span that exists: p_verified above last_offset is 22023 (single,
-- several, and an empty segment alike), and nothing is written. p_verified = last_offset
-- (vouching for everything stored) is accepted.
------------------------------------------------------------------------------------------
SELECT partition_id AS vx FROM queen.resolve_partition('vouch_over', 'p') \gset
SELECT idx, status, message_offset FROM queen.push_segment(:vx, pg_temp.test_hashes(ARRAY['o1', 'o2']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(910), pg_temp.mid(911)], ARRAY['o1', 'o2'], ARRAY['1', '2']), -1, 3600);
SELECT label, pg_temp.sqlstate_of(q) AS sqlstate FROM (VALUES
    ('verified = last_offset + 1',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''o1'']), pg_temp.test_segment(ARRAY[pg_temp.mid(912)], ARRAY[''o1''], ARRAY[''3'']), 2, 3600)', :vx)),
    ('verified far above, no window',
     format('SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY[''o1'']), pg_temp.test_segment(ARRAY[pg_temp.mid(913)], ARRAY[''o1''], ARRAY[''3'']), 1000000)', :vx)),
    ('empty segment, verified above',
     format('SELECT * FROM queen.push_segment(%s, ''''::bytea, pg_temp.test_segment(ARRAY[]::uuid[], ARRAY[]::text[], ARRAY[]::text[]), 5, 3600)', :vx)),
    ('push_segments, verified above',
     format('SELECT * FROM queen.push_segments(ARRAY[%s]::bigint[], ARRAY[pg_temp.test_hashes(ARRAY[''o1''])], ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(914)], ARRAY[''o1''], ARRAY[''3''])], ARRAY[2]::bigint[], ARRAY[3600])', :vx))
) AS t(label, q);
SELECT * FROM pg_temp.state(:vx);
-- A true vouch of everything stored: the new entry is queued, the stored one is not probed.
SELECT idx, status, message_offset FROM queen.push_segment(:vx, pg_temp.test_hashes(ARRAY['o3']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(916)], ARRAY['o3'], ARRAY['4']), 1, 3600);
-- The same vouch without p_window is ignored: the full probe still finds o1 at offset 0.
SELECT idx, status, message_offset, message_id = pg_temp.mid(910) AS original
FROM queen.push_segment(:vx, pg_temp.test_hashes(ARRAY['o1']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(917)], ARRAY['o1'], ARRAY['5']), 2);
