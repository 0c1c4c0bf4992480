--
-- stream_forks: queen.fork_create / fork_gone / fork_delete
-- (sql/modules/30_stream_forks.sql): a fork copies its source's prefix (and a sub-offset),
-- inherits the content type and TTL, and holds a deleted source as gone until it goes.
--
SELECT * FROM queen.fork_create('fk_src', 'text/plain', p_messages => ARRAY['first'::bytea]);
SELECT status, next_offset FROM queen.stream_append('fk_src', ARRAY['second'::bytea], 'text/plain');
-- At the tail (default), at offset 1, at offset 1 with 3 bytes of the next message.
SELECT * FROM queen.fork_create('fk_all', NULL, p_source => 'fk_src');
SELECT * FROM queen.fork_create('fk_one', NULL, p_source => 'fk_src', p_fork_offset => '00000000000000000001');
SELECT * FROM queen.fork_create('fk_sub', 'text/plain', p_source => 'fk_src',
                                          p_fork_offset => '00000000000000000001', p_sub_offset => 3);
SELECT r.status, r.next_offset, (SELECT string_agg(convert_from(m, 'UTF8'), '|') FROM unnest(r.messages) m)
  FROM unnest(ARRAY['fk_all', 'fk_one', 'fk_sub']) n, LATERAL queen.stream_read(n) r;
-- The source moves on; the forks do not see it.
SELECT status FROM queen.stream_append('fk_src', ARRAY['third'::bytea], 'text/plain');
SELECT status, next_offset FROM queen.stream_read('fk_all');
-- Re-creation: the same fork again is 'exists', another offset or a plain create 'conflict'.
SELECT status FROM queen.fork_create('fk_one', NULL, p_source => 'fk_src', p_fork_offset => '00000000000000000001');
SELECT status FROM queen.fork_create('fk_one', NULL, p_source => 'fk_src', p_fork_offset => '00000000000000000000');
SELECT status FROM queen.fork_create('fk_one', 'text/plain');
-- Rejections: unknown source, type mismatch, offset beyond the tail, sub-offset too long.
SELECT status FROM queen.fork_create('fk_x', NULL, p_source => 'fk_nope');
SELECT status FROM queen.fork_create('fk_x', 'application/json', p_source => 'fk_src');
SELECT status FROM queen.fork_create('fk_x', NULL, p_source => 'fk_src', p_fork_offset => '00000000000000000009');
SELECT status FROM queen.fork_create('fk_x', NULL, p_source => 'fk_src',
                                               p_fork_offset => '00000000000000000002', p_sub_offset => 6);
SELECT status FROM queen.fork_create('fk_x', NULL, p_source => 'fk_src',
                                               p_fork_offset => '00000000000000000003', p_sub_offset => 1);
SELECT count(*) FROM queen.stream_forks WHERE name = 'fk_x';
-- TTL inheritance.
SELECT status FROM queen.fork_create('fk_ttl_src', 'text/plain', p_ttl_seconds => 600);
SELECT status FROM queen.fork_create('fk_ttl', NULL, p_source => 'fk_ttl_src');
SELECT ttl_seconds FROM queen.stream_head('fk_ttl');
-- Delete the source while forks are present: gone, its name held, forks read on.
SELECT queen.fork_delete('fk_src');
SELECT queen.fork_gone('fk_src'), queen.fork_delete('fk_src');
SELECT status FROM queen.fork_create('fk_src', 'text/plain');
SELECT status FROM queen.fork_create('fk_y', NULL, p_source => 'fk_src');
SELECT status, next_offset FROM queen.stream_read('fk_one');
-- A fork of a fork keeps the chain: deleting the middle keeps the source gone.
SELECT status FROM queen.fork_create('fk_one_one', NULL, p_source => 'fk_one');
SELECT queen.fork_delete('fk_all'), queen.fork_delete('fk_sub'),
       queen.fork_delete('fk_one');
SELECT queen.fork_gone('fk_src'), queen.fork_gone('fk_one');
-- The last descendant goes: every name is free again.
SELECT queen.fork_delete('fk_one_one');
SELECT queen.fork_gone('fk_src'), queen.fork_gone('fk_one');
SELECT status, next_offset FROM queen.fork_create('fk_src', 'text/plain');
SELECT queen.fork_delete('fk_src'), queen.fork_delete('fk_src');
