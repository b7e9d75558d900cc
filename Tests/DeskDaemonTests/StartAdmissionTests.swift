@testable import DeskDaemon
import DeskCore
import DeskLinux
import Foundation
import Testing

/// Admitting a start, with no host at all: the accounts, programs and memory are plain values,
/// the registry a count. Every refusal here is one a person fixes, so each says which.
@Suite struct StartAdmissionTests {
    static let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Templates").path
    static let alice = UserAccount(name: "alice", uid: 1001, gid: 1001, home: "/home/alice", shell: "/bin/bash", groups: [1001, 2000])
    static let bob = UserAccount(name: "bob", uid: 1002, gid: 1002, home: "/home/bob", shell: "/bin/bash", groups: [1002])
    static let aliceCalls = Caller(uid: 1001, gid: 1001, pid: 11, userName: "alice", isAdmin: false)
    static let rootCalls = Caller(uid: 0, gid: 0, pid: 10, userName: "root", isAdmin: true)

    /// A host as admission sees it: two accounts, xterm and Xtigervnc installed, 8 GiB free.
    static func facts(installed: Set<String> = ["/usr/bin/xterm", "/usr/bin/Xtigervnc"], memory: Int? = 8 << 30) -> AdmissionFacts {
        let accounts = [alice, bob]
        return AdmissionFacts(
            account: { name in accounts.first { $0.name == name } }, accountOfUID: { uid in accounts.first { $0.uid == uid } },
            groupID: { $0 == "desktop" ? 2000 : nil }, isExecutable: { installed.contains($0) }, isDirectory: { $0.hasPrefix("/home/") },
            memoryAvailable: { memory })
    }

    static func admission(facts: AdmissionFacts = facts(), sessions: [UInt32: Int] = [:],
                          configure: (inout DaemonConfiguration) -> Void = { _ in }) -> StartAdmission {
        var configuration = DaemonConfiguration()
        configuration.templateDirectories = [templates]
        configuration.xvncPath = "/usr/bin/Xtigervnc"
        configure(&configuration)
        let snapshot = SessionRegistry.Snapshot(count: sessions.values.reduce(0, +), byOwner: sessions)
        return StartAdmission(configuration: configuration, facts: facts, registry: snapshot)
    }

    static func refusal(_ admission: StartAdmission, _ request: StartRequest, by caller: Caller = aliceCalls) -> DeskError? {
        do {
            _ = try admission.admit(request, caller: caller)
            return nil
        } catch { return error }
    }

    @Test func aPlanForTheCallersOwnDesktopTakesTheConfiguredDefaults() throws {
        let plan = try Self.admission().admit(StartRequest(), caller: Self.aliceCalls)
        #expect(plan.account == Self.alice)
        #expect(plan.template.name == "xterm" && plan.depth == 24 && plan.display == nil && !plan.userXstartup)
        #expect(plan.geometry == DaemonConfiguration().defaultGeometry)
    }

    /// auto picks X desktops only, xterm last; on a host with none of them but a Wayland
    /// desktop, it starts that one (labwc before sway), by its own template.
    @Test func autoStartsAWaylandDesktopOnlyWhereNoXDesktopIsInstalled() throws {
        let sway: Set<String> = ["/usr/bin/sway", "/usr/bin/swaymsg", "/usr/bin/wayvnc", "/usr/bin/foot"]
        let labwc: Set<String> = ["/usr/bin/labwc", "/usr/bin/wayvnc", "/usr/bin/foot", "/usr/bin/waybar"]
        func started(_ installed: Set<String>) throws -> String {
            try Self.admission(facts: Self.facts(installed: installed)).admit(StartRequest(desktop: "auto"), caller: Self.aliceCalls).template.name
        }
        #expect(try started(sway.union(labwc).union(["/usr/bin/xterm", "/usr/bin/Xtigervnc"])) == "auto")
        #expect(try started(sway.union(["/usr/bin/Xtigervnc"])) == "sway")
        #expect(try started(sway.union(labwc)) == "labwc", "a Wayland desktop needs no Xtigervnc")
        // With nothing at all, the refusal names what auto's X desktops need, not sway.
        let bare = Self.refusal(Self.admission(facts: Self.facts(installed: [])), StartRequest(desktop: "auto"))
        #expect(bare?.message.contains("(xterm is missing)") == true, "\(bare?.message ?? "started")")
    }

