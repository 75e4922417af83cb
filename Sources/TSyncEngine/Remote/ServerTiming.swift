/// The one `Server-Timing` metric the client reads: `queue`, the milliseconds `tsync serve` says a
/// read waited for its database (docs/DESIGN.md §8). Another server sends none, a proxy may drop
/// or rewrite it: what is absent or not a plain duration is nil, and the pull paces itself on its
/// round trips alone.
enum ServerTiming {
    /// The longest wait taken as said: beyond it, a number is not a wait the pull can act on.
    static let longest = Duration.seconds(3600)

    /// `fields`: the answer's `Server-Timing` fields, as sent.
    static func queue(in fields: [String]) -> Duration? {
        for metric in fields.lazy.flatMap({ $0.split(separator: ",") }) {
            let parameters = metric.split(separator: ";").map { $0.trimmingSpaces }
            guard parameters.first == "queue" else { continue }
            for parameter in parameters.dropFirst() {
                guard parameter.hasPrefix("dur="), let milliseconds = Double(parameter.dropFirst(4)), milliseconds.isFinite,
                    milliseconds >= 0, milliseconds <= Double(longest.components.seconds) * 1000
                else { continue }
                return .microseconds(Int64(milliseconds * 1000))
            }
            return nil
        }
        return nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
