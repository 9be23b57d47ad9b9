-- An interval join of two views of one source (bids within 10 s of their
-- auction's creation) and a filter, into a JSON-lines file.
SET 'pipeline.name' = 'early_bids';
CREATE TABLE events (kind STRING, id BIGINT, auction BIGINT, seller BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'events.jsonl', 'format' = 'json');
CREATE VIEW auctions AS SELECT id, seller, ts FROM events WHERE kind = 'auction';
CREATE VIEW bids AS SELECT auction, price, ts FROM events WHERE kind = 'bid';
CREATE TABLE early (auction BIGINT, seller BIGINT, price BIGINT)
WITH ('connector' = 'filesystem', 'path' = 'out/early.jsonl', 'format' = 'json');
INSERT INTO early
SELECT A.id AS auction, A.seller, B.price
FROM auctions AS A JOIN bids AS B ON A.id = B.auction
 AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '10' SECOND
WHERE B.price > 100;
