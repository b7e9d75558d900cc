/// A control request decoded into its verb and that verb's own arguments.
public enum ControlRequest: Sendable, Equatable {
    case ping
    case start(StartRequest)
    case list(ListRequest)
    case show(ShowRequest)
    case kill(KillRequest)
    case reap(ReapRequest)
    case probe(ProbeRequest)
    case passwd(PasswdRequest)
    case url(UrlRequest)
    case history(HistoryRequest)
    case status
    case logs(LogsRequest)
    case metrics
    case desktops
    case extend(ExtendRequest)

    /// The verb of a decoded wire request, with its arguments checked.
    public init(_ wire: Request) throws(DeskError) {
        self = switch wire.command {
        case .ping: .ping
        case .start: .start(try StartRequest(wire: wire))
        case .list: .list(try ListRequest(wire: wire))
        case .show: .show(try ShowRequest(wire: wire))
        case .kill: .kill(try KillRequest(wire: wire))
        case .reap: .reap(try ReapRequest(wire: wire))
        case .probe: .probe(try ProbeRequest(wire: wire))
        case .passwd: .passwd(try PasswdRequest(wire: wire))
        case .url: .url(try UrlRequest(wire: wire))
        case .history: .history(try HistoryRequest(wire: wire))
        case .status: .status
        case .logs: .logs(try LogsRequest(wire: wire))
        case .metrics: .metrics
        case .desktops: .desktops
        case .extend: .extend(try ExtendRequest(wire: wire))
        }
    }
}

extension ControlRequest {
    /// The request as it travels (what a client sends).
    public var wire: Request {
        switch self {
        case .ping: Request(command: .ping)
        case .start(let verb): verb.wire
        case .list(let verb): verb.wire
        case .show(let verb): verb.wire
        case .kill(let verb): verb.wire
        case .reap(let verb): verb.wire
        case .probe(let verb): verb.wire
        case .passwd(let verb): verb.wire
        case .url(let verb): verb.wire
        case .history(let verb): verb.wire
        case .status: Request(command: .status)
        case .logs(let verb): verb.wire
        case .metrics: Request(command: .metrics)
        case .desktops: Request(command: .desktops)
        case .extend(let verb): verb.wire
        }
    }
}
