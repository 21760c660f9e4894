// libFuzzer target: the input is the contents of a configuration file.
//
// `DaybookConfiguration.load` only reads from a path, so each input is written to one
// file in $TMPDIR and loaded from there.
// An accepted configuration is then used as the commands use it: the producer and consumer
// property maps, a Ledger ranking sources under its priority, and its description, which
// must never show a secret read from the environment.
import DaybookConfiguration
import DaybookCore
import DaybookKafka
#if canImport(Glibc)
import Glibc
#endif

let secret = "fuzz-secret-value-4c1d"
let environment = ["DAYBOOK_KAFKA_PASSWORD": secret, "EMPTY": ""]

/// Rewritten for every input; `scripts/fuzz` points TMPDIR at a directory it removes.
let path = "\(getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp")/daybook-fuzz-config-\(getpid()).json"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot write \(path)") }
    if let data, size > 0 {
        guard write(fd, data, size) == size else { fatalError("short write to \(path)") }
    }
    close(fd)
    guard let config = try? DaybookConfiguration.load(path, environment: environment) else { return 0 }

    let connection = config.connection
    if connection.description.contains(secret),
       !connection.bootstrapServers.contains(secret), !connection.clientID.contains(secret) {
        fatalError("the configuration's description shows a secret: \(connection.description)")
    }
    for properties in [try? config.producer.properties(for: connection), try? config.consumer.properties(for: connection)] {
        guard let properties else { continue }
        for key in KafkaConnection.secretProperties where properties[key] != nil && connection.secrets[key] == nil {
            fatalError("\(key) reached the librdkafka properties from the file")
        }
    }

    // The ranking must be a strict total order for every metric.
    let priority = config.priority
    _ = priority.fingerprint
    var names = ["watch", "phone", "manual", "", "zz"]
    names += priority.defaultOrder.prefix(4)
    for order in priority.perMetric.values { names += order.prefix(2) }
    for metric in Metric.allCases {
        for a in names {
            for b in names where a != b {
                guard priority.ranks(a, above: b, for: metric) != priority.ranks(b, above: a, for: metric) else {
                    fatalError("\(a) and \(b) are not ordered for \(metric)")
                }
            }
        }
    }
    let ledger = Ledger(priority: priority)
    _ = ledger.allTotals()
    return 0
}
