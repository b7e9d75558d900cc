/// What cluster desktops share: the listener their jobs report to and the scheduler they run under.
struct ClusterContext: Sendable {
    let hub: ClusterHub
    let scheduler: any SlurmScheduler
}
