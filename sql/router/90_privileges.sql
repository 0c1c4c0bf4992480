-- ================================================================ privileges of the router
-- The same three roles as the queen extension (sql/privileges.sql), created when absent:
-- queen_writer (push, ack, read, streams), queen_reader (read), queen_admin (configure,
-- retention, drop, views). The map readers are open to the three; the operations (add_shard,
-- move_slot, set_slot_count) and the calls to one named shard are the owner's only.
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['queen_writer', 'queen_reader', 'queen_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;
            END;
        END IF;
    END LOOP;
END
$$;

REVOKE ALL ON ALL ROUTINES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL ROUTINES IN SCHEMA plproxy FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC;
GRANT USAGE ON SCHEMA queen, plproxy TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION plproxy.get_cluster_version(text), plproxy.get_cluster_partitions(text),
    plproxy.get_cluster_config(text) TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION queen.shards(), queen.slot_map(), queen.map_version(), queen.slot_count(),
    queen.queue_placement(), queen.slot_of(text, text), queen.slot_of(text, text, integer),
    queen.txn_hash(text), queen.route_slot(text, text), queen.route_stream(text),
    queen.route_view(text), queen.slot_shard(int), queen.slot_moves()
    TO queen_writer, queen_reader, queen_admin;
GRANT EXECUTE ON FUNCTION queen.read(text, text, bigint, int), queen.partition_id(text, text),
    queen.committed_offset(text, text, text), queen.explain(text, text, text),
    queen.stream_read(text, text, int, int, timestamptz), queen.stream_head(text, timestamptz),
    queen.fork_gone(text, timestamptz), queen.dedup_changelog(text, bigint, int),
    queen.dedup_stats(text), queen.dedup_state_rows(text)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.shard_unreachable(int, text),
    queen.read_on(int, text, text, bigint, int), queen.partition_id_on(int, text, text),
    queen.committed_offset_on(int, text, text, text), queen.explain_on(int, text, text, text)
    TO queen_reader, queen_writer, queen_admin;
GRANT EXECUTE ON FUNCTION queen.push_on(int, text, text, jsonb),
    queen.ack_on(int, text, text, text, text), queen.ack_offset_on(int, text, text, bigint, text),
    queen.ack_batch_on(int, text, text, jsonb, text)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.push(text, text, jsonb), queen.ack(text, text, text, text),
    queen.ack_offset(text, text, bigint, text), queen.ack_batch(text, text, jsonb, text),
    queen.transaction(jsonb), queen.transaction_on(int, jsonb),
    queen.stream_create(text, text, bigint, timestamptz, boolean, bytea[], timestamptz),
    queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text,
                        bytea, timestamptz, boolean),
    queen.stream_close(text, timestamptz), queen.stream_delete(text, timestamptz),
    queen.fork_delete(text, timestamptz),
    queen.fork_create(text, text, bigint, timestamptz, boolean, bytea[], text, text, bigint, timestamptz),
    queen.fork_create_on(int, text, text, bigint, timestamptz, boolean, bytea[], text, text, bigint, timestamptz),
    queen.stream_append_batch(text[], int[], bytea[], text[], text[], bigint[], bigint[], text[],
                              text[], boolean[], text[], bytea[], boolean[], timestamptz),
    queen.stream_append_batch_on(int, text[], int[], bytea[], text[], text[], bigint[], bigint[],
                                 text[], text[], boolean[], text[], bytea[], boolean[], timestamptz),
    queen.dedup_advance(text, int, timestamptz), queen.dedup_watermark(text, bigint, timestamptz),
    queen.dedup_flush(text, timestamptz)
    TO queen_writer;
GRANT EXECUTE ON FUNCTION queen.configure(text, jsonb, text, text), queen.run_retention(int),
    queen.merge_answers(jsonb[]), queen.drop_queue(text),
    queen.create_dedup_view(text, text, jsonb), queen.create_dedup_view_on(int, text, text, jsonb),
    queen.create_dedup_view_sql(text, text), queen.drop_dedup_view(text),
    queen.drop_dedup_view_on(int, text)
    TO queen_admin;
