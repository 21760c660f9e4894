import DaybookTestSupport
@testable import DaybookStore
import DaybookCore
import Foundation
import Testing

/// Where readers and the projector find each partition's shard: flat, or by manifest.
@Suite struct DataLayoutTests {
    let scratch = TemporaryDirectory()

    func touch(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    }

    @Test func aDirectoryWithoutAManifestIsFlat() throws {
        let dir = scratch.path
        try touch(dir + "/health-samples-0001.sqlite")
        try touch(dir + "/health-samples-0000.sqlite")
        try touch(dir + "/gen-000001/health-samples-0000.sqlite") // a staging generation: not read
        let layout = try DataLayout.read(dir)
        #expect(layout.generation == 0)
        #expect(layout.priority == nil)
        #expect(try layout.shardPaths() == [dir + "/health-samples-0000.sqlite", dir + "/health-samples-0001.sqlite"])
        #expect(layout.path(topic: "health-samples", partition: 7) == dir + "/health-samples-0007.sqlite")
    }

    @Test func theManifestNamesEachShardsGenerationAndThePriority() throws {
        let dir = scratch.path
        let priority = SourcePriority(defaultOrder: ["phone", "watch"], perMetric: [.steps: ["manual", "phone"]])
        // Partition 0 rebuilt into generation 3, partition 1 still in generation 2.
        try touch(dir + "/gen-000003/health-samples-0000.sqlite")
        try touch(dir + "/gen-000002/health-samples-0001.sqlite")
        try touch(dir + "/gen-000002/health-samples-0000.sqlite") // the old copy of partition 0
        try touch(dir + "/health-samples-0000.sqlite") // the flat first generation
        let text = DataLayout.manifestText(generation: 3, priority: priority,
                                           shards: ["health-samples-0000.sqlite": "gen-000003", "health-samples-0001.sqlite": "gen-000002"],
                                           note: "test")
        try DataLayout.writeManifest(text, in: dir)
        let layout = try DataLayout.read(dir)
        #expect(layout.generation == 3)
        #expect(layout.priority == priority)
        #expect(try layout.shardPaths() == [dir + "/gen-000003/health-samples-0000.sqlite", dir + "/gen-000002/health-samples-0001.sqlite"])
        // A partition the manifest does not know yet is created in the current generation.
        #expect(layout.path(topic: "health-samples", partition: 2) == dir + "/gen-000003/health-samples-0002.sqlite")
        try touch(dir + "/gen-000003/health-samples-0002.sqlite")
        #expect(try layout.shardPaths().count == 3)
        #expect(try ShardReader(directory: dir).shardPaths() == (try layout.shardPaths()))
    }

    @Test func replacingTheManifestChangesItsStamp() throws {
        let dir = scratch.path
        #expect(DataLayout.currentStamp(dir) == (try DataLayout.read(dir).stamp))
        for g in ["gen-000001", "gen-000002"] { try FileManager.default.createDirectory(atPath: dir + "/" + g, withIntermediateDirectories: true) }
        try DataLayout.writeManifest(DataLayout.manifestText(generation: 1, priority: .builtIn, shards: [:], note: ""), in: dir)
        let first = DataLayout.currentStamp(dir)
        #expect(first == (try DataLayout.read(dir).stamp))
        try DataLayout.writeManifest(DataLayout.manifestText(generation: 2, priority: .builtIn, shards: [:], note: ""), in: dir)
        #expect(DataLayout.currentStamp(dir) != first)
        #expect(try DataLayout.read(dir).generation == 2)
        #expect(!FileManager.default.fileExists(atPath: dir + "/manifest.json.tmp"))
    }

