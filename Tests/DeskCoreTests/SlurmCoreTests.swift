import DeskCore
import Testing

/// The pure part of cluster desktops (Sources/DeskCore/Slurm): Slurm's texts, the job's spec and
/// reports, the submission and the hop's lines. One suite, so `--filter SlurmCoreTests` runs them
/// all; each part is a suite of its own inside it (the other Slurm*Tests.swift files).
@Suite struct SlurmCoreTests {
    static let sessionID = "0123456789abcdef0123456789abcdef"
    static let key = String(repeating: "a5", count: 32)

    /// A spec whose startup script has what could break a here-document or a line: newlines, the
    /// delimiter alone on a line, quotes, a tab, `$` and a backquote, a carriage return.
    static let spec = JobSpec(
        session: sessionID, key: key, password: "s3cret!", report: "10.0.0.1:41234", xvnc: "/usr/bin/Xtigervnc",
        xvncOptions: ["-AlwaysShared", "-SecurityTypes", "VncAuth"],
        xstartup: "#!/bin/sh\nunset SESSION_MANAGER\nDESKD_JOB_SPEC\necho \"$HOME\" 'it''s' `id`\t\\\r\nexec startxfce4\n\n",
        desktop: "xfce", geometry: "1920x1080", depth: 24, warnSeconds: 300)
}
