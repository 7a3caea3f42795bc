import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// Messages and read markers in a conversation between two friends.
@Suite("Social behaviour: messages and read markers", .timeLimit(.minutes(3)))
struct SocialMessagingBehaviourTests {
    /// Olivia and Max, friends, with their conversation; their feeds are read up to now.
    private static func friends() async throws -> (SocialClient, SocialUser, SocialUser, String) {
        let api = SocialClient(try TestApplication())
        let olivia = try await api.register("olivia"), max = try await api.register("max")
        let conversationID = try await api.befriend(olivia, max)
        try await api.skipEvents(of: olivia, max)
        return (api, olivia, max, conversationID)
    }

    @Test func sendingTellsBothWithTheMessage() async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let response = await api.send("hello Max", from: olivia, toConversation: conversationID)
        #expect(response.status == 201)
        let message = try response.decoded(Message.self)
        #expect(
            message.text == "hello Max" && message.senderId == olivia.id && message.conversationId == conversationID)
        #expect(message.groupId == nil && response.text.contains(#""groupId":null"#))
        let events = try await api.expectEvents([EventKind.message], for: [olivia, max])
        #expect(events.allSatisfy { $0.conversationId == conversationID && $0.messageId == message.id })
        let history = try await api.messages("/conversations/\(conversationID)/messages", as: max)
        #expect(history.messages == [message] && !history.hasMore)
    }

    /// A client that lost the answer resends with the same `clientId` and gets the stored
    /// message back, without a duplicate or a second notification.
    @Test func replayingAClientIdReturnsTheStoredMessage() async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let clientID = "4f1c2d7e-0000-4000-8000-000000000001"
        let first = await api.send("on my way", from: olivia, toConversation: conversationID, clientId: clientID)
        #expect(first.status == 201)
        let replay = await api.send("on my way", from: olivia, toConversation: conversationID, clientId: clientID)
        #expect(replay.status == 200)
        #expect(try replay.decoded(Message.self) == first.decoded(Message.self))
        try await api.expectEvents([EventKind.message], for: [olivia, max])
        let history = try await api.messages("/conversations/\(conversationID)/messages", as: max)
        #expect(history.messages.count == 1)

        let reused = await api.send("something else", from: olivia, toConversation: conversationID, clientId: clientID)
        #expect(reused.status == 409)
        #expect(reused.apiErrorCode == "CLIENT_ID_REUSED")
        #expect(reused.apiErrorField == "clientId")
        // The same key from the other participant is a different message.
        #expect(
            await api.send("on my way", from: max, toConversation: conversationID, clientId: clientID).status == 201)
        try await api.expectEvents([EventKind.message], for: [olivia, max])
    }

    /// A resend after the peer blocked the sender still answers with the message that was
    /// stored before the block: the client must not mark a delivered message as failed.
    @Test func replayAfterABlockStillReturnsTheStoredMessage() async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let clientID = "4f1c2d7e-0000-4000-8000-000000000002"
        let first = await api.send("bye", from: olivia, toConversation: conversationID, clientId: clientID)
        #expect(first.status == 201)
        try await api.block(olivia, by: max)
        let replay = await api.send("bye", from: olivia, toConversation: conversationID, clientId: clientID)
        #expect(replay.status == 200, "\(replay.text)")
        if replay.status == 200 {
            #expect(try replay.decoded(Message.self).id == first.decoded(Message.self).id)
        }
        // A new message is still refused.
        #expect(await api.send("bye again", from: olivia, toConversation: conversationID).apiErrorCode == "BLOCKED")
    }

    /// Seven messages walked backwards with `before`: every page is oldest-first, no message is
    /// lost or repeated, and only the last page says there is nothing older.
    @Test(arguments: [1, 3, 6, 7, 50])
    func pagingWalksTheHistoryOldestFirst(limit: Int) async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        var sent: [String] = []
        for number in 1...7 {
            sent.append(
                try await api.post("m\(number)", from: number % 2 == 0 ? max : olivia, toConversation: conversationID))
        }
        var pages: [MessagePage] = []
        var path = "/conversations/\(conversationID)/messages?limit=\(limit)"
        while true {
            let page = try await api.messages(path, as: olivia)
            pages.append(page)
            guard page.hasMore, let oldest = page.messages.first, pages.count < 10 else { break }
            path = "/conversations/\(conversationID)/messages?limit=\(limit)&before=\(oldest.id)"
        }
        #expect(pages.count == (7 + limit - 1) / limit)
        #expect(pages.reversed().flatMap(\.messages).map(\.id) == sent)
        #expect(pages.dropLast().allSatisfy { $0.hasMore && $0.messages.count == limit })
        #expect(pages.last?.hasMore == false)
        if limit == 3 {
            #expect(pages.map { $0.messages.map(\.text) } == [["m5", "m6", "m7"], ["m2", "m3", "m4"], ["m1"]])
        }
    }

    /// A bad `limit` is 400; a `before` that names no message of this conversation is 404 (it
    /// is well-formed, like an unknown id in a path).
    @Test(arguments: [
        ("limit=0", "limit", 400), ("limit=101", "limit", 400), ("limit=three", "limit", 400),
        ("before=UNKNOWN", "before", 404), ("before=OTHER", "before", 404),
    ])
    func badPagingIsRefused(query: String, field: String, status: Int) async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let sam = try await api.register("sam")
        let otherConversation = try await api.befriend(max, sam)
        let otherMessage = try await api.post("elsewhere", from: sam, toConversation: otherConversation)
        let target = query.replacingOccurrences(of: "UNKNOWN", with: "00000000-0000-0000-0000-000000000000")
            .replacingOccurrences(of: "OTHER", with: otherMessage)
        let response = await api.call(olivia, "GET", "/conversations/\(conversationID)/messages?\(target)")
        #expect(response.status == status)
        #expect(response.apiErrorCode == (status == 400 ? "VALIDATION_FAILED" : "NOT_FOUND"))
        #expect(response.apiErrorField == field)
    }

    @Test(arguments: [
        ("", 400), ("   ", 400), (" \t \u{3000} ", 400), (String(repeating: "a", count: 4001), 400),
        (String(repeating: "a", count: 4000), 201), (String(repeating: "👋🏽", count: 4000), 201), ("ok", 201),
    ])
    func textIsValidated(text: String, status: Int) async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let response = await api.send(text, from: olivia, toConversation: conversationID)
        #expect(response.status == status)
        if status == 400 {
            #expect(response.apiErrorCode == "VALIDATION_FAILED")
            #expect(response.apiErrorField == "text")
            try await api.expectEvents([], for: [olivia, max])
        } else {
            #expect(try response.decoded(Message.self).text == text)
        }
    }

    @Test func missingTextNamesTheField() async throws {
        let (api, olivia, _, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let response = await api.call(olivia, "POST", "/conversations/\(conversationID)/messages", #"{"clientId":"x"}"#)
        #expect(response.status == 400)
        #expect(response.apiErrorField == "text")
    }

    /// A chat message may span lines; the text comes back exactly as written.
    @Test(arguments: ["first line\nsecond line", "shopping:\n\t- milk\n\t- bread", "a\r\nb"])
    func multiLineTextIsKept(text: String) async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let response = await api.send(text, from: olivia, toConversation: conversationID)
        #expect(response.status == 201, "\(response.text)")
        let history = try await api.messages("/conversations/\(conversationID)/messages", as: max)
        #expect(history.messages.map(\.text) == [text])
    }

    // MARK: Read markers

    @Test func readMarkerMovesOnlyForward() async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        var ids: [String] = []
        for text in ["one", "two", "three"] {
            ids.append(try await api.post(text, from: max, toConversation: conversationID))
        }
        try await api.skipEvents(of: olivia, max)
        let path = "/conversations/\(conversationID)/read"

        let forward = await api.call(olivia, "PUT", path, #"{"messageId":"\#(ids[1])"}"#)
        #expect(forward.status == 200)
        #expect(try forward.decoded(ReadMarker.self).messageId == ids[1])
        let events = try await api.expectEvents([EventKind.messageRead], for: [olivia, max])
        #expect(events.allSatisfy { $0.conversationId == conversationID && $0.messageId == ids[1] })

        for stale in [ids[0], ids[1]] {
            let backward = await api.call(olivia, "PUT", path, #"{"messageId":"\#(stale)"}"#)
            #expect(backward.status == 200)
            #expect(try backward.decoded(ReadMarker.self).messageId == ids[1])
        }
        try await api.expectEvents([], for: [olivia, max])
        let markers = try await api.conversation(conversationID, as: max).readMarkers
        #expect(markers.map(\.userId) == [olivia.id] && markers.map(\.messageId) == [ids[1]])

        #expect(await api.call(olivia, "PUT", path, #"{"messageId":"\#(ids[2])"}"#).status == 200)
        try await api.expectEvents([EventKind.messageRead], for: [olivia, max])
        #expect(try await api.conversation(conversationID, as: olivia).readMarkers.map(\.messageId) == [ids[2]])
    }

    @Test func readMarkerMustNameAMessageOfTheConversation() async throws {
        let (api, olivia, max, conversationID) = try await Self.friends()
        defer { api.app.close() }
        let sam = try await api.register("sam")
        let elsewhere = try await api.post("not yours", from: sam, toConversation: try await api.befriend(sam, max))
        try await api.skipEvents(of: olivia)
        for messageID in [elsewhere, "00000000-0000-0000-0000-000000000000"] {
            let response = await api.call(
                olivia, "PUT", "/conversations/\(conversationID)/read", #"{"messageId":"\#(messageID)"}"#)
            #expect(response.status == 404)
            #expect(response.apiErrorCode == "NOT_FOUND")
            #expect(response.apiErrorField == "messageId")
        }
        try await api.expectEvents([], for: [olivia])
        #expect(try await api.conversation(conversationID, as: olivia).readMarkers.isEmpty)
    }
}
