#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's limit on open files, which bounds the connections a server can hold: every
/// held read keeps its connection, and each is a file descriptor (plus the database's files and
/// the listening sockets). Distributions start a process with a soft limit of 1,024 while the
/// hard limit is far higher; a server that needs 20,000 held reads raises its own soft limit to
/// the hard one, which needs no privilege.
package struct FileDescriptorLimit: Sendable, Equatable {
    /// The limit in force.
    package var soft: UInt64
    /// The most an unprivileged process may raise `soft` to.
    package var hard: UInt64

    /// The limit now, nil when the system does not say.
    package static func current() -> FileDescriptorLimit? {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else { return nil }
        return FileDescriptorLimit(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one (on Darwin, to at most `OPEN_MAX`, the most
    /// `setrlimit` takes there). Returns the limit before and after; `after` equals `before` when
    /// the system refused or there was nothing to raise.
    @discardableResult
    package static func raiseToHard() -> (before: FileDescriptorLimit, after: FileDescriptorLimit)? {
        guard let before = current() else { return nil }
        var target = before.hard
        #if canImport(Darwin)
            target = min(target, UInt64(OPEN_MAX))
        #endif
        guard target > before.soft else { return (before, before) }
        var limit = rlimit(rlim_cur: rlim_t(target), rlim_max: rlim_t(before.hard))
        guard setrlimit(resourceNumber, &limit) == 0, let after = current() else { return (before, before) }
        return (before, after)
    }

    #if canImport(Glibc)
        private static let resourceNumber = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
        private static let resourceNumber = RLIMIT_NOFILE
    #endif
}
