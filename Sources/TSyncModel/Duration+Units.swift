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

extension Duration {
    /// A wait as people say it, rounded up: "40 seconds", "1 minute", "15 minutes", "2 hours"
    /// (a lockout's "try again in …", never "899 s").
    public var spoken: String {
        let seconds = max(0, Int((fractionalSeconds).rounded(.up)))
        func unit(_ count: Int, _ name: String) -> String { "\(count) \(name)\(count == 1 ? "" : "s")" }
        if seconds < 60 { return unit(seconds, "second") }
        let minutes = (seconds + 59) / 60
        if minutes < 120 { return unit(minutes, "minute") }
        return unit((minutes + 59) / 60, "hour")
    }
}
