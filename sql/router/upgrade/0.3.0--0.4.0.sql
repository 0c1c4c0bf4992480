\echo Use "ALTER EXTENSION queen_router UPDATE TO '0.4.0'" to load this file. \quit
-- queen_router 0.3.0 -> 0.4.0: the hand-written delta (0.3.0 is released and frozen in
-- sql/queen_router--0.3.0.sql). mk/router.mk builds the upgrade script as this delta, then the
-- router's routines and privileges (sql/router/[2-9]*.sql in order) exactly as its install
-- script runs them. The rule is queen's (sql/upgrade/0.3.0--0.4.0.sql): a change of the router's
-- tables (sql/router/10_schema.sql) is written there AND here; routines and privileges need
-- nothing here but what CREATE OR REPLACE cannot do.
--
-- No schema change yet.
--
-- ---------------------------------------------------------------- issue 29, namespace and task
-- queen.configure gains the queue's namespace and task (as the shards' queen.configure does):
-- its argument list changes, so the 0.3.0 function and its one-shard call are dropped here and
-- created anew by the routines part.
DROP FUNCTION queen.configure(text, jsonb);
DROP FUNCTION queen.remote_configure(text, text, jsonb);
