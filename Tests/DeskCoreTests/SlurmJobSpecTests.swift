import DeskCore
import FoundationEssentials
import Testing

extension SlurmCoreTests {
    @Suite struct Spec {
        static let spec = SlurmCoreTests.spec

        static func decoding(_ change: (inout JobSpec) -> Void) throws(DeskError) -> JobSpec {
            var spec = Self.spec
            change(&spec)
            return try JobSpec.decode(Array(spec.encoded().utf8))
        }

        @Test func isOneLineOfJSON() throws {
            let line = Self.spec.encoded()
            #expect(Self.spec.xstartup.utf8.filter { $0 == UInt8(ascii: "\n") }.count == 6)
            #expect(!line.utf8.contains(UInt8(ascii: "\n")))
            #expect(!line.utf8.contains(UInt8(ascii: "\r")))
            #expect(line.hasPrefix("{") && line.hasSuffix("}"))
            #expect(try JobSpec.decode(Array(line.utf8)) == Self.spec)
        }

        @Test func itsExactText() {
            let spec = JobSpec(session: SlurmCoreTests.sessionID, key: SlurmCoreTests.key, password: "pw", report: "192.168.1.2:5000",
                               xvnc: "/usr/bin/Xtigervnc", xvncOptions: [], xstartup: "#!/bin/sh\nexec xterm\n", desktop: "xterm",
                               geometry: "1280x800", depth: 16, warnSeconds: 120)
            #expect(spec.version == 1)
            #expect(spec.encoded() == #"{"depth":16,"desktop":"xterm","geometry":"1280x800","key":""# + SlurmCoreTests.key
                + #"","password":"pw","report":"192.168.1.2:5000","session":"0123456789abcdef0123456789abcdef","version":1,"#
                + ##""warnSeconds":120,"xstartup":"#!/bin/sh\nexec xterm\n","xvnc":"/usr/bin/Xtigervnc","xvncOptions":[]}"##)
        }

        /// A Wayland desktop's spec names its compositor; an X desktop's, like one from before
        /// compositors, does not, and its server is the spec's Xvnc.
        @Test func aWaylandDesktopNamesItsCompositorAndNothingElseIsOne() throws {
            #expect(!Self.spec.encoded().contains("compositor") && Self.spec.displayServer is Xvnc)
            let labwc = try Self.decoding { $0.compositor = "labwc" }
            #expect((labwc.displayServer as? WaylandVNC)?.compositor == .labwc)
            #expect(throws: DeskError.self) { try Self.decoding { $0.compositor = "weston" } }
            let said = try? Self.decoding { $0.compositor = "gnome-shell" }
            #expect(said == nil)
        }

        @Test func itsKeyAndAddress() throws {
            #expect(Self.spec.keyBytes == [UInt8](repeating: 0xa5, count: 32))
            let address = try #require(Self.spec.reportAddress)
            #expect(address.host == "10.0.0.1")
            #expect(address.port == 41234)
            var spec = Self.spec
            spec.report = "255.255.255.255:65535"
            #expect(spec.reportAddress?.host == "255.255.255.255")
            #expect(spec.reportAddress?.port == 65535)
            spec.report = "0.0.0.0:1"
            #expect(spec.reportAddress?.port == 1)
        }

        @Test func refusesWhatIsNotJSON() {
            let sentence = DeskError(.badRequest, "the job's spec is not the JSON deskd writes; was this job submitted by deskd?")
            for bytes in [[], Array("not json".utf8), Array("{}".utf8), Array("[1]".utf8), Array(#"{"version":1}"#.utf8),
                          Array(Self.spec.encoded().dropLast().utf8), [0xff, 0xfe]] {
                #expect(throws: sentence) { try JobSpec.decode(bytes) }
            }
        }

        @Test func refusesAnotherVersionWithItsSentence() {
            let sentence = DeskError(.unsupportedVersion, "the job's spec is version 2; this deskd-job reads version 1. Install the same deskd on the login and compute nodes.")
            #expect(throws: sentence) { try Self.decoding { $0.version = 2 } }
            // Another version's spec need not have this one's fields.
            #expect(throws: sentence) { try JobSpec.decode(Array(#"{"version":2,"something":"else"}"#.utf8)) }
            #expect(throws: DeskError(.unsupportedVersion, "the job's spec is version 0; this deskd-job reads version 1. Install the same deskd on the login and compute nodes.")) {
                try Self.decoding { $0.version = 0 }
            }
        }

