import DeskFuzzTargets
import Foundation
import Testing
import TestSupport

/// Every input a fuzzer ever crashed a target with (Tests/FuzzRegressions/TARGET/), and the seed
/// corpus (Fuzz/Corpus/TARGET/), through the same targets in every test run: no fuzzing
/// toolchain needed, and a fixed crash stays fixed.
@Suite struct FuzzRegressionTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func inputs(under folder: String) -> [(target: String, file: String)] {
        let root = repository.appendingPathComponent(folder)
        let targets = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return targets.sorted().flatMap { target in
            ((try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(target).path)) ?? [])
                .filter { !$0.hasPrefix(".") }.sorted().map { (target, root.appendingPathComponent(target).appendingPathComponent($0).path) }
        }
    }

    @Test func everyFolderNamesATarget() {
        for folder in ["Tests/FuzzRegressions", "Fuzz/Corpus"] {
            for (target, file) in Self.inputs(under: folder) where target != "canary" {
                #expect(FuzzTargets.all[target] != nil, "\(file) is under \(target), which is no target of DeskFuzzTargets")
            }
        }
        #expect(!Self.inputs(under: "Fuzz/Corpus").isEmpty, "the seed corpus is missing")
    }

    /// Fuzz/ links deskd's own sources by symlink and names their modules in a manifest of its
    /// own, which only scripts/fuzz builds: a module the fuzzed sources came to import (as DeskWeb
    /// did DeskGatewayMetrics) is seen missing here, in every test run, not at the end of CI.
    @Test func theFuzzPackageHasEveryModuleTheFuzzedSourcesImport() throws {
        let fuzz = Self.repository.appendingPathComponent("Fuzz")
        let manifest = try String(contentsOf: fuzz.appendingPathComponent("Package.swift"), encoding: .utf8)
        let sources = fuzz.appendingPathComponent("Sources")
        let own = Set(try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("Sources").path))
        let linked = Set(try FileManager.default.contentsOfDirectory(atPath: sources.path))
        var imported: [String: String] = [:]  // module → a file that imports it
        for module in linked {
            let folder = sources.appendingPathComponent(module).resolvingSymlinksInPath()
            guard let files = FileManager.default.enumerator(atPath: folder.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for line in text.split(separator: "\n") where line.hasPrefix("import ") {
                    let name = String(line.dropFirst("import ".count).split(separator: " ").first ?? "")
                    if own.contains(name) { imported[name] = "\(module)/\(file)" }
                }
            }
        }
        #expect(!imported.isEmpty, "no fuzzed source imports one of deskd's modules: the walk of Fuzz/Sources found nothing")
        for (name, file) in imported.sorted(by: { $0.key < $1.key }) {
            #expect(linked.contains(name), "\(file) imports \(name), which Fuzz/Sources does not link: add Fuzz/Sources/\(name) -> ../../Sources/\(name)")
            #expect(manifest.contains("name: \"\(name)\""), "\(file) imports \(name), which Fuzz/Package.swift names no target for: add it with the dependencies Package.swift gives it")
        }
    }

    /// On a thread of its own, as libFuzzer runs a target: gateway-http blocks its caller.
    @Test func theRegressionsAndTheSeedsRunThroughTheirTargets() async throws {
        let ran = try await withTaskExecutorPreference(DedicatedThreadExecutor.shared) {
            var ran = 0
            for folder in ["Tests/FuzzRegressions", "Fuzz/Corpus"] {
                for (target, file) in Self.inputs(under: folder) where target != "canary" {
                    guard let run = FuzzTargets.all[target] else { continue }
                    run(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
                    ran += 1
                }
            }
            return ran
        }
        #expect(ran > 0)
    }
}
