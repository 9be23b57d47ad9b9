-- Revenue per store per minute from the changes of the orders table: the
-- SQL form of pipeline.yaml (it compiles to the same spec:
-- TestOrdersCDCSQLIsThePipeline), with Flink CDC's postgres-cdc options.
--
--   go run ./examples/orders-cdc/gen --setup
--   go run ./cmd/tidemark run examples/orders-cdc/pipeline.sql
--
-- docs/connectors/postgres-cdc.md describes the source, docs/sql.md the
-- statements and options.

SET 'pipeline.name' = 'orders_cdc';

-- Exactly once: the slot is confirmed only after the checkpoint whose
-- changes the result table committed.
SET 'state.checkpoints.dir' = 'file://out/orders-cdc/checkpoints';
SET 'execution.checkpointing.interval' = '1 s';
SET 'tidemark.quarantine.sink' = '{type: jsonl, path: out/orders-cdc/quarantine.jsonl}';

CREATE TABLE orders (
  store_id   STRING,
  amount     DECIMAL(12, 2),
  status     STRING,
  created_at TIMESTAMP(3),
  WATERMARK FOR created_at AS created_at - INTERVAL '5' SECOND
) WITH (
  'connector' = 'postgres-cdc',
  'hostname' = '127.0.0.1',
  'port' = '5432',
  'username' = 'postgres',
  'database-name' = 'test',
  'debezium.database.sslmode' = 'disable',
  'schema-name' = '${ORDERS_SCHEMA:-public}',
  'table-name' = 'orders',
  'debezium.publication.name' = '${ORDERS_PUBLICATION:-tidemark_orders}',
  'scan.watermark.idle-timeout' = '30 s',
  -- An idle table still closes its windows: the watermark follows the
  -- commits of the server (docs/connectors/postgres-cdc.md).
  'tidemark.event_time.idle_advance' = 'true'
);

-- Late changes up to an hour update their minute again; a first version
-- every 5 s of processing time while a minute is open.
SET 'table.exec.emit.allow-lateness' = '1 h';
SET 'table.exec.emit.early-fire.enabled' = 'true';
SET 'table.exec.emit.early-fire.delay' = '5 s';
SET 'tidemark.late.policy' = 'side_output';
SET 'tidemark.late.sink' = '{type: jsonl, path: out/orders-cdc/late.jsonl}';

CREATE TABLE revenue_minute (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  store_id     STRING,
  revenue      DECIMAL(38, 2),
  orders       BIGINT,
  PRIMARY KEY (window_start, store_id) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = 'jdbc:postgresql://127.0.0.1:5432/test?sslmode=disable',
  'username' = 'postgres',
  'table-name' = '${ORDERS_SCHEMA:-public}.revenue_minute'
);

INSERT INTO revenue_minute
SELECT window_start, window_end, store_id, SUM(amount) AS revenue, COUNT(*) AS orders
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(created_at), INTERVAL '1' MINUTE))
WHERE status <> 'cancelled'
GROUP BY window_start, window_end, store_id;
