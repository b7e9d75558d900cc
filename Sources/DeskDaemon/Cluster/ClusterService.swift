import DeskCore
import DeskLinux
import FoundationEssentials
import Logging
import ServiceLifecycle

/// Cluster desktops' side of deskd, when [slurm] listen is set: the listener their jobs report
/// to, and a look at squeue every poll interval, which is how deskd learns that Slurm ended a
/// job (its time limit, scancel by the user, a node's failure, a preemption) and ends the session
/// with Slurm's reason.
public struct ClusterService: Service {
    let service: SessionService

    public init(service: SessionService) {
        self.service = service
    }

    public func run() async throws {
        let environment = service.environment, logger = environment.logger
        guard let listen = service.configuration.slurm.listen else { return }
        var listening = false
        while !Task.isCancelledOrShuttingDown {
            if !listening {
                do {
                    try environment.cluster.hub.listen(on: listen) { [service] id, report, peer in
                        await service.registry.session(id: id)?.jobReported(report, from: peer)
                    }
                    listening = true
                    logger.info("listening for cluster desktops' jobs", metadata: ["slurm.listen": "\(listen.host):\(listen.port)"])
                } catch {
                    logger.error("cannot listen for cluster desktops' jobs; trying again in a minute", metadata: ["slurm.listen": "\(listen.host):\(listen.port)", "error": "\(error)"])
                }
            }
            await service.followClusterJobs()
            try? await Task.sleep(for: listening ? service.configuration.slurm.pollInterval : .seconds(60))
        }
    }
}

extension SessionService {
    /// One look at squeue for every cluster desktop's job. squeue not answering (slurmctld
    /// restarting) changes nothing: a session ends on what Slurm says, never on its silence.
    ///
    /// Only jobs submitted before squeue is asked are judged by its answer: a job whose sbatch
    /// returns while squeue runs is missing from an answer made before it existed, and must
    /// not be taken for one Slurm has forgotten.
    func followClusterJobs(now: Date = Date()) async {
        var followed: [(session: ManagedSession, jobID: String)] = []
        for managed in await registry.all where managed.isCluster {
            if let jobID = await managed.record.session.slurm?.jobId { followed.append((managed, jobID)) }
        }
        guard !followed.isEmpty else { return }
        let scheduler = environment.cluster.scheduler
        // squeue: Slurm answers when it answers (seconds on a busy controller).
        guard let rows = await onDedicatedThread({ scheduler.desktopJobs() }) else {
            logger.warning("squeue did not answer; cluster desktops keep their last known state")
            return
        }
        for (managed, jobID) in followed {
            await managed.jobObserved(rows[jobID], now: now)
        }
    }
}
