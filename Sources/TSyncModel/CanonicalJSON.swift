/// Reads JSON that is already written (nearly) as `JSONSerializer` writes it, and copies values
/// in that canonical form without building a `JSONValue`: the fast path of a pull, whose pages
/// hold thousands of records a client only has to store.
///
/// The promise is narrow and checked by `PropertyTests`: whenever `copyValue` succeeds, it
/// appended exactly the bytes `JSONSerializer` writes for the value `JSONParser` reads from the same
/// text. Whatever it is not sure of (a member name that is not plain ASCII, a name given twice, an
/// integer beyond 64 bits, invalid text of any kind) makes it give up and return false, and the
/// caller reads the input the general way, which decides and words any error.
public struct CanonicalJSONCursor: ~Copyable {
    /// The input; valid only inside the `withUnsafeBufferPointer` that made the cursor.
    public let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read.
    public var index = 0
    /// Deeper than this, give up (the parser refuses past 512 levels; the caller's own levels
    /// come on top of the value's).
    private static let maximumDepth = 256

    @inlinable
    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    @inlinable
    public var atEnd: Bool { index >= bytes.count }

    @inlinable
    public mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Takes `byte` if it is next (after white space).
    @inlinable
    public mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Whether `byte` is next (after white space), without taking it.
    @inlinable
    public mutating func next(is byte: UInt8) -> Bool {
        skipWhitespace()
        return index < bytes.count && bytes[index] == byte
    }

