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

    var limits: GatewayConfiguration.Limits { configuration.limits }
    var isTLS: Bool { configuration.isTLS }
}
