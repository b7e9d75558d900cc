@testable import DeskDaemon
import DeskCore
import DeskLinux
import Foundation
import Testing

/// Admitting `start --slurm`, with no host at all (StartAdmissionTests' accounts and facts): the
/// same checks of what was asked for and who for as any start, then the cluster's own: whether
/// this deskd submits at all, the per-user cap of cluster desktops, and the site's defaults.
@Suite struct ClusterAdmissionTests {
    typealias Facts = StartAdmissionTests

    /// Admission on a deskd whose [slurm] listen is set, with the registry holding `local` desktops
    /// on this host and `cluster` ones on the cluster, per uid.
    static func admission(facts: AdmissionFacts = Facts.facts(), local: [UInt32: Int] = [:], cluster: [UInt32: Int] = [:],
                          configure: (inout DaemonConfiguration) -> Void = { _ in }) -> StartAdmission {
        var configuration = DaemonConfiguration()
        configuration.templateDirectories = [Facts.templates]
        configuration.xvncPath = "/usr/bin/Xtigervnc"
        configuration.slurm.listen = ListenAddress(host: "10.77.0.1", port: 7010)
        configure(&configuration)
        var byOwner = local
        for (uid, count) in cluster { byOwner[uid, default: 0] += count }
        let snapshot = SessionRegistry.Snapshot(count: byOwner.values.reduce(0, +), byOwner: byOwner, clusterByOwner: cluster)
        return StartAdmission(configuration: configuration, facts: facts, registry: snapshot)
    }

    static let slurm = StartRequest(slurm: SlurmOptions())

    @Test func withoutListenNothingGoesToSlurmAndTheSentenceNamesTheFile() {
        let off = Self.admission { $0.slurm.listen = nil }
        let refusal = Facts.refusal(off, Self.slurm)
        #expect(refusal?.code == .slurmOff)
        #expect(refusal?.message == "this deskd submits no desktops to Slurm; an admin turns that on with listen in the [slurm] section of /etc/deskd/deskd.toml, or leave out --slurm for a desktop on this host.")
        let named = Self.admission { $0.slurm.listen = nil; $0.configurationFile = "/srv/desk/deskd.toml" }
        #expect(Facts.refusal(named, Self.slurm)?.message.contains("the [slurm] section of /srv/desk/deskd.toml,") == true)
        // A start without --slurm is not the cluster's business.
        #expect(Facts.refusal(off, StartRequest()) == nil)
    }

    @Test func theCapCountsTheUsersClusterDesktopsQueuedOrNotAndNoneOfTheHosts() throws {
        let sentence = "alice has 2 cluster desktops already, the most [slurm] max_per_user allows; end one first (deskctl list, then deskctl kill :N)."
        let full = Self.admission(cluster: [1001: 2])
        #expect(Facts.refusal(full, Self.slurm)?.code == .limitReached)
        #expect(Facts.refusal(full, Self.slurm)?.message == sentence)
        let one = Self.admission(cluster: [1001: 1]) { $0.slurm.maxPerUser = 1 }
        #expect(Facts.refusal(one, Self.slurm)?.message == "alice has 1 cluster desktop already, the most [slurm] max_per_user allows; end one first (deskctl list, then deskctl kill :N).")
        // One short of the cap; desktops on this host, and the host's own caps, do not count.
        let room = Self.admission(local: [1001: 5], cluster: [1001: 1, 1002: 7]) { $0.limits.maxSessionsPerUser = 1; $0.limits.maxSessions = 3 }
        #expect(try room.admit(Self.slurm, caller: Facts.aliceCalls).account == Facts.alice)
    }

    @Test func anAdminsStartCountsAgainstTheUserItIsFor() throws {
        let admission = Self.admission(cluster: [1002: 2])
        let refusal = Facts.refusal(admission, StartRequest(user: "bob", slurm: SlurmOptions()), by: Facts.rootCalls)
        #expect(refusal?.code == .limitReached && refusal?.message.hasPrefix("bob has 2 cluster desktops already") == true)
        // Root has no cluster desktops of its own to count, and may not have one.
        #expect(Facts.refusal(admission, Self.slurm, by: Facts.rootCalls)?.code == .userNotAllowed)
        #expect(try admission.admit(StartRequest(user: "alice", slurm: SlurmOptions()), caller: Facts.rootCalls).account == Facts.alice)
        #expect(Facts.refusal(admission, StartRequest(user: "bob", slurm: SlurmOptions()))?.code == .permissionDenied)
    }

    @Test func aDisplayIsNotForAClusterDesktop() {
        let refusal = Facts.refusal(Self.admission(), StartRequest(display: Display(5), slurm: SlurmOptions()))
        #expect(refusal?.code == .badRequest)
        #expect(refusal?.message == "--display picks a display on this host; a cluster desktop gets its own on its node. Leave out --display (deskctl names the new desktop :N for kill and url), or leave out --slurm for :5 here.")
    }

    @Test func theSitesDefaultsFillWhatTheRequestLeavesOpen() throws {
        let admission = Self.admission { $0.slurm.partition = "batch"; $0.slurm.account = "lab"; $0.slurm.gres = "gpu:1"; $0.slurm.time = "2:00:00" }
        let plan = try admission.admit(Self.slurm, caller: Facts.aliceCalls)
        #expect(plan.slurm == SlurmOptions(partition: "batch", time: "2:00:00", gres: "gpu:1", account: "lab"))
        #expect(plan.display == nil && !plan.userXstartup && plan.account == Facts.alice)
        let some = try admission.admit(StartRequest(slurm: SlurmOptions(partition: "gpu", time: "30")), caller: Facts.aliceCalls)
        #expect(some.slurm == SlurmOptions(partition: "gpu", time: "30", gres: "gpu:1", account: "lab"))
        let all = SlurmOptions(partition: "short", time: "1-00:00:00", gres: "gpu:a100:2", account: "proj")
        #expect(try admission.admit(StartRequest(slurm: all), caller: Facts.aliceCalls).slurm == all)
        // No site default: sbatch is left to Slurm's own (only time has one in deskd).
        #expect(try Self.admission().admit(Self.slurm, caller: Facts.aliceCalls).slurm == SlurmOptions(time: "4:00:00"))
    }

    @Test func whatTheLoginNodeLacksIsTheNodesBusiness() throws {
        // No Xtigervnc here, no xfce here, little memory here: the desktop runs on a node.
        let bare = Self.admission(facts: Facts.facts(installed: [], memory: 1 << 20)) {
            $0.memoryReserve = 2 << 30
            $0.honourUserXstartup = true
        }
        let plan = try bare.admit(StartRequest(desktop: "xfce", slurm: SlurmOptions()), caller: Facts.aliceCalls)
        #expect(plan.template.name == "xfce" && plan.slurm != nil && !plan.userXstartup)
        // What was asked for is checked all the same.
        #expect(Facts.refusal(bare, StartRequest(desktop: "nosuch", slurm: SlurmOptions()))?.code == .invalidDesktop)
        #expect(Facts.refusal(bare, StartRequest(depth: 15, slurm: SlurmOptions()))?.code == .invalidDepth)
    }
}
