-- queen.stream_append_batch: many stream appends in one call (one transaction, one commit),
-- each decided exactly as queen.stream_append decides it (src/pg/streams/append_batch.cpp).
-- Locking protocol: the names are resolved first without a lock, then the appends are decided
-- in ascending partition id order (queen's one global lock order), each stream's partition
-- row locked FOR NO KEY UPDATE once and held to the end of the transaction; the appends of one
-- stream keep their order. A name that did not resolve is decided last, by name.
CREATE OR REPLACE FUNCTION queen.stream_append_batch(p_names text[],
                                          p_counts int[],
                                          p_messages bytea[],
                                          p_content_types text[] DEFAULT NULL,
                                          p_producer_ids text[] DEFAULT NULL,
                                          p_producer_epochs bigint[] DEFAULT NULL,
                                          p_producer_seqs bigint[] DEFAULT NULL,
                                          p_digests text[] DEFAULT NULL,
                                          p_incarnations text[] DEFAULT NULL,
                                          p_closes boolean[] DEFAULT NULL,
                                          p_stream_seqs text[] DEFAULT NULL,
                                          p_bodies bytea[] DEFAULT NULL,
                                          p_expect_apply boolean[] DEFAULT NULL,
                                          p_now timestamptz DEFAULT NULL)
RETURNS TABLE (ord int, status text, stream_offset text, next_offset text, stream_closed boolean,
               producer_epoch bigint, producer_seq bigint, expected_seq bigint,
               received_seq bigint, closed_epoch bigint, closed_seq bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_append_batch_v1'
    LANGUAGE C VOLATILE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;
