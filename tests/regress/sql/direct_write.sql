--
-- direct_write: queen.push's direct locking and writes (src/pg/storage/direct_write.cpp) keep every
-- rule the SQL statements they replace kept: constraints of the tables are checked, a table
-- with a trigger or row security makes the push take the statements (the trigger fires), and
-- an allocator update that cannot stay on its page (not HOT) gets its index entries. The
-- answers themselves are compared with queen.direct_write = off in probe_cache.
--
SELECT length(queen.txn_hash('load the library')) AS loaded;
SHOW queen.direct_write;
SELECT queen.configure('dw', '{"dedupWindowSeconds": 3600}');

-- A CHECK constraint added to a table queen writes (NOT VALID: other tests' rows may break it)
-- is enforced on the direct path (23514) for new rows, and
-- nothing of the failed push stays: no allocator bump, no rows.
SELECT status, message_offset FROM queen.push('dw', 'p', '[{"transactionId":"a","payload":1}]');
ALTER TABLE queen.log_segments ADD CONSTRAINT dw_small CHECK (message_count < 3) NOT VALID;
\set VERBOSITY terse
SELECT status FROM queen.push('dw', 'p', '[{"transactionId":"b","payload":1},{"transactionId":"c","payload":1},{"transactionId":"d","payload":1}]');
\set VERBOSITY default
SELECT status, message_offset FROM queen.push('dw', 'p', '[{"transactionId":"b","payload":1},{"transactionId":"c","payload":1}]');
ALTER TABLE queen.log_segments DROP CONSTRAINT dw_small;
SELECT queen.log_end(id, last_offset) AS last_offset FROM queen.log_partitions WHERE name = 'p'
   AND queue_id = (SELECT id FROM queen.queues WHERE name = 'dw');

-- A trigger on a table queen inserts into: the push takes the SQL statements, so it fires.
CREATE FUNCTION pg_temp.dw_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'trigger on % saw base_offset %', TG_TABLE_NAME, NEW.base_offset;
    RETURN NEW;
END $$;
CREATE TRIGGER dw_note AFTER INSERT ON queen.log_segments FOR EACH ROW EXECUTE FUNCTION pg_temp.dw_note();
SELECT status, message_offset FROM queen.push('dw', 'p', '[{"transactionId":"e","payload":1},{"transactionId":"a","payload":2}]');
DROP TRIGGER dw_note ON queen.log_segments;
-- and a trigger on log_partitions (not a foreign-key one): the lock is a statement too; since
-- issue 28 (0.4.0) a push updates no partition row (the offsets follow the newest segment row),
-- so the trigger never fires.
CREATE FUNCTION pg_temp.dw_note_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'allocator % -> %', OLD.last_offset, NEW.last_offset;
    RETURN NEW;
END $$;
CREATE TRIGGER dw_note_upd AFTER UPDATE ON queen.log_partitions FOR EACH ROW EXECUTE FUNCTION pg_temp.dw_note_upd();
SELECT status, message_offset FROM queen.push('dw', 'p', '[{"transactionId":"f","payload":1}]');
DROP TRIGGER dw_note_upd ON queen.log_partitions;
-- Without triggers the direct path is back (no notice).
SELECT status, message_offset FROM queen.push('dw', 'p', '[{"transactionId":"g","payload":1},{"transactionId":"f","payload":2}]');

-- Many pushes in one transaction: 30 partitions pushed 40 times each. Before issue 28 each push
-- updated its partition row (1200 row versions nobody may prune yet, most of them non-HOT);
-- since 0.4.0 a push updates no partition row (what is left is about one per partition: its
-- first push storing its order boundary, partition_order_ensure). Afterwards every partition is found
-- through both of its unique indexes, with the log's end (queen.log_end) a heap scan reads.
BEGIN;
SELECT count(*) AS pushed FROM generate_series(1, 40) r, generate_series(1, 30) n,
       LATERAL queen.push('dw_many', 'n' || n, jsonb_build_array(jsonb_build_object('transactionId', 'r' || r, 'payload', r))) x;
SELECT n_tup_upd <= 60 AS not_per_push
  FROM pg_stat_xact_user_tables WHERE relid = 'queen.log_partitions'::regclass;
COMMIT;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE by_index AS
SELECT lp.id, lp.name, queen.log_end(lp.id, lp.last_offset) AS last_offset FROM queen.log_partitions lp
 WHERE lp.queue_id = (SELECT id FROM queen.queues WHERE name = 'dw_many') AND lp.name LIKE 'n%';
CREATE TEMP TABLE by_id AS
SELECT i.name, p.last_offset FROM by_index i
  JOIN LATERAL (SELECT queen.log_end(lp.id, lp.last_offset) AS last_offset FROM queen.log_partitions lp WHERE lp.id = i.id) p ON true;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS partitions, min(last_offset), max(last_offset) FROM by_index;
SELECT count(*) AS found_by_id FROM by_id b JOIN by_index i USING (name, last_offset);
SELECT count(*) AS heap_rows, min(queen.log_end(lp.id, lp.last_offset)), max(queen.log_end(lp.id, lp.last_offset)) FROM queen.log_partitions lp
 WHERE lp.queue_id = (SELECT id FROM queen.queues WHERE name = 'dw_many');
-- and a repeat of each is a duplicate at its original offset (the probe found the rows).
SELECT x.status, count(*), min(x.message_offset), max(x.message_offset)
  FROM generate_series(1, 30) n, LATERAL queen.push('dw_many', 'n' || n, '[{"transactionId":"r7","payload":0}]') x
 GROUP BY x.status;
