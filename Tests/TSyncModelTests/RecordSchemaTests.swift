import Testing
@testable import TSyncModel

/// Table schemas (docs/DESIGN.md §16): each supported keyword accepts what it should and names
/// the path and reason of what it refuses; unsupported keywords are refused when the schema is read.
@Suite struct RecordSchemaTests {
    private func schema(_ text: String) throws -> RecordSchema { try RecordSchema(try JSONParser.parse(text)) }

    private func violations(_ schemaText: String, _ record: String) throws -> [String] {
        let fields = try #require(try JSONParser.parse(record).objectValue)
        return try schema(schemaText).violations(of: fields).map(\.description)
    }

    @Test func typesRequiredAndAdditionalProperties() throws {
        let text = #"""
            {"type": "object", "required": ["name", "price"], "additionalProperties": false,
             "properties": {"name": {"type": "string"}, "price": {"type": "number"}, "qty": {"type": "integer"},
                            "tags": {"type": ["array", "null"]}}}
            """#
        #expect(try violations(text, #"{"name": "pen", "price": 1.5, "qty": 3, "tags": null}"#) == [])
        #expect(try violations(text, #"{"name": "pen", "price": 2, "qty": 3.0}"#) == [], "3.0 is an integer, 2 a number")
        #expect(
            try violations(text, #"{"name": 5, "qty": 1.5, "colour": "red", "tags": {}}"#) == [
                "$.price: is required",
                "$.name: expected string, got integer",
                "$.qty: expected integer, got number",
                "$.tags: expected array or null, got object",
                "$.colour: is not a property of this schema (additionalProperties is false)",
            ])
    }

    @Test func systemPropertiesAreNotTheSchemasBusiness() throws {
        let text = #"{"additionalProperties": false, "properties": {"a": {}}}"#
        #expect(try violations(text, #"{"id": "x", "version": "v", "updatedAt": "2026-01-01T00:00:00Z", "deleted": false, "a": 1}"#) == [])
    }

    @Test func numbers() throws {
        let text =
            #"{"properties": {"n": {"minimum": 1, "maximum": 10, "multipleOf": 0.5}, "x": {"exclusiveMinimum": 0, "exclusiveMaximum": 1}}}"#
        #expect(try violations(text, #"{"n": 9.5, "x": 0.5}"#) == [])
        #expect(
            try violations(text, #"{"n": 0.75, "x": 1}"#) == [
                "$.n: must be at least 1", "$.n: must be a multiple of 0.5", "$.x: must be less than 1",
            ])
        #expect(try violations(text, #"{"n": 11, "x": 0}"#) == ["$.n: must be at most 10", "$.x: must be greater than 0"])
        #expect(try violations(#"{"properties": {"p": {"multipleOf": 0.1}}}"#, #"{"p": 0.3}"#) == [])
        #expect(try violations(#"{"properties": {"p": {"multipleOf": 3}}}"#, #"{"p": 9007199254740993}"#) == [])
    }

    @Test func strings() throws {
        let text = #"{"properties": {"s": {"minLength": 2, "maxLength": 3, "pattern": "^[a-zé]+$"}}}"#
        #expect(try violations(text, #"{"s": "éé"}"#) == [], "two code points")
        #expect(try violations(text, #"{"s": "a"}"#) == ["$.s: must be at least 2 characters long"])
        #expect(
            try violations(text, #"{"s": "ABCD"}"#) == [
                "$.s: must be at most 3 characters long", "$.s: must match the pattern ^[a-zé]+$",
            ])
        #expect(try violations(#"{"properties": {"s": {"pattern": "b"}}}"#, #"{"s": "abc"}"#) == [], "a pattern matches anywhere")
    }

    @Test(arguments: [
        ("date-time", "2026-01-31T09:30:00Z", true), ("date-time", "2026-01-31T09:30:00.123+01:00", true),
        ("date-time", "2026-01-31 09:30:00Z", false), ("date-time", "2026-02-30T09:30:00Z", false),
        ("date-time", "2026-01-31T24:00:00Z", false),
        ("date", "2024-02-29", true), ("date", "2023-02-29", false), ("date", "2024-2-29", false),
        ("email", "a.b@example.com", true), ("email", "a@b", false), ("email", "a b@example.com", false),
        ("email", "@example.com", false),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", true), ("uuid", "123e4567e89b12d3a456426614174000", false),
        ("uuid", "123e4567-e89b-12d3-a456-42661417400g", false),
    ])
    func formats(format: String, value: String, valid: Bool) throws {
        let found = try violations(#"{"properties": {"f": {"format": "\#(format)"}}}"#, #"{"f": "\#(value)"}"#)
        #expect(found.isEmpty == valid, "\(found)")
    }

    @Test func enumAndConst() throws {
        let text = #"{"properties": {"e": {"enum": ["a", 1, null]}, "c": {"const": {"k": [1]}}}}"#
        #expect(try violations(text, #"{"e": 1.0, "c": {"k": [1.0]}}"#) == [], "1.0 is 1")
        #expect(
            try violations(text, #"{"e": "b", "c": {"k": [2]}}"#) == [#"$.c: must be {"k":[1]}"#, #"$.e: must be one of "a", 1, null"#])
    }

    @Test func arrays() throws {
        let text = #"""
            {"properties": {"a": {"prefixItems": [{"type": "string"}], "items": {"type": "integer"},
                                  "minItems": 2, "maxItems": 3, "uniqueItems": true}}}
            """#
        #expect(try violations(text, #"{"a": ["x", 1, 2]}"#) == [])
        #expect(try violations(text, #"{"a": [1]}"#) == ["$.a: must have at least 2 items", "$.a[0]: expected string, got integer"])
        #expect(
            try violations(text, #"{"a": ["x", 1, 1.0, "y"]}"#) == [
                "$.a: must have at most 3 items", "$.a[3]: expected integer, got string", "$.a[2]: repeats item 1 (uniqueItems)",
            ])
    }

    @Test func nestedObjectsReferencesAndOddNames() throws {
        let text = #"""
            {"$defs": {"money": {"type": "object", "required": ["amount"], "properties": {"amount": {"minimum": 0}}}},
             "properties": {"price": {"$ref": "#/$defs/money"}, "lines": {"items": {"$ref": "#/$defs/money"}},
                            "odd key": {"type": "string"}}}
            """#
        #expect(try violations(text, #"{"price": {"amount": 1}, "lines": [{"amount": 2}]}"#) == [])
        #expect(
            try violations(text, #"{"price": {"amount": -1}, "lines": [{"amount": 1}, {}], "odd key": 1}"#) == [
                "$.lines[1].amount: is required", "$['odd key']: expected string, got integer", "$.price.amount: must be at least 0",
            ])
    }

    @Test func combinators() throws {
        let text = #"""
            {"properties": {
              "all": {"allOf": [{"minimum": 1}, {"maximum": 5}]},
              "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
              "one": {"oneOf": [{"minimum": 0}, {"maximum": 10}]},
              "not": {"not": {"type": "null"}}}}
            """#
        #expect(try violations(text, #"{"all": 3, "any": "x", "one": 20, "not": 1}"#) == [])
        #expect(
            try violations(text, #"{"all": 6, "any": 1.5, "one": 5, "not": null}"#) == [
                "$.all: must be at most 5",
                "$.any: matches none of the 2 schemas of anyOf",
                "$.not: matches the schema of not",
                "$.one: matches 2 of the 2 schemas of oneOf (exactly one must)",
            ])
    }

    @Test func aSchemaThatRefersToItselfEnds() throws {
        let looping = try schema(##"{"$ref": "#"}"##)
        #expect(looping.violations(of: ["a": 1]).first?.reason.contains("deeper than") == true)
        let tree = try schema(##"{"properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}}"##)
        #expect(
            tree.violations(of: ["child": ["child": ["n": "x"]]]).map(\.description) == ["$.child.child.n: expected integer, got string"])
    }

    @Test(arguments: [
        (
            #"{"properties": {"a": {"dependentRequired": {}}}}"#,
            #"schema at #/properties/a/dependentRequired: the keyword "dependentRequired" is not supported"#
        ),
        (##"{"$ref": "other.json#/x"}"##, "schema at #/$ref: $ref names a place in this schema"),
        (##"{"$ref": "#/$defs/missing"}"##, "schema at #/$defs/missing: $ref names nothing in this schema"),
        (#"{"type": "float"}"#, "schema at #/type: type is one of"),
        (#"{"minimum": "1"}"#, "schema at #/minimum: a number"),
        (#"{"format": "hostname"}"#, "schema at #/format: format is one of date-time, date, email, uuid"),
        (#"{"pattern": "(("}"#, "schema at #/pattern: pattern \"((\" is not a regular expression"),
        (#"[1]"#, "schema at #: a schema is an object or a boolean, not an array"),
    ])
    func unsupportedSchemasAreRefusedNamingWhere(text: String, message: String) throws {
        do {
            _ = try schema(text)
            Issue.record("accepted \(text)")
        } catch let error as TSyncError {
            #expect(error.kind == .invalidConfiguration)
            #expect(error.message.hasPrefix(message), "\(error.message)")
        }
    }

    /// A record failing in many places names the first ones and says that more fail: what a
    /// refusal costs, and its answer's size, stay bounded whatever the record.
    @Test func manyFailuresAreNamedUpToTheBound() throws {
        let schema = try schema(
            #"{"properties": {"a": {"items": {"type": "string"}}, "b": {"anyOf": [{"items": {"type": "string"}}, {"items": {"type": "null"}}]}}}"#
        )
        let found = schema.violations(of: [
            "a": .array(Array(repeating: 1, count: 10_000)), "b": .array(Array(repeating: 1, count: 10_000)),
        ])
        #expect(found.count == RecordSchema.maximumViolations + 1)
        #expect(found.dropLast().allSatisfy { $0.reason == "expected string, got integer" })
        #expect(found.last == SchemaViolation(path: "$", reason: "fails in more places: only the first 100 are named"))
        #expect(schema.violations(of: ["a": .array(Array(repeating: 1, count: 100))]).count == 100, "exactly the bound: no more to say")
    }

    @Test func annotationsAreAllowedAndChangeNothing() throws {
        let text =
            #"{"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "t", "description": "d", "properties": {"a": {"default": 1, "examples": [1], "deprecated": true}}}"#
        #expect(try violations(text, #"{"a": "anything"}"#) == [])
    }
}
