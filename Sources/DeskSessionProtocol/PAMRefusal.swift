/// The account stack's refusal of a login: PAM's status (Linux-PAM's numbers, as
/// security/_pam_types.h has them) and a sentence for the caller. deskd keeps the status as the
/// refusal's cause, for scripts and logs; people read the sentence.
public struct PAMRefusal: Sendable, Equatable {
    public var status: Int32
    public var sentence: String

    public init(status: Int32, sentence: String) {
        self.status = status
        self.sentence = sentence
    }

    /// The status's name in Linux-PAM's headers, for the statuses pam_acct_mgmt returns.
    public var statusName: String {
        switch status {
        case 4: "PAM_SYSTEM_ERR"
        case 6: "PAM_PERM_DENIED"
        case 7: "PAM_AUTH_ERR"
        case 9: "PAM_AUTHINFO_UNAVAIL"
        case 10: "PAM_USER_UNKNOWN"
        case 12: "PAM_NEW_AUTHTOK_REQD"
        case 13: "PAM_ACCT_EXPIRED"
        default: "PAM status \(status)"
        }
    }
}
