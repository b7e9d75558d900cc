@testable import DeskWeb
import Glibc
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// A transfer's descriptor may be closed (the browser went) while its read or write is still
/// running on the transfer's thread. Closed at once, its number could be handed to another
/// user's upload before that write lands: so the close waits for every job before it.
@Suite struct FileThreadTests {
    /// Has the pipe's write end closed? Its read end then polls as hung up.
    static func writeEndClosed(_ readEnd: Int32) -> Bool {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLHUP) != 0
    }

    @Test func theDescriptorClosesOnlyAfterTheWriteUnderWay() async throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let thread = FileThread(fd: ends[1])
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let release = Mutex(false)
        // A write that takes its time, as one to a slow disk does.
        let written = thread.run(on: loop) { fd -> Int in
            while !release.withLock({ $0 }) { usleep(1_000) }
            return "late".withCString { write(fd, $0, 4) }
        }
        // The connection goes now, mid-write. Its end is reported (deskd frees the transfer's
        // slot) only once the descriptor is closed.
        thread.finish()
        let reported = Atomic<Bool>(false)
        thread.whenClosed { reported.store(true, ordering: .sequentiallyConsistent) }
        usleep(50_000)
        #expect(!Self.writeEndClosed(ends[0]), "the descriptor closed while a write to it was still to come")
        let early = reported.load(ordering: .sequentiallyConsistent)
        #expect(!early, "the end was reported while the write was stuck")
        release.withLock { $0 = true }
        #expect(try await written.get() == 4, "the write under way did not reach its own descriptor")
        var bytes = [UInt8](repeating: 0, count: 8)
        #expect(read(ends[0], &bytes, 8) == 4)
        #expect(Array(bytes.prefix(4)) == Array("late".utf8))
        // Then it closes: the reader sees the end.
        for _ in 0..<500 where !Self.writeEndClosed(ends[0]) { usleep(10_000) }
        #expect(Self.writeEndClosed(ends[0]), "the descriptor never closed")
        for _ in 0..<500 where !reported.load(ordering: .sequentiallyConsistent) { usleep(10_000) }
        let late = reported.load(ordering: .sequentiallyConsistent)
        #expect(late, "the end was never reported")
    }

    @Test func jobsRunInTheOrderGiven() async throws {
        let fd = open("/dev/null", O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        let thread = FileThread(fd: fd)
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let order = Mutex<[Int]>([])
        let futures = (0..<20).map { n in
            thread.run(on: loop) { _ in
                usleep(UInt32.random(in: 0..<2_000))
                order.withLock { $0.append(n) }
            }
        }
        for future in futures { try await future.get() }
        #expect(order.withLock { $0 } == Array(0..<20))
        thread.finish()
    }

    /// A transfer that never read or wrote (refused at once, cut before its first byte) starts
    /// no thread, and its descriptor closes at once.
    @Test func aTransferWithNoJobClosesAtOnce() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        FileThread(fd: ends[1]).finish()
        #expect(Self.writeEndClosed(ends[0]))
    }
}
