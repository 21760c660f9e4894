import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

/// A shard written by main before packs (a row per sample in `entries`, checked in as SQL)
/// is moved into packs when the projector opens it, and one written before uuid runs (the
/// index as `sample_days` rows) into runs and pages; what either held keeps working: its
/// tombstone still refuses its uuid, its samples are still found by uuid (a deletion, a
/// re-add that moves a sample back to another day, a redelivery) and by day (overlaps).
@Suite(.serialized) struct PackedStoreMigrationTests {
    let scratch = TemporaryDirectory()

    /// User ben, Europe/Berlin (2024-03-31 is a 23-hour day), builtin priority watch > phone.
    /// Before (what the fixture shard holds, offsets 0–6):
    /// - W 0f8e… watch 03-30 09:00–10:00Z 1000; P1 phone 09:30–10:30Z 800 (watch wins 09:30–10:00:
    ///   P1 keeps half, 400); P2 7C3D… phone 22:30–23:30Z 600 across Berlin's midnight (300 + 300);
    ///   p9 deleted before it was ever added; X1 phone 03-31 08:00Z 500, then version 1 moved to
    ///   04-02 12:00Z at 700; a heart rate of 96.
    /// - 03-30: 1000 + 400 + 300 = 1700 (naive 2100, max 1000); 03-31: 300; 04-02: 700.
    static let before = [
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b","metric":"steps","source":"watch","start":"2024-03-30T09:00:00Z","end":"2024-03-30T10:00:00Z","value":1000,"unit":"count","zone":"Europe/Berlin"}}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"p1","metric":"steps","source":"phone","start":"2024-03-30T09:30:00Z","end":"2024-03-30T10:30:00Z","value":800,"unit":"count","zone":"Europe/Berlin"}}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"7C3D9E2B-1A4F-4B6C-9D8E-2F1A0B3C4D5E","metric":"steps","source":"phone","start":"2024-03-30T22:30:00Z","end":"2024-03-30T23:30:00Z","value":600,"unit":"count","zone":"Europe/Berlin"}}"#,
        #"{"type":"sample-deleted","user":"ben","uuid":"p9"}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"x1","metric":"steps","source":"phone","start":"2024-03-31T08:00:00Z","end":"2024-03-31T09:00:00Z","value":500,"unit":"count","zone":"Europe/Berlin"}}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"x1","metric":"steps","source":"phone","start":"2024-04-02T12:00:00Z","end":"2024-04-02T13:00:00Z","value":700,"unit":"count","zone":"Europe/Berlin","version":1}}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"hr1","metric":"heart_rate","source":"watch","start":"2024-03-30T09:10:00Z","end":"2024-03-30T09:10:00Z","value":96,"unit":"count/min","zone":"Europe/Berlin"}}"#,
    ]
    /// After (offsets 7–11, applied to the migrated shard): P1 deleted; p9 added (its tombstone
    /// refuses it: 5000 never counts); X1 version 2 back to 03-31 09:00–10:00Z at 400 (04-02 has
    /// no sample left: no row); W3 watch 03-31 09:30–10:30Z 1000 (X1 keeps 09:00–09:30, 200); W
    /// delivered again (nothing changes).
    /// - 03-30: 1000 + 300 = 1300 (naive 6900 with p9, max 5000); 03-31: 300 + 200 + 1000 = 1500
    ///   (naive 1700, max 1000); 04-02: no row.
    static let after = [
        #"{"type":"sample-deleted","user":"ben","uuid":"p1"}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"p9","metric":"steps","source":"phone","start":"2024-03-30T12:00:00Z","end":"2024-03-30T13:00:00Z","value":5000,"unit":"count","zone":"Europe/Berlin"}}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"x1","metric":"steps","source":"phone","start":"2024-03-31T09:00:00Z","end":"2024-03-31T10:00:00Z","value":400,"unit":"count","zone":"Europe/Berlin","version":2}}"#,
        #"{"type":"sample-added","user":"ben","sample":{"uuid":"w3","metric":"steps","source":"watch","start":"2024-03-31T09:30:00Z","end":"2024-03-31T10:30:00Z","value":1000,"unit":"count","zone":"Europe/Berlin"}}"#,
        before[0],
    ]
    /// ben's one heart-rate sample's row; an old shard's row has no latest until a projector
    /// opens it and recomputes its rows from its samples (migration 009).
    static let heartRate = #"{"user":"ben","metric":"heart_rate","day":"2024-03-30","min":96,"max":96,"avg":96,"count":1,"latest":96}"#
    static let heartRateBeforeLatest = #"{"user":"ben","metric":"heart_rate","day":"2024-03-30","min":96,"max":96,"avg":96,"count":1,"latest":null}"#

