/// A UTC instant at millisecond precision: what `createdAt` and `updatedAt` hold on both ends.
///
/// The wire and the databases both carry exactly milliseconds, so a checkpoint taken from one
/// record compares equal to that record's stored value (docs/DESIGN.md §2.1). The text form
/// `2026-11-23T09:24:23.123Z` has a fixed width, so text order is time order.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var millisecondsSinceEpoch: Int64

    public init(millisecondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSinceEpoch < rhs.millisecondsSinceEpoch
    }

    public var description: String { iso8601 }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public var iso8601: String {
        guard let (year, month, day, msOfDay) = fourDigitYear else {
            let (days, msOfDay) = floorDivide(millisecondsSinceEpoch, 86_400_000)
            let (year, month, day) = Self.civil(fromDays: days)
            return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(msOfDay / 3_600_000, 2) + ":"
                + pad(msOfDay / 60_000 % 60, 2) + ":" + pad(msOfDay / 1000 % 60, 2) + "." + pad(msOfDay % 1000, 3) + "Z"
        }
        // Every record a server writes carries two of these: built in place, digit by digit, it
        // costs a tenth of the string concatenation above.
        return String(unsafeUninitializedCapacity: 24) { buffer in
            Self.write(year, month, day, msOfDay, into: buffer)
        }
    }

    /// Calls `body` with the bytes of `iso8601`, built on the stack: a pull writes two of these
    /// per record into the store, and a `String` for each was an allocation.
    public func withISO8601<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        guard let (year, month, day, msOfDay) = fourDigitYear else {
            var text = iso8601
            return try text.withUTF8(body)
        }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            let count = Self.write(year, month, day, msOfDay, into: buffer)
            return try body(UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// Appends the bytes of `iso8601` to `bytes`, built in place: a pull lays the texts of a chunk
    /// of records, two of these each, end to end in one buffer.
    public func appendISO8601(to bytes: inout [UInt8]) {
        var memo = DayMemo()
        appendISO8601(to: &bytes, memo: &memo)
    }

    /// The date of the last timestamp a `DayMemo` read or wrote, and its day: a page's timestamps
    /// (two a record) mostly fall on a few days, and the calendar's arithmetic for the date was
    /// half of what reading or writing one cost. Start one per page or chunk with `DayMemo()`.
    public struct DayMemo: Sendable {
        /// `Int64.min` until a date is kept (no day of a four-digit year is that far).
        var days = Int64.min
        /// `YYYY-MM-DD`: the first eight bytes, then the last two.
        var head: UInt64 = 0
        var tail: UInt16 = 0

        public init() {}

        init(days: Int64, head: UInt64, tail: UInt16) {
            self.days = days
            self.head = head
            self.tail = tail
        }
    }

    /// Appends the bytes of `iso8601`, the date taken from `memo` when it is the day `memo` holds,
    /// and kept there otherwise.
    public func appendISO8601(to bytes: inout [UInt8], memo: inout DayMemo) {
        let (days, msOfDay) = floorDivide(millisecondsSinceEpoch, 86_400_000)
        if days != memo.days {
            let (year, month, day) = Self.civil(fromDays: days)
            guard (0...9999).contains(year) else { return bytes.append(contentsOf: iso8601.utf8) }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 10) { date in
                putDigits(year, 4, at: 0, in: date)
                date[4] = UInt8(ascii: "-")
                putDigits(month, 2, at: 5, in: date)
                date[7] = UInt8(ascii: "-")
                putDigits(day, 2, at: 8, in: date)
                let raw = UnsafeRawBufferPointer(date)
                memo = DayMemo(
                    days: days, head: raw.loadUnaligned(as: UInt64.self), tail: raw.loadUnaligned(fromByteOffset: 8, as: UInt16.self))
            }
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            let raw = UnsafeMutableRawBufferPointer(text)
            raw.storeBytes(of: memo.head, as: UInt64.self)
            raw.storeBytes(of: memo.tail, toByteOffset: 8, as: UInt16.self)
            text[10] = UInt8(ascii: "T")
            let seconds = msOfDay / 1000
            twoDigits(seconds / 3600, at: 11, in: text)
            text[13] = UInt8(ascii: ":")
            twoDigits(seconds / 60 % 60, at: 14, in: text)
            text[16] = UInt8(ascii: ":")
            twoDigits(seconds % 60, at: 17, in: text)
            text[19] = UInt8(ascii: ".")
            let millisecond = msOfDay % 1000
            text[20] = UInt8(truncatingIfNeeded: 48 + millisecond / 100)
            twoDigits(millisecond % 100, at: 21, in: text)
            text[23] = UInt8(ascii: "Z")
            bytes.append(contentsOf: UnsafeBufferPointer(text))
        }
    }

    /// The calendar date and the milliseconds of the day, when the year has four digits (the
    /// fixed-width form); nil outside years 0-9999.
    private var fourDigitYear: (year: Int64, month: Int64, day: Int64, msOfDay: Int64)? {
        let (days, msOfDay) = floorDivide(millisecondsSinceEpoch, 86_400_000)
        let (year, month, day) = Self.civil(fromDays: days)
        guard (0...9999).contains(year) else { return nil }
        return (year, month, day, msOfDay)
    }

    /// Writes the 24 bytes of the fixed-width form; returns 24.
    private static func write(
        _ year: Int64, _ month: Int64, _ day: Int64, _ msOfDay: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>
    ) -> Int {
        putDigits(year, 4, at: 0, in: buffer)
        buffer[4] = UInt8(ascii: "-")
        putDigits(month, 2, at: 5, in: buffer)
        buffer[7] = UInt8(ascii: "-")
        putDigits(day, 2, at: 8, in: buffer)
        buffer[10] = UInt8(ascii: "T")
        putDigits(msOfDay / 3_600_000, 2, at: 11, in: buffer)
        buffer[13] = UInt8(ascii: ":")
        putDigits(msOfDay / 60_000 % 60, 2, at: 14, in: buffer)
        buffer[16] = UInt8(ascii: ":")
        putDigits(msOfDay / 1000 % 60, 2, at: 17, in: buffer)
        buffer[19] = UInt8(ascii: ".")
        putDigits(msOfDay % 1000, 3, at: 20, in: buffer)
        buffer[23] = UInt8(ascii: "Z")
        return 24
    }

    /// Calendar fields in UTC, for the OData date functions.
    public var components: (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) {
        let (days, msOfDay) = floorDivide(millisecondsSinceEpoch, 86_400_000)
        let (year, month, day) = Self.civil(fromDays: days)
        return (year, month, day, msOfDay / 3_600_000, msOfDay / 60_000 % 60, msOfDay / 1000 % 60)
    }

    /// Parses ISO 8601 as clients send it: a date, optionally `T` (or a space) and a time with
    /// optional fractional seconds, optionally `Z` or an offset (none means UTC). Digits past the
    /// millisecond are dropped.
    public init?(iso8601 text: String) {
        var text = text
        guard let parsed = text.withUTF8({ Timestamp(iso8601: $0) }) else { return nil }
        self = parsed
    }

    /// The same, read from bytes (a page of records is read without making a `String` of each).
    public init?(iso8601 text: UnsafeBufferPointer<UInt8>) {
        var memo = DayMemo()
        guard let parsed = Self.fixedWidth(text, memo: &memo) ?? Self.parsed(text) else { return nil }
        self = parsed
    }

    /// The general parser: every form `init(iso8601:)` takes, the fixed-width one included, step
    /// by step (the fast paths are tested against it).
    static func parsed(_ text: UnsafeBufferPointer<UInt8>) -> Timestamp? {
        let bytes = text
        var index = text.startIndex
        func number(_ digits: Int) -> Int64? {
            guard index + digits <= bytes.endIndex else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + digits] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            index += digits
            return value
        }
        func take(_ character: UInt8) -> Bool {
            guard index < bytes.endIndex, bytes[index] == character else { return false }
            index += 1
            return true
        }
        guard let year = number(4), take(45), let month = number(2), take(45), let day = number(2),
            (1...12).contains(month), day >= 1, day <= Self.daysInMonth(year: year, month: month)
        else { return nil }
        var hour: Int64 = 0
        var minute: Int64 = 0
        var second: Int64 = 0
        var millisecond: Int64 = 0
        var offsetMinutes: Int64 = 0
        if take(84) || take(116) || take(32) {  // 'T', 't', ' '
            guard let h = number(2), take(58), let m = number(2), h < 24, m < 60 else { return nil }
            hour = h
            minute = m
            if take(58) {
                guard let s = number(2), s < 60 else { return nil }
                second = s
                if take(46) {
                    var scale: Int64 = 100
                    var digits = 0
                    while index < bytes.endIndex, bytes[index] >= 48, bytes[index] <= 57 {
                        millisecond += Int64(bytes[index] - 48) * scale
                        scale /= 10
                        digits += 1
                        index += 1
                    }
                    guard digits > 0 else { return nil }
                }
            }
            if take(90) || take(122) {  // 'Z', 'z'
            } else if index < bytes.endIndex, bytes[index] == 43 || bytes[index] == 45 {  // '+', '-'
                let sign: Int64 = bytes[index] == 45 ? -1 : 1
                index += 1
                guard let oh = number(2) else { return nil }
                _ = take(58)
                let om = number(2) ?? 0
                guard oh < 24, om < 60 else { return nil }
                offsetMinutes = sign * (oh * 60 + om)
            }
        }
        guard index == bytes.endIndex else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        return Timestamp(
            millisecondsSinceEpoch: ((days * 24 + hour) * 60 + minute - offsetMinutes) * 60_000 + second * 1000 + millisecond)
    }

    /// Reads the fixed-width form `iso8601` writes without the general parser's steps: nearly
    /// every timestamp a pull reads (two per record) is in it. Nil when the text is not exactly
    /// that form, or not a valid date and time (the general parser then decides). The date's day
    /// is taken from `memo` when its ten bytes are the date `memo` holds (checked when `memo` took
    /// it), and kept there otherwise.
    public static func fixedWidth(_ text: UnsafeBufferPointer<UInt8>, memo: inout DayMemo) -> Timestamp? {
        guard text.count == 24, text[10] == UInt8(ascii: "T"), text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"),
            text[19] == UInt8(ascii: "."), text[23] == UInt8(ascii: "Z"),
            let hour = twoDigits(at: 11, in: text), let minute = twoDigits(at: 14, in: text),
            let second = twoDigits(at: 17, in: text), let centis = twoDigits(at: 20, in: text), text[22] &- 48 < 10,
            hour < 24, minute < 60, second < 60
        else { return nil }
        let raw = UnsafeRawBufferPointer(text)
        let head = raw.loadUnaligned(as: UInt64.self)
        let tail = raw.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
        if head != memo.head || tail != memo.tail || memo.days == Int64.min {
            guard text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"), let century = twoDigits(at: 0, in: text),
                let years = twoDigits(at: 2, in: text), let month = twoDigits(at: 5, in: text),
                let day = twoDigits(at: 8, in: text), (1...12).contains(month), day >= 1,
                day <= daysInMonth(year: century * 100 + years, month: month)
            else { return nil }
            memo = DayMemo(days: days(fromCivil: century * 100 + years, month, day), head: head, tail: tail)
        }
        let millisecond = centis * 10 + Int64(text[22] &- 48)
        return Timestamp(millisecondsSinceEpoch: (memo.days * 86_400 + (hour * 60 + minute) * 60 + second) * 1000 + millisecond)
    }

    // Howard Hinnant's civil-calendar algorithms, proleptic Gregorian.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Year, month and day of the day `days` after 1970-01-01 (also the server's `Date` fields).
    package static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// Writes `value` (0-9999) as `width` decimal digits at `offset`.
