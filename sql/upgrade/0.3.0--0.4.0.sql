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
-- No schema change yet.

-- issue 27, pops by queue: a pop by queue walks its queue's partitions in id order from a
-- random point instead of listing them all (sql/schema/50_consume.sql).
CREATE INDEX log_partitions_queue_idx ON queen.log_partitions (queue_id, id);
