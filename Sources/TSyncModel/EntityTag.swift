/// Versions as HTTP entity tags (docs/DESIGN.md §4): `ETag: "v"` on answers, `If-Match: "v"` on writes.
/// One definition for the client and the server.
public enum EntityTag {
    /// `"version"`.
    public static func quoted(_ version: String) -> String { "\"" + version + "\"" }

    /// The version an `ETag` header names. A weak tag (`W/"v"`) is read too: it still names the
    /// version, even though `If-Match` never matches it.
    public static func version(from header: String) -> String {
        var text = Substring(header)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = text.dropFirst().dropLast() }
        return String(text)
    }

    /// What an `If-Match` header asks for, compared strongly (RFC 9110 §13.1.1): `*` matches any
    /// version; weak tags never match, so they are dropped (`hadWeakTags` tells that some were there).
    public enum IfMatch: Equatable, Sendable {
        case any
        case versions([String], hadWeakTags: Bool)
    }

    public static func ifMatch(_ header: String) -> IfMatch {
        singleQuotedTag(header) ?? generalIfMatch(header)
    }

    /// The header every tsync client sends, one quoted tag of ASCII (a push's every update has
    /// one), read from its bytes: the general reading works on characters, 3% of a batched
    /// push's server CPU for updates. Nil for any other header. `EntityTagTests` holds it to
    /// `generalIfMatch`.
    static func singleQuotedTag(_ header: String) -> IfMatch? {
        let bytes = header.utf8
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return nil }
        let inner = bytes.dropFirst().dropLast()
        // ASCII only: a quote followed by a combining mark is one character, which the general
        // reading does not take for a quote.
        guard !inner.contains(where: { $0 >= 0x80 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: ",") }) else { return nil }
        return .versions(inner.isEmpty ? [] : [String(Substring(inner))], hadWeakTags: false)
    }

    /// `ifMatch` for any header: comma-separated tags, white space around them, `*`, weak tags.
    static func generalIfMatch(_ header: String) -> IfMatch {
        var versions: [String] = []
        var weak = false
        for part in header.split(separator: ",") {
            var tag = Substring(part)
            while tag.first == " " || tag.first == "\t" { tag = tag.dropFirst() }
            while tag.last == " " || tag.last == "\t" { tag = tag.dropLast() }
            if tag == "*" { return .any }
            if tag.hasPrefix("W/") {
                weak = true
                continue
            }
            if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = tag.dropFirst().dropLast() }
            if !tag.isEmpty { versions.append(String(tag)) }
        }
        return .versions(versions, hadWeakTags: weak)
    }
}
