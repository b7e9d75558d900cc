/// The contents of a TigerVNC password file (`-rfbauth`), as `vncpasswd -f` writes it.
///
/// Each password is truncated or NUL-padded to 8 bytes and DES-encrypted with VNC's fixed key;
/// an optional second block holds the view-only password. This is obfuscation, not protection:
/// the file's 0600 mode is what keeps it secret.
public enum VNCPasswordFile {
    /// VNC's fixed key `17 52 6B 06 23 4E 58 07` in d3des form, bit-reversed per byte into a standard DES key.
    static let fixedKey: UInt64 = 0xE84A_D660_C472_1AE0

    /// VNC authentication looks at no more than 8 characters.
    public static let passwordLength = 8

    public static func encode(password: String, viewOnly: String? = nil) -> [UInt8] {
        var bytes = obfuscate(password)
        if let viewOnly { bytes += obfuscate(viewOnly) }
        return bytes
    }

    /// The primary password in a password file (deskd reads it back to probe its own sessions).
    public static func decode(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 8 else { return nil }
        return reveal(bytes.prefix(8))
    }

    /// The view-only password, where the file has one (a second 8-byte block).
    public static func decodeViewOnly(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 16 else { return nil }
        return reveal(bytes[8..<16])
    }

    private static func reveal(_ cipher: ArraySlice<UInt8>) -> String {
        let block = cipher.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let plain = DES.decrypt(block: block, key: fixedKey)
        let characters = (0..<8).map { UInt8(truncatingIfNeeded: plain >> UInt64(56 - 8 * $0)) }.prefix { $0 != 0 }
        return String(decoding: characters, as: UTF8.self)
    }

    static func obfuscate(_ password: String) -> [UInt8] {
        var block: UInt64 = 0
        let utf8 = Array(password.utf8.prefix(passwordLength))
        for index in 0..<8 {
            block = block << 8 | UInt64(index < utf8.count ? utf8[index] : 0)
        }
        let cipher = DES.encrypt(block: block, key: fixedKey)
        return (0..<8).map { UInt8(truncatingIfNeeded: cipher >> UInt64(56 - 8 * $0)) }
    }
}
