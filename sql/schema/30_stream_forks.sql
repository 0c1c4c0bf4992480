-- The schema part of module 30 (stream forks; its functions are in
-- sql/modules/30_stream_forks.sql): created once, changed only through a delta (sql/upgrade/).

CREATE TABLE queen.stream_forks (
    name        text PRIMARY KEY,  -- the fork
    source      text NOT NULL,     -- the stream it was forked from
    fork_offset text NOT NULL,     -- where in the source (20 digits, before the sub-offset)
    sub_offset  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL
);
CREATE INDEX stream_forks_source ON queen.stream_forks (source);
SELECT pg_catalog.pg_extension_config_dump('queen.stream_forks', '');
