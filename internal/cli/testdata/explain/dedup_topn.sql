-- tidemark's own keys beside Flink's: dedup by event id with its
-- conflicts and the quarantine; and Flink's Top-1 pattern (the highest
-- bid per auction, ties to the earliest), an ordered aggregate over all
-- time.
SET 'pipeline.name' = 'best_bids';
SET 'tidemark.dedup' = '{key: bid_id, ttl: 1h}';
SET 'tidemark.conflicts.sink' = '{type: jsonl, path: out/conflicts.jsonl}';
SET 'tidemark.quarantine.sink' = '{type: jsonl, path: out/quarantine.jsonl}';
CREATE TABLE bids (bid_id STRING, auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'bids.jsonl', 'format' = 'json');
CREATE TABLE best (auction BIGINT, bidder BIGINT, price BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/best.jsonl', 'format' = 'json');
INSERT INTO best SELECT auction, bidder, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, ts) AS rn FROM bids
) WHERE rn <= 1;
