import DeskCore
import DeskHost
import DeskLinux
import FoundationEssentials
import Glibc
import Synchronization

/// The portal's file calls as deskd decides them: whose files (a desktop's owner, logged in,
/// and no one else: not an admin, not a shared link), how many transfers at once, and the
/// record of each. deskd-files opens every file as the owner; deskd-web streams the bytes;
/// deskd passes the descriptor from one to the other and reads no byte itself.
final class WebFiles: Sendable {
    /// A transfer under way: what it is, for its record at the end, and the helper still
    /// needed (an upload's, which names the file; an archive's tar, ended with the transfer).
    struct Transfer: Sendable {
        let direction: FileDirection
        let uid: UInt32
        let user: String
        let display: Display
        var path: HomePath
        let size: UInt64?
        let helper: FileHelper?
        let front: ObjectIdentifier
    }

    private struct State {
        var next: UInt64 = 1
        var transfers: [UInt64: Transfer] = [:]
        /// Transfers admitted whose helper has not answered yet, by uid: they count against the limits too.
        var starting: [UInt32: Int] = [:]
    }

    private let state = Mutex(State())
    let service: SessionService
    let portal: WebPortal
    /// How long deskd-files may take to open what it was asked for (a file on a slow network
    /// file system, a listing of thousands) and to name an upload (its fsync).
    static let answerTimeout: Duration = .seconds(30)

    /// How long an upload's naming may take: its fsync writes back what the page cache still
    /// holds, up to the whole file, so the time grows with it (at 32 MiB/s, a slow disk's pace).
    static func commitTimeout(size: UInt64) -> Duration {
        answerTimeout + .seconds(Int64(size / (32 << 20)))
    }

    init(service: SessionService, portal: WebPortal) {
        self.service = service
        self.portal = portal
    }

    var environment: SessionEnvironment { service.environment }

    /// A page's file call: the answer, the transfer's number and its descriptor where it is one.
    func call(_ call: FileCall, session: String, cookie: String, csrf: String?, signedOn: String?, front: ObjectIdentifier) async
        -> (answer: FileAnswer, transfer: UInt64?, descriptors: [Int32]) {
        func refused(_ reason: FileRefusal.Reason, _ sentence: String) -> (FileAnswer, UInt64?, [Int32]) {
            (.refused(FileRefusal(reason, sentence)), nil, [])
        }
        guard let login = await portal.fileCaller(cookie: cookie, csrf: csrf, writes: call.direction == .upload, signedOn: signedOn) else {
            return refused(.loggedOut, "Your portal login has ended, or this page is out of date; reload it and log in again.")
        }
        let policy = environment.configuration.value.files
        if !policy.enabled { return (.refused(policy.refusal(of: call, load: .init(user: 0, all: 0))!), nil, []) }
        // A desktop that is not the caller's, or not there, reads the same: which desktops
        // exist is no one else's business.
        guard let managed = await environment.registry.session(id: session), managed.uid == login.uid else {
            auditRefusal(call, login: login, display: nil, outcome: "not-owner")
            return refused(.notOwner, "Only a desktop's owner may move its files, and this desktop is not yours (or has ended).")
        }
        guard let account = UserAccount.withUID(login.uid), account.name == login.user else {
            return refused(.failed, "Your account cannot be found on this host now; ask the administrator.")
        }
        // Admitted under the lock: the count and the claim are one step.
        let refusal = state.withLock { state -> FileRefusal? in
            guard call.direction != nil else { return policy.refusal(of: call, load: .init(user: 0, all: 0)) }
            let user = state.transfers.values.count { $0.uid == login.uid } + state.starting[login.uid, default: 0]
            let all = state.transfers.count + state.starting.values.reduce(0, +)
            if let refusal = policy.refusal(of: call, load: .init(user: user, all: all)) { return refusal }
            state.starting[login.uid, default: 0] += 1
            return nil
        }
        if let refusal {
            if refusal.reason == .busy || refusal.reason == .tooLarge { environment.metrics.fileTransferRefused(call.direction) }
            return (.refused(refusal), nil, [])
        }
        defer {
            if call.direction != nil { state.withLock { $0.starting[login.uid, default: 1] -= 1 } }
        }
        var request = call
        if case .upload(let folder, let name, let size, let exists, _) = call {
            request = .upload(folder: folder, name: name, size: size, exists: exists, createFolder: folder == policy.uploadFolder)
        }
        guard let program = FileHelper.locate() else {
            return refused(.failed, "deskd-files is not installed beside deskd; reinstall deskd.")
        }
        let helperRequest = FileHelperRequest(user: account.name, uid: account.uid, gid: account.gid, home: account.home, call: request)
        // deskd-files opens what the user named, on whatever file system holds it: up to the timeout.
        let started = await onDedicatedThread { () -> (FileHelper, (FileAnswer, [Int32])?)? in
            guard let helper = try? FileHelper.start(program: program, request: helperRequest) else { return nil }
            return (helper, helper.answer(until: .now + Self.answerTimeout))
        }
        guard let (helper, answered) = started else {
            return refused(.failed, "deskd-files could not be started; try again, or ask the administrator.")
        }
        guard let (answer, descriptors) = answered else {
            helper.end(kill: true)
            return refused(.failed, "Your files did not answer in time; try again.")
        }
        // Each call has its answers: a listing for a listing, a file or archive for a download.
        let fits = switch (call, answer) {
        case (_, .refused), (.list, .listing), (.download, .file), (.download, .archive), (.upload, .uploadReady): true
        default: false
        }
        let keep: Bool
        switch (fits ? answer : .uploadReady, fits ? descriptors.count : -1) {
        case (.listing(var listing), 0):
            helper.end(kill: false)
            listing.uploadFolder = policy.uploadFolder
            return (.listing(listing), nil, [])
        case (.refused, 0):
            helper.end(kill: false)
            if case .refused(let why) = answer, call.direction != nil {
                auditRefusal(call, login: login, display: managed.display, outcome: why.reason.rawValue)
                environment.metrics.fileTransferRefused(call.direction)
            }
            return (answer, nil, [])
        case (.file, 1):
            helper.end(kill: false)
            keep = false
        case (.archive, 1), (.uploadReady, 1):
            keep = true
        default:
            for fd in descriptors { close(fd) }
            helper.end(kill: true)
            return refused(.failed, "deskd-files gave an answer deskd did not expect; try again.")
        }
        let (direction, path, size): (FileDirection, HomePath, UInt64?) = switch request {
        case .upload(let folder, let name, let size, _, _): (.upload, folder.appending(name), size)
        case .download(let path): (.download, path, { if case .file(_, let size, _) = answer { size } else { nil } }())
        case .list(let path): (.download, path, nil)
        }
        let transfer = Transfer(direction: direction, uid: login.uid, user: login.user, display: managed.display, path: path,
                                size: size, helper: keep ? helper : nil, front: front)
        let number = state.withLock { state -> UInt64 in
            defer { state.next += 1 }
            state.transfers[state.next] = transfer
            return state.next
        }
        return (answer, number, descriptors)
    }

