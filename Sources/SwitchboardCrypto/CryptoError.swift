/// A failure in SwitchboardCrypto: OpenSSL refused an operation, or the input (a stored password
/// hash, for example) was malformed or asked for parameters this module will not run.
///
/// Errors from OpenSSL carry OpenSSL's own error strings in ``detail``, so a log line is enough:
/// ```swift
/// do {
///     let ok = try hasher.verify(password, against: stored)
/// } catch let error as CryptoError {
///     logger.error("password check failed: \(error)")   // "PasswordHasher.verify failed (malformed_input): …"
/// }
/// ```
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// The stable category of a crypto failure.
    public enum Code: String, Sendable, Hashable {
        /// OpenSSL reported a failure; ``CryptoError/detail`` holds its error queue.
        case library
        /// The input could not be parsed (a malformed stored hash, bad base64).
        case malformedInput = "malformed_input"
        /// The input was well-formed but asked for parameters outside this module's limits
        /// (for example scrypt with more than 256 MiB of memory).
        case unsupportedParameters = "unsupported_parameters"
    }

    /// The stable category of the failure.
    public let code: Code
    /// What was being attempted, such as `"EVP_PBE_scrypt"` or `"PasswordHasher.verify"`.
    public let operation: String
    /// Why it failed: OpenSSL's error strings for ``Code/library``, otherwise a short explanation.
    public let detail: String

    /// Creates an error; SwitchboardCrypto builds these itself, tests and doubles may too.
    public init(code: Code, operation: String, detail: String) {
        self.code = code
        self.operation = operation
        self.detail = detail
    }

    /// `"<operation> failed (<code>): <detail>"`.
    public var description: String {
        "\(operation) failed (\(code.rawValue)): \(detail)"
    }
}
