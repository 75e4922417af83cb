import TSyncModel

/// libFuzzer target for `JSONParser` and `JSONSerializer` (run by scripts/fuzz.sh).
///
/// Properties, beyond "never crashes": a value that parses serializes (compact and pretty) to
/// text that parses back to the same value, strings compared by their bytes (Swift's `==` would
/// call "é" and "e\u{301}" equal); and serializing that value again gives the same bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? JSONParser.parseStream(bytes: bytes)
    guard let value = try? JSONParser.parse(bytes: bytes) else { return 0 }
    for pretty in [false, true] {
        let text = JSONSerializer.string(value, pretty: pretty)
        let again: JSONValue
        do {
            again = try JSONParser.parse(text)
        } catch {
            fatalError("serialized JSON does not parse back: \(error)\n\(text)")
        }
        guard sameBytes(value, again) else {
            fatalError("round trip changed the value:\n\(text)\n\(JSONSerializer.string(again))")
        }
        guard JSONSerializer.string(again, pretty: pretty) == text else {
            fatalError("serializing the parsed text again gave different bytes:\n\(text)")
        }
    }
    return 0
}

/// Equality with strings and keys compared as UTF-8 bytes and numbers by kind and bits.
func sameBytes(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.int(let x), .int(let y)): return x == y
    case (.double(let x), .double(let y)): return x == y
    case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameBytes($0, $1) }
    case (.object(let x), .object(let y)):
        guard x.count == y.count else { return false }
        let xs = x.keys.sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }
        let ys = y.keys.sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }
        for (kx, ky) in zip(xs, ys) {
            guard kx.utf8.elementsEqual(ky.utf8), let vx = x[kx], let vy = y[ky], sameBytes(vx, vy) else { return false }
        }
        return true
    default: return false
    }
}
