import DeskFrontProtocol
import Glibc
import NIOCore

/// noVNC's files, served from one directory and nowhere else.
///
/// A request's path is cut into components before it is decoded, and a component that decodes
/// to a separator, a NUL, a backslash, or begins with a dot (".", "..", hidden files) is refused,
/// so no spelling of a path leaves the directory. Each component is then opened with
/// O_NOFOLLOW relative to the one before it, so a symlink planted anywhere under the directory
/// is not followed either (Debian's only one, vnc_auto.html, is an alias noVNC's links never use).
public struct StaticFiles: Sendable {
    public let directory: String
    /// A larger file is not one of noVNC's, and would be read whole into memory.
    public let maxFileBytes: Int

    /// noVNC's modules as one file, where esbuild makes it; nil: the modules as they are.
    public let bundle: ViewerBundle?

    public init(directory: String, maxFileBytes: Int = 16 << 20, bundle: ViewerBundle? = nil) {
        self.directory = directory
        self.maxFileBytes = maxFileBytes
        self.bundle = bundle
    }

    /// A file's Content-Type by its extension; nil means the gateway does not serve it.
    public static func contentType(of name: String) -> String? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "html": return "text/html; charset=utf-8"
        // Module scripts are refused by browsers under any other type.
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "ico": return "image/x-icon"
        case "json": return "application/json"
        case "woff": return "font/woff"
        case "woff2": return "font/woff2"
        case "ttf": return "font/ttf"
        case "mp3": return "audio/mpeg"
        case "oga", "ogg": return "audio/ogg"
        default: return nil
        }
    }

    /// The path components of a request target, decoded and checked; nil if it names nothing
    /// the gateway would serve. The query and fragment are cut off first.
    public static func components(ofTarget target: String) -> [String]? {
        var path = Substring(target)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard path.first == "/" else { return nil }
        let raw = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var components: [String] = []
        for piece in raw {
            guard let decoded = percentDecoded(piece), !decoded.isEmpty, decoded.first != UInt8(ascii: "."),
                  !decoded.contains(0), !decoded.contains(UInt8(ascii: "/")), !decoded.contains(UInt8(ascii: "\\"))
            else { return nil }
            // A component that is not UTF-8 names no file of noVNC's.
            guard let name = String(validating: decoded, as: UTF8.self) else { return nil }
            components.append(name)
        }
        guard !components.isEmpty, components.count <= 16 else { return nil }
        return components
    }

    static func percentDecoded(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        func hex(_ byte: UInt8?) -> UInt8? {
            switch byte {
            case let b? where b >= 0x30 && b <= 0x39: b - 0x30
            case let b? where b >= 0x41 && b <= 0x46: b - 0x41 + 10
            case let b? where b >= 0x61 && b <= 0x66: b - 0x61 + 10
            default: nil
            }
        }
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = hex(iterator.next()), let low = hex(iterator.next()) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return bytes
    }

    /// Opens the file `components` name under the directory, read-only, without following a
    /// symlink on the way: a descriptor for a regular file the gateway serves, or nil.
    public func open(_ components: [String]) -> (fd: Int32, contentType: String, size: Int, tag: String)? {
        guard let last = components.last, let type = Self.contentType(of: last) else { return nil }
        var parent = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return nil }
        for name in components.dropLast() {
            let next = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(parent)
            guard next >= 0 else { return nil }
            parent = next
        }
        // O_NONBLOCK: a FIFO planted in the tree must not hang the thread that opens it.
        let fd = openat(parent, last, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        close(parent)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) <= maxFileBytes else {
            close(fd)
            return nil
        }
        return (fd, type, Int(info.st_size), Self.entityTag(info))
    }

    /// A file's validator: its inode, size and modification time, which a package's upgrade
    /// (a new file renamed into place) always changes.
    static func entityTag(_ info: stat) -> String {
        let nanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return "\"" + String(UInt64(info.st_ino), radix: 16) + "-" + String(Int64(info.st_size), radix: 16) + "-"
            + String(UInt64(bitPattern: nanoseconds), radix: 16) + "\""
    }

    /// How a browser keeps one of noVNC's files. Its code, sheets, pages and settings are asked
    /// for again each time (a 304 by their tag when unchanged): kept longer, an upgrade of noVNC
    /// would meet a browser's older copies and mix two versions in one page. Its images, sounds
    /// and fonts, whose old copy only looks old, are kept an hour. (The bundle of its modules,
    /// where there is one, is kept for good: its address changes with its bytes.)
    public static func cacheControl(forTarget target: String) -> String {
        guard let name = components(ofTarget: target)?.last, let type = contentType(of: name) else { return "no-cache" }
        return type.hasPrefix("image/") || type.hasPrefix("audio/") || type.hasPrefix("font/") ? "max-age=3600" : "no-cache"
    }

    /// Whether a request's If-None-Match names `tag` (a list, or `*`; weak tags compare too).
    public static func matches(ifNoneMatch header: String?, tag: String) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { candidate in
            var value = candidate.trimmingPrefix(while: { $0 == " " || $0 == "\t" })
            while value.last == " " || value.last == "\t" { value = value.dropLast() }
            if value == "*" { return true }
            if value.hasPrefix("W/") { value = value.dropFirst(2) }
            return value == tag
        }
    }

    /// noVNC's page, into which the gateway adds its one script of its own (`/deskd-drop.js`,
    /// files dropped on the desktop's page): the target, and the tag added before `</head>`.
    public static let viewerPage = ["vnc.html"]
    public static let dropScriptTag = "<script src=\"/deskd-drop.js\" defer></script>\n"
    /// The portal's viewer (`OpenPage.viewerScript`): noVNC's page opened at the click, before
    /// the desktop has its link. Async, not deferred: a link that comes while noVNC's modules
    /// still load is traded for the cookie meanwhile (drop.js waits for it either way).
    public static let viewerScriptTag = "<script src=\"/deskd-viewer.js\" async></script>\n"

    /// `page` with `tag` added just before its first `</head>` (in any case); unchanged without one.
    public static func inserting(_ tag: String, beforeHeadEndOf page: ByteBuffer) -> ByteBuffer {
        let bytes = page.readableBytesView
        let end = Array("</head>".utf8)
        guard bytes.count >= end.count else { return page }
        var at = bytes.startIndex
        let last = bytes.endIndex - end.count
        let lowered = { (byte: UInt8) in byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
        while at <= last {
            if zip(bytes[at..<at + end.count], end).allSatisfy({ lowered($0) == $1 }) {
                var result = ByteBuffer()
                result.reserveCapacity(page.readableBytes + tag.utf8.count)
                result.writeBytes(bytes[bytes.startIndex..<at])
                result.writeString(tag)
                result.writeBytes(bytes[at...])
                return result
            }
            at += 1
        }
        return page
    }

    /// What a request for a file gets: the file, or that the browser's copy is still it.
    public enum Answer: Sendable {
        case file(body: ByteBuffer, contentType: String, tag: String)
        case notModified(tag: String)
    }

    /// The whole file a request target names, with its Content-Type and validator; nil is a 404.
    /// A browser that holds the file already (`ifNoneMatch` names its tag) gets `.notModified`
    /// without the file being read. Blocking: call it off the event loop.
    public func read(target: String, ifNoneMatch: String? = nil, allocator: ByteBufferAllocator) -> Answer? {
        guard let components = Self.components(ofTarget: target), let (fd, type, size, tag) = open(components) else { return nil }
        defer { close(fd) }
        if Self.matches(ifNoneMatch: ifNoneMatch, tag: tag) { return .notModified(tag: tag) }
        var buffer = allocator.buffer(capacity: size)
        var done = false
        while !done {
            let wanted = max(size - buffer.readableBytes, 4096)
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { raw in
                let n = Glibc.read(fd, raw.baseAddress, raw.count)
                return n > 0 ? n : 0
            }
            // A file that grows while it is read is cut at the size it had, plus what one read gave.
            done = count == 0 || buffer.readableBytes > maxFileBytes
        }
        guard buffer.readableBytes <= maxFileBytes else { return nil }
        return .file(body: buffer, contentType: type, tag: tag)
    }
}
