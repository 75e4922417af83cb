/// A schema compiled for checking: `true`/`false`, or the assertions of an object schema with
/// their values read once (a pattern compiled, numbers as `Double`).
indirect enum SchemaNode: Sendable {
    case always(Bool)
    case rules(SchemaRules)
}

/// The assertions of one object schema; nil or empty where the keyword is absent.
struct SchemaRules: Sendable {
    var types: Set<String>?
    var enumValues: [JSONValue]?
    var constValue: JSONValue?
    var reference: String?

    var minimum: Double?
    var maximum: Double?
    var exclusiveMinimum: Double?
    var exclusiveMaximum: Double?
    var multipleOf: Double?

    var minLength: Int?
    var maxLength: Int?
    var pattern: SchemaPattern?
    var format: SchemaFormat?

    var properties: [(name: String, schema: SchemaNode)] = []
    var required: [String] = []
    var additionalProperties: SchemaNode?

    var prefixItems: [SchemaNode] = []
    var items: SchemaNode?
    var minItems: Int?
    var maxItems: Int?
    var uniqueItems = false

    var allOf: [SchemaNode] = []
    var anyOf: [SchemaNode] = []
    var oneOf: [SchemaNode] = []
    var not: SchemaNode?
}

/// A `pattern`: ECMA-262 as far as Swift's regex syntax agrees with it (classes, quantifiers,
/// groups, anchors, alternation), matched anywhere in the string as JSON Schema says.
struct SchemaPattern: @unchecked Sendable {
    // Regex is immutable once made; it is not declared Sendable on every platform.
    let source: String
    let regex: Regex<AnyRegexOutput>

    init(_ source: String) throws {
        self.source = source
        regex = try Regex(source)
    }

    func matches(_ text: String) -> Bool { (try? regex.firstMatch(in: text)) != nil }
}

