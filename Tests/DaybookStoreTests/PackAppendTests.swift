import DaybookCore
import DaybookSupport
import DaybookTestSupport
@testable import DaybookStore
import Foundation
import Testing

/// A pack changed by appends alone is written from its stored bytes and the new samples coded
/// after its tail (`PackEdit`, `PackEncoder`): whatever the sequence of appends in and out of
/// order and removals, the bytes are exactly `SamplePack.encode` of the same samples in pack
/// order, the format every reader relies on.
@Suite struct PackAppendTests {
    let scratch = TemporaryDirectory()
    static let day: Int64 = 19_800
    static let dayStart = day * Instant.nanosPerDay

    /// A random sample of the pack's day: uuids of every form (canonical lower and upper,
    /// text sharing fronts, mixed case), seconds and nanoseconds, every value form.
    static func sample(_ rng: inout SplitMix64, seq: Int64, n: Int) -> PackedSample {
        let hex = String(format: "%08x", n)
        let uuid: String
        switch rng.next() % 5 {
        case 0: uuid = "\(hex)-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
        case 1: uuid = "\(hex)-3B4D-4E5F-8A9B-0C1D2E3F4A5B".uppercased()
        case 2: uuid = "\(hex)-3b4d-4E5F-8a9b-0c1d2e3f4a5b"
        case 3: uuid = "user-3-0-\(n)-watch"
        default: uuid = "u\(n)"
        }
        let second = Instant.nanosPerSecond
        let start = dayStart + Int64(rng.next() % 86_400) * second + (rng.next() % 3 == 0 ? Int64(rng.next() % 1_000) : 0)
        let values: [Double] = [812, 23.7, 0.1 + 0.2, -0.0, .infinity, Double(rng.next() % 10_000) / 100, 9.1e15]
        return PackedSample(uuid: uuid, source: Int64(rng.next() % 4), start: start, end: start + Int64(rng.next() % 3_600) * second,
                            value: values[Int(rng.next() % UInt64(values.count))], zone: Int64(rng.next() % 3), seq: seq,
                            version: Int64(rng.next() % 3))
    }

