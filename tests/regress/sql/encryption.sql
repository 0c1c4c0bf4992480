--
-- encryption: the extension's side of Queen's encryptionEnabled (issue 27; docs/encryption.md;
-- sql/modules/80_encryption.sql, src/pg/queue/push_encryption.cpp). The sidecar seals payloads;
-- the extension never sees a key. It refuses, with 22QE1 and nothing written, any payload of an
-- encrypted queue that is not an envelope, in every push function (queen.push, push_segment(s),
-- push_segments_named, queen.transaction, queen.transaction_wire, maintenance parking and its
-- drain); it takes an envelope's keyed content identity (cid) on a content-dedup queue; and
-- configure switches the flag on only while the queue holds no message (55QE1).
--
\i tests/regress/sql/sqlstate_of.psql
\i tests/regress/sql/segment_helpers.psql
-- A segment blob: one JSON entry (content type 1) per array element.
CREATE FUNCTION pg_temp.test_segment(ids uuid[], txns text[], payloads text[]) RETURNS bytea
    LANGUAGE sql AS $$
    SELECT '\x51530100'::bytea || pg_temp.u32le(cardinality(ids)) ||
           (SELECT string_agg(decode(replace(ids[i]::text, '-', ''), 'hex') || '\x01'::bytea ||
                              pg_temp.u32le(octet_length(convert_to(txns[i], 'UTF8'))) ||
                              convert_to(txns[i], 'UTF8') ||
                              pg_temp.u32le(octet_length(convert_to(payloads[i], 'UTF8'))) ||
                              convert_to(payloads[i], 'UTF8'), ''::bytea ORDER BY i)
              FROM generate_subscripts(ids, 1) AS i) $$;
-- A one-entry segment with any content type.
CREATE FUNCTION pg_temp.test_segment_raw(id uuid, ctype int, txn text, payload bytea) RETURNS bytea
    LANGUAGE sql AS $$
    SELECT '\x5153010001000000'::bytea || decode(replace(id::text, '-', ''), 'hex') ||
           decode(lpad(to_hex(ctype), 2, '0'), 'hex') ||
           pg_temp.u32le(octet_length(convert_to(txn, 'UTF8'))) || convert_to(txn, 'UTF8') ||
           pg_temp.u32le(octet_length(payload)) || payload $$;
-- A fake envelope (the extension checks its shape only; the sidecar's tag check is its own).
CREATE FUNCTION pg_temp.env(ct text, cid text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('$enc', 'queen.aes256gcm.v1', 'kid', '0011223344556677',
                              'iv', 'AAAAAAAAAAAAAAAA', 'ct', ct)
           || CASE WHEN cid IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cid', cid) END $$;
-- Its text form, as the sidecar writes it.
CREATE FUNCTION pg_temp.env_text(ct text) RETURNS text LANGUAGE sql AS $$
    SELECT '{"$enc":"queen.aes256gcm.v1","kid":"0011223344556677","iv":"AAAAAAAAAAAAAAAA","ct":"'
           || ct || '"}' $$;
CREATE FUNCTION pg_temp.segments(q text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
      JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = q $$;

-- The text form's test (the guard of the binary path and of parking): the sidecar's compact
-- form only (jsonb's printed form, members reordered, is not what a text payload holds).
SELECT queen.payload_is_envelope(pg_temp.env_text('x')) AS compact,
       queen.payload_is_envelope(pg_temp.env('x')::text) AS jsonb_printed,
       queen.payload_is_envelope('{"a":1}') AS plain;

------------------------------------------------------------------------------------------
-- configure: the flag, its echo, the sidecar's view
------------------------------------------------------------------------------------------
SELECT queen.configure('enc_q', '{"encryptionEnabled": true}') -> 'options' -> 'encryptionEnabled' AS echoed;
SELECT name, encryption_enabled FROM queen.queues WHERE name = 'enc_q';
SELECT * FROM queen.queue_modes(ARRAY['enc_q', 'enc_none']);
-- unchanged: configuring it again keeps it (and raises nothing)
SELECT queen.configure('enc_q', '{"encryptionEnabled": true, "leaseTime": 60}') IS NOT NULL AS configured;

------------------------------------------------------------------------------------------
-- every push function refuses a plaintext payload (22QE1), nothing written
------------------------------------------------------------------------------------------
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push('enc_q', 'p', '[{"payload": {"a": 1}}]')$q$) AS push;
-- one envelope among plaintexts: the whole call refused
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push('enc_q', 'p',
    jsonb_build_array(jsonb_build_object('payload', pg_temp.env('c1')), '{"payload": 2}'::jsonb))$q$) AS mixed;
SELECT pg_temp.segments('enc_q') AS segments;
-- envelopes are stored; dedup by transactionId is unchanged
SELECT status, message_offset FROM queen.push('enc_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', 't1', 'payload', pg_temp.env('c1')),
                      jsonb_build_object('transactionId', 't2', 'payload', pg_temp.env('c2'))));
