--
-- transaction_order: queen.transaction creates the partitions its pushes name in one global
-- order, sorted by (queue, partition) in collation "C" (whatever the order of the operations),
-- before it locks any; an ack may name a partition that a push of the same call creates.
--
\i tests/regress/sql/sqlstate_of.psql

-- Pushes to new partitions named in reverse order: created (and so numbered) in sorted order;
-- "B" sorts before "a" in collation "C". The ack names a partition the first push creates.
SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"to_q2","partition":"z","items":[{"transactionId":"t1","payload":1}]},
    {"type":"ack","queue":"to_q2","partition":"z","transactionId":"t1","consumerGroup":"g"},
    {"type":"push","queue":"to_q1","partition":"a","items":[{"transactionId":"t1","payload":1}]},
    {"type":"push","queue":"to_q1","partition":"B","items":[{"transactionId":"t1","payload":1}]},
    {"type":"push","queue":"to_q2","partition":"a","items":[{"transactionId":"t1","payload":1}]}]}') -> 'results' -> 1 AS ack_result;
SELECT qu.name AS queue, lp.name AS partition,
       rank() OVER (ORDER BY lp.id) AS creation_order,
       queen.log_end(lp.id, lp.last_offset) AS last_offset
FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id
WHERE qu.name IN ('to_q1', 'to_q2') ORDER BY lp.id;
SELECT queen.committed_offset('to_q2', 'z', 'g') AS committed;
-- An ack of a partition nobody creates is still 42704, and nothing is created.
SELECT pg_temp.sqlstate_of($q$SELECT queen.transaction('{"operations":[
    {"type":"push","queue":"to_q3","partition":"p","items":[{"transactionId":"t1","payload":1}]},
    {"type":"ack","queue":"to_q3","partition":"other","transactionId":"t1"}]}')$q$) AS ack_unknown;
SELECT count(*) AS to_q3_queues FROM queen.queues WHERE name = 'to_q3';
