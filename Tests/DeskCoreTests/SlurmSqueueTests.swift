import DeskCore
import FoundationEssentials
import Testing

extension SlurmCoreTests {
    /// Lines as `squeue --noheader --states=all --format='%i|%T|%r|%N|%P|%l|%L'` prints them (and
    /// with `|%S`, the start time, as deskd asks now)
    /// (Slurm 22.05): `None` for no reason, an empty node list while pending, the time limit as
    /// the time left of a job not yet started, `0:00` left for one that ended.
    @Suite struct Squeue {
        static let now = Date(timeIntervalSince1970: 1_790_000_000)

        @Test func theFormatIsTheOneTheRowsAreReadIn() {
            #expect(SqueueRow.format == "%i|%T|%r|%N|%P|%l|%L|%S")
        }

        @Test func aRunningJob() {
            #expect(SqueueRow(line: "12|RUNNING|None|node2|debug|4:00:00|3:58:10", clock: .utc)
                == SqueueRow(jobId: "12", state: "RUNNING", reason: nil, node: "node2", partition: "debug", timeLimit: "4:00:00", secondsLeft: 14_290))
        }

        @Test(arguments: [
            ("13|PENDING|Resources||debug|4:00:00|4:00:00",
             SqueueRow(jobId: "13", state: "PENDING", reason: "Resources", node: nil, partition: "debug", timeLimit: "4:00:00", secondsLeft: 14_400)),
            ("14|PENDING|ReqNodeNotAvail, UnavailableNodes:node1||debug|1-00:00:00|1-00:00:00",
             SqueueRow(jobId: "14", state: "PENDING", reason: "ReqNodeNotAvail, UnavailableNodes:node1", node: nil, partition: "debug",
                       timeLimit: "1-00:00:00", secondsLeft: 86_400)),
            ("15|PENDING|Priority||gpu|30:00|30:00",
             SqueueRow(jobId: "15", state: "PENDING", reason: "Priority", node: nil, partition: "gpu", timeLimit: "30:00", secondsLeft: 1800)),
        ])
        func pendingJobs(line: String, row: SqueueRow) {
            #expect(SqueueRow(line: Substring(line), clock: .utc) == row)
        }

        @Test(arguments: [
            ("16|TIMEOUT|TimeLimit|node2|debug|30:00|0:00",
             SqueueRow(jobId: "16", state: "TIMEOUT", reason: "TimeLimit", node: "node2", partition: "debug", timeLimit: "30:00", secondsLeft: 0)),
            ("17|CANCELLED|None|node1|debug|4:00:00|0:00",
             SqueueRow(jobId: "17", state: "CANCELLED", reason: nil, node: "node1", partition: "debug", timeLimit: "4:00:00", secondsLeft: 0)),
            ("18|NODE_FAIL|NodeDown|node3|gpu|2-00:00:00|0:00",
             SqueueRow(jobId: "18", state: "NODE_FAIL", reason: "NodeDown", node: "node3", partition: "gpu", timeLimit: "2-00:00:00", secondsLeft: 0)),
            ("19|COMPLETED|None|node2|debug|4:00:00|0:00",
             SqueueRow(jobId: "19", state: "COMPLETED", reason: nil, node: "node2", partition: "debug", timeLimit: "4:00:00", secondsLeft: 0)),
        ])
        func endedJobs(line: String, row: SqueueRow) {
            #expect(SqueueRow(line: Substring(line), clock: .utc) == row)
        }

