/// The verbs of the control protocol, as they travel in a request's `command`.
public enum Command: String, Codable, Sendable, CaseIterable {
    case ping, start, list, show, kill, reap, probe, passwd, history, status, logs, url, metrics, desktops, extend
}
