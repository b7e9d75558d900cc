/// Exit statuses scripts can rely on (documented in docs/ADMIN.md, For scripts), and the `--json` error codes of
/// the failures deskd never saw (deskd's own are `DeskError.Code`; docs/schema/error.json lists both).
enum ExitCodes {
    static let refused: Int32 = 1
    static let usage: Int32 = 2
    static let unreachable: Int32 = 3

    static let usageCode = "usage"
    static let unreachableCode = "unreachable"
    /// probe: the session's Xvnc did not complete an RFB handshake in time.
    static let unresponsiveCode = "unresponsive"
}
