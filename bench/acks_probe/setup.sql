-- Schema for bench/acks_probe/run.sh (issue 6): an ack target set and the probe scenarios.
-- Prefilled hashes are md5-made (never equal to the hash of a transactionId the bench sends).

-- Give partition p_pid p_rows data-less segment rows of 100 hashes each, created p_age ago, starting at
-- its next offset, and move its allocator past them (no segments: log_start moves too).
CREATE FUNCTION pg_temp.prefill(p_pid bigint, p_rows int, p_age interval, p_tag text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_base bigint;
BEGIN
    SELECT last_offset + 1 INTO v_base FROM queen.log_partitions WHERE id = p_pid;
    INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at,
                                    message_count, data, hashes, message_ids)
    SELECT p_pid, v_base + k * 100, v_base + k * 100 + 99, now() - p_age, 100, ''::bytea,
           (SELECT string_agg(decode(md5(p_tag || k || ':' || j), 'hex'), ''::bytea ORDER BY j)
              FROM generate_series(0, 99) AS j), NULL
      FROM generate_series(0, p_rows - 1) AS k;
    UPDATE queen.log_partitions SET last_offset = v_base + p_rows * 100 - 1,
                                    log_start = v_base + p_rows * 100
     WHERE id = p_pid;
END
$$;
