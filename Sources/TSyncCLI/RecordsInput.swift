import Foundation
import TSyncEngine
import TSyncModel

/// The records `insert` and `upsert` take: one JSON object as an argument, or, with none (or `-`),
/// a JSON array or NDJSON on stdin, or CSV on stdin with `--csv`. Refuses to wait on a terminal.
enum RecordsInput {
    /// The records of `upsert`, in the store's form where the input gives every record its id,
    /// with their fields in the order the input gives them (`FieldOrder`).
    static func upsertRecords(json: String?, csv: Bool, table: String) throws -> NewRecords {
        switch try source(json: json, csv: csv, command: "upsert", table: table) {
        case .argument(let text):
            return NewRecords(objects: [try RecordInput.object(from: text)], fieldOrder: FieldOrder.names(json: Array(text.utf8)))
        case .json: return try NewRecords.json(Console.readStandardInput(), requiringIDs: true)
        case .csv: return try NewRecords.csv(Console.readStandardInput(), requiringIDs: true)
        }
    }

    /// The records of a whole input for `insert`, in the store's form where the input allows.
    static func newRecords(_ bytes: [UInt8], csv: Bool) throws -> NewRecords {
        csv ? try NewRecords.csv(bytes) : try NewRecords.json(bytes)
    }

    enum Source: Equatable {
        case argument(String)
        case json
        case csv
    }

    static func source(json: String?, csv: Bool, command: String, table: String) throws -> Source {
        if csv {
            guard json == nil || json == "-" else { throw TSyncError.usage("--csv reads stdin: give no JSON argument (or -)") }
            guard !Console.stdinIsTerminal else {
                throw TSyncError.usage("pipe the CSV to stdin: tsync \(command) \(table) --csv < FILE")
            }
            return .csv
        }
        if let json, json != "-" { return .argument(json) }
        guard !Console.stdinIsTerminal else {
            throw TSyncError.usage("give a record as a JSON argument, or pipe records (a JSON array or NDJSON) to stdin")
        }
        return .json
    }
}

/// Stdin for a streamed `insert`, which can be read again from its start when the general path
/// has to read it whole: a file is read again from where it started, and a pipe is kept in a
/// temporary file as it is read (in memory where no temporary file can be made).
final class ReplayableStandardInput: ByteSource {
    private var startOffset: off_t?
    private var spool: UnsafeMutablePointer<FILE>?
    private var kept: [UInt8]?
    /// Why the copy is incomplete: then the input cannot be read again, and says why.
    private var copyFailure: TSyncError?
    private var scratch: [UInt8] = []

    init() {
        var status = stat()
        if fstat(STDIN_FILENO, &status) == 0, status.st_mode & S_IFMT == S_IFREG {
            let offset = lseek(STDIN_FILENO, 0, SEEK_CUR)
            if offset >= 0 { startOffset = offset }
        }
        guard startOffset == nil else { return }
        spool = tmpfile()
        if spool == nil { kept = [] }
    }

    deinit {
        if let spool { fclose(spool) }
    }

    func read(into buffer: inout [UInt8], limit: Int) throws(TSyncError) -> Int {
        if scratch.count < limit { scratch = [UInt8](repeating: 0, count: limit) }
        var count: Int
        repeat {
            count = scratch.withUnsafeMutableBytes { Foundation.read(STDIN_FILENO, $0.baseAddress, limit) }
        } while count < 0 && errno == EINTR
        guard count >= 0 else { throw .failure("cannot read stdin: \(String(cString: strerror(errno)))") }
        buffer.append(contentsOf: scratch[0..<count])
        if let spool, scratch.withUnsafeBytes({ fwrite($0.baseAddress, 1, count, spool) }) != count {
            let reason = String(cString: strerror(errno))
            let failure = TSyncError.failure(
                "cannot keep a copy of stdin in a temporary file (\(reason)); redirect a file to stdin instead of a pipe")
            copyFailure = failure
            throw failure
        }
        kept?.append(contentsOf: scratch[0..<count])
        return count
    }

    /// The whole input, from its start.
    func replay() throws -> [UInt8] {
        if let copyFailure { throw copyFailure }
        if let startOffset {
            guard lseek(STDIN_FILENO, startOffset, SEEK_SET) == startOffset else {
                throw TSyncError.failure("cannot read stdin again: \(String(cString: strerror(errno)))")
            }
            return Console.readStandardInput()
        }
        guard let spool else { return (kept ?? []) + Console.readStandardInput() }
        guard fseek(spool, 0, SEEK_SET) == 0 else {
            throw TSyncError.failure("cannot read the copy of stdin again: \(String(cString: strerror(errno)))")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, spool) }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        guard ferror(spool) == 0 else { throw TSyncError.failure("cannot read the copy of stdin again") }
        return bytes + Console.readStandardInput()
    }
}

/// The ids an `insert` prints, kept until its transaction commits: in memory up to a point,
/// then in a temporary file, so that a million ids do not stay in memory.
final class InsertedIDs {
    private(set) var sample: [String] = []
    private var pending: [UInt8] = []
    private var spill: UnsafeMutablePointer<FILE>?
    /// Bytes in `spill`, which holds the ids before those in `pending`.
    private var written = 0
    private var spillFailed = false
    private let keep: Bool
    private static let memoryLimit = 1 << 20

    init(keep: Bool) {
        self.keep = keep
    }

    deinit {
        if let spill { fclose(spill) }
    }

    func append(_ id: String) {
        if sample.count < ItemSample.limit { sample.append(id) }
        guard keep else { return }
        pending.append(contentsOf: id.utf8)
        pending.append(UInt8(ascii: "\n"))
        if pending.count >= Self.memoryLimit, !spillFailed, let file = spill ?? Self.unbufferedTemporaryFile() {
            spill = file
            let count = pending.count
            if pending.withUnsafeBytes({ fwrite($0.baseAddress, 1, count, file) }) == count {
                written += count
                pending.removeAll(keepingCapacity: true)
            } else {
                // A full disk: what reached the file of this piece is cut off, the rest stays in memory.
                spillFailed = true
                ftruncate(fileno(file), off_t(written))
            }
        }
    }

    private static func unbufferedTemporaryFile() -> UnsafeMutablePointer<FILE>? {
        guard let file = tmpfile() else { return nil }
        setvbuf(file, nil, _IONBF, 0)
        return file
    }

    /// Writes the ids to stdout, one a line.
    func write() {
        if let spill, fseek(spill, 0, SEEK_SET) == 0 {
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var left = written
            while left > 0 {
                let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, min($0.count, left), spill) }
                left -= count
                let delivered = chunk.withUnsafeBufferPointer { buffer in
                    Console.writeAll(STDOUT_FILENO, UnsafeBufferPointer(rebasing: buffer[0..<count]))
                }
                guard count > 0, delivered else { break }
            }
        }
        pending.withUnsafeBufferPointer { _ = Console.writeAll(STDOUT_FILENO, $0) }
    }
}
