--
-- dedup views, the SQL interface: option validation (22023), unknown objects (42704),
-- create_dedup_view_sql (raw_parser; Top-N shapes refused saying so), the merge order across
-- partitions, p_max_rows, dedup_changelog / dedup_stats / drop_dedup_view, independence of
-- several views, a rollback leaves no trace, a queue with views cannot be deleted (2BP01),
-- privileges, and the retention floor.
--
\i tests/regress/sql/dedup_prelude.psql
SELECT queen.configure('dq_if') IS NOT NULL AS configured;

-- ---- bad options: 22023 each, nothing created
SELECT o AS options, pg_temp.err(format('SELECT queen.create_dedup_view(%L, %L, %L)', 'bad', 'dq_if', o)) AS result
  FROM unnest(ARRAY[
    NULL,
    '[]',
    '{"order": "proctime", "keep": "first"}',
    '{"key": "", "order": "proctime", "keep": "first"}',
    '{"key": [], "order": "proctime", "keep": "first"}',
    '{"key": [1], "order": "proctime", "keep": "first"}',
    '{"key": "k", "keep": "first"}',
    '{"key": "k", "order": "eventtime", "keep": "first"}',
    '{"key": "k", "order": "proctime", "keep": "any"}',
    '{"key": "k", "order": "rowtime", "keep": "first"}',
    '{"key": "k", "order": "proctime", "keep": "first", "generateInsert": "yes"}',
    '{"key": "k", "order": "proctime", "keep": "first", "miniBatchSize": 1.5}',
    '{"key": "k", "order": "proctime", "keep": "first", "stateTtlMs": -1}',
    '{"key": "k", "order": "proctime", "keep": "first", "miniBatchEnabled": true, "miniBatchSize": 0}',
    '{"key": "k", "order": "proctime", "keep": "first", "tableExecFoo": 1}'
  ]::jsonb[]) o;
SELECT pg_temp.err($$SELECT queen.create_dedup_view('', 'dq_if', '{"key": "k", "order": "proctime", "keep": "first"}')$$);
SELECT pg_temp.err($$SELECT queen.create_dedup_view('v', 'no_such_queue', '{"key": "k", "order": "proctime", "keep": "first"}')$$);
SELECT count(*) AS views FROM queen.dedup_views WHERE name IN ('bad', '', 'v');

-- ---- unknown views
SELECT pg_temp.err($$SELECT * FROM queen.dedup_advance('nope')$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_watermark('nope', 1)$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_flush('nope')$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_changelog('nope')$$);
SELECT pg_temp.err($$SELECT queen.dedup_stats('nope')$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_state_rows('nope')$$);
SELECT pg_temp.err($$SELECT queen.drop_dedup_view('nope')$$);

