import Foundation
import SwitchboardKit
import Testing

/// The record of a call in its conversation, as an app reads it: a typed value, and an older
/// server's message as text.
@Suite("Call messages as the SDK reads them", .timeLimit(.minutes(1)))
struct CallMessageDecodingTests {
    @Test func aCallMessageDecodesToItsTypedSummary() throws {
        let json = #"""
            {"id":"m1","conversationId":"c1","groupId":null,"senderId":"u1","text":"Video call · 3:12",
             "createdAt":"2027-01-15T08:03:12.480Z","kind":"call",
             "call":{"callId":"k1","mode":"video","outcome":"answered","durationSeconds":192}}
            """#
        let message = try JSONDecoder().decode(Message.self, from: Data(json.utf8))
        #expect(message.kind == .call)
        #expect(message.call == CallSummary(callId: "k1", mode: .video, outcome: .answered, durationSeconds: 192))
        // It encodes back to the same members.
        let again = try JSONDecoder().decode(Message.self, from: JSONEncoder().encode(message))
        #expect(again == message)
    }

    @Test func aTextMessageAndAnOlderServersMessageAreText() throws {
        let older =
            #"{"id":"m1","conversationId":"c1","groupId":null,"senderId":"u1","text":"hi","createdAt":"2027-01-15T08:03:12.480Z"}"#
        let message = try JSONDecoder().decode(Message.self, from: Data(older.utf8))
        #expect(message.kind == .text && message.call == nil)
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(message)) as? [String: Any]
        #expect(encoded?["kind"] as? String == "text" && encoded?["call"] is NSNull)
        // An outcome or kind this version does not know is kept, not refused.
        let newer =
            #"{"id":"m2","conversationId":"c1","groupId":null,"senderId":"u1","text":"…","createdAt":"2027-01-15T08:03:12.480Z","kind":"poll","call":null}"#
        #expect(try JSONDecoder().decode(Message.self, from: Data(newer.utf8)).kind == .unknown("poll"))
    }
}
