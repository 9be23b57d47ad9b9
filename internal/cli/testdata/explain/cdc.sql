-- A PostgreSQL table's changes (Flink CDC's postgres-cdc options) into
-- revenue per store per minute, the event time the upstream commit time.
SET 'pipeline.name' = 'orders_cdc';
SET 'state.checkpoints.dir' = 'file://out/cdc/ck';
SET 'execution.checkpointing.interval' = '1 s';
CREATE TABLE orders (
  order_id BIGINT, store_id STRING, amount DECIMAL(12, 2), __commit_time TIMESTAMP(3),
  WATERMARK FOR __commit_time AS __commit_time,
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH (
  'connector' = 'postgres-cdc', 'hostname' = 'db.internal', 'port' = '5432', 'username' = 'tidemark',
  'password' = 'secret', 'database-name' = 'shop', 'schema-name' = 'sales', 'table-name' = 'orders',
  'slot.name' = 'orders_slot', 'debezium.publication.name' = 'orders_pub', 'decoding.plugin.name' = 'pgoutput'
);
CREATE TABLE revenue_minute (window_start TIMESTAMP(3), window_end TIMESTAMP(3), store_id STRING, revenue DECIMAL(38, 2),
  PRIMARY KEY (window_start, store_id) NOT ENFORCED)
WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db.internal:5432/shop', 'username' = 'tidemark', 'table-name' = 'sales.revenue_minute');
INSERT INTO revenue_minute
SELECT window_start, window_end, store_id, SUM(amount) AS revenue
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(__commit_time), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, store_id;
