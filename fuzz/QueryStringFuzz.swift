import TSyncModel
import TSyncQuery

/// libFuzzer target for the server's query-string decoding (Sources/TSyncServer/HTTP/QueryString.swift,
/// compiled into this binary with a stand-in for the HTTP error type) and what the server does next
/// with `$filter`: the parser, whose depth guard is the only one (run by scripts/fuzz.sh).
///
/// Properties, beyond "never crashes": `decode(encode(x)) == x` byte for byte; the query that
/// `replacing` writes (the `Link` header's) decodes to the same parameters with the one replaced,
/// and holds no raw `,` `;` or space; a filter parses or fails cleanly.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQueryString(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? QueryString.decodePathSegment(Substring(raw))
    guard let parameters = try? QueryString(raw) else { return 0 }
    for (name, value) in parameters.items {
        for text in [name, value] {
            guard let back = try? QueryString.decode(Substring(QueryString.encode(text))), back.utf8.elementsEqual(text.utf8) else {
                fatalError("decode(encode(x)) != x for \(Array(text.utf8))")
            }
        }
    }
    let link = parameters.replacing("$skip", with: "50")
    guard !link.contains(where: { $0 == "," || $0 == ";" || $0 == " " }) else { fatalError("raw separator in \(link)") }
    guard let reread = try? QueryString(link) else { fatalError("the Link query does not decode: \(link)") }
    let expected = parameters.items.filter { $0.name != "$skip" } + [("$skip", "50")]
    guard reread.items.count == expected.count,
        zip(reread.items, expected).allSatisfy({ $0.name.utf8.elementsEqual($1.0.utf8) && $0.value.utf8.elementsEqual($1.1.utf8) })
    else { fatalError("the Link query decodes to other parameters: \(raw) -> \(link)") }
    if let filter = try? parameters.single("$filter") {
        _ = try? ODataParser.parseFilter(filter)
    }
    return 0
}