    @Test(arguments: [
        ("not json", "not JSON"),
        (#"{"format":2,"generation":1}"#, "format must be 1"),
        (#"{"format":1,"generation":0}"#, "generation"),
        (#"{"format":1,"generation":1,"priority":{"default":"watch"}}"#, "priority.default"),
        (#"{"format":1,"generation":1,"shards":{"health-samples-0000.sqlite":"../elsewhere"}}"#, "must name a generation directory"),
        (#"{"format":1,"generation":1,"shards":{"../x.sqlite":"gen-000001"}}"#, "must name a generation directory"),
        (#"{"format":1,"generation":9}"#, "it names gen-000009, which is not in"),
    ])
    func aDamagedManifestIsRefusedNamingWhatIsWrong(text: String, message: String) throws {
        let dir = scratch.path
        try text.write(toFile: dir + "/manifest.json", atomically: true, encoding: .utf8)
        do {
            _ = try DataLayout.read(dir)
            Issue.record("read a damaged manifest")
        } catch let error as Shard.ShardError {
            #expect(error.kind == .notAShard)
            #expect(error.message.contains(message), "\(error.message)")
            #expect(error.message.contains("manifest.json"))
        }
    }

    @Test func aHeldShardLockSaysWhoHoldsItInTheStoresTerms() throws {
        let path = scratch.path + "/p0.lock"
        let held = try Shard.lock(path, timeout: .zero)
        defer { close(held) }
        // flock locks are per open file: a second open in this process is refused too.
        do {
            let fd = try Shard.lock(path, timeout: .zero)
            close(fd)
            Issue.record("the lock was taken twice")
        } catch let error as Shard.ShardError {
            #expect(error.kind == .locked)
            #expect(error.detail == .held(path: path, waited: .zero))
            #expect(error.message.hasSuffix("stop it or use another data directory"), "\(error.message)")
            #expect(!error.message.contains("--"), "\(error.message)")
        }
    }

    @Test func aGenerationOrTemporaryDirectoryIsNotADataDirectory() throws {
        let dir = scratch.path
        for sub in ["gen-000001", "gen-000002", ".tmp-1"] { try FileManager.default.createDirectory(atPath: dir + "/" + sub, withIntermediateDirectories: true) }
        // Without a manifest or a rebuild lock beside them they are ordinary directories.
        #expect(try DataLayout.read(dir + "/gen-000001").generation == 0)
        try DataLayout.writeManifest(DataLayout.manifestText(generation: 1, priority: .builtIn, shards: [:], note: ""), in: dir)
        for sub in ["gen-000001", ".tmp-1"] {
            do {
                _ = try DataLayout.read(dir + "/" + sub)
                Issue.record("\(sub) was read as a data directory")
            } catch let error as Shard.ShardError {
                #expect(error.kind == .missingDirectory)
                // The store says what to open in its own terms; the command line adds its flag.
                #expect(error.message.contains("open \(dir) instead"), "\(error.message)")
                #expect(!error.message.contains("--"), "\(error.message)")
                let given = dir + "/" + sub
                #expect(error.detail == (sub == ".tmp-1" ? .comparisonDirectory(directory: given, parent: dir) : .generation(directory: given, parent: dir)))
            }
        }
        // Nor is a symbolic link to one.
        let link = scratch.path + "-link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir + "/gen-000001")
        defer { try? FileManager.default.removeItem(atPath: link) }
        #expect(throws: Shard.ShardError.self) { try DataLayout.read(link) }
        // A rebuild's own staging is one.
        #expect(FileManager.default.createFile(atPath: dir + "/gen-000002/rebuild.json", contents: Data("{}".utf8)))
        #expect(try DataLayout.read(dir + "/gen-000002").generation == 0)
    }

    @Test func shardFileNamesGiveTheirPartition() {
        #expect(Shard.partition(ofFile: "health-samples-0003.sqlite", topic: "health-samples") == 3)
        #expect(Shard.partition(ofFile: "health-samples-12345.sqlite", topic: "health-samples") == 12345)
        #expect(Shard.partition(ofFile: "health-samples-3.sqlite", topic: "health-samples") == nil)
        #expect(Shard.partition(ofFile: "health-samples-00-3.sqlite", topic: "health-samples") == nil)
        #expect(Shard.partition(ofFile: "other-0003.sqlite", topic: "health-samples") == nil)
        #expect(Shard.partition(ofFile: "health-samples-0003.sqlite-wal", topic: "health-samples") == nil)
    }
}
