import DaybookCore
import DaybookHTTP

/// A bucket of a totals read: civil days, or civil hours of the winner's zone.
public enum Bucket: String, Sendable, Equatable, CaseIterable {
    case day, hour
}

/// What `GET /v1/users/{user}/totals` asks for, checked.
public struct TotalsQuery: Sendable, Equatable {
    public var user: String
    public var metric: Metric
    public var from: CivilDay
    public var to: CivilDay
    public var bucket: Bucket = .day
    /// `sources=true`: each row's per-source shares.
    public var sources = false
    /// `stale=ok`: a warm standby may answer.
    public var staleOK = false

    public init(user: String, metric: Metric, from: CivilDay, to: CivilDay, bucket: Bucket = .day, sources: Bool = false, staleOK: Bool = false) {
        self.user = user
        self.metric = metric
        self.from = from
        self.to = to
        self.bucket = bucket
        self.sources = sources
        self.staleOK = staleOK
    }
}

/// What `GET /v1/users/{user}/days/{day}/explain` asks for, checked.
public struct ExplainQuery: Sendable, Equatable {
    public var key: DayKey
    public var staleOK = false

    public init(key: DayKey, staleOK: Bool = false) {
        self.key = key
        self.staleOK = staleOK
    }
}

/// A request of the read service, routed and checked: no I/O, so every rule of the URL has a
/// test (`ReadRoute.init(_:)`).
///
///     try ReadRoute(HTTPRequest(method: "GET", target: "/v1/users/ana/totals?metric=steps&from=2024-03-25&to=2024-03-31"))
///     // .totals(TotalsQuery(user: "ana", metric: .steps, …))
public enum ReadRoute: Sendable, Equatable {
    case totals(TotalsQuery)
    case explain(ExplainQuery)
    /// `/healthz`: the process answers.
    case health
    /// `/readyz`: the shards are open and close enough behind the log.
    case ready
    /// `/metrics`: Prometheus text.
    case metrics
    /// `POST /v1/users/{user}/syncs`: a phone's sync batch for `user` (`SyncIngest`).
    case sync(user: String)

    /// The longest range a totals read may span: a leap year.
    public static let maximumDays = 366

    /// The route's name in metrics labels.
    public var name: String {
        switch self {
        case .totals: "totals"
        case .explain: "explain"
        case .health: "healthz"
        case .ready: "readyz"
        case .metrics: "metrics"
        case .sync: "syncs"
        }
    }

    /// The user whose data the route reads; nil for the service's own routes.
    public var user: String? {
        switch self {
        case .totals(let q): q.user
        case .explain(let q): q.key.user
        case .sync(let user): user
        case .health, .ready, .metrics: nil
        }
    }

    /// The name of the route a path would take, for metrics labels of refused requests
    /// (`other` for a path that is no route: the label set stays bounded whatever is asked).
    public static func name(ofPath segments: [String]) -> String {
        switch segments.count {
        case 1 where ["healthz", "readyz", "metrics"].contains(segments[0]): segments[0]
        case 4 where segments[0] == "v1" && segments[1] == "users" && segments[3] == "totals": "totals"
        case 4 where segments[0] == "v1" && segments[1] == "users" && segments[3] == "syncs": "syncs"
        case 6 where segments[0] == "v1" && segments[1] == "users" && segments[3] == "days" && segments[5] == "explain": "explain"
        default: "other"
        }
    }