        @Test(arguments: ["", "0123", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef0",
                          "../../etc"])
        func refusesABadSessionID(session: String) {
            #expect(throws: DeskError(.badRequest, "the job's spec names no valid session id.")) { try Self.decoding { $0.session = session } }
        }

        @Test(arguments: [String(repeating: "ab", count: 31), String(repeating: "ab", count: 33), String(repeating: "AB", count: 32),
                          String(repeating: "a", count: 63), String(repeating: "zz", count: 32), ""])
        func refusesABadKey(key: String) {
            #expect(throws: DeskError(.badRequest, "the job's spec has no valid hop key.")) { try Self.decoding { $0.key = key } }
        }

        @Test(arguments: ["10.0.0.1", "10.0.0.1:0", "host:1", "10.0.0.1:65536", "10.0.0.1:", ":80", "10.0.0:80", "10.0.0.1.5:80",
                          "10.0.0.256:80", "10.0.0.-1:80", "+10.0.0.1:80", "10.0.0.1:+80", "10.0.0.1:-80", "10.0.0.01:80", "10.0.0.1:080",
                          "[::1]:80", "::1:80", "10.0.0.1 :80", "10.0.0.1:80 ", "١٠.0.0.1:80", ""])
        func refusesAReportAddressThatIsNoIPv4AndPort(report: String) {
            #expect(throws: DeskError(.badRequest, "the job's spec has no ADDRESS:PORT to report to.")) { try Self.decoding { $0.report = report } }
        }

        @Test(arguments: ["Xtigervnc", "bin/Xtigervnc", "./Xtigervnc", ""])
        func refusesARelativeXvnc(xvnc: String) {
            #expect(throws: DeskError(.badRequest, "the job's spec names Xvnc by a relative path.")) { try Self.decoding { $0.xvnc = xvnc } }
        }

        @Test func refusesABadGeometryOrDepth() {
            #expect(throws: DeskError(.invalidGeometry, "'wide' is not a geometry; write it as WIDTHxHEIGHT, for example 1920x1080.")) {
                try Self.decoding { $0.geometry = "wide" }
            }
            let tooSmall = #expect(throws: DeskError.self) { try Self.decoding { $0.geometry = "100x100" } }
            #expect(tooSmall?.code == .invalidGeometry)
            #expect(throws: DeskError(.invalidDepth, "depth 8 is not supported; use 16, 24 or 32.")) { try Self.decoding { $0.depth = 8 } }
        }

        @Test(arguments: ["", "123456789", "ééééé"])
        func refusesAPasswordXvncCannotHold(password: String) {
            #expect(throws: DeskError(.badRequest, "the job's spec has no valid VNC password.")) { try Self.decoding { $0.password = password } }
        }

        @Test func anEightCharacterPasswordIsOne() throws {
            #expect(try Self.decoding { $0.password = "12345678" }.password == "12345678")
        }

