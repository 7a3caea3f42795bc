import Foundation
import SwitchboardWire

/// The VoIP push payload of SPEC §3: `{"aps":{}, "callId", "scopeKind", "scopeId", "mode",
/// "callerName", "groupName"?}`. It carries no secrets: the call is re-read from the server.
public struct IncomingCallPush: Sendable, Equatable {
    public var callID: String
    public var scopeKind: ScopeKind
    public var scopeID: String
    public var mode: CallMode
    public var callerName: String?
    public var groupName: String?
    /// A gateway app's own strings (the signal's `ext.data`).
    public var ext: [String: String]?

    public init(
        callID: String, scopeKind: ScopeKind, scopeID: String, mode: CallMode, callerName: String? = nil,
        groupName: String? = nil, ext: [String: String]? = nil
    ) {
        self.callID = callID
        self.scopeKind = scopeKind
        self.scopeID = scopeID
        self.mode = mode
        self.callerName = callerName
        self.groupName = groupName
        self.ext = ext
    }

    /// The gateway call this push rings, when an app server rang it through the gateway.
    public var gatewayCall: GatewayCall? {
        guard scopeKind == .gateway else { return nil }
        return GatewayCall(callID: callID, roomID: scopeID, mode: mode, callerName: callerName, ext: ext ?? [:])
    }

    /// Reads PushKit's `dictionaryPayload` as a ``VoIPPayload`` (the type the server builds it
    /// from); `nil` when there is no usable `callId` (the push must still be reported: the
    /// coordinator reports a placeholder and ends it).
    public init?(dictionary: [AnyHashable: Any]) {
        var object: [String: Any] = [:]
        for (key, value) in dictionary {
            if let key = key as? String { object[key] = value }
        }
        // PushKit's payload came from JSON, but a hand-made dictionary may hold anything, and
        // JSONSerialization traps on what JSON cannot hold.
        guard JSONSerialization.isValidJSONObject(object),
            let json = try? JSONSerialization.data(withJSONObject: object)
        else { return nil }
        self.init(json: json)
    }

    /// Reads the JSON body of a push (as the APNs emulator's inbox keeps it).
    public init?(json: Data) {
        guard let payload = try? VoIPPayload(json: json) else { return nil }
        self.init(payload)
    }

    /// The push a payload describes; `nil` when its `callId` is empty or longer than 128 bytes.
    public init?(_ payload: VoIPPayload) {
        guard !payload.callId.isEmpty, payload.callId.utf8.count <= 128 else { return nil }
        self.init(
            callID: payload.callId, scopeKind: payload.scopeKind, scopeID: payload.scopeId, mode: payload.mode,
            callerName: payload.callerName, groupName: payload.groupName, ext: payload.ext)
    }

    /// What the call system shows while it rings.
    public var update: CallUpdate {
        let isGroup = scopeKind == .group
        let name = isGroup ? (groupName ?? callerName) : callerName
        return CallUpdate(handle: scopeID, callerName: name, hasVideo: mode == .video, isGroup: isGroup)
    }
}

/// Whatever takes VoIP pushes: the `CallCoordinator`. The PushKit receiver of the Apple adapter
/// hands every push here and calls nothing else.
public protocol VoIPPushHandling: AnyObject, Sendable {
    /// Reports the call to the call system synchronously, before returning; `completion` runs
    /// once the report completed (pass PushKit's completion straight through). With
    /// `mustReport == false` (iOS 26.4 metadata) a push for a call already known may be skipped.
    func handleVoIPPush(_ payload: [AnyHashable: Any], mustReport: Bool, completion: @escaping @Sendable () -> Void)
}
