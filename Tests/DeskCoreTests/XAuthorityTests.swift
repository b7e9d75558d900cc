import DeskCore
import Foundation
import Testing

/// The pure pieces of private sessions: the X cookie file, VNC's challenge response, the
/// escaping of text for terminals, and the audit trail's caps.
@Suite struct XAuthorityTests {
    @Test func theFileIsLibXausFormatWithAWildcardAddress() {
        let cookie = XAuthority(cookie: Array(0..<16))
        let bytes = cookie.fileContents(for: Display(42))
        // family 0xFFFF, empty address, "42", "MIT-MAGIC-COOKIE-1", 16 bytes: each length-prefixed big-endian.
        let expected: [UInt8] = [0xFF, 0xFF, 0, 0, 0, 2] + Array("42".utf8) + [0, 18] + Array("MIT-MAGIC-COOKIE-1".utf8) + [0, 16] + Array(0..<16)
        #expect(bytes == expected)
        #expect(cookie.hex == "000102030405060708090a0b0c0d0e0f")
    }

    @Test func theFileReadsBackAsLibXauReadsIt() throws {
        let cookie = XAuthority(cookie: Array(100..<116))
        let entries = try #require(XAuthority.entries(in: cookie.fileContents(for: Display(7))))
        #expect(entries == [cookie.entry(for: Display(7))])
        #expect(entries.first?.family == 0xFFFF && entries.first?.number == Array("7".utf8))
        // Two entries, as `xauth add` appends them; a file cut inside an entry is not one.
        let two = XAuthority.fileContents(of: entries + entries)
        #expect(XAuthority.entries(in: two)?.count == 2)
        #expect(XAuthority.entries(in: Array(two.dropLast())) == nil)
        #expect(XAuthority.entries(in: []) == [])
    }

    @Test func cookiesAreFreshAndFull() {
        let cookies = (0..<64).map { _ in XAuthority.generate().cookie }
        #expect(Set(cookies).count == 64)
        #expect(cookies.allSatisfy { $0.count == 16 })
    }
}
