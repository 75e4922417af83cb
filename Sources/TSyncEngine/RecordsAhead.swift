import Foundation

/// The records of a streamed insert, read on a thread of their own while the insert's
/// transaction writes those read before: reading (finding each record, checking its id, writing
/// its body in the store's form) was a quarter of the insert's time, and with it on the same
/// thread the two took turns where a second core could do one while the other ran.
///
/// The reader stays at most `limit` ahead of the writer (records waiting, and their bodies'
/// bytes), so memory stays what the read-ahead before the transaction already held: flat,
/// however long the input.
final class RecordsAhead: @unchecked Sendable {
    // `@unchecked`: `records` belongs to the reading thread from `start()` until it has finished
    // (`finished`, set under the lock); every other property is read and written under `condition`.
    private var records: StreamedRecords
    private let limit: (records: Int, bytes: Int)
    private let condition = NSCondition()
    private var batches: [[(id: String, body: String)]] = []
    private var waiting = (records: 0, bytes: 0)
    /// `.end` or `.declined` once the reader has read its last batch.
    private var last: StreamedRecords.Progress?
    /// Whether the reader waits for the writer to take a batch.
    private var full = false
    private var stopped = false
    private var finished = true
    private var order: [String] = []

    /// Records the reader reads at a time: a few of the insert's chunks, so that reader and
    /// writer hand over a batch some 400 times for 100,000 records, not 1,600.
    static let batchSize = 256

    enum Next {
        case batch([(id: String, body: String)])
        case end
        /// The rest of the input is not for the fast readers: the general path reads it all.
        case declined
    }

    init(_ records: StreamedRecords, limit: (records: Int, bytes: Int)) {
        self.records = records
        self.limit = limit
    }

    /// Starts reading.
    func start() {
        condition.withLock { finished = false }
        Thread { self.read() }.start()
    }

    /// Waits until the reader has read as far ahead as it may, or the whole input: an input that
    /// fits is read before the caller takes the store's write lock, and other writers wait only
    /// for its writes. False when the input is for the general path.
    func readAhead() -> Bool {
        condition.withLock {
            while last == nil, !full { condition.wait() }
            return last != .declined
        }
    }

    /// The next batch, in input order, waiting for the reader if need be.
    func next() -> Next {
        condition.withLock {
            while batches.isEmpty, last == nil { condition.wait() }
            if last == .declined { return .declined }
            guard !batches.isEmpty else { return .end }
            let batch = batches.removeFirst()
            waiting.records -= batch.count
            waiting.bytes -= Self.bytes(batch)
            full = false
            condition.broadcast()
            return .batch(batch)
        }
    }

    /// The fields in the input's order (`StreamedRecords.fieldOrder`), once `next()` said `.end`.
    var fieldOrder: [String] { condition.withLock { order } }

    /// Stops the reader and waits for its thread to end (it ends a read in progress first):
    /// afterwards nobody reads the source but the caller, which may read it again.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
            while !finished { condition.wait() }
        }
    }

    private func read() {
        var progress = StreamedRecords.Progress.more
        while progress == .more {
            var batch: [(id: String, body: String)] = []
            batch.reserveCapacity(Self.batchSize)
            do {
                progress = try records.next(into: &batch, limit: Self.batchSize)
            } catch {
                progress = .declined
            }
            let bytes = Self.bytes(batch)
            let fieldOrder = progress == .more ? [] : records.fieldOrder
            let carryOn = condition.withLock {
                while !stopped, !batches.isEmpty, waiting.records + batch.count > limit.records || waiting.bytes + bytes > limit.bytes {
                    full = true
                    condition.broadcast()
                    condition.wait()
                }
                guard !stopped else { return false }
                if !batch.isEmpty {
                    batches.append(batch)
                    waiting.records += batch.count
                    waiting.bytes += bytes
                }
                if progress != .more {
                    last = progress
                    order = fieldOrder
                }
                condition.broadcast()
                return true
            }
            guard carryOn else { break }
        }
        condition.withLock {
            if last == nil { last = .declined }
            finished = true
            condition.broadcast()
        }
    }

    private static func bytes(_ batch: [(id: String, body: String)]) -> Int {
        batch.reduce(0) { $0 + $1.body.utf8.count }
    }
}
