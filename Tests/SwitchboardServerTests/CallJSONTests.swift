import Foundation
import SwitchboardHTTP
import Testing
@testable import SwitchboardServer
import SwitchboardWire

@Suite("Call JSON", .timeLimit(.minutes(1)))
struct CallJSONTests {
    static let calls = [
        CallInfo(
            id: "c1", scopeKind: .conversation, scopeId: "conv/1", mode: .audio, state: .ringing, endReason: nil,
            createdBy: "u\"1",
            createdAt: "2026-12-01T16:00:00.000Z", answeredAt: nil, endedAt: nil,
            invitations: [InvitationInfoSample.ringing, InvitationInfoSample.odd], participants: []),
        CallInfo(
            id: "c2", scopeKind: .group, scopeId: "g1", mode: .video, state: .ended, endReason: .connectionLost,
            createdBy: "u2",
            createdAt: "2026-12-01T16:00:00.000Z", answeredAt: "2026-12-01T16:00:01.000Z",
            endedAt: "2026-12-01T16:00:09.000Z",
            invitations: [],
            participants: [
                CallParticipantInfo(userId: "u2", joinedAt: "2026-12-01T16:00:01.000Z", leftAt: nil),
                CallParticipantInfo(userId: "ü☎️\\", joinedAt: "t\u{8}\u{c}\u{1}\n", leftAt: "2026-12-01T16:00:09.000Z"),
            ]),
        CallInfo(
            id: "c3", scopeKind: .unknown("future_kind"), scopeId: "x", mode: .unknown("hologram"),
            state: .unknown("paused"),
            endReason: .unknown("new_reason"), createdBy: "u3", createdAt: "t", answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "u4", state: .unknown("maybe"), updatedAt: "t")], participants: []),
    ]

    enum InvitationInfoSample {
        static let ringing = CallInvitationInfo(userId: "u9", state: .ringing, updatedAt: "2026-12-01T16:00:00.000Z")
        static let odd = CallInvitationInfo(
            userId: "tab\there", state: .declined, updatedAt: "2026-12-01T16:00:00.000Z")
    }

    /// The hand-written encoder must produce exactly what the response encoder does.
    @Test func matchesJSONEncoderByteForByte() throws {
        for call in Self.calls {
            let expected = Array(try JSONBody.makeEncoder().encode(call))
            #expect(CallJSON.call(call) == expected, "\(String(decoding: CallJSON.call(call), as: UTF8.self))")
        }
        #expect(CallJSON.calls(Self.calls) == Array(try JSONBody.makeEncoder().encode(Self.calls)))
        #expect(CallJSON.calls([]) == Array(try JSONBody.makeEncoder().encode([CallInfo]())))
    }

    /// With a media token (accept and join with `{"mediaToken": true}`): the call's fields and
    /// `media`, in the sorted-key order JSONEncoder writes.
    @Test func aCallWithItsMediaTokenMatchesJSONEncoderToo() throws {
        struct Expected: Encodable {
            let call: CallInfo
            let media: MediaToken
            func encode(to encoder: any Encoder) throws {
                try call.encode(to: encoder)
                enum Key: String, CodingKey { case media }
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(media, forKey: .media)
            }
        }
        let media = MediaToken(url: "wss://media.example/rtc", token: "a.b\"c", expiresAt: "2026-12-01T16:00:30.000Z")
        for call in Self.calls {
            let expected = Array(try JSONBody.makeEncoder().encode(Expected(call: call, media: media)))
            #expect(
                CallJSON.call(call, media: media) == expected,
                "\(String(decoding: CallJSON.call(call, media: media), as: UTF8.self))")
            let decoded = try JSONDecoder().decode(CallWithMedia.self, from: Data(CallJSON.call(call, media: media)))
            #expect(decoded == CallWithMedia(call: call, media: media))
            #expect(try JSONDecoder().decode(CallWithMedia.self, from: Data(CallJSON.call(call))).media == nil)
        }
    }

    @Test func theResponsesCarryIt() {
        let response = HTTPResponse.json(Self.calls[0], status: 201)
        #expect(response.status == 201)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.bodyBytes == CallJSON.call(Self.calls[0]))
    }
}
