@testable import DeskHost
import DeskLinux
import Foundation
import Glibc
import Testing

/// The cgroup caps, against a directory laid out as cgroupfs lays out one: controllers that are
/// on get their limit written, and a controller that is off (its file absent) is skipped.
@Suite struct SessionCGroupTests {
    @Test func limitsLandOnlyWhereTheirControllerIsOn() throws {
        let scratch = try Scratch()
        let withPids = scratch.path + "/a", without = scratch.path + "/b"
        for directory in [withPids, without] { mkdir(directory, 0o755) }
        _ = FileManager.default.createFile(atPath: withPids + "/pids.max", contents: Data("max\n".utf8))
        SessionCGroup(path: withPids).limit(tasks: 300, memoryBytes: 1 << 30)
        SessionCGroup(path: without).limit(tasks: 300, memoryBytes: 1 << 30)
        #expect(ProcFS.readText(withPids + "/pids.max")?.hasPrefix("300\n") == true)
        #expect(access(withPids + "/memory.max", F_OK) != 0)
        #expect(access(without + "/pids.max", F_OK) != 0)
    }

    @Test func onlyDelegatedControllersAreTurnedOn() throws {
        let scratch = try Scratch()
        _ = FileManager.default.createFile(atPath: scratch.path + "/cgroup.controllers", contents: Data("cpu io pids\n".utf8))
        _ = FileManager.default.createFile(atPath: scratch.path + "/cgroup.subtree_control", contents: Data())
        // What deskd asks of cgroupfs: pids, which is delegated; not memory, which is not.
        // (A regular file does not answer as cgroupfs would, so what it returns is not checked here.)
        _ = SessionCGroup.enableLimitControllers(base: scratch.path)
        #expect(ProcFS.readText(scratch.path + "/cgroup.subtree_control") == "+pids\n")
        #expect(SessionCGroup.enableLimitControllers(base: scratch.path + "/missing").isEmpty)
    }
}
