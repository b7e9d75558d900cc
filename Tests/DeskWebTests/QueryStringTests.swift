@testable import DeskWeb
import Testing

/// A file call's query and its download's name, as a browser writes and reads them.
struct QueryStringTests {
    @Test func fieldsAreDecodedAsURLSearchParamsWritesThem() {
        #expect(QueryString.parse("/api/files/x/list?path=Downloads%2Fa%20b.txt") == ["path": "Downloads/a b.txt"])
        #expect(QueryString.parse("/x?path=a+b&path=second&empty=") == ["path": "a b", "empty": ""])
        #expect(QueryString.parse("/x?path=%C3%A7") == ["path": "ç"])
        #expect(QueryString.parse("/x") == [:])
        #expect(QueryString.parse("/x?path=a#frag") == ["path": "a"])
    }

    @Test func anEscapeThatIsNoneOrBytesThatAreNotUTF8ReadAsNothing() {
        #expect(QueryString.parse("/x?path=%zz") == nil)
        #expect(QueryString.parse("/x?path=%2") == nil)
        #expect(QueryString.parse("/x?path=%ff") == nil)
        #expect(QueryString.parse("/x?path=" + String(repeating: "a", count: 9000)) == nil)
    }

    @Test func aDownloadsNameReachesTheBrowserAndNoHeaderBreaks() {
        #expect(QueryString.attachmentName("report.pdf") == "attachment; filename=\"report.pdf\"; filename*=UTF-8''report.pdf")
        let odd = QueryString.attachmentName("a \"b\"\r\n;ç.txt")
        #expect(!odd.contains("\r") && !odd.contains("\n"))
        #expect(odd.hasSuffix("filename*=UTF-8''a%20%22b%22%0D%0A%3B%C3%A7.txt"))
        #expect(odd.contains("filename=\"a _b___;_.txt\""))
    }
}
