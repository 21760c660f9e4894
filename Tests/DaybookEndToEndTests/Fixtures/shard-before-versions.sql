-- A shard written by Daybook before sample versions (main at 2dffe6f, schema 004), from
-- `daybook publish` of OrderIndependenceTests.issueLog twice and `daybook project --solo`:
-- its row says 500, the old rule's answer (the cluster id is removed so any broker may open it).
BEGIN TRANSACTION;
CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, partition INTEGER NOT NULL,
                           offset INTEGER NOT NULL, key BLOB NOT NULL, payload BLOB NOT NULL, reason TEXT NOT NULL,
                           code TEXT NOT NULL, recorded_at TEXT NOT NULL, forwarded INTEGER NOT NULL DEFAULT 0, replayed_at TEXT, replayed_partition INTEGER, replayed_offset INTEGER,
                           UNIQUE (topic, partition, offset));
CREATE TABLE entries (user TEXT NOT NULL, uuid TEXT NOT NULL, metric INTEGER, source INTEGER, start_ns INTEGER,
                      end_ns INTEGER, value REAL, zone INTEGER, seq INTEGER, PRIMARY KEY (user, uuid)) WITHOUT ROWID;
INSERT INTO "entries" VALUES('ana','A',0,1,1714982400000000000,1714986000000000000,200.0,2,5);
INSERT INTO "entries" VALUES('ana','B',0,1,1714982400000000000,1714986000000000000,500.0,2,2);
INSERT INTO "entries" VALUES('ana','C',0,1,1714984200000000000,1714987800000000000,600.0,2,3);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO "meta" VALUES('max_span_ns','3600000000000');
INSERT INTO "meta" VALUES('partition','0');
INSERT INTO "meta" VALUES('priority','default=watch>phone>manual');
INSERT INTO "meta" VALUES('topic','health-samples');
CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
INSERT INTO "names" VALUES(1,'phone');
INSERT INTO "names" VALUES(2,'UTC');
CREATE TABLE progress (topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
                       updated_at TEXT NOT NULL, PRIMARY KEY (topic, partition)) WITHOUT ROWID;
INSERT INTO "progress" VALUES('health-samples',0,8,'2026-12-01 18:35:53');
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO "schema_migrations" VALUES('001-read-model','2026-12-01 18:35:53');
INSERT INTO "schema_migrations" VALUES('002-state-store','2026-12-01 18:35:53');
INSERT INTO "schema_migrations" VALUES('003-dead-letter-replays','2026-12-01 18:35:53');
INSERT INTO "schema_migrations" VALUES('004-sync-state','2026-12-01 18:35:53');
CREATE TABLE sync_state (user TEXT NOT NULL, source TEXT NOT NULL, last_check_in_ns INTEGER,
                         last_sample_ns INTEGER, newest_end_ns INTEGER, newest_zone TEXT,
                         metrics INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user, source)) WITHOUT ROWID;
INSERT INTO "sync_state" VALUES('ana','phone',NULL,1796150153796000000,1714987800000000000,'UTC',1);
CREATE TABLE total_sources (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL, rank INTEGER NOT NULL,
                            source TEXT NOT NULL, value REAL NOT NULL,
                            PRIMARY KEY (user, metric, day, rank)) WITHOUT ROWID;
INSERT INTO "total_sources" VALUES('ana','steps','2024-05-06',0,'phone',500.0);
CREATE TABLE totals (user TEXT NOT NULL, metric TEXT NOT NULL, day TEXT NOT NULL,
                     value REAL, min REAL, max REAL, avg REAL, count INTEGER,
                     updated_offset INTEGER NOT NULL, PRIMARY KEY (user, metric, day)) WITHOUT ROWID;
INSERT INTO "totals" VALUES('ana','steps','2024-05-06',500.0,NULL,NULL,NULL,NULL,8);
CREATE INDEX dead_letters_unforwarded ON dead_letters (forwarded) WHERE forwarded = 0;
CREATE INDEX entries_by_start ON entries (user, metric, start_ns);
COMMIT;
