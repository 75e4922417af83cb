import TSyncModel

/// What makes a valid account name and password, checked by `tsync user` and at login.
public enum AccountRules {
    public static let maximumNameLength = 64
    public static let minimumPasswordLength = 8
    /// Argon2 takes any length, but a megabyte of "password" is an attack, not a password.
    public static let maximumPasswordLength = 1024

    /// Names become record owners and appear in logs: ASCII letters, digits, `.`, `_`, `-` and `@`.
    /// Nothing else, so that two names a person reads as the same cannot be two accounts: no
    /// Unicode (no normalization forms or look-alikes), no zero-width or control characters, no `/`.
    /// Case is left as written but does not tell accounts apart (`canonicalName`).
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

    /// The form two names are compared in: `alice`, `Alice` and `ALICE` are one account (the
    /// allowed characters are ASCII, so lower-casing them is all a person would fold).
    public static func canonicalName(_ name: String) -> String {
        String(decoding: name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// A login's name and password within the limits: checked before anything about the login is
    /// written, so an anonymous client cannot make the server store a megabyte-long name.
    public static func checkLoginSizes(username: String, password: String) throws(TSyncError) {
        guard username.utf8.count <= maximumNameLength else {
            throw .invalidInput("the user name is longer than \(maximumNameLength) bytes, the longest an account name can be")
        }
        guard password.utf8.count <= maximumPasswordLength else {
            throw .invalidInput("the password is longer than \(maximumPasswordLength) bytes, the longest a password can be")
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
