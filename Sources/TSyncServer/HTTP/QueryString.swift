/// The query part of a URL, decoded: `%XX` in names and values (clients encode `$filter` as
/// `%24filter`), `+` as a space as in HTML forms. Invalid escapes or UTF-8 are a 400.
struct QueryString {
    private(set) var items: [(name: String, value: String)] = []

    init(_ raw: String?) throws(APIError) {
        guard let raw, !raw.isEmpty else { return }
        guard let items = Self.itemsOfPlainQuery(raw) else {
            self = try Self(inGeneral: raw)
            return
        }
        self.items = items
    }

    /// Splits and decodes by character, whatever the query holds: the way every query went before
    /// `itemsOfPlainQuery`, and what it is tested against.
    init(inGeneral raw: String) throws(APIError) {
        for (name, value) in Self.pairsInGeneral(raw) {
            let decoded = try Self.decode(name)
            items.append((decoded, try value.map(Self.decode) ?? ""))
        }
    }

    /// The items of an ASCII query with valid escapes (as clients send it, percent-encoded), split
    /// and decoded in one pass over its bytes: its bytes are its characters. A watcher following a
    /// table sends one with every request; splitting it into substrings and decoding each was a
    /// twenty-fifth of the server's CPU (docs/PERFORMANCE.md). Nil for any other query (non-ASCII,
    /// a bad escape, an escape that is not UTF-8), which `init(inGeneral:)` splits and decodes, or
    /// refuses.
    static func itemsOfPlainQuery(_ raw: String) -> [(name: String, value: String)]? {
        var raw = raw
        return raw.withUTF8 { bytes -> [(name: String, value: String)]? in
            var items: [(name: String, value: String)] = []
            var start = 0
            while start < bytes.count {
                var end = start
                var equals: Int?
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") {
                    guard bytes[end] < 0x80 else { return nil }
                    if equals == nil, bytes[end] == UInt8(ascii: "=") { equals = end }
                    end += 1
                }
                if end > start {
                    guard let name = decodePlain(UnsafeBufferPointer(rebasing: bytes[start..<(equals ?? end)])) else { return nil }
                    var value = ""
                    if let equals {
                        guard let decoded = decodePlain(UnsafeBufferPointer(rebasing: bytes[(equals + 1)..<end])) else { return nil }
                        value = decoded
                    }
                    items.append((name, value))
                }
                start = end + 1
            }
            return items
        }
    }

    /// `decode` of ASCII bytes, nil where it would throw.
    private static func decodePlain(_ text: UnsafeBufferPointer<UInt8>) -> String? {
        guard case .decoded(let string) = decoding(text) else { return nil }
        return string
    }

    static func pairsInGeneral(_ raw: String) -> [(name: Substring, value: Substring?)] {
        raw.split(separator: "&", omittingEmptySubsequences: true).map { part in
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (pieces[0], pieces.count > 1 ? pieces[1] : nil)
        }
    }

    func value(for name: String) -> String? {
        items.first { $0.name == name }?.value
    }

    /// The value of a parameter that may appear at most once.
    /// Looked up seven times for every list read: found without an array of the matches.
    func single(_ name: String) throws(APIError) -> String? {
        var found: String?
        for item in items where item.name == name {
            guard found == nil else { throw .badRequest("\(name) is given more than once") }
            found = item.value
        }
        return found
    }

    /// The same parameters with `name` set to `value` (replacing any), each encoded anew, so the
    /// result has no raw `,` or `;` that would break a `Link` header.
    /// With `keeping`, only those parameters are kept (and `name`).
    func replacing(_ name: String, with value: String, keeping: Set<String>? = nil) -> String {
        var result = items.filter { $0.name != name && keeping?.contains($0.name) != false }
        result.append((name, value))
        return result.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    static func decode(_ text: Substring) throws(APIError) -> String {
        switch decoding(text.utf8) {
        case .decoded(let string): return string
        case .badEscape: throw .badRequest("invalid percent-encoding in the query string")
        case .notUTF8: throw .badRequest("the query string is not valid UTF-8")
        }
    }

    /// What `decode` makes of a text's bytes.
    private enum Decoding {
        case decoded(String)
        case badEscape
        case notUTF8
    }

    /// `+` as a space and `%XX` as its byte, the one decoder of both ways a query is read
    /// (`itemsOfPlainQuery` and `init(inGeneral:)`). A text with neither is made a string as it is.
    private static func decoding(_ text: some Collection<UInt8>) -> Decoding {
        guard text.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return String(validating: text, as: UTF8.self).map(Decoding.decoded) ?? .notUTF8
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return .badEscape
                }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self).map(Decoding.decoded) ?? .notUTF8
    }

    /// Decodes a path segment: `%XX` only (a `+` in a path is a plus sign).
    /// A segment without a `%` byte (every table name a client sends, nearly) is not searched
    /// for one as text, which Foundation's search does at a cost each list read paid.
    static func decodePathSegment(_ text: Substring) throws(APIError) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")), text.contains("%") else { return String(text) }
        return try decode(Substring(text.replacingPlus()))
    }

    static func encode(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "$"):
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(digits[Int(byte >> 4)])
                output.append(digits[Int(byte & 0xF)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A hexadecimal digit's value (a `%XX` escape's half), nil for any other byte.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Substring {
    /// `+` kept literal through `QueryString.decode` (which reads `+` as a space).
    fileprivate func replacingPlus() -> String {
        var output = ""
        for character in self { output += character == "+" ? "%2B" : String(character) }
        return output
    }
}
