#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import ArgumentParser
import TSyncEngine
import TSyncModel

/// SIGINT and SIGTERM during a long push or pull: the first asks it to stop at its next safe point
/// (answers in flight are awaited and recorded, the rest stays queued, and the command reports
/// what it did); a second one ends the process at once, which loses nothing either, since every
/// step of a push is one transaction of the store.
///
/// Why a handler and a pipe rather than a dispatch signal source: a signal source needs the signal
/// ignored, a state that an ignored signal can be lost in and that child processes inherit. A real
/// handler runs on whichever thread receives the signal; it only writes the signal's number to a
/// pipe (the one thing a handler may safely do), and a thread of our own reads it and stops the
/// work.
///
/// What a stopped command then reports and which code it exits with is decided from its session's
/// verdict (`ReportOptions.conclude`).
enum Interrupts {
    /// Sends SIGINT and SIGTERM to `stopRequest` (the command's `CommandSession.stopRequest`).
    static func forward(to stopRequest: StopRequest) {
        guard let readEnd = interruptPipe?.read else { return }  // no pipe: the signals keep their default action
        let reader = Thread {
            // A process may start with the signals blocked (a parent's mask is inherited: a test
            // runner whose server tests watch SIGINT had it blocked): this thread takes them.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGINT)
            sigaddset(&signals, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
            var number: UInt8 = 0
            while true {
                let count = read(readEnd, &number, 1)
                // The signal itself may land on this thread and interrupt the read: read again.
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                if stopRequest.isStopped { _exit(128 + Int32(number)) }
                stopRequest.stop(signal: Int32(number))
            }
        }
        reader.start()
        for number in [SIGINT, SIGTERM] { Self.install(number) }
    }

    /// `sigaction` rather than `signal`, whose semantics differ between C libraries: the handler
    /// stays installed, and calls it interrupts are restarted.
    private static func install(_ number: Int32) {
        var action = sigaction()
        #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = forwardSignalToPipe
        #elseif canImport(Darwin)
            action.__sigaction_u.__sa_handler = forwardSignalToPipe
        #endif
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(number, &action, nil)
    }
}

/// The pipe `forwardSignalToPipe` writes to: made the first time `forward` reads it, before any
/// handler is installed, and never changed (a handler cannot be handed a value, so it reads this).
private let interruptPipe: (read: Int32, write: Int32)? = {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { return nil }
    return (ends[0], ends[1])
}()

/// The signal handler: async-signal-safe, it only writes one byte.
private func forwardSignalToPipe(_ number: Int32) {
    guard let end = interruptPipe?.write else { return }
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(end, &byte, 1)
}
