// deskd-session: the process behind one desktop. deskd starts it as root, one per session, and
// tells it on stdin what to run. It opens the desktop's PAM session (so the account stack can
// refuse the login, and the session gets its keyring, limits and environment as a login
// does), starts Xvnc and, when deskd says so, the desktop, as the user, inside the session's
// cgroup; keeps their output in capped files of root's that outlive the session; records how
// each ended; and closes the PAM session once the last session process is gone. It is
// single-threaded, so dropping to the user in a forked child is safe here (it is not in deskd).
//
// It outlives a restart of deskd (deskd.service has KillMode=process): the PAM handle lives as
// long as the desktop, whoever administers it meanwhile, and the re-adopting deskd needs none.
//
// It reads the spec on stdin, then commands, and tells deskd what happened on stdout, one
// line each: all three as Sources/DeskSessionProtocol defines them, which deskd shares.
import CDeskSession
import CDeskShims
import DeskSessionProtocol
import Glibc

@main
enum DeskdSession {
    static func main() {
        signal(SIGPIPE, SIG_IGN)
        let spec: SessionSpec
        do { spec = try SessionSpec.read(from: STDIN_FILENO) } catch {
            switch error {
            case .incomplete: fail(.failed("deskd-session got no complete spec on stdin; it is started by deskd, not by hand."))
            case .bad(let what): fail(.failed("deskd-session got a bad spec: \(what)."))
            }
        }
        speaksFormerWords = spec.speaksFormerWords
        // The account database must still say what deskd read a moment ago.
        guard let account = getpwnam(spec.user), account.pointee.pw_uid == spec.uid, account.pointee.pw_gid == spec.gid else {
            fail(.failed("the account \(spec.user) changed while its desktop was starting; try again."))
        }

        let login: LoginSession
        do {
            login = try LoginSession(user: spec.user, display: spec.display, sessionType: spec.sessionType)
            try login.checkAccount(user: spec.user)
            // Supplementary groups before credentials: pam_group may add to them.
            guard initgroups(spec.user, spec.gid) == 0 else { fail(.failed("initgroups for \(spec.user) failed: \(String(cString: strerror(errno))).")) }
            try login.open()
        } catch {
            switch error {
            case .account(let refusal): fail(.refused(refusal))
            case .failed(let sentence): fail(.failed(sentence))
            }
        }

        _ = deskd_become_subreaper()
        let signals = deskd_session_signalfd()
        guard signals >= 0 else { login.close(); fail(.failed("signalfd failed: \(String(cString: strerror(errno))).")) }
        let cgroupFD: Int32 = spec.cgroup.map { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) } ?? -1
        if let cgroup = spec.cgroup, cgroupFD < 0 {
            login.close()
            fail(.failed("cannot open the session's cgroup \(cgroup): \(String(cString: strerror(errno)))."))
        }
        // Last before any session process, each of which is started in the session's mount
        // namespace; from here every way out goes through leave().
        var xSockets = spec.xSocketDirectory.map {
            PrivateXSockets(directory: $0, display: spec.sessionType == "x11" ? Int(spec.display.dropFirst()) : nil)
        }
        do { try xSockets?.enter(owner: spec.uid) } catch {
            xSockets?.leave()
            login.close()
            if let taken = error as? PrivateXSockets.Taken { fail(.taken(taken.sentence)) }
            fail(.failed("\(error)"))
        }
        let supervisor = Supervisor(spec: spec, environment: sessionEnvironment(spec: spec, pam: login.environment),
                                    cgroupFD: cgroupFD, signals: signals)
        report(.ok)
        supervisor.run()
        xSockets?.leave()
        login.close()
        exit(0)
    }

    /// The session's environment: deskd's, then what PAM set (LANG from pam_env, XDG_RUNTIME_DIR
    /// from pam_systemd...), except the variables that say whose desktop this is and where its
    /// X server is, which are deskd's alone. XDG_RUNTIME_DIR is the login's where PAM made one
    /// (the user bus, PipeWire and `systemctl --user` are found there); deskd's (a Wayland
    /// desktop's private directory) stands only where PAM made none. A locale where neither PAM
    /// nor the system default (/etc/default/locale, through pam_env) names one: C.UTF-8, which
    /// every Debian has, so programs that need UTF-8 (foot, GTK) do not start with a warning.
    static func sessionEnvironment(spec: SessionSpec, pam: [String]) -> [String] {
        var merged: [String: String] = [:]
        var order: [String] = []
        func put(_ entry: String, overriding: Bool) {
            guard let equals = entry.firstIndex(of: "=") else { return }
            let key = String(entry[..<equals])
            if merged[key] == nil { order.append(key) } else if !overriding { return }
            merged[key] = String(entry[entry.index(after: equals)...])
        }
        for entry in spec.environment { put(entry, overriding: true) }
        let protected: Set<String> = ["HOME", "USER", "LOGNAME", "SHELL", "DISPLAY", "XAUTHORITY", "DESKD_SESSION"]
        for entry in pam {
            let key = entry.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            put(entry, overriding: !protected.contains(key))
        }
        put("XDG_SESSION_TYPE=\(spec.sessionType)", overriding: true)
        if ["LANG", "LC_ALL", "LC_CTYPE"].allSatisfy({ merged[$0, default: ""].isEmpty }) { put("LANG=C.UTF-8", overriding: true) }
        return order.map { "\($0)=\(merged[$0]!)" }
    }
}

/// The words deskd reads: the former ones for a deskd of before (an upgrade under way).
nonisolated(unsafe) var speaksFormerWords = false

/// Tells deskd, in one write so that deskd never reads half a line.
func report(_ reply: SessionReply) {
    let line = reply.encoded(former: speaksFormerWords)
    _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

func fail(_ reply: SessionReply) -> Never {
    report(reply)
    exit(1)
}
