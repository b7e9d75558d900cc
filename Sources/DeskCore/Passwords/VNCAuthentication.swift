/// VNC authentication (RFB security type 2): the server sends 16 random bytes, the client
/// answers with them DES-encrypted under the password.
///
/// deskd answers its own sessions' challenges to probe them; it does so only after it has
/// checked that the server is the session's own Xvnc, so a squatter never gets a response to
/// attack offline.
public enum VNCAuthentication {
    public static let challengeLength = 16

    /// The response to `challenge` for `password` (truncated or NUL-padded to 8 bytes). VNC uses
    /// each password byte bit-reversed as the DES key, a quirk of the original d3des code.
    public static func response(challenge: [UInt8], password: String) -> [UInt8] {
        precondition(challenge.count == challengeLength)
        let utf8 = Array(password.utf8.prefix(VNCPasswordFile.passwordLength))
        var key: UInt64 = 0
        for index in 0..<8 {
            key = key << 8 | UInt64(reversedBits(index < utf8.count ? utf8[index] : 0))
        }
        var response: [UInt8] = []
        for half in 0..<2 {
            let block = challenge[half * 8..<half * 8 + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let cipher = DES.encrypt(block: block, key: key)
            response += (0..<8).map { UInt8(truncatingIfNeeded: cipher >> UInt64(56 - 8 * $0)) }
        }
        return response
    }

    static func reversedBits(_ byte: UInt8) -> UInt8 {
        var input = byte, output: UInt8 = 0
        for _ in 0..<8 {
            output = output << 1 | input & 1
            input >>= 1
        }
        return output
    }
}
