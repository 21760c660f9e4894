import DaybookConfiguration
import DaybookCore
import DaybookKafka
import DaybookPipeline
import DaybookSupport
import Foundation

/// `daybook locate`: which partition, shard and group member hold a user's totals.
enum LocateCommand: Subcommand {
    static let name = "locate"
    static let abstract = "Say which partition, shard file and group member hold a user's totals."
    static let usage = "locate --user U (--partitions N | --brokers B) [--group G] [--config FILE] [--format table|json]"
    static let options = [
        OptionSpec(name: "--user", value: "U", help: "The user id, exactly as in the events (their Kafka key)."),
        OptionSpec(name: "--partitions", value: "N", help: "The topic's partition count, when no cluster is asked."),
        KafkaOptions.brokers,
        OptionSpec(name: "--group", value: "G", help: "Also name the member of consumer group G that holds the partition now (needs --brokers)."),
        SharedOptions.config("kafka.partitioner (how producers place keys; default murmur2_random) and Kafka settings."),
        SharedOptions.topic(),
        SharedOptions.format("table (default) or json (one object: user, partition, shard, owner)."),
        KafkaOptions.connectTimeout,
    ]
    static let discussion = """
    A user's events all go to one partition, the one the producers' partitioner gives the
    user's key (kafka.partitioner, as 'daybook publish' and the projector use it), so a
    user's totals are in one shard file (health-samples-0003.sqlite for partition 3), in
    the data directory of the group member that owns that partition. A read service
    routes a request for a user to that member: it asks this once per user (or calls UserLocator in DaybookPipeline, which
    keeps the partition count and refreshes the group's assignment every 5 s).

    With --partitions N nothing is asked of the cluster: the answer is the partitioner's
    arithmetic. With --brokers the partition count comes from the cluster. With --group the
    owner is the member the group's coordinator says holds the partition (client id, host);
    where the cluster does not describe groups (the embedded broker) it is the member that
    last started the partition, as projectors claim in their commits: a member killed
    with -9 stays named until the group gives its partitions to another (session timeout).
    owner is null without --group, or when no member holds the partition.

    Without --brokers, a --config given without --partitions names the cluster
    (kafka.bootstrap.servers).

    EXIT CODES: 0 found; 64 usage (no --user, neither or both of --partitions and
    --brokers, --group without --brokers); 69 the cluster did not answer within
    --connect-timeout, or the topic is missing; 78 bad configuration.

    EXAMPLES:
      daybook locate --user ana --partitions 16
      daybook locate --user ana --brokers localhost:9092 --group daybook-projector --format json
      {"user":"ana","partition":3,"shard":"health-samples-0003.sqlite","owner":{"member_id":"…","client_id":"daybook-b","host":"node-b"}}
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("locate takes no positional arguments") }
        guard let user = arguments.value("--user") else { throw CLIError.usage("locate needs --user U") }
        guard !user.isEmpty else { throw CLIError.usage("--user is empty; give the user id as in the events") }
        let format = try arguments.format(["table", "json"])
        let topic = try arguments.topic(default: "health-samples")
        _ = try KafkaOptions.connectTimeout(arguments)
        let hasCount = arguments.value("--partitions") != nil
        // The cluster is --brokers, or else (as for every command) kafka.bootstrap.servers
        // of a --config given without --partitions.
        let asksCluster = arguments.value("--brokers") != nil || (!hasCount && arguments.value("--config") != nil)
        guard hasCount != asksCluster else {
            throw CLIError.usage(hasCount ? "give --partitions N or --brokers B, not both" : "locate needs --partitions N (the topic's partition count) or --brokers B (to ask the cluster)")
        }
        let location: UserLocation
        if hasCount {
            guard arguments.value("--group") == nil else { throw CLIError.usage("--group needs --brokers (the group is asked of the cluster)") }
            let count = try arguments.integer("--partitions", default: 1, in: 1...100_000)
            let config = try DaybookConfiguration.load(arguments.value("--config"))
            location = UserLocator.locate(user: user, count: count, partitioner: config.producer.partitioner, topic: topic)
        } else {
            var (config, timeout) = try KafkaOptions.load(arguments, command: "locate")
            if let group = arguments.value("--group") { config.consumer.groupID = try StatusCommand.groupName(group) }
            let access = LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer)
            let locator = try UserLocator(access: access, topic: topic, group: arguments.value("--group") != nil, timeout: timeout)
            location = try locator.locate(user: user)
        }
        if format == "json" { return emit(json(location) + "\n") }
        var text = "user \(TerminalText.cell(location.user)): partition \(location.partition), shard \(location.shard)\n"
        if arguments.value("--group") != nil {
            text += "owner: " + (location.owner.map { "\(TerminalText.cell($0.clientID)) on \(TerminalText.cell($0.host)) (member \(TerminalText.cell($0.memberID)))" } ?? "no member holds it now") + "\n"
        }
        return emit(text)
    }

    static func json(_ location: UserLocation) -> String {
        "{\"user\":\(JSONWriter.quoted(location.user)),\"partition\":\(location.partition),\"shard\":\(JSONWriter.quoted(location.shard)),\"owner\":\(StatusCommand.json(location.owner))}"
    }
}
