import DeskCore
import FoundationEssentials
import Glibc
import Testing

@Suite struct TrimmingTests {
    @Test("white space and line ends go from both ends, CR LF too; what is inside stays")
    func trimming() {
        #expect("  exited with status 3\r\n".trimming() == "exited with status 3")
        #expect("\t a b \n".trimming() == "a b")
        #expect(" \n ".trimming() == "")
        #expect("must be set.".trimming(where: { $0 == "." }) == "must be set")
    }
}
