import DeskLinux
import Glibc

public enum GroupDirectory {
    /// The gid of a group, through NSS.
    public static func gid(named name: String) -> gid_t? {
        var size = 4096
        while size <= 1 << 22 {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            var group = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            let status = getgrnam_r(name, &group, buffer, size, &result)
            if status == ERANGE { size *= 4; continue }
            guard status == 0, result != nil else { return nil }
            return group.gr_gid
        }
        return nil
    }
}
