import DeskFrontProtocol
@testable import DeskWeb
import Foundation
import Glibc
import NIOCore
import Synchronization
import Testing

/// A temporary directory for one test, removed afterwards.
final class Scratch {
    let path: String

    init() throws {
        // Short: a Unix socket's path must fit in 107 bytes.
        path = "/tmp/dgw-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(path, 0o700) == 0 else { throw POSIXError(.EEXIST) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    @discardableResult
    func file(_ name: String, _ contents: String) -> String {
        let file = path + "/" + name
        _ = FileManager.default.createFile(atPath: file, contents: Data(contents.utf8))
        return file
    }

    func directory(_ name: String) -> String {
        let directory = path + "/" + name
        mkdir(directory, 0o755)
        return directory
    }
}

@Suite struct StaticFilesTests {
    @Test(arguments: [
        "/../etc/passwd", "/app/../../etc/passwd", "/%2e%2e/etc/passwd", "/%2E%2e/etc/passwd", "/app/%2e%2e/vnc.html",
        "/app%2f..%2f..%2fetc%2fpasswd", "/vnc.html%00.png", "/app//vnc.html", "/.hidden.js", "/./vnc.html", "/",
        "vnc.html", "/a%zzb.js", "/a%2", "/app\\..\\vnc.html", "/%5c..%5cvnc.html", "/%ff.js",
    ])
    func aPathThatCouldLeaveTheDirectoryIsRefused(target: String) {
        #expect(StaticFiles.components(ofTarget: target) == nil)
    }

    @Test func aPlainPathIsDecodedAndItsQueryDropped() {
        #expect(StaticFiles.components(ofTarget: "/app/images/icons/novnc%20192x192.png?v=1#x") == ["app", "images", "icons", "novnc 192x192.png"])
        #expect(StaticFiles.components(ofTarget: "/vnc.html#autoconnect=1") == ["vnc.html"])
    }

    @Test func noVNCsPageGetsTheDropScriptBeforeItsHeadEndsAndNothingElseChanges() {
        let tag = StaticFiles.dropScriptTag
        let added = StaticFiles.inserting(tag, beforeHeadEndOf: ByteBuffer(string: "<html><head><title>noVNC</title>\n</HEAD><body></head></body>"))
        #expect(String(buffer: added) == "<html><head><title>noVNC</title>\n\(tag)</HEAD><body></head></body>")
        #expect(tag == "<script src=\"/deskd-drop.js\" defer></script>\n")
        // A page without a head's end (the test fixture's noVNC) is served as it is.
        for page in ["<!DOCTYPE html><title>noVNC</title>\n", "", "</head", "<head></hea"] {
            #expect(String(buffer: StaticFiles.inserting(tag, beforeHeadEndOf: ByteBuffer(string: page))) == page)
        }
        #expect(StaticFiles.components(ofTarget: "/vnc.html#autoconnect=1&deskd_session=ab12") == StaticFiles.viewerPage)
    }

    @Test func contentTypesAreNoVNCsAndNothingElse() {
        #expect(StaticFiles.contentType(of: "vnc.html") == "text/html; charset=utf-8")
        #expect(StaticFiles.contentType(of: "ui.js") == "text/javascript; charset=utf-8")
        #expect(StaticFiles.contentType(of: "base.css") == "text/css; charset=utf-8")
        #expect(StaticFiles.contentType(of: "a.svg") == "image/svg+xml")
        #expect(StaticFiles.contentType(of: "a.PNG") == "image/png")
        #expect(StaticFiles.contentType(of: "favicon.ico") == "image/x-icon")
        #expect(StaticFiles.contentType(of: "de.json") == "application/json")
        #expect(StaticFiles.contentType(of: "Orbitron700.woff") == "font/woff")
        for name in ["Makefile", "README.md", "novnc_proxy", "validate.pl", "x.sh", "x"] {
            #expect(StaticFiles.contentType(of: name) == nil)
        }
    }

