\echo Use "ALTER EXTENSION queen UPDATE TO '0.3.0'" to load this file. \quit
-- queen 0.2.0 -> 0.3.0: the hand-written delta (0.2.0 is released and frozen in
-- sql/queen--0.2.0.sql). mk/sql.mk builds the upgrade script as this delta, then every routine
-- (sql/queen.sql, sql/modules/*.sql), then sql/privileges.sql.
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
-- No schema change yet.

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
