--
-- admin_messages: the message browser's time cut (issue 29, sql/modules/92_admin_messages.sql).
-- queen.admin_offset_before is the highest offset created before a time, found by the seek's
-- binary search over the segments' primary key (queen.admin_offset_at): checked at every
-- boundary of a partition of three segments, and through admin_messages' `to` filter (which
-- cuts a partition's range with it; `to` names a whole minute, so the cut is checked with
-- segments a minute apart: pushed, then their created_at set, since the search reads nothing
-- else).
--
\i tests/regress/sql/sqlstate_of.psql
-- Three segments of one message each, created a minute apart (the segment rows' created_at
-- set afterwards: the search reads nothing else).
SELECT count(*) AS queued FROM generate_series(0, 2) g,
       LATERAL queen.push('adm_msg', 'p', jsonb_build_array(jsonb_build_object(
           'transactionId', 'm-' || g, 'payload', g))) x;
UPDATE queen.log_segments s SET created_at = timestamptz '2030-01-01 00:00Z' + s.base_offset * interval '1 minute'
 WHERE s.partition_id = queen.partition_id('adm_msg', 'p');
SELECT t AS before_time,
       queen.admin_offset_before(queen.partition_id('adm_msg', 'p'), 0, 2, timestamptz '2030-01-01 00:00Z' + t * interval '30 seconds') AS highest_before,
       queen.admin_offset_at(queen.partition_id('adm_msg', 'p'), -1, 3, timestamptz '2030-01-01 00:00Z' + t * interval '30 seconds') AS first_at_or_after
  FROM generate_series(-1, 5) t;
-- A narrower range: offsets 1..2 only.
SELECT queen.admin_offset_before(queen.partition_id('adm_msg', 'p'), 1, 2, timestamptz '2030-01-01 00:00:30Z') AS none_before_lo,
       queen.admin_offset_before(queen.partition_id('adm_msg', 'p'), 1, 2, timestamptz '2030-01-01 00:01:30Z') AS one;
-- Through the browser: `to` is the whole minute it names, `from` inclusive.
SELECT jsonb_path_query_array(queen.admin_messages('adm_msg', NULL, NULL, '2030-01-01T00:00:00Z', t), '$.messages[*].transactionId') AS page
  FROM unnest(ARRAY['2030-01-01T00:00:00Z', '2030-01-01T00:01:00Z', '2030-01-01T00:02:59Z']) t;
SELECT pg_temp.sqlstate_of($$SELECT queen.admin_messages('adm_msg', NULL, NULL, NULL, 'soon')$$) AS bad_to,
       pg_temp.sqlstate_of($$SELECT queen.admin_messages('adm_msg', NULL, 'lost')$$) AS bad_status,
       pg_temp.sqlstate_of($$SELECT queen.admin_messages('adm_msg', NULL, NULL, NULL, NULL, 0)$$) AS bad_limit;
SELECT queen.delete_queue('adm_msg') ->> 'deleted' AS cleaned;
