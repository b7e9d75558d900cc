// deskd-job: a cluster desktop's Slurm job on its compute node, as the desktop's user, with no
// privileges. The job's script execs it with its spec (JobSpec, one line of JSON) on stdin. It
// brings up Xvnc and the desktop in a directory of its own, relays the login node's gateway to
// Xvnc over a key-authenticated hop, reports to deskd over another, warns the user when Slurm
// says the time is nearly up, and at the end leaves no process of the session behind.
//
// Exit status: 0 when the desktop ended as asked (logout, Slurm's signal, deskd's `end`), 1 when
// it failed or Xvnc died, 2 for a spec that is not deskd's.
import DeskJob
import Glibc

let spec = SpecReader.readStandardInput()
exit(DesktopJob.start(spec: spec))
