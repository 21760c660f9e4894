import DaybookCore
import DaybookFiles
import DaybookSupport
import Foundation

/// What the projector of a data directory last said it does with each partition's shard:
/// owns it (the consumer group gave it the partition) or keeps it as a warm standby (it
/// follows the log read-only so that it is close behind when the group moves the partition
/// here). Written by the projector (`roles.json` in the data directory, replaced whole)
/// whenever that changes and when it stops; read by `status` and by readers of the
/// totals, who say that a standby shard may lag.
public struct ProjectorRoles: Sendable, Equatable {
    public static let fileName = "roles.json"

    /// Who wrote it: its member id in the group (`solo` for a projector that is no member),
    /// its client id and host.
    public var member: String
    public var clientID: String
    public var host: String
    public var pid: Int32
    /// False in the file a projector writes as it stops: nothing follows the log here now.
    public var running: Bool
    /// When it was written (RFC 3339, UTC).
    public var updatedAt: String
    public var topic: String
    /// The topic's partition count and the producers' partitioner when it was written, so
    /// that a reader can tell a user's partition without asking the cluster.
    public var partitionCount: Int
    public var partitioner: String
    public var owned: [Int32]
    public var standby: [Int32]

    public init(member: String, clientID: String, host: String, pid: Int32, running: Bool, updatedAt: String, topic: String,
                partitionCount: Int, partitioner: String, owned: [Int32], standby: [Int32]) {
        self.member = member
        self.clientID = clientID
        self.host = host
        self.pid = pid
        self.running = running
        self.updatedAt = updatedAt
        self.topic = topic
        self.partitionCount = partitionCount
        self.partitioner = partitioner
        self.owned = owned
        self.standby = standby
    }

    public var text: String {
        let list = { (ps: [Int32]) in "[" + ps.map(String.init).joined(separator: ", ") + "]" }
        return """
        {
          "format": 1,
          "member": \(JSONWriter.quoted(member)),
          "client_id": \(JSONWriter.quoted(clientID)),
          "host": \(JSONWriter.quoted(host)),
          "pid": \(pid),
          "running": \(running),
          "updated_at": \(JSONWriter.quoted(updatedAt)),
          "topic": \(JSONWriter.quoted(topic)),
          "partitions": \(partitionCount),
          "partitioner": \(JSONWriter.quoted(partitioner)),
          "owned": \(list(owned)),
          "standby": \(list(standby))
        }

        """
    }

    /// Replaces `directory`'s roles file atomically.
    public func write(in directory: String) throws {
        let path = directory + "/" + Self.fileName
        do {
            try AtomicFile.write(Array(text.utf8), to: path, mode: 0o600)
        } catch {
            throw Shard.ShardError(.storage, "\(path): cannot write: \(error.reason)")
        }
    }

    /// The roles file of `directory`; nil when there is none (no projector has run there
    /// since roles were recorded). A damaged file is a `ShardError` `.notAShard` naming it.
    public static func read(_ directory: String) throws -> ProjectorRoles? {
        let path = directory + "/" + fileName
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let damaged = { (why: String) in
            Shard.ShardError(.notAShard, "\(path) is damaged (\(why)); the projector writes it again as it runs: remove it and restart the projector")
        }
        let json: JSONValue
        do {
            json = try JSONParser.parse(String(decoding: data, as: UTF8.self))
        } catch {
            throw damaged("not JSON: \(error)")
        }
        guard case .number(1)? = json["format"] else { throw damaged("format must be 1") }
        func string(_ key: String) throws -> String {
            guard case .string(let s)? = json[key] else { throw damaged("\(key) must be a string") }
            return s
        }
        func number(_ key: String) throws -> Int {
            guard case .number(let n)? = json[key], n == n.rounded(), abs(n) < 1e15 else { throw damaged("\(key) must be a whole number") }
            return Int(n)
        }
        func partitions(_ key: String) throws -> [Int32] {
            guard case .array(let items)? = json[key] else { throw damaged("\(key) must be a list of partitions") }
            return try items.map { item in
                guard case .number(let n) = item, n >= 0, n < 1e9, n == n.rounded() else { throw damaged("\(key) must be a list of partitions") }
                return Int32(n)
            }
        }
        guard case .bool(let running)? = json["running"] else { throw damaged("running must be true or false") }
        return ProjectorRoles(member: try string("member"), clientID: try string("client_id"), host: try string("host"), pid: Int32(clamping: try number("pid")),
                              running: running, updatedAt: try string("updated_at"), topic: try string("topic"),
                              partitionCount: try number("partitions"), partitioner: try string("partitioner"),
                              owned: try partitions("owned"), standby: try partitions("standby"))
    }
}
