import Foundation
import SwitchboardHTTP
import SwitchboardPush
import SwitchboardWire

/// `POST /voip/devices` and `DELETE /voip/devices/{deviceId}`: a device's VoIP token, bound to
/// the session that registered it (logout unbinds it).
struct DeviceRoutes {
    let store: ServerStore
    let authenticator: Authenticator

    /// The platform name of PushKit VoIP tokens.
    static let voipPlatform = APNsVoIPChannel.channelName

    func register(in router: inout Router) {
        let store = self.store
        router.add("POST", "/voip/devices", authenticator.require { context, principal in
            let request = try context.decode(RegisterVoIPDevice.self)
            let (deviceID, token, environment) = try Self.validate(request)
            let userID = principal.user.id, sessionID = principal.sessionID
            let device = try await store.write { transaction -> VoIPDevice in
                try transaction.devices.register(
                    DeviceRegistration(
                        deviceID: deviceID, userID: userID, sessionID: sessionID, platform: Self.voipPlatform, token: token,
                        environment: environment),
                    at: transaction.timestamp)
                return VoIPDevice(deviceId: deviceID, environment: environment, tokenSuffix: Self.suffix(token), updatedAt: transaction.timestamp)
            }
            context.logger.info("voip device registered", [
                "device.id": .string(deviceID), "token.suffix": .string(device.tokenSuffix), "environment": .string(environment),
            ])
            return .json(device)
        })
        router.add("DELETE", "/voip/devices/{deviceId}", authenticator.require { context, principal in
            let deviceID = context.parameter("deviceId").lowercased()
            let userID = principal.user.id
            let removed = try await store.write { try $0.devices.remove(deviceID: deviceID, of: userID) }
            guard removed else { throw APIError.notFound("no such device") }
            return .noContent
        })
    }

    /// A UUID device id, an even-length hex token of 32 to 200 bytes, a known environment.
    static func validate(_ request: RegisterVoIPDevice) throws(APIError) -> (String, String, String) {
        guard UUID(uuidString: request.deviceId) != nil else {
            throw APIError.validation("'deviceId' must be a UUID", field: "deviceId")
        }
        let token = request.pushToken.lowercased()
        guard (64...400).contains(token.utf8.count), token.utf8.count % 2 == 0,
            token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw APIError.validation("'pushToken' must be the device token as hex (64 to 400 hex digits)", field: "pushToken")
        }
        guard ["sandbox", "production"].contains(request.environment) else {
            throw APIError.validation("'environment' must be 'sandbox' or 'production'", field: "environment")
        }
        return (request.deviceId.lowercased(), token, request.environment)
    }

    /// What logs and answers show of a token.
    static func suffix(_ token: String) -> String { String(token.suffix(8)) }
}
