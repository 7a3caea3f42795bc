import Foundation

/// The conversation or group an E2EE device queue belongs to: the same type as
/// ``LiveLocationScope``, so one value per chat addresses its shares and its queue.
public typealias E2EEScope = LiveLocationScope

extension LiveLocationScope {
    /// `/e2ee/conversations/{id}` or `/e2ee/groups/{id}`, the id percent-encoded.
    var e2eePath: String { "/e2ee" + path }
}

/// The E2EE device queue of SPEC §9 as thin API methods: register this device, find the
/// participants' devices, send ciphertext addressed per device, read one page of the queue.
/// The server stores ciphertext opaque; keys and MLS state are the app's. To read the queue
/// safely (the cursor saved only after the app stored the items) use ``E2EEFeed``.
///
/// ```swift
/// let e2ee = E2EEClient(client: client)
/// _ = try await e2ee.registerDevice(id: deviceID)
/// let devices = try await e2ee.devices(in: .group(groupID))
/// _ = try await e2ee.send(
///     SendE2EEMessage(senderDeviceId: deviceID, kind: "application", recipients: seal(for: devices), clientId: UUID().uuidString),
///     in: .group(groupID))
/// ```
public struct E2EEClient: Sendable {
    let client: SwitchboardClient

    /// Sends through `client` (its base URL and token).
    public init(client: SwitchboardClient) { self.client = client }

    /// Registers this device for E2EE (`POST /e2ee/devices`); registering it again is harmless.
    public func registerDevice(id deviceID: String) async throws -> E2EEDevice {
        try await client.call("POST", "/e2ee/devices", body: RegisterE2EEDevice(deviceId: deviceID), repeatable: true)
    }

    /// Forgets this device and its queue (`DELETE /e2ee/devices/{deviceId}`).
    public func unregisterDevice(id deviceID: String) async throws {
        try await client.send("DELETE", "/e2ee/devices/\(QueryEncoding.encode(deviceID))")
    }

    /// One's own registered devices (`GET /e2ee/devices`).
    public func devices() async throws -> [E2EEDevice] {
        let list: E2EEDeviceList = try await client.call("GET", "/e2ee/devices")
        return list.devices
    }

    /// Every participant's devices in `scope`, one's own included, by user, then device: the
    /// recipients to encrypt for.
    public func devices(in scope: E2EEScope) async throws -> [E2EEDevice] {
        let list: E2EEDeviceList = try await client.call("GET", scope.e2eePath + "/devices")
        return list.devices
    }

    /// Sends ciphertext addressed per recipient device (`POST /e2ee/…/messages`). With a
    /// `clientId` a repeated send answers the first one's result, so only then may a hedging
    /// transport send copies.
    public func send(_ message: SendE2EEMessage, in scope: E2EEScope) async throws -> E2EESendResult {
        try await client.call("POST", scope.e2eePath + "/messages", body: message, repeatable: message.clientId != nil)
    }

    /// One page of `deviceID`'s queue in `scope` (`GET /e2ee/…/events`): at most 100 items
    /// after `after`, at once (it never waits). Asking with `after` acknowledges every item up
    /// to it: the server deletes them, so pass only a cursor whose items are stored.
    public func events(in scope: E2EEScope, deviceID: String, after: Int64) async throws -> E2EEEventsPage {
        try await client.call(
            "GET", scope.e2eePath + "/events", query: [("deviceId", deviceID), ("after", String(after))])
    }
}
