import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization
import TSyncModel

/// One log line per request, and the headers that tie an answer to its request: the request's id
/// (`X-Request-Id`, sent back with every answer) and the client's token (`Echo`).
///
/// The line's message is the human one (`127.0.0.1 GET /tables/todo 200 1.2 ms`); its metadata
/// carries the fields a JSON log shows (`RequestLogLine`). Headers are never logged, and query
/// values of parameters that could carry a secret are redacted (`QueryRedaction`), so no token or
/// password reaches the log in any format.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    /// Paths and queries longer than this are cut (the head of a request is bounded anyway).
    static let maximumTargetLength = 2048

    /// Counts requests, durations and sizes when `--metrics` is on.
    let metrics: ServerMetrics?
    /// Requests under way, for the shutdown line ("waiting for N requests").
    let inFlight: InFlightRequests
    /// The last target logged, redacted.
    let targets = RedactedTargets(limit: RequestLogMiddleware.maximumTargetLength)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let requestID = begin(request, context)
        do {
            return finish(try await next(request, context), request, context, start: start, requestID: requestID)
        } catch {
            end(request, context, start: start, requestID: requestID, status: nil, bytes: nil)
            throw error
        }
    }

    // The work before and after the request, in functions that are not async: their locals stay
    // out of the async frame that every request in flight keeps (a held read for as long as it waits).

    @inline(never)
    private func begin(_ request: Request, _ context: Context) -> String {
        inFlight.begin()
        let requestID = RequestID.choose(presented: request.headers.value(of: .requestID), trusted: context.fromTrustedProxy)
        context.requestUser.requestID = requestID
        return requestID
    }

    @inline(never)
    private func finish(_ response: Response, _ request: Request, _ context: Context, start: ContinuousClock.Instant, requestID: String)
        -> Response
    {
        var response = response
        Self.addFields(to: &response.headers, request, requestID: requestID)
        end(request, context, start: start, requestID: requestID, status: response.status.code, bytes: response.body.contentLength)
        return response
    }

    /// The fields every answer gets here: also those of a held read's answer written outside its
    /// request (`LiveDelivery`), which must be the same.
    static func addFields(to headers: inout HTTPFields, _ request: Request, requestID: String) {
        headers.set(requestID, for: .requestID)
        if let echo = Echo.value(request.headers.value(of: .echo)) { headers.set(echo, for: .echo) }
        // An answer is the state now, for one user: no cache is to keep it (`Echo` catches one that does).
        headers.set("no-store", for: .cacheControl)
    }

    @inline(never)
    private func end(_ request: Request, _ context: Context, start: ContinuousClock.Instant, requestID: String, status: Int?, bytes: Int?) {
        inFlight.end()
        let seconds = Self.seconds(since: start)
        let route = Self.route(context.coreContext.endpointPath.value)
        metrics?.recordRequest(method: request.method.rawValue, route: route, status: status, seconds: seconds, bytes: bytes)
        log(request, context: context, route: route, status: status, bytes: bytes, seconds: seconds, requestID: requestID)
    }

    private func log(
        _ request: Request, context: Context, route: String, status: Int?, bytes: Int?, seconds: Double, requestID: String
    ) {
        let line = RequestLogLine(
            method: request.method.rawValue,
            target: targets.target(path: request.uri.path, query: request.uri.query),
            route: route, status: status, milliseconds: (seconds * 1_000_000).rounded() / 1000, bytes: bytes,
            user: context.requestUser.withLock { $0 }.map(LogText.bounded), client: context.clientAddress ?? "-", requestID: requestID)
        context.logger.info("\(line.message)", metadata: [LogFields.request: .stringConvertible(line)])
    }

    /// The route template of a matched request (`/tables/{table}`); every other path is one label,
    /// so a client requesting many paths cannot grow what `/metrics` keeps.
    static func route(_ endpoint: String?) -> String {
        guard let endpoint, endpoint != "NotFound" else { return "unmatched" }
        return endpoint
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - start).fractionalSeconds
    }
}

/// How the metadata of the server's log lines is to be written as JSON fields.
public enum LogFields {
    /// Present on lines whose message already says what their fields say (request lines, failed
    /// logins): the text log shows the message alone.
    public static let inMessage = "tsync.fields"
    /// A request line's fields, as one `RequestLogLine` (`.stringConvertible`): a handler writes
    /// them as JSON only when its format asks for them, and the text log shows the message alone.
    public static let request = "tsync.request"
}

