import DeskCore
import Foundation
import Testing

extension SlurmCoreTests {
    @Suite struct Submission {
        static let program = "/usr/libexec/deskd/deskd-job"
        static let baseArguments = [
            "--parsable", "--job-name=deskd-desktop", "--nodes=1", "--ntasks=1", "--no-requeue", "--signal=B:USR1@300", "--export=NONE",
            "--chdir=/home/ana", "--output=/dev/null", "--error=/dev/null",
        ]

        static func submission(_ options: SlurmOptions = SlurmOptions(), program: String = program) -> SlurmSubmission {
            SlurmSubmission(options: options, warnSeconds: 300, directory: "/home/ana", jobProgram: program, spec: SlurmCoreTests.spec)
        }

        @Test func itsArgumentsByDefault() {
            #expect(SlurmSubmission.jobName == "deskd-desktop")
            #expect(Self.submission().arguments == Self.baseArguments)
        }

        @Test func itsArgumentsWithTheUsersChoices() {
            let options = SlurmOptions(partition: "gpu", time: "4:00:00", gres: "gpu:a100:2", account: "physics")
            #expect(Self.submission(options).arguments
                == Self.baseArguments + ["--partition=gpu", "--time=4:00:00", "--account=physics", "--gres=gpu:a100:2"])
            #expect(Self.submission(SlurmOptions(time: "30")).arguments == Self.baseArguments + ["--time=30"])
            let other = SlurmSubmission(options: SlurmOptions(gres: "gpu:1"), warnSeconds: 60, directory: "/srv/home/b o b",
                                        jobProgram: Self.program, spec: SlurmCoreTests.spec)
            #expect(other.arguments.contains("--signal=B:USR1@60"))
            #expect(other.arguments.contains("--chdir=/srv/home/b o b"), "one argument, never through a shell")
            #expect(other.arguments.last == "--gres=gpu:1")
        }

        @Test func itsScript() {
            let script = Self.submission().script
            #expect(script == """
                #!/bin/sh
                # A deskd desktop (session 0123456789abcdef0123456789abcdef): deskd-job brings it up on this node and
                # ends every process of it with the job. Its instructions are its stdin, below.
                exec '/usr/libexec/deskd/deskd-job' <<'DESKD_JOB_SPEC'
                \(SlurmCoreTests.spec.encoded())
                DESKD_JOB_SPEC

                """)
            let lines = script.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(script.hasPrefix("#!/bin/sh\n"))
            #expect(lines.count == 7)
            #expect(lines[3] == "exec '/usr/libexec/deskd/deskd-job' <<'DESKD_JOB_SPEC'")
            #expect(lines[4] == Substring(SlurmCoreTests.spec.encoded()))
            #expect(lines[5] == "DESKD_JOB_SPEC")
            #expect(lines[6] == "")
            // The spec's own "DESKD_JOB_SPEC" line (in its xstartup) stays inside the one line.
            #expect(lines.filter { $0 == "DESKD_JOB_SPEC" }.count == 1)
            #expect(!script.utf8.contains(UInt8(ascii: "\r")), "sbatch refuses a script with DOS line breaks")
            #expect(lines.indices.filter { lines[$0].contains("s3cret!") } == [4], "the password is in the spec's line only")
            #expect(!lines.contains { $0.hasPrefix("#SBATCH") })
        }

        /// 200 KB of startup script, every line of it something sh would expand outside a quoted here-document.
        static let bigSpec = {
            var big = SlurmCoreTests.spec
            big.xstartup = String(repeating: "echo \"$HOME\" `id` 'q' \\\n", count: 8000)
            return big
        }()

        /// The script as sh runs it, its program cat: what reaches the program's stdin is the spec's line.
        @Test(arguments: [SlurmCoreTests.spec, bigSpec])
        func shHandsTheProgramTheSpecLine(spec: JobSpec) throws {
            let submission = SlurmSubmission(options: SlurmOptions(), warnSeconds: 300, directory: "/", jobProgram: "/bin/cat", spec: spec)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("deskd-slurm-script-\(UUID().uuidString).sh")
            try Data(submission.script.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [file.path]
            process.environment = ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"]
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let stdout = output.fileHandleForReading.readDataToEndOfFile()
            let stderr = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            #expect(String(decoding: stderr, as: UTF8.self) == "")
            #expect(String(decoding: stdout, as: UTF8.self) == spec.encoded() + "\n")
            #expect(try JobSpec.decode(Array(stdout)) == spec, "what deskd-job reads is the spec (JSON allows the newline after it)")
        }

        @Test(arguments: ["/usr/libexec/deskd/deskd-job", "/opt/deskd-1.2/bin/deskd-job", "/x"])
        func usableProgramPaths(path: String) {
            #expect(SlurmSubmission.isUsableProgramPath(path))
        }

        @Test(arguments: ["/opt/it's/deskd-job", "/opt/my dir/deskd-job", "deskd-job", "./deskd-job", "bin/deskd-job", "",
                          "/opt/deskd\u{7}job", "/opt/deskd\njob", "/opt/deskd\tjob", "/opt/deskd\u{7f}job", "/opt/dé/deskd-job",
                          "/" + String(repeating: "d", count: 4096)])
        func unusableProgramPaths(path: String) {
            #expect(!SlurmSubmission.isUsableProgramPath(path))
        }

        @Test func jobIDsFromParsableOutput() {
            #expect(SlurmSubmission.jobID(fromParsable: "123") == "123")
            #expect(SlurmSubmission.jobID(fromParsable: "123;cluster") == "123")
            #expect(SlurmSubmission.jobID(fromParsable: "123\n") == "123")
            #expect(SlurmSubmission.jobID(fromParsable: "123;cluster\n") == "123")
            #expect(SlurmSubmission.jobID(fromParsable: "98765432109876543210") == "98765432109876543210")
        }

        @Test(arguments: ["abc", "", "12 3", "\n", ";cluster", " 123", "123 ", "-1", "12_3", "١٢٣", "123456789012345678901",
                          "sbatch: error: Batch job submission failed: Invalid partition name specified"])
        func noJobIDInOtherOutput(output: String) {
            #expect(SlurmSubmission.jobID(fromParsable: output) == nil)
        }
    }
}
