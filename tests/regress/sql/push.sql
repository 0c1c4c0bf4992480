--
-- push: queen.push(queue, partition, items jsonb), the SQL push.
-- Offsets per partition start at 0 and are contiguous; a duplicate writes nothing and answers
-- with the original message's id and offset; within one call the first occurrence wins.
--
\i tests/regress/sql/partition_state.psql

-- The queue does not exist before its first push.
SELECT count(*) AS queues_before FROM queen.queues WHERE name = 'push_q';

-- First push: all queued, offsets 0..n-1 in entry order.
CREATE TEMP TABLE first_push AS
SELECT * FROM queen.push('push_q', 'p0',
    '[{"transactionId":"a","payload":{"n":1}},
      {"transactionId":"b","payload":"two"},
      {"transactionId":"c","payload":[3, true]}]');
SELECT index, status, transaction_id, message_offset FROM first_push ORDER BY index;

-- Message ids: one each, distinct, UUIDv7 (version nibble 7, RFC 4122 variant), ascending in
-- entry order.
SELECT count(*) AS n, count(DISTINCT message_id) AS distinct_ids,
       bool_and(substr(message_id::text, 15, 1) = '7') AS version_7,
       bool_and(substr(message_id::text, 20, 1) IN ('8', '9', 'a', 'b')) AS rfc_variant
FROM first_push;
SELECT bool_and(message_id < next_id) AS ids_ascending
FROM (SELECT message_id, lead(message_id) OVER (ORDER BY index) AS next_id FROM first_push) s
WHERE next_id IS NOT NULL;

-- The queue was created on first contact with the defaults, and the partition with it.
SELECT name, dedup_window_seconds, retention_seconds, dedup_by
FROM queen.queues WHERE name = 'push_q';
SELECT * FROM pg_temp.state('push_q', 'p0');

-- One segment row for the push, and one log_txns row: 16 bytes a message, each the
-- txn_hash of its transactionId, in offset order.
SELECT base_offset, end_offset, message_count, created_at <= now() AS created_in_past
FROM queen.log_segments WHERE partition_id = pg_temp.pid('push_q', 'p0') ORDER BY base_offset;
SELECT base_offset, end_offset, octet_length(hashes) AS hash_bytes,
       hashes = queen.txn_hash('a') || queen.txn_hash('b') || queen.txn_hash('c') AS hashes_ok,
       created_at <= now() AS created_in_past
FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = pg_temp.pid('push_q', 'p0') ORDER BY base_offset;

-- What was stored reads back: ids, transactionIds and payloads.
SELECT r.message_offset, r.transaction_id, r.payload, r.message_id = f.message_id AS same_id
FROM queen.read('push_q', 'p0', 0, 100) r JOIN first_push f USING (message_offset)
ORDER BY r.message_offset;

-- A retry of the same transactionIds (with different payloads): every item is a duplicate
-- carrying the original id and offset.
CREATE TEMP TABLE retry AS
SELECT * FROM queen.push('push_q', 'p0',
    '[{"transactionId":"a","payload":"changed"},
      {"transactionId":"b","payload":"changed"},
      {"transactionId":"c","payload":"changed"}]');
SELECT r.index, r.status, r.transaction_id, r.message_offset,
       r.message_offset = f.message_offset AS original_offset,
       r.message_id = f.message_id AS original_id
FROM retry r JOIN first_push f USING (index) ORDER BY r.index;

-- ... and nothing was written: allocator unchanged, no new segment, no new log_txns row,
-- the stored payloads are the originals.
SELECT * FROM pg_temp.state('push_q', 'p0');
SELECT message_offset, payload FROM queen.read('push_q', 'p0', 0, 100) ORDER BY message_offset;

-- Repeats inside one call: the first occurrence wins, the later one is a duplicate with the
-- first's id and offset; the survivors' offsets stay contiguous.
SELECT index, status, transaction_id, message_offset,
       message_id = first_value(message_id) OVER (PARTITION BY transaction_id ORDER BY index)
           AS same_id_as_first
FROM queen.push('push_q', 'p0',
    '[{"transactionId":"d","payload":1},
      {"transactionId":"d","payload":2},
      {"transactionId":"e","payload":3}]')
ORDER BY index;
SELECT * FROM pg_temp.state('push_q', 'p0');

