-- Windows of the SQL front end: a SESSION per bidder and a CUMULATE of
-- each auction's bids, from one JSON-lines source with a watermark.
SET 'pipeline.name' = 'bid_windows';
CREATE TABLE bids (auction BIGINT, bidder BIGINT, price DECIMAL(12, 2), ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'bids.jsonl', 'format' = 'json');
CREATE TABLE sessions (window_start TIMESTAMP(3), window_end TIMESTAMP(3), bidder BIGINT, bids BIGINT, spent DECIMAL(20, 2))
WITH ('connector' = 'sqlite', 'path' = 'out/bids.db', 'table-name' = 'sessions');
CREATE TABLE growing (window_start TIMESTAMP(3), window_end TIMESTAMP(3), auction BIGINT, top DECIMAL(12, 2), bidders BIGINT)
WITH ('connector' = 'sqlite', 'path' = 'out/bids.db', 'table-name' = 'growing');
INSERT INTO sessions
SELECT window_start, window_end, bidder, COUNT(*) AS bids, SUM(price) AS spent
FROM TABLE(SESSION(TABLE bids PARTITION BY bidder, DESCRIPTOR(ts), INTERVAL '30' SECOND))
GROUP BY window_start, window_end, bidder;
INSERT INTO growing
SELECT window_start, window_end, auction, MAX(price) AS top, COUNT(DISTINCT bidder) AS bidders
FROM TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTE, INTERVAL '1' HOUR))
GROUP BY window_start, window_end, auction;
