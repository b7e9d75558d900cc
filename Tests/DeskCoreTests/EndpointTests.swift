import DeskCore
import Foundation
import Testing

@Suite struct EndpointTests {
    static func session(_ endpoint: RFBEndpoint) -> Session {
        Session(id: "0123456789abcdef0123456789abcdef", user: "alice", uid: 1001, gid: 1001, display: Display(3), endpoint: endpoint,
                pid: 10, pidStartTicks: 1, executable: "/usr/bin/Xtigervnc", state: .ready, startedAt: Date(), desktop: "xterm",
                geometry: Geometry(width: 800, height: 600), depth: 24)
    }

    @Test func aSocketSessionHasNoPortAndTunnelsToItsSocket() throws {
        let session = Self.session(.unixSocket(path: "/run/deskd/displays/3/rfb.sock"))
        let object = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(session)) as? [String: Any]
        #expect(object?["rfbSocket"] as? String == "/run/deskd/displays/3/rfb.sock")
        #expect(object?["rfbPort"] == nil)
        let hints = session.connectHints(host: "vm")
        #expect(hints.sshTunnel == "ssh -L 5903:/run/deskd/displays/3/rfb.sock alice@vm")
        #expect(hints.viewer == "vncviewer localhost:5903")
    }

    @Test func aTCPSessionHasAPortAndNoSocket() throws {
        let session = Self.session(.tcp(port: 5903))
        let object = try JSONSerialization.jsonObject(with: JSONEncoder.desk.encode(session)) as? [String: Any]
        #expect(object?["rfbPort"] as? Int == 5903)
        #expect(object?["rfbSocket"] == nil)
        #expect(session.connectHints(host: "vm").sshTunnel == "ssh -L 5903:localhost:5903 alice@vm")
    }

    @Test func aPlantedLockMakesItsDisplayUnusable() {
        let occupancy = DisplayOccupancy.unusableLock("/tmp/.X3-lock is a FIFO")
        #expect(!occupancy.isUsable)
        #expect(occupancy.reason == "its lock file /tmp/.X3-lock is a FIFO")
    }
}
