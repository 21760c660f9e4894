import CMicroHTTPD
import Synchronization

/// Answers one request, later and from any thread: what `HTTPServer(_:asyncHandler:)` hands
/// its handler beside the request.
///
///     let server = try HTTPServer(configuration) { request, responder in
///         publisher.publish(batch) { delivered in responder.respond(.json(delivered ? 202 : 503, "{}")) }
///     }
///
/// The first `respond` answers; later ones are ignored. A responder released without
/// answering answers 500. No thread waits while a request does: its connection is
/// suspended in libmicrohttpd until the answer comes.
public final class HTTPResponder: Sendable {
    let pending: PendingAnswer

    init(_ pending: PendingAnswer) { self.pending = pending }

    /// Sends `response` as the answer, unless the request was already answered (by an
    /// earlier call, or 503 by a server that stopped) or its connection is gone.
    /// - Returns: whether this call's response is the answer.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool { pending.respond(response) }

    deinit { pending.respond(RequestLimits.dropped) }
}

/// Asks for one request's answer, which it gives through `responder` now or later.
/// Called on one of the server's threads, possibly on several at once; it should return
/// soon and leave slow work to other threads.
public typealias HTTPAsyncHandler = @Sendable (HTTPRequest, HTTPResponder) -> Void

/// Where one request's answer stands between its handler and libmicrohttpd. Pure: each
/// event returns what the caller must do to the connection.
///
/// A request starts `handling` (its handler runs on the connection's thread). An answer
/// given then is kept and queued when the handler returns; without one, the connection is
/// suspended, and an answer given later resumes it and is queued when libmicrohttpd calls
/// back on the connection's thread. Whatever comes after the first answer, or after the
/// connection closed, is ignored.
struct AnswerState: Sendable {
    enum Stage: Sendable, Equatable {
        case handling
        case suspended
        case ready(HTTPResponse)
        case sent
        case closed
    }

    private(set) var stage: Stage = .handling

    /// What to do after an answer arrives.
    enum AnswerAction: Equatable, Sendable {
        /// Not the answer (one came first, or the connection is gone): nothing to do.
        case ignore
        /// The answer, kept until the handler returns: nothing to do yet.
        case keep
        /// The answer to a suspended connection: resume it.
        case resume
    }

    mutating func answered(_ response: HTTPResponse) -> AnswerAction {
        switch stage {
        case .handling:
            stage = .ready(response)
            return .keep
        case .suspended:
            stage = .ready(response)
            return .resume
        case .ready, .sent, .closed:
            return .ignore
        }
    }

    /// What to do once the handler has returned.
    enum ReturnAction: Equatable, Sendable {
        case queue(HTTPResponse)
        case suspend
        /// Not reachable from a handler's call (the handler returns once, on the connection's
        /// thread, before anything but an answer can happen); the caller closes the connection.
        case close
    }

    mutating func handlerReturned() -> ReturnAction {
        switch stage {
        case .handling:
            stage = .suspended
            return .suspend
        case .ready(let response):
            stage = .sent
            return .queue(response)
        case .suspended, .sent, .closed:
            return .close
        }
    }

    /// The answer to queue when libmicrohttpd calls back on a resumed connection; nil when
    /// there is none (libmicrohttpd then closes the connection).
    mutating func resumed() -> HTTPResponse? {
        guard case .ready(let response) = stage else { return nil }
        stage = .sent
        return response
    }

    /// The connection is gone (answered, closed by the client, or by the server stopping).
    mutating func closed() { stage = .closed }
}

/// One request's `AnswerState` behind a lock, and its connection, which the lock's holder
/// suspends or resumes as the state says. Shared by the connection's thread, the
/// responder's thread and a stopping server.
final class PendingAnswer: Sendable {
    /// A libmicrohttpd connection, touched only under the lock and only while libmicrohttpd
    /// keeps it: from the access handler's call until the request completes, and a
    /// suspended connection is not completed before it is resumed.
    struct Connection: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let state: Mutex<AnswerState>
    private let connection: Connection

    init(_ connection: OpaquePointer) {
        self.state = Mutex(AnswerState())
        self.connection = Connection(pointer: connection)
    }

    @discardableResult
    func respond(_ response: HTTPResponse) -> Bool {
        state.withLock { state in
            switch state.answered(response) {
            case .ignore: return false
            case .keep: return true
            case .resume:
                // Under the lock, so that a stopping server (which takes it before
                // MHD_stop_daemon) never frees the daemon while this call is inside it.
                MHD_resume_connection(connection.pointer)
                return true
            }
        }
    }

    /// On the connection's thread, from the access handler, once the handler returned.
    func handlerReturned() -> AnswerState.ReturnAction {
        state.withLock { state in
            let action = state.handlerReturned()
            if action == .suspend { MHD_suspend_connection(connection.pointer) }
            return action
        }
    }

    func resumed() -> HTTPResponse? { state.withLock { $0.resumed() } }

    func closed() { state.withLock { $0.closed() } }
}
