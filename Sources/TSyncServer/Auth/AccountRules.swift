import TSyncModel

/// What makes a valid account name and password, checked by `tsync user` and at login.
public enum AccountRules {
    public static let maximumNameLength = 64
    public static let minimumPasswordLength = 8
    /// Argon2 takes any length, but a megabyte of "password" is an attack, not a password.
    public static let maximumPasswordLength = 1024

    /// Names become record owners and appear in logs: letters, digits, `.`, `_`, `-` and `@`.
    public static func validateName(_ name: String) throws(TSyncError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || [UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@")].contains(byte)
        }
        guard !name.isEmpty, allowed, name.utf8.count <= maximumNameLength else {
            throw .invalidInput(
                "invalid account name \(Identifiers.quoted(name)): use 1 to \(maximumNameLength) letters, digits, '.', '_', '-' or '@'"
            )
        }
    }

    public static func validatePassword(_ password: String) throws(TSyncError) {
        guard password.count >= minimumPasswordLength else {
            throw .invalidInput("the password is too short: use at least \(minimumPasswordLength) characters")
        }
        guard password.utf8.count <= maximumPasswordLength else {
            throw .invalidInput("the password is too long: use at most \(maximumPasswordLength) bytes")
        }
    }
}
