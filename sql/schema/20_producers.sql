-- The schema part of module 20 (streams and producers; its functions and locking protocol are in
-- sql/modules/20_producers.sql): created once, changed only through a delta (sql/upgrade/).

-- One row per stream; partition_id is its partition of queue __queen_streams.
CREATE TABLE queen.streams (
    partition_id       bigint PRIMARY KEY REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    name               text NOT NULL UNIQUE,
    content_type       text NOT NULL,
    ttl_seconds        bigint CHECK (ttl_seconds > 0),
    expires_at         timestamptz,
    closed             boolean NOT NULL DEFAULT false,
    closed_by_producer text,     -- the closing producer tuple (NULL: closed without one)
    closed_by_epoch    bigint,
    closed_by_seq      bigint,
    epoch_floor        bigint NOT NULL DEFAULT 0,  -- raised to every forgotten producer's epoch
    last_stream_seq    text COLLATE "C",           -- Stream-Seq of the last write that sent one
    created_at         timestamptz NOT NULL,
    touched_at         timestamptz NOT NULL,       -- last read or write (TTL streams)
    CHECK (ttl_seconds IS NULL OR expires_at IS NULL)
);

-- One row per (stream, producer): the state the decision reads.
CREATE TABLE queen.stream_producers (
    partition_id       bigint NOT NULL REFERENCES queen.streams (partition_id) ON DELETE CASCADE,
    producer_id        text NOT NULL,
    epoch              bigint NOT NULL,
    seq                bigint NOT NULL,       -- highest applied seq of the epoch
    newest_digest      bytea NOT NULL,        -- BLAKE3-256 of the newest write's body
    newest_start       bigint NOT NULL,       -- its receipt: Stream-Offset ...
    newest_next        bigint NOT NULL,       -- ... Stream-Next-Offset ...
    newest_closed      boolean NOT NULL,      -- ... and whether it closed the stream
    claim_digest       bytea NOT NULL,        -- BLAKE3-256 of the epoch's claim (seq 0)
    claim_closed_epoch bigint,                -- what the claim closed (NULL: nothing)
    claim_closed_seq   bigint,
    last_seen          timestamptz NOT NULL,  -- the newest applied write
    PRIMARY KEY (partition_id, producer_id)
) WITH (fillfactor = 70);
-- No index on last_seen: every applied append updates last_seen, and an indexed column would
-- make each of those updates a new tuple plus an entry in every index; without one the
-- update is HOT (fillfactor leaves the page room). The sweep of idle producers and the
-- eviction (both only for a new producer) scan the stream's producers through the primary
-- key's partition_id prefix (at most 4,096 rows).

SELECT pg_catalog.pg_extension_config_dump('queen.streams', '');
SELECT pg_catalog.pg_extension_config_dump('queen.stream_producers', '');
