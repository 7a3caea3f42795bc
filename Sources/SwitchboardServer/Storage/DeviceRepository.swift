import Foundation

/// A device a ring can reach: its push token, bound to a live session.
public struct PushTarget: Sendable, Equatable {
    public let deviceID: String
    public let token: String
    /// `sandbox` or `production`, as the app reported it.
    public let environment: String
}

/// What `POST /voip/devices` binds: an installation's token, to the session that sent it.
public struct DeviceRegistration: Sendable, Equatable {
    public let deviceID: String
    public let userID: String
    public let sessionID: String
    /// The push channel (`ios-voip` for PushKit tokens).
    public let platform: String
    public let token: String
    public let environment: String
}

/// Push devices: each installation's token, bound to the session that registered it (logout
/// unbinds it). The services' only way to the devices; SQLite implements it today
/// (``SQLDeviceRepository``), PostgreSQL next, and one contract suite tests every
/// implementation. It works inside the transaction or snapshot it came from.
public protocol DeviceRepository {
    /// Binds `device` (or binds it again: to a new user, session, token or environment), and
    /// clears its doubts. A token belongs to one installation: another device holding it on the
    /// same platform is removed.
    func register(_ device: DeviceRegistration, at timestamp: String) throws
    /// Removes the user's device; false when the user has none by that id.
    func remove(deviceID: String, of userID: String) throws -> Bool
    /// Removes every device bound to the session (it ended).
    func removeAll(boundTo sessionID: String) throws
    /// The user's devices on `platform` that are bound to a live session.
    func targets(of userID: String, platform: String) throws -> [PushTarget]
    /// Whether `token` is still one of the user's devices, bound to a live session.
    func isLive(token: String, of userID: String) throws -> Bool
    /// The push service said the token is gone (APNs 410, `BadDeviceToken` for good): removes it.
    func forget(token: String) throws
    /// The push service doubted the token (a possible environment or topic mismatch): counts
    /// the doubt, and removes the token at the second one.
    func doubt(token: String) throws
}
