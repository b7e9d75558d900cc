import DeskCore
import FoundationEssentials
import Testing

extension SlurmCoreTests {
    @Suite struct Job {
        static let now = Date(timeIntervalSince1970: 1_790_000_000)
        static let running = SlurmJob(jobId: "12", node: "node2", partition: "debug", state: "RUNNING", reason: "None", timeLimit: "4:00:00",
                                      endsAt: Date(timeIntervalSince1970: 1_790_014_290))

        @Test(arguments: ["COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
                          "REVOKED", "SPECIAL_EXIT"])
        func endedStates(state: String) {
            let job = SlurmJob(jobId: "1", state: state)
            #expect(job.hasEnded)
            #expect(!job.isPending)
        }

        @Test(arguments: ["PENDING", "REQUEUED", "REQUEUE_HOLD", "SUSPENDED"])
        func pendingStates(state: String) {
            let job = SlurmJob(jobId: "1", state: state)
            #expect(job.isPending)
            #expect(!job.hasEnded)
        }

        @Test(arguments: ["RUNNING", "COMPLETING", "CONFIGURING", "STOPPED", "RESIZING", "SIGNALING", "STAGE_OUT", "running", ""])
        func neitherEndedNorPending(state: String) {
            let job = SlurmJob(jobId: "1", state: state)
            #expect(!job.hasEnded)
            #expect(!job.isPending)
        }

        @Test func secondsLeftAreWholeAndNeverNegative() {
            var job = Self.running
            #expect(job.secondsLeft(now: Self.now) == 14_290)
            job.endsAt = Self.now.addingTimeInterval(100.7)
            #expect(job.secondsLeft(now: Self.now) == 100)
            job.endsAt = Self.now
            #expect(job.secondsLeft(now: Self.now) == 0)
            job.endsAt = Self.now.addingTimeInterval(-3600)
            #expect(job.secondsLeft(now: Self.now) == 0)
            job.endsAt = nil
            #expect(job.secondsLeft(now: Self.now) == nil)
        }

        @Test func itsJSONKeysAreTheScriptingContract() throws {
            let json = String(decoding: try JSONEncoder.desk.encode(Self.running), as: UTF8.self)
            #expect(json == #"{"endsAt":"2026-09-21T18:11:30Z","jobId":"12","node":"node2","partition":"debug","reason":"None","state":"RUNNING","timeLimit":"4:00:00"}"#)
            #expect(try JSONDecoder.desk.decode(SlurmJob.self, from: Data(json.utf8)) == Self.running)
            // What is not known is left out, not null.
            let queued = SlurmJob(jobId: "13", state: "PENDING")
            #expect(String(decoding: try JSONEncoder.desk.encode(queued), as: UTF8.self) == #"{"jobId":"13","state":"PENDING"}"#)
            #expect(try JSONDecoder.desk.decode(SlurmJob.self, from: Data(#"{"jobId":"13","state":"PENDING"}"#.utf8)) == queued)
        }

        static func session(slurm: SlurmJob?) -> Session {
            var session = Session(id: SlurmCoreTests.sessionID, user: "ana", uid: 1001, gid: 1001, display: Display(12),
                                  endpoint: .unixSocket(path: "/run/deskd/by-id/0123/rfb.sock"), pid: 0, pidStartTicks: 0,
                                  executable: "/usr/bin/Xtigervnc", state: .ready, startedAt: now, desktop: "xfce",
                                  geometry: Geometry(width: 1920, height: 1080), depth: 24)
            session.slurm = slurm
            return session
        }

        @Test func aSessionCarriesItsJobThroughItsJSON() throws {
            let session = Self.session(slurm: Self.running)
            let written = try JSONEncoder.desk.encode(session)
            let text = String(decoding: written, as: UTF8.self)
            #expect(text.contains(#""slurm":{"endsAt":"2026-09-21T18:11:30Z","jobId":"12","node":"node2","partition":"debug","reason":"None","state":"RUNNING","timeLimit":"4:00:00"}"#))
            #expect(try JSONDecoder.desk.decode(Session.self, from: written) == session)
            #expect(try JSONDecoder.desk.decode(Session.self, from: JSONEncoder.deskWire.encode(session)) == session)
            let queued = Self.session(slurm: SlurmJob(jobId: "13", partition: "gpu", state: "PENDING", reason: "Priority"))
            #expect(try JSONDecoder.desk.decode(Session.self, from: JSONEncoder.desk.encode(queued)) == queued)
        }

        @Test func aSessionOnThisHostWritesNoSlurmKey() throws {
            let session = Self.session(slurm: nil)
            let written = try JSONEncoder.desk.encode(session)
            #expect(!String(decoding: written, as: UTF8.self).contains("slurm"))
            #expect(try JSONDecoder.desk.decode(Session.self, from: written).slurm == nil)
        }
    }
}