private func putDigits(_ value: Int64, _ width: Int, at offset: Int, in buffer: UnsafeMutableBufferPointer<UInt8>) {
    var value = value
    for position in stride(from: offset + width - 1, through: offset, by: -1) {
        buffer[position] = UInt8(truncatingIfNeeded: 48 + value % 10)
        value /= 10
    }
}

/// Writes `value` (0-99) as two decimal digits at `offset`.
@inline(__always)
private func twoDigits(_ value: Int64, at offset: Int, in buffer: UnsafeMutableBufferPointer<UInt8>) {
    buffer[offset] = UInt8(truncatingIfNeeded: 48 + value / 10)
    buffer[offset + 1] = UInt8(truncatingIfNeeded: 48 + value % 10)
}

/// Two ASCII digits at `offset` as their value, or nil when either is not a digit.
@inline(__always)
private func twoDigits(at offset: Int, in text: UnsafeBufferPointer<UInt8>) -> Int64? {
    let tens = text[offset] &- 48
    let ones = text[offset + 1] &- 48
    guard tens < 10, ones < 10 else { return nil }
    return Int64(tens) * 10 + Int64(ones)
}

private func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
    let quotient = a >= 0 ? a / b : (a - b + 1) / b
    return (quotient, a - quotient * b)
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Timestamp {
    /// The current time, truncated to the millisecond like every stored timestamp: the one wall
    /// clock of the client and the server (tests hand the server a clock of their own).
    public static func now() -> Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(millisecondsSinceEpoch: Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000)
    }
}
