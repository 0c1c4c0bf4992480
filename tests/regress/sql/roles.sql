--
-- roles: least privilege. queen_writer pushes, acks and reads; queen_reader reads;
-- queen_admin configures, runs retention and drops queues. Every function runs as the owner
-- with search_path pinned to pg_catalog, pg_temp; no role has any table privilege; nothing in
-- a caller's schemas (a hostile function, operator or table) changes what queen does.
--
\i tests/regress/sql/sqlstate_of.psql

-- The three roles exist and cannot log in.
SELECT rolname, rolcanlogin, rolsuper FROM pg_roles
WHERE rolname IN ('queen_writer', 'queen_reader', 'queen_admin') ORDER BY 1;

-- Every function is SECURITY DEFINER with the pinned search_path (core and modules alike);
-- the one procedure is the exception (a SECURITY DEFINER procedure may not COMMIT).
SELECT p.oid::regprocedure AS routine, p.prokind, p.prosecdef, p.proconfig
FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace
  AND (p.prokind = 'f') = (NOT p.prosecdef OR p.proconfig IS DISTINCT FROM '{"search_path=pg_catalog, pg_temp"}')
ORDER BY 1::text;
-- Nothing is executable by PUBLIC, and no role has any privilege on any table or sequence.
SELECT p.oid::regprocedure AS public_routine FROM pg_proc p
WHERE p.pronamespace = 'queen'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE');
SELECT c.relname, r.rolname FROM pg_class c CROSS JOIN (VALUES ('queen_writer'), ('queen_reader'), ('queen_admin'), ('public')) r(rolname)
WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind IN ('r', 'S')
  AND (CASE c.relkind WHEN 'r' THEN has_table_privilege(r.rolname, c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER')
                      ELSE has_sequence_privilege(r.rolname, c.oid, 'USAGE,SELECT,UPDATE') END);
-- Which role may call what (internal helpers: nobody but the owner).
SELECT p.proname,
       has_function_privilege('queen_reader', p.oid, 'EXECUTE') AS reader,
       has_function_privilege('queen_writer', p.oid, 'EXECUTE') AS writer,
       has_function_privilege('queen_admin', p.oid, 'EXECUTE') AS admin
FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace
  AND p.proname IN ('txn_hash', 'log_unnest_hashes', 'log_find_hash', 'probe_cache_stats', 'read',
                    'partition_id', 'committed_offset', 'explain', 'resolve_partition', 'push',
                    'push_segment', 'push_segments', 'ack', 'transaction', 'configure',
                    'run_retention', 'retention_step', 'run_retention_procedure', 'drop_queue',
                    'retention_floor', 'retention_eligible', 'retention_purge')
ORDER BY 1;

-- Login roles given exactly one of the roles each.
SET client_min_messages = warning;
DROP ROLE IF EXISTS queen_test_writer;
DROP ROLE IF EXISTS queen_test_reader;
DROP ROLE IF EXISTS queen_test_admin;
RESET client_min_messages;
CREATE ROLE queen_test_writer LOGIN IN ROLE queen_writer;
CREATE ROLE queen_test_reader LOGIN IN ROLE queen_reader;
CREATE ROLE queen_test_admin LOGIN IN ROLE queen_admin;
SELECT queen.configure('roles_q', '{"dedupWindowSeconds": 600}') IS NOT NULL AS configured;

------------------------------------------------------------------------------------------
-- The writer: push, ack, read; no table access, no configuration.
------------------------------------------------------------------------------------------
-- (a real login as that role: a new session, not SET ROLE)
SELECT current_user AS admin_user \gset
\c - queen_test_writer
SELECT session_user, current_user, pg_has_role('queen_writer', 'MEMBER') AS writer, pg_has_role('queen_admin', 'MEMBER') AS admin;
\i tests/regress/sql/sqlstate_of.psql
SELECT index, status, message_offset FROM queen.push('roles_q', 'p', '[{"transactionId":"w1","payload":{"n":1}},{"transactionId":"w2","payload":2}]');
SELECT status, message_offset FROM queen.push('roles_q', 'p', '[{"transactionId":"w1","payload":1}]');
SELECT message_offset, transaction_id, payload FROM queen.read('roles_q', 'p', 0, 10);
SELECT queen.ack('roles_q', 'p', 'w1', 'g') AS acked;
SELECT queen.committed_offset('roles_q', 'p', 'g') AS committed;
SELECT queen.transaction('{"operations":[{"type":"push","queue":"roles_q","partition":"p2","items":[{"transactionId":"w3","payload":3}]}]}') -> 'success' AS tx_ok;
SELECT queen.explain('roles_q', 'p', 'w2') -> 'duplicate' AS explain_duplicate;
SELECT partition_id > 0 AS resolved FROM queen.resolve_partition('roles_q', 'p');
-- Writing around deduplication: every table refuses every kind of access (42501).
SELECT t AS tbl,
       pg_temp.sqlstate_of(format('SELECT * FROM queen.%I', t)) AS sel,
       pg_temp.sqlstate_of(format('INSERT INTO queen.%I DEFAULT VALUES', t)) AS ins,
       pg_temp.sqlstate_of(format('UPDATE queen.%I SET partition_id = partition_id', t)) AS upd,
       pg_temp.sqlstate_of(format('DELETE FROM queen.%I', t)) AS del,
       pg_temp.sqlstate_of(format('TRUNCATE queen.%I', t)) AS trunc
FROM unnest(ARRAY['log_segments', 'consumer_groups', 'consumer_acks']) t;
SELECT t AS tbl,
       pg_temp.sqlstate_of(format('INSERT INTO queen.%I (name) VALUES (''x'')', t)) AS ins,
       pg_temp.sqlstate_of(format('UPDATE queen.%I SET name = name', t)) AS upd,
       pg_temp.sqlstate_of(format('DELETE FROM queen.%I', t)) AS del
FROM unnest(ARRAY['queues', 'log_partitions']) t;
SELECT pg_temp.sqlstate_of($q$SELECT nextval('queen.log_partitions_id_seq')$q$) AS nextval;
-- No configuration, retention, drop or internal helper.
SELECT pg_temp.sqlstate_of($q$SELECT queen.configure('roles_q', '{"dedupWindowSeconds": 0}')$q$) AS configure,
       pg_temp.sqlstate_of($q$SELECT queen.run_retention(10)$q$) AS run_retention,
       pg_temp.sqlstate_of($q$CALL queen.run_retention_procedure(10)$q$) AS retention_procedure,
       pg_temp.sqlstate_of($q$SELECT queen.drop_queue('roles_q')$q$) AS drop_queue,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.retention_purge(1, 10, now())$q$) AS internal;
