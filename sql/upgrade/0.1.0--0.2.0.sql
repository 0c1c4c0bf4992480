\echo Use "ALTER EXTENSION queen UPDATE TO '0.2.0'" to load this file. \quit
-- queen 0.1.0 -> 0.2.0: the hand-written delta. The Makefile appends the replayed part of
-- sql/queen.sql (every function, the pg_dump registrations, roles and grants) and the modules
-- (new in 0.2.0) and sql/finish/privileges.sql to build sql/queen--0.1.0--0.2.0.sql.
--
-- 1. Table changes between the two versions' CREATE TABLE sections: none in 0.2.0.
--    (Every later table change of sql/queen.sql must be repeated here.)
--
-- 2. Drop every function of 0.1.0; the replayed part creates the 0.2.0 ones, so an upgraded
--    database has exactly a fresh install's functions (bodies, signatures, SECURITY DEFINER,
--    search_path, grants). Objects of users that depend on one of these functions make the
--    update fail (nothing is changed then); drop and recreate them around the update.
--    Sessions keep working: prepared statements re-plan against the new functions.
DROP FUNCTION queen.txn_hash(text);
DROP FUNCTION queen.log_unnest_hashes(bytea);
DROP FUNCTION queen.log_find_hash(bigint, bytea);
DROP FUNCTION queen.push_segment(bigint, bytea, bytea, bigint, int);
DROP FUNCTION queen.push_segments(bigint[], bytea[], bytea[], bigint[], int[]);
DROP FUNCTION queen.push(text, text, jsonb);
DROP FUNCTION queen.read(text, text, bigint, int);
DROP FUNCTION queen.probe_cache_stats();
DROP FUNCTION queen.resolve_partition(text, text);
DROP FUNCTION queen.partition_id(text, text);
DROP FUNCTION queen.configure(text, jsonb);
DROP FUNCTION queen.committed_offset(text, text, text);
DROP FUNCTION queen.ack(text, text, text, text);
DROP FUNCTION queen.transaction(jsonb);
DROP FUNCTION queen.run_retention(int);

