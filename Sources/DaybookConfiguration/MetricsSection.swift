import DaybookCore
import DaybookSupport

/// The configuration's `metrics`: entries added to the built-in metric catalogue, each
///
///     {"name": "blood_glucose", "aggregation": "discrete", "unit": "mg/dL",
///      "other_units": {"mmol/L": 18.0182}, "maximum_per_sample": 1000,
///      "health_kit": ["HKQuantityTypeIdentifierBloodGlucose"]}
///
/// `name`, `aggregation`, `unit` and `maximum_per_sample` are required; `other_units` (each
/// unit's factor to `unit`) and `health_kit` (the Apple Health quantity types that import
/// as it) are not. Every refusal names the member (`metrics[0].aggregation`). The entries
/// take the places after the built-in ones in the order listed, and a shard records them
/// (`MetricCatalogue.record`): reorder, rename or change the rule of one and the shards ask
/// for a rebuild; add one at the end and they go on.
enum MetricsSection {
    static let members = ["name", "aggregation", "unit", "other_units", "maximum_per_sample", "health_kit"]

    /// The entries `json` (the `metrics` member) adds, checked.
    static func read(_ json: JSONValue) throws(ConfigurationError) -> [MetricDefinition] {
        guard case .array(let items) = json else {
            throw ConfigurationError(field: "metrics", message: "must be a list of metrics to add to the catalogue ({\"name\", \"aggregation\", \"unit\", \"maximum_per_sample\", ...}), got \(json.summary)")
        }
        let room = MetricCatalogue.maximumEntries - MetricCatalogue.builtIn.count
        guard items.count <= room else {
            throw ConfigurationError(field: "metrics", message: "lists \(items.count) metrics; at most \(room) can be added to the \(MetricCatalogue.builtIn.count) built in")
        }
        var out: [MetricDefinition] = []
        for (i, item) in items.enumerated() {
            out.append(try entry(item, "metrics[\(i)]", before: out))
        }
        return out
    }

