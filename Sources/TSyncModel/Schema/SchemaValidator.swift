/// Checks a value against a compiled schema and collects its violations, with their paths, up to
/// `limit`: past it the walk stops (`more` says that it did), so a record of a million failing
/// values costs neither a million strings nor an answer a thousand times its size.
struct SchemaValidator {
    let references: [String: SchemaNode]
    let limit: Int
    private(set) var violations: [SchemaViolation] = []
    /// Whether the walk stopped at `limit` with more of the value left to check.
    private(set) var more = false
    /// How deep `$ref`s and nested values may go: a schema that refers to itself without
    /// consuming the value (`{"$ref": "#"}`) must end.
    static let maximumDepth = 128
    private var depth = 0

    init(references: [String: SchemaNode], limit: Int) {
        self.references = references
        self.limit = limit
    }

    /// Whether `value` passes `node`, without collecting why not (for `anyOf`, `oneOf`, `not`):
    /// the first violation answers it.
    private func passes(_ value: JSONValue, _ node: SchemaNode, at path: JSONPath) -> Bool {
        var probe = SchemaValidator(references: references, limit: 1)
        probe.depth = depth
        probe.check(value, against: node, at: path)
        return probe.violations.isEmpty
    }

    private mutating func fail(_ path: JSONPath, _ reason: String) {
        guard violations.count < limit else {
            more = true
            return
        }
        violations.append(SchemaViolation(path: path.description, reason: reason))
    }

    mutating func check(_ value: JSONValue, against node: SchemaNode, at path: JSONPath) {
        guard violations.count < limit else {
            more = true
            return
        }
        switch node {
        case .always(true): return
        case .always(false): return fail(path, "is not allowed here")
        case .rules(let rules):
            guard depth < Self.maximumDepth else { return fail(path, "the schema nests deeper than \(Self.maximumDepth) levels here") }
            depth += 1
            defer { depth -= 1 }
            check(value, rules, at: path)
        }
    }

    private mutating func check(_ value: JSONValue, _ rules: SchemaRules, at path: JSONPath) {
        if let types = rules.types, !types.contains(where: { Self.isOfType(value, $0) }) {
            fail(path, "expected \(types.sorted().joined(separator: " or ")), got \(Self.typeName(value))")
            return  // the other keywords would only repeat it
        }
        if let values = rules.enumValues, !values.contains(where: { $0.jsonEquals(value) }) {
            fail(path, "must be one of \(Self.list(values))")
        }
        if let constant = rules.constValue, !constant.jsonEquals(value) {
            fail(path, "must be \(JSONSerializer.string(constant))")
        }
        if let reference = rules.reference {
            check(value, against: references[reference] ?? .always(true), at: path)
        }
        switch value {
        case .int, .double: checkNumber(value, rules, at: path)
        case .string(let text): checkString(text, rules, at: path)
        case .object(let object): checkObject(object, rules, at: path)
        case .array(let items): checkArray(items, rules, at: path)
        default: break
        }
        for node in rules.allOf { check(value, against: node, at: path) }
        if !rules.anyOf.isEmpty, !rules.anyOf.contains(where: { passes(value, $0, at: path) }) {
            fail(path, "matches none of the \(rules.anyOf.count) schemas of anyOf")
        }
        if !rules.oneOf.isEmpty {
            let matched = rules.oneOf.filter { passes(value, $0, at: path) }.count
            if matched != 1 { fail(path, "matches \(matched) of the \(rules.oneOf.count) schemas of oneOf (exactly one must)") }
        }
        if let not = rules.not, passes(value, not, at: path) {
            fail(path, "matches the schema of not")
        }
    }

    private mutating func checkNumber(_ value: JSONValue, _ rules: SchemaRules, at path: JSONPath) {
        let number: Double
        switch value {
        case .int(let integer): number = Double(integer)
        case .double(let real): number = real
        default: return
        }
        if let minimum = rules.minimum, number < minimum { fail(path, "must be at least \(Self.text(minimum))") }
        if let maximum = rules.maximum, number > maximum { fail(path, "must be at most \(Self.text(maximum))") }
        if let bound = rules.exclusiveMinimum, number <= bound { fail(path, "must be greater than \(Self.text(bound))") }
        if let bound = rules.exclusiveMaximum, number >= bound { fail(path, "must be less than \(Self.text(bound))") }
        if let divisor = rules.multipleOf, !Self.isMultiple(value, of: divisor) {
            fail(path, "must be a multiple of \(Self.text(divisor))")
        }
    }

