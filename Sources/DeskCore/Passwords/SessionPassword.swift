/// Session passwords: 8 characters, because VNC authentication reads no more.
public enum SessionPassword {
    /// No look-alikes (0/O, 1/l/I), so a password read off a terminal is typed right the first time.
    static let alphabet = Array("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")

    /// A fresh password from `generator`; the daemon passes the system CSPRNG.
    public static func generate<G: RandomNumberGenerator>(using generator: inout G) -> String {
        String((0..<VNCPasswordFile.passwordLength).map { _ in alphabet.randomElement(using: &generator)! })
    }

    public static func generate() -> String {
        var system = SystemRandomNumberGenerator()
        return generate(using: &system)
    }
}