    /// wayvnc's last 64×64 tile must hold 4 pixels or more, or browsers misread it: such a size
    /// is refused for a Wayland desktop, with two that work, and kept for an X desktop.
    @Test func aWaylandDesktopsSizeLeavesNoTinyLastTile() throws {
        let sway: Set<String> = ["/usr/bin/sway", "/usr/bin/swaymsg", "/usr/bin/wayvnc", "/usr/bin/foot", "/usr/bin/xterm", "/usr/bin/Xtigervnc"]
        let admission = Self.admission(facts: Self.facts(installed: sway))
        let refused = Self.refusal(admission, StartRequest(geometry: Geometry(width: 1281, height: 769), desktop: "sway"))
        #expect(refused?.code == .invalidGeometry)
        #expect(refused?.message == "a Wayland desktop cannot be 1281x769: wayvnc sends the last of its 64×64 tiles, 1×1 pixels, in a form browsers misread; use 1284x769 or 1280x769.")
        #expect(Self.refusal(admission, StartRequest(geometry: Geometry(width: 1284, height: 769), desktop: "sway")) == nil)
        #expect(Self.refusal(admission, StartRequest(geometry: Geometry(width: 1281, height: 769), desktop: "xterm")) == nil)
    }

    @Test func anAdminStartsForAnotherUserOnTheDisplayAndSizeAsked() throws {
        let request = StartRequest(user: "bob", display: Display(7), geometry: try Geometry(parsing: "1280x800"), depth: 16)
        let plan = try Self.admission().admit(request, caller: Self.rootCalls)
        #expect(plan.account == Self.bob && plan.display == Display(7) && plan.geometry.description == "1280x800" && plan.depth == 16)
    }

    @Test func whoTheDesktopIsForIsChecked() {
        let admission = Self.admission()
        #expect(Self.refusal(admission, StartRequest(), by: Self.rootCalls)?.code == .userNotAllowed)
        #expect(Self.refusal(admission, StartRequest(user: "carol"), by: Self.rootCalls)?.message
            == "there is no user named 'carol' on this host; check the name with: getent passwd carol.")
        #expect(Self.refusal(admission, StartRequest(user: "bob"))?.code == .permissionDenied)
        let stranger = Caller(uid: 4242, gid: 4242, pid: 12, userName: nil, isAdmin: false)
        #expect(Self.refusal(admission, StartRequest(), by: stranger)?.code == .unknownUser)
        let onlyDesktopGroup = Self.admission { $0.limits.allowedGroups = ["desktop"] }
        #expect(Self.refusal(onlyDesktopGroup, StartRequest(user: "bob"), by: Self.rootCalls)?.code == .userNotAllowed)
        #expect(Self.refusal(onlyDesktopGroup, StartRequest()) == nil)
    }

    @Test func whatWasAskedForIsChecked() {
        let admission = Self.admission { $0.displayRange = 1...50 }
        #expect(Self.refusal(admission, StartRequest(display: Display(51)))?.message == "display :51 is out of range; use :1 to :50.")
        #expect(Self.refusal(admission, StartRequest(desktop: "nosuch"))?.code == .invalidDesktop)
        let gnome = Self.refusal(admission, StartRequest(desktop: "gnome"))
        #expect(gnome?.code == .invalidDesktop && gnome?.message.contains("apt-get install gnome-session") == true)
        let big = Self.admission { $0.limits.maximumGeometry = (try? Geometry(parsing: "1920x1080")) ?? Geometry.bounds.max }
        #expect(Self.refusal(big, StartRequest(geometry: try? Geometry(parsing: "3840x2160")))?.code == .invalidGeometry)
    }

    @Test func whetherTheHostHasRoomIsCheckedLast() {
        #expect(Self.refusal(Self.admission(facts: Self.facts(installed: ["/usr/bin/xterm"])), StartRequest())?.code == .xvncMissing)
        let tight = Self.admission(facts: Self.facts(memory: 600 << 20)) { $0.memoryReserve = 512 << 20 }
        #expect(Self.refusal(tight, StartRequest())?.code == .memoryLow)
        let full = Self.admission(sessions: [1001: 2]) { $0.limits.maxSessionsPerUser = 2 }
        #expect(Self.refusal(full, StartRequest())?.code == .limitReached)
        #expect(Self.refusal(full, StartRequest(user: "bob"), by: Self.rootCalls) == nil)
        // A request wrong in two ways hears first about what it asked for.
        #expect(Self.refusal(full, StartRequest(desktop: "nosuch"))?.code == .invalidDesktop)
    }
}
