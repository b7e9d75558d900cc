import DeskCore
import DeskLinux
import Glibc

/// Where session directories live: `<runtime>/by-id/<session id>/`, one per session, and
/// `<runtime>/displays/<n>`, a root-owned symlink to the directory of the session that holds
/// display n now. Users and their ssh tunnels use the stable display path
/// (`ssh -L 5901:/run/deskd/displays/1/rfb.sock ...`); deskd itself only ever uses the id path,
/// so tearing down a session can never touch the files of a newer session on the same display.
public struct SessionDirectories: Sendable {
    public let runtimeDirectory: String

    public init(runtimeDirectory: String) {
        self.runtimeDirectory = runtimeDirectory
    }

    public var byID: String { runtimeDirectory + "/by-id" }
    public var displays: String { runtimeDirectory + "/displays" }

    public func directory(for sessionID: String) -> SessionDirectory {
        SessionDirectory(path: byID + "/" + sessionID)
    }

    /// The stable path of the session's RFB socket, through the display's link.
    public func rfbSocket(for display: Display) -> String {
        displays + "/\(display.number)/" + SessionDirectory.rfbSocketName
    }

    /// Points `displays/<n>` at the session, replacing whatever link was there (written under a
    /// temporary name and renamed, so the path always resolves to one session or none).
    public func publish(_ display: Display, sessionID: String) throws(OSError) {
        let link = displays + "/\(display.number)"
        let temporary = link + ".\(sessionID).tmp"
        unlink(temporary)
        guard symlink("../by-id/" + sessionID, temporary) == 0 else { throw OSError("symlink", path: temporary) }
        guard rename(temporary, link) == 0 else {
            let error = OSError("rename", path: link)
            unlink(temporary)
            throw error
        }
    }

    /// Removes `displays/<n>` if, and only if, it still points at `sessionID`.
    public func unpublish(_ display: Display, sessionID: String) {
        let link = displays + "/\(display.number)"
        var buffer = [CChar](repeating: 0, count: 256)
        let n = readlink(link, &buffer, buffer.count - 1)
        guard n > 0, String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "../by-id/" + sessionID else { return }
        unlink(link)
    }
}
