import Foundation

/// When to mint a new APNs provider token (JWT), shared by every connection: a new one every
/// 50 minutes, never two within 20 minutes, except once right after APNs answered
/// `ExpiredProviderToken` for the current token. Many requests failing at once with the same
/// stale token cause one refresh, not a storm. Pure: time is an input.
public struct ProviderTokenClock: Sendable, Equatable {
    /// A token's useful life before it is replaced.
    public static let refreshAge: TimeInterval = 50 * 60
    /// The shortest gap between two tokens, outside the one emergency refresh.
    public static let minimumGap: TimeInterval = 20 * 60

    /// When the current token was issued (`nil` before the first).
    public private(set) var issuedAt: Date?
    /// Whether the emergency refresh was spent on the current token's gap.
    private var emergencyUsed = false
    private var forceNext = false

    public init() {}

    /// Whether a new token must be minted now (then call `minted(at:)`).
    public func needsNewToken(now: Date) -> Bool {
        guard let issuedAt else { return true }
        if forceNext { return true }
        return now.timeIntervalSince(issuedAt) >= Self.refreshAge
    }

    /// Records a freshly minted token.
    public mutating func minted(at now: Date) {
        if let issuedAt, now.timeIntervalSince(issuedAt) >= Self.minimumGap { emergencyUsed = false }
        issuedAt = now
        forceNext = false
    }

    /// APNs rejected a token issued at `tokenIssuedAt` as expired. Returns whether the next
    /// request will carry a new token.
    @discardableResult
    public mutating func rejectedAsExpired(tokenIssuedAt: Date, now: Date) -> Bool {
        guard let issuedAt, tokenIssuedAt == issuedAt else {
            // Already replaced: the request that failed carried an older token.
            return forceNext || issuedAt != nil
        }
        if forceNext { return true }
        if now.timeIntervalSince(issuedAt) >= Self.minimumGap {
            forceNext = true
            return true
        }
        guard !emergencyUsed else { return false }
        emergencyUsed = true
        forceNext = true
        return true
    }
}
