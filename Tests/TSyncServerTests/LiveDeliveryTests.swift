import Foundation
import HTTPTypes
import NIOCore
import Testing
@testable import TSyncServer

/// What a held read's answer written outside its request (`LiveDelivery`) is made of, against the
/// general way; its bytes on the wire against the request's own answer are compared end to end
/// (`LiveFanOutTests.aHeldReadsAnswerWrittenByItsCommitIsTheAnswerItsRequestWrites`).
@Suite struct LiveDeliveryTests {
    /// `Date` as Foundation formats RFC 9110's IMF-fixdate, the general way.
    static func general(_ seconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    @Test func theDateIsWrittenAsInGeneral() {
        // Every day of four years around a leap day and a century, at varied times, and the edges.
        var seconds = [0, 59, 86_399, 86_400, 951_782_400, 951_868_799, 4_102_444_800, 1_798_761_599, Int(Date().timeIntervalSince1970)]
        for day in stride(from: 10_900, to: 12_400, by: 1) { seconds.append(day * 86_400 + (day * 7_919) % 86_400) }
        for second in seconds { #expect(HTTPDate.text(secondsSince1970: second) == Self.general(second), "\(second)") }
    }

    /// The head as NIO's encoder writes it: the status line, every field in its order and with
    /// its name as given, `connection: close` last when the connection closes after it.
    @Test func theHeadIsWrittenFieldByFieldInOrder() {
        var fields: HTTPFields = [:]
        fields[HTTPField.Name("Preference-Applied")!] = "wait=25"
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.contentLength] = "2"
        let head = HTTPResponse(status: .ok, headerFields: fields)
        let open = LiveDelivery.bytes(head, closing: false, allocator: ByteBufferAllocator())
        #expect(
            String(buffer: open)
                == "HTTP/1.1 200 OK\r\nPreference-Applied: wait=25\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 2\r\n\r\n"
        )
        let closing = LiveDelivery.bytes(head, closing: true, allocator: ByteBufferAllocator())
        #expect(String(buffer: closing).hasSuffix("Content-Length: 2\r\nconnection: close\r\n\r\n"))
    }
}
