import DeskCore
import Testing

extension SlurmCoreTests {
    @Suite struct Options {
        static func nameSentence(_ text: String, _ what: String, _ flag: String) -> DeskError {
            DeskError(.badRequest, "'\(text)' is not a Slurm \(what) name deskd takes: letters, digits, '-', '_' and '.', starting with a letter (\(flag)).")
        }

        @Test func acceptsWhatSlurmNames() throws {
            for options in [
                SlurmOptions(),
                SlurmOptions(partition: "debug", time: "4:00:00", gres: "gpu:1", account: "physics"),
                SlurmOptions(partition: "gpu-a100.long_2", time: "30", gres: "gpu:a100:2", account: "Lab-7"),
                SlurmOptions(time: "1-12:00:00", gres: "gpu:1,shard:2"),
                SlurmOptions(partition: String(repeating: "p", count: 64), account: String(repeating: "a", count: 64)),
            ] {
                #expect(try options.checked() == options)
            }
        }

        @Test(arguments: ["--partition=x", "a b", "-x", "x;rm", "", String(repeating: "p", count: 65), "1debug", "_x", ".x", "déb", "x\n",
                          "x'", "x$y", "x/y", "x:y", "x,y"])
        func refusesAPartitionOrAccountThatIsNoName(text: String) {
            #expect(throws: Self.nameSentence(text, "partition", "--partition")) { try SlurmOptions(partition: text).checked() }
            #expect(throws: Self.nameSentence(text, "account", "--account")) { try SlurmOptions(account: text).checked() }
        }

        @Test func theSentencesInFull() {
            #expect(throws: DeskError(.badRequest, "'--partition=x' is not a Slurm partition name deskd takes: letters, digits, '-', '_' and '.', starting with a letter (--partition).")) {
                try SlurmOptions(partition: "--partition=x").checked()
            }
            #expect(throws: DeskError(.badRequest, "'soon' is not a time limit deskd takes; give one as Slurm writes it, such as 30, 4:00:00 or 1-12:00:00 (--time).")) {
                try SlurmOptions(time: "soon").checked()
            }
            #expect(throws: DeskError(.badRequest, "'gpu 1' is not a generic resource deskd takes; give one as Slurm writes it, such as gpu:1 or gpu:a100:2 (--gres).")) {
                try SlurmOptions(gres: "gpu 1").checked()
            }
        }

        @Test(arguments: ["soon", "", "-1", "1:2:3:4", "UNLIMITED", "INFINITE", "367-00:00:00", "--time=1"])
        func refusesATimeSlurmWouldNotTakeOrNoLimit(text: String) {
            #expect(throws: DeskError(.badRequest, "'\(text)' is not a time limit deskd takes; give one as Slurm writes it, such as 30, 4:00:00 or 1-12:00:00 (--time).")) {
                try SlurmOptions(time: text).checked()
            }
        }

        @Test(arguments: [":1", "gpu 1", "", "-gpu:1", "1:gpu", "gpu:1;rm", "gpu=1", "gpu:1 --uid=0", String(repeating: "g", count: 129)])
        func refusesAGresThatIsNone(text: String) {
            #expect(throws: DeskError(.badRequest, "'\(text)' is not a generic resource deskd takes; give one as Slurm writes it, such as gpu:1 or gpu:a100:2 (--gres).")) {
                try SlurmOptions(gres: text).checked()
            }
        }

        @Test func theFirstWrongOneIsTheSentence() {
            #expect(throws: Self.nameSentence("a b", "partition", "--partition")) {
                try SlurmOptions(partition: "a b", time: "soon", gres: ":1", account: "x;rm").checked()
            }
            #expect(throws: Self.nameSentence("x;rm", "account", "--account")) {
                try SlurmOptions(partition: "debug", time: "soon", gres: ":1", account: "x;rm").checked()
            }
            #expect(throws: DeskError(.badRequest, "'soon' is not a time limit deskd takes; give one as Slurm writes it, such as 30, 4:00:00 or 1-12:00:00 (--time).")) {
                try SlurmOptions(partition: "debug", time: "soon", gres: ":1").checked()
            }
        }
    }
}
