-- Net revenue and invoice-line count per country per hour, from the UCI
-- Online Retail data set (541,909 invoice lines, 2010-12-01 … 2011-12-09),
-- delivered late and out of order by a seeded replay: the SQL form of
-- pipeline.yaml. It compiles to the same pipeline (tidemark explain prints
-- the same plan and plan fingerprint for both) and writes the same tables.
--
--   go run ./cmd/tidemark run examples/online-retail/pipeline.sql
--
-- Results: out/tidemark.db (table revenue_hourly__live, view revenue_hourly),
-- the changelog in out/revenue_hourly.changelog.jsonl, late events in
-- out/late.jsonl, records that break the contract in out/quarantine.jsonl,
-- conflicting redeliveries in out/conflicts.jsonl. docs/sql.md describes
-- every statement and option.

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
SET 'tidemark.quarantine.sink' = '{type: jsonl, path: out/quarantine.jsonl}';
SET 'tidemark.conflicts.sink' = '{type: jsonl, path: out/conflicts.jsonl}';

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
SET 'tidemark.late.sink' = '{type: jsonl, path: out/late.jsonl}';
-- Every line accepted into a window, with what it added to each aggregate:
-- tidemark explain reads it to show the lines behind a row.
SET 'tidemark.contributions.sink' = '{type: jsonl, path: out/revenue_hourly.events.jsonl}';

-- The versioning convention (docs/reprocessing.md): the live pipeline
-- writes version "live" of revenue_hourly; readers query the view.
CREATE TABLE revenue_hourly (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  Country      STRING,
  net_revenue  DECIMAL(38, 2),
  lines        BIGINT,
  PRIMARY KEY (window_start, Country) NOT ENFORCED
) WITH (
  'connector' = 'sqlite',
  'path' = 'out/tidemark.db',
  'table-name' = 'revenue_hourly__live'
);

CREATE TABLE revenue_hourly_changelog (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  Country      STRING,
  net_revenue  DECIMAL(38, 2),
  lines        BIGINT
) WITH (
  'connector' = 'filesystem',
  'path' = 'out/revenue_hourly.changelog.jsonl',
  'format' = 'json'
);

-- One query, two sinks: the two INSERTs are one stage.
EXECUTE STATEMENT SET BEGIN
  INSERT INTO revenue_hourly
  SELECT window_start, window_end, Country, SUM(net_amount) AS net_revenue, COUNT(*) AS lines
  FROM TABLE(TUMBLE(TABLE lines, DESCRIPTOR(ts), INTERVAL '1' HOUR))
  GROUP BY window_start, window_end, Country;

  INSERT INTO revenue_hourly_changelog
  SELECT window_start, window_end, Country, SUM(net_amount) AS net_revenue, COUNT(*) AS lines
  FROM TABLE(TUMBLE(TABLE lines, DESCRIPTOR(ts), INTERVAL '1' HOUR))
  GROUP BY window_start, window_end, Country;
END;
