@testable import DeskCore
import Foundation
import Testing

@Suite struct VNCPasswordFileTests {
    @Test func desMatchesTheFIPSExample() {
        #expect(DES.encrypt(block: 0x0123_4567_89AB_CDEF, key: 0x1334_5779_9BBC_DFF1) == 0x85E8_1354_0F0A_B405)
    }

    @Test(arguments: [
        // From `vncpasswd -f` (TigerVNC 1.12), as recorded in DESIGN.md and re-checked below when installed.
        ("secret12", "24b5ae4ce15503c6"),
    ])
    func encodesLikeVncpasswd(password: String, hex: String) {
        #expect(VNCPasswordFile.encode(password: password).hex == hex)
    }

    @Test func truncatesToEightCharactersAndPadsShortOnes() {
        #expect(VNCPasswordFile.encode(password: "secret12andmore") == VNCPasswordFile.encode(password: "secret12"))
        #expect(VNCPasswordFile.encode(password: "abc").count == 8)
        #expect(VNCPasswordFile.encode(password: "abc", viewOnly: "view").count == 16)
    }

    /// Byte-identical to the real tool for many random passwords, when tigervnc-tools is installed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/vncpasswd"), "needs vncpasswd (apt-get install tigervnc-tools)"))
    func byteIdenticalToVncpasswdF() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let password = SessionPassword.generate(using: &generator)
            let viewOnly = SessionPassword.generate(using: &generator)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/vncpasswd")
            process.arguments = ["-f"]
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            input.fileHandleForWriting.write(Data("\(password)\n\(viewOnly)\n".utf8))
            try input.fileHandleForWriting.close()
            let bytes = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(Array(bytes) == VNCPasswordFile.encode(password: password, viewOnly: viewOnly), "password \(password)")
        }
    }

    @Test func generatedPasswordsAreEightUnambiguousCharacters() {
        var generator = SystemRandomNumberGenerator()
        let passwords = (0..<200).map { _ in SessionPassword.generate(using: &generator) }
        #expect(passwords.allSatisfy { $0.count == 8 && $0.allSatisfy(SessionPassword.alphabet.contains) })
        #expect(Set(passwords).count == passwords.count)
    }
    @Test func passwordFilesDecodeBackToTheirPassword() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let password = SessionPassword.generate(using: &generator)
            #expect(VNCPasswordFile.decode(VNCPasswordFile.encode(password: password)) == password)
        }
        #expect(VNCPasswordFile.decode([1, 2, 3]) == nil)
    }
}

extension Array where Element == UInt8 {
    var hex: String { map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }
}