    /// The front's word that a transfer ended: a completed upload is named now (its answer is
    /// the name, or why it could not be); every one is recorded and counted.
    func ended(_ number: UInt64, bytes: UInt64, outcome: TransferOutcome, front: ObjectIdentifier) async -> FileAnswer? {
        guard var transfer = state.withLock({ state -> Transfer? in
            guard let transfer = state.transfers[number], transfer.front == front else { return nil }
            state.transfers[number] = nil
            // An upload being named still counts against its owner's and everyone's limits
            // until deskd-files is done (an fsync on the user's own slow or hung file system).
            if transfer.direction == .upload, transfer.helper != nil, outcome == .completed { state.starting[transfer.uid, default: 0] += 1 }
            return transfer
        }) else { return nil }
        var answer: FileAnswer?
        var outcome = outcome
        if transfer.direction == .upload, let helper = transfer.helper {
            if outcome == .completed {
                // fsync and a rename, as the user: up to the timeout.
                let deadline = ContinuousClock.now + Self.commitTimeout(size: transfer.size ?? 0)
                let named = await onDedicatedThread { helper.commit(until: deadline) }
                state.withLock { $0.starting[transfer.uid, default: 1] -= 1 }
                answer = named ?? .refused(FileRefusal(.failed, "The upload could not be named; upload it again."))
                switch named {
                case .committed(let name)?:
                    if let folder = transfer.path.split?.folder { transfer.path = folder.appending(name) }
                case .refused(let why)?: outcome = .failed(why.sentence)
                default: outcome = .failed("deskd-files did not name it")
                }
                // One that did not answer in time is ended, lest it name the file after the
                // page was told it failed.
                helper.end(kill: named == nil)
            } else {
                helper.end(kill: false)
            }
        } else {
            transfer.helper?.end(kill: true)
        }
        record(transfer, bytes: bytes, outcome: outcome)
        return answer
    }

    /// A front gone: its transfers ended with it (uploads abandoned, archives stopped).
    func endAll(of front: ObjectIdentifier) {
        let gone = state.withLock { state -> [Transfer] in
            let numbers = state.transfers.filter { $0.value.front == front }.map(\.key)
            return numbers.compactMap { state.transfers.removeValue(forKey: $0) }
        }
        for transfer in gone {
            transfer.helper?.end(kill: transfer.direction == .download)
            record(transfer, bytes: 0, outcome: .failed("the web front went away"))
        }
    }

    /// Transfers under way now, for tests and status.
    var underWay: Int { state.withLock { $0.transfers.count } }

    private func record(_ transfer: Transfer, bytes: UInt64, outcome: TransferOutcome) {
        let what: String
        switch outcome {
        case .completed: what = transfer.direction == .upload ? "uploaded \(transfer.path)" : "downloaded \(transfer.path)"
        case .cancelled: what = "cancelled after \(ByteCount.text(bytes))"
        case .failed(let why): what = "failed after \(ByteCount.text(bytes)): \(why)"
        }
        let detail = "web: \(transfer.path), \(ByteCount.text(bytes))" + (transfer.size.map { " of \(ByteCount.text($0))" } ?? "")
        let entry = AuditEntry(time: Date(), peerUID: transfer.uid, peerPID: 0, peerUser: transfer.user,
                               command: transfer.direction == .upload ? .upload : .download, user: transfer.user, uid: transfer.uid,
                               display: transfer.display, detail: detail, ok: outcome == .completed, outcome: what)
        environment.audit.record(entry, alwaysKept: true)
        environment.metrics.fileTransferEnded(transfer.direction, outcome: outcome, bytes: bytes)
    }

    /// A transfer refused: through the trail's rate limit, as any refusal (a script trying
    /// every desktop's files must not fill the trail).
    private func auditRefusal(_ call: FileCall, login: WebSessions.Login, display: Display?, outcome: String) {
        guard let direction = call.direction else { return }
        let path: String = switch call {
        case .upload(let folder, let name, _, _, _): folder.appending(name).description
        case .download(let path), .list(let path): path.description
        }
        let entry = AuditEntry(time: Date(), peerUID: login.uid, peerPID: 0, peerUser: login.user, command: direction == .upload ? .upload : .download,
                               user: login.user, uid: login.uid, display: display, detail: "web: \(path)", ok: false, outcome: outcome)
        environment.audit.record(entry, alwaysKept: false)
    }
}