SELECT status, message_offset FROM queen.push('enc_q', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', 't1', 'payload', pg_temp.env('c9'))));
SELECT message_offset, transaction_id, payload ->> 'ct' AS ct FROM queen.read('enc_q', 'p', 0, 10);

-- the binary path: a text envelope passes, plaintext and other content types do not
SELECT partition_id AS pid FROM queen.resolve_partition('enc_q', 'b') \gset
SELECT status, message_offset FROM queen.push_segment(:pid, pg_temp.test_hashes(ARRAY['b1']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(1)], ARRAY['b1'], ARRAY[pg_temp.env_text('b')]));
SELECT pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY['b2']),
    pg_temp.test_segment(ARRAY[pg_temp.mid(2)], ARRAY['b2'], ARRAY['{"a":1}']))$q$, :pid)) AS push_segment;
SELECT pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segment(%s, pg_temp.test_hashes(ARRAY['b3']),
    pg_temp.test_segment_raw(pg_temp.mid(3), 2, 'b3', convert_to(pg_temp.env_text('b'), 'UTF8')))$q$, :pid)) AS as_text_type;
SELECT pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segments(ARRAY[%s]::bigint[],
    ARRAY[pg_temp.test_hashes(ARRAY['b4'])], ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(4)], ARRAY['b4'], ARRAY['7'])])$q$, :pid)) AS push_segments;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push_segments_named(ARRAY[NULL]::bigint[], ARRAY['enc_q'],
    ARRAY['named'], ARRAY[pg_temp.test_hashes(ARRAY['n1'])],
    ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(5)], ARRAY['n1'], ARRAY['"plain"'])], ARRAY[-1]::bigint[], ARRAY[3600])$q$) AS push_segments_named;
SELECT pg_temp.segments('enc_q') AS segments;

-- transactions: queen's own and the broker's
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations": [{"type": "push", "queue": "enc_q",
    "partition": "p", "items": [{"transactionId": "x1", "payload": {"x": 1}}]}]}')$q$) AS transaction;
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction_wire('{"operations": [{"type": "push",
    "items": [{"queue": "enc_q", "payload": {"x": 1}}]}]}')$q$) AS transaction_wire;
SELECT (queen.transaction_wire(jsonb_build_object('operations', jsonb_build_array(jsonb_build_object(
    'type', 'push', 'items', jsonb_build_array(jsonb_build_object('queue', 'enc_q', 'payload', pg_temp.env('w')))))))
    ->> 'success') AS wire_envelope;
SELECT pg_temp.segments('enc_q') AS segments;

------------------------------------------------------------------------------------------
-- content dedup: the envelope's keyed content identity
------------------------------------------------------------------------------------------
SELECT queen.configure('enc_c', '{"encryptionEnabled": true, "dedupBy": "content"}') IS NOT NULL AS configured;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push('enc_c', 'p',
    jsonb_build_array(jsonb_build_object('payload', pg_temp.env('c'))))$q$) AS no_cid;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push('enc_c', 'p',
    jsonb_build_array(jsonb_build_object('payload', pg_temp.env('c', 'NOT-HEX-0123456789abcdef01234567'))))$q$) AS bad_cid;
SELECT status, transaction_id, message_offset FROM queen.push('enc_c', 'p',
    jsonb_build_array(jsonb_build_object('payload', pg_temp.env('c1', '0123456789abcdef0123456789abcdef'))));
