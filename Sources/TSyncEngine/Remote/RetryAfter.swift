import Foundation
import NIOHTTP1

/// A server's `Retry-After` (RFC 9110 §10.2.3), read: delta-seconds or an HTTP-date, the date
/// taken against the answer's own `Date` (the server's clock, not this machine's). Said in
/// words, bounded to an hour: a value past that is said as "more than an hour", one in the
/// past as "at once", and one that is neither form (`-5`, `soon`) is not said at all
/// (docs/DESIGN.md §4).
struct RetryAfter: Sendable, Equatable, CustomStringConvertible {
    /// The wait, in whole seconds, at most `bound`.
    var seconds: Int
    /// Whether the server asked for more than `bound`.
    var beyondBound: Bool

    /// The longest wait said as a number.
    static let bound = 3600

    /// The answer's `Retry-After`, nil when it has none or none tsync can read.
    init?(_ headers: HTTPHeaders, now: Date = Date()) {
        guard let value = headers.first(name: "Retry-After") else { return nil }
        self.init(value, date: headers.first(name: "Date"), now: now)
    }

    init?(_ value: String, date: String?, now: Date = Date()) {
        let text = value.trimmingCharacters(in: .whitespaces)
        let wait: Double
        if !text.isEmpty, text.allSatisfy(\.isASCIIDigit) {
            wait = Double(text.prefix(12)) ?? Double(Self.bound + 1)
        } else if let until = Self.httpDate(text) {
            // Against the server's clock when it says it, so a skewed clock here does not matter.
            let reference = date.flatMap(Self.httpDate) ?? now
            wait = until.timeIntervalSince(reference)
        } else {
            return nil
        }
        beyondBound = wait > Double(Self.bound)
        seconds = Int(min(max(wait, 0), Double(Self.bound)).rounded(.up))
    }

    var description: String {
        if beyondBound { return "retry in more than an hour" }
        if seconds == 0 { return "retry at once" }
        if seconds < 120 { return "retry after \(seconds) s" }
        return "retry after \((seconds + 59) / 60) min"
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 requires senders to
    /// use, through the one reader of HTTP dates (`HTTPDate`, which a page's `Date` goes through).
    static func httpDate(_ text: String) -> Date? {
        HTTPDate.parse(text).map { Date(timeIntervalSince1970: Double($0.millisecondsSinceEpoch) / 1000) }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