    @Test func aFileInTheDirectoryIsReadWhole() throws {
        let scratch = try Scratch()
        _ = scratch.directory("app")
        scratch.file("app/ui.js", "export default 1;\n")
        let answer = try #require(StaticFiles(directory: scratch.path).read(target: "/app/ui.js", allocator: ByteBufferAllocator()))
        guard case .file(let body, let contentType, let tag) = answer else { Issue.record("\(answer)"); return }
        #expect(String(buffer: body) == "export default 1;\n")
        #expect(contentType == "text/javascript; charset=utf-8")
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count > 6, "\(tag)")
    }

    /// A browser that holds a file asks by its tag and gets 304 without the file being read; a
    /// changed file (a package's upgrade renames a new one into place) has a new tag.
    @Test func aFileTheBrowserHoldsIsNotSentAgainUntilItChanges() throws {
        let scratch = try Scratch()
        scratch.file("ui.js", "export default 1;\n")
        let files = StaticFiles(directory: scratch.path)
        guard case .file(_, _, let tag)? = files.read(target: "/ui.js", allocator: ByteBufferAllocator()) else { Issue.record("no file"); return }
        for held in [tag, "W/" + tag, "\"other\", \(tag) ", "*"] {
            guard case .notModified(let same)? = files.read(target: "/ui.js", ifNoneMatch: held, allocator: ByteBufferAllocator()) else {
                Issue.record("If-None-Match: \(held) was sent the file"); continue
            }
            #expect(same == tag)
        }
        guard case .file? = files.read(target: "/ui.js", ifNoneMatch: "\"other\"", allocator: ByteBufferAllocator()) else { Issue.record("another tag got no file"); return }
        scratch.file("new.js", "export default 2;\n")
        #expect(rename(scratch.path + "/new.js", scratch.path + "/ui.js") == 0)
        guard case .file(let body, _, let newTag)? = files.read(target: "/ui.js", ifNoneMatch: tag, allocator: ByteBufferAllocator()) else { Issue.record("the new file was not sent"); return }
        #expect(newTag != tag && String(buffer: body) == "export default 2;\n")
    }

    @Test func theViewerPageNamesTheBundleOfItsModulesAndOnlyThatTargetAsksForIt() {
        let page = "<head><script src=\"app/error-handler.js\"></script>\n<script type=\"module\" crossorigin=\"anonymous\" src=\"app/ui.js\"></script></head>"
        #expect(ViewerBundle.pointing(page, to: "k3x") == page.replacingOccurrences(of: "src=\"app/ui.js\"", with: "src=\"app/ui.js?deskd=k3x\""))
        #expect(ViewerBundle.pointing("<head></head>", to: "k3x") == "<head></head>")
        #expect(ViewerBundle.version(inTarget: "/app/ui.js?deskd=k3x") == "k3x")
        #expect(ViewerBundle.version(inTarget: "/app/ui.js?x=1&deskd=k3x") == "k3x")
        for target in ["/app/ui.js", "/app/rfb.js?deskd=k3x", "/vnc.html?deskd=k3x", "/x/app/ui.js?deskd=k3x"] {
            #expect(ViewerBundle.version(inTarget: target) == nil, "\(target)")
        }
    }

