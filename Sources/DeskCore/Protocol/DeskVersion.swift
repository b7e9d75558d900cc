public enum DeskVersion {
    public static let current = "0.1.0"
}
