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
// The conversation moves off 0 and 1 (close-on-exec, so no program a module runs inherits it),
// and 0-2 become /dev/null: whatever a module or its child prints cannot pass for a line.
let conversationIn = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3), conversationOut = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)
let null = open("/dev/null", O_RDWR)
guard conversationIn >= 0, conversationOut >= 0, null >= 0, dup2(null, STDIN_FILENO) >= 0, dup2(null, STDOUT_FILENO) >= 0,
      dup2(null, STDERR_FILENO) >= 0 else {
    complain("could not set up its descriptors.")
    exit(2)
}
exit(deskd_auth_run(arguments[1], arguments[2], arguments[3], conversationIn, conversationOut) == 0 ? 0 : 1)
