-- A shard written by Daybook before uuid runs (main at 6000f3f, schema 007: the uuid index as a
-- `sample_days` row per (hash, place)), from `daybook publish` of before.jsonl in
-- PackedStoreMigrationTests and `daybook project --solo` (the cluster id is removed so any
-- broker may open it).
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES('max_span_ns','3600000000000');
INSERT INTO meta VALUES('partition','0');
INSERT INTO meta VALUES('priority','default=watch>phone>manual');
INSERT INTO meta VALUES('topic','health-samples');
CREATE TABLE progress (topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
                       updated_at TEXT NOT NULL, PRIMARY KEY (topic, partition)) WITHOUT ROWID;
INSERT INTO progress VALUES('health-samples',0,7,'2026-12-05 04:40:12');
CREATE TABLE totals (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL,
                     value REAL, min REAL, max REAL, avg REAL, count INTEGER,
                     updated_offset INTEGER NOT NULL, PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
INSERT INTO totals VALUES('ben','heart_rate','2024-03-30',NULL,96.0,96.0,96.0,1,7);
INSERT INTO totals VALUES('ben','steps','2024-03-30',1700.0,NULL,NULL,NULL,NULL,7);
INSERT INTO totals VALUES('ben','steps','2024-03-31',300.0,NULL,NULL,NULL,NULL,7);
INSERT INTO totals VALUES('ben','steps','2024-04-02',700.0,NULL,NULL,NULL,NULL,7);
CREATE TABLE total_sources (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL, rank INTEGER NOT NULL,
                            source TEXT NOT NULL, value REAL NOT NULL,
                            PRIMARY KEY (user, metric, day, rank)) WITHOUT ROWID;
INSERT INTO total_sources VALUES('ben','steps','2024-03-30',0,'watch',1000.0);
INSERT INTO total_sources VALUES('ben','steps','2024-03-30',1,'phone',700.0);
INSERT INTO total_sources VALUES('ben','steps','2024-03-31',0,'phone',300.0);
INSERT INTO total_sources VALUES('ben','steps','2024-04-02',0,'phone',700.0);
CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, partition INTEGER NOT NULL,
                           offset INTEGER NOT NULL, key BLOB NOT NULL, payload BLOB NOT NULL, reason TEXT NOT NULL,
                           code TEXT NOT NULL, recorded_at TEXT NOT NULL, forwarded INTEGER NOT NULL DEFAULT 0,
                           replayed_at TEXT, replayed_partition INTEGER, replayed_offset INTEGER,
                           superseded INTEGER NOT NULL DEFAULT 0,
                           UNIQUE (topic, partition, offset));
CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
INSERT INTO names VALUES(1,'watch');
INSERT INTO names VALUES(2,'Europe/Berlin');
INSERT INTO names VALUES(3,'phone');
CREATE TABLE sync_state (user TEXT NOT NULL, source TEXT NOT NULL, last_check_in_ns INTEGER,
                         last_sample_ns INTEGER, newest_end_ns INTEGER, newest_zone TEXT,
                         metrics INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user, source)) WITHOUT ROWID;
INSERT INTO sync_state VALUES('ben','phone',NULL,1796445611681000000,1712062800000000000,'Europe/Berlin',1);
INSERT INTO sync_state VALUES('ben','watch',NULL,1796445611681000000,1711792800000000000,'Europe/Berlin',9);
CREATE TABLE packs (user TEXT NOT NULL, metric INTEGER NOT NULL, day INTEGER NOT NULL, samples BLOB NOT NULL,
                    PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
INSERT INTO packs VALUES('ben',0,19812,X'01030c0f8e2a1c3b4d4e5f8a9b0c1d2e3f4a5b01a0fa03a038d00f0200000e0002703103901ca038c00c0202000d7c3d9e2b1a4f4b6c9d8e2f1a0b3c4d5e03a0db05a038b009020200');
INSERT INTO packs VALUES('ben',0,19815,X'01010e000278310380a305a038f80a020a02');
INSERT INTO packs VALUES('ben',3,19812,X'01010e000368723101d0830400c001020c00');
CREATE TABLE sample_days (hash INTEGER NOT NULL, place INTEGER NOT NULL, count INTEGER NOT NULL,
                          PRIMARY KEY (hash, place)) WITHOUT ROWID;
INSERT INTO sample_days VALUES(-2032946408,0,1);
INSERT INTO sample_days VALUES(-1852706677,158521,1);
INSERT INTO sample_days VALUES(-1280916774,158497,1);
INSERT INTO sample_days VALUES(-772181738,158500,1);
INSERT INTO sample_days VALUES(165439571,158497,1);
INSERT INTO sample_days VALUES(1883766980,158497,1);
CREATE TABLE tombstones (user TEXT NOT NULL, uuid TEXT NOT NULL, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
INSERT INTO tombstones VALUES('ben','p9');
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO schema_migrations VALUES('001-read-model','2026-12-05 04:40:12');
INSERT INTO schema_migrations VALUES('002-state-store','2026-12-05 04:40:12');
INSERT INTO schema_migrations VALUES('003-dead-letter-replays','2026-12-05 04:40:12');
INSERT INTO schema_migrations VALUES('004-sync-state','2026-12-05 04:40:12');
INSERT INTO schema_migrations VALUES('005-sample-versions','2026-12-05 04:40:12');
INSERT INTO schema_migrations VALUES('006-packed-samples','2026-12-05 04:40:12');
INSERT INTO schema_migrations VALUES('007-dead-letter-superseded','2026-12-05 04:40:12');
CREATE INDEX dead_letters_unforwarded ON dead_letters (forwarded) WHERE forwarded = 0;
COMMIT;
