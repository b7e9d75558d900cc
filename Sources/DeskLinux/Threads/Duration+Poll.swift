extension Duration {
    /// This long as poll(2)'s timeout: whole milliseconds rounded up, so a wait never ends before
    /// its deadline, and at most `cap`.
    public func pollMilliseconds(atMost cap: Int64) -> Int32 {
        Int32(min(components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 + 1, cap))
    }
}