-- another ciphertext of the same content (a fresh IV): a duplicate of the first
SELECT status, transaction_id, message_offset FROM queen.push('enc_c', 'p',
    jsonb_build_array(jsonb_build_object('payload', pg_temp.env('c2', '0123456789abcdef0123456789abcdef')),
                      jsonb_build_object('payload', pg_temp.env('c3', 'ffffffffffffffffffffffffffffffff'))));
-- an explicit transactionId still wins over the content
SELECT status, transaction_id FROM queen.push('enc_c', 'p',
    jsonb_build_array(jsonb_build_object('transactionId', 'own', 'payload', pg_temp.env('c4'))));

------------------------------------------------------------------------------------------
-- maintenance parking and its drain
------------------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.item(q text, txn text, id text, payload json) RETURNS json LANGUAGE sql AS $$
    SELECT json_build_object('queue', q, 'partition', 'm', 'transactionId', txn, 'messageId', id,
                             'payload', payload) $$;
SELECT queen.set_maintenance(true) ->> 'maintenanceMode' AS on;
SELECT pg_temp.sqlstate_of($q$SELECT queen.maintenance_park(json_build_array(
    pg_temp.item('enc_q', 'm1', '00000000-0000-7000-8000-0000000000e1', '{"plain": true}')))$q$) AS park_plain;
SELECT queen.maintenance_park(json_build_array(
    pg_temp.item('enc_q', 'm2', '00000000-0000-7000-8000-0000000000e2', pg_temp.env_text('m')::json),
    pg_temp.item('enc_plain', 'm3', '00000000-0000-7000-8000-0000000000e3', '{"plain": true}'))) AS parked;
-- a parked plaintext blocks switching its queue on
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure('enc_plain', '{"encryptionEnabled": true}')$q$) AS switch_on_parked;
SELECT (queen.set_maintenance(false) ->> 'delivered')::int AS delivered;
SELECT message_offset, transaction_id, payload ? '$enc' AS envelope
  FROM queen.read('enc_q', 'm', 0, 10);
-- push_parked (the drain's push) has the guard too
SELECT partition_id AS mpid FROM queen.resolve_partition('enc_q', 'm') \gset
SELECT pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_parked(%s, ARRAY['m9'],
    ARRAY['00000000-0000-7000-8000-0000000000e9']::uuid[], ARRAY['{"a":1}'])$q$, :mpid)) AS push_parked;

------------------------------------------------------------------------------------------
-- switching: on only for an empty queue; off at any time (NOTICE)
------------------------------------------------------------------------------------------
SELECT queen.push('enc_plain2', 'p', '[{"payload": 1}]') IS NOT NULL AS pushed;
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure('enc_plain2', '{"encryptionEnabled": true}')$q$) AS switch_on_nonempty;
SELECT encryption_enabled FROM queen.queues WHERE name = 'enc_plain2';
SELECT queen.configure('enc_q', '{"encryptionEnabled": false}') -> 'options' -> 'encryptionEnabled' AS switched_off;
SELECT * FROM queen.queue_modes(ARRAY['enc_q']);
-- off: plaintext is taken again; the stored envelopes stay as they are
SELECT status FROM queen.push('enc_q', 'p', '[{"transactionId": "after-off", "payload": {"plain": 1}}]');
SELECT count(*) FILTER (WHERE payload ? '$enc') AS envelopes,
       count(*) FILTER (WHERE NOT payload ? '$enc') AS plain
  FROM queen.read('enc_q', 'p', 0, 100);
-- and it cannot be switched on again while it holds them
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure('enc_q', '{"encryptionEnabled": true}')$q$) AS switch_on_again;
-- a dropped and recreated queue starts empty
SELECT queen.drop_queue('enc_plain2') IS NOT NULL AS dropped;
SELECT queen.configure('enc_plain2', '{"encryptionEnabled": true}') -> 'options' -> 'encryptionEnabled' AS switched_on;
-- a configure naming only queen's own keys resets Queen's options, encryption too (NOTICE)
SELECT queen.configure('enc_plain2', '{"dedupWindowSeconds": 3600}') IS NOT NULL AS configured;
SELECT encryption_enabled FROM queen.queues WHERE name = 'enc_plain2';
-- switching on needs READ COMMITTED (its emptiness check must see what committed meanwhile)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure('enc_rr', '{"encryptionEnabled": true}')$q$) AS repeatable_read;
ROLLBACK;
