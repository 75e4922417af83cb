// libFuzzer target: the server's query-string and path-segment decoding
// (Sources/TSyncServer/HTTP/QueryString.swift, compiled here with a stand-in for APIError).
// Property: no input crashes; decoding what `encode` wrote gives the text back.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQueryString(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let query = try? QueryString(text) {
        _ = try? query.single("$filter")
        _ = query.replacing("$skip", with: "10")
    }
    _ = try? QueryString.decodePathSegment(Substring(text))
    guard let decoded = try? QueryString.decode(Substring(QueryString.encode(text))), decoded == text else {
        fatalError("decode(encode(text)) is not text")
    }
    return 0
}