-- Repeats inside one call whose first occurrence is itself a duplicate of a stored message:
-- both answer the stored original's id and offset (0); the new item takes offset 5.
SELECT p.index, p.status, p.transaction_id, p.message_offset,
       CASE WHEN p.status = 'duplicate'
            THEN p.message_id = (SELECT message_id FROM first_push WHERE transaction_id = 'a')
       END AS original_id
FROM queen.push('push_q', 'p0',
    '[{"transactionId":"a","payload":1},
      {"transactionId":"a","payload":2},
      {"transactionId":"f","payload":3}]') p
ORDER BY p.index;

-- A partially duplicate call writes its survivors in the same call, with contiguous offsets
-- (6, 7), in one segment and one log_txns row holding only the survivors' hashes.
SELECT p.index, p.status, p.transaction_id, p.message_offset,
       CASE WHEN p.status = 'duplicate'
            THEN p.message_id = (SELECT message_id FROM first_push f WHERE f.transaction_id = p.transaction_id)
       END AS original_id
FROM queen.push('push_q', 'p0',
    '[{"transactionId":"b","payload":1},
      {"transactionId":"g","payload":2},
      {"transactionId":"c","payload":3},
      {"transactionId":"h","payload":4}]') p
ORDER BY p.index;
SELECT * FROM pg_temp.state('push_q', 'p0');
SELECT base_offset, end_offset, octet_length(hashes) AS hash_bytes,
       hashes = queen.txn_hash('g') || queen.txn_hash('h') AS survivors_only
FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = pg_temp.pid('push_q', 'p0') AND base_offset = 6;

-- A call that is only duplicates writes nothing (no empty segment row); the original's id is
-- read back from the survivors-only segment written above.
SELECT status, message_offset,
       message_id = (SELECT message_id FROM queen.read('push_q', 'p0', 6, 1)) AS original_id
FROM queen.push('push_q', 'p0', '[{"transactionId":"g","payload":0}]');
SELECT * FROM pg_temp.state('push_q', 'p0');

-- An item without transactionId takes its message id's text as transactionId ...
CREATE TEMP TABLE no_txn AS
SELECT * FROM queen.push('push_q', 'p0', '[{"payload":"no id 1"},{"payload":"no id 2"}]');
SELECT index, status, message_offset, transaction_id = message_id::text AS txn_is_id
FROM no_txn ORDER BY index;
-- ... which is what log_txns holds ...
SELECT hashes = (SELECT string_agg(queen.txn_hash(message_id::text), ''::bytea ORDER BY index) FROM no_txn)
       AS hashes_of_ids
FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = pg_temp.pid('push_q', 'p0') AND base_offset = 8;
-- ... so re-pushing that id as a transactionId is a duplicate of it.
SELECT p.status, p.message_offset,
       p.message_id = (SELECT message_id FROM no_txn ORDER BY index LIMIT 1) AS original_id
FROM queen.push('push_q', 'p0',
    (SELECT jsonb_build_array(jsonb_build_object('transactionId', message_id::text, 'payload', 0))
     FROM no_txn ORDER BY index LIMIT 1)) p;

-- An empty array answers no rows and writes nothing.
SELECT count(*) AS answers FROM queen.push('push_q', 'p0', '[]');
SELECT * FROM pg_temp.state('push_q', 'p0');

-- One segment row per push that had survivors, each matching its log_txns row.
SELECT s.base_offset, s.end_offset, s.message_count,
       t.end_offset = s.end_offset AS txns_row_matches,
       octet_length(t.hashes) = 16 * s.message_count AS hash_bytes_ok
FROM queen.log_segments s
JOIN queen.log_segments t ON t.hashes IS NOT NULL AND t.partition_id = s.partition_id AND t.base_offset = s.base_offset
WHERE s.partition_id = pg_temp.pid('push_q', 'p0') ORDER BY s.base_offset;

-- Every stored message's hash sits at its offset in log_txns.
SELECT count(*) AS messages, bool_and(u.h = queen.txn_hash(r.transaction_id)) AS hashes_match
FROM queen.read('push_q', 'p0', 0, 1000) r
JOIN queen.log_segments t ON t.hashes IS NOT NULL AND t.partition_id = pg_temp.pid('push_q', 'p0')
                     AND r.message_offset BETWEEN t.base_offset AND t.end_offset
CROSS JOIN LATERAL queen.log_unnest_hashes(t.hashes) u
WHERE u.idx = r.message_offset - t.base_offset;

