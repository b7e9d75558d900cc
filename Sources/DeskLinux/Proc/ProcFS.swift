import CDeskShims
import Glibc

/// Reads of /proc: the kernel's truth about processes and sockets.
public enum ProcFS {
    /// Reads a whole (small) file, or nil if it cannot be opened. /proc files report size 0, so read to EOF.
    public static func read(_ path: String, limit: Int = 1 << 22) -> [UInt8]? {
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(16384, limit))
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { buffer in retryingEINTR { Glibc.read(fd, buffer.baseAddress, buffer.count) } }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }

    public static func readText(_ path: String) -> String? {
        read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// What /proc says about one process.
    public struct Process: Sendable, Equatable {
        public let pid: pid_t
        /// Field 3 of stat: R, S, D, Z, T...
        public let state: Character
        /// Field 22 of stat: start time in clock ticks since boot.
        public let startTicks: UInt64
        /// Field 4: the parent's pid (0 for a process whose parent is outside its pid namespace).
        public let parent: pid_t
        public let processGroup: pid_t
        public let session: pid_t

        init(pid: pid_t, state: Character, startTicks: UInt64, parent: pid_t = 0, processGroup: pid_t, session: pid_t) {
            self.pid = pid
            self.state = state
            self.startTicks = startTicks
            self.parent = parent
            self.processGroup = processGroup
            self.session = session
        }

        /// Parses the text of /proc/PID/stat; nil if it is not one.
        init?(pid: pid_t, stat: String) {
            self.init(pid: pid, stat: Array(stat.utf8))
        }

        /// The same from the file's bytes. Byte by byte, not through String: the census reads
        /// every session's Xvnc's stat each second, and String's index checks were most of
        /// deskd's idle time with 200 sessions.
        package init?(pid: pid_t, stat: [UInt8]) {
            // The command name (field 2) may contain spaces and parentheses: fields resume after the last ')'.
            guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
            var fields: [ArraySlice<UInt8>] = []
            fields.reserveCapacity(20)
            var start = close + 1
            // fields[0] is field 3 (state), so field N is fields[N - 3]; field 22 is the last one needed.
            while fields.count < 20 && start < stat.count {
                while start < stat.count && stat[start] == UInt8(ascii: " ") { start += 1 }
                var end = start
                while end < stat.count && stat[end] != UInt8(ascii: " ") && stat[end] != UInt8(ascii: "\n") { end += 1 }
                if end > start { fields.append(stat[start..<end]) }
                start = end + 1
            }
            guard fields.count == 20, fields[0].count == 1, let state = fields[0].first,
                  let parent = Self.integer(fields[1]).flatMap(pid_t.init(exactly:)),
                  let pgrp = Self.integer(fields[2]).flatMap(pid_t.init(exactly:)),
                  let session = Self.integer(fields[3]).flatMap(pid_t.init(exactly:)),
                  let ticks = Self.integer(fields[19]), ticks >= 0
            else { return nil }
            self.init(pid: pid, state: Character(Unicode.Scalar(state)), startTicks: UInt64(ticks), parent: parent, processGroup: pgrp, session: session)
        }

        /// A decimal integer, optionally negative (a process group can be -1 in odd cases); nil for anything else.
        private static func integer(_ digits: ArraySlice<UInt8>) -> Int64? {
            var value: Int64 = 0, negative = false, sawDigit = false
            for (offset, byte) in digits.enumerated() {
                if offset == 0 && byte == UInt8(ascii: "-") { negative = true; continue }
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflowB) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                guard !overflowA && !overflowB else { return nil }
                value = sum
                sawDigit = true
            }
            return sawDigit ? (negative ? -value : value) : nil
        }
    }

    public static func process(_ pid: pid_t) -> Process? {
        guard pid > 0, let stat = read("/proc/\(pid)/stat", limit: 4096) else { return nil }
        return Process(pid: pid, stat: stat)
    }

    /// The kernel's estimate of memory available for new work without swapping (MemAvailable).
    public static func memoryAvailableBytes() -> Int? {
        readText("/proc/meminfo").flatMap(memoryAvailableBytes(meminfo:))
    }

    package static func memoryAvailableBytes(meminfo: String) -> Int? {
        for line in meminfo.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
            let fields = line.split(separator: " ")
            guard fields.count >= 2, let kibibytes = Int(fields[1]) else { return nil }
            let (bytes, overflow) = kibibytes.multipliedReportingOverflow(by: 1024)
            return overflow ? nil : bytes
        }
        return nil
    }

    /// This process's resident memory in bytes (/proc/self/statm, field 2, in pages).
    public static func ownResidentBytes() -> Int? {
        guard let statm = readText("/proc/self/statm") else { return nil }
        return residentBytes(statm: statm, pageSize: Int(sysconf(Int32(_SC_PAGESIZE))))
    }

    package static func residentBytes(statm: String, pageSize: Int) -> Int? {
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        return overflow ? nil : bytes
    }

    /// Alive means not gone and not a zombie: a zombie holds nothing but its pid.
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard let process = process(pid) else { return false }
        return process.state != "Z" && process.state != "X"
    }

    /// The real uid of a process.
    public static func uid(of pid: pid_t) -> uid_t? {
        uids(of: pid).first
    }

    /// The real, effective, saved and filesystem uids of a process.
    public static func uids(of pid: pid_t) -> [uid_t] {
        guard let status = readText("/proc/\(pid)/status") else { return [] }
        return uids(status: status)
    }

    /// The uids on the `Uid:` line of the text of /proc/PID/status.
    package static func uids(status: String) -> [uid_t] {
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().compactMap { uid_t($0) }
        }
        return []
    }

    public static func executable(of pid: pid_t) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Every pid in /proc.
    public static func allPIDs() -> [pid_t] {
        guard let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        var pids: [pid_t] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if let pid = pid_t(name) { pids.append(pid) }
        }
        return pids
    }

    /// One row of /proc/net/tcp or tcp6.
    public struct TCPSocket: Sendable, Equatable {
        public static let listen: UInt8 = 0x0A
        public static let established: UInt8 = 0x01

        public let localPort: Int
        public let remotePort: Int
        public let state: UInt8
        public let inode: UInt64
        /// Who created the socket.
        public let uid: uid_t
    }

    /// TCP sockets (IPv4 and IPv6) in the given states, from the kernel's sock_diag netlink
    /// interface; /proc/net/tcp only if that is unavailable. Reading /proc/net/tcp walks and
    /// formats the whole connection hash table (262,144 buckets on a 24 GiB host): sock_diag
    /// costs a fraction of it, which matters because deskd counts viewers every second.
    /// Only sockets whose local port is in `localPorts` become entries (the filter runs in the
    /// dump itself), so another user's thousands of sockets never cost deskd an allocation.
    public static func tcpSockets(states: Set<UInt8> = [TCPSocket.listen, TCPSocket.established],
                                  localPorts: ClosedRange<Int> = 0...65535) -> [TCPSocket] {
        let mask = states.reduce(UInt32(0)) { $0 | (1 << UInt32($1)) }
        let low = UInt16(clamping: localPorts.lowerBound), high = UInt16(clamping: localPorts.upperBound)
        var sockets: [TCPSocket] = []
        for family in [AF_INET, AF_INET6] {
            guard let dumped = dump(deskd_tcp_socket(), { deskd_tcp_sockets(family, mask, low, high, $0, $1) }) else {
                return procTCPSockets().filter { states.contains($0.state) && localPorts.contains($0.localPort) }
            }
            sockets += dumped.map {
                TCPSocket(localPort: Int($0.local_port), remotePort: Int($0.remote_port), state: $0.state, inode: UInt64($0.inode), uid: $0.uid)
            }
        }
        return sockets
    }

    /// Runs a sock_diag dump into a buffer, grown if the first one was too small. Sockets come
    /// and go between dumps, so the growth is tried a few times, not until it fits: after that
    /// the entries that fit are the answer. nil if the kernel refused the dump.
    private static func dump<Entry>(_ empty: Entry, _ call: (UnsafeMutablePointer<Entry>, Int32) -> Int32) -> ArraySlice<Entry>? {
        var capacity = 512
        for attempt in 1...3 {
            var buffer = [Entry](repeating: empty, count: capacity)
            let count = Int(buffer.withUnsafeMutableBufferPointer { call($0.baseAddress!, Int32(capacity)) })
            if count < 0 { return nil }
            if count <= capacity || attempt == 3 { return buffer.prefix(min(count, capacity)) }
            capacity = count + count / 4
        }
        return nil
    }

    /// The same from /proc/net/tcp and tcp6 (for kernels without sock_diag for TCP).
    static func procTCPSockets() -> [TCPSocket] {
        ["/proc/net/tcp", "/proc/net/tcp6"].flatMap { path -> [TCPSocket] in
            guard let text = readText(path) else { return [] }
            return tcpSockets(table: text)
        }
    }

    /// The rows of the text of /proc/net/tcp or tcp6 (its first line is the header).
    package static func tcpSockets(table text: String) -> [TCPSocket] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let columns = line.split(separator: " ")
            guard columns.count > 9,
                  let local = columns[1].split(separator: ":").last, let localPort = Int(local, radix: 16),
                  let remote = columns[2].split(separator: ":").last, let remotePort = Int(remote, radix: 16),
                  let state = UInt8(columns[3], radix: 16), let uid = uid_t(columns[7]), let inode = UInt64(columns[9])
            else { return nil }
            return TCPSocket(localPort: localPort, remotePort: remotePort, state: state, inode: inode, uid: uid)
        }
    }

    /// Names of listening Unix sockets that start with one of `prefixes`; abstract ones start
    /// with "@". From sock_diag; /proc/net/unix only where the kernel has no unix_diag (a path
    /// there may hold a newline and forge a line: it can only make a display look taken).
    public static func listeningUnixSocketPaths(prefixes: [String]) -> Set<String> {
        if let sockets = unixSocketsIfAvailable(states: [UnixSocket.listen], named: prefixes) {
            return Set(sockets.map(\.name))
        }
        guard let text = readText("/proc/net/unix") else { return [] }
        return listeningUnixSocketPaths(table: text, prefixes: prefixes)
    }

    /// The same from the text of /proc/net/unix (its first line is the header).
    package static func listeningUnixSocketPaths(table text: String, prefixes: [String]) -> Set<String> {
        var paths = Set<String>()
        for line in text.split(separator: "\n").dropFirst() {
            // Num RefCount Protocol Flags Type St Inode Path; flag 0x10000 is __SO_ACCEPTCON (listening).
            // The path is the rest of the line after the inode and one space: it may hold spaces.
            let columns = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            guard columns.count >= 8, let flags = UInt32(columns[3], radix: 16), flags & 0x10000 != 0 else { continue }
            let path = String(columns[7])
            if prefixes.contains(where: path.hasPrefix) { paths.insert(path) }
        }
        return paths
    }

    /// One Unix socket from sock_diag.
    public struct UnixSocket: Sendable, Equatable {
        public static let listen: UInt8 = 0x0A
        public static let established: UInt8 = 0x01
        /// Bound (or not) and neither listening nor connected: TCP_CLOSE, as unix_diag says it.
        public static let unconnected: UInt8 = 0x07

        public let inode: UInt64
        public let peer: UInt64
        public let state: UInt8
        /// The bound path ("@name" for an abstract one); an accepted connection carries its listener's.
        public let name: String
    }

    /// Unix sockets in the given states whose names start with one of `prefixes` (all, if none
    /// is given), from sock_diag; empty if the kernel has no unix_diag.
    public static func unixSockets(states: Set<UInt8>, named prefixes: [String] = []) -> [UnixSocket] {
        unixSocketsIfAvailable(states: states, named: prefixes) ?? []
    }

    /// The same, or nil when the kernel could not be asked (no unix_diag, or the dump failed).
    public static func unixSocketsIfAvailable(states: Set<UInt8>, named prefixes: [String]) -> [UnixSocket]? {
        let mask = states.reduce(UInt32(0)) { $0 | (1 << UInt32($1)) }
        let copies = prefixes.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let dumped = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { list in
            dump(deskd_unix_socket(), { deskd_unix_sockets(mask, list.baseAddress, Int32(list.count), $0, $1) })
        }
        return dumped?.map { entry in
            let name = withUnsafeBytes(of: entry.name) { String(decoding: $0.prefix(Int(entry.name_length)), as: UTF8.self) }
            return UnixSocket(inode: UInt64(entry.inode), peer: UInt64(entry.peer), state: entry.state, name: name)
        }
    }

    /// The inodes of the sockets a process holds open (`socket:[N]` links in /proc/PID/fd).
    /// Whether one of `pid`'s first `limit` descriptors is a socket in `inodes`; stops at the first.
    public static func holdsSocket(of pid: pid_t, among inodes: Set<UInt64>, scanning limit: Int) -> Bool {
        var found = false
        visitSocketInodes(of: pid, scanning: limit) { inode in
            found = inodes.contains(inode)
            return !found
        }
        return found
    }

    public static func socketInodes(of pid: pid_t, scanning limit: Int = .max) -> Set<UInt64> {
        var inodes = Set<UInt64>()
        visitSocketInodes(of: pid, scanning: limit) { inodes.insert($0); return true }
        return inodes
    }

    /// Calls `visit` with the inode of each socket among `pid`'s first `limit` descriptors,
    /// until it returns false.
    private static func visitSocketInodes(of pid: pid_t, scanning limit: Int, _ visit: (UInt64) -> Bool) {
        guard let dir = opendir("/proc/\(pid)/fd") else { return }
        defer { closedir(dir) }
        var buffer = [CChar](repeating: 0, count: 64), scanned = 0
        while scanned < limit, let entry = readdir(dir) {
            scanned += 1
            let n = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name.withMemoryRebound(to: CChar.self) { readlinkat(dirfd(dir), $0.baseAddress!, &buffer, buffer.count - 1) }
            }
            guard n > 9 else { continue }
            let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasPrefix("socket:["), target.hasSuffix("]"), let inode = UInt64(target.dropFirst(8).dropLast()), !visit(inode) {
                return
            }
        }
    }
}
