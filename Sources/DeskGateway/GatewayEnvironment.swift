import Logging

/// What every connection of one gateway shares.
struct GatewayEnvironment: Sendable {
    let configuration: GatewayConfiguration
    let authority: any GatewayAuthority
    /// The web portal's deskd, where the gateway serves one (deskd-web); nil: no portal.
    let portal: (any PortalAuthority)?
    let logger: Logger
    let metrics: GatewayMetrics
    let files: StaticFiles
    let registry: RelayRegistry
    /// Read noVNC's files on the connection's own event loop: for an adopted, in-memory
    /// connection (`Gateway.adopt`), which stalls no one else and whose caller then finds each
    /// answer sent as soon as its request is read. Every socket's connection reads them off its
    /// event loop, so a slow disk stalls no relay.
    var readsFilesInline = false

    var limits: GatewayConfiguration.Limits { configuration.limits }
    var isTLS: Bool { configuration.isTLS }
}
