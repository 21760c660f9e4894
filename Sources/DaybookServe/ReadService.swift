import DaybookCore
import DaybookHTTP
import DaybookKafka
import DaybookLog
import DaybookStore
import DaybookSupport
import Foundation
import Synchronization

/// How a `ReadService` answers and listens.
public struct ReadServiceConfiguration: Sendable {
    /// The projector's data directory (read-only here).
    public var dataDirectory: String
    /// Default: `health-samples`.
    public var topic = "health-samples"
    /// The address to bind. Default: loopback. Another address needs `tokens`.
    public var host = "127.0.0.1"
    /// Default: 8080; 0 picks a free port (`ReadService.port`).
    public var port: UInt16 = 8080
    /// Threads answering requests. Default: 2.
    public var threads = 2
    /// Who may read what; nil: everyone (only on loopback).
    public var tokens: AccessTokens?
    /// The cluster and group, to route each user to the member that owns them; nil: this
    /// data directory answers for every user (partitions from its roles file).
    public var cluster: (any ClusterView)?
    /// This member's own URL (`serve --advertise`), as its projector advertises it, so that
    /// it knows itself in the group's claims.
    public var advertisedURL: String?
    /// `/readyz` answers 503 while an owned shard is more than this many messages behind
    /// the log (when its end is known). Default: nil (lag is not checked).
    public var maxLag: Int64?
    /// What rows are read through. Default: the shards of `dataDirectory`.
    public var model: (any ReadModel)?
    /// Where failures the client is not told the details of go (never a token). Default: silent.
    public var logger: Logger = .silent
    /// Takes phones' syncs (`POST /v1/users/{user}/syncs`); nil: that route answers 501.
    /// Needs `tokens`. `stop()` closes it.
    public var ingest: SyncIngest?

    public init(dataDirectory: String) { self.dataDirectory = dataDirectory }
}

/// Why a read service cannot start.
public struct ReadServiceError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A non-loopback address without tokens: anyone on the network could read every user.
        case unauthenticatedListen
        /// Syncs without tokens: anyone could write any user's data.
        case unauthenticatedIngest
        /// The server did not start (the port is taken, the address is not this host's).
        case server
    }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

/// The read service of issue 28: `daybook serve`, or an embedding service's. Answers
/// `GET /v1/users/{user}/totals` and `…/days/{day}/explain` from the user's shard (or
/// redirects to the member that owns it), and `/healthz`, `/readyz`, `/metrics`.
///
///     var configuration = ReadServiceConfiguration(dataDirectory: "/var/lib/daybook")
///     configuration.port = 8080
///     let service = try ReadService(configuration)
///     try service.start()
///     …
///     service.stop()
///
/// `handle(_:)` answers one request without a socket (tests drive it directly); the
/// server calls it on several threads at once.
public final class ReadService: Sendable {
    public let configuration: ReadServiceConfiguration
    private let model: any ReadModel
    private let metrics = ReadMetrics()
    private let server = Mutex<HTTPServer?>(nil)
    private let rolesCache = Mutex<(at: ContinuousClock.Instant, roles: ProjectorRoles?)?>(nil)

    /// Checks `configuration`: a `host` other than loopback without `tokens` is refused
    /// (`.unauthenticatedListen`), and so is an `ingest` without `tokens` (`.unauthenticatedIngest`).
    public init(_ configuration: ReadServiceConfiguration) throws(ReadServiceError) {
        if configuration.ingest != nil, configuration.tokens == nil {
            throw ReadServiceError(kind: .unauthenticatedIngest, message: "taking syncs without tokens would let anyone who reaches the service write any user's data: give a tokens file")
        }
        if configuration.tokens == nil, !Self.isLoopback(configuration.host) {
            throw ReadServiceError(kind: .unauthenticatedListen, message: "listening on \(configuration.host) without tokens would let anyone who reaches it read every user's data: give a tokens file, or listen on loopback (127.0.0.1, ::1) behind a proxy that authenticates")
        }
        self.configuration = configuration
        model = configuration.model ?? ShardReadModel(directory: configuration.dataDirectory, topic: configuration.topic, threads: configuration.threads)
    }

