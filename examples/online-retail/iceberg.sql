-- The Online Retail job's hourly rows into an Apache Iceberg table (format
-- v2, the hadoop catalog: the table's metadata in its directory), one
-- snapshot per 10 s checkpoint at most, committed with the checkpoint:
-- the SQL form of iceberg.yaml (it compiles to the same spec,
-- TestOnlineRetailIcebergSQLIsThePipeline), with Flink's Iceberg
-- connector options.
--
--   go run ./cmd/tidemark run examples/online-retail/iceberg.sql
--
-- The table: out/warehouse/retail/revenue_hourly (data/, metadata/), read
-- by any Iceberg reader; docs/connectors/iceberg.md, docs/sql.md.

SET 'pipeline.name' = 'revenue_hourly';

-- InvoiceDate is UK local time without an offset ("2010-12-01 08:26:00"):
-- TO_TIMESTAMP reads it in this zone, and the hourly windows follow it.
SET 'table.local-time-zone' = 'Europe/London';

-- The data contract: field types, the event id (the invoice and the line's
-- position in it), and the quality rules; lines that break a rule are
-- quarantined with the rule's name.
SET 'tidemark.contract' = 'examples/online-retail/contract.yaml';

-- A redelivered line is a duplicate and not applied; a line whose id comes
-- back with another payload is a conflict. Ids are remembered for 24h of
-- event time.
SET 'tidemark.dedup.ttl' = '24h';
SET 'tidemark.quarantine.sink' = '{type: jsonl, path: out/iceberg-quarantine.jsonl}';
SET 'tidemark.conflicts.sink' = '{type: jsonl, path: out/iceberg-conflicts.jsonl}';
SET 'state.checkpoints.dir' = 'out/iceberg-ck';
SET 'execution.checkpointing.interval' = '10 s';

CREATE TABLE invoice_lines (
  InvoiceNo   STRING,
  StockCode   STRING,
  Description STRING,
  Quantity    INT,
  InvoiceDate STRING,
  UnitPrice   DECIMAL(10, 2),
  CustomerID  STRING,
  Country     STRING,
  ts AS TO_TIMESTAMP(InvoiceDate, 'yyyy-MM-dd HH:mm:ss'),
  WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE
) WITH (
  'connector' = 'filesystem',
  'path' = '${TIDEMARK_DATA:-../shared/data}/online-retail/by-day/*.csv',
  'format' = 'csv',
  'scan.watermark.idle-timeout' = '15 min',
  'tidemark.about' = 'the UCI Online Retail data set (Chen, Sain and Guo, 2012; CC BY 4.0), one CSV file per day in online-retail/by-day/ under the data directory. tidemark does not ship it: set TIDEMARK_DATA to the directory that holds online-retail/; unset, tidemark uses the first shared/data holding online-retail/by-day in the directory it runs in or one above it (else ../shared/data).',
  -- The data has no line id: a line is its invoice number and its
  -- position within the invoice.
  'tidemark.ordinal' = '{field: line_no, per: InvoiceNo}',
  -- Simulated delivery: most lines arrive within 2 minutes, 3% straggle
  -- for up to 3 hours, 1% are delivered twice and 0.05% again with
  -- Quantity changed; four partitions keyed by invoice.
  'tidemark.replay' = '{seed: 7, delay: 2m, straggler_fraction: 0.03, max_delay: 3h, redeliver_fraction: 0.01, conflict_fraction: 0.0005, conflict_field: Quantity, partitions: 4, partition_by: InvoiceNo}'
);

-- Exact money: Quantity × UnitPrice in decimal; refunds (C invoices) have
-- negative quantities.
CREATE VIEW lines AS
SELECT *, Quantity * UnitPrice AS net_amount FROM invoice_lines;

-- Late lines up to 30 minutes update their hour again (emit update: each
-- row carries its version and is_final); later ones go to out/late.jsonl.
SET 'table.exec.emit.allow-lateness' = '30 min';
SET 'tidemark.emit.mode' = 'update';
SET 'tidemark.late.policy' = 'side_output';
SET 'tidemark.late.sink' = '{type: jsonl, path: out/iceberg-late.jsonl}';

-- The table, partitioned by the window's day (Iceberg's day transform of
-- window_start); money with three decimals.
CREATE TABLE revenue_hourly (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  Country      STRING,
  net_revenue  DECIMAL(38, 3),
  lines        BIGINT,
  PRIMARY KEY (window_start, Country) NOT ENFORCED
) PARTITIONED BY (`day`) WITH (
  'connector' = 'iceberg',
  'catalog-type' = 'hadoop',
  'warehouse' = 'out/warehouse',
  'catalog-database' = 'retail',
  'tidemark.decimal_scale' = '3'
);

INSERT INTO revenue_hourly
SELECT window_start, window_end, Country, SUM(net_amount) AS net_revenue, COUNT(*) AS lines
FROM TABLE(TUMBLE(TABLE lines, DESCRIPTOR(ts), INTERVAL '1' HOUR))
GROUP BY window_start, window_end, Country;
