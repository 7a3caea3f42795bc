/// A failure with a stable kind and words a user can act on: the one shape of the developer
/// tools' errors (``NetSimError``, and the demo's relay and kernel-link errors).
public struct CodedError<Code: RawRepresentable & Sendable & Hashable>: Error, Sendable, Equatable,
    CustomStringConvertible
where Code.RawValue == String {
    /// What kind of failure.
    public let code: Code
    /// The explanation.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// A failure of the network simulator: a bad profile or address, or a socket that could not be
/// set up. `code` is stable; `message` says what was wrong in words a user can act on.
public typealias NetSimError = CodedError<NetSimErrorCode>

/// The kinds of ``NetSimError``, as stable snake_case strings.
public enum NetSimErrorCode: String, Sendable {
    /// A profile name that is not one of ``NetworkProfile/all``.
    case unknownProfile = "unknown_profile"
    /// A profile with a number out of range, or an empty profile list.
    case invalidProfile = "invalid_profile"
    /// A `HOST:PORT` that is malformed or whose host is not an IPv4 address or `localhost`.
    case badAddress = "bad_address"
    /// A listen address off loopback without `allowNonLoopbackListen`.
    case nonLoopbackListen = "non_loopback_listen"
    /// The listening socket could not be bound (the port is taken, or the address is not local).
    case bindFailed = "bind_failed"
    /// `start()` on a proxy that was started or stopped before.
    case alreadyStarted = "already_started"
    /// Another system call failed.
    case systemCall = "system_call"
}