/// One request's log line. Its fields stay values until a log handler writes them, so the text log
/// (the message alone) builds no JSON fields and the JSON log no dictionary to merge and sort: a
/// line is written on every request, and its cost is part of every request's.
public struct RequestLogLine: Sendable, CustomStringConvertible {
    let method: String
    /// Redacted and cut (`QueryRedaction`).
    let target: String
    /// The route template the request matched (`/tables/{table}/{id}`, or `unmatched`), as
    /// `/metrics` labels it: a log can be grouped by route without parsing paths.
    let route: String
    /// nil only for errors `ErrorMiddleware` did not answer (it answers all).
    let status: Int?
    let milliseconds: Double
    let bytes: Int?
    /// Bounded and escaped (`LogText.bounded`).
    let user: String?
    let client: String
    let requestID: String

    /// `127.0.0.1 GET /tables/todo 200 1.2 ms user=alice id=…`
    /// Made in one string of the size it needs: interpolated, a line with a watcher's query (about
    /// 250 bytes) grew its storage three times, on every request.
    public var message: String {
        let target = LogText.escaped(target)
        let user = user ?? "-"
        var line = ""
        line.reserveCapacity(client.utf8.count + method.utf8.count + target.utf8.count + user.utf8.count + requestID.utf8.count + 40)
        line += client
        line += " "
        line += method
        line += " "
        line += target
        line += " "
        line += statusText
        line += " "
        line += milliseconds.description
        line += " ms user="
        line += user
        line += " id="
        line += requestID
        return line
    }

    public var description: String { message }

    private var statusText: String { status.map(String.init) ?? "failed" }

    /// The fields as JSON members in key order, each after a comma (`,"bytes":12,"client":…`):
    /// numbers as numbers, a missing size or user as null.
    public func writeJSONFields(to out: inout String) {
        out += bytes.map { ",\"bytes\":\($0)" } ?? ",\"bytes\":null"
        out += ",\"client\":"
        JSONSerializer.writeString(client, to: &out)
        out += ",\"durationMs\":\(milliseconds),\"method\":"
        JSONSerializer.writeString(method, to: &out)
        out += ",\"path\":"
        JSONSerializer.writeString(target, to: &out)
        out += ",\"requestId\":"
        JSONSerializer.writeString(requestID, to: &out)
        out += ",\"route\":"
        JSONSerializer.writeString(route, to: &out)
        out += status.map { ",\"status\":\($0)" } ?? ",\"status\":\"failed\""
        out += ",\"user\":"
        if let user { JSONSerializer.writeString(user, to: &out) } else { out += "null" }
    }
}

/// `X-Request-Id`: the one a trusted proxy sent (when it is short and plain), or a new one.
enum RequestID {
    static let maximumLength = 128

    static func choose(presented: String?, trusted: Bool) -> String {
        if trusted, let presented, (1...maximumLength).contains(presented.utf8.count),
            presented.utf8.allSatisfy({ isAllowed($0) })
        {
            return presented
        }
        return make()
    }

    /// 16 hex digits, to find one request in a log: a count from a random start, scrambled by
    /// SplitMix64's finaliser (one to one), so a server repeats none in 2^64 and its ids do not
    /// look like a count. Not a secret (every answer shows its own). The system's generator, a
    /// system call for each, was half a percent of the server's CPU following a table.
    static func make() -> String {
        var value = next.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        value ^= value >> 31
        return String(unsafeUninitializedCapacity: 16) { digits in
            for index in 0..<16 {
                let nibble = UInt8(truncatingIfNeeded: value >> (60 - 4 * index)) & 0xF
                digits[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            }
            return 16
        }
    }

    /// Where `make`'s count stands (it wraps).
    private static let next = Atomic(UInt64.random(in: .min ... .max))

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "+"),
            UInt8(ascii: "="):
            true
        default: false
        }
    }
}

/// `X-TSync-Echo`: the token a client sent, sent back with the answer, so that the client can tell
/// its answer from another request's that a cache or proxy handed it (docs/DESIGN.md §4, "Echo").
/// Only a short plain token is echoed: a client cannot make the server send a header of its making.
enum Echo {
    static let maximumLength = 64

