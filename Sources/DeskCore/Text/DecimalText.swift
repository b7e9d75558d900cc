/// Numbers with a fixed count of decimals (`12.3`): what `String(format: "%.1f")` would print,
/// without Foundation's formatter, which links ICU.
public enum DecimalText {
    /// `value` rounded half away from zero to `places` decimals (0 to 9).
    public static func format(_ value: Double, places: Int) -> String {
        let places = min(max(places, 0), 9)
        let scale = (0..<places).reduce(Int64(1)) { product, _ in product * 10 }
        let scaled = (abs(value) * Double(scale)).rounded()
        // Infinities, NaN and numbers past Int64 are never what deskd prints; Swift's own text will do.
        guard value.isFinite, scaled < 9e18 else { return "\(value)" }
        let units = Int64(scaled)
        var text = (value < 0 && units != 0 ? "-" : "") + String(units / scale)
        if places > 0 {
            let fraction = String(units % scale)
            text += "." + String(repeating: "0", count: places - fraction.count) + fraction
        }
        return text
    }
}
