--
-- maintenance: Queen's maintenance mode (sql/modules/70_maintenance.sql). While it is on,
-- queen.maintenance_park keeps pushes in queen.maintenance_parked; switching it off pushes
-- them through the normal exact path in push order, in that same transaction, and deletes them:
-- a parked item whose transactionId is already stored becomes a duplicate, an item keeps the
-- message id it was parked with. Off, parking writes nothing (false). Bad input: 22023 before
-- anything is written; reserved queues: 42501.
--
\i tests/regress/sql/sqlstate_of.psql
CREATE FUNCTION pg_temp.item(q text, p text, txn text, id text, payload json) RETURNS json
    LANGUAGE sql AS $$
    SELECT json_build_object('queue', q, 'partition', p, 'transactionId', txn, 'messageId', id,
                             'payload', payload) $$;

-- off: the status, and a park that parks nothing
SELECT queen.maintenance_enabled() AS enabled;
SELECT queen.maintenance_status() - 'bufferStats' AS status;
SELECT (queen.maintenance_status() -> 'bufferStats') - 'changedAt' AS stats;
SELECT queen.maintenance_park(json_build_array(
    pg_temp.item('mt_q', 'p', 'off-1', '00000000-0000-7000-8000-000000000001', '1'))) AS parked;
SELECT count(*) AS parked_rows FROM queen.maintenance_parked;

-- a message stored before maintenance: its transactionId parked again is a duplicate later
SELECT status, message_offset FROM queen.push('mt_q', 'p', '[{"transactionId":"before","payload":0}]');

-- on
SELECT queen.set_maintenance(true) AS switched;
SELECT queen.maintenance_enabled() AS enabled;
SELECT queen.maintenance_park(json_build_array(
    pg_temp.item('mt_q', 'p', 'm-1', '00000000-0000-7000-8000-0000000000a1', '{"b": 2, "a": 1}'),
    pg_temp.item('mt_q', 'p', 'before', '00000000-0000-7000-8000-0000000000a2', '"dup"'),
    pg_temp.item('mt_q', 'p2', '00000000-0000-7000-8000-0000000000a3',
                 '00000000-0000-7000-8000-0000000000a3', 'null'),
    pg_temp.item('mt_q', 'p', 'm-3', '00000000-0000-7000-8000-0000000000a4', '[1,2]'))) AS parked;
SELECT queen.maintenance_park(json_build_array(
    pg_temp.item('mt_q', 'p', 'm-1', '00000000-0000-7000-8000-0000000000a5', '"again"'),
    pg_temp.item('mt_other', 'Default', 'o-1', '00000000-0000-7000-8000-0000000000a6', 'true'))) AS parked;
SELECT queen.set_maintenance(true) AS switched_again;
SELECT queen.maintenance_status() - 'bufferStats' AS status;
SELECT (queen.maintenance_status() -> 'bufferStats') - 'changedAt' - 'oldestParkedAt' AS stats,
       (queen.maintenance_status() #>> '{bufferStats,oldestParkedAt}') IS NOT NULL AS has_oldest;
-- nothing stored yet: the log holds only the message pushed before
SELECT count(*) AS stored FROM queen.read('mt_q', 'p', 0, 100);

-- bad input: 22023, nothing parked
SELECT pg_temp.sqlstate_of($$SELECT queen.maintenance_park(NULL)$$) AS null_items,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('{}')$$) AS not_array,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[1]')$$) AS not_object,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"partition":"p","transactionId":"t","messageId":"00000000-0000-7000-8000-000000000001","payload":1}]')$$) AS no_queue,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"queue":"mt_q","partition":"","transactionId":"t","messageId":"00000000-0000-7000-8000-000000000001","payload":1}]')$$) AS empty_partition,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"queue":"mt_q","partition":"p","transactionId":7,"messageId":"00000000-0000-7000-8000-000000000001","payload":1}]')$$) AS txn_number,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"queue":"mt_q","partition":"p","transactionId":"a\u0001b","messageId":"00000000-0000-7000-8000-000000000001","payload":1}]')$$) AS txn_control,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"queue":"mt_q","partition":"p","transactionId":"t","messageId":"nope","payload":1}]')$$) AS bad_id,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"queue":"mt_q","partition":"p","transactionId":"t","messageId":"00000000-0000-7000-8000-000000000001"}]')$$) AS no_payload,
       pg_temp.sqlstate_of($$SELECT queen.maintenance_park('[{"queue":"__queen_x","partition":"p","transactionId":"t","messageId":"00000000-0000-7000-8000-000000000001","payload":1}]')$$) AS reserved,
       pg_temp.sqlstate_of($$SELECT queen.set_maintenance(NULL)$$) AS null_switch;
-- the first bad item is named, and the good one before it is not parked
SELECT pg_temp.sqlstate_of($$SELECT queen.maintenance_park(json_build_array(
    pg_temp.item('mt_q', 'p', 'ok', '00000000-0000-7000-8000-0000000000b1', '1'), '2'::json))$$) AS second_bad;
SELECT count(*) AS parked_rows FROM queen.maintenance_parked;
DO $$ BEGIN PERFORM queen.maintenance_park('[{"queue":"mt_q","partition":"p","transactionId":"t","messageId":"x","payload":1}]');
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%: %', SQLSTATE, SQLERRM; END $$;

-- off: every parked message delivered, in push order, exactly once
SELECT queen.set_maintenance(false) AS switched;
SELECT queen.maintenance_enabled() AS enabled, count(*) AS parked_rows FROM queen.maintenance_parked;
SELECT message_offset, CASE WHEN transaction_id = 'before' THEN 'its own' ELSE message_id::text END AS message_id,
       transaction_id, payload FROM queen.read('mt_q', 'p', 0, 100);
SELECT message_offset, message_id, transaction_id, payload FROM queen.read('mt_q', 'p2', 0, 100);
SELECT message_offset, message_id, transaction_id, payload FROM queen.read('mt_other', 'Default', 0, 100);
-- switched off again: nothing left to deliver
SELECT queen.set_maintenance(false) AS switched_again;
SELECT queen.maintenance_status() - 'bufferStats' AS status;
-- and a push after it is stored at once, after the delivered ones
SELECT status, message_offset FROM queen.push('mt_q', 'p', '[{"transactionId":"after","payload":9}]');
-- the drain is internal: no role may call it or the id-keeping push
SELECT has_function_privilege('queen_writer', 'queen.maintenance_drain()', 'EXECUTE') AS writer_drain,
       has_function_privilege('queen_admin', 'queen.push_parked(bigint, text[], uuid[], text[])', 'EXECUTE') AS admin_push_parked,
       has_function_privilege('queen_writer', 'queen.maintenance_park(json)', 'EXECUTE') AS writer_park,
       has_function_privilege('queen_writer', 'queen.set_maintenance(boolean)', 'EXECUTE') AS writer_switch,
       has_function_privilege('queen_admin', 'queen.set_maintenance(boolean)', 'EXECUTE') AS admin_switch,
       has_function_privilege('queen_reader', 'queen.maintenance_status()', 'EXECUTE') AS reader_status;
SELECT pg_temp.sqlstate_of($$SELECT * FROM queen.push_parked(-1, '{a}', '{00000000-0000-7000-8000-000000000001}', '{1}')$$) AS unknown_partition,
       pg_temp.sqlstate_of($$SELECT * FROM queen.push_parked(1, '{a,b}', '{00000000-0000-7000-8000-000000000001}', '{1}')$$) AS lengths;
SELECT queen.drop_queue('mt_q') IS NOT NULL AS dropped, queen.drop_queue('mt_other') IS NOT NULL AS dropped_other;
