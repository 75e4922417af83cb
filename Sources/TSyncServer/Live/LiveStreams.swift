import NIOCore
import Synchronization

/// The streams of live reads open now (`LiveStream`, docs/DESIGN.md §8.1), by table, and the
/// passes that write them their pages.
///
/// A commit marks the questions of its table that its records may answer (`LiveInterest`, as it
/// wakes held reads); a pass over the table then runs, for each question and place that a marked
/// stream stands at, the page after that place once, and writes it as one line to every stream
/// there, from each connection's event loop. Streams that follow a table stand at its last
/// record together: one query and one line of bytes for all of them. Passes over a table start
/// `gap` apart at least: the commits of that time are one line, not one each (1,000 commits a
/// second to 1,000 streams would be a million writes).
///
/// A stream whose connection takes nothing more is passed over (its place kept) until it does;
/// one whose page is too large for a line, whose query fails or whose connection closed ends,
/// and so does every stream at its deadline (a sweep, as for held reads) or when the server
/// stops. Its request then ends the answer and returns: the client asks again from its last page.
final class LiveStreams: Sendable {
    /// The least time from the start of one pass over a table to the next.
    static let gap = Duration.milliseconds(10)
    /// How often the sweep looks at the streams' deadlines and connections.
    static let sweepInterval = Duration.milliseconds(250)

    /// A stream open on a connection.
    final class Open: Sendable {
        let stream: LiveStream
        let channel: any Channel
        /// The connection's exchange, where the lines are written (on the channel's event loop).
        let exchange: NIOLoopBound<HTTPExchange>

        init(stream: LiveStream, channel: any Channel, exchange: NIOLoopBound<HTTPExchange>) {
            self.stream = stream
            self.channel = channel
            self.exchange = exchange
        }
    }

    private struct Entry {
        let open: Open
        var position: StreamPosition?
        let deadline: ContinuousClock.Instant
        let ended: CheckedContinuation<Void, Never>
    }

    private struct Table {
        var entries: [UInt64: Entry] = [:]
        /// The questions of the streams open, what commits may answer each, and how many ask it.
        var questions: [LiveQuestion: (interest: LiveInterest, streams: Int)] = [:]
        /// Questions a commit may have answered since the last pass.
        var dirty: Set<LiveQuestion> = []
        /// Streams due a page whatever is committed: new ones, ones a full page or a busy
        /// connection left behind.
        var behind: Set<UInt64> = []
        var passing = false
    }

    private struct State {
        var tables: [String: Table] = [:]
        var next: UInt64 = 0
        var sweeping = false
        var stopping = false
    }

    /// What a pass writes one page to: the streams of one question at one place.
    private struct Group {
        var position: StreamPosition?
        var members: [(id: UInt64, open: Open)]
    }

    private let state = Mutex(State())

