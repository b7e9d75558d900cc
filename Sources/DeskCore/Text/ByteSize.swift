/// Sizes as a person reads them in a refusal or `deskctl status`: "1.5 GiB", "256 MiB".
public enum ByteSize {
    public static func text(_ bytes: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes), unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        // One decimal below 10 of a unit, where it still tells two sizes apart; none above.
        let rounded = value < 10 && unit > 0 ? (value * 10).rounded() / 10 : value.rounded()
        let digits = rounded == rounded.rounded() ? String(Int(rounded)) : DecimalText.format(rounded, places: 1)
        return "\(digits) \(units[unit])"
    }
}
