import CDeskSession
import DeskSessionProtocol
import Glibc

/// One desktop's PAM session, as login, sshd and TigerVNC's vncsession open theirs: the
/// account stack first (expiry, /etc/nologin, pam_access), then credentials and the session
/// stack (a fresh session keyring with pam_keyinit, limits.conf with pam_limits, the PAM
/// environment, logind with pam_systemd where it runs). This process holds the handle for as
/// long as the desktop lives and closes it after the last session process has ended.
final class LoginSession {
    static let service = "deskd"

    private var handle: OpaquePointer?
    private var opened = false
    private var credentialsEstablished = false

    enum Refusal: Error {
        /// The account may not log in now: PAM's status and a sentence for the caller.
        case account(PAMRefusal)
        /// Something else in PAM failed.
        case failed(String)
    }

    init(user: String, display: String, sessionType: String) throws(Refusal) {
        var pamh: OpaquePointer?
        let status = deskd_pam_start(Self.service, user, &pamh)
        guard status == PAM_SUCCESS, let pamh else { throw .failed("pam_start failed (\(status))") }
        handle = pamh
        // An X display is this login's "tty", as for xrdp and vncsession: pam_systemd reads
        // the display from it, and the session type from the environment set below.
        _ = deskd_pam_set_string(pamh, PAM_TTY, display)
        _ = deskd_pam_set_string(pamh, PAM_XDISPLAY, display)
        _ = deskd_pam_set_string(pamh, PAM_RUSER, "root")
        _ = pam_putenv(pamh, "XDG_SESSION_TYPE=" + sessionType)
        _ = pam_putenv(pamh, "XDG_SESSION_CLASS=user")
    }

    deinit {
        close()
    }

    /// The account stack: may this user log in now?
    func checkAccount(user: String) throws(Refusal) {
        guard let handle else { throw .failed("the PAM session is closed") }
        let status = pam_acct_mgmt(handle, 0)
        guard status != PAM_SUCCESS else { return }
        let said = String(cString: deskd_pam_last_message()).trimmingWhitespace
        let reason: String
        switch status {
        case PAM_ACCT_EXPIRED: reason = "the account \(user) has expired"
        case PAM_NEW_AUTHTOK_REQD: reason = "the password of \(user) has expired and must be changed at a login first"
        case PAM_PERM_DENIED: reason = "the account \(user) may not log in now"
        case PAM_USER_UNKNOWN: reason = "PAM does not know the account \(user)"
        default: reason = "PAM refused a login for \(user) (\(String(cString: pam_strerror(handle, status))))"
        }
        throw .account(PAMRefusal(status: status, sentence: said.isEmpty ? reason : "\(reason): \(said)"))
    }

    /// Credentials, then the session. Supplementary groups are the caller's to set before.
    func open() throws(Refusal) {
        guard let handle else { throw .failed("the PAM session is closed") }
        var status = pam_setcred(handle, Int32(PAM_ESTABLISH_CRED))
        guard status == PAM_SUCCESS else { throw .failed("pam_setcred failed: \(String(cString: pam_strerror(handle, status)))") }
        credentialsEstablished = true
        status = pam_open_session(handle, 0)
        guard status == PAM_SUCCESS else { throw .failed("pam_open_session failed: \(String(cString: pam_strerror(handle, status)))") }
        opened = true
    }

    /// The environment PAM modules set (pam_env, pam_systemd's XDG_RUNTIME_DIR...).
    var environment: [String] {
        guard let handle, let list = pam_getenvlist(handle) else { return [] }
        defer {
            var index = 0
            while let entry = list[index] { free(entry); index += 1 }
            free(list)
        }
        var result: [String] = []
        var index = 0
        while let entry = list[index] {
            result.append(String(cString: entry))
            index += 1
        }
        return result
    }

    func close() {
        guard let handle else { return }
        var status = PAM_SUCCESS
        if opened { status = pam_close_session(handle, 0) }
        if credentialsEstablished { _ = pam_setcred(handle, Int32(PAM_DELETE_CRED)) }
        pam_end(handle, status)
        self.handle = nil
        opened = false
        credentialsEstablished = false
    }
}

extension String {
    var trimmingWhitespace: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}
