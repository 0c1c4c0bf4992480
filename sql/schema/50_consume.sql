-- queen: the consuming model of Queen MQ's wire (issue 18): queue options, per (partition,
-- group) consumer state (lease, batch, ack count, retry counter), subscription records and the
-- dead-letter queue. The cursor itself is queen.consumer_groups.committed_offset (the core's
-- table). Functions: sql/modules/60_consume.sql; lock order: the top of sql/modules/00_core.sql.
-- A later version changes these tables here AND in its delta (sql/upgrade/).

-- Queen's 15 queue options as configure stored them (all 15 keys, defaults filled in). A queue
-- without a row has the defaults (queen.consume_defaults()).
CREATE TABLE queen.queue_options (
    queue_id bigint PRIMARY KEY REFERENCES queen.queues (id) ON DELETE CASCADE,
    options  jsonb NOT NULL
);

-- One row per (partition, group) that popped there: its lease (lease_id NULL = none; a lease
-- is live while lease_expires_at > now), the size of the batch it delivered, how many of them
-- were acked since, and the retry counter (reset when a batch completes).
CREATE TABLE queen.consumer_state (
    partition_id     bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name       text NOT NULL,
    lease_id         uuid,
    lease_expires_at timestamptz,
    batch_size       int NOT NULL DEFAULT 0,
    acked_count      int NOT NULL DEFAULT 0,
    retry_count      int NOT NULL DEFAULT 0,
    PRIMARY KEY (partition_id, group_name)
);
CREATE INDEX consumer_state_lease_idx ON queen.consumer_state (lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX consumer_state_group_idx ON queen.consumer_state (group_name);

-- A group's subscription on a queue, fixed at its first pop there (§4 of the wire facts):
-- start_at NULL = all history, else the messages created at or after it. Keyed by the queue's
-- name, not its id: deleting a queue keeps it (the broker's rule); deleting the group drops it.
CREATE TABLE queen.consumer_subscriptions (
    queue_name text NOT NULL,
    group_name text NOT NULL,
    mode       text NOT NULL,
    start_at   timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, group_name)
);

-- The dead-letter queue: a copy of each message a nack (retries exhausted) or a "dlq" ack moved
-- out, with the error; the cursor moved past it.
CREATE TABLE queen.consumer_dlq (
    id             bigserial PRIMARY KEY,
    partition_id   bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name     text NOT NULL,
    message_offset bigint NOT NULL,
    message_id     uuid NOT NULL,
    transaction_id text NOT NULL,
    payload        jsonb,
    error_message  text NOT NULL,
    retry_count    int NOT NULL,
    created_at     timestamptz NOT NULL,
    failed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consumer_dlq_partition_idx ON queen.consumer_dlq (partition_id, failed_at);

SELECT pg_catalog.pg_extension_config_dump('queen.queue_options', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_state', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_subscriptions', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_dlq', '');
SELECT pg_catalog.pg_extension_config_dump('queen.consumer_dlq_id_seq', '');

-- A queue's partitions in id order (issue 27): a pop by queue walks them from a random point
-- (sql/modules/60_consume_pop.sql). Neither column ever changes, so a push's update of
-- last_offset stays a HOT update; an entry is written once, when a partition is created.
CREATE INDEX log_partitions_queue_idx ON queen.log_partitions (queue_id, id);