-- Offsets are per partition: another partition of the same queue starts at 0, and the same
-- transactionId there is new.
SELECT index, status, message_offset,
       message_id <> (SELECT message_id FROM first_push WHERE transaction_id = 'a') AS new_id
FROM queen.push('push_q', 'p1', '[{"transactionId":"a","payload":1}]');
SELECT * FROM pg_temp.state('push_q', 'p1');

-- A large call: 500 known + 500 new transactionIds in one call. The known ones answer their
-- original offsets (0..499), the new ones get 500..999 in entry order.
SELECT count(*) AS queued, min(message_offset) AS lo, max(message_offset) AS hi
FROM queen.push('push_q', 'big',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'big-' || i, 'payload', i) ORDER BY i)
     FROM generate_series(0, 499) i));
SELECT status, count(*) AS n, bool_and(message_offset = index) AS offset_is_index
FROM queen.push('push_q', 'big',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'big-' || i, 'payload', i) ORDER BY i)
     FROM generate_series(0, 999) i))
GROUP BY status ORDER BY status;
SELECT * FROM pg_temp.state('push_q', 'big');

-- Many repeats inside one call: 1000 items over 100 transactionIds. The first 100 are queued
-- at offsets 0..99; every later item follows its first occurrence (offset index % 100, same id).
CREATE TEMP TABLE repeats AS
SELECT * FROM queen.push('push_q', 'repeats',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'rep-' || (i % 100), 'payload', i) ORDER BY i)
     FROM generate_series(0, 999) i));
SELECT status, count(*) AS n, bool_and(message_offset = index % 100) AS offset_of_first
FROM repeats GROUP BY status ORDER BY status;
SELECT bool_and(r.message_id = f.message_id) AS id_of_first
FROM repeats r JOIN repeats f ON f.index = r.index % 100;
SELECT * FROM pg_temp.state('push_q', 'repeats');

-- A segment too big to stay inline (3000 messages: 48,000 bytes of hashes, stored out of
-- line): re-pushing it finds every message, with the probe cache on and off.
SELECT count(*) AS queued FROM queen.push('push_q', 'huge',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'huge-' || i, 'payload', i) ORDER BY i)
     FROM generate_series(0, 2999) i));
SELECT octet_length(hashes) AS hash_bytes FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = pg_temp.pid('push_q', 'huge');
SELECT status, count(*) AS n, bool_and(message_offset = index) AS offset_is_index
FROM queen.push('push_q', 'huge',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'huge-' || i, 'payload', i) ORDER BY i)
     FROM generate_series(0, 2999) i))
GROUP BY status;
SET queen.probe_cache = off;
-- (this time in reverse order)
SELECT status, count(*) AS n, bool_and(message_offset = 2999 - index) AS offset_is_reversed_index
FROM queen.push('push_q', 'huge',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'huge-' || i, 'payload', i) ORDER BY i DESC)
     FROM generate_series(0, 2999) i))
GROUP BY status;
RESET queen.probe_cache;
SELECT * FROM pg_temp.state('push_q', 'huge');
-- Duplicates whose originals sit in two different out-of-line (TOASTed) segments, in one
-- call: each answer carries its own original's id (read back from the right segment).
CREATE TEMP TABLE toast_orig AS
SELECT * FROM queen.push('push_q', 'toasted',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'ta-' || i, 'payload', repeat('a', 400)) ORDER BY i)
     FROM generate_series(0, 49) i));
INSERT INTO toast_orig
SELECT * FROM queen.push('push_q', 'toasted',
    (SELECT jsonb_agg(jsonb_build_object('transactionId', 'tb-' || i, 'payload', repeat('b', 400)) ORDER BY i)
     FROM generate_series(0, 49) i));
SELECT count(*) AS segments FROM queen.log_segments WHERE partition_id = pg_temp.pid('push_q', 'toasted');
SELECT r.status, count(*) AS n, bool_and(r.message_id = o.message_id) AS original_ids,
       bool_and(r.message_offset = o.message_offset) AS original_offsets
FROM queen.push('push_q', 'toasted',
    '[{"transactionId":"ta-1","payload":0},{"transactionId":"tb-2","payload":0},
      {"transactionId":"ta-3","payload":0},{"transactionId":"tb-4","payload":0},
      {"transactionId":"fresh","payload":0}]') r
LEFT JOIN toast_orig o ON o.transaction_id = r.transaction_id
GROUP BY r.status ORDER BY r.status;
