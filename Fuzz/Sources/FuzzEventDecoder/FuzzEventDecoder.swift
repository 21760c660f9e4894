// libFuzzer target: one input is a Kafka value or a few lines of a log file.
//
// Decodes the whole input, then (if it has several lines) each line, with
// `EventDecoder().decode(bytes)` — the fast reader, falling back to the JSON tree — and
// separately with the JSON tree alone; the two must agree (same event or same error).
// Accepted events go through the core as the projector and `rollup` use it: Ledger.apply,
// recompute of the dirty days, explain, and the JSON lines of the totals.
//
// Traps (findings) are Swift runtime traps (overflow, bounds) and these contracts:
// - the fast path and the tree path give the same answer, and so does staging the line
//   into a batch (`EventDecoder.stage`, the projector's way);
// - an accepted sample's instants format as RFC 3339 that parses back to the same instant;
// - incremental rows (apply, recompute dirty days) equal the batch rows (allTotals);
// - a deleted sample cannot come back, and its rows are recomputed as for the batch;
// - every total's JSON line is valid JSON with the key it was given and finite numbers
//   (validation bounds each sample's value, so no day can sum to infinity).
import DaybookCore
#if canImport(Glibc)
import DaybookSupport
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEventDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    var events: [Event] = []
    if let event = decodeBothWays(input) { events.append(event) }
    if input.contains(10) {
        var start = 0
        while start <= input.count, events.count < 32 {
            let end = input[start...].firstIndex(of: 10) ?? input.count
            if let event = decodeBothWays(UnsafeBufferPointer(rebasing: input[start..<end])) { events.append(event) }
            start = end + 1
        }
    }
    if !events.isEmpty { runCore(events) }
    return 0
}

/// Decodes `bytes` the production way and the tree way; traps when they disagree. The
/// production way is also taken the projector's way, staged straight into a batch
/// (`EventDecoder.stage`), which must give the same event back or the same error.
func decodeBothWays(_ bytes: UnsafeBufferPointer<UInt8>) -> Event? {
    let decoder = EventDecoder()
    let production = Result { () throws(EventError) in try decoder.decode(bytes) }
    var batch = StagedBatch()
    var zones = ZoneMemo()
    let staged = Result { () throws(EventError) in try decoder.stage(bytes, into: &batch, position: 0, deliveredAt: nil, zones: &zones) }
    switch (production, staged) {
    case (.success(let a), .success(let user)):
        guard batch.count == 1, batch.event(at: 0) == a, batch.name(user) == a.user else {
            fatalError("staging gives another event: \(a) vs \(batch.isEmpty ? "nothing" : "\(batch.event(at: 0))")")
        }
    case (.failure(let a), .failure(let b)):
        guard a == b, batch.isEmpty else { fatalError("staging rejects differently: \(a) vs \(b)") }
    default:
        fatalError("staging and decoding disagree: \(production) vs \(staged)")
    }
    let tree: Result<Event, EventError>?
    var integers: [String: Int64]? = [:]
    var texts: [String: String]? = [:]
    switch Result(catching: { () throws(JSONSyntaxError) in try JSONParser.parse(bytes, exactIntegers: &integers, numberTexts: &texts) }) {
    case .success(let json): tree = Result { () throws(EventError) in try decoder.decode(json, exactIntegers: integers ?? [:], numberTexts: texts ?? [:]) }
    case .failure: tree = nil
    }
    switch (production, tree) {
    case (.success(let a), .success(let b)?):
        guard a == b else { fatalError("fast path and tree path decode different events: \(a) vs \(b)") }
        return a
    case (.failure(let a), .failure(let b)?):
        guard a == b else { fatalError("fast path and tree path reject differently: \(a) vs \(b)") }
        _ = a.description
        return nil
    case (.failure(let a), nil):
        // Text the JSON parser refuses is malformed, or one of the input faults the decoder
        // names more precisely (invalid UTF-8 in a member, a repeated member).
        guard [.malformedJSON, .invalidUTF8, .duplicateKey].contains(a.code) else { fatalError("not JSON, yet rejected as \(a.code): \(a)") }
        return nil
    case (.success(let a), nil):
        fatalError("the fast path accepts text the JSON parser rejects: \(a)")
    case (.success(let a), .failure(let b)?):
        fatalError("the fast path accepts \(a); the tree path rejects it: \(b)")
    case (.failure(let a), .success(let b)?):
        fatalError("the fast path rejects (\(a)); the tree path accepts \(b)")
    }
}

