import HTTPTypes

extension HTTPField.Name {
    // Force-unwrapping a literal that is a valid token is checked by the tests of every route.
    static let zumoAPIVersion = HTTPField.Name("ZUMO-API-VERSION")!
    static let zumoAuth = HTTPField.Name("X-ZUMO-AUTH")!
    static let link = HTTPField.Name("Link")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let deletedHorizon = HTTPField.Name("X-TSync-Deleted-Horizon")!
    static let schemaTag = HTTPField.Name("X-TSync-Schema")!
    static let pageEnd = HTTPField.Name("X-TSync-Page-End")!
    static let maximumTop = HTTPField.Name("X-TSync-Max-Top")!
    static let serverTiming = HTTPField.Name("Server-Timing")!
}

/// `Server-Timing` (W3C): the one metric tsync sends, `queue`, the milliseconds a read waited
/// for the database.
enum ServerTiming {
    static func queue(_ waited: Duration) -> String {
        let microseconds = waited.components.seconds * 1_000_000 + waited.components.attoseconds / 1_000_000_000_000
        return "queue;dur=\(microseconds / 1000).\(String(microseconds % 1000).leftPadded(to: 3))"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

extension HTTPFields {
    /// `self[name]` (every field of the name, joined): a field there once is its value as it is.
    /// HTTP types join even one value through generic code, a percent of the server's CPU
    /// following a table for the four fields every read looks up (docs/PERFORMANCE.md).
    func value(of name: HTTPField.Name) -> String? {
        guard let first = firstIndex(where: { $0.name == name }) else { return nil }
        guard self[index(after: first)...].contains(where: { $0.name == name }) else { return self[first].value }
        return self[name]
    }

    /// `self[name] = value`: a name not there yet (every field an answer's head gets, nearly) is
    /// appended, not set through HTTP types' generic replacement of every field of the name.
    mutating func set(_ value: String, for name: HTTPField.Name) {
        guard contains(where: { $0.name == name }) else { return append(HTTPField(name: name, value: value)) }
        self[name] = value
    }
}
