import DeskCore
import Testing

extension SlurmCoreTests {
    @Suite struct Hex {
        @Test func encodesLowercase() {
            #expect(HexBytes.encode([0x00, 0x0f, 0xa5, 0xff, 0x10]) == "000fa5ff10")
            #expect(HexBytes.encode([]) == "")
            #expect(HexBytes.encode(0...255).count == 512)
        }

        @Test func decodesWhatItEncodes() {
            let all = [UInt8](0...255)
            #expect(HexBytes.decode(HexBytes.encode(all), count: 256) == all)
            #expect(HexBytes.decode("000fa5ff10", count: 5) == [0x00, 0x0f, 0xa5, 0xff, 0x10])
            #expect(HexBytes.decode("", count: 0) == [])
            #expect(HexBytes.decode("xx00ffxx".dropFirst(2).dropLast(2), count: 2) == [0x00, 0xff])
        }

        @Test func refusesAnotherLengthOrCaseOrDigit() {
            #expect(HexBytes.decode("000fa5ff10", count: 4) == nil)
            #expect(HexBytes.decode("000fa5ff10", count: 6) == nil)
            #expect(HexBytes.decode("000fa5ff1", count: 5) == nil)
            #expect(HexBytes.decode("000FA5FF10", count: 5) == nil)
            #expect(HexBytes.decode("0A", count: 1) == nil)
            #expect(HexBytes.decode("0g", count: 1) == nil)
            #expect(HexBytes.decode(" 0", count: 1) == nil)
            #expect(HexBytes.decode("-1", count: 1) == nil)
            #expect(HexBytes.decode("é", count: 1) == nil, "two bytes of UTF-8, not two digits")
            #expect(HexBytes.decode("", count: -1) == nil)
        }

        @Test func constantTimeEqual() {
            #expect(HexBytes.constantTimeEqual([1, 2, 3], [1, 2, 3]))
            #expect(HexBytes.constantTimeEqual([], []))
            #expect(!HexBytes.constantTimeEqual([1, 2, 3], [1, 2, 4]))
            #expect(!HexBytes.constantTimeEqual([1, 2, 3], [0, 2, 3]))
            #expect(!HexBytes.constantTimeEqual([1, 2, 3], [1, 2]))
            #expect(!HexBytes.constantTimeEqual([1, 2], [1, 2, 3]))
            #expect(!HexBytes.constantTimeEqual([], [0]))
        }
    }

    @Suite struct Handshake {
        static let nonce = [UInt8](0..<32)
        static let serverNonce = [UInt8](repeating: 0xee, count: 32)
        static let hello = HopHandshake.Hello(role: .report, session: SlurmCoreTests.sessionID, nonce: nonce)
        static let nonceHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

        @Test func constants() {
            #expect(HopHandshake.magic == "DESKHOP1")
            #expect(HopHandshake.acceptedLine == "OK\n")
            #expect((HopHandshake.nonceBytes, HopHandshake.keyBytes, HopHandshake.macBytes, HopHandshake.maxLineBytes) == (32, 32, 32, 256))
            #expect(HopHandshake.Role.allCases.map(\.rawValue) == ["report", "relay"])
        }

        @Test func theHelloLineParsesBack() throws {
            let line = Self.hello.line
            #expect(line == "DESKHOP1 report 0123456789abcdef0123456789abcdef \(Self.nonceHex)\n")
            #expect(line.utf8.count < HopHandshake.maxLineBytes)
            #expect(HopHandshake.Hello(line: line.dropLast()) == Self.hello)
            let relay = HopHandshake.Hello(role: .relay, session: SlurmCoreTests.sessionID, nonce: Self.serverNonce)
            #expect(HopHandshake.Hello(line: relay.line.dropLast()) == relay)
        }

