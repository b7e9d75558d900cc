import DeskCore
import Foundation
import Glibc
import TestSupport

/// A browser holding a deskd link, as bytes: the link page's token exchange, the WebSocket with
/// the cookie, and RFB through the gateway up to Xvnc's ServerInit. What no browser would send
/// can be sent too (`client`).
struct LinkViewer {
    let client: RawClient
    let width: Int
    let height: Int

    /// Why a link opened nothing: the gateway's HTTP status and body at the step that refused.
    struct Refused: Error, CustomStringConvertible {
        let step: String
        let status: Int
        let body: String
        var description: String { "\(step) refused with HTTP \(status): \(body)" }
    }

    /// The gateway's port and the token, from `http://127.0.0.1:PORT/open#token=TOKEN`.
    static func parse(_ url: String) throws -> (port: Int, token: String) {
        guard let portText = url.split(separator: ":").last?.prefix(while: \.isNumber), let port = Int(portText),
              let token = url.split(separator: "=").last else { throw RawClient.Failure(description: "not a link: \(url)") }
        return (port, String(token))
    }

    /// The link page's trade of the token for a cookie, as the gateway answers it.
    static func exchange(_ link: BrowserLink) throws -> RawClient.Response {
        let (port, token) = try parse(link.url)
        return try RawClient(port: port).request("POST", "/exchange", headers: [("Origin", "http://127.0.0.1")], body: token)
    }

    /// Opens `link` as the page does; throws `Refused` when the gateway turns it down.
    static func open(_ link: BrowserLink) throws -> LinkViewer {
        let port = try parse(link.url).port
        let exchange = try exchange(link)
        guard exchange.status == 200, let setCookie = exchange.header("Set-Cookie") else {
            throw Refused(step: "the exchange", status: exchange.status, body: exchange.text)
        }
        let cookie = String(setCookie.dropFirst("deskd_gateway=".count).prefix { $0 != ";" })
        let client = try RawClient(port: port)
        let upgrade = try client.upgrade(cookie: cookie)
        guard upgrade.status == 101 else { throw Refused(step: "the WebSocket upgrade", status: upgrade.status, body: upgrade.text) }
        guard try client.readRFB(12, timeout: 10_000) == Array("RFB 003.008\n".utf8) else { throw RawClient.Failure(description: "no RFB 3.8 greeting") }
        try client.sendFrame(Array("RFB 003.008\n".utf8))
        guard try client.readRFB(2) == [1, 1] else { throw RawClient.Failure(description: "the gateway offered other than security type None") }
        try client.sendFrame([1])
        guard try client.readRFB(4) == [0, 0, 0, 0] else { throw RawClient.Failure(description: "the security result was not OK") }
        try client.sendFrame([1])   // ClientInit: shared
        let serverInit = try client.readRFB(24)
        let nameLength = serverInit[20...23].reduce(0) { $0 << 8 | Int($1) }
        _ = try client.readRFB(nameLength)
        return LinkViewer(client: client, width: Int(serverInit[0]) << 8 | Int(serverInit[1]), height: Int(serverInit[2]) << 8 | Int(serverInit[3]))
    }

    /// What the desktop sent for `seconds`, having been asked for no framebuffer update: only
    /// ServerCutText (type 3) and Bell (type 2) come unasked. Returns the cut texts; throws on any
    /// other message or when the gateway closes the connection.
    func cutTexts(for seconds: Double) throws -> [String] {
        var texts: [String] = []
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let type: UInt8
            do { type = try client.readRFB(1, timeout: 200)[0] } catch where !client.ended {
                continue   // nothing within 200 ms
            }
            switch type {
            case 2: continue
            case 3:
                let header = try client.readRFB(7)
                let length = header[3...6].reduce(0) { $0 << 8 | Int($1) }
                texts.append(String(decoding: try client.readRFB(length), as: UTF8.self))
            default:
                throw RawClient.Failure(description: "the desktop sent RFB message type \(type) unasked")
            }
        }
        return texts
    }
}
