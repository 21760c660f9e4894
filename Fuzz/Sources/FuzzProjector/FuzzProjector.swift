// libFuzzer target: the projector's per-message path, `PartitionWorker.apply`, over a real
// SQLite shard in a temporary directory.
//
// Input: when it contains a newline, the first line is the message key and each further
// line (up to 8) one message value; otherwise the whole input is one value with no key.
// The messages get the next offsets of the partition and are applied as one batch (decode,
// key check, load from the shard, Ledger.apply, recompute, Shard.commit, evict). The
// worker's cache budget is 0: every batch reads what it needs back from the shard. One
// shard is reused across inputs.
//
// Traps (findings) are Swift runtime traps and these contracts:
// - a message never makes the commit fail (a poison message would stop the projector);
// - every message is applied or dead-lettered, and the shard's offset moves past the batch;
// - the shard stores as many dead letters as the worker reported (checked on reopening);
// - the same batch delivered again is skipped entirely;
// - every 2,000 inputs the shard is reopened and its stored rows must equal those of an
//   in-memory ledger given every event the worker applied (the cache over the store
//   against the plain ledger). Every 20,000 inputs a fresh shard is started, so the
//   reference and the file stay small and the rate stays even.
@testable import DaybookKafka // ConsumedMessage has no public initializer
@testable import DaybookPipeline // PartitionWorker is internal
import DaybookCore
import DaybookStore
#if canImport(Glibc)
import Glibc
#endif

let topic = "health-samples"
let priority = SourcePriority.builtIn

final class Harness {
    /// A private directory in $TMPDIR (`scripts/fuzz` points TMPDIR at one it removes).
    let directory: String
    var worker: PartitionWorker?
    var inputs = 0
    /// Dead letters reported since the shard was created; checked against the shard's count
    /// when it is reopened (counting on every input would dominate the run time).
    var deadLetters = 0
    /// Every event the worker applied since the shard was created, in memory.
    var reference = Ledger(priority: priority)

    init() {
        var template = Array("\(getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp")/daybook-fuzz-projector-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
        directory = String(cString: made)
        worker = open()
    }

    var shardPath: String { directory + "/" + Shard.fileName(topic: topic, partition: 0) }

    func open() -> PartitionWorker {
        do {
            let shard = try Shard(directory: directory, topic: topic, partition: 0, fingerprint: priority.fingerprint,
                                  lockTimeout: .seconds(1))
            return PartitionWorker(shard: shard, priority: priority, cacheBudgetBytes: 0)
        } catch {
            fatalError("cannot open the shard: \(error)")
        }
    }

    /// Drops the worker (closing the shard and its lock) and opens it again from the file.
    func reopen(fresh: Bool) {
        let offset = worker!.shard.nextOffset
        let stored = (try? worker!.shard.deadLetterCount()) ?? -1
        guard stored == deadLetters else { fatalError("\(deadLetters) dead letters reported, \(stored) stored") }
        worker = nil
        if fresh {
            for suffix in ["", "-wal", "-shm", ".lock"] { unlink(shardPath + suffix) }
            deadLetters = 0
            reference = Ledger(priority: priority)
        }
        worker = open()
        if fresh { return }
        guard worker!.shard.nextOffset == offset else {
            fatalError("the shard reopened at offset \(worker!.shard.nextOffset), not \(offset)")
        }
        let rows: [DayTotal]
        do {
            rows = try ShardReader(directory: directory).totals()
        } catch {
            fatalError("cannot read the shard's rows: \(error)")
        }
        let expected = reference.allTotals()
        guard rows == expected else {
            let differ = zip(expected, rows).first { $0 != $1 }
            fatalError("the shard's rows differ from the in-memory ledger's: \(expected.count) expected, \(rows.count) stored; first difference \(String(describing: differ))")
        }
    }

    /// What the worker must have applied: the messages that decode and are keyed by their user.
    func applyToReference(_ messages: [ConsumedMessage]) {
        let decoder = EventDecoder()
        for message in messages where message.valueCount <= EventDecoder.maximumEventBytes {
            guard let event = message.withValue({ try? decoder.decode($0) }) else { continue }
            guard message.key.isEmpty || message.key.elementsEqual(event.user.utf8) else { continue }
            reference.apply(event, at: message.offset)
        }
    }

    func run(_ input: UnsafeBufferPointer<UInt8>) {
        inputs += 1
        if inputs % 20_000 == 0 {
            reopen(fresh: true)
        } else if inputs % 2_000 == 0 {
            reopen(fresh: false)
        }
        let worker = worker!
        var key: [UInt8] = []
        var values: [[UInt8]] = []
        if let newline = input.firstIndex(of: 10) {
            key = Array(input[..<newline])
            var start = newline + 1
            while start <= input.count, values.count < 8 {
                let end = input[start...].firstIndex(of: 10) ?? input.count
                values.append(Array(input[start..<end]))
                start = end + 1
            }
        } else {
            values = [Array(input)]
        }
        let first = worker.shard.nextOffset
        let partition = TopicPartition(topic, 0)
        let messages = values.enumerated().map { i, value in
            ConsumedMessage(topicPartition: partition, offset: first + Int64(i), key: key, value: value, headers: [])
        }
        do {
            let outcome = try worker.apply(messages[...])
            guard outcome.applied + outcome.deadLetters == messages.count, outcome.skipped == 0 else {
                fatalError("\(messages.count) messages, but \(outcome.applied) applied, \(outcome.deadLetters) dead letters, \(outcome.skipped) skipped")
            }
            guard worker.shard.nextOffset == first + Int64(messages.count) else {
                fatalError("the shard's next offset is \(worker.shard.nextOffset) after offsets \(first)..<\(first + Int64(messages.count))")
            }
            deadLetters += outcome.deadLetters
            applyToReference(messages)
            let again = try worker.apply(messages[...])
            guard again.skipped == messages.count, again.applied == 0, again.deadLetters == 0 else {
                fatalError("a redelivered batch was not skipped: \(again)")
            }
        } catch {
            fatalError("a batch failed to commit: \(error)")
        }
    }
}

nonisolated(unsafe) let harness = Harness()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProjector(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    harness.run(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}