\c - :admin_user
\i tests/regress/sql/sqlstate_of.psql
SELECT dedup_window_seconds FROM queen.queues WHERE name = 'roles_q';

------------------------------------------------------------------------------------------
-- A search_path attack: hostile functions, operators and tables in the caller's own schema,
-- placed before pg_catalog, and temp objects. queen answers exactly as without them.
------------------------------------------------------------------------------------------
CREATE SCHEMA roles_evil AUTHORIZATION queen_test_writer;
SET ROLE queen_test_writer;
CREATE FUNCTION roles_evil.jsonb_typeof(jsonb) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked jsonb_typeof'; END $$;
CREATE FUNCTION roles_evil.jsonb_array_length(jsonb) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked jsonb_array_length'; END $$;
CREATE FUNCTION roles_evil.jsonb_array_elements(jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked jsonb_array_elements'; END $$;
CREATE FUNCTION roles_evil.coalesce_text(text, text) RETURNS text LANGUAGE sql AS $$ SELECT 'evil' $$;
CREATE FUNCTION roles_evil.evil_eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked ='; END $$;
CREATE OPERATOR roles_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = roles_evil.evil_eq);
CREATE FUNCTION roles_evil.evil_texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'hijacked text ='; END $$;
CREATE OPERATOR roles_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = roles_evil.evil_texteq);
CREATE TABLE roles_evil.queues (id bigint, name text, dedup_window_seconds int);
INSERT INTO roles_evil.queues VALUES (1, 'roles_q', 0);
CREATE TABLE roles_evil.log_partitions (id bigint);
CREATE TEMP TABLE log_segments (partition_id bigint);
SET search_path = roles_evil, pg_catalog, public;
-- (the hostile objects do work for the caller's own queries)
SELECT pg_temp.sqlstate_of('SELECT jsonb_typeof(''1''::jsonb)') AS caller_own_query;
SELECT index, status, message_offset FROM queen.push('roles_q', 'p', '[{"transactionId":"w2","payload":2},{"transactionId":"w4","payload":4}]');
SELECT message_offset, transaction_id FROM queen.read('roles_q', 'p', 0, 10);
SELECT queen.ack('roles_q', 'p', 'w2', 'g') AS acked;
SELECT queen.committed_offset('roles_q', 'p', 'g') AS committed;
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[{"type":"push","queue":"roles_q","partition":"p2","items":[{"transactionId":"w3","payload":3}]}]}')$q$) AS tx_duplicate;
SELECT queen.transaction('{"operations":[{"type":"push","queue":"roles_q","partition":"p2","items":[{"transactionId":"w5","payload":5}]},{"type":"ack","queue":"roles_q","partition":"p2","transactionId":"w3"}]}') -> 'results' -> 1 AS tx_ack;
SELECT queen.explain('roles_q', 'p', 'w4') - 'createdAt' - 'messageId' - 'windowLeftSeconds' AS explained;
RESET search_path;
DROP TABLE pg_temp.log_segments;
RESET ROLE;

