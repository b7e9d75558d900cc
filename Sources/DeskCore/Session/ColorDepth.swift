/// Colour depths Xvnc accepts.
public enum ColorDepth {
    public static let allowed = [16, 24, 32]
    public static let `default` = 24

    public static func validate(_ depth: Int) throws(DeskError) -> Int {
        guard allowed.contains(depth) else {
            throw DeskError(.invalidDepth, "depth \(depth) is not supported; use 16, 24 or 32.")
        }
        return depth
    }
}
