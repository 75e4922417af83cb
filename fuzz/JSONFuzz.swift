// libFuzzer target: the JSON parser and serializer (scripts/fuzz.sh builds and runs it).
// Property: whatever parses, serializes to text that parses back to the very same value.
import TSyncModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let value = try? JSONParser.parse(bytes: bytes) {
        guard let again = try? JSONParser.parse(bytes: JSONSerializer.bytes(value)) else {
            fatalError("the serializer wrote text the parser refuses")
        }
        guard again == value else { fatalError("a round trip changed the value") }
    }
    _ = try? JSONParser.parseStream(bytes: bytes)
    return 0
}
