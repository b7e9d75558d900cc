import DeskCore
import FoundationEssentials
import Glibc
import Testing

/// sinfo's partitions as the start form shows them, and the limits a cluster start is checked
/// against before anything is submitted.
@Suite struct SlurmPartitionTests {
    static let sinfo = """
        debug*|infinite|2|(null)|up
        debug*|infinite|2|(null)|up
        short|30:00|2|(null)|up
        gpu|1-00:00:00|32+|gpu:a100:4(S:0-1),mps:100|up
        broken|whatever
        maint|2:00:00|8|gpu:2|down
        """

    @Test func aPartitionOffersTheMostOfItsNodeGroupsAndNoSumOverflows() {
        let groups = SlurmPartition.parse("gpu|4:00:00|8|(null)|down\ngpu|4:00:00|32+|gpu:4|up\n")
        #expect(groups == [SlurmPartition(name: "gpu", maxTimeSeconds: 14_400, cores: 32, gpus: 4, isUp: true)])
        #expect(SlurmOptions(gres: "gpu:5000000000000000000,gpu:5000000000000000000").gpuCount == SlurmPartition.maxGPUs)
        #expect(SlurmOptions(gres: "gpu:999999,gpu:999999").gpuCount == SlurmPartition.maxGPUs)
    }

    @Test func sinfoLinesBecomePartitionsOnceEach() {
        let partitions = SlurmPartition.parse(Self.sinfo)
        #expect(partitions.map(\.name) == ["debug", "short", "gpu", "maint"])
        #expect(partitions[0] == SlurmPartition(name: "debug", isDefault: true, maxTimeSeconds: nil, cores: 2, gpus: 0, isUp: true))
        #expect(partitions[1].maxTimeSeconds == 1800 && !partitions[1].isDefault)
        #expect(partitions[2].maxTimeSeconds == 86_400 && partitions[2].cores == 32 && partitions[2].gpus == 4)
        #expect(partitions[3].gpus == 2 && !partitions[3].isUp)
    }

    func refusal(_ options: SlurmOptions, site: Int? = 2 * 3600) -> String? {
        let choices = ClusterChoices(partitions: SlurmPartition.parse(Self.sinfo), defaults: SlurmOptions(), maxTimeSeconds: site, extendMaxSeconds: 0)
        do { try choices.check(options); return nil } catch { return error.message }
    }

    @Test func whatSlurmOrTheSiteWouldRefuseIsRefusedFirst() {
        #expect(refusal(SlurmOptions(partition: "short", time: "1:00:00"))?.contains("partition short lets a job run 0:30:00 at most") == true)
        #expect(refusal(SlurmOptions(time: "3:00:00"))?.contains("2:00:00 at most ([slurm] max_time)") == true)
        #expect(refusal(SlurmOptions(partition: "nope"))?.contains("no partition 'nope'; choose one of debug, short, gpu, maint") == true)
        #expect(refusal(SlurmOptions(cores: 3))?.contains("have 2 cores") == true, "the default partition's nodes")
        #expect(refusal(SlurmOptions(gres: "gpu:1"))?.contains("have no GPU") == true)
        #expect(refusal(SlurmOptions(partition: "gpu", gres: "gpu:a100:8"))?.contains("have 4 GPUs") == true)
        #expect(refusal(SlurmOptions(partition: "gpu", time: "2:00:00", gres: "gpu:2", cores: 16)) == nil)
        #expect(refusal(SlurmOptions(partition: "debug", time: "1-00:00:00"), site: nil) == nil, "no limit but the partition's")
    }

    @Test func withoutSinfoOnlyTheSitesLimitIsChecked() throws {
        let choices = ClusterChoices(partitions: [], defaults: SlurmOptions(), maxTimeSeconds: 3600, extendMaxSeconds: 0)
        #expect(throws: DeskError.self) { try choices.check(SlurmOptions(time: "2:00:00")) }
        try choices.check(SlurmOptions(partition: "anything", time: "30", cores: 999))
    }

    @Test func aPendingJobsExpectedStartIsReadInLocalTime() throws {
        // The host's clock, one hour ahead of UTC: squeue's 03:04:05 there is 02:04:05 UTC.
        let clock = WallClock { _ in UTCOffset(seconds: 3600, abbreviation: "CET") }
        let row = try #require(SqueueRow(line: "77|PENDING|Resources|(null)|debug|4:00:00|4:00:00|2099-01-02T03:04:05", clock: clock))
        let expected = try #require(row.startsAt)
        #expect(WallClock.utc.format(expected) == "2099-01-02 02:04:05 +0000")
        #expect(SqueueRow(line: "77|PENDING|Resources|(null)|debug|4:00:00|4:00:00|2099-13-02T03:04:05", clock: clock)?.startsAt == nil, "no thirteenth month")
        #expect(row.job(now: Date()).expectedStart == expected)
        #expect(SqueueRow(line: "77|PENDING|Resources|(null)|debug|4:00:00|4:00:00|N/A", clock: .utc)?.startsAt == nil)
        // A start time squeue writes otherwise is no start time, and the row stands (a row dropped
        // would read as a job Slurm forgot, and end its desktop).
        #expect(SqueueRow(line: "77|PENDING|Resources|(null)|debug|4:00:00|4:00:00|Unknown", clock: .utc)?.jobId == "77")
        #expect(SqueueRow(line: "77|RUNNING|None|node1|debug|4:00:00|3:59:00|2020-01-02T03:04:05", clock: .utc)?.job(now: Date()).expectedStart == nil)
    }
}
