import DaybookCore
import DaybookFiles
import DaybookSupport
import Foundation

/// Which file holds each partition's shard in a data directory, and under which source
/// priority the projection was built.
///
/// A directory starts flat: the shards sit in it directly and each records its priority.
/// The first `daybook rebuild` builds a generation beside them (`gen-000001/`) and, once it
/// has caught up, swaps it in by renaming `manifest.json` into place: from then on the
/// manifest names the generation, its priority, and the directory of every shard. A reader
/// resolves the manifest once per query, so it reads either the old projection or the new
/// one, never a mix; the projector watches the manifest and moves to the new shards.
public struct DataLayout: Sendable {
    public static let manifestName = "manifest.json"

    /// The data directory.
    public let directory: String
    /// 0 for a flat directory (no manifest).
    public let generation: Int
    /// The priority the manifest names; nil for a flat directory (each shard records its own).
    public let priority: SourcePriority?
    /// Shard file name → the directory holding it, relative to `directory` ("." for flat).
    public let shards: [String: String]
    /// Identifies the manifest file as read (inode and change time): a different stamp
    /// means a rebuild swapped generations.
    public let stamp: Stamp

    public struct Stamp: Equatable, Sendable {
        var inode: UInt64 = 0
        var seconds = 0
        var nanoseconds = 0
    }

    /// The directory, relative to `directory`, where shards not listed are created.
    public var currentDirectoryName: String { generation == 0 ? "." : Self.generationName(generation) }

    public static func generationName(_ generation: Int) -> String {
        let digits = String(generation)
        return "gen-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// The generation number of a directory name like `gen-000003`.
    public static func generationNumber(_ name: String) -> Int? {
        guard name.hasPrefix("gen-"), name.count == 10 else { return nil }
        return Int(name.dropFirst(4))
    }

    /// The path of a partition's shard: where the manifest puts it, else the current generation.
    public func path(topic: String, partition: Int32) -> String {
        path(ofFile: Shard.fileName(topic: topic, partition: partition))
    }

    public func path(ofFile name: String) -> String {
        let dir = shards[name] ?? currentDirectoryName
        return dir == "." ? directory + "/" + name : directory + "/" + dir + "/" + name
    }

    /// Every shard path of this layout, sorted by file name: the manifest's shards and the
    /// files of the current generation (a projector creates new partitions' shards there).
    public func shardPaths() throws -> [String] {
        let current = currentDirectoryName == "." ? directory : directory + "/" + currentDirectoryName
        var names = Set(shards.keys)
        if let listed = try? FileManager.default.contentsOfDirectory(atPath: current) {
            names.formUnion(listed.filter { $0.hasSuffix(".sqlite") })
        } else if generation == 0 {
            throw Shard.ShardError(.storage, "\(directory): cannot list the data directory")
        }
        return names.sorted().map(path(ofFile:))
    }

    /// Reads the layout of `directory`: its manifest if it has one, else the flat layout.
    public static func read(_ directory: String) throws -> DataLayout {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw Shard.ShardError(.missingDirectory, "\(directory): no such data directory")
        }
        guard isDirectory.boolValue else {
            throw Shard.ShardError(.missingDirectory, "\(directory): not a directory; open the data directory the projector writes",
                                   detail: .notADirectory(directory: directory))
        }
        try checkNotInside(directory)
        let manifestPath = directory + "/" + manifestName
        // Opened once: the stamp and the bytes come from the same file, whatever renames follow.
        let fd = open(manifestPath, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            guard errno == ENOENT else {
                throw Shard.ShardError(.storage, "\(manifestPath): cannot open: \(String(cString: strerror(errno)))")
            }
            return DataLayout(directory: directory, generation: 0, priority: nil, shards: [:], stamp: Stamp())
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw Shard.ShardError(.storage, "\(manifestPath): cannot stat: \(String(cString: strerror(errno)))")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Shard.ShardError(.storage, "\(manifestPath): cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= 64 << 20 else { throw damaged(manifestPath, "larger than 64 MiB") }
        }
        let stamp = Stamp(inode: UInt64(info.st_ino), seconds: Int(info.st_ctim.tv_sec), nanoseconds: Int(info.st_ctim.tv_nsec))
        return try parse(bytes, directory: directory, path: manifestPath, stamp: stamp)
    }

    /// Refuses a generation or temporary directory of a data directory given as a data
    /// directory itself (`--data DIR/gen-000002`): projecting or rebuilding there would
    /// write or remove shards behind the manifest's back. A rebuild's own staging (it holds
    /// `rebuild.json`) and this process's temporary directory are what they are.
    static func checkNotInside(_ directory: String) throws {
        // The real path: a symlink to a generation is that generation.
        let url = URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath()
        let name = url.lastPathComponent
        let parent = url.deletingLastPathComponent().path
        let fm = FileManager.default
        let parentIsData = fm.fileExists(atPath: parent + "/" + manifestName) || fm.fileExists(atPath: parent + "/rebuild.lock")
        guard parentIsData else { return }
        if generationNumber(name) != nil, !fm.fileExists(atPath: url.path + "/rebuild.json") {
            throw Shard.ShardError(.missingDirectory, "\(directory) is a generation of the data directory \(parent), not a data directory: open \(parent) instead (its manifest says which generation each shard is in)",
                                   detail: .generation(directory: directory, parent: parent))
        }
        if name.hasPrefix(".tmp-"), name != TemporaryName.mine() {
            throw Shard.ShardError(.missingDirectory, "\(directory) is a temporary directory of a verify or diff in \(parent), not a data directory: open \(parent) instead",
                                   detail: .comparisonDirectory(directory: directory, parent: parent))
        }
    }

    /// Takes the data directory's swap lock (`swap.lock`), held by a rebuild while it copies
    /// the dead letters' marks into its new shards and swaps the manifest, and by `dlq
    /// replay` while it marks: each then sees the other's work. Returns the descriptor that
    /// holds it (close it to let go).
    public static func lockSwaps(_ directory: String, timeout: Duration = .seconds(60)) throws -> Int32 {
        do {
            return try Shard.lock(directory + "/swap.lock", timeout: timeout)
        } catch let error as Shard.ShardError where error.kind == .locked {
            throw Shard.ShardError(.locked, "\(directory): a rebuild has been swapping in new shards for over \(timeout); try again")
        }
    }

    /// The stamp of `directory`'s manifest now (a zero stamp when there is none).
    public static func currentStamp(_ directory: String) -> Stamp {
        var info = stat()
        guard stat(directory + "/" + manifestName, &info) == 0 else { return Stamp() }
        return Stamp(inode: UInt64(info.st_ino), seconds: Int(info.st_ctim.tv_sec), nanoseconds: Int(info.st_ctim.tv_nsec))
    }

    private static func damaged(_ path: String, _ why: String) -> Shard.ShardError {
        Shard.ShardError(.notAShard, "\(path) is damaged (\(why)). It names the shards readers use: restore it from a backup, or move the data directory away and rebuild from the log.")
    }

    static func parse(_ bytes: [UInt8], directory: String, path: String, stamp: Stamp) throws -> DataLayout {
        let json: JSONValue
        do {
            json = try bytes.withUnsafeBufferPointer { try JSONParser.parse($0) }
        } catch {
            throw damaged(path, "not JSON: \(error)")
        }
        guard case .number(let format)? = json["format"], format == 1 else {
            throw damaged(path, "format must be 1; written by a newer Daybook?")
        }
        guard case .number(let g)? = json["generation"], g >= 1, g < 1_000_000, g == g.rounded() else {
            throw damaged(path, "generation must be a whole number from 1")
        }
        let priority: SourcePriority
        do {
            priority = try SourcePriority(configuration: .object(["priority": json["priority"] ?? .object([:])]))
        } catch {
            throw damaged(path, "\(error)")
        }
        var shards: [String: String] = [:]
        if case .object(let members)? = json["shards"] {
            for (name, value) in members {
                guard case .string(let dir) = value, name.hasSuffix(".sqlite"), !name.contains("/"),
                      dir == "." || generationNumber(dir) != nil else {
                    throw damaged(path, "shards.\(name) must name a generation directory")
                }
                shards[name] = dir
            }
        } else if json["shards"] != nil {
            throw damaged(path, "shards must be an object")
        }
        let layout = DataLayout(directory: directory, generation: Int(g), priority: priority, shards: shards, stamp: stamp)
        for dir in Set(shards.values).union([layout.currentDirectoryName]) where dir != "." {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory + "/" + dir, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw damaged(path, "it names \(dir), which is not in \(directory)")
            }
        }
        return layout
    }

