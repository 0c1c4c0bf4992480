\echo Use "ALTER EXTENSION queen UPDATE TO '0.3.0'" to load this file. \quit
-- queen 0.2.0 -> 0.3.0: the hand-written delta (0.2.0 is released and frozen in
-- sql/queen--0.2.0.sql). mk/sql.mk builds the upgrade script as this delta, then every routine
-- (sql/modules/00_core.sql, sql/modules/*.sql), then sql/privileges.sql.
--
-- The rule (docs/sql-interface.md, "Upgrades"), for every schema change of 0.3.0:
--   * tables, columns, constraints, indexes, storage options, pg_dump registrations: written in
--     the schema part (sql/schema/*.sql, what a fresh install creates) AND here, as the statement
--     that takes a 0.2.0 database there (ALTER TABLE ... ADD COLUMN ... DEFAULT, CREATE INDEX,
--     a new table with its pg_extension_config_dump, a data migration, ...). A column is added
--     at the end of its table in both places, so its number is the same.
--   * routines need nothing here: every upgrade runs every CREATE OR REPLACE of the routines
--     part again, after this delta (so a routine may already use the new columns). Only what
--     CREATE OR REPLACE cannot do is written here: DROP FUNCTION of a routine 0.3.0 removes, or
--     whose argument types or names, defaults or result type change (it is then created anew);
--     a view whose columns change, likewise DROP VIEW.
--   * privileges need nothing here: sql/privileges.sql takes every privilege back and grants
--     0.3.0's.
-- tests/integration/upgrade.sh checks that a database upgraded from 0.2.0 (and from 0.1.0, through
-- the frozen 0.1.0 -> 0.2.0) has exactly a fresh 0.3.0 install's catalog, and shows the rule
-- holding on a test-only version that changes an existing table.
--

-- ---------------------------------------------------------------- issue 18: consuming (sql/schema/50_consume.sql)

-- Queen's 15 queue options as configure stored them (all 15 keys, defaults filled in). A queue
-- without a row has the defaults (queen.consume_defaults()).
CREATE TABLE queen.queue_options (
    queue_id bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    options  jsonb NOT NULL
);

-- One row per (partition, group) that popped there: its lease (lease_id NULL = none; a lease
-- is live while lease_expires_at > now), the size of the batch it delivered, how many of them
-- were acked since, and the retry counter (reset when a batch completes).
CREATE TABLE queen.consumer_state (
    partition_id     bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name       text NOT NULL,
    lease_id         uuid,
    lease_expires_at timestamptz,
    batch_size       int NOT NULL DEFAULT 0,
    acked_count      int NOT NULL DEFAULT 0,
    retry_count      int NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, group_name)
);
CREATE INDEX consumer_state_lease_idx ON queen.consumer_state (lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX consumer_state_group_idx ON queen.consumer_state (group_name);

-- A group's subscription on a queue, fixed at its first pop there (§4 of the wire facts):
-- start_at NULL = all history, else the messages created at or after it. Keyed by the queue's
-- name, not its id: deleting a queue keeps it (the broker's rule); deleting the group drops it.
CREATE TABLE queen.consumer_subscriptions (
    queue_name text NOT NULL,
    group_name text NOT NULL,
    mode       text NOT NULL,
    start_at   timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, group_name)
);

-- The dead-letter queue: a copy of each message a nack (retries exhausted) or a "dlq" ack moved
-- out, with the error; the cursor moved past it.
CREATE TABLE queen.consumer_dlq (
    id             bigserial PRIMARY KEY,
    partition_id   bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name     text NOT NULL,
    message_offset bigint NOT NULL,
    message_id     uuid NOT NULL,
    transaction_id text NOT NULL,
    payload        jsonb,
    error_message  text NOT NULL,
    retry_count    int NOT NULL,
    created_at     timestamptz NOT NULL,
    failed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consumer_dlq_partition_idx ON queen.consumer_dlq (partition_id, failed_at);

SELECT pg_catalog.pg_extension_config_dump('queen.queue_options', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_state', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_subscriptions', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_dlq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_dlq_id_seq', '');

-- ---------------------------------------------------------------- storage (issue 19)
-- The segment row carries its own hashes and message ids (sql/schema/00_core.sql); queen.log_txns
-- and its two indexes go. Every 0.2.0 row is kept:
--   * a log_txns row's hashes and ids move, byte for byte, into the segment row of the same
--     (partition_id, base_offset), so a duplicate after the update names the same original id
--     and offset as before it;
--   * a log_txns row without a segment (the segment's data expired, its hashes still in the
--     window) becomes a data-less segment row (data = '', below log_start: no reader reaches it);
--   * a segment without a log_txns row (a stream append of 0.3.0's predecessor never wrote one,
--     or the hashes expired first) keeps hashes NULL, as a fresh 0.3.0 writes it.
-- The columns are added at the end (7 and 8, the same numbers as a fresh install's).
ALTER TABLE queen.log_segments ADD COLUMN hashes bytea;
ALTER TABLE queen.log_segments ADD COLUMN message_ids bytea;
ALTER TABLE queen.log_segments ALTER COLUMN hashes SET STORAGE MAIN;
ALTER TABLE queen.log_segments ALTER COLUMN message_ids SET STORAGE MAIN;
UPDATE queen.log_segments s SET hashes = t.hashes, message_ids = t.message_ids
  FROM queen.log_txns t
 WHERE t.partition_id = s.partition_id AND t.base_offset = s.base_offset;
INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at, message_count,
                                data, hashes, message_ids)
SELECT t.partition_id, t.base_offset, t.end_offset, t.created_at,
       (t.end_offset - t.base_offset + 1)::int, ''::bytea, t.hashes, t.message_ids
  FROM queen.log_txns t
 WHERE NOT EXISTS (SELECT 1 FROM queen.log_segments s
                    WHERE s.partition_id = t.partition_id AND s.base_offset = t.base_offset);
CREATE INDEX log_segments_created_idx ON queen.log_segments (partition_id, created_at)
    WHERE hashes IS NOT NULL;
-- its pg_extension_config_dump registration goes with the table
ALTER EXTENSION queen DROP TABLE queen.log_txns;
DROP TABLE queen.log_txns;

-- ---------------------------------------------------------------- issue 20: slots and the fence
-- sql/schema/60_slots.sql: a shard's membership, its slots and the queues' placement.
CREATE TABLE queen.shard_membership (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    shard      text NOT NULL,
    slot_count int NOT NULL CHECK (slot_count >= 1 AND slot_count <= 65536
                                   AND (slot_count & (slot_count - 1)) = 0),
    joined_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE queen.shard_slots (
    slot  int PRIMARY KEY CHECK (slot >= 0),
    state text NOT NULL CHECK (state IN ('owned', 'moving'))
);
CREATE TABLE queen.queue_placement (
    queue_id    bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    single_slot boolean NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('queen.shard_membership', '');
SELECT pg_catalog.pg_extension_config_dump('queen.shard_slots', '');
SELECT pg_catalog.pg_extension_config_dump('queen.queue_placement', '');

-- ---------------------------------------------------------------- issue 18: maintenance mode
-- sql/schema/70_maintenance.sql: the mode and the parked pushes.

-- The mode: at most one row (none = off, as a fresh install). Parking takes it FOR SHARE and
-- switching takes it FOR UPDATE, so a switch off waits for every park in flight and its drain
-- sees all of them.
CREATE TABLE queen.maintenance_mode (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    enabled    boolean NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- The parked pushes, in push order (seq). payload is json, not jsonb: the text as it was sent,
-- stored verbatim when delivered. message_id is the id the message gets when the drain stores
-- it (an item sent without a transactionId has that id's text as its transactionId).
CREATE TABLE queen.maintenance_parked (
    seq            bigserial PRIMARY KEY,
    queue          text NOT NULL,
    partition      text NOT NULL,
    transaction_id text NOT NULL,
    message_id     uuid NOT NULL,
    payload        json NOT NULL,
    parked_at      timestamptz NOT NULL DEFAULT now()
);
-- the drain reads one partition's parked messages in push order
CREATE INDEX maintenance_parked_pair_idx ON queen.maintenance_parked (queue, partition, seq);

SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_mode', '');
SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_parked', '');
SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_parked_seq_seq', '');