        static let otherHellos = [
            "DESKHOP2 report 0123456789abcdef0123456789abcdef \(nonceHex)",
            "deskhop1 report 0123456789abcdef0123456789abcdef \(nonceHex)",
            "DESKHOP1 admin 0123456789abcdef0123456789abcdef \(nonceHex)",
            "DESKHOP1 Report 0123456789abcdef0123456789abcdef \(nonceHex)",
            "DESKHOP1 report 0123456789ABCDEF0123456789abcdef \(nonceHex)",
            "DESKHOP1 report 0123456789abcdef0123456789abcde \(nonceHex)",
            "DESKHOP1 report ../../../etc/passwd \(nonceHex)",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef \(nonceHex.dropLast(2))",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef \(nonceHex)00",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef \(nonceHex.uppercased())",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef \(nonceHex) extra",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef \(nonceHex) ",
            "DESKHOP1  report 0123456789abcdef0123456789abcdef \(nonceHex)",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef \(nonceHex)\n",
            "DESKHOP1 report 0123456789abcdef0123456789abcdef",
            "",
        ]

        @Test(arguments: otherHellos)
        func refusesAnyOtherHello(line: String) {
            #expect(HopHandshake.Hello(line: line) == nil)
        }

        @Test func theChallengeLineParsesBack() throws {
            let mac = [UInt8](repeating: 0x42, count: 32)
            let challenge = HopHandshake.Challenge(nonce: Self.serverNonce, mac: mac)
            #expect(challenge.line == String(repeating: "ee", count: 32) + " " + String(repeating: "42", count: 32) + "\n")
            #expect(HopHandshake.Challenge(line: challenge.line.dropLast()) == challenge)
            for line in [challenge.line, String(challenge.line.dropLast(3)), String(repeating: "ee", count: 32),
                         String(challenge.line.dropLast()) + " 00", String(challenge.line.dropLast()).uppercased(), ""] {
                #expect(HopHandshake.Challenge(line: line) == nil, "\(line)")
            }
        }

        @Test func theProofLineParsesBack() {
            let mac = [UInt8](repeating: 0x42, count: 32)
            #expect(HopHandshake.proofLine(mac) == String(repeating: "42", count: 32) + "\n")
            #expect(HopHandshake.proof(line: HopHandshake.proofLine(mac).dropLast()) == mac)
            #expect(HopHandshake.proof(line: HopHandshake.proofLine(mac)) == nil)
            #expect(HopHandshake.proof(line: String(repeating: "42", count: 31)) == nil)
            #expect(HopHandshake.proof(line: "OK") == nil)
        }

        @Test func theTranscriptNamesTheSideTheRoleAndEverythingSaid() {
            #expect(HopHandshake.transcript(.server, hello: Self.hello, serverNonce: Self.serverNonce)
                == Array("server|report|0123456789abcdef0123456789abcdef|\(Self.nonceHex)|\(String(repeating: "ee", count: 32))".utf8))
            let relay = HopHandshake.Hello(role: .relay, session: SlurmCoreTests.sessionID, nonce: Self.nonce)
            let other = HopHandshake.Hello(role: .report, session: "fedcba9876543210fedcba9876543210", nonce: Self.nonce)
            let transcripts = [
                HopHandshake.transcript(.server, hello: Self.hello, serverNonce: Self.serverNonce),
                HopHandshake.transcript(.client, hello: Self.hello, serverNonce: Self.serverNonce),
                HopHandshake.transcript(.server, hello: relay, serverNonce: Self.serverNonce),
                HopHandshake.transcript(.client, hello: relay, serverNonce: Self.serverNonce),
                HopHandshake.transcript(.server, hello: other, serverNonce: Self.serverNonce),
                HopHandshake.transcript(.server, hello: Self.hello, serverNonce: Self.nonce),
            ]
            #expect(Set(transcripts).count == transcripts.count)
            #expect(transcripts[1] == Array("client|report|0123456789abcdef0123456789abcdef|\(Self.nonceHex)|\(String(repeating: "ee", count: 32))".utf8))
        }
    }
}
