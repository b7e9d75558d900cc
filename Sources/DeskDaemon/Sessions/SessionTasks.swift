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

    /// Runs `work` in the group; work handed over before `run()` starts waits for it. After the
    /// group has ended (deskd is stopping), the work still runs, on a task of its own: an exit
    /// seen or a desktop owed at the last moment is not dropped.
    func spawn(_ work: @escaping @Sendable () async -> Void) {
        if case .terminated = enqueue.yield(work) { Task { await work() } }
    }

    /// Runs the work handed over until the service group shuts down. Called once: the queue has
    /// one reader. deskd lists it first among its services, so it is the last to stop.
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
