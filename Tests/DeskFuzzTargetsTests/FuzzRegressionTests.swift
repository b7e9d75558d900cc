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
