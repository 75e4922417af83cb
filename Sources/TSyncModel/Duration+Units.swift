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
