import DeskCore
import Glibc

/// A Unix account, resolved through NSS (so LDAP and SSSD users work as well as /etc/passwd).
public struct UserAccount: Sendable, Equatable {
    public let name: String
    public let uid: uid_t
    public let gid: gid_t
    public let home: String
    public let shell: String
    /// Supplementary groups as `initgroups` would set them, primary group included.
    public let groups: [gid_t]

    public init(name: String, uid: uid_t, gid: gid_t, home: String, shell: String, groups: [gid_t]) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.home = home
        self.shell = shell
        self.groups = groups
    }

    public static func named(_ name: String) -> UserAccount? {
        // Names with a slash, a colon or a NUL cannot be accounts; do not hand them to NSS.
        guard !name.isEmpty, name.utf8.count <= 64, !name.contains(where: { $0 == "/" || $0 == ":" || $0 == "\0" }) else { return nil }
        return lookup { pwd, buffer, size, result in getpwnam_r(name, &pwd, buffer, size, &result) }
    }

    public static func withUID(_ uid: uid_t) -> UserAccount? {
        lookup { pwd, buffer, size, result in getpwuid_r(uid, &pwd, buffer, size, &result) }
    }

    private static func lookup(
        _ call: (inout passwd, UnsafeMutablePointer<CChar>, Int, inout UnsafeMutablePointer<passwd>?) -> Int32
    ) -> UserAccount? {
        var size = 4096
        while size <= 1 << 20 {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            var pwd = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let status = call(&pwd, buffer, size, &result)
            if status == ERANGE { size *= 4; continue }
            guard status == 0, result != nil else { return nil }
            let name = String(cString: pwd.pw_name)
            return UserAccount(
                name: name, uid: pwd.pw_uid, gid: pwd.pw_gid,
                home: String(cString: pwd.pw_dir), shell: String(cString: pwd.pw_shell),
                groups: groupList(name: name, primary: pwd.pw_gid)
            )
        }
        return nil
    }

    static func groupList(name: String, primary: gid_t) -> [gid_t] {
        var count: Int32 = 64
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            let requested = count
            if getgrouplist(name, primary, &groups, &count) != -1 {
                return Array(groups.prefix(Int(count)))
            }
            if count <= requested { count = requested * 2 }
        }
    }
}