/// Reads a schema document into `SchemaNode`s, refusing what it does not support.
struct SchemaCompiler {
    /// The keywords checked.
    static let assertions: Set<String> = [
        "type", "enum", "const", "$ref", "$defs",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern", "format",
        "properties", "required", "additionalProperties",
        "items", "prefixItems", "minItems", "maxItems", "uniqueItems",
        "allOf", "anyOf", "oneOf", "not",
    ]
    /// The keywords that say something to people and change nothing.
    static let annotations: Set<String> = [
        "$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    ]
    static let typeNames: Set<String> = ["null", "boolean", "object", "array", "number", "integer", "string"]

    let document: JSONValue
    /// `$ref` targets named so far, and those already compiled.
    private var pending: [String] = []
    private var compiled: [String: SchemaNode] = [:]

    init(document: JSONValue) {
        self.document = document
    }

    mutating func compile(_ schema: JSONValue, at pointer: String) throws(TSyncError) -> SchemaNode {
        switch schema {
        case .bool(let value): return .always(value)
        case .object(let object): return .rules(try rules(object, at: pointer))
        default: throw Self.refused(pointer, "a schema is an object or a boolean, not \(schema.kindName)")
        }
    }

    /// Compiles every `$ref` target (and the targets theirs name) once.
    mutating func resolveReferences() throws(TSyncError) -> [String: SchemaNode] {
        while let pointer = pending.popLast() {
            guard compiled[pointer] == nil else { continue }
            guard let target = Self.resolve(pointer, in: document) else {
                throw Self.refused(pointer, "$ref names nothing in this schema")
            }
            compiled[pointer] = .always(true)  // a cycle finds itself compiled
            compiled[pointer] = try compile(target, at: pointer)
        }
        return compiled
    }

    private mutating func rules(_ object: [String: JSONValue], at pointer: String) throws(TSyncError) -> SchemaRules {
        var rules = SchemaRules()
        for (keyword, value) in object.sorted(by: { $0.key < $1.key }) {
            let here = pointer + "/" + Self.escape(keyword)
            if Self.annotations.contains(keyword) { continue }
            guard Self.assertions.contains(keyword) else {
                throw Self.refused(
                    here,
                    "the keyword \"\(keyword)\" is not supported (supported: \(RecordSchema.supportedKeywords.joined(separator: ", ")))")
            }
            switch keyword {
            case "type":
                let names: [String]
                switch value {
                case .string(let name): names = [name]
                case .array(let items): names = items.compactMap(\.stringValue)
                default: names = []
                }
                guard !names.isEmpty, names.allSatisfy(Self.typeNames.contains), names.count == value.arrayCount(orOne: 1) else {
                    throw Self.refused(here, "type is one of \(Self.typeNames.sorted().joined(separator: ", ")) or an array of them")
                }
                rules.types = Set(names)
            case "enum":
                guard case .array(let values) = value, !values.isEmpty else { throw Self.refused(here, "enum is a non-empty array") }
                rules.enumValues = values
            case "const": rules.constValue = value
            case "$ref":
                guard let target = value.stringValue, target == "#" || target.hasPrefix("#/") else {
                    throw Self.refused(here, "$ref names a place in this schema (\"#/$defs/name\"); other documents are not read")
                }
                rules.reference = target
                pending.append(target)
            case "$defs":
                guard case .object(let definitions) = value else { throw Self.refused(here, "$defs is an object of schemas") }
                for (name, definition) in definitions {
                    _ = try compile(definition, at: here + "/" + Self.escape(name))
                }
            case "minimum": rules.minimum = try Self.number(value, here)
            case "maximum": rules.maximum = try Self.number(value, here)
            case "exclusiveMinimum": rules.exclusiveMinimum = try Self.number(value, here)
            case "exclusiveMaximum": rules.exclusiveMaximum = try Self.number(value, here)
            case "multipleOf":
                let number = try Self.number(value, here)
                guard number > 0 else { throw Self.refused(here, "multipleOf is greater than 0") }
                rules.multipleOf = number
            case "minLength": rules.minLength = try Self.count(value, here)
            case "maxLength": rules.maxLength = try Self.count(value, here)
            case "minItems": rules.minItems = try Self.count(value, here)
            case "maxItems": rules.maxItems = try Self.count(value, here)
            case "pattern":
                guard let source = value.stringValue else { throw Self.refused(here, "pattern is a string") }
                do {
                    rules.pattern = try SchemaPattern(source)
                } catch {
                    throw Self.refused(here, "pattern \"\(source)\" is not a regular expression tsync can read: \(error)")
                }
            case "format":
                guard let name = value.stringValue, let format = SchemaFormat(rawValue: name) else {
                    throw Self.refused(
                        here, "format is one of \(SchemaFormat.allCases.map(\.rawValue).joined(separator: ", ")) (others are not checked)")
                }
                rules.format = format
            case "properties":
                guard case .object(let properties) = value else { throw Self.refused(here, "properties is an object of schemas") }
                for (name, property) in properties.sorted(by: { $0.key < $1.key }) {
                    rules.properties.append((name, try compile(property, at: here + "/" + Self.escape(name))))
                }
            case "required":
                guard case .array(let names) = value, names.allSatisfy({ $0.stringValue != nil }) else {
                    throw Self.refused(here, "required is an array of property names")
                }
                rules.required = names.compactMap(\.stringValue)
            case "additionalProperties": rules.additionalProperties = try compile(value, at: here)
            case "items": rules.items = try compile(value, at: here)
            case "prefixItems": rules.prefixItems = try list(value, at: here)
            case "uniqueItems":
                guard let flag = value.boolValue else { throw Self.refused(here, "uniqueItems is true or false") }
                rules.uniqueItems = flag
            case "allOf": rules.allOf = try list(value, at: here)
            case "anyOf": rules.anyOf = try list(value, at: here)
            case "oneOf": rules.oneOf = try list(value, at: here)
            case "not": rules.not = try compile(value, at: here)
            default: break
            }
        }
        return rules
    }

    private mutating func list(_ value: JSONValue, at pointer: String) throws(TSyncError) -> [SchemaNode] {
        guard case .array(let schemas) = value, !schemas.isEmpty else { throw Self.refused(pointer, "a non-empty array of schemas") }
        var nodes: [SchemaNode] = []
        for (index, schema) in schemas.enumerated() { nodes.append(try compile(schema, at: pointer + "/\(index)")) }
        return nodes
    }

    private static func number(_ value: JSONValue, _ pointer: String) throws(TSyncError) -> Double {
        switch value {
        case .int(let number): return Double(number)
        case .double(let number) where number.isFinite: return number
        default: throw refused(pointer, "a number")
        }
    }

    private static func count(_ value: JSONValue, _ pointer: String) throws(TSyncError) -> Int {
        switch value {
        case .int(let number) where number >= 0 && number <= Int64(Int32.max): return Int(number)
        case .double(let number) where number >= 0 && number == number.rounded() && number <= Double(Int32.max): return Int(number)
        default: throw refused(pointer, "a non-negative integer")
        }
    }

    static func refused(_ pointer: String, _ reason: String) -> TSyncError {
        TSyncError(.invalidConfiguration, "schema at \(pointer): \(reason)")
    }

    /// A JSON Pointer token: `~` as `~0`, `/` as `~1`.
    static func escape(_ token: String) -> String {
        var out = ""
        for character in token {
            switch character {
            case "~": out += "~0"
            case "/": out += "~1"
            default: out.append(character)
            }
        }
        return out
    }

    /// The value `pointer` (`#` or `#/a/b`) names in `document`, or nil.
    static func resolve(_ pointer: String, in document: JSONValue) -> JSONValue? {
        guard pointer != "#" else { return document }
        var value = document
        for raw in pointer.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let token = String(raw).replacing("~1", with: "/").replacing("~0", with: "~")
            switch value {
            case .object(let object):
                guard let next = object[token] else { return nil }
                value = next
            case .array(let items):
                guard let index = Int(token), items.indices.contains(index) else { return nil }
                value = items[index]
            default:
                return nil
            }
        }
        return value
    }
}

extension JSONValue {
    /// An array's count, or `one` for anything else.
    fileprivate func arrayCount(orOne one: Int) -> Int {
        if case .array(let items) = self { return items.count }
        return one
    }
}
