/// A JSON value as tsync keeps it: records, operation bodies and wire payloads are all made of these.
///
/// Integers are kept apart from reals so that an `id`-like number such as `9007199254740993` survives a
/// round trip through the store unchanged, which `Double` could not promise.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

/// Equality is exact, as JSON and the databases see values: text byte for byte (Swift's `String ==`
/// calls "é" (U+00E9) and "e" + U+0301 equal, but they are different values on the wire, in SQLite
/// and in PostgreSQL, and a change from one to the other is a change), object keys the same way,
/// and reals by their bits (`-0.0` is not `0.0`).
extension JSONValue {
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern  // -0.0 is not 0.0
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return JSONValue.sameObject(a, b)
        default: return false
        }
    }

    /// Same keys (byte for byte) with equal values.
    public static func sameObject(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> Bool {
        guard a.count == b.count else { return false }
        for (key, value) in a {
            guard let index = b.index(forKey: key), b[index].key.utf8.elementsEqual(key.utf8), b[index].value == value
            else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .int(let value): hasher.combine(value)
        case .double(let value): hasher.combine(value.bitPattern)
        case .string(let value):
            hasher.combine(1)
            for byte in value.utf8 { hasher.combine(byte) }
        case .array(let values):
            hasher.combine(values.count)
            for value in values { hasher.combine(value) }
        case .object(let object):
            // Order-independent: dictionaries have no order.
            hasher.combine(object.count)
            var sum = 0
            for (key, value) in object {
                var entry = Hasher()
                entry.combine(JSONValue.string(key))
                entry.combine(value)
                sum &+= entry.finalize()
            }
            hasher.combine(sum)
        }
    }
}

extension JSONValue {
    public var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The kind of value, as a user reads it in an error message.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Equality as JSON means it: `1` and `1.0` are the same number.
    public func jsonEquals(_ other: JSONValue) -> Bool {
        switch (self, other) {
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)):
            return Double(a) == b
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.jsonEquals($1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let index = b.index(forKey: key), b[index].key.utf8.elementsEqual(key.utf8),
                    value.jsonEquals(b[index].value)
                else { return false }
            }
            return true
        default:
            return self == other
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}
