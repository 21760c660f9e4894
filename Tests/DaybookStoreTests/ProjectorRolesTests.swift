import DaybookStore
import DaybookTestSupport
import Foundation
import Testing

@Suite struct ProjectorRolesTests {
    let scratch = TemporaryDirectory()

    @Test func rolesReadBackAsWrittenAndADamagedFileIsNamed() throws {
        let dir = scratch.newPath("data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(try ProjectorRoles.read(dir) == nil)
        let roles = ProjectorRoles(member: "rdkafka-\"1\"", clientID: "daybook-a", host: "node-a", pid: 42, running: true,
                                   updatedAt: "2026-12-01T21:00:00Z", topic: "health-samples", partitionCount: 8,
                                   partitioner: "murmur2_random", owned: [0, 2], standby: [1, 3, 5])
        try roles.write(in: dir)
        #expect(try ProjectorRoles.read(dir) == roles)
        try Data("{\"format\": 1, \"running\": true, \"member\": 3}".utf8).write(to: URL(fileURLWithPath: dir + "/" + ProjectorRoles.fileName))
        #expect {
            _ = try ProjectorRoles.read(dir)
        } throws: { error in
            (error as? Shard.ShardError)?.kind == .notAShard && "\(error)".contains("roles.json is damaged (member must be a string)")
        }
    }
}
