-- Window Top-N: each 10-second window's two highest bids (TUMBLE), and
-- each auction's three highest in 10-second windows sliding by 5 (HOP):
-- one Top-N stage each with the table function's window, their ranks
-- written once, when the window closes.
CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'bids.jsonl', 'format' = 'json');
CREATE TABLE top2 (ws TIMESTAMP(3), we TIMESTAMP(3), bidder BIGINT, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/top2.jsonl', 'format' = 'json');
CREATE TABLE hot3 (ws TIMESTAMP(3), we TIMESTAMP(3), auction BIGINT, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/hot3.jsonl', 'format' = 'json');
INSERT INTO top2 SELECT window_start, window_end, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC, ts) AS rn
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
) WHERE rn <= 2;
INSERT INTO hot3 SELECT window_start, window_end, auction, price, rn FROM (
  SELECT window_start, window_end, auction, price, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, auction ORDER BY price DESC) AS rn
  FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
) WHERE rn <= 3;
