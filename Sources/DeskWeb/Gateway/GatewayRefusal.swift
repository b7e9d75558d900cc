import DeskFrontProtocol
import DeskCore
import FoundationEssentials

/// A refusal the gateway answers in JSON, in the control protocol's error shape
/// (`{"error":{"code":…,"message":…}}`, docs/PROTOCOL.md): a script reads the gateway's
/// answers as it reads deskd's, and /open's page shows the message.
struct GatewayRefusal: Encodable, Sendable {
    struct Body: Encodable, Sendable {
        let code: DeskError.Code
        let message: String
    }

    let error: Body

    init(_ code: DeskError.Code, _ message: String) {
        error = Body(code: code, message: message)
    }

    static let linkRefused = GatewayRefusal(.linkRefused, OpenPage.refusedSentence)
    static let foreignOrigin = GatewayRefusal(.permissionDenied, "This page is not the gateway's own.")

    /// The document, escaped by JSONEncoder whatever the message holds.
    var json: String {
        guard let data = try? JSONEncoder.desk.encode(self) else {
            // Encoding a code and a string does not fail; were it to, the answer is still JSON.
            return #"{"error":{"code":"internal-error","message":"The gateway could not write its answer."}}"#
        }
        return String(decoding: data, as: UTF8.self)
    }
}
