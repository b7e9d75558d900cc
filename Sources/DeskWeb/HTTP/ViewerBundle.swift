import Foundation
import Glibc
import Synchronization

/// noVNC's viewer as one file: esbuild's bundle of app/ui.js and the modules it imports.
///
/// noVNC's page loads its code as some fifty modules. Even from the browser's cache, fetching,
/// compiling and linking them one by one was most of the time from a click to the desktop's
/// first frame (Chromium on this project's machines: about 340 ms against about 180 ms for
/// the one bundle). Debian's esbuild makes the bundle in some 40 ms, from the files Debian's
/// noVNC installed, so what runs is still that noVNC; where esbuild is not installed, or fails,
/// the page loads noVNC's modules as they are.
///
/// The bundle is made when the gateway starts (or the page is first asked for), and again
/// whenever a module changes (a noVNC upgrade): each ask compares the modules' inode, size
/// and modification time with those it was made from. One is made at a time; pages asked for
/// meanwhile load the modules one by one. Its version (a hash of its bytes) is in its address,
/// so a browser may keep it for good; the page that names it is never kept. Only a tree that
/// only root can change is bundled (esbuild follows symlinks), and only noVNC 1.3's page,
/// which names its entry module by a script tag (Debian 13's noVNC 1.6 imports it inline).
public final class ViewerBundle: Sendable {
    public let directory: String
    public let bundler: String

    /// The bundle made from the modules as they were at `sources`; nil bytes: esbuild failed
    /// on those (tried again once they change, or after `retryAfter`).
    private struct Made: Sendable {
        let sources: UInt64
        let version: String
        let body: [UInt8]?
        let at: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var made: Made?
        /// One build at a time: the pages asked for meanwhile load the modules one by one.
        var building = false
    }

    private let state = Mutex(State())
    /// Why the last bundle could not be made, for the gateway's log (said once per change).
    private let failure = Mutex<String?>(nil)
    /// A failed build (esbuild killed on a loaded machine, say) is tried again after this long.
    static let retryAfter: Duration = .seconds(60)

    /// Debian's esbuild.
    public static let debianBundler = "/usr/bin/esbuild"
    /// noVNC's entry module, and what its page names it by.
    static let entry = "app/ui.js"
    static let entryReference = "src=\"app/ui.js\""

    public init(directory: String, bundler: String = ViewerBundle.debianBundler) {
        self.directory = directory
        self.bundler = bundler
    }

    /// A bundle where esbuild is installed; nil otherwise.
    public static func installed(directory: String, bundler: String = ViewerBundle.debianBundler) -> ViewerBundle? {
        access(bundler, X_OK) == 0 ? ViewerBundle(directory: directory, bundler: bundler) : nil
    }

    /// The bundle for noVNC's modules as they are now: its version and bytes, made if need be;
    /// nil where it cannot be made, or while another caller makes it. Blocking (it reads the
    /// modules' metadata, and may run esbuild): call it off the event loop.
    public func current() -> (version: String, body: [UInt8])? {
        let sources = sourcesKey()
        enum Next { case known(Made), busy, build }
        let next: Next = state.withLock { state in
            if let known = state.made, known.sources == sources,
               known.body != nil || ContinuousClock.now < known.at.advanced(by: Self.retryAfter) {
                return .known(known)
            }
            if state.building { return .busy }
            state.building = true
            return .build
        }
        switch next {
        case .known(let known):
            return known.body.map { (known.version, $0) }
        case .busy:
            return nil
        case .build:
            let body = build()
            var version = Self.fnvOffset
            Self.fnv1a(body ?? [], into: &version)
            let made = Made(sources: sources, version: String(version, radix: 36), body: body, at: .now)
            state.withLock { state in
                state.made = made
                state.building = false
            }
            return body.map { (made.version, $0) }
        }
    }

    /// Makes the bundle in the background, where noVNC's page names the entry module (a
    /// gateway's start): the first page then finds it made.
    public func prepare() {
        DispatchQueue.global(qos: .utility).async { [self] in
            guard let page = try? String(contentsOfFile: directory + "/vnc.html", encoding: .utf8), Self.names(page) else { return }
            _ = current()
        }
    }

    /// Whether noVNC's page loads its entry module by a script tag (noVNC 1.3, Debian 12's),
    /// the one place the bundle can stand in for it. noVNC 1.6 (Debian 13's) imports it from
    /// a script in the page: no bundle there, and none is made.
    public static func names(_ page: String) -> Bool {
        page.contains(entryReference)
    }

    /// Why the bundle could not be made last time it was tried, once: nil when it was made or
    /// the reason was taken already.
    public func takeFailure() -> String? {
        failure.withLock { reason in
            defer { reason = nil }
            return reason
        }
    }

