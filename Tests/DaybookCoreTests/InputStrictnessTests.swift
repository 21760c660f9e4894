@testable import DaybookCore
import Foundation
import Testing

@Suite struct ConfigurationStrictnessTests {
    @Test(arguments: ["[]", "5", "null", #""priority""#])
    func aConfigurationThatIsNotAnObjectIsRefused(text: String) throws {
        let json = try JSONParser.parse(text)
        #expect(throws: ConfigurationError.self) { try SourcePriority(configuration: json) }
    }

    @Test func anObjectWithoutPriorityKeepsTheBuiltInOrder() throws {
        #expect(try SourcePriority(configuration: JSONParser.parse("{}")) == .builtIn)
    }
}

@Suite struct JSONWriterEscapingTests {
    @Test func everyControlCharacterIsEscapedAndRoundTrips() throws {
        let all = String(String.UnicodeScalarView((0..<0xA0).compactMap(Unicode.Scalar.init)))
        let quoted = JSONWriter.quoted(all)
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(quoted.contains("\\u001b") && quoted.contains("\\u007f") && quoted.contains("\\u009b"))
        #expect(try JSONParser.parse(quoted) == .string(all))
    }

    @Test func syntaxErrorsNameBytesNotRawCharacters() {
        for (text, reason) in [("\u{1B}[2J", "unexpected byte 0x1B"), ("\"\\\u{9B}\"", "invalid escape: backslash then byte 0xC2"), ("x", "unexpected character 'x'")] {
            do {
                _ = try JSONParser.parse(text)
                Issue.record("parsed \(text)")
            } catch {
                #expect(error.reason == reason)
            }
        }
    }
}
