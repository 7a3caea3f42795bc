import Foundation

/// The VoIP push payload of SPEC §3, as the server builds it and the SDK reads it:
/// `{"aps":{}, "callId", "scopeKind", "scopeId", "mode", "callerName"?, "groupName"?, "ext"?}`.
/// It carries no secrets: the call is re-read from the server. (A device with a payload key
/// gets it sealed inside the encrypted envelope instead.)
public struct VoIPPayload: Codable, Sendable, Equatable {
    public var callId: String
    public var scopeKind: ScopeKind
    public var scopeId: String
    public var mode: CallMode
    public var callerName: String?
    public var groupName: String?
    /// A gateway app's own strings for its app.
    public var ext: [String: String]?

    public init(
        callId: String, scopeKind: ScopeKind, scopeId: String, mode: CallMode, callerName: String?,
        groupName: String? = nil,
        ext: [String: String]? = nil
    ) {
        self.callId = callId
        self.scopeKind = scopeKind
        self.scopeId = scopeId
        self.mode = mode
        self.callerName = callerName
        self.groupName = groupName
        self.ext = ext
    }

    enum CodingKeys: String, CodingKey {
        case aps, callId, scopeKind, scopeId, mode, callerName, groupName, ext
    }

    /// Reads a payload leniently, as a phone must: only `callId` is required; a field that is
    /// missing or of another type takes its default (a conversation, audio, no names), so a
    /// ring is still reported rather than dropped.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        callId = try container.decode(String.self, forKey: .callId)
        scopeKind = (try? container.decodeIfPresent(ScopeKind.self, forKey: .scopeKind)) ?? nil ?? .conversation
        scopeId = (try? container.decodeIfPresent(String.self, forKey: .scopeId)) ?? nil ?? ""
        mode = (try? container.decodeIfPresent(CallMode.self, forKey: .mode)) ?? nil ?? .audio
        callerName = (try? container.decodeIfPresent(String.self, forKey: .callerName)) ?? nil
        groupName = (try? container.decodeIfPresent(String.self, forKey: .groupName)) ?? nil
        ext = (try? container.decodeIfPresent([String: String].self, forKey: .ext)) ?? nil
    }

    /// Writes the payload with APNs' empty `aps` dictionary.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        _ = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .aps)
        try container.encode(callId, forKey: .callId)
        try container.encode(scopeKind, forKey: .scopeKind)
        try container.encode(scopeId, forKey: .scopeId)
        try container.encode(mode, forKey: .mode)
        try container.encodeIfPresent(callerName, forKey: .callerName)
        try container.encodeIfPresent(groupName, forKey: .groupName)
        try container.encodeIfPresent(ext, forKey: .ext)
    }

    /// The JSON APNs carries: keys sorted, `/` unescaped.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Reads a payload from its JSON.
    public init(json: Data) throws {
        self = try JSONDecoder().decode(VoIPPayload.self, from: json)
    }
}
