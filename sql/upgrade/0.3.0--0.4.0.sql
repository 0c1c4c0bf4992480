\echo Use "ALTER EXTENSION queen UPDATE TO '0.4.0'" to load this file. \quit
-- queen 0.3.0 -> 0.4.0: the hand-written delta (0.3.0 is released and frozen in
-- sql/queen--0.3.0.sql). mk/sql.mk builds the upgrade script as this delta, then every routine
-- (sql/modules/*.sql in order), then sql/privileges.sql.
--
-- The rule (docs/sql-interface.md, "Upgrades"), for every schema change of 0.4.0:
--   * tables, columns, constraints, indexes, storage options, pg_dump registrations: written in
--     the schema part (sql/schema/*.sql, what a fresh install creates) AND here, as the statement
--     that takes a 0.3.0 database there (ALTER TABLE ... ADD COLUMN ... DEFAULT, CREATE INDEX,
--     a new table with its pg_extension_config_dump, a data migration, ...). A column is added
--     at the end of its table in both places, so its number is the same.
--   * routines need nothing here: every upgrade runs every CREATE OR REPLACE of the routines
--     part again, after this delta. Only what CREATE OR REPLACE cannot do is written here: DROP
--     FUNCTION of a routine 0.4.0 removes, or whose argument types or names, defaults or result
--     type change (it is then created anew); a view whose columns change, likewise DROP VIEW.
--   * privileges need nothing here: sql/privileges.sql takes every privilege back and grants
--     0.4.0's.
-- tests/integration/upgrade.sh checks that a database upgraded from 0.3.0 (and from 0.2.0 and
-- 0.1.0, through the frozen scripts) has exactly a fresh 0.4.0 install's catalog.
--
-- ---------------------------------------------------------------- issue 27, retention options: completedRetentionSeconds, retentionEnabled, retentionSeconds, maxWaitTimeSeconds
-- No table changes: retention reads completedRetentionSeconds, retentionEnabled and
-- maxWaitTimeSeconds from queen.queue_options (as configure stored them), and configure now
-- stores Queen's retentionSeconds in queues.retention_seconds only with retentionEnabled.
-- Data: 0.3.0 folded maxWaitTimeSeconds into retention_seconds (the smaller one won) and did
-- not gate retentionSeconds. A queue whose stored options name retentionEnabled true or a
-- maxWaitTimeSeconds > 0 was configured in Queen's form (queen's own form cannot send either),
-- so its retention_seconds is set to what 0.4.0's configure would store: retentionSeconds when
-- retentionEnabled, else none (max wait is then a rule of its own). Other queues keep theirs:
-- a retention that 0.3.0 honoured is not silently dropped (their form is not recorded; the
-- next configure applies 0.4.0's rule).
UPDATE queen.queues q
   SET retention_seconds = CASE
           WHEN (o.options ->> 'retentionEnabled') = 'true'
            AND jsonb_typeof(o.options -> 'retentionSeconds') = 'number'
            AND (o.options ->> 'retentionSeconds')::numeric >= 1
           THEN least((o.options ->> 'retentionSeconds')::numeric, 2147483647)::int
       END
  FROM queen.queue_options o
 WHERE o.queue_id = q.id
   AND ((o.options ->> 'retentionEnabled') = 'true'
        OR (jsonb_typeof(o.options -> 'maxWaitTimeSeconds') = 'number'
            AND (o.options ->> 'maxWaitTimeSeconds')::numeric >= 1));

-- issue 27, encryption: queen.queues.encryption_enabled, Queen's encryptionEnabled as the flag
-- every push reads with its partition row lock (sql/schema/00_core.sql; docs/encryption.md).
ALTER TABLE queen.queues ADD COLUMN encryption_enabled boolean NOT NULL DEFAULT false;
-- 0.3.0 stored encryptionEnabled without enforcing it: its payloads are plaintext. A queue that
-- asked for it and holds no message (log data, DLQ copy, parked push) is encrypted from now on;
-- one that holds messages keeps them as they are and is not encrypted: its stored option turns
-- false (what it always was), with a WARNING naming it (switching on needs an empty queue).
DO $$
DECLARE
    v_q record;
BEGIN
    FOR v_q IN
        SELECT q.id, q.name,
               EXISTS (SELECT 1 FROM queen.log_partitions p
                         JOIN queen.log_segments s ON s.partition_id = p.id
                        WHERE p.queue_id = q.id AND octet_length(s.data) > 0)
               OR EXISTS (SELECT 1 FROM queen.log_partitions p
                            JOIN queen.consumer_dlq d ON d.partition_id = p.id
                           WHERE p.queue_id = q.id)
               OR EXISTS (SELECT 1 FROM queen.maintenance_parked m WHERE m.queue = q.name) AS holds
          FROM queen.queues q JOIN queen.queue_options o ON o.queue_id = q.id
         WHERE (o.options ->> 'encryptionEnabled')::boolean
         ORDER BY q.id
    LOOP
        IF v_q.holds THEN
            UPDATE queen.queue_options SET options = options || '{"encryptionEnabled": false}'
             WHERE queue_id = v_q.id;
            RAISE WARNING 'queue "%": encryptionEnabled was stored but never enforced, and the queue holds plaintext messages: it stays unencrypted (encryptionEnabled false)', v_q.name
                USING HINT = 'Encrypt a new queue, or empty this one and configure it again; see docs/encryption.md.';
        ELSE
            UPDATE queen.queues SET encryption_enabled = true WHERE id = v_q.id;
        END IF;
    END LOOP;
END
$$;

-- issue 27, pops by queue: a pop by queue walks its queue's partitions in id order from a
-- random point instead of listing them all (sql/schema/50_consume.sql).
CREATE INDEX log_partitions_queue_idx ON queen.log_partitions (queue_id, id);

-- ---------------------------------------------------------------- issue 29, namespace and task of a queue
-- queen.queues.namespace and .task: Queen's configure fields, stored (sql/schema/00_core.sql)
-- and read by the admin views (sql/modules/90_admin_queues.sql). 0.3.0 stored neither: NULL.
ALTER TABLE queen.queues ADD COLUMN namespace text;
ALTER TABLE queen.queues ADD COLUMN task text;
-- queen.configure takes them as two more arguments (defaults NULL): created anew by the routines.
DROP FUNCTION queen.configure(text, jsonb);

-- ---------------------------------------------------------------- issue 28, the window from the primary key
-- queen.log_segments loses its (partition_id, created_at) index (sql/schema/00_core.sql): a
-- 0.4.0 push stamps created_at = greatest(now, the partition's newest row's created_at) under
-- the partition lock, so the window's rows are a top range of the primary key. A 0.3.0 row
-- stamped after a clock step back can be older than a row before it; no row is changed here
-- (every created_at is kept as it was): each partition records instead the last offset where
-- its history goes back in time (unordered_upto: the rows at or below it are read by primary
-- key and filtered by time while the newest of them, unordered_newest, is inside the window;
-- -1 when every row is in order), computed here in one pass rather than at each partition's
-- first push (src/pg/storage/log_scan.cpp).
ALTER TABLE queen.log_partitions ADD COLUMN unordered_upto bigint;
ALTER TABLE queen.log_partitions ADD COLUMN unordered_newest timestamptz;
UPDATE queen.log_partitions p
   SET unordered_upto = COALESCE(d.upto, -1),
       unordered_newest = (SELECT max(s.created_at) FROM queen.log_segments s
                            WHERE s.partition_id = p.id AND s.base_offset <= d.upto)
  FROM (SELECT l.id, (SELECT max(o.base_offset)
                        FROM (SELECT s.base_offset, s.created_at,
                                     lead(s.created_at) OVER (ORDER BY s.base_offset) AS next_at
                                FROM queen.log_segments s WHERE s.partition_id = l.id) o
                       WHERE o.created_at > o.next_at) AS upto
          FROM queen.log_partitions l) d
 WHERE d.id = p.id;
DROP INDEX queen.log_segments_created_idx;

-- issue 28, hash runs: queen.log_hash_runs (sql/schema/00_core.sql), dumped like the rows it
-- describes. It starts empty: the first push of a partition whose window is large builds its
-- runs from the stored rows.
CREATE TABLE queen.log_hash_runs (
    partition_id bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    run_lo       bigint NOT NULL,
    key_hi       bigint NOT NULL,
    run_hi       bigint NOT NULL,
    entries      bytea NOT NULL,
    runs         bigint[],
    PRIMARY KEY (partition_id, run_lo, key_hi)
);
ALTER TABLE queen.log_hash_runs ALTER COLUMN entries SET STORAGE MAIN;
SELECT pg_catalog.pg_extension_config_dump('queen.log_hash_runs', '');
