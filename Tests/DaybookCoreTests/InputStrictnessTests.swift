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
