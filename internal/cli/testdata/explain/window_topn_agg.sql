-- Window Top-N after a window aggregation (each 10-second window's three
-- suppliers of the largest sums), directly over SESSION rows (each
-- supplier's session's two highest bids), and over a window join of two
-- aggregations: the ranks of each upstream window, written as it closes —
-- a top_n stage keyed by the upstream's window bounds over a 1 ms window,
-- or with the session window keyed by SESSION's PARTITION BY.
CREATE TABLE bids (supplier STRING, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'bids.jsonl', 'format' = 'json');
CREATE TABLE top3 (ws TIMESTAMP(3), we TIMESTAMP(3), supplier STRING, price BIGINT, cnt BIGINT, rownum BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/top3.jsonl', 'format' = 'json');
CREATE TABLE session2 (ws TIMESTAMP(3), we TIMESTAMP(3), supplier STRING, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/session2.jsonl', 'format' = 'json');
CREATE TABLE joined2 (ws TIMESTAMP(3), we TIMESTAMP(3), supplier STRING, total BIGINT, best BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/joined2.jsonl', 'format' = 'json');
INSERT INTO top3
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum
  FROM (
    SELECT window_start, window_end, supplier, SUM(price) AS price, COUNT(*) AS cnt
    FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY window_start, window_end, supplier
  )
) WHERE rownum <= 3;
INSERT INTO session2 SELECT window_start, window_end, supplier, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, supplier ORDER BY price DESC) AS rn
  FROM TABLE(SESSION(TABLE bids PARTITION BY supplier, DESCRIPTOR(ts), INTERVAL '30' SECOND))
) WHERE rn <= 2;
INSERT INTO joined2 SELECT window_start, window_end, supplier, total, best, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC) AS rn
  FROM (
    SELECT L.window_start, L.window_end, L.supplier, L.total, R.best
    FROM (SELECT window_start, window_end, supplier, SUM(price) AS total FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, supplier) L
    JOIN (SELECT window_start, window_end, supplier, MAX(price) AS best FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, supplier) R
    ON L.supplier = R.supplier AND L.window_start = R.window_start AND L.window_end = R.window_end
  )
) WHERE rn <= 2;
