import DeskCore
import Foundation
import Testing

@Suite struct VNCAuthenticationTests {
    /// Checked against libvncclient's rfbClientEncryptBytes (what every VNC viewer sends).
    @Test(arguments: [
        ("secret12", "cd832257b3584199bd999a523f52c582"),
        ("ab", "f734776b117668c42ff2a33d36442b0e"),
        ("secret12-and-more", "cd832257b3584199bd999a523f52c582"),
    ])
    func theResponseMatchesLibvncclient(password: String, expected: String) {
        let challenge = (0..<16).map { UInt8(truncatingIfNeeded: $0 * 17 + 3) }
        let response = VNCAuthentication.response(challenge: challenge, password: password)
        #expect(response.map { String(format: "%02x", $0) }.joined() == expected)
    }
}