    static func value(_ presented: String?) -> String? {
        guard let presented, (1...maximumLength).contains(presented.utf8.count) else { return nil }
        let plain = presented.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
        return plain ? presented : nil
    }
}

extension HTTPField.Name {
    // Valid token literals, as in HeaderNames.swift.
    static let requestID = HTTPField.Name("X-Request-Id")!
    static let echo = HTTPField.Name("X-TSync-Echo")!
}

/// The last request target the log redacted, and its redaction: the held reads a commit wakes
/// asked one question with one text, so their thousands of lines at once redact it once, not
/// once each (the redaction was a twentieth of such an answer's CPU).
final class RedactedTargets: Sendable {
    private struct Entry {
        let path: String
        let query: String?
        let target: String
    }

    private let limit: Int
    private let last = Mutex<Entry?>(nil)

    init(limit: Int) {
        self.limit = limit
    }

    /// `QueryRedaction.target(path:query:limit:)`, redacted again only when the text differs
    /// from the last.
    func target(path: String, query: String?) -> String {
        let hit = last.withLock { last -> String? in
            guard let last, last.path == path, last.query == query else { return nil }
            return last.target
        }
        if let hit { return hit }
        let target = QueryRedaction.target(path: path, query: query, limit: limit)
        last.withLock { $0 = Entry(path: path, query: query, target: target) }
        return target
    }
}

/// The request target as the log shows it: the query kept, but the value of any parameter whose
/// name suggests a secret replaced by `REDACTED` (a token or password put in a URL by a client or
/// a proxy must not reach the log).
enum QueryRedaction {
    static let secretWords = ["token", "auth", "pass", "secret", "key", "signature", "sig", "code", "credential", "session"]

    static func target(path: String, query: String?, limit: Int) -> String {
        var target = path
        if let query, !query.isEmpty { target += "?" + redacted(query) }
        target = redactingTokens(target)
        // Characters are counted only when the bytes could be too many (a count walks the text).
        if target.utf8.count > limit, target.count > limit { target = String(target.prefix(limit)) + "…" }
        return target
    }

    /// The length of a tsync token (`Authenticator.newToken`: 256 bits in unpadded base64url).
    static let tokenLength = 43

    /// `text` with every run shaped like a tsync token replaced by `REDACTED`: a token sent by
    /// mistake as a table name, an id or a `$filter` value, wherever it stands. A run is at least
    /// `tokenLength` characters of base64url (a `%XX` that decodes to one counts as one) with
    /// both upper- and lower-case letters, which a random token lacks about once in five billion:
    /// hex digests and long lower-case ids stay readable.
    static func redactingTokens(_ text: String) -> String {
        // A token-shaped run is at least `tokenLength` bytes in a row of base64url or `%XX`: a
        // text without such a row (every request's, nearly) is returned unread and uncopied.
        var row = 0
        var longest = 0
        for byte in text.utf8 {
            row = isTokenOrEscapeByte(byte) ? row + 1 : 0
            longest = max(longest, row)
        }
        guard longest >= tokenLength else { return text }
        return redactingTokensInGeneral(text)
    }

    /// Whether `byte` may be part of a token-shaped run: a base64url byte, or one of a `%XX`.
    private static func isTokenOrEscapeByte(_ byte: UInt8) -> Bool {
        isTokenByte(byte) || byte == UInt8(ascii: "%")
    }

