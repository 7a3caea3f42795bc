import Foundation
import Testing
import SwitchboardWire

@Suite("Wire enums: typed, and open to values a newer server sends", .timeLimit(.minutes(1)))
struct WireEnumTests {
    @Test func theKnownStringsAreTheServersOwn() {
        #expect(ScopeKind.known.map(\.rawValue) == ["conversation", "group"])
        #expect(CallMode.known.map(\.rawValue) == ["audio", "video"])
        #expect(CallState.known.map(\.rawValue) == ["ringing", "active", "ended"])
        #expect(
            InvitationState.known.map(\.rawValue) == ["ringing", "accepted", "declined", "busy", "missed", "cancelled"])
        #expect(
            CallInfo.EndReason.known.map(\.rawValue) == [
                "declined", "completed", "cancelled", "missed", "busy", "connection_lost", "unfriended", "blocked",
                "group_dissolved",
            ])
    }

    @Test func everyKnownCaseRoundTripsThroughItsString() throws {
        try Self.roundTrips(ScopeKind.self)
        try Self.roundTrips(CallMode.self)
        try Self.roundTrips(CallState.self)
        try Self.roundTrips(InvitationState.self)
        try Self.roundTrips(CallInfo.EndReason.self)
    }

    @Test func aCallWithValuesThisVersionDoesNotKnowDecodesAndEncodesBackUnchanged() throws {
        let json =
            #"{"id":"c1","scopeKind":"channel","scopeId":"s1","mode":"screen","state":"on_hold","endReason":"#
            + #""moved","createdBy":"u1","createdAt":"2026-11-30T00:00:00.000Z","answeredAt":null,"endedAt":null,"#
            + #""invitations":[{"userId":"u2","state":"snoozed","updatedAt":"2026-11-30T00:00:00.000Z"}],"participants":[]}"#
        let call = try JSONDecoder().decode(CallInfo.self, from: Data(json.utf8))
        #expect(
            call.scopeKind == .unknown("channel") && call.mode == .unknown("screen")
                && call.state == .unknown("on_hold"))
        #expect(call.endReason == .unknown("moved") && call.invitations.first?.state == .unknown("snoozed"))
        #expect(try Self.sameJSON(Self.encoder.encode(call), Data(json.utf8)))
    }

    @Test func knownValuesEncodeExactlyAsTheServerWritesThem() throws {
        let call = CallInfo(
            id: "c1", scopeKind: .group, scopeId: "g1", mode: .video, state: .ended, endReason: .groupDissolved,
            createdBy: "u1",
            createdAt: "2026-11-30T00:00:00.000Z", answeredAt: nil, endedAt: "2026-11-30T00:01:00.000Z",
            invitations: [CallInvitationInfo(userId: "u2", state: .missed, updatedAt: "2026-11-30T00:00:00.000Z")],
            participants: [])
        let text = String(decoding: try Self.encoder.encode(call), as: UTF8.self)
        #expect(
            text.contains(#""scopeKind":"group""#) && text.contains(#""mode":"video""#)
                && text.contains(#""state":"ended""#))
        #expect(text.contains(#""endReason":"group_dissolved""#) && text.contains(#""state":"missed""#))
        #expect(try JSONDecoder().decode(CallInfo.self, from: Data(text.utf8)) == call)
        let create = try Self.encoder.encode(
            CreateCall(scopeKind: .conversation, scopeId: "c", mode: .audio, clientId: "x"))
        #expect(
            try Self.sameJSON(
                create, Data(#"{"scopeKind":"conversation","scopeId":"c","mode":"audio","clientId":"x"}"#.utf8)))
    }

    @Test func anUnknownValueMadeByHandEqualsTheKnownCaseItSpells() {
        #expect(CallState.unknown("ringing") == .ringing)
        #expect(Set([CallState.unknown("ringing"), .ringing]).count == 1)
        #expect(CallState.unknown("on_hold") != .ringing)
    }

    @Test func aValueThatIsNotAStringStillFailsToDecode() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CallState.self, from: Data("42".utf8)) }
    }

    private static var encoder: JSONEncoder { JSONEncoder() }

    /// The same JSON value, whatever the key order.
    private static func sameJSON(_ a: Data, _ b: Data) throws -> Bool {
        let left = try JSONSerialization.jsonObject(with: a), right = try JSONSerialization.jsonObject(with: b)
        return NSDictionary(dictionary: left as? [String: Any] ?? [:]).isEqual(to: right as? [String: Any] ?? [:])
    }

    /// Each known case is made from its string, and encodes as exactly that JSON string.
    private static func roundTrips<Value: WireEnum>(_: Value.Type) throws {
        for value in Value.known {
            // (Generic code sees RawRepresentable's failable init; WireEnum's never fails.)
            let made = try #require(Value(rawValue: value.rawValue))
            #expect(made == value)
            // The case itself, not `unknown` (which alone carries a value).
            #expect(Mirror(reflecting: made).children.isEmpty)
            let encoded = String(decoding: try encoder.encode([value]), as: UTF8.self)
            #expect(encoded == "[\"\(value.rawValue)\"]")
            #expect(try JSONDecoder().decode([Value].self, from: Data(encoded.utf8)) == [value])
        }
    }
}