    /// A string without escapes (after white space): the range of its content, which is valid
    /// UTF-8 without control characters, and so is written back as it is. Nil: not such a string
    /// (nothing taken then is to be trusted: the caller gives up).
    @inlinable
    public mutating func plainString() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let range = start..<index
                index += 1
                if !ascii, String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) == nil { return nil }
                return range
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        return nil
    }

    /// A string without escapes, as a `String`.
    @inlinable
    public mutating func plainStringValue() -> String? {
        guard let range = plainString() else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// An object's member name (after white space, with its ':'): printable ASCII without quotes
    /// or backslashes, so that byte order is the serializer's order and no two names can be
    /// canonically equivalent.
    @inlinable
    public mutating func memberName() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let range = start..<index
                index += 1
                return take(UInt8(ascii: ":")) ? range : nil
            }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// Whether the bytes at `range` are `name`.
    @inlinable
    public func range(_ range: Range<Int>, is name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        let other = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        return bytes[range].elementsEqual(other)
    }

    /// Whether the name at `a` strictly precedes the name at `b` in byte order.
    public func range(_ a: Range<Int>, precedes b: Range<Int>) -> Bool {
        bytes[a].lexicographicallyPrecedes(bytes[b])
    }

    /// `true`, `false` or `null` (after white space): a Bool, or nil for null; fails otherwise.
    @inlinable
    public mutating func booleanOrNull() -> Bool?? {
        skipWhitespace()
        if word("true") { return .some(true) }
        if word("false") { return .some(false) }
        if word("null") { return .some(nil) }
        return nil
    }

    /// `null` (after white space), taken if it is next.
    @inlinable
    public mutating func null() -> Bool {
        skipWhitespace()
        return word("null")
    }

    /// An integer in JSON's syntax that fits in 64 bits (after white space); nil otherwise, with
    /// nothing to trust taken.
    public mutating func integer() -> Int64? {
        skipWhitespace()
        let start = index
        guard let (value, isInteger) = number(), isInteger else {
            index = start
            return nil
        }
        return value
    }

    /// Appends the value that comes next (after white space) in canonical form; false: not sure,
    /// read it the general way.
    public mutating func copyValue(to output: inout [UInt8]) -> Bool {
        copyValue(to: &output, depth: 0)
    }

    private mutating func copyValue(to output: inout [UInt8], depth: Int) -> Bool {
        skipWhitespace()
        guard index < bytes.count, depth <= Self.maximumDepth else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""): return copyString(to: &output)
        case UInt8(ascii: "{"): return copyObject(to: &output, depth: depth + 1)
        case UInt8(ascii: "["):
            index += 1
            output.append(UInt8(ascii: "["))
            if take(UInt8(ascii: "]")) {
                output.append(UInt8(ascii: "]"))
                return true
            }
            while true {
                guard copyValue(to: &output, depth: depth + 1) else { return false }
                if take(UInt8(ascii: "]")) {
                    output.append(UInt8(ascii: "]"))
                    return true
                }
                guard take(UInt8(ascii: ",")) else { return false }
                output.append(UInt8(ascii: ","))
            }
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            let start = index
            guard booleanOrNull() != nil else { return false }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            return true
        default:
            let start = index
            guard let (value, isInteger) = number() else { return false }
            if isInteger {
                // The text is the integer's shortest form, except "-0".
                if value == 0 {
                    output.append(UInt8(ascii: "0"))
                } else {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                }
                return true
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let double = Double(text), double.isFinite else { return false }
            output.append(contentsOf: JSONSerializer.format(double).utf8)
            return true
        }
    }

    /// An object: names in the serializer's order (`id` first, the rest in byte order, sorted
    /// here when they come in another), each once; anything else is left to the general path.
    private mutating func copyObject(to output: inout [UInt8], depth: Int) -> Bool {
        index += 1
        output.append(UInt8(ascii: "{"))
        if take(UInt8(ascii: "}")) {
            output.append(UInt8(ascii: "}"))
            return true
        }
        var members = Members(start: output.count)
        while true {
            guard let name = memberName() else { return false }
            members.begin(name, in: self, output: &output)
            guard copyValue(to: &output, depth: depth) else { return false }
            members.end(output: output)
            if take(UInt8(ascii: "}")) {
                guard members.finish(in: self, output: &output) else { return false }
                output.append(UInt8(ascii: "}"))
                return true
            }
            guard take(UInt8(ascii: ",")) else { return false }
        }
    }

    /// The members of an object being copied, to put them in the serializer's order at the end
    /// when they came in another (input typed by people rarely sorts its names).
    public struct Members {
        /// Where the first member starts in the output.
        private var start: Int
        /// Each member's name (in the input) and its `"name":value` text (in the output).
        private var members: [(name: Range<Int>, text: Range<Int>)] = []
        private var inOrder = true
        /// The members in order, as `finish` writes them again: kept, like `members`, for the
        /// next object, so that an insert of records whose fields are not in the serializer's
        /// order makes no buffer per record.
        private var rewritten: [UInt8] = []
        /// The names of the last object `finish` put in order, in their input order, each ended
        /// by a 0 byte (no name holds one), and the order it found: the records of an insert or a
        /// page nearly always name the same fields in the same order, and sorting them again for
        /// each record was a sixth of reading it.
        private var orderedNames: [UInt8] = []
        private var order: [Int] = []

        /// Members to be written to the output from `start` on (just past a `{`).
        public init(start: Int) {
            self.start = start
        }

        /// Starts over for another object from `start` on, keeping the storage: a page reader
        /// copies thousands of records, and an allocation for each was a tenth of its work.
        public mutating func reset(start: Int) {
            self.start = start
            members.removeAll(keepingCapacity: true)
            inOrder = true
        }

        /// Writes a member's name; its value follows, then `end`.
        public mutating func begin(_ name: Range<Int>, in cursor: borrowing CanonicalJSONCursor, output: inout [UInt8]) {
            // `,"name":` is written in one piece where the input has it so (a name is between
            // quotes there): each append checks the buffer's uniqueness and room, and four per
            // member were a tenth of tsync's share of an insert.
            let bytes = cursor.bytes
            var first = name.lowerBound - 1
            if let last = members.last {
                if first > 0, bytes[first - 1] == UInt8(ascii: ",") {
                    first -= 1
                } else {
                    output.append(UInt8(ascii: ","))
                }
                if inOrder, !Self.precedes(last.name, name, cursor) { inOrder = false }
            } else {
                // Room for a record's fields at once, not grown a member at a time (four
                // allocations for seven fields, for every record of a pull or an insert).
                members.reserveCapacity(16)
            }
            let textStart = output.count + (first < name.lowerBound - 1 ? 1 : 0)
            members.append((name, textStart..<textStart))
            let end = name.upperBound + 1
            if end < bytes.count, bytes[end] == UInt8(ascii: ":") {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[first...end]))
            } else {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[first..<end]))
                output.append(UInt8(ascii: ":"))
            }
        }

        /// The member's value is written.
        public mutating func end(output: [UInt8]) {
            let last = members.count - 1
            members[last].text = members[last].text.lowerBound..<output.count
        }

        /// Puts the members in order if they are not; false when a name comes twice.
        public mutating func finish(in cursor: borrowing CanonicalJSONCursor, output: inout [UInt8]) -> Bool {
            guard !inOrder else { return true }
            if !namesAreTheLastOrdered(in: cursor) {
                // The order of the names, checked once: the same names in the same order are
                // put in the same order again, and are again each given once.
                var sorted = Array(members.indices)
                sorted.sort { Self.precedes(members[$0].name, members[$1].name, cursor) }
                for (a, b) in zip(sorted, sorted.dropFirst()) where !Self.precedes(members[a].name, members[b].name, cursor) {
                    return false
                }
                order = sorted
                orderedNames.removeAll(keepingCapacity: true)
                for member in members {
                    orderedNames.append(contentsOf: UnsafeBufferPointer(rebasing: cursor.bytes[member.name]))
                    orderedNames.append(0)
                }
            }
            // Written once, where the object starts the output (a record's body): the output
            // up to `start` is copied to the new buffer, which then becomes the output; else the
            // members are written aside and copied back.
            let swapping = start <= output.count - start
            rewritten.removeAll(keepingCapacity: true)
            rewritten.reserveCapacity(swapping ? output.count : output.count - start)
            if swapping { rewritten.append(contentsOf: output[..<start]) }
            for (offset, index) in order.enumerated() {
                if offset > 0 { rewritten.append(UInt8(ascii: ",")) }
                rewritten.append(contentsOf: output[members[index].text])
            }
            if swapping {
                swap(&output, &rewritten)
            } else {
                output.replaceSubrange(start..., with: rewritten)
            }
            return true
        }

        /// Whether the members' names are, in the same order, those `finish` last put in order.
        private func namesAreTheLastOrdered(in cursor: borrowing CanonicalJSONCursor) -> Bool {
            guard members.count == order.count else { return false }
            var position = 0
            for member in members {
                let name = cursor.bytes[member.name]
                let end = position + name.count
                guard end < orderedNames.count, orderedNames[end] == 0,
                    orderedNames[position..<end].elementsEqual(name)
                else { return false }
                position = end + 1
            }
            return true
        }

        /// The serializer's order: `id` first, the rest in byte order (code-point order, for ASCII).
        private static func precedes(_ a: Range<Int>, _ b: Range<Int>, _ cursor: borrowing CanonicalJSONCursor) -> Bool {
            if cursor.range(a, is: "id") { return !cursor.range(b, is: "id") }
            if cursor.range(b, is: "id") { return false }
            return cursor.range(a, precedes: b)
        }
    }

    /// A string: one without escapes is copied as it is; one with escapes is decoded as the
    /// parser decodes it and written as the serializer writes it.
    private mutating func copyString(to output: inout [UInt8]) -> Bool {
        let start = index
        if let range = plainString() {
            // With its quotes, as the input has them: one append, not three.
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[range.lowerBound - 1..<range.upperBound + 1]))
            return true
        }
        index = start
        guard let end = stringEnd(from: start),
            case .string(let string)? = try? JSONParser.parse(bytes: Array(bytes[start..<end]))
        else { return false }
        index = end
        JSONSerializer.writeString(string, to: &output)
        return true
    }

    /// Where the string starting at `start` (its opening quote) ends, past its closing quote.
    private func stringEnd(from start: Int) -> Int? {
        var position = start + 1
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "\""): return position + 1
            case UInt8(ascii: "\\"): position += 2
            default: position += 1
            }
        }
        return nil
    }

    /// A number in JSON's syntax: an integer's value when it is one that fits in 64 bits (else
    /// nil: the parser refuses it), or (0, false) for a real, whose text the caller reads.
    private mutating func number() -> (Int64, Bool)? {
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count, isDigit(bytes[index]) else { return nil }
        var magnitude: UInt64 = 0
        var fits = true
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { return nil }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                if o1 || o2 { fits = false }
                magnitude = sum
                index += 1
            }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { return nil }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { return nil }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        guard isInteger else { return (0, false) }
        guard fits else { return nil }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return (magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude), true)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return (Int64(magnitude), true)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    @usableFromInline
    mutating func word(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let other = UnsafeBufferPointer(start: text.utf8Start, count: count)
        guard bytes[index..<index + count].elementsEqual(other) else { return false }
        index += count
        return true
    }
}
