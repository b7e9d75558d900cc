import DeskCore
import FoundationEssentials
import Testing

/// The portal's file calls as the core sees them: how a path in a home is spelled, the names
/// "keep both" makes, HTTP ranges, and the admin's limits.
struct FileCallTests {
    @Test(arguments: ["", "Downloads", "Downloads/", "a b/ç.txt", ".config/x", "...", "a..b"])
    func aPathInTheHomeReadsBackAsItself(text: String) throws {
        let path = try #require(HomePath(text))
        #expect(HomePath(path.text) == path)
        #expect(path.text == (text.hasSuffix("/") ? String(text.dropLast()) : text))
    }

    @Test(arguments: ["/etc", "..", "../x", "a/../b", "a//b", "./a", "a/.", "a\u{0}b", "//", String(repeating: "a", count: 256)])
    func aPathThatCouldLeaveTheHomeOrIsNoNameIsRefused(text: String) {
        #expect(HomePath(text) == nil, "\(text.debugDescription) was taken")
    }

    @Test func aPathFromJSONIsCheckedAsAnyOther() {
        #expect((try? JSONDecoder().decode(HomePath.self, from: Data(#""../x""#.utf8))) == nil)
        #expect((try? JSONDecoder().decode(FileName.self, from: Data(#""a/b""#.utf8))) == nil)
        #expect((try? JSONDecoder().decode(HomePath.self, from: Data(#""Downloads/a""#.utf8)))?.description == "~/Downloads/a")
    }

    /// A listing is one record on deskd's sockets: entries are admitted while their worst-case
    /// bytes fit the budget, and a listing so admitted encodes under the record's limit, however
    /// its names are made.
    @Test(arguments: [String(repeating: "\u{1}", count: 255), String(repeating: "\"", count: 255), String(repeating: "é", count: 127), "a"])
    func aListingWithinItsBudgetFitsOneRecord(_ name: String) throws {
        var entries: [FileEntry] = [], bytes = 0
        while entries.count < FileListing.limit {
            let entry = FileEntry(name: name + "\(entries.count)", type: .link, size: .max, modified: .min, target: .directory)
            bytes += entry.wireBytesAtMost
            guard bytes <= FileListing.byteBudget else { break }
            entries.append(entry)
        }
        let record = try JSONEncoder().encode(FileAnswer.listing(FileListing(path: HomePath("Downloads")!, entries: entries, truncated: true)))
        #expect(record.count <= FileHelperRequest.recordLimit)
        #expect(record.count > FileListing.byteBudget / 2 || entries.count == FileListing.limit, "the estimate is far too cautious")
    }

    @Test func keepBothNumbersTheNameBeforeItsExtension() {
        #expect(FileName("report.pdf")?.copy(1)?.text == "report (1).pdf")
        #expect(FileName("notes")?.copy(2)?.text == "notes (2)")
        #expect(FileName(".bashrc")?.copy(1)?.text == ".bashrc (1)")
        #expect(FileName("photo.tar.gz")?.copy(3)?.text == "photo.tar (3).gz")
        #expect(FileName(String(repeating: "a", count: 255))?.copy(1) == nil, "a copy's name may not pass 255 bytes")
    }

    @Test func aRangeIsReadAsHTTPSaysOrTheWholeFileIsSent() {
        #expect(ByteRange(header: "bytes=0-99", size: 1000) == .part(first: 0, last: 99))
        #expect(ByteRange(header: "bytes=900-", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange(header: "bytes=-100", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange(header: "bytes=-5000", size: 1000) == .part(first: 0, last: 999))
        #expect(ByteRange(header: "bytes=500-5000", size: 1000) == .part(first: 500, last: 999))
        #expect(ByteRange(header: "bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=0-0", size: 0) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=-0", size: 10) == .unsatisfiable)
        for whole in [nil, "", "bytes=5-1", "bytes=0-1,5-6", "items=0-1", "bytes=a-b", "bytes=99999999999999999999-", "bytes=-"] {
            #expect(ByteRange(header: whole, size: 1000) == .whole, "\(whole ?? "nil")")
        }
    }

    @Test func theLimitsRefuseWithASentenceAndAListingIsNoTransfer() {
        var policy = FilePolicy()
        policy.transfersPerUser = 2
        policy.transfers = 3
        policy.maxUploadBytes = 1 << 30
        let upload = FileCall.upload(folder: .home, name: FileName("a.bin")!, size: 2 << 30, exists: .ask, createFolder: false)
        #expect(policy.refusal(of: upload, load: .init(user: 0, all: 0))?.reason == .tooLarge)
        #expect(policy.refusal(of: upload, load: .init(user: 0, all: 0))?.sentence == "a.bin is 2.1 GB, over this host's limit for one upload (1.1 GB).")
        let download = FileCall.download(HomePath("a")!)
        #expect(policy.refusal(of: download, load: .init(user: 1, all: 2)) == nil)
        #expect(policy.refusal(of: download, load: .init(user: 2, all: 2))?.reason == .busy)
        #expect(policy.refusal(of: download, load: .init(user: 0, all: 3))?.reason == .busy)
        #expect(policy.refusal(of: .list(.home), load: .init(user: 9, all: 9)) == nil)
        policy.enabled = false
        #expect(policy.refusal(of: .list(.home), load: .init(user: 0, all: 0))?.reason == .disabled)
    }

    @Test func everyRefusalHasItsHTTPStatus() {
        let statuses: [FileRefusal.Reason: Int] = [.badName: 400, .loggedOut: 401, .notOwner: 403, .notPermitted: 403, .notFound: 404,
                                                   .exists: 409, .tooLarge: 413, .busy: 429, .diskFull: 507, .quota: 507, .failed: 500, .disabled: 403]
        for (reason, status) in statuses { #expect(FileRefusal(reason, "").status == status) }
    }

    @Test func sizesReadAsABrowserShowsThem() {
        #expect(ByteCount.text(1) == "1 byte" && ByteCount.text(999) == "999 bytes")
        #expect(ByteCount.text(1_500) == "1.5 kB" && ByteCount.text(1 << 30) == "1.1 GB" && ByteCount.text(999_999) == "1000.0 kB")
    }
}
