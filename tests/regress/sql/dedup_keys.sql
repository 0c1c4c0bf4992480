-- Keys and rowtimes are read from each payload as (payload #> key)::text and payload #>> rowtime
-- compute them, whatever the value's type: a one-field path into an object is looked up
-- directly, other paths (and payloads that are not objects) through jsonb_get_element. The
-- state keys below are compared with what the SQL operators give for the same messages.
\i tests/regress/sql/dedup_prelude.psql
SELECT pg_temp.view('k_one', 'k_q', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t"}');
SELECT pg_temp.view('k_path', 'k_q', '{"key": ["a", "b"], "order": "rowtime", "keep": "last", "rowtime": ["a", "t"]}');
SELECT pg_temp.push('k_q', 'p',
    '{"k": "plain", "t": 1}', '{"k": "quo\"te \\ é \u0001", "t": "2"}', '{"k": 1.50, "t": 3}',
    '{"k": -0, "t": 4}', '{"k": true, "t": 13}', '{"k": false, "t": 14}', '{"k": 1e3, "t": 15}',
    '{"k": "rt", "t": 3.0}', '{"k": "rt", "t": true}', '{"k": "rt", "t": null}', '{"k": "rt", "t": [4]}',
    '{"k": "rt", "t": "-17"}', '{"k": null, "t": 5}',
    '{"t": 6}', '{"k": {"z": 1, "a": [1, "x"]}, "t": 7}', '{"k": [], "t": 8}',
    '{"a": {"b": "deep", "t": 9}}', '{"a": {"b": [1, 2], "t": "10"}}', '{"a": [{"b": 1}], "t": 11}',
    '[1, 2, 3]', '"scalar"', '12');
SELECT count(*) FROM queen.dedup_advance('k_one', 100, pg_temp.t(0));
SELECT count(*) FROM queen.dedup_advance('k_path', 100, pg_temp.t(0));
-- every key the views hold is the operators' text of a message's key, and the other way round
WITH m AS (SELECT payload FROM queen.read('k_q', 'p', 0, 100)),
     want AS (SELECT 'k_one' AS view, COALESCE(payload #> '{k}', 'null')::text AS key FROM m
               WHERE (payload #>> '{t}') ~ '^-?[0-9]+$'
              UNION
              SELECT 'k_path', COALESCE(payload #> '{a,b}', 'null')::text FROM m
               WHERE (payload #>> '{a,t}') ~ '^-?[0-9]+$'),
     have AS (SELECT v.view, s.key FROM unnest(ARRAY['k_one', 'k_path']) AS v(view),
                     LATERAL queen.dedup_state_rows(v.view) s)
SELECT (SELECT count(*) FROM want) AS want, (SELECT count(*) FROM have) AS have,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM have) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM have EXCEPT SELECT * FROM want) x) AS extra;
SELECT v.name, s.key, s.rowtime FROM unnest(ARRAY['k_one', 'k_path']) AS v(name),
       LATERAL queen.dedup_state_rows(v.name) s ORDER BY 1, 3;
SELECT queen.dedup_stats('k_one') -> 'rowsWithoutRowtime' AS one_skipped,
       queen.dedup_stats('k_path') -> 'rowsWithoutRowtime' AS path_skipped;
SELECT queen.drop_dedup_view('k_one'), queen.drop_dedup_view('k_path');
