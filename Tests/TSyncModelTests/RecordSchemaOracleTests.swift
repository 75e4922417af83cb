import Foundation
import Testing
@testable import TSyncModel

/// `RecordSchema`'s verdicts against an evaluator nobody here wrote: Python's `jsonschema`
/// (Draft 2020-12), on schemas and records generated from a seed. Every pair must get the same
/// verdict, valid or not. `scripts/test.sh` installs the package (it comes with schemathesis).
@Suite struct RecordSchemaOracleTests {
    static let python: String? = {
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = ["python3", "-c", "import jsonschema"]
        check.standardError = FileHandle.nullDevice
        check.standardOutput = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return nil }
        check.waitUntilExit()
        return check.terminationStatus == 0 ? "python3" : nil
    }()

    @Test(.enabled(if: python != nil, "Python's jsonschema is not installed (scripts/test.sh installs it)"))
    func verdictsAgreeWithPythonsJSONSchema() throws {
        var generator = CaseGenerator(seed: 20261128)
        var cases: [(schema: JSONValue, record: [String: JSONValue])] = []
        for _ in 0..<400 {
            let schema = generator.schema(depth: 0, root: true)
            for _ in 0..<3 { cases.append((schema, generator.record(for: schema))) }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("schema-oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("cases.ndjson")
        let lines = cases.map { JSONSerializer.string(["schema": $0.schema, "record": .object($0.record)]) }
        try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
        let script = """
            import json, sys
            from jsonschema import Draft202012Validator
            for line in open(sys.argv[1]):
                case = json.loads(line)
                print("1" if Draft202012Validator(case["schema"]).is_valid(case["record"]) else "0")
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, input.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let verdicts = String(decoding: data, as: UTF8.self).split(separator: "\n").map { $0 == "1" }
        try #require(verdicts.count == cases.count)
        var valid = 0
        for (index, (schema, record)) in cases.enumerated() {
            let ours = try RecordSchema(schema).violations(of: record)
            if verdicts[index] { valid += 1 }
            #expect(
                ours.isEmpty == verdicts[index],
                "case \(index): schema \(JSONSerializer.string(schema)) record \(JSONSerializer.string(.object(record))): tsync \(ours), jsonschema \(verdicts[index] ? "valid" : "invalid")"
            )
        }
        // Both verdicts are common, or the comparison proves little. (The cases are the same on
        // every run, 243 of 1,200 valid: the generator walks no dictionary in its own order.)
        #expect(valid > cases.count / 10 && valid < cases.count * 9 / 10, "\(valid) of \(cases.count) valid")
    }
}

/// Schemas over the keywords whose meaning both evaluators share exactly (no `format`, whose
/// assertion Python's needs extra packages for; `multipleOf` on integers, where floating point
/// cannot make them differ), and records near them: built from the schema, then mutated.
struct CaseGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    private mutating func step() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }

    private mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(step() % UInt64(range.count)) }
    private mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
    private mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    static let names = ["a", "b", "c", "n", "tag"]

    mutating func schema(depth: Int, root: Bool = false) -> JSONValue {
        if !root, depth > 0, chance(10) { return .bool(chance(70)) }
        var object: [String: JSONValue] = [:]
        let kind =
            root
            ? "object"
            : pick(
                depth >= 2
                    ? ["integer", "number", "string", "boolean", "null"]
                    : ["integer", "number", "string", "boolean", "null", "object", "array", "any"])
        switch kind {
        case "integer", "number":
            object["type"] = .string(kind)
            if chance(50) { object["minimum"] = .int(Int64(int(-5...5))) }
            if chance(40) { object["maximum"] = .int(Int64(int(0...10))) }
            if chance(25) { object["exclusiveMinimum"] = .int(Int64(int(-5...2))) }
            if chance(25) { object["exclusiveMaximum"] = .double(Double(int(3...12)) + 0.5) }
            if kind == "integer", chance(30) { object["multipleOf"] = .int(Int64(int(2...4))) }
        case "string":
            object["type"] = "string"
            if chance(40) { object["minLength"] = .int(Int64(int(0...3))) }
            if chance(40) { object["maxLength"] = .int(Int64(int(1...6))) }
            if chance(30) { object["pattern"] = .string(pick(["^[a-c]+$", "x", "^[0-9]{2}", "é$"])) }
            if chance(20) { object["enum"] = ["ab", "x", "é", 1] }
        case "boolean": object["type"] = "boolean"
        case "null": object["type"] = chance(50) ? "null" : ["null", "string"]
        case "object", "any":
            if kind == "object" || root { object["type"] = "object" }
            var properties: [String: JSONValue] = [:]
            for name in Self.names where chance(50) { properties[name] = schema(depth: depth + 1) }
            if !properties.isEmpty { object["properties"] = .object(properties) }
            let required = Self.names.filter { properties[$0] != nil && chance(40) }
            if !required.isEmpty { object["required"] = .array(required.map { .string($0) }) }
            if chance(30) { object["additionalProperties"] = chance(60) ? false : schema(depth: depth + 2) }
            if kind == "any", chance(50) { object.removeValue(forKey: "type") }
        default:  // array
            object["type"] = "array"
            if chance(60) { object["items"] = schema(depth: depth + 1) }
            if chance(30) { object["prefixItems"] = [schema(depth: depth + 1)] }
            if chance(30) { object["minItems"] = .int(Int64(int(0...2))) }
            if chance(30) { object["maxItems"] = .int(Int64(int(1...3))) }
            if chance(30) { object["uniqueItems"] = true }
        }
        if chance(8) { object["const"] = pick([1, "x", .null, ["k": 1]]) }
        if depth < 2, chance(12) {
            let combinator = pick(["allOf", "anyOf", "oneOf"])
            object[combinator] = [schema(depth: depth + 2), schema(depth: depth + 2)]
        }
        if depth < 2, chance(6) { object["not"] = schema(depth: depth + 2) }
        return .object(object)
    }

    /// A record for `schema`: a value that tries to fit it, then some of its fields changed.
    mutating func record(for schema: JSONValue) -> [String: JSONValue] {
        guard case .object(let object) = value(for: schema, depth: 0) else { return [:] }
        var record = object
        if chance(12) { record[pick(Self.names)] = anyValue(depth: 1) }
        if chance(6), let name = record.keys.sorted().first { record.removeValue(forKey: name) }
        return record
    }

    private mutating func value(for schema: JSONValue, depth: Int) -> JSONValue {
        guard case .object(let object) = schema, depth < 4 else { return anyValue(depth: depth) }
        if chance(4) { return anyValue(depth: depth) }
        if let values = object["enum"], case .array(let items) = values, chance(60) { return pick(items) }
        let type: String
        switch object["type"] {
        case .string(let name)?: type = name
        case .array(let names)?: type = names.first?.stringValue ?? "null"
        default: type = object["properties"] != nil ? "object" : pick(["integer", "string", "object"])
        }
        switch type {
        case "integer": return .int(Int64(int(-6...12)))
        case "number": return chance(50) ? .double(Double(int(-60...120)) / 10) : .int(Int64(int(-6...12)))
        case "string": return .string(pick(["", "a", "ab", "abc", "x", "12x", "é", "café", "ABCDEFG"]))
        case "boolean": return .bool(chance(50))
        case "null": return .null
        case "array":
            return .array(
                (0..<int(0...4)).map { _ in object["items"].map { value(for: $0, depth: depth + 1) } ?? anyValue(depth: depth + 1) })
        default:
            var record: [String: JSONValue] = [:]
            if case .object(let properties)? = object["properties"] {
                for (name, property) in properties.sorted(by: { $0.key < $1.key }) where chance(90) {
                    record[name] = value(for: property, depth: depth + 1)
                }
            }
            if chance(6) { record["extra"] = anyValue(depth: depth + 1) }
            return .object(record)
        }
    }

    private mutating func anyValue(depth: Int) -> JSONValue {
        switch int(0...(depth > 2 ? 5 : 7)) {
        case 0: return .null
        case 1: return .bool(chance(50))
        case 2: return .int(Int64(int(-3...9)))
        case 3: return .double(Double(int(-30...90)) / 10)
        case 4: return .string(pick(["", "a", "x", "é", "abc"]))
        case 5: return .int(1)
        case 6: return .array((0..<int(0...3)).map { _ in anyValue(depth: depth + 1) })
        default: return .object(["k": anyValue(depth: depth + 1)])
        }
    }
}
