-- A shard written by Daybook before packs (main at 5904241, schema 005: a row per sample in
-- `entries`), from `daybook publish` of before.jsonl in PackedStoreMigrationTests and
-- `daybook project --solo` (the cluster id is removed so any broker may open it).
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO schema_migrations VALUES('001-read-model','2026-12-02 00:01:23');
INSERT INTO schema_migrations VALUES('002-state-store','2026-12-02 00:01:23');
INSERT INTO schema_migrations VALUES('003-dead-letter-replays','2026-12-02 00:01:23');
INSERT INTO schema_migrations VALUES('004-sync-state','2026-12-02 00:01:23');
INSERT INTO schema_migrations VALUES('005-sample-versions','2026-12-02 00:01:23');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES('max_span_ns','3600000000000');
INSERT INTO meta VALUES('partition','0');
INSERT INTO meta VALUES('priority','default=watch>phone>manual');
INSERT INTO meta VALUES('topic','health-samples');
CREATE TABLE progress (topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
                       updated_at TEXT NOT NULL, PRIMARY KEY (topic, partition)) WITHOUT ROWID;
INSERT INTO progress VALUES('health-samples',0,7,'2026-12-02 00:01:23');
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
                           code TEXT NOT NULL, recorded_at TEXT NOT NULL, forwarded INTEGER NOT NULL DEFAULT 0, replayed_at TEXT, replayed_partition INTEGER, replayed_offset INTEGER,
                           UNIQUE (topic, partition, offset));
CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
INSERT INTO names VALUES(1,'watch');
INSERT INTO names VALUES(2,'Europe/Berlin');
INSERT INTO names VALUES(3,'phone');
CREATE TABLE entries (user TEXT NOT NULL, uuid TEXT NOT NULL, metric INTEGER, source INTEGER, start_ns INTEGER,
                      end_ns INTEGER, value REAL, zone INTEGER, seq INTEGER, version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
INSERT INTO entries VALUES('ben','0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b',0,1,1711789200000000000,1711792800000000000,1000.0,2,0,0);
INSERT INTO entries VALUES('ben','7C3D9E2B-1A4F-4B6C-9D8E-2F1A0B3C4D5E',0,3,1711837800000000000,1711841400000000000,600.0,2,2,0);
INSERT INTO entries VALUES('ben','hr1',3,1,1711789800000000000,1711789800000000000,96.0,2,6,0);
INSERT INTO entries VALUES('ben','p1',0,3,1711791000000000000,1711794600000000000,800.0,2,1,0);
INSERT INTO entries VALUES('ben','p9',NULL,NULL,NULL,NULL,NULL,NULL,NULL,0);
INSERT INTO entries VALUES('ben','x1',0,3,1712059200000000000,1712062800000000000,700.0,2,5,1);
CREATE TABLE sync_state (user TEXT NOT NULL, source TEXT NOT NULL, last_check_in_ns INTEGER,
                         last_sample_ns INTEGER, newest_end_ns INTEGER, newest_zone TEXT,
                         metrics INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user, source)) WITHOUT ROWID;
INSERT INTO sync_state VALUES('ben','phone',NULL,1796169683773000000,1712062800000000000,'Europe/Berlin',1);
INSERT INTO sync_state VALUES('ben','watch',NULL,1796169683773000000,1711792800000000000,'Europe/Berlin',9);
CREATE INDEX dead_letters_unforwarded ON dead_letters (forwarded) WHERE forwarded = 0;
CREATE INDEX entries_by_start ON entries (user, metric, start_ns);
COMMIT;
