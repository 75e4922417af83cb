/// A table's record type: a JSON Schema (draft 2020-12) over a record's user fields, system
/// properties excluded (docs/DESIGN.md §16). The server checks every write against it and the
/// client every change before it is queued, by this one type, so both answer a bad record with the
/// same paths and reasons.
///
/// Only the keywords that describe records are taken; a schema that uses any other is refused
/// when it is read, naming the keyword and where it stands, rather than half-enforced.
public struct RecordSchema: Sendable, Equatable {
    /// The document as it was given: what `/openapi.json` and the client are sent.
    public let document: JSONValue
    /// A short hash of the document's bytes in the serializer's key order: a page read carries it
    /// (`X-TSync-Schema`), so a client fetches the schema only when it changed.
    public let tag: String
    let root: SchemaNode
    /// The compiled targets of the document's `$ref`s, by JSON Pointer (`#/$defs/price`).
    let references: [String: SchemaNode]

    /// Reads `document`, refusing a keyword outside those supported, a keyword whose value has
    /// the wrong shape, and a `$ref` that leaves the document or names nothing in it.
    public init(_ document: JSONValue) throws(TSyncError) {
        self.document = document
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits
        for byte in JSONSerializer.bytes(document) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        tag = String(repeating: "0", count: 16 - hex.count) + hex
        var compiler = SchemaCompiler(document: document)
        root = try compiler.compile(document, at: "#")
        references = try compiler.resolveReferences()
    }

    public static func == (lhs: RecordSchema, rhs: RecordSchema) -> Bool { lhs.document == rhs.document }

    /// The ways `fields` (a record's user fields) fails the schema, in document order of the
    /// paths, the first `maximumViolations` of them and then one saying that more fail; empty
    /// when it validates. System properties in `fields` are not looked at.
    public func violations(of fields: [String: JSONValue]) -> [SchemaViolation] {
        var user = fields
        for name in SystemProperties.names { user.removeValue(forKey: name) }
        var validator = SchemaValidator(references: references, limit: Self.maximumViolations)
        validator.check(.object(user), against: root, at: JSONPath())
        guard validator.more else { return validator.violations }
        return validator.violations
            + [SchemaViolation(path: "$", reason: "fails in more places: only the first \(Self.maximumViolations) are named")]
    }

    /// How many violations a check names: enough for any record a person fixes by hand, and a
    /// bound on what a refusal costs the server (an item of 300,000 failing values, 0.9 MB, made
    /// a 32 MB answer when each was named).
    public static let maximumViolations = 100

    /// The words of a refusal by a table's schema, on both ends: the server's 400 message and the
    /// client's own refusal carry them, and the error table classes a push refused so (`schema`).
    public static let refusalWords = "does not match the schema of table"

    /// The keywords a schema may use: those that describe a record's shape, and annotations.
    public static let supportedKeywords: [String] = SchemaCompiler.assertions.sorted() + SchemaCompiler.annotations.sorted()
}

/// One way a record fails its schema: where (`$.items[2].name`) and why, in words.
public struct SchemaViolation: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public var description: String { "\(path): \(reason)" }

    /// The violations as one line each, at most `limit` of them, and how many more there were.
    public static func summary(_ violations: [SchemaViolation], limit: Int = 10) -> String {
        var lines = violations.prefix(limit).map(\.description)
        if violations.count > limit { lines.append("… and \(violations.count - limit) more") }
        return lines.joined(separator: "; ")
    }
}

/// A path into a record as JSONPath writes it: `$`, `.name` for a simple key, `['odd key']`
/// otherwise, `[3]` for an array element.
struct JSONPath: CustomStringConvertible {
    private var text = "$"

    func appending(key: String) -> JSONPath {
        var path = self
        if Identifiers.isSimpleName(key) {
            path.text += "." + key
        } else {
            path.text += "['" + key.replacingQuotes() + "']"
        }
        return path
    }

    func appending(index: Int) -> JSONPath {
        var path = self
        path.text += "[\(index)]"
        return path
    }

    var description: String { text }
}

extension String {
    /// `'` and `\` escaped for a JSONPath bracketed name.
    fileprivate func replacingQuotes() -> String {
        var out = ""
        for character in self {
            if character == "'" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out
    }
}