    /// Debian's esbuild makes one file of noVNC's modules, and makes it again when one changes;
    /// where it cannot, there is no bundle and the reason is kept for the log.
    @Test func esbuildBundlesTheModulesAgainWhenOneChanges() throws {
        let scratch = try Scratch()
        _ = scratch.directory("app")
        _ = scratch.directory("core")
        scratch.file("app/ui.js", "import { word } from '../core/word.js';\ndocument.title = word();\n")
        scratch.file("core/word.js", "export function word() { return 'first-' + 'module'; }\n")
        let missing = ViewerBundle(directory: scratch.path, bundler: scratch.path + "/no-esbuild")
        #expect(missing.current() == nil)
        #expect(missing.takeFailure()?.contains("could not be run") == true)
        #expect(missing.takeFailure() == nil)
        guard getuid() == 0 else {
            print("StaticFilesTests: skipped the bundle's test: not root (only a tree root owns is bundled, and the test's is the runner's)")
            return
        }
        guard let bundle = ViewerBundle.installed(directory: scratch.path) else {
            print("StaticFilesTests: skipped the bundle's test: \(ViewerBundle.debianBundler) is not installed (scripts/install-deps installs it)")
            return
        }
        let first = try #require(bundle.current(), "\(bundle.takeFailure() ?? "")")
        let text = String(decoding: first.body, as: UTF8.self)
        #expect(text.contains("first-") && !text.contains("import"), "\(text)")
        #expect(bundle.current()?.version == first.version)
        // Pages asked for at once all get the bundle made already.
        let versions = Mutex<[String?]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let version = bundle.current()?.version
            versions.withLock { $0.append(version) }
        }
        #expect(versions.withLock { $0 } == Array(repeating: first.version, count: 8))
        scratch.file("core/word.js", "export function word() { return 'second-' + 'module'; }\n")
        let second = try #require(bundle.current())
        #expect(second.version != first.version && String(decoding: second.body, as: UTF8.self).contains("second-"))
        scratch.file("core/word.js", "export function word( { broken\n")
        #expect(bundle.current() == nil)
        #expect(bundle.takeFailure()?.contains("failed on") == true)
        // A tree someone besides root may change is not bundled (esbuild follows symlinks).
        scratch.file("core/word.js", "export function word() { return 'third-' + 'module'; }\n")
        #expect(chmod(scratch.path + "/core", 0o777) == 0)
        #expect(bundle.current() == nil)
        #expect(bundle.takeFailure()?.contains("is not root's alone") == true)
    }

    @Test func noVNCsCodeIsAskedForEachTimeAndItsImagesKeptAnHour() {
        for target in ["/app/ui.js", "/vnc.html", "/app/styles/base.css", "/defaults.json", "/core/rfb.js?v=1", "/nothing"] {
            #expect(StaticFiles.cacheControl(forTarget: target) == "no-cache", "\(target)")
        }
        for target in ["/app/images/connect.svg", "/app/sounds/bell.oga", "/app/images/icons/novnc-192x192.png"] {
            #expect(StaticFiles.cacheControl(forTarget: target) == "max-age=3600", "\(target)")
        }
        #expect(ViewerBundle.names("<script type=\"module\" crossorigin=\"anonymous\" src=\"app/ui.js\"></script>"))
        // noVNC 1.6's page imports its entry from a script of its own: no bundle for it.
        #expect(!ViewerBundle.names("<script type=\"module\">import UI from \"./app/ui.js\";</script>"))
    }

    /// Symlinks are not followed, whether they name a file or a directory, inside or out.
    @Test func aSymlinkOutOfTheDirectoryIsNotFollowed() throws {
        let scratch = try Scratch()
        let outside = try Scratch()
        outside.file("secret.json", "{}")
        let root = scratch.directory("novnc")
        #expect(symlink(outside.path + "/secret.json", root + "/secret.json") == 0)
        #expect(symlink(outside.path, root + "/app") == 0)
        scratch.file("novnc/vnc.html", "<html>")
        #expect(symlink("vnc.html", root + "/vnc_auto.html") == 0)
        let files = StaticFiles(directory: root)
        #expect(files.read(target: "/secret.json", allocator: ByteBufferAllocator()) == nil)
        #expect(files.read(target: "/app/secret.json", allocator: ByteBufferAllocator()) == nil)
        #expect(files.read(target: "/vnc_auto.html", allocator: ByteBufferAllocator()) == nil)
        #expect(files.read(target: "/vnc.html", allocator: ByteBufferAllocator()) != nil)
    }

    @Test func aFIFOADirectoryOrAnUnservedTypeIsNotFound() throws {
        let scratch = try Scratch()
        #expect(mkfifo(scratch.path + "/pipe.js", 0o644) == 0)
        _ = scratch.directory("dir.js")
        scratch.file("notes.md", "# notes")
        let files = StaticFiles(directory: scratch.path)
        for target in ["/pipe.js", "/dir.js", "/notes.md", "/missing.js"] {
            #expect(files.read(target: target, allocator: ByteBufferAllocator()) == nil, "\(target)")
        }
    }
}