    /// A base64url byte.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// `redactingTokens` reading every run.
    static func redactingTokensInGeneral(_ text: String) -> String {
        let bytes = Array(text.utf8)
        /// The token character at `index` and the bytes it takes, or nil.
        func character(at index: Int) -> (UInt8, Int)? {
            if isTokenByte(bytes[index]) { return (bytes[index], 1) }
            guard bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = QueryString.hexValue(bytes[index + 1]),
                let low = QueryString.hexValue(bytes[index + 2]), isTokenByte(high << 4 | low)
            else { return nil }
            return (high << 4 | low, 3)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var replaced = false
        var index = 0
        while index < bytes.count {
            var end = index
            var length = 0
            var upper = false
            var lower = false
            while end < bytes.count, let (character, size) = character(at: end) {
                upper = upper || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(character)
                lower = lower || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(character)
                length += 1
                end += size
            }
            if end == index {
                out.append(bytes[index])
                index += 1
            } else {
                if length >= tokenLength, upper, lower {
                    out += Array("REDACTED".utf8)
                    replaced = true
                } else {
                    out += bytes[index..<end]
                }
                index = end
            }
        }
        return replaced ? String(decoding: out, as: UTF8.self) : text
    }

    /// The query with the values of secret-named parameters replaced. Every request's log line
    /// runs this (a woken held read's among them, thousands at once): a query with no such name
    /// is returned as it is, found so without Foundation's string search (`isSecret`).
    static func redacted(_ query: String) -> String {
        if query.utf8.allSatisfy({ $0 < 0x80 }), !hasSecretName(query) { return query }
        return query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "="), isSecret(pair[..<equals]) else { return String(pair) }
            return pair[..<equals] + "=REDACTED"
        }.joined(separator: "&")
    }

    /// Whether any `name=value` pair of an ASCII query has a secret name: its bytes are its
    /// characters, so pairs and names are found by byte (`redacted` splits any other by character).
    private static func hasSecretName(_ query: String) -> Bool {
        let bytes = query.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            if let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "=")), isSecret(Substring(bytes[start..<equals])) { return true }
            start = end == bytes.endIndex ? end : bytes.index(after: end)
        }
        return false
    }

    /// The secret words as bytes, for `isSecret`'s plain path.
    private static let secretWordBytes = secretWords.map { Array($0.utf8) }

    /// Whether a parameter's name (as sent, percent-encoded) contains a secret word, in any case.
    /// A name of ASCII (sent so or as `%XX`, as a pull's `%24filter`) is compared byte by byte,
    /// lower-cased as ASCII; any other name goes the general way (`isSecretDecoded`), which
    /// decodes it and lower-cases it as Unicode does (a Kelvin sign lower-cases to `k`).
    static func isSecret(_ name: Substring) -> Bool {
        var lower: [UInt8] = []
        lower.reserveCapacity(name.utf8.count)
        var bytes = name.utf8.makeIterator()
        while var byte = bytes.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = bytes.next().flatMap(QueryString.hexValue), let low = bytes.next().flatMap(QueryString.hexValue) else {
                    return isSecretDecoded(name)
                }
                byte = high << 4 | low
            }
            guard byte < 0x80 else { return isSecretDecoded(name) }
            lower.append((UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte)
        }
        return secretWordBytes.contains { word in
            guard lower.count >= word.count else { return false }
            return (0...(lower.count - word.count)).contains { start in lower[start..<start + word.count].elementsEqual(word) }
        }
    }

    /// `isSecret` the general way: the name decoded, lower-cased, searched.
    static func isSecretDecoded(_ name: Substring) -> Bool {
        let name = (name.removingPercentEncoding ?? String(name)).lowercased()
        return secretWords.contains(where: { name.contains($0) })
    }
}

/// Text from clients as a log line may show it: bounded, and with control characters escaped so a
/// name or path cannot forge a line of its own.
public enum LogText {
    public static let maximumNameLength = 64

    /// An account name a client gave (a failed login's), cut to `maximumNameLength` and escaped.
    public static func bounded(_ text: String) -> String {
        let cut = text.count > maximumNameLength ? String(text.prefix(maximumNameLength)) + "…" : text
        return escaped(cut)
    }

    public static func escaped(_ text: String) -> String {
        // Printable ASCII (a request's path and query, nearly always) is found so by byte.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        return escapedInGeneral(text)
    }

    /// `escaped` reading every scalar.
    static func escapedInGeneral(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) || scalar.value == 0x2028
            || scalar.value == 0x2029
    }
}

/// Requests under way: the shutdown line says how many it waits for. An atomic count, not a
/// lock: every request moves it twice, thousands at once when a commit wakes held reads.
public final class InFlightRequests: Sendable {
    private let count = Atomic(0)
    public init() {}
    func begin() { count.add(1, ordering: .relaxed) }
    func end() { count.subtract(1, ordering: .relaxed) }
    public var current: Int { count.load(ordering: .relaxed) }
}
