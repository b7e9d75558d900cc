import DeskFrontProtocol
import Glibc

/// deskd reads the gateway's certificate and key as root (the key is root's alone) and hands
/// them to deskd-web with the gateway's listening socket.
extension TLSMaterial {
    /// The files `configuration` names (nil for plain HTTP), read whole; not parsed here: deskd
    /// leaves TLS to the web front, which says so if they do not make a certificate and key.
    public static func read(for configuration: GatewayConfiguration) throws(GatewayError) -> TLSMaterial? {
        guard let certificatePath = configuration.tlsCertificatePath, let keyPath = configuration.tlsKeyPath else { return nil }
        let certificate = try readText(certificatePath)
        let key = try readText(keyPath)
        return TLSMaterial(certificatePath: certificatePath, keyPath: keyPath, certificatePEM: certificate, keyPEM: key)
    }

    /// A PEM file is a few kilobytes, a long chain a few dozen; more than this is not one (and
    /// both together must fit one of deskd's records to the front, `FrontWire.eventLimit`).
    private static let largestFile = 128 << 10

    private static func readText(_ path: String) throws(GatewayError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            throw GatewayError(.tlsUnreadable, "the gateway's TLS file \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw GatewayError(.tlsUnreadable, "the gateway's TLS file \(path) cannot be read: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[..<n]
            guard bytes.count <= largestFile else { throw GatewayError(.tlsUnreadable, "the gateway's TLS file \(path) is over 128 KiB, which no PEM certificate chain or key is") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