-- ---- a view, the defaults it stored, a duplicate name, bad call arguments
SELECT queen.create_dedup_view('if_a', 'dq_if', '{"key": ["c", "id"], "order": "proctime", "keep": "last"}');
SELECT queen.dedup_stats('if_a') -> 'options' AS options;
SELECT pg_temp.err($$SELECT queen.create_dedup_view('if_a', 'dq_if', '{"key": "k", "order": "proctime", "keep": "first"}')$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_advance('if_a', -1)$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_advance('if_a', 10, NULL)$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_watermark('if_a', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM queen.dedup_changelog('if_a', 0, -1)$$);

-- ---- merge order across partitions: each partition in offset order; among partitions the
-- next message with the earliest segment created_at (then the partition name) goes first
BEGIN;
SELECT pg_temp.push('dq_if', 'p2', '{"c": {"id": 1}, "v": "p2-0"}', '{"c": {"id": 2}, "v": "p2-1"}');
SELECT pg_temp.push('dq_if', 'p1', '{"c": {"id": 1}, "v": "p1-0"}');
COMMIT;  -- one transaction: both segments have the same created_at; p1 < p2 by name
SELECT pg_temp.push('dq_if', 'p2', '{"c": {"id": 1}, "v": "p2-2"}');
SELECT pg_temp.push('dq_if', 'p1', '{"c": {"id": 2}, "v": "p1-1"}');
-- p_max_rows 3: the first three in merge order, offsets recorded per partition
SELECT seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('if_a', 3, pg_temp.t(0));
SELECT queen.dedup_stats('if_a') -> 'offsets' AS offsets, queen.dedup_stats('if_a') -> 'consumed' AS consumed;
SELECT seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('if_a', 3, pg_temp.t(1));
SELECT count(*) FROM queen.dedup_advance('if_a', 0, pg_temp.t(2));

-- ---- a second view over the same queue is independent and starts from the beginning; the
-- same calls give it the same changelog
SELECT queen.create_dedup_view('if_b', 'dq_if', '{"key": ["c", "id"], "order": "proctime", "keep": "last"}');
SELECT count(*) FROM queen.dedup_advance('if_b', 3, pg_temp.t(0));
SELECT count(*) FROM queen.dedup_advance('if_b', 3, pg_temp.t(1));
SELECT (SELECT array_agg(row(c.*)::text ORDER BY seq) FROM queen.dedup_changelog('if_a') c)
     = (SELECT array_agg(row(c.*)::text ORDER BY seq) FROM queen.dedup_changelog('if_b') c) AS same_changelog;

-- ---- a rolled-back advance leaves no trace; the next call emits exactly the same
SELECT pg_temp.push('dq_if', 'p1', '{"c": {"id": 3}, "v": "p1-2"}', '{"c": {"id": 1}, "v": "p1-3"}');
BEGIN;
SELECT seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('if_a', 10, pg_temp.t(5));
ROLLBACK;
SELECT queen.dedup_stats('if_a') -> 'consumed' AS consumed, queen.dedup_stats('if_a') -> 'changes' AS changes;
SELECT seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('if_a', 10, pg_temp.t(5));

-- ---- dedup_changelog pages by seq
SELECT seq, kind, key, source_partition, source_offset FROM queen.dedup_changelog('if_a', 4, 3);
SELECT count(*) FROM queen.dedup_changelog('if_a', 0, 0);

-- ---- create_dedup_view_sql: the accepted shapes and the options they give
SELECT queen.configure('dq_sql') IS NOT NULL AS configured;
SELECT queen.create_dedup_view_sql('sql_1', $$SELECT c, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts DESC) AS rn FROM dq_sql) WHERE rn = 1$$);
SELECT queen.create_dedup_view_sql('sql_2', $$SELECT c FROM (SELECT *, row_number() OVER (PARTITION BY c ORDER BY ts ASC) AS rn FROM dq_sql) t WHERE rn <= 1$$);
SELECT queen.create_dedup_view_sql('sql_3', $$SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY PROCTIME()) AS rownum FROM dq_sql) WHERE rownum < 2$$);
SELECT queen.create_dedup_view_sql('sql_4', $$SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY proctime() DESC) AS rn FROM "dq_sql") WHERE rn = 1$$);
SELECT queen.dedup_stats(v) -> 'options' AS options FROM unnest(ARRAY['sql_1', 'sql_2', 'sql_3', 'sql_4']) v;
-- Top-N shapes: 0A000, the message says Top-N
SELECT q AS query, pg_temp.err(format('SELECT queen.create_dedup_view_sql(%L, %L)', 'topn', q)) AS result
  FROM unnest(ARRAY[
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY price * 2 DESC) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY lower(name)) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts, v) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn <= 3',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn < 3',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn = 2',
    'SELECT c FROM (SELECT *, RANK() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn = 1'
  ]) q;
-- not a deduplication query at all: 22023 (a syntax error stays PostgreSQL's 42601)
SELECT q AS query, pg_temp.err(format('SELECT queen.create_dedup_view_sql(%L, %L)', 'other', q)) AS result
  FROM unnest(ARRAY[
    'SELECT 1',
    'SELECT c FROM dq_sql',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY ts) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c) AS rn FROM dq_sql) WHERE rn = 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn > 0',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql) WHERE rn < 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM nosuchqueue) WHERE rn = 1',
    'SELECT c FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY c ORDER BY ts) AS rn FROM dq_sql WHERE',
    'SELECT 1; SELECT 2'
  ]) q;

