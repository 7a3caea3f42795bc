import Foundation
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardWire

/// The push gateway's app servers (SPEC §8): registered with the admin key, each with one or
/// more Ed25519 public keys (several, so a key can be rotated without a gap), and the signed
/// requests they send (``GatewaySignature``).
struct GatewayRoutes {
    let store: ServerStore
    let adminKey: String
    let service: GatewayService
    /// Apps' own push settings: sealed under this, over the server's configuration, and the
    /// directory told when they change.
    let vault: PayloadKeyVault
    let directory: GatewayChannelDirectory
    /// Whether version 1 signatures (without the app and key ids) are still taken.
    var acceptSignatureV1 = false

    struct PushSettingsRequest: Decodable {
        /// Validated member by member from the request's JSON (strings and integers).
        let settings: [String: PushSettingValue]
    }

    /// A JSON string or integer, as the server's configuration file takes them.
    enum PushSettingValue: Decodable {
        case text(String), integer(Int)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .text(text)
                return
            }
            self = .integer(try container.decode(Int.self))
        }
        var json: Any {
            switch self {
            case .text(let text): text
            case .integer(let value): value
            }
        }
    }

    /// Which push credentials an app's jobs use, by channel: `app` (its own settings) or `server`.
    struct PushSettingsView: Encodable {
        let appId: String
        /// The settings it brought (names only: values may be secrets).
        let settings: [String]
        let channels: [String: String]

        init(app: String, settings: GatewayPushSettings?) {
            appId = app
            self.settings = settings.map { $0.values.keys.sorted() } ?? []
            let families = settings?.families ?? []
            var channels: [String: String] = [:]
            for family in GatewayPushSettings.families {
                for channel in GatewayPushSettings.channelsOfFamily[family] ?? [] {
                    channels[channel] = families.contains(family) ? "app" : "server"
                }
            }
            self.channels = channels
        }
    }

    struct NewKey: Decodable {
        let keyId: String
        let publicKey: String
    }

    struct NewApp: Decodable {
        let id: String
        let name: String
        let keys: [NewKey]
    }

    struct KeyView: Encodable {
        let keyId: String
        let publicKey: String
        let createdAt: String
    }

    struct AppView: Encodable {
        let id: String
        let name: String
        let createdAt: String
        let keys: [KeyView]

        init(_ app: GatewayApp) {
            id = app.id
            name = app.name
            createdAt = Timestamp.iso8601(CallStore.date(app.createdAtMS))
            keys = app.keys.map {
                KeyView(
                    keyId: $0.keyID, publicKey: $0.publicKey,
                    createdAt: Timestamp.iso8601(CallStore.date($0.createdAtMS)))
            }
        }
    }

    /// What a signed request learns about itself: the app and the key it was signed with.
    struct Caller: Encodable {
        let appId: String
        let name: String
        let keyId: String
    }

    func register(in router: inout Router) {
        let store = self.store, adminKey = self.adminKey
        router.add("POST", "/admin/gateway/apps") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let request = try context.decode(NewApp.self)
            let id = try Self.identifier(request.id, field: "id")
            let name = request.name.trimmingCharacters(in: Self.blank)
            guard (1...100).contains(name.unicodeScalars.count) else {
                throw APIError.validation("'name' must be 1 to 100 characters, not only spaces", field: "name")
            }
            guard !request.keys.isEmpty, request.keys.count <= 8 else {
                throw APIError.validation("'keys' must hold 1 to 8 keys", field: "keys")
            }
            let now = CallStore.milliseconds(store.environment.now())
            var keys: [GatewayApp.Key] = []
            for (index, key) in request.keys.enumerated() {
                let valid = try Self.key(key, field: "keys[\(index)]", at: now)
                guard !keys.contains(where: { $0.keyID == valid.keyID }) else {
                    throw APIError(
                        .gatewayKeyExists, "key '\(valid.keyID)' is listed twice", field: "keys[\(index)].keyId")
                }
                keys.append(valid)
            }
            let app = GatewayApp(id: id, name: name, createdAtMS: now, keys: keys)
            guard try await store.write({ try $0.gateway.create(app) }) else {
                throw APIError(.gatewayAppExists, "an app '\(id)' is registered already", field: "id")
            }
            return .json(AppView(app), status: 201)
        }
        router.add("GET", "/admin/gateway/apps") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let apps = try await store.snapshot { try $0.gateway.apps() }
            return .json(["apps": apps.map(AppView.init)])
        }
        router.add("GET", "/admin/gateway/apps/{appId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("appId")
            guard let app = try await store.snapshot({ try $0.gateway.app(id: id) }) else {
                throw APIError.notFound("no app '\(id)'")
            }
            return .json(AppView(app))
        }
        router.add("POST", "/admin/gateway/apps/{appId}/keys") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("appId")
            let key = try Self.key(
                try context.decode(NewKey.self), field: nil, at: CallStore.milliseconds(store.environment.now()))
            let app = try await store.write { transaction -> GatewayApp? in
                guard try transaction.gateway.app(id: id) != nil else { return nil }
                guard try transaction.gateway.addKey(key, to: id) else {
                    throw APIError(.gatewayKeyExists, "the app has a key '\(key.keyID)' already", field: "keyId")
                }
                return try transaction.gateway.app(id: id)
            }
            guard let app else { throw APIError.notFound("no app '\(id)'") }
            return .json(AppView(app), status: 201)
        }
        router.add("DELETE", "/admin/gateway/apps/{appId}/keys/{keyId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("appId"), keyID = context.parameter("keyId")
            guard try await store.write({ try $0.gateway.removeKey(keyID, of: id) }) else {
                throw APIError.notFound("no key '\(keyID)' of app '\(id)'")
            }
            return .noContent
        }
        let vault = self.vault, directory = self.directory
        router.add("PUT", "/admin/gateway/apps/{appId}/push") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("appId")
            let request = try context.decode(PushSettingsRequest.self)
            guard vault.isEnabled else { throw PayloadKeyVault.disabled }
            let settings = try GatewayPushSettings.validate(request.settings.mapValues(\.json))
            let sealed = try settings.sealed(for: id, vault: vault)
            guard try await store.write({ try $0.gateway.setPushSettings(sealed, of: id) }) else {
                throw APIError.notFound("no app '\(id)'")
            }
            directory.invalidate(app: id)
            context.logger.info(
                "gateway app push settings set",
                ["app": .string(id), "settings": .string(settings.values.keys.sorted().joined(separator: ","))])
            return .json(PushSettingsView(app: id, settings: settings))
        }
        router.add("GET", "/admin/gateway/apps/{appId}/push") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("appId")
            let found = try await store.snapshot { snapshot -> (exists: Bool, sealed: String?) in
                (try snapshot.gateway.app(id: id) != nil, try snapshot.gateway.pushSettings(of: id))
            }
            guard found.exists else { throw APIError.notFound("no app '\(id)'") }
            guard let sealed = found.sealed else { return .json(PushSettingsView(app: id, settings: nil)) }
            guard let settings = GatewayPushSettings.opened(sealed, for: id, vault: vault) else {
                throw APIError(
                    .dataEncryptionDisabled,
                    "the app's push settings cannot be opened with this server's dataEncryptionKey: set them again")
            }
            return .json(PushSettingsView(app: id, settings: settings))
        }
        router.add("DELETE", "/admin/gateway/apps/{appId}/push") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("appId")
            guard try await store.write({ try $0.gateway.setPushSettings(nil, of: id) }) else {
                throw APIError.notFound("no app '\(id)'")
            }
            directory.invalidate(app: id)
            return .noContent
        }
        router.add(
            "GET", "/gateway/v1/app",
            signed { _, app, keyID in
                .json(Caller(appId: app.id, name: app.name, keyId: keyID))
            })
        let service = self.service
        router.add(
            "POST", "/gateway/v1/devices",
            signed { context, app, _ in
                .json(try await service.register(try context.decode(GatewayService.Device.self), app: app.id))
            })
        router.add(
            "DELETE", "/gateway/v1/users/{userId}/devices/{deviceId}",
            signed { context, app, _ in
                try await service.removeDevice(
                    app: app.id, user: context.parameter("userId"), deviceID: context.parameter("deviceId"))
                return .noContent
            })
        router.add(
            "GET", "/gateway/v1/users/{userId}/push-preferences",
            signed { context, app, _ in
                .json(try await service.preferences(app: app.id, user: context.parameter("userId")))
            })
        router.add(
            "PUT", "/gateway/v1/users/{userId}/push-preferences",
            signed { context, app, _ in
                .json(
                    try await service.setPreferences(
                        try context.decode(PushPreferences.self), app: app.id, user: context.parameter("userId")))
            })
        router.add(
            "POST", "/gateway/v1/signals",
            signed { context, app, _ in
                let (status, isNew) = try await service.send(
                    try context.decode(GatewayService.Signal.self), body: context.request.body, app: app.id)
                return .json(status, status: isNew ? 202 : 200)
            })
        router.add(
            "POST", "/gateway/v1/signals/{callId}/cancel",
            signed { context, app, _ in
                .json(try await service.cancel(app: app.id, call: context.parameter("callId")))
            })
        router.add(
            "GET", "/gateway/v1/signals/{callId}",
            signed { context, app, _ in
                .json(try await service.status(app: app.id, call: context.parameter("callId")))
            })
    }

    /// A handler that runs only for a request its app signed (``GatewaySignature``); refused
    /// otherwise with 401 and the reason's code, or 413 for a body over 64 KiB.
    func signed(
        _ handler: @escaping @Sendable (RequestContext, GatewayApp, _ keyID: String) async throws -> HTTPResponse
    ) -> @Sendable (RequestContext) async throws -> HTTPResponse {
        let store = self.store, acceptSignatureV1 = self.acceptSignatureV1
        return { context in
            let request = context.request
            guard request.body.count <= GatewaySignature.maxBodyBytes else {
                throw APIError(.gatewayBodyTooLarge, "a gateway request body is at most 64 KiB")
            }
            func header(_ name: String) throws(APIError) -> String {
                guard let value = request.headers[name], !value.isEmpty else {
                    throw APIError(
                        .gatewayUnsigned, "the \(name) header is required (a signed gateway request)", field: name)
                }
                return value
            }
            let appID = try header(GatewaySignature.appHeader), keyID = try header(GatewaySignature.keyHeader)
            let stamp = try header(GatewaySignature.timestampHeader),
                signatureText = try header(GatewaySignature.signatureHeader)
            guard let timestamp = GatewaySignature.seconds(stamp) else {
                throw APIError(
                    .gatewayStaleTimestamp, "\(GatewaySignature.timestampHeader) must be whole seconds since 1970")
            }
            guard GatewaySignature.isFresh(timestamp, now: store.environment.now()) else {
                throw APIError(
                    .gatewayStaleTimestamp,
                    "the request was signed more than \(GatewaySignature.window) s from the server's clock (\(Int64(store.environment.now().timeIntervalSince1970)))"
                )
            }
            guard let signature = Base64URL.decode(signatureText), signature.count == 64 else {
                throw APIError(
                    .gatewayBadSignature, "\(GatewaySignature.signatureHeader) must be 64 bytes as base64url")
            }
            guard let app = try await store.snapshot({ try $0.gateway.app(id: appID) }),
                let key = app.keys.first(where: { $0.keyID == keyID }),
                let publicKey = Base64URL.decode(key.publicKey).flatMap({ try? Ed25519PublicKey(rawBytes: $0) })
            else { throw APIError(.gatewayUnknownKey, "no app '\(appID)' with a key '\(keyID)'") }
            let message: [UInt8]
            switch request.headers[GatewaySignature.versionHeader] {
            case "2":
                message = GatewaySignature.canonical(
                    app: appID, key: keyID, method: request.method, target: request.head.target, timestamp: stamp,
                    body: request.body)
            case nil where acceptSignatureV1:
                message = GatewaySignature.canonicalV1(
                    method: request.method, target: request.head.target, timestamp: stamp, body: request.body)
            case nil:
                throw APIError(
                    .gatewaySignatureV1,
                    "version 1 signatures are refused: sign version 2 (app and key id included) and send \(GatewaySignature.versionHeader): 2"
                )
            case let other?:
                throw APIError(
                    .gatewayBadSignature, "\(GatewaySignature.versionHeader) must be 2, not '\(other.prefix(8))'",
                    field: GatewaySignature.versionHeader)
            }
            guard publicKey.verify(signature: signature, message: message) else {
                throw APIError(.gatewayBadSignature, "the signature does not match the request and the key")
            }
            let now = CallStore.milliseconds(store.environment.now())
            let fresh = try await store.write { transaction in
                try transaction.gateway.recordSignature(
                    Base64URL.encode(signature), of: appID, at: now,
                    forgetBeforeMS: now - GatewaySignature.replayMemoryMS)
            }
            guard fresh else {
                throw APIError(.gatewayReplayed, "this signed request was taken already (sign every request anew)")
            }
            return try await handler(context, app, keyID)
        }
    }

    /// What JSON Schema's (ECMA-262's) `\s` matches: a name of only these is empty.
    static let blank = CharacterSet(
        charactersIn: "\t\n\u{0B}\u{0C}\r \u{A0}\u{1680}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}"
    )
    .union(CharacterSet(charactersIn: "\u{2000}"..."\u{200A}"))

    /// An app or key id: 1 to 64 of `a-z`, `0-9`, `.`, `_`, `-`.
    static func identifier(_ text: String, field: String) throws(APIError) -> String {
        guard (1...64).contains(text.utf8.count),
            text.utf8.allSatisfy({
                (97...122).contains($0) || (48...57).contains($0) || $0 == 46 || $0 == 95 || $0 == 45
            })
        else { throw APIError.validation("'\(field)' must be 1 to 64 of a-z, 0-9, '.', '_' and '-'", field: field) }
        return text
    }

    /// A key as stored: its id checked, its public key 32 bytes of a valid Ed25519 point.
    static func key(_ key: NewKey, field: String?, at nowMS: Int64) throws(APIError) -> GatewayApp.Key {
        let prefix = field.map { "\($0)." } ?? ""
        let keyID = try identifier(key.keyId, field: prefix + "keyId")
        let text = key.publicKey.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "="))
        guard let raw = Base64URL.decode(text), raw.count == 32, (try? Ed25519PublicKey(rawBytes: raw)) != nil else {
            throw APIError.validation(
                "'\(prefix)publicKey' must be an Ed25519 public key: 32 bytes as base64 or base64url, not a point of small order",
                field: prefix + "publicKey")
        }
        return GatewayApp.Key(keyID: keyID, publicKey: Base64URL.encode(raw), createdAtMS: nowMS)
    }
}
