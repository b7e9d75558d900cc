import Logging

/// What every connection of one gateway shares.
struct GatewayEnvironment: Sendable {
    let configuration: GatewayConfiguration
    let authority: any GatewayAuthority
    let logger: Logger
    let metrics: GatewayMetrics
    let files: StaticFiles
    let registry: RelayRegistry

    var limits: GatewayConfiguration.Limits { configuration.limits }
    var isTLS: Bool { configuration.isTLS }
}
