import ArgumentParser
import DeskClient
import DeskCore

/// Options every subcommand shares.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "deskd's control socket (default: $DESKD_SOCKET or /run/deskd/deskd.sock).")
    var socket: String?

    var client: ControlClient {
        ControlClient(socketPath: ControlClient.socketPath(option: socket))
    }

    /// Sends the request; on a refusal prints deskd's sentence on stderr and exits non-zero.
    func send(_ request: ControlRequest) throws -> Response {
        let response: Response
        do {
            response = try client.send(request)
        } catch {
            throw Failure(message: "\(error)", code: ExitCodes.unreachable, errorCode: ExitCodes.unreachableCode)
        }
        if let error = response.deskError {
            throw Failure(message: error.message, code: ExitCodes.refused, errorCode: error.code.rawValue, cause: error.cause)
        }
        return response
    }
}
