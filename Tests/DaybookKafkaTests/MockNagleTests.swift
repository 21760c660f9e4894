@testable import DaybookKafka
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The embedded broker's connections have `TCP_NODELAY`, as a real broker's do
/// (`RDKafkaMockCluster.disableNagle`): librdkafka's mock cluster leaves Nagle's algorithm on,
/// and an answer written in two pieces then waited ~40 ms for the client's delayed ACK.
@Suite struct MockNagleTests {
    /// This process's TCP sockets on local port `port`: whether each listens, and its TCP_NODELAY.
    static func sockets(onPort port: UInt16) -> [(listening: Bool, noDelay: Bool)] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) } ?? []
        var out: [(Bool, Bool)] = []
        for fd in fds {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0, address.sin_family == sa_family_t(AF_INET), UInt16(bigEndian: address.sin_port) == port else { continue }
            var listening: Int32 = 0, noDelay: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0 else { continue }
            size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, &size) == 0 else { continue }
            out.append((listening == 1, noDelay == 1))
        }
        return out
    }

    @Test func theBrokersListenersAndTheConnectionsTheyAcceptHaveNoDelay() throws {
        let broker = try EmbeddedBroker(brokers: 2, topics: [TopicDefinition(name: "t", partitions: 2, replicationFactor: 1)])
        let ports = RDKafkaMockCluster.ports(of: broker.bootstrapServers)
        #expect(ports.count == 2, "\(broker.bootstrapServers)")
        for port in ports {
            // A client connects; the broker's thread accepts it.
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(client) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(connected == 0)
            var accepted: [(listening: Bool, noDelay: Bool)] = []
            for _ in 0..<200 {
                accepted = Self.sockets(onPort: port).filter { !$0.listening }
                if !accepted.isEmpty { break }
                usleep(10_000)
            }
            let listeners = Self.sockets(onPort: port).filter(\.listening)
            #expect(listeners.count == 1 && listeners.allSatisfy(\.noDelay), "port \(port): \(listeners)")
            #expect(!accepted.isEmpty && accepted.allSatisfy(\.noDelay), "port \(port): \(accepted)")
        }
    }

    @Test func portsAreReadFromABootstrapList() {
        #expect(RDKafkaMockCluster.ports(of: "127.0.0.1:4001,127.0.0.1:4002") == [4001, 4002])
        #expect(RDKafkaMockCluster.ports(of: "") == [])
        #expect(RDKafkaMockCluster.disableNagle(listeningOn: []) == 0)
    }
}
