/// The gateway's certificate chain and private key as PEM text, read by deskd as root (the key
/// is root's alone) and handed to deskd-web with the gateway's listening socket.
public struct TLSMaterial: Sendable, Equatable, Codable {
    /// Where they were read from, for messages.
    public var certificatePath: String
    public var keyPath: String
    public var certificatePEM: String
    public var keyPEM: String

    public init(certificatePath: String, keyPath: String, certificatePEM: String, keyPEM: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.certificatePEM = certificatePEM
        self.keyPEM = keyPEM
    }
}
