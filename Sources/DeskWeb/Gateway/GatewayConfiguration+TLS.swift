import DeskFrontProtocol
import NIOSSL

extension GatewayConfiguration.TLSMinimum {
    var version: TLSVersion {
        switch self {
        case .tls12: .tlsv12
        case .tls13: .tlsv13
        }
    }
}


extension GatewayConfiguration {

    /// TLS 1.2's suites: ECDHE only (forward secrecy: a key taken later opens no recorded
    /// session) and AEAD only (no CBC, whose padding gave Lucky13 and POODLE). NIOSSL's default
    /// list also offers CBC and plain-RSA suites. TLS 1.3's suites are all of this kind and
    /// not configurable.
    static let tls12Ciphers: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]

    /// The gateway's TLS: its certificate, `tlsMinimum` as the floor and the suites above.
    func serverTLS(certificateChain: [NIOSSLCertificateSource], privateKey: NIOSSLPrivateKey) -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: certificateChain, privateKey: .privateKey(privateKey))
        tls.minimumTLSVersion = tlsMinimum.version
        tls.cipherSuiteValues = Self.tls12Ciphers
        return tls
    }
}