    /// The manifest's text for a new generation.
    public static func manifestText(generation: Int, priority: SourcePriority, shards: [String: String], note: String) -> String {
        var order: [(String, [String])] = [("default", priority.defaultOrder)]
        order += priority.perMetric.sorted { $0.key < $1.key }.map { ($0.key.rawValue, $0.value) }
        let priorityText = order.map { "\(JSONWriter.quoted($0.0)): [\($0.1.map(JSONWriter.quoted).joined(separator: ", "))]" }.joined(separator: ", ")
        let shardText = shards.sorted { $0.key < $1.key }.map { "    \(JSONWriter.quoted($0.key)): \(JSONWriter.quoted($0.value))" }.joined(separator: ",\n")
        return """
        {
          "format": 1,
          "generation": \(generation),
          "note": \(JSONWriter.quoted(note)),
          "priority": {\(priorityText)},
          "shards": {
        \(shardText)
          }
        }

        """
    }

    /// Replaces the manifest atomically: written beside it, flushed, renamed over it, and
    /// the directory flushed, so a crash leaves the old manifest or the new one.
    public static func writeManifest(_ text: String, in directory: String) throws {
        let final = directory + "/" + manifestName
        let temporary = final + ".tmp"
        do {
            try AtomicFile.write(Array(text.utf8), to: final, temporary: temporary, mode: 0o600)
        } catch {
            let what = switch error.step {
            case .create: "\(temporary): cannot create"
            case .write: "\(temporary): cannot write"
            case .sync: "\(temporary): cannot flush"
            case .rename: "\(final): cannot replace"
            }
            throw Shard.ShardError(.storage, "\(what): \(error.reason)")
        }
    }
}