    private mutating func checkString(_ text: String, _ rules: SchemaRules, at path: JSONPath) {
        if rules.minLength != nil || rules.maxLength != nil {
            // JSON Schema counts characters as code points.
            let length = text.unicodeScalars.count
            if let minimum = rules.minLength, length < minimum { fail(path, "must be at least \(minimum) characters long") }
            if let maximum = rules.maxLength, length > maximum { fail(path, "must be at most \(maximum) characters long") }
        }
        if let pattern = rules.pattern, !pattern.matches(text) { fail(path, "must match the pattern \(pattern.source)") }
        if let format = rules.format, !format.accepts(text) { fail(path, "must be \(format.spoken)") }
    }

    private mutating func checkObject(_ object: [String: JSONValue], _ rules: SchemaRules, at path: JSONPath) {
        for name in rules.required where object[name] == nil {
            fail(path.appending(key: name), "is required")
        }
        for (name, schema) in rules.properties {
            if let member = object[name] { check(member, against: schema, at: path.appending(key: name)) }
        }
        guard let additional = rules.additionalProperties else { return }
        let declared = Set(rules.properties.map(\.name))
        for name in object.keys.sorted() where !declared.contains(name) {
            if case .always(false) = additional {
                fail(path.appending(key: name), "is not a property of this schema (additionalProperties is false)")
            } else if let member = object[name] {
                check(member, against: additional, at: path.appending(key: name))
            }
        }
    }

    private mutating func checkArray(_ items: [JSONValue], _ rules: SchemaRules, at path: JSONPath) {
        if let minimum = rules.minItems, items.count < minimum { fail(path, "must have at least \(minimum) items") }
        if let maximum = rules.maxItems, items.count > maximum { fail(path, "must have at most \(maximum) items") }
        for (index, item) in items.enumerated() {
            if index < rules.prefixItems.count {
                check(item, against: rules.prefixItems[index], at: path.appending(index: index))
            } else if let schema = rules.items {
                check(item, against: schema, at: path.appending(index: index))
            }
        }
        if rules.uniqueItems {
            var seen: [JSONValue: Int] = [:]
            for (index, item) in items.enumerated() {
                if let first = seen.updateValue(index, forKey: Self.canonical(item)) {
                    fail(path.appending(index: index), "repeats item \(first) (uniqueItems)")
                    seen[Self.canonical(item)] = first
                }
            }
        }
    }

    // MARK: - Values

    static func isOfType(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("object", .object), ("array", .array), ("string", .string): true
        case ("number", .int), ("number", .double), ("integer", .int): true
        case ("integer", .double(let real)): real.isFinite && real == real.rounded()
        default: false
        }
    }

    static func typeName(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Whether `value` is an integer multiple of `divisor`: exactly for integers, within a
    /// relative error of 1e-9 for reals (0.3 is a multiple of 0.1).
    static func isMultiple(_ value: JSONValue, of divisor: Double) -> Bool {
        if case .int(let integer) = value, divisor == divisor.rounded(), abs(divisor) < 9e15 {
            return integer % Int64(divisor) == 0
        }
        let number: Double
        switch value {
        case .int(let integer): number = Double(integer)
        case .double(let real): number = real
        default: return true
        }
        let quotient = number / divisor
        guard quotient.isFinite else { return false }
        return abs(quotient - quotient.rounded()) <= 1e-9 * max(1, abs(quotient))
    }

    /// `value` with every integral real as an integer, so that `1` and `1.0` hash alike.
    static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .double(let real) where real == real.rounded() && abs(real) < 9e15: .int(Int64(real))
        case .array(let items): .array(items.map(canonical))
        case .object(let object): .object(object.mapValues(canonical))
        default: value
        }
    }

    static func text(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)"
    }

    static func list(_ values: [JSONValue]) -> String {
        let shown = values.prefix(10).map { JSONSerializer.string($0) }.joined(separator: ", ")
        return values.count > 10 ? shown + ", …" : shown
    }
}
