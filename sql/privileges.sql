-- Every privilege of queen, in one place: the last part of every install and every upgrade
-- script (after the schema and routines parts; see the Makefile). It states the whole truth, so
-- an upgraded database ends with exactly a fresh install's privileges: it first takes every
-- privilege on schema queen's routines, tables and sequences away from PUBLIC and from the three
-- roles, then grants what each role may do. A routine or table added later gets nothing until a
-- line here grants it; a grant removed here is gone after the next upgrade too.
--
-- Least privilege. Three roles (cluster-wide, so created only when absent; another database's
-- install may create them at the same moment): queen_writer (push, ack, read), queen_reader
-- (read), queen_admin (configure, retention, drop). Every function runs as the extension's owner
-- (SECURITY DEFINER, stated with each routine) with search_path pinned to pg_catalog, pg_temp and
-- every queen object schema-qualified, so nothing in a caller's schemas can stand in for what it
-- calls. No role gets any table privilege: the functions are the only way in (the one view,
-- queen.probe_cache, is read-only). Internal helpers get no grant. CREATE FUNCTION grants EXECUTE
-- to PUBLIC by default, and a SECURITY DEFINER function callable by anyone would bypass the roles:
-- hence the REVOKE from PUBLIC of every routine.
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['queen_writer', 'queen_reader', 'queen_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile by an install in another database
            END;
        END IF;
    END LOOP;
END
$$;

REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC, queen_writer, queen_reader, queen_admin;
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC, queen_writer, queen_reader, queen_admin;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA queen FROM PUBLIC, queen_writer, queen_reader, queen_admin;
GRANT USAGE ON SCHEMA queen TO queen_writer, queen_reader, queen_admin;

-- ---------------------------------------------------------------- every role: read
-- core (sql/modules/00_core.sql)
GRANT EXECUTE ON FUNCTION
    queen.txn_hash(text), queen.log_unnest_hashes(bytea), queen.probe_cache_stats(),
    queen.push_hint_stats(), queen.push_last_stamp(), queen.read(text, text, bigint, int), queen.partition_id(text, text),
    queen.committed_offset(text, text, text), queen.explain(text, text, text),
    queen.probe_index_stats(), queen.probe_runs_stats()
    TO queen_reader, queen_writer, queen_admin;
-- placement (sql/modules/00_core.sql; docs/scale-out.md)
GRANT EXECUTE ON FUNCTION queen.slot_of(text, text), queen.slot_of(text, text, integer)
    TO queen_reader, queen_writer, queen_admin;
-- shared probe cache (sql/modules/50_probe_cache.sql)
GRANT EXECUTE ON FUNCTION queen.probe_cache_shared(), queen.probe_cache_partitions()
    TO queen_reader, queen_writer, queen_admin;
GRANT SELECT ON queen.probe_cache TO queen_reader, queen_writer, queen_admin;

-- ---------------------------------------------------------------- queen_reader and queen_writer
-- streams (sql/modules/20_producers.sql, 30_stream_forks.sql)
GRANT EXECUTE ON FUNCTION queen.blake3(bytea), queen.blake3_hex(bytea) TO queen_writer, queen_reader;
GRANT EXECUTE ON FUNCTION queen.stream_offset(bigint), queen.stream_offset_parse(text)
    TO queen_writer, queen_reader;
GRANT EXECUTE ON FUNCTION
    queen.stream_read(text, text, int, int, timestamptz),
    queen.stream_head(text, timestamptz)
    TO queen_reader, queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_gone(text, timestamptz) TO queen_reader, queen_writer;
-- dedup views (sql/modules/40_dedup_views.sql)
GRANT EXECUTE ON FUNCTION queen.dedup_changelog(text, bigint, int), queen.dedup_stats(text),
    queen.dedup_state_rows(text) TO queen_reader, queen_writer;

-- ---------------------------------------------------------------- queen_writer: write
-- push and ack (sql/modules/00_core.sql, sql/modules/10_resolve_partitions.sql)
GRANT EXECUTE ON FUNCTION
    queen.resolve_partition(text, text), queen.push(text, text, jsonb),
    queen.push_segment(bigint, bytea, bytea, bigint, int, bytea),
    queen.push_segments(bigint[], bytea[], bytea[], bigint[], int[], bytea[]),
    queen.ack(text, text, text, text), queen.ack_offset(text, text, bigint, text),
    queen.ack_batch(text, text, jsonb, text), queen.transaction(jsonb)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.resolve_partitions(text[], text[]) TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.push_segments_named(bigint[], text[], text[], bytea[], bytea[],
                                                    bigint[], int[], bytea[]) TO queen_writer;
-- streams (sql/modules/20_producers.sql, 21_stream_append_batch.sql, 30_stream_forks.sql)
GRANT EXECUTE ON FUNCTION
    queen.stream_create(text, text, bigint, timestamptz, boolean, bytea[], timestamptz),
    queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text,
                        bytea, timestamptz, boolean),
    queen.stream_close(text, timestamptz),
    queen.stream_delete(text, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.stream_append_batch(text[], int[], bytea[], text[], text[],
    bigint[], bigint[], text[], text[], boolean[], text[], bytea[], boolean[], timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_create(text, text, bigint, timestamptz, boolean,
                                            bytea[], text, text, bigint, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.fork_delete(text, timestamptz) TO queen_writer;
-- dedup views (sql/modules/40_dedup_views.sql)
GRANT EXECUTE ON FUNCTION queen.dedup_advance(text, int, timestamptz),
    queen.dedup_watermark(text, bigint, timestamptz), queen.dedup_flush(text, timestamptz)
    TO queen_writer;

-- ---------------------------------------------------------------- queen_admin: administration
GRANT EXECUTE ON FUNCTION
    queen.configure(text, jsonb, text, text), queen.run_retention(int),
    queen.retention_step(jsonb, int), queen.drop_queue(text)
    TO queen_admin;
GRANT EXECUTE ON PROCEDURE queen.run_retention_procedure(int, float8, jsonb) TO queen_admin;
-- the opt-in hash index (sql/modules/51_hash_index.sql)
GRANT EXECUTE ON FUNCTION queen.hash_index(boolean) TO queen_admin;
-- the periodic sweeps' lock (issue 27: the sidecar's sweep, scripts/retention-loop.sh)
GRANT EXECUTE ON FUNCTION queen.retention_sweep_lock(), queen.retention_sweep_unlock() TO queen_admin;
GRANT EXECUTE ON FUNCTION queen.create_dedup_view(text, text, jsonb),
    queen.create_dedup_view_sql(text, text), queen.drop_dedup_view(text) TO queen_admin;

-- ---------------------------------------------------------------- the consuming model (issue 18)
-- sql/modules/60_consume*.sql: wire partition ids and the dead-letter listing for every role;
-- pops, acks, lease renewal and the broker's transaction for writers; deletes for admins.
GRANT EXECUTE ON FUNCTION queen.partition_uuid(bigint), queen.partition_of_uuid(text),
    queen.dlq_messages(text, text, int, int)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION
    queen.pop(text, text, text, int, int, text, text, timestamptz),
    queen.ack_messages(jsonb, text), queen.renew_lease(text, int), queen.transaction_wire(jsonb)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.delete_queue(text), queen.delete_consumer_group(text, boolean)
    TO queen_admin;
-- sql/modules/91_admin_groups.sql (issue 29): the consumer-group figures for every role; seek
-- and a group's deletion on one queue for admins.
GRANT EXECUTE ON FUNCTION queen.admin_consumer_groups(int, int), queen.admin_consumer_group(text),
    queen.admin_lagging_partitions(int, int, int)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.seek_consumer_group(text, text, boolean, timestamptz),
    queen.seek_consumer_group_partition(text, text, text),
    queen.delete_consumer_group_for_queue(text, text, boolean)
    TO queen_admin;

-- ---------------------------------------------------------------- maintenance mode (issue 18)
-- sql/modules/70_maintenance.sql: the mode and its status for every role; parking a push for
-- writers; switching for admins (queen.push_parked and queen.maintenance_drain are internal).
GRANT EXECUTE ON FUNCTION queen.maintenance_enabled(), queen.maintenance_status()
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.maintenance_park(json) TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.set_maintenance(boolean) TO queen_admin;

-- ---------------------------------------------------------------- payload encryption (issue 27)
-- sql/modules/80_encryption.sql: the sidecar's per-queue modes for every role (the switch is
-- configure's; the guards are internal).
GRANT EXECUTE ON FUNCTION queen.queue_modes(text[]) TO queen_writer, queen_reader, queen_admin;

-- ---------------------------------------------------------------- admin views (issue 29)
-- sql/modules/90_admin_queues.sql: the queue and status views, read-only, for every role.
GRANT EXECUTE ON FUNCTION queen.admin_queues(text, int, int, text, text, text),
    queen.admin_queue(text, int, int), queen.admin_queue_detail(text, int, int),
    queen.admin_partitions(text, int, int), queen.admin_groupings(text), queen.admin_overview(),
    queen.admin_status(timestamptz, timestamptz, text, text, text),
    queen.admin_analytics(timestamptz, timestamptz, text, text, text, text)
    TO queen_reader, queen_writer, queen_admin;
-- ---------------------------------------------------------------- admin: messages and DLQ (issue 29)
-- sql/modules/92_admin_messages.sql: the message browser, one message and the DLQ across
-- queues for every role; deleting and retrying a dead letter for admins.
GRANT EXECUTE ON FUNCTION queen.admin_messages(text, text, text, text, text, int, int),
    queen.admin_message(text, text),
    queen.admin_dlq(text, text, text, text, text, int, int)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.admin_delete_message(text, text, text),
    queen.admin_retry_message(text, text, text)
    TO queen_admin;
-- ---------------------------------------------------------------- the dashboard's system views (issue 29)
-- sql/modules/93_admin_system.sql: the time-series routes' window and PostgreSQL's statistics of
-- queen's tables, read-only, for every role (admin_postgres_stats runs with the caller's rights).
GRANT EXECUTE ON FUNCTION queen.admin_window(text, text), queen.admin_postgres_stats()
    TO queen_reader, queen_writer, queen_admin;
