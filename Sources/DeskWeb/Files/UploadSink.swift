import DeskCore
import Glibc
import NIOCore
import NIOPosix

/// An upload's bytes on their way into the file deskd-files made for it: written in order, off
/// the event loop (on the upload's own `FileThread`), at most a few MiB held at once. Past that the
/// connection stops reading until the disk has caught up, so a fast browser and a slow disk
/// cost the gateway no more memory than that. Lives on its connection's event loop.
final class UploadSink {
    let upload: PendingUploads.Upload
    private let channel: any Channel
    private var queue: [ByteBuffer] = []
    private var queued = 0
    private var writing = false
    private(set) var received: UInt64 = 0
    private(set) var written: UInt64 = 0
    /// Why the upload cannot complete: a write failed, or more came than was announced. The
    /// rest of the body is read and dropped, and the answer given once it is all in.
    private(set) var failure: FileRefusal?
    private var finished: ((UploadSink) -> Void)?
    private var closed = false
    private let thread: FileThread

    /// Reading stops past this much waiting to be written, and starts again below `resume`.
    static let pause = 4 << 20, resume = 1 << 20

    init(upload: PendingUploads.Upload, channel: any Channel) {
        self.upload = upload
        self.channel = channel
        self.thread = FileThread(fd: upload.fd)
    }

    func append(_ chunk: ByteBuffer) {
        received += UInt64(chunk.readableBytes)
        guard failure == nil else { return }
        guard received <= upload.size else {
            fail(FileRefusal(.failed, "More bytes came than the upload announced (\(upload.size)); upload it again."))
            return
        }
        queue.append(chunk)
        queued += chunk.readableBytes
        if queued > Self.pause { channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in } }
        writeNext()
    }

    /// The body is all in: `done` runs once every byte is written (or the upload failed).
    func end(_ done: @escaping (UploadSink) -> Void) {
        if failure == nil, received != upload.size {
            fail(FileRefusal(.failed, "The upload ended after \(received) of \(upload.size) bytes; upload it again."))
        }
        finished = done
        finishIfDone()
    }

    /// The connection went: whatever was written stays unnamed and goes with the helper. A
    /// write under way finishes first; none is begun after.
    func abandon() {
        finished = nil
        queue.removeAll()
        queued = 0
        closeFile()
        // A kept-alive connection reads its next request, whatever this one had paused.
        channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
    }

    /// `body` once the upload's file is closed here: a write stuck on the user's file system
    /// keeps the transfer (and its slot at deskd) until it returns.
    func whenClosed(_ body: @escaping @Sendable () -> Void) {
        thread.whenClosed(body)
    }

    private func writeNext() {
        guard !writing, !closed, failure == nil, !queue.isEmpty else { return }
        writing = true
        let chunk = queue.removeFirst()
        let offset = written
        let eventLoop = channel.eventLoop
        let sink = NIOLoopBound(self, eventLoop: eventLoop)
        thread.run(on: eventLoop) { fd in
            Self.write(chunk, to: fd, at: offset)
        }.whenComplete { result in
            let this = sink.value
            this.writing = false
            guard !this.closed else { return }
            this.queued -= chunk.readableBytes
            switch result {
            case .success(0): this.written += UInt64(chunk.readableBytes)
            case .success(let error): this.fail(Self.refusal(error))
            case .failure: this.fail(FileRefusal(.failed, "The gateway could not write the upload; try again."))
            }
            if this.queued < Self.resume {
                this.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
            }
            this.writeNext()
            this.finishIfDone()
        }
    }

    private func finishIfDone() {
        guard let finished, !writing, queue.isEmpty || failure != nil else { return }
        self.finished = nil
        closeFile()
        finished(self)
    }

    private func fail(_ refusal: FileRefusal) {
        guard failure == nil else { return }
        failure = refusal
        queue.removeAll()
        queued = 0
        // The rest of the body is drained, not held.
        channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
    }

    private func closeFile() {
        guard !closed else { return }
        closed = true
        thread.finish()
    }

    /// 0, or the errno of the write that failed.
    private static func write(_ chunk: ByteBuffer, to fd: Int32, at offset: UInt64) -> Int32 {
        chunk.withUnsafeReadableBytes { bytes in
            var done = 0
            while done < bytes.count {
                let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += n
            }
            return 0
        }
    }

    static func refusal(_ error: Int32) -> FileRefusal {
        switch error {
        case ENOSPC: FileRefusal(.diskFull, "The disk filled up during the upload; free some space and upload it again.")
        case EDQUOT: FileRefusal(.quota, "Your disk quota was reached during the upload; remove some files and upload it again.")
        case EFBIG: FileRefusal(.tooLarge, "The file is larger than this file system takes.")
        default: FileRefusal(.failed, "The upload could not be written (\(String(cString: strerror(error)))); try again.")
        }
    }
}
