import ServiceLifecycle

/// The work sessions start on their own: the reaction to a process's exit (which the host's
/// exit monitor reports on a thread of its own), a desktop launched after the start's reply.
/// Each runs as a child task of one task group, which `run()` keeps for as long as the service
/// group runs it, rather than as a task nobody owns: on shutdown they are cancelled with it.
public final class SessionTasks: Service, Sendable {
    private let queue: AsyncStream<@Sendable () async -> Void>
    private let enqueue: AsyncStream<@Sendable () async -> Void>.Continuation

    init() {
        (queue, enqueue) = AsyncStream.makeStream()
    }

    /// Runs `work` in the group; work handed over before `run()` starts waits for it.
    func spawn(_ work: @escaping @Sendable () async -> Void) {
        enqueue.yield(work)
    }

    /// Runs the work handed over until the service group shuts down. Called once.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for await work in self.queue {
                    group.addTask { await work() }
                }
            }
        }
    }
}
