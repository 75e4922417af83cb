import NIOHTTP1

/// Whether an answer is the answer to the request it came back on (docs/DESIGN.md §4, "Echo").
///
/// A cache or proxy that keys its answers wrongly (by path, without the query) hands one read the
/// answer to another. A page that starts later than the read asked passes every check of its
/// records (they do come after the checkpoint, in order), so the pull wrote it and its checkpoint
/// jumped over the records in between, for good. Nothing in a page tells which read it answers: so
/// every request carries a token of its own (`X-TSync-Echo`), and `tsync serve` sends it back.
///
/// An answer that echoes another token is another request's. One that echoes none is judged by
/// the other checks, as a plain v2 server's is: nothing tells a server that never echoes from a
/// proxy that strips the header, or from one that answers in the server's place (a captive
/// portal's page, a damaged body), and those have their own words.
enum EchoCheck {
    /// The header a request carries its token in, and `tsync serve` answers it in.
    static let header = "X-TSync-Echo"

    /// A new token: 128 random bits in hex, too many for a cache's old answer to carry by chance.
    static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex(generator.next()) + hex(generator.next())
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Whether an answer with `headers` may be the answer to the request that sent `token`.
    static func answers(_ token: String, headers: HTTPHeaders) -> Bool {
        headers.first(name: header).map { $0 == token } ?? true
    }
}
