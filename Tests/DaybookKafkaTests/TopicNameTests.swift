import DaybookKafka
import Testing

@Suite struct TopicNameTests {
    @Test(arguments: ["health-samples", "health-samples.dlq", "a", "A_b-9.x", "...", String(repeating: "x", count: 249)])
    func acceptsKafkaTopicNames(name: String) {
        #expect(TopicName.problem(name) == nil)
    }

    @Test(arguments: [
        ("../../x", "contains '/'"), ("", "is empty"), (".", "reserved"), ("..", "reserved"),
        ("a b", "contains ' '"), ("tópico", "contains 'ó'"), ("x\u{1b}[2J", "contains U+1B"),
        (String(repeating: "x", count: 250), "is 250 characters long; at most 249"),
    ])
    func refusesEverythingElseSayingWhy(name: String, reason: String) throws {
        let problem = try #require(TopicName.problem(name))
        #expect(problem.contains(reason), "\(problem)")
    }
}
