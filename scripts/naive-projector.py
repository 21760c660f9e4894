#!/usr/bin/env python3
"""A naive projector of health-samples, for comparison with `daybook project --solo`:
confluent-kafka + sqlite3, every sample summed into its UTC start day (no source priority,
no overlap dedupe, no zones), samples kept by uuid so a deletion can subtract, and each
partition's next offset in the same transaction as its changes (one per 5,000 messages).
Reads every partition directly (assign, no group) until the high watermarks at start.
Usage: scripts/naive-projector.py BOOTSTRAP TOPIC DB (needs: pip install confluent-kafka).
`daybook bench` runs it beside `daybook project --solo` when python3 can import
confluent_kafka; BENCHMARKS.md keeps its figures."""
import json, sqlite3, sys
from confluent_kafka import Consumer, TopicPartition

bootstrap, topic, path = sys.argv[1:4]
db = sqlite3.connect(path, isolation_level=None)
db.executescript("""
PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS samples(uuid TEXT PRIMARY KEY, user TEXT, metric TEXT, day TEXT, value REAL);
CREATE TABLE IF NOT EXISTS totals(user TEXT, metric TEXT, day TEXT, value REAL, PRIMARY KEY(user, metric, day));
CREATE TABLE IF NOT EXISTS offsets(partition INTEGER PRIMARY KEY, next INTEGER);
""")
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "naive", "enable.auto.commit": False,
              "enable.partition.eof": True, "fetch.wait.max.ms": 100})
n = len(c.list_topics(topic).topics[topic].partitions)
nexts = dict(db.execute("SELECT partition, next FROM offsets").fetchall())
ends = {}
for p in range(n):
    low, high = c.get_watermark_offsets(TopicPartition(topic, p))
    ends[p] = high
c.assign([TopicPartition(topic, p, nexts.get(p, 0)) for p in range(n)])
remaining = {p for p in range(n) if nexts.get(p, 0) < ends[p]}
pending, applied = 0, 0
db.execute("BEGIN")
def add(user, metric, day, value):
    db.execute("INSERT INTO totals VALUES(?,?,?,?) ON CONFLICT(user, metric, day) DO UPDATE SET value = value + excluded.value",
               (user, metric, day, value))
while remaining:
    for m in c.consume(10000, 0.1):
        if m.error():
            continue
        p, off = m.partition(), m.offset()
        e = json.loads(m.value())
        if e["type"] == "sample-added":
            s = e["sample"]
            old = db.execute("SELECT user, metric, day, value FROM samples WHERE uuid = ?", (s["uuid"],)).fetchone()
            if old:
                add(old[0], old[1], old[2], -old[3])
            day = s["start"][:10]
            db.execute("INSERT OR REPLACE INTO samples VALUES(?,?,?,?,?)", (s["uuid"], e["user"], s["metric"], day, s["value"]))
            add(e["user"], s["metric"], day, s["value"])
        elif e["type"] == "sample-deleted":
            old = db.execute("SELECT user, metric, day, value FROM samples WHERE uuid = ?", (e["uuid"],)).fetchone()
            if old:
                add(old[0], old[1], old[2], -old[3])
                db.execute("DELETE FROM samples WHERE uuid = ?", (e["uuid"],))
        db.execute("INSERT OR REPLACE INTO offsets VALUES(?,?)", (p, off + 1))
        applied += 1
        pending += 1
        if off + 1 >= ends[p]:
            remaining.discard(p)
        if pending >= 5000:
            db.execute("COMMIT"); db.execute("BEGIN"); pending = 0
db.execute("COMMIT")
c.close()
print(f"naive: applied {applied}", file=sys.stderr)
