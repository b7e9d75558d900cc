import DeskCore
import Testing

@Suite struct ValueParsingTests {
    @Test(arguments: [":3", "3", ":99"])
    func parsesDisplays(text: String) throws {
        #expect(try Display(parsing: text).number == Int(text.filter(\.isNumber)))
    }

    @Test(arguments: ["", ":", ":0", ":2001", "abc", ":-1", ":3.0", ":٣"])
    func refusesBadDisplays(text: String) {
        #expect(throws: DeskError.self) { try Display(parsing: text) }
    }

    @Test func displayPorts() throws {
        #expect(Display(7).rfbPort() == 5907)
        #expect(Display(1500).rfbPort(base: 10000) == 11500)
        #expect(try Display(parsing: ":2000").number == 2000, "displays past :99 are names, not ports")
        #expect(Display(7).x11Port == 6007)
        #expect(Display(7).lockPath == "/tmp/.X7-lock")
    }

    @Test(arguments: ["1920x1080", "320x200", "8192x8192"])
    func parsesGeometries(text: String) throws {
        #expect(try Geometry(parsing: text).description == text)
    }

    @Test(arguments: ["1920", "1920x", "x1080", "1920x1080x2", "100x100", "9000x1000", "-1x5", "1920X1080", "ab x cd"])
    func refusesBadGeometries(text: String) {
        let error = #expect(throws: DeskError.self) { try Geometry(parsing: text) }
        #expect(error?.code == .invalidGeometry)
    }

    @Test func depths() throws {
        #expect(try ColorDepth.validate(24) == 24)
        #expect(throws: DeskError.self) { try ColorDepth.validate(8) }
    }
}
