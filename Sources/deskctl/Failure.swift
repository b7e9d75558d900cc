import DeskCore

/// A failure already phrased for the user: printed as is, then exit with `code`.
struct Failure: Error, CustomStringConvertible {
    let message: String
    /// The exit status.
    let code: Int32
    /// The stable code `--json` prints beside the message.
    let errorCode: String
    /// deskd's cause, which `--json` prints too; the message already says it for people.
    var cause: DeskError.Cause? = nil
    var description: String { message }

    /// deskd answered, but without what the verb needs: a deskd of another version, most likely.
    static func incompleteReply(lacking what: String) -> Failure {
        Failure(message: "deskd answered without \(what); are deskd and deskctl the same version?",
                code: ExitCodes.refused, errorCode: DeskError.Code.internalError.rawValue)
    }
}
