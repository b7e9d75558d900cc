/// deskctl's usage errors as sentences that name the fix, like every other refusal.
///
/// ArgumentParser says what is wrong ("Missing expected argument '<display>'"); a person also
/// needs what to type instead. The rewrite keys on ArgumentParser's message shapes, and any
/// other message keeps its words with a pointer to the subcommand's own help.
public enum UsageSentence {
    /// An example of each subcommand, as its help would show it.
    public static let examples: [String: String] = [
        "start": "deskctl start --user alice --desktop openbox",
        "list": "deskctl list --all",
        "show": "deskctl show :3",
        "kill": "deskctl kill :3",
        "reap": "deskctl reap --idle 2h",
        "probe": "deskctl probe :3",
        "passwd": "deskctl passwd :3",
        "url": "deskctl url :3",
        "history": "deskctl history --since 2026-11-01",
        "logs": "deskctl logs :3",
        "status": "deskctl status",
        "desktops": "deskctl desktops",
        "metrics": "deskctl metrics",
    ]

    /// The subcommand a command line names: its first word that is one.
    public static func subcommand(in arguments: [String]) -> String? {
        arguments.dropFirst().first { examples[$0] != nil }
    }

    public static func rewrite(_ message: String, subcommand: String?) -> String {
        let command = subcommand.map { "deskctl \($0)" } ?? "deskctl"
        let example = subcommand.flatMap { examples[$0] }
        let help = "\(command) --help"
        if let argument = quoted(message, after: "Missing expected argument ") {
            let what = argument.hasPrefix("<") ? "a \(argument.dropFirst().dropLast())" : argument.split(separator: " ").first.map(String.init) ?? argument
            return "\(command) needs \(what)" + (example.map { "; for example: \($0)" } ?? "") + " (see \(help))."
        }
        if let option = quoted(message, after: "Missing value for ") {
            let name = option.split(separator: " ").first.map(String.init) ?? option
            return "\(name) needs a value" + (example.map { "; for example: \($0)" } ?? "") + " (see \(help))."
        }
        if let argument = quoted(message, after: "Unexpected argument ") {
            if subcommand == nil {
                return "'\(argument)' is not a deskctl command; use one of \(examples.keys.sorted().joined(separator: ", ")) (see deskctl --help)."
            }
            return "\(command) takes no argument '\(argument)'" + (example.map { "; for example: \($0)" } ?? "") + " (see \(help))."
        }
        if let option = quoted(message, after: "Unknown option ") {
            return "\(command) has no option \(option); \(help) lists the options it has."
        }
        let sentence = message.hasSuffix(".") ? message : message + "."
        return "\(sentence) (see \(help))"
    }

    /// `'x'` in `prefix'x'…`.
    private static func quoted(_ message: String, after prefix: String) -> String? {
        guard message.hasPrefix(prefix + "'") else { return nil }
        let rest = message.dropFirst(prefix.count + 1)
        guard let close = rest.firstIndex(of: "'") else { return nil }
        return String(rest[..<close])
    }
}