    private static func entry(_ item: JSONValue, _ path: String, before: [MetricDefinition]) throws(ConfigurationError) -> MetricDefinition {
        guard case .object(let o) = item else {
            throw ConfigurationError(field: path, message: "must be an object ({\"name\", \"aggregation\", \"unit\", \"maximum_per_sample\", ...}), got \(item.summary)")
        }
        for key in o.keys.sorted() where !members.contains(key) {
            throw ConfigurationError(field: "\(path).\(key)", message: "unknown member; use \(members.joined(separator: ", "))")
        }
        for key in ["name", "aggregation", "unit", "maximum_per_sample"] where o[key] == nil {
            throw ConfigurationError(field: "\(path).\(key)", message: "is missing; a metric needs name, aggregation, unit and maximum_per_sample")
        }
        let name = try text(o["name"], "\(path).name")
        guard isName(name) else {
            throw ConfigurationError(field: "\(path).name", message: "\(JSONWriter.quoted(name)) is not a metric name: lower-case letters, digits and _, starting with a letter, at most 64")
        }
        if name == "default" {
            throw ConfigurationError(field: "\(path).name", message: "\"default\" is the priority's default order, not a metric name; give the metric another name")
        }
        if MetricCatalogue.builtIn.contains(where: { $0.name == name }) {
            throw ConfigurationError(field: "\(path).name", message: "\(JSONWriter.quoted(name)) is a built-in metric; give the added one another name")
        }
        if before.contains(where: { $0.name == name }) {
            throw ConfigurationError(field: "\(path).name", message: "\(JSONWriter.quoted(name)) is added twice")
        }
        let aggregationText = try text(o["aggregation"], "\(path).aggregation")
        guard let aggregation = Aggregation(rawValue: aggregationText) else {
            throw ConfigurationError(field: "\(path).aggregation", message: "\(JSONWriter.quoted(aggregationText)) is not an aggregation; use one of \(Aggregation.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let unit = try text(o["unit"], "\(path).unit")
        guard isUnit(unit) else {
            throw ConfigurationError(field: "\(path).unit", message: "\(JSONWriter.quoted(unit)) is not a unit: printable ASCII without spaces, at most 32")
        }
        var units = [MetricUnit(unit, 1)]
        if let others = o["other_units"] {
            guard case .object(let members) = others else {
                throw ConfigurationError(field: "\(path).other_units", message: "must be an object of unit: factor (the factor converts a value in the unit to \(unit)), got \(others.summary)")
            }
            for other in members.keys.sorted() {
                let field = "\(path).other_units.\(other)"
                guard isUnit(other) else {
                    throw ConfigurationError(field: field, message: "\(JSONWriter.quoted(other)) is not a unit: printable ASCII without spaces, at most 32")
                }
                guard other != unit else {
                    throw ConfigurationError(field: field, message: "is the metric's unit itself (factor 1); list only the other units")
                }
                // Within 1e-9 ... 1e9 (ng to g, and back): a factor beyond that is a typo, and
                // a subnormal one would turn readings into 0.
                guard case .number(let factor)? = members[other], factor.isFinite, factor >= 1e-9, factor <= 1e9 else {
                    throw ConfigurationError(field: field, message: "must be a positive number from 1e-9 to 1e9, the factor that converts a value in \(other) to \(unit), got \(members[other]?.summary ?? "nothing")")
                }
                units.append(MetricUnit(other, factor))
            }
        }
        guard case .number(let maximum)? = o["maximum_per_sample"], maximum.isFinite, maximum >= 1e-6, maximum <= 1e15 else {
            throw ConfigurationError(field: "\(path).maximum_per_sample", message: "must be a positive number from 1e-6 to 1e15, the largest value one sample may carry in \(unit) (larger is a producer bug), got \(o["maximum_per_sample"]?.summary ?? "nothing")")
        }
        var types: [String] = []
        if let list = o["health_kit"] {
            guard case .array(let items) = list else {
                throw ConfigurationError(field: "\(path).health_kit", message: "must be a list of Apple Health quantity types, got \(list.summary)")
            }
            for (k, item) in items.enumerated() {
                let field = "\(path).health_kit[\(k)]"
                let type = try text(item, field)
                guard type.hasPrefix("HKQuantityTypeIdentifier"), type.count > "HKQuantityTypeIdentifier".count else {
                    throw ConfigurationError(field: field, message: "\(JSONWriter.quoted(type)) is not an Apple Health quantity type (HKQuantityTypeIdentifier…); category types need a mapping of their values and cannot be added")
                }
                if let owner = (MetricCatalogue.builtIn + before).first(where: { $0.healthKit.contains(type) }) {
                    throw ConfigurationError(field: field, message: "\(type) already imports as \(owner.name)")
                }
                guard !types.contains(type) else {
                    throw ConfigurationError(field: field, message: "\(type) is listed twice")
                }
                types.append(type)
            }
        }
        return MetricDefinition(name: name, units: units, maximumPerSample: maximum, aggregation: aggregation, healthKit: types)
    }

    private static func text(_ v: JSONValue?, _ path: String) throws(ConfigurationError) -> String {
        guard case .string(let s)? = v, !s.isEmpty else {
            throw ConfigurationError(field: path, message: "must be a non-empty string, got \(v?.summary ?? "nothing")")
        }
        return s
    }

    /// `blood_glucose`: what events, rows, queries and the shards' record can carry as is.
    static func isName(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard let first = bytes.first, (97...122).contains(first), bytes.count <= 64 else { return false }
        return bytes.allSatisfy { $0 == 95 || (48...57).contains($0) || (97...122).contains($0) }
    }

    /// `mg/dL`, `%`, `count/min`: printable ASCII, no space (nor `:` or `;`, which the shards'
    /// record of the catalogue separates with).
    static func isUnit(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        return !bytes.isEmpty && bytes.count <= 32 && bytes.allSatisfy { $0 > 32 && $0 < 127 && $0 != 58 && $0 != 59 }
    }
}
