import TSyncModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Stdout for a report written while it is read (`status --json`, `diff --ndjson`…), in pieces
/// of 64 KiB: the first lines go out at once, memory stays the same for a thousand lines or a
/// million, and there are still few system calls. When the reader goes (`| head -1`), `flushed`
/// says so and the command stops reading instead of making lines for nobody.
struct StreamedOutput {
    private static let pieceSize = 1 << 16
    private var buffer: [UInt8] = []
    /// The reader has gone (EPIPE): nothing more will be written.
    private(set) var readerGone = false

    init() { buffer.reserveCapacity(Self.pieceSize + Self.pieceSize / 4) }

    mutating func append(_ text: String) { buffer.append(contentsOf: text.utf8) }
    mutating func append(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) { buffer.append(contentsOf: bytes) }
    mutating func append(byte: UInt8) { buffer.append(byte) }

    /// Appends `value` as compact JSON (`JSONSerializer`'s form).
    mutating func append(json value: JSONValue) { JSONSerializer.write(value, to: &buffer) }

    /// Writes out a full piece; false once the reader has gone.
    mutating func flushed() -> Bool {
        if buffer.count >= Self.pieceSize { flush() }
        return !readerGone
    }

    /// Writes out what is buffered.
    mutating func flush() {
        if !readerGone, !buffer.isEmpty {
            readerGone = !buffer.withUnsafeBufferPointer { Console.writeAll(STDOUT_FILENO, $0) }
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
