import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

/// A time on the command line (`show --at`, `revert --at`, `restore --at`): ISO 8601
/// (`2026-11-28T13:05:00Z`, a date alone, an offset; UTC when none), or a duration before now:
/// `10m`, `-10m`, `10m ago`, `2h`, `90s`, `3d`, `1w`.
struct PointInTime: ExpressibleByArgument, Sendable {
    var timestamp: Timestamp

    /// The forms `--help` names.
    static let forms = "ISO 8601 (2026-11-28T13:05:00Z) or a duration before now (90s, 10m, 2h ago, 3d, 1w)"

    init?(argument: String) {
        guard let timestamp = Self.parse(argument, now: .now()) else { return nil }
        self.timestamp = timestamp
    }

    static func parse(_ text: String, now: Timestamp) -> Timestamp? {
        if let absolute = Timestamp(iso8601: text) { return absolute }
        var rest = text.trimmingCharacters(in: .whitespaces).lowercased()
        if rest.hasSuffix("ago") { rest = String(rest.dropLast(3)).trimmingCharacters(in: .whitespaces) }
        if rest.hasPrefix("-") { rest.removeFirst() }
        guard let unit = rest.last, let count = Int64(rest.dropLast()), count >= 0 else { return nil }
        let seconds: Int64
        switch unit {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86400
        case "w": seconds = 7 * 86400
        default: return nil
        }
        let (product, overflow) = count.multipliedReportingOverflow(by: seconds * 1000)
        guard !overflow, product <= now.millisecondsSinceEpoch else { return nil }
        return Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch - product)
    }
}

extension PointInTime {
    /// The point a command's `--at TIME` or version option names (validate() made sure of one).
    static func point(at: PointInTime?, version: String?) -> HistoryPoint {
        if let version { return .version(version) }
        return .time(at?.timestamp ?? .now())
    }

    /// The point in words: "version V", or the time.
    static func describe(_ point: HistoryPoint) -> String {
        switch point {
        case .version(let version): "version \(version)"
        case .time(let time): time.iso8601
        }
    }
}