func runCore(_ events: [Event]) {
    let ledger = Ledger()
    var rows: [DayKey: DayTotal] = [:]
    func applyIncrementally(_ event: Event, at position: Int64) -> Set<DayKey> {
        let dirty = ledger.apply(event, at: position)
        for (key, total) in ledger.recompute(dirty) {
            if let total {
                guard total.key == key else { fatalError("recompute returned row \(total.key) for key \(key)") }
                rows[key] = total
            } else {
                rows[key] = nil
            }
        }
        return dirty
    }
    var position: Int64 = 0
    for event in events {
        position += 1
        if case .sampleAdded(let s) = event { checkInstants(s) }
        // A check-in changes no totals, and its line reads back as the same check-in.
        if case .sourceCheckedIn = event {
            guard (try? EventDecoder().decode(event.jsonLine)) == event else { fatalError("a check-in does not read back: \(event)") }
            guard ledger.apply(event, at: position).isEmpty else { fatalError("a check-in changed totals: \(event)") }
        }
        _ = applyIncrementally(event, at: position)
    }
    checkBatchEqualsIncremental(ledger, rows)
    for (key, total) in rows {
        checkJSONLine(total, key)
        _ = ledger.explain(key)
    }
    // Delete the first sample added, then try to add it back: the tombstone must win.
    if let first = events.first(where: { if case .sampleAdded = $0 { true } else { false } }), case .sampleAdded(let sample) = first {
        position += 1
        _ = applyIncrementally(.sampleDeleted(user: sample.user, uuid: sample.uuid), at: position)
        position += 1
        let again = applyIncrementally(first, at: position)
        guard again.isEmpty, ledger.isTombstoned(user: sample.user, uuid: sample.uuid) else {
            fatalError("a deleted sample came back: \(first)")
        }
        checkBatchEqualsIncremental(ledger, rows)
    }
}

func checkInstants(_ s: Sample) {
    for instant in [s.start, s.end] {
        let text = instant.description
        guard let back = try? Instant(rfc3339: text), back == instant else {
            fatalError("\(instant.nanoseconds) ns formats as \(text), which does not parse back")
        }
        if let rules = ZoneRules.named(s.zone) {
            let offset = rules.offsetSeconds(at: instant)
            let local = instant.format(offsetSeconds: offset)
            if offset % 60 == 0, let back = try? Instant(rfc3339: local), back != instant {
                fatalError("\(text) formats in \(s.zone) as \(local), which parses as \(back)")
            }
            _ = rules.day(of: instant)
        }
    }
}

func checkBatchEqualsIncremental(_ ledger: Ledger, _ rows: [DayKey: DayTotal]) {
    let batch = ledger.allTotals()
    guard batch.count == rows.count, batch.allSatisfy({ rows[$0.key] == $0 }) else {
        let extra = batch.filter { rows[$0.key] != $0 }.prefix(3)
        let missing = rows.values.filter { r in !batch.contains(r) }.prefix(3)
        fatalError("incremental rows differ from batch rows: batch-only \(extra), incremental-only \(missing)")
    }
}

func checkJSONLine(_ total: DayTotal, _ key: DayKey) {
    let line = total.jsonLine
    guard case .object(let members)? = try? JSONParser.parse(line) else {
        fatalError("the JSON line of \(key) is not JSON: \(line)")
    }
    guard members["user"] == .string(key.user), members["metric"] == .string(key.metric.rawValue),
          members["day"] == .string(key.day.description) else {
        fatalError("the JSON line of \(key) names another row: \(line)")
    }
    for (name, value) in members where !["user", "metric", "day"].contains(name) {
        guard case .number = value else { fatalError("\(name) of \(key) is not a finite number: \(line)") }
    }
}