    func totals(_ dir: String) throws -> String {
        let r = try Daybook.run(["totals", "--data", dir, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout
    }

    func tables(_ path: String) throws -> Set<String> {
        let db = try Database(path: path, readOnly: true)
        let read = try db.statement("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
        var out = Set<String>()
        while try read.step() { out.insert(read.text(0)) }
        return out
    }

    /// A checked-in shard, and the table only its layout has.
    static let fixtures = [("shard-before-packs.sql", "entries"), ("shard-before-uuid-runs.sql", "sample_days")]

    @Test(arguments: fixtures)
    func anOldShardIsMovedToTheCurrentLayoutAndGoesOnGivingTheRollupsRows(fixture: String, oldTable: String) throws {
        let dir = scratch.newPath("old")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let shard = dir + "/health-samples-0000.sqlite"
        let sql = try String(contentsOf: Daybook.root.appendingPathComponent("Tests/DaybookEndToEndTests/Fixtures/" + fixture), encoding: .utf8)
        try Database(path: shard).execute(sql)
        #expect(try tables(shard).contains(oldTable))
        let rowsBefore = [Self.heartRateBeforeLatest,
                          #"{"user":"ben","metric":"steps","day":"2024-03-30","value":1700}"#,
                          #"{"user":"ben","metric":"steps","day":"2024-03-31","value":300}"#,
                          #"{"user":"ben","metric":"steps","day":"2024-04-02","value":700}"#]
        #expect(try totals(dir) == rowsBefore.joined(separator: "\n") + "\n")

        let broker = try BrokerProcess(arguments: ["--partitions", "1"])
        defer { _ = broker.stop() }
        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(Self.before.joined(separator: "\n") + "\n")]).status == 0)
        // Opened with nothing new: moved into packs, rows unchanged.
        let first = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("applied 0"), "\(first.stderr)")
        #expect(first.stderr.contains("rows an older Daybook wrote recomputed from the shard's samples (discrete rows now carry their latest value)"), "\(first.stderr)")
        let migrated = try tables(shard)
        #expect(!migrated.contains(oldTable) && !migrated.contains("entries") && !migrated.contains("entries_by_start"))
        #expect(migrated.isSuperset(of: ["packs", "uuid_pages", "uuid_runs", "tombstones"]) && !migrated.contains("sample_days"))
        // The same rows, the heart-rate row now with its latest.
        #expect(try totals(dir) == ([Self.heartRate] + rowsBefore.dropFirst()).joined(separator: "\n") + "\n")

        #expect(try Daybook.run(["publish", "--brokers", broker.bootstrap, try scratch.file(Self.after.joined(separator: "\n") + "\n")]).status == 0)
        let second = try Daybook.run(["project", "--brokers", broker.bootstrap, "--data", dir, "--solo", "--until-caught-up"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("applied 5"), "\(second.stderr)")
        let expected = [Self.heartRate,
                        #"{"user":"ben","metric":"steps","day":"2024-03-30","value":1300}"#,
                        #"{"user":"ben","metric":"steps","day":"2024-03-31","value":1500}"#]
        #expect(try totals(dir) == expected.joined(separator: "\n") + "\n")
        // The rollup of the whole log says the same.
        let rollup = try Daybook.run(["rollup", "-"], stdin: (Self.before + Self.after).joined(separator: "\n") + "\n")
        #expect(rollup.stdout == expected.joined(separator: "\n") + "\n")
    }
}
