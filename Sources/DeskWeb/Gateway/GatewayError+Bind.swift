import DeskCore
import DeskFrontProtocol
import DeskLinux
import NIOCore

extension GatewayError {
    /// "the gateway could not listen on 127.0.0.1 port 8443: Address already in use": the
    /// kernel's reason, not NIO's wrapping of the call that failed.
    static func bindFailed(_ what: String, host: String, port: Int, _ error: any Error) -> GatewayError {
        let failure = (error as? IOError).map { OSError("bind", path: "\(host):\(port)", errno: $0.errnoCode) }
        return GatewayError(.bindFailed, "\(what) could not listen on \(host) port \(port): \(failure?.reason ?? "\(error)")",
                            cause: failure.map(DeskError.Cause.init) ?? .other("\(error)"))
    }
}
