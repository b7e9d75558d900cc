import Testing

/// Every end-to-end suite nests in this one: they share the host's X displays, so they run one
/// test at a time (a test that plants a lock on "the next free display" must not race a start).
@Suite(.serialized, .enabled(if: TestEnvironment.canRun, TestEnvironment.skipReason))
enum EndToEnd {}
