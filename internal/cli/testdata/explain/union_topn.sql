-- UNION ALL into one sink (a union stage of one stage per branch), and a
-- Top-3 per auction (one Top-N stage keeping each auction's 3 first rows,
-- its rows keyed by the auction and the rank).
CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'bids.jsonl', 'format' = 'json');
CREATE TABLE picked (auction BIGINT, price BIGINT, why STRING)
WITH ('connector' = 'filesystem', 'path' = 'out/picked.jsonl', 'format' = 'json');
CREATE TABLE top3 (auction BIGINT, bidder BIGINT, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/top3.jsonl', 'format' = 'json');
INSERT INTO picked
SELECT auction, price, 'dear' FROM bids WHERE price > 1000
UNION ALL
SELECT auction, price, 'even' FROM bids WHERE MOD(auction, 2) = 0;
INSERT INTO top3 SELECT auction, bidder, price, rn FROM (
  SELECT auction, bidder, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids
) WHERE rn <= 3;