        @Test func refusesMoreThanMaxBytes() throws {
            #expect(JobSpec.maxBytes == 262_144)
            let sentence = DeskError(.badRequest, "the job's spec is larger than 262144 bytes.")
            #expect(throws: sentence) { try Self.decoding { $0.xstartup = String(repeating: "x", count: JobSpec.maxBytes) } }
            #expect(throws: sentence) { try JobSpec.decode([UInt8](repeating: 0x20, count: JobSpec.maxBytes + 1)) }
            // Up to the limit it is read: a startup script of 200 KiB.
            let big = try Self.decoding { $0.xstartup = String(repeating: "echo hello\n", count: 200 << 10 / 11) }
            #expect(big.xstartup.utf8.count == 200 << 10 / 11 * 11)
        }
    }

    @Suite struct Report {
        static let ready = JobReport(event: .ready, node: "node2", address: "10.0.0.2", port: 5901, display: 1,
                                     socket: "/tmp/deskd-0123456789abcdef0123456789abcdef/rfb.sock")

        @Test func aReadyReportNeedsWhereAndWhat() {
            #expect(Self.ready.isWellFormed)
            var noSocket = Self.ready
            noSocket.socket = nil
            #expect(noSocket.isWellFormed)
            for missing in [\JobReport.node, \JobReport.address] {
                var report = Self.ready
                report[keyPath: missing] = nil
                #expect(!report.isWellFormed)
            }
            for missing in [\JobReport.port, \JobReport.display] {
                var report = Self.ready
                report[keyPath: missing] = nil
                #expect(!report.isWellFormed)
            }
            #expect(!JobReport(event: .ready).isWellFormed)
        }

        @Test func aReadyReportsFieldsInRange() {
            func with(_ change: (inout JobReport) -> Void) -> Bool {
                var report = Self.ready
                change(&report)
                return report.isWellFormed
            }
            #expect(!with { $0.port = 70000 })
            #expect(!with { $0.port = 65536 })
            #expect(!with { $0.port = 0 })
            #expect(with { $0.port = 65535 })
            #expect(with { $0.port = 1 })
            #expect(!with { $0.display = -1 })
            #expect(with { $0.display = 0 })
            #expect(!with { $0.display = 65536 })
            #expect(!with { $0.node = "" })
            #expect(!with { $0.node = String(repeating: "n", count: 256) })
            #expect(with { $0.node = String(repeating: "n", count: 255) })
            #expect(!with { $0.address = "" })
            #expect(!with { $0.address = String(repeating: "1", count: 65) })
            #expect(!with { $0.socket = "rfb.sock" })
            #expect(!with { $0.socket = "" })
            #expect(!with { $0.socket = "/" + String(repeating: "s", count: 199) })
            // sun_path holds 108 bytes, one of them the path's terminating NUL.
            #expect(with { $0.socket = "/" + String(repeating: "s", count: 106) })
            #expect(!with { $0.socket = "/" + String(repeating: "s", count: 107) })
        }

        @Test func aViewersReportNeedsACountInRange() {
            #expect(JobReport(event: .viewers, viewers: 0).isWellFormed)
            #expect(JobReport(event: .viewers, viewers: 3).isWellFormed)
            #expect(JobReport(event: .viewers, viewers: 100_000).isWellFormed)
            #expect(!JobReport(event: .viewers, viewers: -1).isWellFormed)
            #expect(!JobReport(event: .viewers, viewers: 100_001).isWellFormed)
            #expect(!JobReport(event: .viewers).isWellFormed)
        }

        @Test(arguments: [JobReport.Event.warned, .ending, .failed])
        func aMessageIsShort(event: JobReport.Event) {
            #expect(JobReport(event: event).isWellFormed)
            #expect(JobReport(event: event, message: "the desktop logged out").isWellFormed)
            #expect(JobReport(event: event, message: String(repeating: "m", count: 1024)).isWellFormed)
            #expect(!JobReport(event: event, message: String(repeating: "m", count: 2000)).isWellFormed)
            #expect(!JobReport(event: event, message: String(repeating: "é", count: 513)).isWellFormed, "bytes, not characters")
        }

        @Test func readsTheLinesAJobWrites() throws {
            let line = #"{"event":"ready","node":"node2","address":"10.0.0.2","port":5901,"display":1,"socket":"/tmp/deskd-0123456789abcdef0123456789abcdef/rfb.sock"}"#
            #expect(try JSONDecoder().decode(JobReport.self, from: Data(line.utf8)) == Self.ready)
            #expect(try JSONDecoder().decode(JobReport.self, from: Data(#"{"event":"viewers","viewers":2}"#.utf8)) == JobReport(event: .viewers, viewers: 2))
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(JobReport.self, from: Data(#"{"event":"exploded"}"#.utf8)) }
            #expect(try JSONDecoder().decode(JobReport.self, from: JSONEncoder().encode(Self.ready)) == Self.ready)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            #expect(String(decoding: try encoder.encode(JobReport(event: .ending, message: "time is up")), as: UTF8.self)
                == #"{"event":"ending","message":"time is up"}"#)
            #expect(JobReport.maxLineBytes == 4096)
        }

        @Test func commandsAreOneKey() throws {
            #expect(String(decoding: try JSONEncoder().encode(JobCommand(.end)), as: UTF8.self) == #"{"command":"end"}"#)
            #expect(String(decoding: try JSONEncoder().encode(JobCommand(.accepted)), as: UTF8.self) == #"{"command":"accepted"}"#)
            #expect(try JSONDecoder().decode(JobCommand.self, from: Data(#"{"command":"end"}"#.utf8)) == JobCommand(.end))
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(JobCommand.self, from: Data(#"{"command":"reboot"}"#.utf8)) }
        }
    }
}
