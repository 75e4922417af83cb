import CArgon2
import Dispatch
import Foundation
import Synchronization
import TSyncModel

/// Argon2id password hashes through libargon2, in the PHC string form (`$argon2id$v=19$m=…`), which
/// carries its own parameters and salt, so old hashes still verify after the defaults change.
public struct PasswordHasher: Sendable {
    /// Memory in KiB, iterations and lanes. The defaults are OWASP's minimum for Argon2id.
    public struct Parameters: Sendable, Equatable {
        public var memoryKiB: UInt32
        public var iterations: UInt32
        public var parallelism: UInt32

        public init(memoryKiB: UInt32 = 19_456, iterations: UInt32 = 2, parallelism: UInt32 = 1) {
            self.memoryKiB = memoryKiB
            self.iterations = iterations
            self.parallelism = parallelism
        }
    }

    public var parameters: Parameters
    private static let saltLength = 16
    private static let hashLength = 32
    /// Hashing takes tens of milliseconds of CPU and ~19 MiB of memory on purpose: it runs off the
    /// request threads, on one serial queue per core, so a burst of logins queues up instead of
    /// taking all the memory.
    private static let queues = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map {
        DispatchQueue(label: "tsync.argon2.\($0)")
    }
    private static let nextQueue = Mutex(0)

    public init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
    }

    public func hash(_ password: String) async throws(TSyncError) -> String {
        let parameters = parameters
        let result: Result<String, TSyncError> = await Self.offload { Self.hashNow(password, parameters) }
        return try result.get()
    }

    /// True when `password` matches `encoded`; false for a wrong password or a malformed hash.
    public func verify(_ password: String, against encoded: String) async -> Bool {
        await Self.offload {
            let bytes = Array(password.utf8)
            return bytes.withUnsafeBytes { raw in
                argon2id_verify(encoded, raw.baseAddress, raw.count) == ARGON2_OK.rawValue
            }
        }
    }

    private static func hashNow(_ password: String, _ parameters: Parameters) -> Result<String, TSyncError> {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<saltLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let length = argon2_encodedlen(
            parameters.iterations, parameters.memoryKiB, parameters.parallelism, UInt32(saltLength), UInt32(hashLength), Argon2_id
        )
        var encoded = [CChar](repeating: 0, count: length + 1)
        let password = Array(password.utf8)
        let status = password.withUnsafeBytes { pwd in
            salt.withUnsafeBytes { saltBytes in
                argon2id_hash_encoded(
                    parameters.iterations, parameters.memoryKiB, parameters.parallelism,
                    pwd.baseAddress, pwd.count, saltBytes.baseAddress, saltBytes.count, hashLength,
                    &encoded, encoded.count
                )
            }
        }
        guard status == ARGON2_OK.rawValue else {
            let message = argon2_error_message(status).map { String(cString: $0) } ?? "error \(status)"
            return .failure(.failure("cannot hash the password: \(message)"))
        }
        return .success(String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    private static func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let index = nextQueue.withLock { next in
                defer { next = (next + 1) % queues.count }
                return next
            }
            queues[index].async { continuation.resume(returning: work()) }
        }
    }
}
