import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookTestSupport
import Foundation
import Testing

/// `DaybookConfiguration.load` in process: typed errors for each way a file can be wrong,
/// and the settings a good file gives.
@Suite struct ConfigurationLoadTests {
    let scratch = TemporaryDirectory()

    @Test func noFileGivesTheDefaults() throws {
        let config = try DaybookConfiguration.load(nil, environment: [:])
        #expect(config.cacheMegabytes == 32)
        #expect(config.batchMegabytes == 72)
        #expect(config.priority == SourcePriority.builtIn)
        #expect(config.freshness == FreshnessPolicy())
    }

    @Test func aMissingFileIsUnreadableNotWrong() throws {
        let path = scratch.newPath("config")
        do {
            _ = try DaybookConfiguration.load(path, environment: [:])
            Issue.record("a missing file was accepted")
        } catch {
            guard case .missing = error.kind else { Issue.record("kind \(error.kind)"); return }
            #expect(error.isUnreadable)
            #expect(error.description == "\(path): no such file")
        }
    }

    @Test func aDirectoryIsUnreadable() throws {
        do {
            _ = try DaybookConfiguration.load(scratch.path, environment: [:])
            Issue.record("a directory was accepted")
        } catch {
            guard case .unreadable(let code) = error.kind else { Issue.record("kind \(error.kind)"); return }
            #expect(code == EISDIR)
            #expect(error.description == "\(scratch.path): cannot be read: Is a directory")
        }
    }

    @Test func notJSONAndAWrongMemberAreNotUnreadable() throws {
        let garbage = try scratch.file("{\"priority\": [", suffix: ".json")
        do {
            _ = try DaybookConfiguration.load(garbage, environment: [:])
            Issue.record("bad JSON was accepted")
        } catch {
            guard case .notJSON = error.kind else { Issue.record("kind \(error.kind)"); return }
            #expect(!error.isUnreadable)
            #expect(error.description.hasPrefix("\(garbage): not valid JSON: "))
        }
        let typo = try scratch.file(#"{"kafka": {"producer": {"linger": 5}}}"#, suffix: ".json")
        do {
            _ = try DaybookConfiguration.load(typo, environment: [:])
            Issue.record("an unknown member was accepted")
        } catch {
            guard case .invalid(let member) = error.kind else { Issue.record("kind \(error.kind)"); return }
            #expect(member.field == "kafka.producer.linger")
            #expect(!error.isUnreadable)
        }
    }

    @Test func aGoodFileSetsEverySection() throws {
        // A byte order mark in front, as some editors write it, is skipped.
        let text = "\u{FEFF}" + #"""
        {"priority": {"default": ["phone", "watch"]},
         "kafka": {"bootstrap.servers": "k1:9092", "partitioner": "consistent_random",
                   "secrets": {"sasl.password": "DAYBOOK_TEST_SECRET"},
                   "producer": {"linger.ms": 7}, "consumer": {"group.id": "g2", "prefetch_mb": 3}},
         "state": {"cache_mb": 5, "batch_mb": 7, "batch_delay_ms": 60000},
         "freshness": {"default": {"threshold": "6h"}, "sources": {"manual": {"threshold": "never"}},
                       "canaries": [{"user": "canary", "source": "watch"}]}}
        """#
        let path = try scratch.file(text, suffix: ".json")
        let config = try DaybookConfiguration.load(path, brokers: "override:9092", environment: ["DAYBOOK_TEST_SECRET": "s3"])
        #expect(config.priority.defaultOrder.prefix(2) == ["phone", "watch"])
        #expect(config.connection.bootstrapServers == "override:9092")
        #expect(config.connection.secrets["sasl.password"] == "s3")
        #expect(config.producer.partitioner == .consistentRandom)
        #expect(config.producer.lingerMilliseconds == 7)
        #expect(config.consumer.groupID == "g2")
        #expect(config.consumer.prefetchBytes == 3 << 20)
        #expect(config.cacheMegabytes == 5)
        #expect(config.batchMegabytes == 7)
        #expect(config.batchDelayMilliseconds == 60_000)
        // 6 h = 21,600 s for every source but manual, which is never stale.
        #expect(config.freshness.rule(for: "watch").threshold == .seconds(21_600))
        #expect(config.freshness.rule(for: "manual").threshold == nil)
        #expect(config.freshness.canaries == [SyncKey(user: "canary", source: "watch")])

        // Without resolving secrets, the variable need not be set.
        let offline = try DaybookConfiguration.load(path, resolvingSecrets: false, environment: [:])
        #expect(offline.connection.secrets.isEmpty)
        do {
            _ = try DaybookConfiguration.load(path, environment: [:])
            Issue.record("an unset secret variable was accepted")
        } catch {
            guard case .invalid(let member) = error.kind else { Issue.record("kind \(error.kind)"); return }
            #expect(member.field == "kafka.secrets.sasl.password")
        }
    }
}
