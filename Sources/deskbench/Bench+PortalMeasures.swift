import DeskCore
import DeskLinux
import Foundation
import Glibc

extension Bench {
    /// 7. The web portal, as one of the bench's users: the page's first load (its three files,
    /// each over a fresh connection, as a browser with an empty cache fetches them), and the API's
    /// list and start against deskctl's, alternated pair by pair. The API's figures include the
    /// gateway (HTTP), the web front and deskd; deskctl's its own start as a process.
    func portal() throws {
        let user = users[0]
        let password = "Bench-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        guard try Run.of("/bin/sh", ["-c", "printf '%s:%s\\n' \"$1\" \"$2\" | /usr/sbin/chpasswd", "sh", user.name, password]).status == 0 else {
            throw Options.Usage("chpasswd failed for \(user.name)")
        }
        // The password is the bench's for this measure only.
        defer { _ = try? Run.of("/usr/bin/passwd", ["--lock", user.name]) }
        let login = try portalHTTP("POST", "/api/login", body: "{\"user\":\"\(user.name)\",\"password\":\"\(password)\"}")
        guard login.status == 200, let cookie = login.head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("set-cookie: deskd_web=") })
            .map({ String($0.dropFirst("set-cookie: deskd_web=".count).prefix { $0 != ";" }) }),
              let identity = try? JSONSerialization.jsonObject(with: Data(login.body.utf8)) as? [String: Any],
              let csrf = (identity["identity"] as? [String: Any])?["csrf"] as? String else {
            throw Options.Usage("the portal login failed: \(login.status) \(login.body.prefix(200))")
        }
        let session = ["Cookie: deskd_web=\(cookie)", "X-Deskd-CSRF: \(csrf)"]
        report("web portal, as \(user.name): the page's first load, and its API against deskctl (\(options.pairs) pairs)")

        var loads: [Double] = []
        for _ in 0...options.pairs {
            let start = now()
            for path in ["/", "/portal.js", "/portal.css"] {
                guard try portalHTTP("GET", path).status == 200 else { throw Options.Usage("GET \(path) failed") }
            }
            loads.append(now() - start)
        }
        row("page's first load (3 files)", Stats(values: Array(loads.dropFirst())))

        var apiList: [Double] = [], cliList: [Double] = [], listRatios: [Double] = []
        for index in 0...options.pairs {
            let start = now()
            guard try portalHTTP("POST", "/api/request", body: "{\"version\":1,\"command\":\"list\"}", headers: session).status == 200 else {
                throw Options.Usage("the API's list failed")
            }
            let api = now() - start
            let cli = try Run.of(deskctl, ["list", "--json", "--socket", socket], as: user.name).seconds
            guard index > 0 else { continue }   // the first pair pays for cold caches
            apiList.append(api)
            cliList.append(cli)
            listRatios.append(api / cli)
        }
        row("list through the API", Stats(values: apiList), String(format: "%.2f× deskctl list's", Stats(values: listRatios).median))
        row("deskctl list, as the user", Stats(values: cliList))
        try crowd(idle: Stats(values: apiList), session: session)

        var apiStart: [Double] = [], cliStart: [Double] = [], startRatios: [Double] = []
        for _ in 0..<max(3, options.pairs / 2) {
            var start = now()
            let answer = try portalHTTP("POST", "/api/request", body: "{\"version\":1,\"command\":\"start\"}", headers: session)
            let api = now() - start
            guard answer.status == 200, let started = try? JSONDecoder.desk.decode(Response.self, from: Data(answer.body.utf8)).sessions?.first else {
                throw Options.Usage("the API's start failed: \(answer.body.prefix(200))")
            }
            _ = try deskctlKill(started.display)
            start = now()
            let cli = try Run.of(deskctl, ["start", "--json", "--socket", socket], as: user.name)
            let cliSeconds = now() - start
            guard cli.status == 0, let mine = try? JSONDecoder.desk.decode(Session.self, from: Data(cli.stdout.utf8)) else {
                throw Options.Usage("deskctl start failed: \(cli.stdout.prefix(200))")
            }
            _ = try deskctlKill(mine.display)
            apiStart.append(api)
            cliStart.append(cliSeconds)
            startRatios.append(api / cliSeconds)
        }
        row("start through the API, to ready", Stats(values: apiStart), String(format: "%.2f× deskctl start's", Stats(values: startRatios).median))
        row("deskctl start, as the user", Stats(values: cliStart))
        _ = try? portalHTTP("POST", "/api/logout", body: "{}", headers: session)
    }

    /// The same list with a crowd: `crowdBrowsers` logins (eight to each of the crowd's accounts,
    /// an account's share of streams), each holding its page's live updates open, while the API's
    /// list is timed again; the median and p99 beside the idle ones, and deskd-web's and deskd's
    /// memory with the crowd and without.
    func crowd(idle: Stats, session: [String]) throws {
        let browsers = 200, perAccount = 8
        let accounts = try (1...(browsers / perAccount)).map { try Self.ensureUser("deskb-crowd-\($0)") }
        let password = "Bench-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        for account in accounts {
            guard try Run.of("/bin/sh", ["-c", "printf '%s:%s\\n' \"$1\" \"$2\" | /usr/sbin/chpasswd", "sh", account.name, password]).status == 0 else {
                throw Options.Usage("chpasswd failed for \(account.name)")
            }
        }
        defer { for account in accounts { _ = try? Run.of("/usr/bin/passwd", ["--lock", account.name]) } }
        let front = ProcFS.allPIDs().first { pid in ProcFS.readText("/proc/\(pid)/comm")?.hasPrefix("deskd-web") == true && ProcFS.isAlive(pid) }
        let frontBefore = front.map(residentMiB) ?? .nan, deskdBefore = residentMiB(daemonPID)
        var streams: [SocketReader] = [], cookies: [String] = []
        defer { for cookie in cookies { _ = try? portalHTTP("POST", "/api/logout", body: "{}", headers: ["Cookie: deskd_web=\(cookie)"]) } }
        for index in 0..<browsers {
            let account = accounts[index / perAccount]
            let login = try portalHTTP("POST", "/api/login", body: "{\"user\":\"\(account.name)\",\"password\":\"\(password)\"}")
            guard login.status == 200, let cookie = login.head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("set-cookie: deskd_web=") })
                .map({ String($0.dropFirst("set-cookie: deskd_web=".count).prefix { $0 != ";" }) }) else {
                throw Options.Usage("a crowd login failed: \(login.status) \(login.body.prefix(200))")
            }
            cookies.append(cookie)
            let stream = try SocketReader.connectTCP(port: webPort)
            try stream.write(Array("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(webPort)\r\nCookie: deskd_web=\(cookie)\r\n\r\n".utf8))
            let head = try stream.readHTTPHead()
            guard head.hasPrefix("HTTP/1.1 200") else { throw Options.Usage("a crowd browser's live updates were refused: \(head.prefix(80))") }
            streams.append(stream)
        }
        var crowded: [Double] = []
        for _ in 0..<max(20, options.pairs * 2) {
            let start = now()
            guard try portalHTTP("POST", "/api/request", body: "{\"version\":1,\"command\":\"list\"}", headers: session).status == 200 else {
                throw Options.Usage("the API's list failed in the crowd")
            }
            crowded.append(now() - start)
        }
        let stats = Stats(values: crowded)
        report("  with \(browsers) logged-in browsers holding their live updates (\(accounts.count) accounts):")
        row("list through the API, idle", idle, "p99 " + format(idle.percentile(0.99)))
        row("list through the API, in the crowd", stats, "p99 " + format(stats.percentile(0.99)) + String(format: "; median %.2f× idle's", stats.median / idle.median))
        let frontWith = front.map(residentMiB) ?? .nan, deskdWith = residentMiB(daemonPID)
        report("  " + "deskd-web resident memory".padding(toLength: 38, withPad: " ", startingAt: 0)
               + String(format: "%7.1f MiB idle, %7.1f MiB in the crowd", frontBefore, frontWith))
        report("  " + "deskd resident memory".padding(toLength: 38, withPad: " ", startingAt: 0)
               + String(format: "%7.1f MiB idle, %7.1f MiB in the crowd", deskdBefore, deskdWith))
        streams.removeAll()
    }

    /// One request over a connection of its own (Connection: close), as the portal's page sends it.
    func portalHTTP(_ method: String, _ path: String, body: String? = nil, headers: [String] = []) throws -> (status: Int, head: String, body: String) {
        let socket = try SocketReader.connectTCP(port: webPort)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(webPort)\r\nOrigin: http://127.0.0.1:\(webPort)\r\nConnection: close\r\n"
        for header in headers { request += header + "\r\n" }
        if let body { request += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body } else { request += "\r\n" }
        try socket.write(Array(request.utf8))
        let head = try socket.readHTTPHead()
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
        let bytes = try socket.read(length)
        return (status, head, String(decoding: bytes, as: UTF8.self))
    }
}
