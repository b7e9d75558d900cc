import Foundation
import Glibc

struct Options {
    var pairs = 15
    var vncserverRuns = 5
    var listRuns = 50
    /// Starts at once in the concurrency measure, and the sessions list, kill and reap run with.
    var concurrent = 40
    /// The scale measure's sessions (fewer where memory is short).
    var sessions = 200
    var scaleUsers = 20
    /// Only the scale measure.
    var scaleOnly = false
    /// Only the start measures (one start, the wrapper-shaped desktop, Xfce).
    var startOnly = false
    var users = 8
    var idleSeconds = 60
    var relayUpdates = 30
    var relayRounds = 3
    var relayPings = 300
    /// Only the browser relay measure (deskd's gateway against websockify).
    var relayOnly = false
    var portalOnly = false
    /// Only what a person feels in Chromium (scripts/bench-feel): click to pixels, key to pixels.
    var feelOnly = false
    var feelRounds = 5
    /// Only the cluster measures, against a running deskd with [slurm] (scripts/bench-slurm runs
    /// deskbench on the Slurm lab's login machine): its control socket.
    var clusterSocket: String?
    /// That deskd's gateway, on the login machine's loopback.
    var clusterWebPort = 8080
    var clusterRounds = 7
    var products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path

    init<S: Sequence>(_ arguments: S) throws where S.Element == String {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            func value() throws -> Int {
                guard let text = iterator.next(), let n = Int(text), n > 0 else { throw Usage("\(argument) needs a positive number") }
                return n
            }
            switch argument {
            case "--pairs": pairs = try value()
            case "--vncserver-runs": vncserverRuns = try value()
            case "--list-runs": listRuns = try value()
            case "--concurrent": concurrent = try value()
            case "--sessions": sessions = try value()
            case "--scale-only": scaleOnly = true
            case "--start-only": startOnly = true
            case "--idle-seconds": idleSeconds = try value()
            case "--relay-updates": relayUpdates = try value()
            case "--relay-rounds": relayRounds = try value()
            case "--relay-pings": relayPings = try value()
            case "--relay-only": relayOnly = true
            case "--portal-only": portalOnly = true
            case "--feel-only": feelOnly = true
            case "--feel-rounds": feelRounds = try value()
            case "--cluster":
                guard let socket = iterator.next(), socket.hasPrefix("/") else { throw Usage("--cluster needs deskd's control socket, an absolute path") }
                clusterSocket = socket
            case "--cluster-web-port": clusterWebPort = try value()
            case "--cluster-rounds": clusterRounds = try value()
            case "--quick": pairs = 5; vncserverRuns = 2; listRuns = 15; idleSeconds = 10; relayUpdates = 10; relayPings = 100
            case "--help", "-h":
                print("usage: deskbench [--pairs N] [--vncserver-runs N] [--list-runs N] [--concurrent N] [--sessions N] [--idle-seconds N]\n"
                      + "                 [--relay-updates N] [--relay-rounds N] [--relay-pings N] [--relay-only] [--portal-only] [--feel-only] [--feel-rounds N] [--scale-only] [--start-only] [--quick]\n"
                      + "                 [--cluster SOCKET [--cluster-web-port N] [--cluster-rounds N]]")
                exit(0)
            default: throw Usage("unknown option \(argument); see deskbench --help")
            }
        }
        guard concurrent <= 40, concurrent % users == 0 else { throw Usage("--concurrent must be a multiple of \(users), at most 40") }
        guard sessions >= concurrent, sessions <= 1000 else { throw Usage("--sessions must be from --concurrent (\(concurrent)) to 1000") }
    }

    struct Usage: Error, CustomStringConvertible {
        let description: String
        init(_ text: String) { description = text }
    }
}
