import CDeskShims
import DeskCore
import DeskLinux
import Glibc
import Synchronization

/// What the job's other threads (signals, deskd's commands, the relays) tell its main thread,
/// which alone starts and ends processes.
enum JobEvent: Sendable {
    case signal(Int32)
    case command(JobCommand.Verb)
    /// A relay began or ended: the viewer count may have changed.
    case relaysChanged
}
