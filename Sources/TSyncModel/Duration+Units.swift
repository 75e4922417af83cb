extension Duration {
    /// Whole milliseconds: the unit of every time the server stores and `-v` shows.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Seconds with their fraction, as JSON events and log lines write a duration.
    public var fractionalSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// A length of time as a person writes one for tsync, on the command line or in `serve`'s config
/// file: a whole number and a unit, `90s`, `15m`, `12h`, `30d`. A bare number is seconds, as
/// serve's flags first took them (`--token-ttl 86400`). Every flag and key that takes a duration
/// reads it here, so one form is accepted everywhere.
public struct WrittenDuration: Sendable, Hashable, CustomStringConvertible {
    public let seconds: Int

    public init(seconds: Int) {
        self.seconds = seconds
    }

    /// The units, largest first, as `description` tries them.
    private static let units: [(suffix: Character, seconds: Int)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]

    /// Nil for anything but digits with at most one unit after them (no space, fraction or plus),
    /// or a length past what an `Int` of seconds holds. A minus is read, for the flag's own check
    /// to refuse it by its bounds ("must be at least 1s (got -2s)") rather than as a bad form.
    public init?(_ text: String) {
        var digits = Substring(text)
        var unit = 1
        if let last = text.last, let known = Self.units.first(where: { $0.suffix == last }) {
            unit = known.seconds
            digits = digits.dropLast()
        }
        let magnitude = digits.hasPrefix("-") ? digits.dropFirst() : digits
        guard !magnitude.isEmpty, magnitude.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let number = Int(digits)
        else { return nil }
        let (product, overflow) = number.multipliedReportingOverflow(by: unit)
        guard !overflow else { return nil }
        seconds = product
    }

    public var duration: Duration { .seconds(seconds) }

    /// In the largest unit that holds it whole: `30d`, `36h`, `90m`, `45s` (`0s`).
    public var description: String {
        let unit = Self.units.first { seconds != 0 && seconds % $0.seconds == 0 } ?? ("s", 1)
        return "\(seconds / unit.seconds)\(unit.suffix)"
    }

    /// What the flags' messages say a duration is.
    public static let form = "a number and a unit, e.g. 90s, 15m, 12h or 30d (a bare number is seconds)"
}
