import Synchronization

/// The time one push attempt has, and what it asks of every HTTP/2 request made for it: set by
/// the push dispatcher around a channel's send (``withValue(_:)``) and read by
/// ``HTTP2Client/send(_:)``, so each channel's own transport keeps to it without taking it as
/// a parameter.
///
/// - No request of the attempt waits or runs past ``deadline`` (a ring's is the end of its ring
///   window): the request's own timeout is cut to it.
/// - A request that could not go out at once because the connection was down (the reconnect
///   gate held it after a failure) is not sent when the gate lets requests through again (a
///   probe, or the connection back): it ends with ``HTTP2ClientError/heldForConnection`` and the
///   window remembers it (``wasHeldBack``), so the dispatcher asks again whether the call still
///   rings before it sends. A push held through an outage would otherwise ring for a call
///   answered or cancelled meanwhile.
///
/// Requests that serve every attempt (an auth token's fetch) run outside any window.
public final class RequestWindow: Sendable {
    /// The window of the attempt the current task makes, if any.
    @TaskLocal public static var current: RequestWindow?

    /// No request of this attempt waits or runs past it.
    public let deadline: ContinuousClock.Instant
    private let heldBack = Atomic<Bool>(false)

    public init(deadline: ContinuousClock.Instant) {
        self.deadline = deadline
    }

    /// Whether a request of this attempt was handed back unsent after waiting for a connection.
    public var wasHeldBack: Bool { heldBack.load(ordering: .acquiring) }

    func noteHeldBack() { heldBack.store(true, ordering: .releasing) }

    /// Runs `body` with this window as the current one.
    public func withValue<T>(_ body: () async throws -> T) async rethrows -> T {
        try await Self.$current.withValue(self, operation: body)
    }

    /// Runs `body` outside any window (requests shared by many attempts).
    public static func outside<T>(_ body: () async throws -> T) async rethrows -> T {
        try await $current.withValue(nil, operation: body)
    }
}
