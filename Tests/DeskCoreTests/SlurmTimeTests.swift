import DeskCore
import Testing

extension SlurmCoreTests {
    @Suite struct Time {
        @Test(arguments: [
            ("30", 1800), ("30:15", 1815), ("4:00:00", 14_400), ("1-12", 129_600), ("1-12:30", 131_400), ("2-00:00:00", 172_800),
            ("0:00", 0), ("90", 5400), ("0:05:00", 300), ("1-00:00:00", 86_400), ("366-00:00:00", 366 * 86_400), ("527040", 366 * 86_400),
        ])
        func parsesEachOfSlurmsForms(text: String, seconds: Int) {
            #expect(SlurmTime(slurm: text) == SlurmTime(seconds: seconds))
        }

        @Test(arguments: ["UNLIMITED", "INFINITE", "Partition_Limit"])
        func noLimitIsATimeWithoutSeconds(text: String) throws {
            let time = try #require(SlurmTime(slurm: text))
            #expect(time.seconds == nil)
            #expect(time.description == "UNLIMITED")
        }

        @Test(arguments: [
            "", "-1", "1:2:3:4", "abc", "1-", "-", ":", "12:", ":30", "1-2-3", "1-1:2:3:4", " 30", "30 ", "+30", "3.5", "1e3",
            // Over a year: a minute over in minutes, a second over in days, more digits than any limit has.
            "527041", "366-00:00:01", "367-00", "99999999", "9999999-00:00:00",
            // Digits, but not ASCII ones.
            "١٢", "1-١٢", "١٢:00", "３０",
            "INVALID", "NOT_SET", "unlimited",
        ])
        func refusesAnythingElse(text: String) {
            #expect(SlurmTime(slurm: text) == nil)
        }

        @Test(arguments: ["4:00:00", "1-00:00:00", "0:05:00", "0:00:00", "23:59:59", "1-12:30:15", "366-00:00:00"])
        func itsDescriptionReadsBackTheSame(text: String) throws {
            #expect(try #require(SlurmTime(slurm: text)).description == text)
        }

        @Test func describesOtherFormsAsSbatchTakesThem() throws {
            #expect(try #require(SlurmTime(slurm: "30")).description == "0:30:00")
            #expect(try #require(SlurmTime(slurm: "30:15")).description == "0:30:15")
            #expect(try #require(SlurmTime(slurm: "90")).description == "1:30:00")
            #expect(try #require(SlurmTime(slurm: "1-12")).description == "1-12:00:00")
            #expect(try #require(SlurmTime(slurm: "10-1:2:3")).description == "10-01:02:03")
            #expect(SlurmTime(seconds: nil).description == "UNLIMITED")
            #expect(SlurmTime.maxSeconds == 31_622_400)
        }
    }
}
