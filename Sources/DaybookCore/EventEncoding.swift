import DaybookSupport

extension Event {
    /// The event as one line of the log (format version 1, canonical units), which
    /// `EventDecoder` reads back as the same event.
    public var jsonLine: String {
        switch self {
        case .sampleAdded(let s):
            return "{\"type\":\"sample-added\",\"user\":\(JSONWriter.quoted(s.user)),\"sample\":{\"uuid\":\(JSONWriter.quoted(s.uuid)),\"metric\":\"\(s.metric.rawValue)\",\"source\":\(JSONWriter.quoted(s.source)),\"start\":\"\(s.start)\",\"end\":\"\(s.end)\",\"value\":\(JSONWriter.number(s.value)),\"unit\":\"\(s.metric.canonicalUnit)\",\"zone\":\(JSONWriter.quoted(s.zone))\(s.version == 0 ? "" : ",\"version\":\(s.version)")}}"
        case .sampleDeleted(let user, let uuid):
            return "{\"type\":\"sample-deleted\",\"user\":\(JSONWriter.quoted(user)),\"uuid\":\(JSONWriter.quoted(uuid))}"
        case .sourceCheckedIn(let c):
            let metrics = c.metrics.map { ",\"metrics\":[" + $0.map { "\"\($0.rawValue)\"" }.joined(separator: ",") + "]" } ?? ""
            return "{\"type\":\"source-checked-in\",\"user\":\(JSONWriter.quoted(c.user)),\"source\":\(JSONWriter.quoted(c.source)),\"at\":\"\(c.at)\"\(metrics)}"
        }
    }
}
