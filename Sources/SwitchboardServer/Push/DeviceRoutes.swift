import Foundation
import SwitchboardHTTP
import SwitchboardPush
import SwitchboardWire
import SwitchboardPushCore

/// A device's push tokens, bound to the session that registered them (logout unbinds them):
/// `POST /push/devices` (every token an installation has, one per channel) and
/// `DELETE /push/devices/{deviceId}`; `POST /voip/devices` and `DELETE /voip/devices/{deviceId}`
/// are the same for an iPhone's PushKit VoIP token alone (the DELETE removes only that token).
struct DeviceRoutes {
    let store: ServerStore
    let authenticator: Authenticator
    /// Keeps the devices' VoIP payload keys encrypted (off without `dataEncryptionKey`).
    var payloadKeys = PayloadKeyVault(secret: nil)

    /// The channel of PushKit VoIP tokens.
    static let voipPlatform = APNsVoIPChannel.channelName

    func register(in router: inout Router) {
        let store = self.store, payloadKeys = self.payloadKeys
        router.add(
            "POST", "/push/devices",
            authenticator.require { context, principal in
                let device = try Self.validate(try context.decode(RegisterPushDevice.self))
                let info = try await Self.save(
                    device, keepingOthers: false, for: principal, in: store, keys: payloadKeys)
                context.logger.info(
                    "push device registered",
                    [
                        "device.id": .string(device.deviceID), "platform": .string(device.platform),
                        "channels": .string(device.tokens.map(\.channel).joined(separator: ",")),
                    ])
                return .json(info)
            })
        router.add(
            "DELETE", "/push/devices/{deviceId}",
            authenticator.require { context, principal in
                try await Self.remove(context.parameter("deviceId"), of: principal, in: store)
            })
        router.add(
            "POST", "/voip/devices",
            authenticator.require { context, principal in
                let request = try context.decode(RegisterVoIPDevice.self)
                let (deviceID, token, environment) = try Self.validate(request)
                let payloadKey = try request.payloadKey.map { registration throws(APIError) in
                    try PayloadKeyVault.validate(registration, field: "payloadKey")
                }
                let device = ValidDevice(
                    deviceID: deviceID, platform: "ios", brand: nil,
                    locale: try Self.validLocale(request.locale),
                    tokens: [
                        ValidToken(
                            channel: Self.voipPlatform, token: token, environment: environment, payloadKey: payloadKey)
                    ])
                let info = try await Self.save(
                    device, keepingOthers: true, for: principal, in: store, keys: payloadKeys)
                context.logger.info(
                    "voip device registered",
                    [
                        "device.id": .string(deviceID), "token.suffix": .string(Self.suffix(token)),
                        "environment": .string(environment),
                        "payload_key.id": .string(payloadKey?.id ?? ""),
                    ])
                return .json(
                    VoIPDevice(
                        deviceId: deviceID, environment: PushEnvironment(rawValue: environment),
                        tokenSuffix: Self.suffix(token), payloadKeyId: payloadKey?.id,
                        updatedAt: info.updatedAt))
            })
        router.add(
            "DELETE", "/voip/devices/{deviceId}",
            authenticator.require { context, principal in
                // PushKit invalidated the VoIP token: the installation's other tokens stay.
                let deviceID = context.parameter("deviceId").lowercased(), userID = principal.user.id
                let removed = try await store.write {
                    try $0.devices.remove(deviceID: deviceID, channel: Self.voipPlatform, of: userID)
                }
                guard removed else { throw APIError.notFound("no such device") }
                return .noContent
            })
    }

    struct ValidToken: Sendable {
        let channel: String
        let token: String
        /// Empty for channels without environments.
        let environment: String
        /// `ios-voip` only: the key the device's VoIP pushes are encrypted with.
        var payloadKey: PayloadKey? = nil
    }

    struct ValidDevice: Sendable {
        let deviceID: String
        let platform: String
        let brand: String?
        /// A BCP 47 tag as sent; nil keeps the installation's.
        var locale: String? = nil
        let tokens: [ValidToken]
    }

