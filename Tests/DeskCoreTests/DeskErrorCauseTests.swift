import DeskCore
import Foundation
import Testing

/// An error's cause on the wire: an optional `cause` in the error body, an object with a `kind`,
/// absent when deskd knows none, so a reply without one is byte for byte what it was.
@Suite struct DeskErrorCauseTests {
    static let denied = DeskError.Cause.system(operation: "mkdir", path: "/run/deskd/by-id/x", errno: 13, name: "EACCES", text: "Permission denied")

    static func wire(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder.desk.encode(value), as: UTF8.self)
    }

    @Test func anErrorWithoutACauseHasTheTwoKeysItAlwaysHad() throws {
        let response = Response(error: DeskError(.noSuchSession, "there is no deskd session on display :7."))
        #expect(try Self.wire(response) == #"{"error":{"code":"no-such-session","message":"there is no deskd session on display :7."},"ok":false,"version":1}"#)
        #expect(response.deskError?.cause == nil)
    }

    @Test func theCauseIsAnObjectBesideCodeAndMessage() throws {
        let response = Response(error: DeskError(.internalError, "could not prepare the session directory /run/deskd/by-id/x: Permission denied.", cause: Self.denied))
        #expect(try Self.wire(response) == #"{"error":{"cause":{"errno":13,"errnoName":"EACCES","kind":"system","operation":"mkdir","path":"/run/deskd/by-id/x","text":"Permission denied"},"#
            + #""code":"internal-error","message":"could not prepare the session directory /run/deskd/by-id/x: Permission denied."},"ok":false,"version":1}"#)
    }

    @Test(arguments: [
        (DeskError.Cause.system(operation: "pipe", path: nil, errno: 24, name: nil, text: "Too many open files"),
         #"{"errno":24,"kind":"system","operation":"pipe","text":"Too many open files"}"#),
        (.pam(code: 13, text: "User account has expired"), #"{"code":13,"kind":"pam","text":"User account has expired"}"#),
        (.configuration(file: "/etc/deskd/deskd.toml", line: 4, column: 9), #"{"column":9,"file":"/etc/deskd/deskd.toml","kind":"configuration","line":4}"#),
        (.configuration(file: "deskd.toml", line: nil, column: nil), #"{"file":"deskd.toml","kind":"configuration"}"#),
        (.other("the helper said nothing"), #"{"kind":"other","text":"the helper said nothing"}"#),
    ])
    func eachKindHasItsShapeAndComesBack(cause: DeskError.Cause, json: String) throws {
        #expect(try Self.wire(cause) == json)
        let response = Response(error: DeskError(.internalError, "it failed.", cause: cause))
        let decoded = try JSONDecoder.desk.decode(Response.self, from: JSONEncoder.deskWire.encode(response))
        #expect(decoded.deskError == DeskError(.internalError, "it failed.", cause: cause))
    }

    /// A newer deskd may name a kind this client does not know: the reply is still read.
    @Test func anUnknownKindIsReadAsOther() throws {
        let reply = #"{"version":1,"ok":false,"error":{"code":"internal-error","message":"it failed.","cause":{"kind":"seccomp","text":"denied","syscall":41}}}"#
        let response = try JSONDecoder.desk.decode(Response.self, from: Data(reply.utf8))
        #expect(response.deskError == DeskError(.internalError, "it failed.", cause: .other("denied")))
        let bare = try JSONDecoder.desk.decode(DeskError.Cause.self, from: Data(#"{"kind":"seccomp"}"#.utf8))
        #expect(bare == .other("seccomp"))
        // A known kind in a shape this client does not read is text too, not a failed reply.
        let odd = try JSONDecoder.desk.decode(DeskError.Cause.self, from: Data(#"{"kind":"system","errno":"many","text":"odd"}"#.utf8))
        #expect(odd == .other("odd"))
    }

    @Test func theOldInitializerHasNoCause() {
        #expect(DeskError(.badRequest, "no.") == DeskError(.badRequest, "no.", cause: nil))
        #expect(DeskError(.badRequest, "no.") != DeskError(.badRequest, "no.", cause: .other("x")))
        // The sentence stays what people read, cause or not.
        #expect("\(DeskError(.internalError, "it failed.", cause: Self.denied))" == "it failed.")
    }

    @Test(arguments: [
        (denied, "mkdir /run/deskd/by-id/x: EACCES (Permission denied)"),
        (.system(operation: "pipe", path: nil, errno: 4000, name: nil, text: "Unknown error 4000"), "pipe: errno 4000 (Unknown error 4000)"),
        (.pam(code: 13, text: "User account has expired"), "PAM 13 (User account has expired)"),
        (.configuration(file: "/etc/deskd/deskd.toml", line: 4, column: 9), "/etc/deskd/deskd.toml:4:9"),
        (.configuration(file: "/etc/deskd/deskd.toml", line: 4, column: nil), "/etc/deskd/deskd.toml:4"),
        (.configuration(file: "/etc/deskd/deskd.toml", line: nil, column: nil), "/etc/deskd/deskd.toml"),
        (.configuration(file: nil, line: 4, column: 9), "line 4, column 9"),
        (.other("no answer"), "no answer"),
    ])
    func aCauseIsOneLineForTheLog(cause: DeskError.Cause, line: String) {
        #expect(cause.description == line)
    }

    @Test func aTOMLErrorIsItsPlace() throws {
        let error = #expect(throws: TOMLError.self) { try TOML.parse("a = 1\nb = \"open\n") }
        let cause = DeskError.Cause(try #require(error), file: "deskd.toml")
        #expect(cause == .configuration(file: "deskd.toml", line: 2, column: error?.column))
        #expect(DeskError.Cause(try #require(error)) == .configuration(file: nil, line: 2, column: error?.column))
    }
}