-- ---- drop: the view, its state, changelog and offsets go
SELECT queen.drop_dedup_view('if_b');
SELECT count(*) FROM queen.dedup_views WHERE name = 'if_b';
SELECT (SELECT count(*) FROM queen.dedup_change_blocks c WHERE NOT EXISTS (SELECT 1 FROM queen.dedup_views v WHERE v.id = c.view_id))
     + (SELECT count(*) FROM queen.dedup_state_buckets c WHERE NOT EXISTS (SELECT 1 FROM queen.dedup_views v WHERE v.id = c.view_id))
     + (SELECT count(*) FROM queen.dedup_pending c WHERE NOT EXISTS (SELECT 1 FROM queen.dedup_views v WHERE v.id = c.view_id))
     + (SELECT count(*) FROM queen.dedup_offsets c WHERE NOT EXISTS (SELECT 1 FROM queen.dedup_views v WHERE v.id = c.view_id)) AS leftovers;

-- ---- a queue read by a view cannot be deleted (queen.drop_queue too): 2BP01
SELECT pg_temp.err($$DELETE FROM queen.queues WHERE name = 'dq_sql'$$);
SELECT queen.drop_dedup_view(v) FROM unnest(ARRAY['sql_1', 'sql_2', 'sql_3', 'sql_4']) v;
SELECT pg_temp.err($$DELETE FROM queen.queues WHERE name = 'dq_sql'$$);

-- ---- retention floor: min over the queue's views of their next unconsumed offset
-- (0 where a view consumed nothing of the partition); NULL with no view
SELECT queen.configure('dq_floor') IS NOT NULL AS configured;
SELECT pg_temp.push('dq_floor', 'a', '{"k": 1}', '{"k": 2}', '{"k": 3}');
SELECT pg_temp.push('dq_floor', 'b', '{"k": 1}');
CREATE FUNCTION pg_temp.floors() RETURNS TABLE (part text, floor bigint) LANGUAGE sql AS $$
    SELECT p.name, queen.retention_floor(p.id) FROM queen.log_partitions p
      JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'dq_floor' ORDER BY p.name $$;
SELECT * FROM pg_temp.floors();
SELECT queen.create_dedup_view('fl_1', 'dq_floor', '{"key": "k", "order": "proctime", "keep": "first"}');
SELECT queen.create_dedup_view('fl_2', 'dq_floor', '{"key": "k", "order": "proctime", "keep": "first"}');
SELECT * FROM pg_temp.floors();
SELECT count(*) FROM queen.dedup_advance('fl_1', 100, pg_temp.t(0));
SELECT count(*) FROM queen.dedup_advance('fl_2', 2, pg_temp.t(0));
SELECT * FROM pg_temp.floors();
SELECT queen.drop_dedup_view('fl_2');
SELECT * FROM pg_temp.floors();
SELECT queen.drop_dedup_view('fl_1');
SELECT * FROM pg_temp.floors();

-- ---- privileges: writer drives views, reader and writer read them, admin creates and drops
SELECT f, has_function_privilege('queen_writer', f, 'EXECUTE') AS writer,
          has_function_privilege('queen_reader', f, 'EXECUTE') AS reader,
          has_function_privilege('queen_admin', f, 'EXECUTE') AS admin,
          has_function_privilege('public', f, 'EXECUTE') AS public
  FROM unnest(ARRAY['queen.create_dedup_view(text,text,jsonb)', 'queen.create_dedup_view_sql(text,text)',
                    'queen.drop_dedup_view(text)', 'queen.dedup_advance(text,int,timestamptz)',
                    'queen.dedup_watermark(text,bigint,timestamptz)', 'queen.dedup_flush(text,timestamptz)',
                    'queen.dedup_changelog(text,bigint,int)', 'queen.dedup_stats(text)',
                    'queen.dedup_state_rows(text)', 'queen.dedup_bucket_states(bytea)',
                    'queen.dedup_parse_query(text)', 'queen.retention_floor(bigint)']) f;
SELECT p.proname, p.prosecdef, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'queen' AND (p.proname LIKE '%dedup%' OR p.proname = 'retention_floor') ORDER BY 1;
SELECT c.relname FROM pg_extension e, unnest(e.extconfig) AS x(relid) JOIN pg_class c ON c.oid = x.relid
 WHERE e.extname = 'queen' AND c.relname LIKE 'dedup%' ORDER BY 1;