    /// Three hundred random histories of one pack: a stored pack (perhaps none), then appends
    /// after its last sample, before it, at its very log position, and removals, in any mix.
    /// After each step the bytes are the whole re-encode's; a history of appends after the
    /// last sample alone never decodes the pack.
    @Test func appendedBytesAreTheWholeEncode() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        let key = PackKey(user: "ana", metric: 0, day: Self.day)
        var rng = SplitMix64(seed: 26)
        for history in 0..<300 {
            var live: [PackedSample] = []
            var seq: Int64 = 1_000
            var n = history * 1_000
            for _ in 0..<Int(rng.next() % 12) {
                seq += Int64(rng.next() % 5) + 1
                n += 1
                live.append(Self.sample(&rng, seq: seq, n: n))
            }
            live.sort(by: PackedSample.inPackOrder)
            var edit = PackEdit(stored: live.isEmpty ? [] : SamplePack.encode(live, day: Self.day))
            let onlyAppends = history % 3 == 0
            for step in 0..<Int(rng.next() % 20) + 1 {
                let op = onlyAppends ? 0 : rng.next() % 6
                n += 1
                switch op {
                case 0, 1, 2:
                    seq += Int64(rng.next() % 5) + 1
                    let s = Self.sample(&rng, seq: seq, n: n)
                    try edit.append(s, shard, key)
                    live.append(s)
                case 3:
                    // Out of order: a log position before the last (a reread, a move back).
                    let s = Self.sample(&rng, seq: seq - Int64(rng.next() % 40), n: n)
                    try edit.append(s, shard, key)
                    live.append(s)
                case 4:
                    // The same log position as the last: the uuid decides the order.
                    let s = Self.sample(&rng, seq: seq, n: n)
                    try edit.append(s, shard, key)
                    live.append(s)
                default:
                    guard !live.isEmpty else { continue }
                    let gone = live.remove(at: Int(rng.next() % UInt64(live.count)))
                    try edit.remove(gone.uuid, shard, key)
                }
                let expected = SamplePack.encode(live.sorted(by: PackedSample.inPackOrder), day: Self.day)
                #expect(edit.isEmpty == live.isEmpty, "history \(history) step \(step)")
                if !live.isEmpty { #expect(edit.bytes(day: Self.day) == expected, "history \(history) step \(step)") }
            }
            if onlyAppends { #expect(!edit.isDecoded, "history \(history)") }
        }
    }

    /// Through the shard: forty batches of new uuids (vouched for by the ledger or not),
    /// moves to other days, re-versions, out-of-order log positions and deletions; after
    /// each commit every stored pack is the whole encode of the model's samples of that pack.
    @Test func storedPacksAreTheWholeEncodeAfterEveryBatch() throws {
        let shard = try Shard(directory: scratch.path, topic: "t", partition: 0, fingerprint: "f")
        var rng = SplitMix64(seed: 2_026)
        var live: [String: (sample: Sample, seq: Int64)] = [:]
        var deleted = Set<String>()
        var seq: Int64 = 0
        for round in 0..<40 {
            var batch = Shard.Batch(nextOffset: Int64(round + 1) * 100)
            var touched = Set<String>()
            for _ in 0..<50 {
                let i = Int(rng.next() % 300)
                let uuid = i % 3 == 0 ? String(format: "%08x-3b4d-4e5f-8a9b-0c1d2e3f4a5b", i) : "s\(i)"
                guard touched.insert(uuid).inserted, !deleted.contains(uuid) else { continue }
                seq += 1
                let back = rng.next() % 4 == 0 ? Int64(rng.next() % 30) : 0 // a reread's earlier position
                if live[uuid] != nil, rng.next() % 6 == 0 {
                    batch.deletes.append(("ana", SampleUUID(uuid)))
                    live[uuid] = nil
                    deleted.insert(uuid)
                    continue
                }
                let day = Int64(rng.next() % 6)
                let start = Instant(nanoseconds: (Self.day + day) * Instant.nanosPerDay + Int64(rng.next() % 86_400) * Instant.nanosPerSecond)
                let s = Sample(user: "ana", uuid: uuid, metric: rng.next() % 2 == 0 ? .steps : .heartRate, source: "watch",
                               start: start, end: Instant(nanoseconds: start.nanoseconds + 60 * Instant.nanosPerSecond),
                               value: Double(rng.next() % 500), zone: "UTC", version: seq)
                batch.upserts.append(.init(s, seq - back))
                batch.storeLacks.append(live[uuid] == nil && rng.next() % 2 == 0)
                live[uuid] = (s, seq - back)
            }
            try shard.commit(batch)
            var expected: [PackKey: [PackedSample]] = [:]
            for (uuid, entry) in live {
                let start = entry.sample.start.nanoseconds
                let key = PackKey(user: "ana", metric: entry.sample.metric.storageCode, day: SamplePack.day(ofStart: start))
                let names = try shard.database.statement("SELECT id FROM names WHERE name = ?")
                try names.bind(1, "watch")
                let watch = try names.firstRow { $0.int64(0) } ?? -1
                try names.bind(1, "UTC")
                let utc = try names.firstRow { $0.int64(0) } ?? -1
                expected[key, default: []].append(PackedSample(uuid: uuid, source: watch, start: start, end: entry.sample.end.nanoseconds,
                                                               value: entry.sample.value, zone: utc, seq: entry.seq,
                                                               version: entry.sample.version))
            }
            let read = try shard.database.statement("SELECT user, metric, day, samples FROM packs")
            var stored = 0
            while try read.step() {
                let key = PackKey(user: read.text(0), metric: Int(read.int64(1)), day: read.int64(2))
                let want = SamplePack.encode((expected[key] ?? []).sorted(by: PackedSample.inPackOrder), day: key.day)
                #expect(read.blob(3) == want, "round \(round) pack \(key)")
                stored += 1
            }
            read.reset()
            #expect(stored == expected.count, "round \(round)")
        }
    }
}