        @Test func aTimeLeftThatIsNoTimeIsNone() {
            #expect(SqueueRow(line: "20|RUNNING|None|node2|debug|4:00:00|INVALID", clock: .utc)
                == SqueueRow(jobId: "20", state: "RUNNING", node: "node2", partition: "debug", timeLimit: "4:00:00", secondsLeft: nil))
            #expect(SqueueRow(line: "21|RUNNING|None|node2|long|UNLIMITED|UNLIMITED", clock: .utc)
                == SqueueRow(jobId: "21", state: "RUNNING", node: "node2", partition: "long", timeLimit: "UNLIMITED", secondsLeft: nil))
            #expect(SqueueRow(line: "22|PENDING|PartitionConfig||debug|NOT_SET|NOT_SET", clock: .utc)
                == SqueueRow(jobId: "22", state: "PENDING", reason: "PartitionConfig", partition: "debug", timeLimit: "NOT_SET", secondsLeft: nil))
        }

        @Test func anArrayTasksIdIsOne() {
            #expect(SqueueRow(line: "23_4|RUNNING|None|node1|debug|4:00:00|1:00", clock: .utc)?.jobId == "23_4")
        }

        @Test(arguments: [
            "",
            "12|RUNNING|None|node2|debug|4:00:00",                  // 6 fields
            "12|RUNNING|None|node2|debug|4:00:00|3:58:10|2026-11-26T12:00:00|x",  // 9 fields
            "abc|RUNNING|None|node2|debug|4:00:00|3:58:10",         // an id that is not a number
            "|RUNNING|None|node2|debug|4:00:00|3:58:10",
            "12 |RUNNING|None|node2|debug|4:00:00|3:58:10",
            "12|running|None|node2|debug|4:00:00|3:58:10",          // a state not as Slurm writes it
            "12||None|node2|debug|4:00:00|3:58:10",
            "12|RUN NING|None|node2|debug|4:00:00|3:58:10",
            "JOBID|STATE|REASON|NODELIST|PARTITION|TIME_LIMIT|TIME_LEFT",  // the header --noheader leaves out
        ])
        func dropsLinesNotInTheFormatsShape(line: String) {
            #expect(SqueueRow(line: Substring(line), clock: .utc) == nil)
        }

        @Test func parsesEveryGoodLineByJobID() {
            let output = """
                12|RUNNING|None|node2|debug|4:00:00|3:58:10
                12|RUNNING|None|node2|debug|4:00:00

                13|PENDING|Resources||debug|4:00:00|4:00:00
                oops
                16|TIMEOUT|TimeLimit|node2|debug|30:00|0:00

                """
            let rows = SqueueRow.parse(output, clock: .utc)
            #expect(rows.keys.sorted() == ["12", "13", "16"])
            #expect(rows["12"]?.secondsLeft == 14_290)
            #expect(rows["13"]?.reason == "Resources")
            #expect(rows["16"]?.state == "TIMEOUT")
            #expect(SqueueRow.parse("", clock: .utc) == [:])
        }

        @Test func aRunningJobEndsWhenItsTimeIsLeft() throws {
            let row = try #require(SqueueRow(line: "12|RUNNING|None|node2|debug|4:00:00|3:58:10", clock: .utc))
            #expect(row.job(now: Self.now) == SlurmJob(
                jobId: "12", node: "node2", partition: "debug", state: "RUNNING", reason: nil, timeLimit: "4:00:00",
                endsAt: Date(timeIntervalSince1970: 1_790_014_290)))
        }

        @Test func aPendingJobHasNoNodeNorEndButItsReason() throws {
            let row = try #require(SqueueRow(line: "14|PENDING|ReqNodeNotAvail, UnavailableNodes:node1||debug|1-00:00:00|1-00:00:00", clock: .utc))
            #expect(row.job(now: Self.now) == SlurmJob(
                jobId: "14", node: nil, partition: "debug", state: "PENDING", reason: "ReqNodeNotAvail, UnavailableNodes:node1",
                timeLimit: "1-00:00:00", endsAt: nil))
            // A node squeue names for a pending job (where it expects to start it) is not where it runs.
            let planned = SqueueRow(jobId: "15", state: "PENDING", reason: "Priority", node: "node4", partition: "gpu", timeLimit: "30:00",
                                    secondsLeft: 1800)
            #expect(planned.job(now: Self.now) == SlurmJob(jobId: "15", node: nil, partition: "gpu", state: "PENDING", reason: "Priority",
                                                          timeLimit: "30:00", endsAt: nil))
        }

        @Test func anEndedJobKeepsItsNodeAndNeitherReasonNorEnd() throws {
            let row = try #require(SqueueRow(line: "16|TIMEOUT|TimeLimit|node2|debug|30:00|0:00", clock: .utc))
            #expect(row.job(now: Self.now) == SlurmJob(
                jobId: "16", node: "node2", partition: "debug", state: "TIMEOUT", reason: nil, timeLimit: "30:00", endsAt: nil))
            let completing = SqueueRow(jobId: "17", state: "COMPLETING", reason: "None", node: "node1", secondsLeft: 60)
            #expect(completing.job(now: Self.now) == SlurmJob(jobId: "17", node: "node1", state: "COMPLETING"))
        }

        @Test func aRunningJobWithoutALimitHasNoEnd() throws {
            let row = try #require(SqueueRow(line: "21|RUNNING|None|node2|long|UNLIMITED|UNLIMITED", clock: .utc))
            #expect(row.job(now: Self.now).endsAt == nil)
            #expect(row.job(now: Self.now).timeLimit == "UNLIMITED")
        }
    }
}