    /// Binds the device's tokens; without `keepingOthers`, the tokens it no longer lists go.
    private static func save(
        _ device: ValidDevice, keepingOthers: Bool, for principal: Principal, in store: ServerStore,
        keys: PayloadKeyVault
    ) async throws -> PushDeviceInfo {
        let userID = principal.user.id, sessionID = principal.sessionID
        // Sealed before the write: the store only ever sees the encrypted form.
        var sealing: [String: StoredPayloadKey] = [:]
        for token in device.tokens {
            if let key = token.payloadKey {
                sealing[token.channel] = try keys.seal(key, owner: PayloadKeyVault.owner(device: device.deviceID))
            }
        }
        let sealed = sealing
        do {
            return try await write(
                device, sealed: sealed, keepingOthers: keepingOthers, userID: userID, sessionID: sessionID, in: store)
        } catch DeviceRegistrationConflict.deviceIDTaken {
            throw APIError(
                .deviceIdTaken, "another account's signed-in session registered this device id", field: "deviceId")
        } catch DeviceRegistrationConflict.tokenTaken(let channel) {
            throw APIError(
                .pushTokenTaken, "another account's signed-in session registered this \(channel) token",
                field: keepingOthers ? "pushToken" : "tokens")
        }
    }

    private static func write(
        _ device: ValidDevice, sealed: [String: StoredPayloadKey], keepingOthers: Bool, userID: String,
        sessionID: String, in store: ServerStore
    ) async throws -> PushDeviceInfo {
        try await store.write { transaction -> PushDeviceInfo in
            for token in device.tokens {
                try transaction.devices.register(
                    DeviceRegistration(
                        deviceID: device.deviceID, userID: userID, sessionID: sessionID, channel: token.channel,
                        platform: device.platform,
                        brand: device.brand, token: token.token, environment: token.environment,
                        payloadKey: sealed[token.channel], locale: device.locale),
                    at: transaction.timestamp)
            }
            if !keepingOthers {
                try transaction.devices.keepOnly(
                    channels: Set(device.tokens.map(\.channel)), ofDevice: device.deviceID, of: userID)
            }
            return PushDeviceInfo(
                deviceId: device.deviceID, platform: DevicePlatform(rawValue: device.platform), brand: device.brand,
                tokens: device.tokens.map {
                    PushTokenInfo(
                        channel: PushChannelName(rawValue: $0.channel),
                        environment: $0.environment.isEmpty ? nil : PushEnvironment(rawValue: $0.environment),
                        tokenSuffix: suffix($0.token),
                        payloadKeyId: $0.payloadKey?.id)
                },
                updatedAt: transaction.timestamp,
                // The one it named, else the one it kept (read only then).
                locale: try device.locale ?? transaction.devices.locale(ofDevice: device.deviceID, of: userID))
        }
    }

    private static func remove(
        _ deviceID: String, of principal: Principal, in store: ServerStore
    ) async throws -> HTTPResponse {
        let deviceID = deviceID.lowercased(), userID = principal.user.id
        let removed = try await store.write { try $0.devices.remove(deviceID: deviceID, of: userID) }
        guard removed else { throw APIError.notFound("no such device") }
        return .noContent
    }

    /// A UUID device id, an even-length hex token of 32 to 200 bytes, a known environment.
    static func validate(_ request: RegisterVoIPDevice) throws(APIError) -> (String, String, String) {
        let deviceID = try validDeviceID(request.deviceId)
        let token = try apnsToken(request.pushToken, field: "pushToken")
        let environment = try apnsEnvironment(request.environment, field: "environment")
        return (deviceID, token, environment)
    }