    /// Whether `host` is a loopback address: `localhost`, 127.0.0.0/8 or `::1`.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Starts listening (`port` says where).
    public func start() throws(ReadServiceError) {
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.threads = configuration.threads
        if let ingest = configuration.ingest { http.maxBodyBytes = max(http.maxBodyBytes, ingest.configuration.maxBodyBytes) }
        let started: HTTPServer
        do {
            started = try HTTPServer(http, asyncHandler: { [self] request, responder in
                self.handle(request) { responder.respond($0) }
            })
        } catch {
            // The server's messages name the address already ("cannot listen on 127.0.0.1:8080: …").
            throw ReadServiceError(kind: .server, message: error.message)
        }
        server.withLock { $0 = started }
    }

    /// The port listened on; nil before `start`.
    public var port: UInt16? { server.withLock { $0?.port } }

    /// Stops listening; returns when no request is being answered. Then closes the ingest
    /// (batches still waiting for the cluster are answered 503).
    public func stop() {
        let running = server.withLock { server -> HTTPServer? in
            defer { server = nil }
            return server
        }
        running?.stop()
        configuration.ingest?.close()
    }

    // MARK: Answering

    /// Answers one request through `respond`: a read at once (as `handle(_:)`), a sync once
    /// its batch is delivered or refused (`SyncIngest`), from another thread.
    public func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let clock = ContinuousClock.now
        // Only a POST can be a sync: a read is routed once, by `handle(_:)`.
        if request.method == "POST", let ingest = configuration.ingest, let tokens = configuration.tokens,
           case .sync(let user)? = try? ReadRoute(request) {
            let authorization = request.header("Authorization")
            let caller = tokens.caller(authorization: authorization)
            let metrics = self.metrics
            let answer: @Sendable (HTTPResponse) -> Void = { response in
                metrics.record(route: "syncs", code: response.status, seconds: (ContinuousClock.now - clock).seconds)
                respond(response)
            }
            if let refusal = tokens.refusal(of: .sync(user: user), caller: caller, authorization: authorization) { return answer(refusal.response) }
            guard let caller else { return answer(ReadError(status: 500, code: "internal", message: "no caller for an accepted token").response) }
            return ingest.handle(request, user: user, caller: caller, respond: answer)
        }
        respond(handle(request))
    }

    /// Answers one request at once: routed, authorized, placed, read, rendered; never throws,
    /// never traps on what a client sends. A sync is answered only by
    /// `handle(_:respond:)` (here: 501 with an ingest, as without one).
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let clock = ContinuousClock.now
        var routeName = "other"
        let response: HTTPResponse
        do throws(ReadError) {
            let route = try ReadRoute(request)
            routeName = route.name
            if let tokens = configuration.tokens, let refusal = tokens.refusal(of: route, authorization: request.header("Authorization")) {
                throw refusal
            }
            response = try answer(route, target: request.target)
        } catch {
            if routeName == "other", let target = try? RequestTarget(parsing: request.target) { routeName = ReadRoute.name(ofPath: target.segments) }
            response = error.response
        }
        metrics.record(route: routeName, code: response.status, seconds: (ContinuousClock.now - clock).seconds)
        return response
    }

    private func answer(_ route: ReadRoute, target: String) throws(ReadError) -> HTTPResponse {
        switch route {
        case .health:
            return .json(200, "{\"status\":\"ok\"}")
        case .ready:
            return readiness()
        case .metrics:
            let offsets = (try? model.nextOffsets()) ?? [:]
            let ingest = configuration.ingest
            return .text(200, metrics.text(offsets: offsets, lags: lags(offsets)) { ingest?.renderMetrics(into: &$0) }, type: "text/plain; version=0.0.4; charset=utf-8")
        case .sync:
            throw ReadError(status: 501, code: "not_implemented", message: "this service takes no syncs: it was started without an ingest (SyncIngest)")
        case .totals(let q):
            let (partition, role) = try place(user: q.user, target: target, staleOK: q.staleOK)
            switch q.bucket {
            case .day:
                let read = try reading { () throws(ReadModelError) in try model.days(partition: partition, user: q.user, metric: q.metric, from: q.from, to: q.to) }
                let asOf = asOf(partition, read.nextOffset, role)
                return dataResponse(ReadJSON.days(read.rows, sources: q.sources, asOf: asOf), asOf)
            case .hour:
                let read = try reading { () throws(ReadModelError) in try model.hours(partition: partition, user: q.user, metric: q.metric, from: q.from, to: q.to) }
                let asOf = asOf(partition, read.nextOffset, role)
                return dataResponse(ReadJSON.hours(user: q.user, metric: q.metric, read.rows, sources: q.sources, asOf: asOf), asOf)
            }
        case .explain(let q):
            let (partition, role) = try place(user: q.key.user, target: target, staleOK: q.staleOK)
            let read = try reading { () throws(ReadModelError) in try model.explain(partition: partition, q.key) }
            let asOf = asOf(partition, read.nextOffset, role)
            return dataResponse(ReadJSON.explain(read.rows, asOf: asOf), asOf)
        }
    }

    private func dataResponse(_ body: String, _ asOf: AsOf) -> HTTPResponse {
        var headers = [HTTPHeader("X-Daybook-Partition", String(asOf.partition)), HTTPHeader("Cache-Control", "no-store")]
        if let lag = asOf.lag { headers.append(HTTPHeader("X-Daybook-Lag", String(lag))) }
        return .json(200, body, headers: headers)
    }

    private func asOf(_ partition: Int32, _ nextOffset: Int64, _ role: Placement.Role) -> AsOf {
        AsOf(partition: partition, nextOffset: nextOffset, lag: lag(partition, nextOffset), role: role)
    }

    private func lag(_ partition: Int32, _ nextOffset: Int64) -> Int64? {
        guard let end = configuration.cluster?.logEnd(partition), end >= nextOffset else { return nil }
        return end - nextOffset
    }

    private func lags(_ offsets: [Int32: Int64]) -> [Int32: Int64] {
        guard configuration.cluster != nil else { return [:] }
        return offsets.reduce(into: [:]) { out, entry in if let lag = lag(entry.key, entry.value) { out[entry.key] = lag } }
    }

    private func reading<T>(_ body: () throws(ReadModelError) -> T) throws(ReadError) -> T {
        do {
            return try body()
        } catch {
            switch error.kind {
            case .notAvailable:
                throw ReadError(status: 501, code: "not_implemented", message: error.message)
            case .unreadable:
                // The details name files of this host: the log has them, the client not.
                configuration.logger.error("reading the shards: \(error.message)")
                throw ReadError(status: 503, code: "unavailable", message: "the shards cannot be read now; retry later (the service's log says why)",
                                headers: [HTTPHeader("Retry-After", String(Placement.retryAfterSeconds))])
            }
        }
    }

    // MARK: Placement

    /// The roles file of the data directory, read at most once a second.
    private func roles() -> ProjectorRoles? {
        if let cached = rolesCache.withLock({ $0 }), ContinuousClock.now - cached.at < .seconds(1) { return cached.roles }
        // Damaged or missing: nothing is known of this member's roles (the shards still read).
        let roles = (try? ProjectorRoles.read(configuration.dataDirectory)) ?? nil
        rolesCache.withLock { $0 = (.now, roles) }
        return roles
    }

    /// The user's partition, and where the read is answered (throws the redirect or 503).
    private func place(user: String, target: String, staleOK: Bool) throws(ReadError) -> (Int32, Placement.Role) {
        let roles = roles()
        let partition: Int32
        if let cluster = configuration.cluster {
            partition = cluster.partitioner.partition(ofKey: user.utf8, count: cluster.partitionCount)
        } else if let roles, let partitioner = Partitioner(rawValue: roles.partitioner), roles.partitionCount > 0 {
            partition = partitioner.partition(ofKey: user.utf8, count: roles.partitionCount)
        } else {
            throw ReadError(status: 503, code: "not_ready",
                            message: "this member cannot tell a user's partition yet: its data directory has no \(ProjectorRoles.fileName) (no projector has run there) and no cluster is asked; start the projector, or serve with --brokers",
                            headers: [HTTPHeader("Retry-After", String(Placement.retryAfterSeconds))])
        }
        var group: GroupAssignment?
        if let cluster = configuration.cluster {
            do {
                group = try cluster.assignment()
            } catch {
                configuration.logger.warning("asking the group: \(error)")
                throw ReadError(status: 503, code: "unavailable", message: "the consumer group cannot be asked now: retry shortly",
                                headers: [HTTPHeader("Retry-After", String(Placement.retryAfterSeconds)), HTTPHeader("X-Daybook-Partition", String(partition))])
            }
        }
        let here = Placement.Member(memberID: roles?.running == true ? roles?.member : nil, url: configuration.advertisedURL, standby: Set(roles?.standby ?? []))
        switch Placement.decide(partition: partition, target: target, here: here, group: group, staleOK: staleOK) {
        case .answerHere(let role):
            return (partition, role)
        case .redirect(let location):
            throw ReadError(status: 307, code: "not_owner", message: "partition \(partition) is owned by another member: ask it at the Location given",
                            headers: [HTTPHeader("Location", location), HTTPHeader("X-Daybook-Partition", String(partition))])
        case .unavailable(let reason, let retry):
            throw ReadError(status: 503, code: "unavailable", message: reason,
                            headers: [HTTPHeader("Retry-After", String(retry)), HTTPHeader("X-Daybook-Partition", String(partition))])
        }
    }

    // MARK: Readiness

    /// 200 when the shards can be read, a user's partition can be told, and every shard this
    /// member owns is at most `maxLag` behind the log (where its end is known); else 503
    /// with the reason.
    func readiness() -> HTTPResponse {
        let notReady = { (reason: String) in
            HTTPResponse.json(503, "{\"ready\":false,\"reason\":\(JSONWriter.quoted(reason))}", headers: [HTTPHeader("Retry-After", String(Placement.retryAfterSeconds))])
        }
        let offsets: [Int32: Int64]
        do {
            offsets = try model.nextOffsets()
        } catch {
            configuration.logger.error("readiness: \(error.message)")
            return notReady("the shards cannot be read (the service's log says why)")
        }
        let roles = roles()
        guard configuration.cluster != nil || roles != nil else {
            return notReady("no \(ProjectorRoles.fileName) in the data directory yet (no projector has run there) and no cluster is asked: a user's partition cannot be told")
        }
        var owned = Set(roles?.owned ?? [])
        if let cluster = configuration.cluster {
            guard let group = try? cluster.assignment() else { return notReady("the consumer group cannot be asked") }
            let mine = group.members.filter { m in (roles?.running == true && m.memberID == roles?.member) || (m.url != nil && m.url == configuration.advertisedURL) }
            owned = Set(mine.flatMap(\.partitions))
        }
        let lags = lags(offsets.merging(owned.map { ($0, offsets[$0] ?? 0) }) { a, _ in a })
        if let maxLag = configuration.maxLag {
            let behind = owned.sorted().compactMap { p in lags[p].flatMap { $0 > maxLag ? "partition \(p) is \($0) behind" : nil } }
            if !behind.isEmpty { return notReady(behind.joined(separator: ", ") + " (more than --max-lag \(maxLag))") }
        }
        let list = owned.sorted().map { p in "{\"partition\":\(p),\"next_offset\":\(offsets[p] ?? 0),\"lag\":\(lags[p].map(String.init) ?? "null")}" }
        return .json(200, "{\"ready\":true,\"owned\":[\(list.joined(separator: ","))]}")
    }
}
