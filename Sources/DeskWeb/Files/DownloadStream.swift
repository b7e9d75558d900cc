import Glibc
import NIOCore
import NIOPosix

/// A download's bytes from the descriptor deskd-files opened (a file, read from `offset` for
/// `length` bytes; or an archive's pipe, read to its end) to the browser: read off the event
/// loop (on the download's own `FileThread`), a chunk at a time with the next read while the last is sent, so at most two chunks are
/// held however large the file, and a browser that stops reading stops the reads.
final class DownloadStream {
    private let thread: FileThread
    private let isPipe: Bool
    private var offset: UInt64
    private var remaining: UInt64?
    private let context: ChannelHandlerContext
    private let wrap: (ByteBuffer) -> NIOAny
    /// Each chunk the browser took (its connection's idle deadline starts again).
    private let progress: () -> Void
    private var reading = false
    private var sending = 0
    private var atEnd = false
    private(set) var sent: UInt64 = 0
    private var finished: ((DownloadStream, Bool) -> Void)?
    private var closed = false

    /// 1 MiB: at 256 KiB the download ran at 0.81× scp's bytes/s on loopback, at 1 MiB 1.10×
    /// (docs/BENCHMARKS.md); two of them are the most a download holds.
    static let chunk = 1 << 20

    /// `length` nil: to the end (a pipe).
    init(fd: Int32, offset: UInt64, length: UInt64?, context: ChannelHandlerContext, wrap: @escaping (ByteBuffer) -> NIOAny,
         progress: @escaping () -> Void, done: @escaping (DownloadStream, Bool) -> Void) {
        self.progress = progress
        self.thread = FileThread(fd: fd)
        self.isPipe = length == nil
        self.offset = offset
        self.remaining = length
        self.context = context
        self.wrap = wrap
        self.finished = done
    }

    func start() { readNext() }

    /// The connection went: the descriptor closes, and `done` hears it was not all sent.
    func abandon() {
        guard let finished else { return }
        self.finished = nil
        closeFile()
        finished(self, false)
    }

    private func readNext() {
        guard !reading, !atEnd, sending < 2, finished != nil else { return }
        let want = min(UInt64(Self.chunk), remaining ?? UInt64(Self.chunk))
        guard want > 0 else {
            atEnd = true
            finishIfDone()
            return
        }
        reading = true
        let offset = offset, isPipe = isPipe, allocator = context.channel.allocator
        let stream = NIOLoopBound(self, eventLoop: context.eventLoop)
        thread.run(on: context.eventLoop) { fd -> ByteBuffer? in
            var buffer = allocator.buffer(capacity: Int(want))
            var failed = false
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: Int(want)) { bytes in
                while true {
                    let n = isPipe ? read(fd, bytes.baseAddress, Int(want)) : pread(fd, bytes.baseAddress, Int(want), off_t(offset))
                    if n < 0 && errno == EINTR { continue }
                    if n < 0 { failed = true }
                    return max(n, 0)
                }
            }
            return failed ? nil : buffer
        }.whenComplete { result in
            let this = stream.value
            this.reading = false
            guard case .success(let buffer?) = result, this.finished != nil else { return this.fail() }
            guard buffer.readableBytes > 0 else {
                // A file that shrank meanwhile ends short: the browser sees the length unmet.
                this.atEnd = true
                if this.remaining.map({ $0 > 0 }) ?? false { return this.fail() }
                return this.finishIfDone()
            }
            let count = UInt64(buffer.readableBytes)
            this.offset += count
            this.remaining = this.remaining.map { $0 - min($0, count) }
            this.sending += 1
            this.context.writeAndFlush(this.wrap(buffer)).assumeIsolated().whenComplete { written in
                let this = stream.value
                this.sending -= 1
                guard case .success = written else { return this.fail() }
                this.sent += count
                this.progress()
                this.readNext()
                this.finishIfDone()
            }
            this.readNext()
        }
    }

    private func finishIfDone() {
        guard atEnd, sending == 0, !reading, let finished else { return }
        self.finished = nil
        closeFile()
        finished(self, true)
    }

    private func fail() {
        guard let finished else { return }
        self.finished = nil
        closeFile()
        finished(self, false)
    }

    /// `body` once the file or pipe is closed here: a read stuck on the user's file system keeps
    /// the transfer (and its slot at deskd) until it returns.
    func whenClosed(_ body: @escaping @Sendable () -> Void) {
        thread.whenClosed(body)
    }

    private func closeFile() {
        guard !closed else { return }
        closed = true
        thread.finish()
    }
}