    /// Routes `request`: the path picks the route (404 for no route), the method must be
    /// the route's, GET or (syncs) POST (405 with `Allow`), and its parameters are checked (400 naming the one at
    /// fault and what it accepts). An unknown query parameter is refused too, so that a
    /// misspelt `form=` is not silently a different question.
    public init(_ request: HTTPRequest) throws(ReadError) {
        let target: RequestTarget
        do {
            target = try RequestTarget(parsing: request.target)
        } catch {
            throw ReadError(status: 400, code: "bad_path", parameter: nil, message: error.message)
        }
        let route = Self.name(ofPath: target.segments)
        guard route != "other" else {
            throw ReadError(status: 404, code: "not_found",
                            message: "no such resource; the routes are GET /v1/users/{user}/totals, GET /v1/users/{user}/days/{day}/explain, POST /v1/users/{user}/syncs, /healthz, /readyz and /metrics")
        }
        let method = route == "syncs" ? "POST" : "GET"
        guard request.method == method else {
            throw ReadError(status: 405, code: "method_not_allowed", message: "\(ReadError.shown(request.method)) is not allowed here; this resource answers \(method)",
                            headers: [HTTPHeader("Allow", method)])
        }
        var query = QueryItems(target.items)
        switch route {
        case "healthz": try query.checkNoneLeft(); self = .health
        case "readyz": try query.checkNoneLeft(); self = .ready
        case "metrics": try query.checkNoneLeft(); self = .metrics
        case "syncs":
            let user = try Self.user(target.segments[2])
            try query.checkNoneLeft()
            self = .sync(user: user)
        case "totals":
            let user = try Self.user(target.segments[2])
            let metric = try query.metric()
            let from = try query.day("from")
            let to = try query.day("to")
            guard from <= to else {
                throw .badParameter("from", "from \(from) is after to \(to): the range would hold no day; give from on or before to")
            }
            guard Int(to.number) - Int(from.number) + 1 <= Self.maximumDays else {
                throw .badParameter("to", "from \(from) to \(to) spans \(Int(to.number) - Int(from.number) + 1) days; a read spans at most \(Self.maximumDays): split it")
            }
            var q = TotalsQuery(user: user, metric: metric, from: from, to: to)
            if let text = try query.take("bucket") {
                guard let bucket = Bucket(rawValue: text) else {
                    throw .badParameter("bucket", "\(ReadError.shown(text)) is not a bucket; use day or hour")
                }
                q.bucket = bucket
            }
            q.sources = try query.flag("sources")
            q.staleOK = try query.staleOK()
            try query.checkNoneLeft()
            self = .totals(q)
        default: // explain
            let user = try Self.user(target.segments[2])
            guard let day = Self.day(target.segments[4]) else {
                throw .badParameter("day", "\(ReadError.shown(target.segments[4])) is not a day; write it YYYY-MM-DD")
            }
            let metric = try query.metric()
            let staleOK = try query.staleOK()
            try query.checkNoneLeft()
            self = .explain(ExplainQuery(key: DayKey(user: user, metric: metric, day: day), staleOK: staleOK))
        }
    }

    static func user(_ text: String) throws(ReadError) -> String {
        if let problem = UserID.problem(text) { throw .badParameter("user", "the user id \(problem)") }
        return text
    }

    /// A civil day written YYYY-MM-DD with digits only (`CivilDay` alone would take a sign).
    static func day(_ text: String) -> CivilDay? {
        guard text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (48...57).contains($0) }) else { return nil }
        return CivilDay(text)
    }
}

/// The query's items, taken one by one, so that what is left over can be refused.
struct QueryItems {
    private var items: [RequestTarget.Item]

    init(_ items: [RequestTarget.Item]) { self.items = items }

    /// The value of `name` (removed), nil when absent; given twice is refused.
    mutating func take(_ name: String) throws(ReadError) -> String? {
        let matching = items.filter { $0.name == name }
        guard matching.count <= 1 else { throw .badParameter(name, "\(name) is given \(matching.count) times; give it once") }
        items.removeAll { $0.name == name }
        return matching.first?.value
    }

    mutating func metric() throws(ReadError) -> Metric {
        let accepted = Metric.acceptedNames
        guard let text = try take("metric") else { throw .badParameter("metric", "metric is required; use one of \(accepted)") }
        guard let metric = Metric(rawValue: text) else { throw .badParameter("metric", "\(ReadError.shown(text)) is not a metric; use one of \(accepted)") }
        return metric
    }

    mutating func day(_ name: String) throws(ReadError) -> CivilDay {
        guard let text = try take(name) else { throw .badParameter(name, "\(name) is required: the \(name == "from" ? "first" : "last") day, YYYY-MM-DD (inclusive)") }
        guard let day = ReadRoute.day(text) else { throw .badParameter(name, "\(ReadError.shown(text)) is not a day; write it YYYY-MM-DD") }
        return day
    }

    mutating func flag(_ name: String) throws(ReadError) -> Bool {
        switch try take(name) {
        case nil, "false"?: return false
        case "true"?: return true
        case let other?: throw .badParameter(name, "\(ReadError.shown(other)) is not true or false")
        }
    }

    mutating func staleOK() throws(ReadError) -> Bool {
        switch try take("stale") {
        case nil: return false
        case "ok"?: return true
        case let other?: throw .badParameter("stale", "\(ReadError.shown(other)) is not accepted; stale=ok lets a warm standby answer (it may lag the log), leave it out otherwise")
        }
    }

    func checkNoneLeft() throws(ReadError) {
        guard let first = items.first else { return }
        throw .badParameter(first.name, "\(ReadError.shown(first.name)) is not a parameter of this resource; totals takes metric, from, to, bucket, sources and stale; explain takes metric and stale")
    }
}
