import Foundation

/// A device a push can reach on one channel: its token there, bound to a live session.
public struct PushTarget: Sendable, Equatable {
    public let deviceID: String
    public let token: String
    /// `sandbox` or `production` for APNs tokens, as the app reported it; empty elsewhere.
    public let environment: String
    /// `ios-voip` only: the key its pushes are encrypted with, as stored (sealed).
    public var payloadKey: StoredPayloadKey? = nil

    package init(deviceID: String, token: String, environment: String, payloadKey: StoredPayloadKey? = nil) {
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.payloadKey = payloadKey
    }
}

/// One installation and the tokens it registered, as routing sees it.
public struct PushDevice: Sendable, Equatable {
    public let deviceID: String
    /// `ios` or `android`.
    public let platform: String
    /// The Android maker as the app reported it (`huawei`, `xiaomi`, …), when it did.
    public let brand: String?
    /// The session its tokens are bound to.
    public let sessionID: String
    /// The device's token per channel (`ios-voip`, `fcm`, …).
    public let tokens: [String: PushTarget]
    /// Its language (a BCP 47 tag), as the app registered it, when it did.
    public let locale: String?

    package init(
        deviceID: String, platform: String, brand: String? = nil, sessionID: String, tokens: [String: PushTarget],
        locale: String? = nil
    ) {
        self.locale = locale
        self.deviceID = deviceID
        self.platform = platform
        self.brand = brand
        self.sessionID = sessionID
        self.tokens = tokens
    }
}

/// Why a registration was refused: the installation or the token belongs to another user's
/// live session. A device or token moves to another user only through the installation's own
/// registration after its owner's session ended.
public enum DeviceRegistrationConflict: Error, Sendable, Equatable {
    case deviceIDTaken
    case tokenTaken(channel: String)
}

/// One token an installation registers: bound to the session that sent it.
public struct DeviceRegistration: Sendable, Equatable {
    public let deviceID: String
    public let userID: String
    public let sessionID: String
    /// The token kind, which is the channel that sends to it (`ios-voip`, `ios-alert`, `fcm`,
    /// `huawei`, `xiaomi`, `oppo`, `vivo`).
    public let channel: String
    /// `ios` or `android`.
    public let platform: String
    public let brand: String?
    public let token: String
    /// `sandbox` or `production` for APNs tokens; empty for the other channels.
    public let environment: String
    /// `ios-voip` only: the key its pushes are encrypted with, sealed; nil: plain pushes (a
    /// registration without one clears the one before).
    public let payloadKey: StoredPayloadKey?
    /// The installation's language (BCP 47), for every one of its tokens; nil keeps the one it had.
    public let locale: String?

    public init(
        deviceID: String, userID: String, sessionID: String, channel: String, platform: String, brand: String? = nil,
        token: String,
        environment: String, payloadKey: StoredPayloadKey? = nil, locale: String? = nil
    ) {
        self.locale = locale
        self.payloadKey = payloadKey
        self.deviceID = deviceID
        self.userID = userID
        self.sessionID = sessionID
        self.channel = channel
        self.platform = platform
        self.brand = brand
        self.token = token
        self.environment = environment
    }
}

/// Push devices: each installation's tokens (one per channel), bound to the session that
/// registered them (logout unbinds them). The services' only way to the devices; one SQL
/// implementation runs on SQLite and PostgreSQL (``SQLDeviceRepository``), and one contract
/// suite tests it on both. It works inside the transaction or snapshot it came from.
public protocol DeviceRepository {
    /// Binds the token (or binds it again: to a new user, session, token or environment), and
    /// clears its doubts; the device's tokens on other channels stay. A token belongs to one
    /// installation: another device holding it on the same channel is a stale installation
    /// (the app was reinstalled) and goes, with all its tokens.
    func register(_ token: DeviceRegistration, at timestamp: String) throws
    /// Removes the device's tokens on channels not in `channels` (a device that says which
    /// tokens it has now).
    func keepOnly(channels: Set<String>, ofDevice deviceID: String, of userID: String) throws
    /// Removes the user's device with all its tokens; false when the user has none by that id.
    func remove(deviceID: String, of userID: String) throws -> Bool
    /// Removes the device's token on `channel` only; false when the user has none there.
    func remove(deviceID: String, channel: String, of userID: String) throws -> Bool
    /// Removes every token bound to the session (it ended).
    func removeAll(boundTo sessionID: String) throws
    /// The user's tokens on `channel` that are bound to a live session.
    func targets(of userID: String, channel: String) throws -> [PushTarget]
    /// The user's devices with their tokens bound to a live session, oldest first.
    func devices(of userID: String) throws -> [PushDevice]
    /// The language the user's installation registered (BCP 47), if it did.
    func locale(ofDevice deviceID: String, of userID: String) throws -> String?
    /// Whether `token` on `channel` is still one of the user's, bound to a live session.
    func isLive(token: String, channel: String, of userID: String) throws -> Bool
    /// The id of the payload key the user's `token` on `channel` has now; nil without one.
    func payloadKeyID(token: String, channel: String, of userID: String) throws -> String?
    /// Notes what a push service said of the user's token: a delivery (`failure` nil), or a
    /// failure and its reason, at `timestamp`.
    func noteOutcome(token: String, channel: String, of userID: String, failure: String?, at timestamp: String) throws
    /// Removes every token its app has not registered again since `timestamp`; returns how many.
    func removeStale(registeredBefore timestamp: String) throws -> Int
    /// Every token of the user's installations, bound or not, with what its service last said.
    func health(of userID: String) throws -> [PushTokenHealth]
    /// The push service said the token is gone (APNs 410, FCM UNREGISTERED): removes it.
    func forget(token: String, channel: String) throws
    /// The push service doubted the token (a possible environment or topic mismatch): counts
    /// the doubt, and removes the token at the second one.
    func doubt(token: String, channel: String) throws
}

/// A device's payload key as the store keeps it: its id in the clear, its 32 bytes encrypted
/// under the server's `dataEncryptionKey` (nonce ‖ ciphertext ‖ tag, base64).
public struct StoredPayloadKey: Sendable, Equatable {
    public let id: String
    public let sealed: String

    public init(id: String, sealed: String) {
        self.id = id
        self.sealed = sealed
    }
}

/// One token of an installation as the push services left it.
public struct PushTokenHealth: Sendable, Equatable {
    public let deviceID: String
    public let channel: String
    public let platform: String
    public let brand: String?
    public let locale: String?
    public let token: String
    /// When its app last registered it.
    public let registeredAt: String
    /// Whether the session that registered it is still signed in.
    public let bound: Bool
    public let lastSuccessAt: String?
    public let lastFailureAt: String?
    public let lastFailureReason: String?
}
