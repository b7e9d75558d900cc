/// The life of a session as deskd sees it.
public enum SessionState: String, Codable, Sendable, CaseIterable {
    /// A cluster desktop whose Slurm job waits for a node (its `slurm.reason` says why).
    case queued
    /// Xvnc launched, RFB not yet answering.
    case starting
    /// Xvnc completes an RFB handshake.
    case ready
    /// Xvnc is gone.
    case exited
    /// Xvnc is alive but does not complete a handshake in time.
    case unresponsive
    /// Being ended (a kill, a reap, an exit): its processes are being stopped.
    case stopping
}
