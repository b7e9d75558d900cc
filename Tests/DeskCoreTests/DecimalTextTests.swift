import DeskCore
import FoundationEssentials
import Glibc
import Testing

@Suite struct DecimalTextTests {
    @Test("fixed decimals as printf's %.Nf shows them, away from ties", arguments: [
        (12.345, 1, "12.3"), (0.04, 1, "0.0"), (2, 2, "2.00"), (0.6, 0, "1"), (-1.26, 1, "-1.3"), (1234.5678, 3, "1234.568"), (0.05, 2, "0.05"),
    ])
    func format(value: Double, places: Int, text: String) {
        #expect(DecimalText.format(value, places: places) == text)
    }
}

@Suite struct ByteSizeTests {
    @Test func sizesReadAsAPersonWouldSayThem() {
        #expect(ByteSize.text(512) == "512 B")
        #expect(ByteSize.text(256 << 20) == "256 MiB")
        #expect(ByteSize.text(3 << 29) == "1.5 GiB")
        #expect(ByteSize.text(2 << 30) == "2 GiB")
        #expect(ByteSize.text(20_000_000 * 1024) == "19 GiB")
    }
}