------------------------------------------------------------------------------------------
-- The reader reads; it cannot push or ack.
------------------------------------------------------------------------------------------
SET ROLE queen_test_reader;
SELECT count(*) AS readable FROM queen.read('roles_q', 'p', 0, 10);
SELECT queen.committed_offset('roles_q', 'p', 'g') AS committed, queen.explain('roles_q', 'p', 'w1') -> 'offset' AS w1_offset;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push('roles_q', 'p', '[{"transactionId":"r1","payload":1}]')$q$) AS push,
       pg_temp.sqlstate_of($q$SELECT queen.ack('roles_q', 'p', 'w4', 'g')$q$) AS ack,
       pg_temp.sqlstate_of($q$SELECT * FROM queen.resolve_partition('roles_q', 'new')$q$) AS resolve,
       pg_temp.sqlstate_of($q$SELECT queen.configure('roles_q', '{}')$q$) AS configure,
       pg_temp.sqlstate_of($q$SELECT count(*) FROM queen.log_segments$q$) AS select_table;
RESET ROLE;

------------------------------------------------------------------------------------------
-- The admin configures, runs retention, drops queues; it cannot push.
------------------------------------------------------------------------------------------
SET ROLE queen_test_admin;
SELECT queen.configure('roles_q', '{"dedupWindowSeconds": 900}') ->> 'dedupWindowSeconds' AS window;
SELECT jsonb_typeof(queen.run_retention(10)) AS retention;
CALL queen.run_retention_procedure(10) \gset
SELECT :'result'::jsonb ? 'done' AS retention_procedure_done;
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.push('roles_q', 'p', '[{"transactionId":"a1","payload":1}]')$q$) AS push,
       pg_temp.sqlstate_of($q$DELETE FROM queen.queues$q$) AS delete_table;
SELECT queen.drop_queue('roles_q') ->> 'partitionsDropped' AS dropped;
RESET ROLE;
SELECT count(*) AS left_rows FROM queen.queues WHERE name = 'roles_q';

SET client_min_messages = warning;
DROP SCHEMA roles_evil CASCADE;
RESET client_min_messages;
DROP ROLE queen_test_writer;
DROP ROLE queen_test_reader;
DROP ROLE queen_test_admin;
