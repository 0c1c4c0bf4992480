-- queen: maintenance mode of Queen MQ's wire (GET/POST /api/v1/system/maintenance; issue 18).
-- While it is on, pushes through the sidecar are parked here, durably (written and committed
-- before the push is answered "buffered"), and pushed through the normal exact path, in push
-- order, when it is switched off. The mode is the database's, so every sidecar in front of it
-- agrees. Functions: sql/modules/70_maintenance.sql; lock order: the top of sql/modules/00_core.sql.
-- A later version changes these tables here AND in its delta (sql/upgrade/).

-- The mode: at most one row (none = off, as a fresh install). Parking takes it FOR SHARE and
-- switching takes it FOR UPDATE, so a switch off waits for every park in flight and its drain
-- sees all of them.
CREATE TABLE queen.maintenance_mode (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    enabled    boolean NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- The parked pushes, in push order (seq). payload is json, not jsonb: the text as it was sent,
-- stored verbatim when delivered. message_id is the id the message gets when the drain stores
-- it (an item sent without a transactionId has that id's text as its transactionId).
CREATE TABLE queen.maintenance_parked (
    seq            bigserial PRIMARY KEY,
    queue          text NOT NULL,
    partition      text NOT NULL,
    transaction_id text NOT NULL,
    message_id     uuid NOT NULL,
    payload        json NOT NULL,
    parked_at      timestamptz NOT NULL DEFAULT now()
);
-- the drain reads one partition's parked messages in push order
CREATE INDEX maintenance_parked_pair_idx ON queen.maintenance_parked (queue, partition, seq);

SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_mode', '');
SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_parked', '');
SELECT pg_catalog.pg_extension_config_dump('queen.maintenance_parked_seq_seq', '');
