import Foundation
import Glibc

/// deskd's benchmark: the same work done through deskd and by hand, in one run on one
/// machine, reported as medians, spreads and pair-by-pair ratios. Run as root:
/// `scripts/bench` (or `.build/release/deskbench --help`). Creates throwaway users deskb-1..8.
@main
struct Deskbench {
    static func main() async throws {
        let options = try Options(CommandLine.arguments.dropFirst())
        guard getuid() == 0 else {
            FileHandle.standardError.write(Data("deskbench starts desktops as throwaway users: run it as root.\n".utf8))
            exit(1)
        }
        let bench = try Bench(options: options)
        do {
            try await bench.run()
            bench.cleanUp()
        } catch {
            bench.cleanUp()
            FileHandle.standardError.write(Data("deskbench: \(error)\n".utf8))
            exit(1)
        }
    }
}
