import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import TSyncModel

/// The lines of a streamed answer to a held read (docs/DESIGN.md §8.1): `tsync serve` answers
/// `Prefer: wait=N, stream` with one chunked answer whose lines are pages, written as commits
/// bring records. Each line is read when the pull asks for its next page (`next`), so a pull
/// that is slower than the server holds the answer back, and nothing is read ahead of it.
///
/// The answer is the pull's, checked as its pages are (`Puller`); only its head is shared by
/// its lines: the server's `Date`, tombstone horizon and schema tag as they were when it began.
package actor PageLines {
    private var iterator: HTTPClientResponse.Body.AsyncIterator?
    /// Bytes read past the last whole line.
    private var buffer: [UInt8] = []
    private var received = 0
    private let deadline: NIODeadline
    /// Told once, when the answer has ended (or failed, or was dropped): the bytes it brought.
    private var finished: (@Sendable (Int) -> Void)?

    /// The answer's head.
    package nonisolated let headers: HTTPHeaders

    init(_ response: HTTPClientResponse, deadline: NIODeadline, finished: @escaping @Sendable (Int) -> Void) {
        iterator = response.body.makeAsyncIterator()
        headers = response.headers
        self.deadline = deadline
        self.finished = finished
    }

    /// The next line, without its `\n`; nil when the answer has ended. Throws when it is cut
    /// before its end (the last chunk), or when a line is longer than an answer may be.
    func next() async throws -> [UInt8]? {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                return line
            }
            guard var iterator else { return nil }
            let chunk: ByteBuffer?
            do {
                chunk = try await iterator.next(isolation: self)
            } catch {
                end()
                throw error
            }
            self.iterator = iterator
            guard let chunk else {
                end()
                // The last chunk came: a line without its `\n` was cut.
                guard buffer.isEmpty else { throw HTTPClientError.remoteConnectionClosed }
                return nil
            }
            guard NIODeadline.now() <= deadline else {
                end()
                throw HTTPClientError.deadlineExceeded
            }
            received += chunk.readableBytes
            guard buffer.count + chunk.readableBytes <= RemoteClient.maximumAnswerBytes else {
                end()
                throw TSyncError(
                    .failure, "the server's answer is larger than \(RemoteClient.maximumAnswerBytes >> 20) MiB", remedy: .smallerPages)
            }
            buffer.append(contentsOf: chunk.readableBytesView)
        }
    }

    /// Stops reading: the answer is dropped, and with it the connection.
    func cancel() { end() }

    private func end() {
        iterator = nil
        finished?(received)
        finished = nil
    }
}