    /// `page` (noVNC's vnc.html) naming the bundle `version` in place of its entry module; as
    /// it is if it names no entry module the way noVNC's own page does.
    public static func pointing(_ page: String, to version: String) -> String {
        guard let range = page.range(of: entryReference) else { return page }
        return page.replacingCharacters(in: range, with: "src=\"app/ui.js?deskd=\(version)\"")
    }

    /// The bundle's version a request target asks for (`/app/ui.js?deskd=VERSION`); nil for any
    /// other target.
    public static func version(inTarget target: String) -> String? {
        guard let query = target.firstIndex(of: "?"), target[..<query] == "/" + entry else { return nil }
        let fields = target[target.index(after: query)...].split(separator: "&")
        return fields.first { $0.hasPrefix("deskd=") }.map { String($0.dropFirst("deskd=".count)) }
    }

    // MARK: Making it

    /// The modules' state: each .js file's path, inode, size and modification time, hashed.
    func sourcesKey() -> UInt64 {
        var hash = Self.fnvOffset
        func walk(_ relative: String, depth: Int) {
            guard depth < 8, let folder = opendir(directory + "/" + relative) else { return }
            var names: [(name: String, isFolder: Bool)] = []
            while let entry = readdir(folder) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard !name.hasPrefix(".") else { continue }
                let type = entry.pointee.d_type
                if type == UInt8(DT_DIR) { names.append((name, true)) }
                else if name.hasSuffix(".js") { names.append((name, false)) }
            }
            closedir(folder)
            for (name, isFolder) in names.sorted(by: { $0.name < $1.name }) {
                let path = relative + "/" + name
                if isFolder {
                    walk(path, depth: depth + 1)
                    continue
                }
                var info = stat()
                guard stat(directory + "/" + path, &info) == 0 else { continue }
                Self.fnv1a(path.utf8, into: &hash)
                [UInt64(info.st_ino), UInt64(info.st_size), UInt64(info.st_mtim.tv_sec), UInt64(info.st_mtim.tv_nsec)]
                    .withUnsafeBytes { Self.fnv1a($0, into: &hash) }
            }
        }
        for top in ["app", "core", "vendor"] { walk(top, depth: 0) }
        return hash
    }

    /// esbuild's bundle of the entry module, minified; nil (with the reason kept) if it fails,
    /// takes over ten seconds, or makes something too large to be noVNC's.
    func build() -> [UInt8]? {
        // esbuild follows symlinks and imports wherever they lead, which the gateway's own file
        // serving never does: it bundles only a tree that only root can change.
        for folder in ["", "/app", "/core", "/vendor"] {
            var info = stat()
            guard stat(directory + folder, &info) == 0 else { continue }
            guard info.st_uid == 0, info.st_mode & 0o022 == 0 else {
                failure.withLock { $0 = "\(directory + folder) is not root's alone (owner uid \(info.st_uid), mode \(String(info.st_mode & 0o7777, radix: 8))), so its modules are not bundled" }
                return nil
            }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bundler)
        process.arguments = [directory + "/" + Self.entry, "--bundle", "--format=esm", "--minify", "--log-level=error"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            failure.withLock { $0 = "\(bundler) could not be run (\(error))" }
            return nil
        }
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(10), execute: watchdog)
        // stderr is read alongside, so neither pipe fills while the other is read.
        let said = SaidBox(), reading = DispatchGroup(), errorHandle = errors.fileHandleForReading
        DispatchQueue.global().async(group: reading) { said.set(errorHandle.readDataToEndOfFile()) }
        let body = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        reading.wait()
        guard process.terminationReason == .exit, process.terminationStatus == 0, !body.isEmpty, body.count <= 16 << 20 else {
            let reason = String(decoding: said.get().prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            failure.withLock { $0 = "\(bundler) failed on \(directory)/\(Self.entry) (status \(process.terminationStatus))" + (reason.isEmpty ? "" : ": " + reason) }
            return nil
        }
        return [UInt8](body)
    }

    /// What esbuild said on stderr, from the thread that read it.
    private final class SaidBox: Sendable {
        private let data = Mutex<Data>(Data())
        func set(_ value: Data) { data.withLock { $0 = value } }
        func get() -> Data { data.withLock { $0 } }
    }

    /// FNV-1a, 64 bits: the modules' state and the bundle's version (names, not secrets).
    static let fnvOffset: UInt64 = 0xcbf2_9ce4_8422_2325

    static func fnv1a(_ bytes: some Sequence<UInt8>, into hash: inout UInt64) {
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    }
}