    /// Keeps `open` on `table` from `position` (nil: from its read's own filter) until it ends
    /// (see the type): returns then. Its first pass comes at once.
    func follow(_ open: Open, table key: String, from position: StreamPosition?, until deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state in
            state.next &+= 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
                let (added, pass, sweep) = state.withLock { state -> (Bool, Bool, Bool) in
                    guard !state.stopping, !Task.isCancelled else { return (false, false, false) }
                    var table = state.tables.removeValue(forKey: key) ?? Table()
                    table.entries[id] = Entry(open: open, position: position, deadline: deadline, ended: ended)
                    let question = open.stream.question
                    table.questions[question, default: (open.stream.interest, 0)].streams += 1
                    table.behind.insert(id)
                    let pass = !table.passing
                    table.passing = true
                    state.tables[key] = table
                    defer { state.sweeping = true }
                    return (true, pass, !state.sweeping)
                }
                guard added else { return ended.resume() }
                if pass { Task { await self.pass(key) } }
                if sweep { Task { await self.sweep() } }
            }
        } onCancel: {
            end([(key, id)])
        }
    }

    /// A commit to `keys` (`ChangeFeed.key`s): `changes` are its records, nil when not known
    /// (another instance's, or a backend whose pages may have stopped below a write in flight:
    /// every question of the table is due then).
    func committed(_ keys: some Sequence<String>, changes: [LiveChange]?) {
        let start = state.withLock { state -> [String] in
            guard !state.tables.isEmpty else { return [] }
            var start: [String] = []
            for key in keys {
                guard var table = state.tables.removeValue(forKey: key) else { continue }
                for (question, asked) in table.questions where !table.dirty.contains(question) {
                    if let changes, !changes.contains(where: { $0.table == key && asked.interest.mayWant($0) }) { continue }
                    table.dirty.insert(question)
                }
                if !table.dirty.isEmpty, !table.passing {
                    table.passing = true
                    start.append(key)
                }
                state.tables[key] = table
            }
            return start
        }
        for key in start { Task { await self.pass(key) } }
    }

    /// The server stops: every stream ends now, and none opens from now on.
    func stop() {
        let all = state.withLock { state -> [(String, UInt64)] in
            state.stopping = true
            return state.tables.flatMap { key, table in table.entries.keys.map { (key, $0) } }
        }
        end(all)
    }

    /// Ends the streams named: their requests go on (`follow` returns).
    private func end(_ streams: [(key: String, id: UInt64)]) {
        let ended = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var ended: [CheckedContinuation<Void, Never>] = []
            for (key, id) in streams {
                guard var table = state.tables.removeValue(forKey: key) else { continue }
                if let entry = table.entries.removeValue(forKey: id) {
                    ended.append(entry.ended)
                    let question = entry.open.stream.question
                    let left = (table.questions[question]?.streams ?? 1) - 1
                    table.questions[question] = left > 0 ? table.questions[question].map { ($0.interest, left) } : nil
                    if left == 0 { table.dirty.remove(question) }
                    table.behind.remove(id)
                }
                if !table.entries.isEmpty || table.passing { state.tables[key] = table }
            }
            return ended
        }
        for continuation in ended { continuation.resume() }
    }

    /// Passes over `key`'s streams while any is due, `gap` apart.
    private func pass(_ key: String) async {
        while true {
            let started = ContinuousClock.now
            let groups = state.withLock { state -> [Group]? in
                guard var table = state.tables.removeValue(forKey: key) else { return nil }
                var groups: [GroupKey: Group] = [:]
                for (id, entry) in table.entries where table.behind.contains(id) || table.dirty.contains(entry.open.stream.question) {
                    groups[
                        GroupKey(question: entry.open.stream.question, position: entry.position),
                        default: Group(position: entry.position, members: [])
                    ]
                    .members.append((id, entry.open))
                }
                table.dirty.removeAll()
                table.behind.removeAll()
                if groups.isEmpty { table.passing = false }
                if !table.entries.isEmpty || table.passing { state.tables[key] = table }
                return groups.isEmpty ? nil : Array(groups.values)
            }
            guard let groups else { return }
            for group in groups { await write(group, key: key) }
            try? await Task.sleep(until: started + Self.gap)
        }
    }

    private struct GroupKey: Hashable {
        let question: LiveQuestion
        let position: StreamPosition?
    }

    /// What became of a line for one stream.
    enum Written: Sendable {
        case written
        /// The connection takes nothing more now: the line was not written.
        case busy
        /// The connection or its answer is over.
        case closed
    }

    /// Works out the page after `group`'s place and writes it to each of its streams.
    private func write(_ group: Group, key: String) async {
        guard let first = group.members.first else { return }
        let stream = first.open.stream
        let page: PageBody
        do {
            page = try await stream.page(group.position)
        } catch {
            return end(group.members.map { (key, $0.id) })
        }
        guard page.count > 0 else { return }
        guard let next = page.position, page.bytes.readableBytes <= LiveDelivery.maximumBytes else {
            // Too large for a line (or no place to go on from): the client asks again, and the
            // page goes its request's own way.
            return end(group.members.map { (key, $0.id) })
        }
        let chunk = LiveStream.chunk(page.bytes, allocator: first.open.channel.allocator)
        var loops: [ObjectIdentifier: (loop: any EventLoop, members: [(id: UInt64, open: Open)])] = [:]
        for member in group.members {
            let loop = member.open.channel.eventLoop
            loops[ObjectIdentifier(loop), default: (loop, [])].members.append(member)
        }
        let groups = Array(loops.values)
        let results = await withCheckedContinuation { (done: CheckedContinuation<[(UInt64, Written)], Never>) in
            let collected = Mutex((left: groups.count, results: [(UInt64, Written)]()))
            for (loop, members) in groups {
                loop.execute {
                    let results = members.map { ($0.id, $0.open.exchange.value.streamLine(chunk)) }
                    let all = collected.withLock { collected -> [(UInt64, Written)]? in
                        collected.left -= 1
                        collected.results += results
                        return collected.left == 0 ? collected.results : nil
                    }
                    if let all { done.resume(returning: all) }
                }
            }
        }
        let full = page.count >= stream.top
        let closed = state.withLock { state -> [(key: String, id: UInt64)] in
            guard var table = state.tables.removeValue(forKey: key) else { return [] }
            var closed: [(key: String, id: UInt64)] = []
            for (id, written) in results {
                switch written {
                case .written:
                    table.entries[id]?.position = next
                    if full, table.entries[id] != nil { table.behind.insert(id) }
                case .busy:
                    if table.entries[id] != nil { table.behind.insert(id) }
                case .closed:
                    closed.append((key, id))
                }
            }
            state.tables[key] = table
            return closed
        }
        end(closed)
    }

    /// Every `sweepInterval` while any stream is open: ends those past their deadline or whose
    /// connection closed.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: Self.sweepInterval)
            let now = ContinuousClock.now
            let (due, done) = state.withLock { state -> ([(key: String, id: UInt64)], Bool) in
                var due: [(key: String, id: UInt64)] = []
                var open = 0
                for (key, table) in state.tables {
                    for (id, entry) in table.entries where entry.deadline <= now || !entry.open.channel.isActive { due.append((key, id)) }
                    open += table.entries.count
                }
                if open == due.count { state.sweeping = false }
                return (due, open == due.count)
            }
            end(due)
            if done { return }
        }
    }
}
