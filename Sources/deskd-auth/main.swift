import CDeskSession
import Glibc

// deskd-auth SERVICE USER REMOTE-HOST: one web login through PAM, for deskd, which starts it as
// root for each login from its web front and talks to it on stdin and stdout (the protocol is
// in CDeskSession.h, deskd_auth_run). PAM's modules run here, in a process of their own that
// ends with the login, never inside deskd: as Cockpit keeps them in cockpit-session.
// Exit status: 0 logged in, 1 refused, 2 misused.

/// One line on stderr, with write(2): stdio's `stderr` is shared mutable state to Swift 6.
func complain(_ sentence: String) {
    let line = "deskd-auth: " + sentence + "\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, !arguments[1].isEmpty, !arguments[2].isEmpty else {
    complain("usage: deskd-auth SERVICE USER REMOTE-HOST (deskd starts it for each web login).")
    exit(2)
}
guard geteuid() == 0 else {
    complain("must run as root, as deskd starts it: PAM reads the shadow file.")
    exit(2)
}
// A login that nobody answers ends: deskd gives up long before this.
alarm(300)
exit(deskd_auth_run(arguments[1], arguments[2], arguments[3], STDIN_FILENO, STDOUT_FILENO) == 0 ? 0 : 1)