    /// Every token checked against its channel's rules, the platform and brand against each other.
    static func validate(_ request: RegisterPushDevice) throws(APIError) -> ValidDevice {
        let deviceID = try validDeviceID(request.deviceId)
        guard request.platform.isKnown else {
            throw APIError.validation("'platform' must be 'ios' or 'android'", field: "platform")
        }
        var brand: String?
        if let given = request.brand {
            guard request.platform == .android else {
                throw APIError.validation("'brand' is for Android devices only", field: "brand")
            }
            let lowered = given.lowercased()
            guard (1...32).contains(lowered.utf8.count),
                lowered.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95 })
            else {
                throw APIError.validation(
                    "'brand' must be 1 to 32 letters, digits, '-' or '_' (the phone's maker, e.g. huawei)",
                    field: "brand")
            }
            brand = lowered
        }
        guard !request.tokens.isEmpty else {
            throw APIError.validation(
                "'tokens' must hold at least one token (DELETE /push/devices/{deviceId} removes a device)",
                field: "tokens")
        }
        var tokens: [ValidToken] = []
        for (channel, entry) in request.tokens.sorted(by: { $0.key < $1.key }) {
            let field = "tokens.\(channel.prefix(32))"
            guard PushRouting.channels.contains(channel) else {
                throw APIError.validation(
                    "'\(field)': the channel must be one of \(PushRouting.channels.sorted().joined(separator: ", "))",
                    field: field)
            }
            guard PushRouting.platform(of: channel) == request.platform.rawValue else {
                throw APIError.validation(
                    "'\(field)': \(channel) is a token kind of \(PushRouting.platform(of: channel)), not \(request.platform)",
                    field: field)
            }
            if entry.payloadKey != nil, channel != voipPlatform {
                throw APIError.validation(
                    "'\(field).payloadKey' is for ios-voip tokens only (VoIP pushes are what it encrypts)",
                    field: "\(field).payloadKey")
            }
            if channel.hasPrefix("ios-") {
                guard let environment = entry.environment else {
                    throw APIError.validation(
                        "'\(field).environment' is required for APNs tokens: 'sandbox' or 'production'",
                        field: "\(field).environment")
                }
                tokens.append(
                    ValidToken(
                        channel: channel, token: try apnsToken(entry.token, field: "\(field).token"),
                        environment: try apnsEnvironment(environment, field: "\(field).environment"),
                        payloadKey: try entry.payloadKey.map { registration throws(APIError) in
                            try PayloadKeyVault.validate(registration, field: "\(field).payloadKey")
                        }))
            } else {
                guard entry.environment == nil else {
                    throw APIError.validation(
                        "'\(field).environment' is for APNs tokens only", field: "\(field).environment")
                }
                tokens.append(
                    ValidToken(
                        channel: channel, token: try androidToken(entry.token, field: "\(field).token"), environment: ""
                    ))
            }
        }
        return ValidDevice(
            deviceID: deviceID, platform: request.platform.rawValue, brand: brand,
            locale: try validLocale(request.locale), tokens: tokens)
    }

    /// A BCP 47 language tag, as a device's settings give it (`en`, `zh-Hant-TW`, `pt_BR`): a
    /// language of 2 to 8 letters, then subtags of 1 to 8 letters or digits after `-` or `_`;
    /// 35 characters at most. Kept as sent; the text is chosen from it when a push is built.
    static func validLocale(_ text: String?) throws(APIError) -> String? {
        guard let text else { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        let isLetter = { (byte: UInt8) in (65...90).contains(byte) || (97...122).contains(byte) }
        guard text.utf8.count <= 35, let language = parts.first, (2...8).contains(language.utf8.count),
            language.utf8.allSatisfy(isLetter),
            parts.dropFirst().allSatisfy({
                (1...8).contains($0.utf8.count) && $0.utf8.allSatisfy { isLetter($0) || (48...57).contains($0) }
            })
        else {
            throw APIError.validation(
                "'locale' must be a BCP 47 language tag like 'en', 'de-CH' or 'zh-Hant-TW' (at most 35 characters)",
                field: "locale")
        }
        return text
    }

    private static func validDeviceID(_ text: String) throws(APIError) -> String {
        guard UUID(uuidString: text) != nil else {
            throw APIError.validation("'deviceId' must be a UUID", field: "deviceId")
        }
        return text.lowercased()
    }

    /// An APNs device token: 32 to 200 bytes as hex.
    private static func apnsToken(_ text: String, field: String) throws(APIError) -> String {
        let token = text.lowercased()
        guard (64...400).contains(token.utf8.count), token.utf8.count % 2 == 0,
            token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw APIError.validation("'\(field)' must be the device token as hex (64 to 400 hex digits)", field: field)
        }
        return token
    }

    private static func apnsEnvironment(_ environment: PushEnvironment, field: String) throws(APIError) -> String {
        guard environment.isKnown else {
            throw APIError.validation("'\(field)' must be 'sandbox' or 'production'", field: field)
        }
        return environment.rawValue
    }

    /// An FCM or vendor token, kept as sent: 1 to 4096 printable ASCII characters, no spaces,
    /// quotes or backslashes (FCM's are about 150, the vendors' shorter).
    private static func androidToken(_ text: String, field: String) throws(APIError) -> String {
        guard (1...4096).contains(text.utf8.count),
            text.utf8.allSatisfy({ (33...126).contains($0) && $0 != 34 && $0 != 39 && $0 != 92 })
        else {
            throw APIError.validation(
                "'\(field)' must be the token as the push service gave it: 1 to 4096 printable characters, no spaces or quotes",
                field: field)
        }
        return text
    }

    /// What logs and answers show of a token.
    static func suffix(_ token: String) -> String { String(token.suffix(8)) }
}
