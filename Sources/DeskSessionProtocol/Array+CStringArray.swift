import Glibc

// Here because both ends of the protocol spawn processes with it: deskd starts deskd-session,
// and deskd-session starts Xvnc and the desktop.
extension Array where Element == String {
    /// A NULL-terminated array of C strings (an argv or envp), alive for the duration of `body`.
    public func withCStringArray<R>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers = map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
