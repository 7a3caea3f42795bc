import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// Groups: membership, ownership, dissolution and group messages.
@Suite("Social behaviour: groups", .timeLimit(.minutes(3)))
struct SocialGroupBehaviourTests {
    /// Olivia with her friends Max and Fay, her blocked friend Bob, and Sam whom she does not
    /// know; feeds are read up to now.
    private struct Circle {
        let api: SocialClient
        let olivia, max, fay, bob, sam: SocialUser

        static func make() async throws -> Circle {
            let api = SocialClient(try TestApplication())
            let olivia = try await api.register("olivia"), max = try await api.register("max"),
                fay = try await api.register("fay")
            let bob = try await api.register("bob"), sam = try await api.register("sam")
            for friend in [max, fay, bob] { _ = try await api.befriend(olivia, friend) }
            try await api.block(bob, by: olivia)
            try await api.skipEvents(of: olivia, max, fay, bob, sam)
            return Circle(api: api, olivia: olivia, max: max, fay: fay, bob: bob, sam: sam)
        }

        var everyone: [SocialUser] { [olivia, max, fay, bob, sam] }

        func group(_ id: String, as user: SocialUser) async -> HTTPResponse {
            await api.call(user, "GET", "/groups/\(id)")
        }

        func groupIDs(of user: SocialUser) async throws -> [String] {
            try await api.call(user, "GET", "/groups").decoded([Group].self).map(\.id)
        }
    }

    @Test func creatingAGroupTellsEveryMember() async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max, fay) = (circle.api, circle.olivia, circle.max, circle.fay)
        let response = await api.call(
            olivia, "POST", "/groups", #"{"name":"  Climbing  ","memberIds":["\#(max.id)","\#(fay.id)","\#(max.id)"]}"#)
        #expect(response.status == 201)
        let group = try response.decoded(Group.self)
        #expect(group.name == "Climbing" && group.ownerId == olivia.id)
        #expect(Set(group.members.map(\.user.id)) == [olivia.id, max.id, fay.id] && group.members.count == 3)
        let events = try await api.expectEvents([EventKind.groupMembersChanged], for: [olivia, max, fay])
        #expect(events.allSatisfy { $0.groupId == group.id })
        try await api.expectEvents([], for: [circle.bob, circle.sam])
        for member in [olivia, max, fay] { #expect(try await circle.groupIDs(of: member) == [group.id]) }
    }

    /// Only friends can be put in a group; one bad id fails the whole request.
    @Test(arguments: [("stranger", 403, "NOT_FRIENDS"), ("unknown", 404, "NOT_FOUND"), ("blocked", 403, "BLOCKED")])
    func creatingAGroupNeedsFriends(who: String, status: Int, code: String) async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let id =
            switch who {
            case "stranger": circle.sam.id
            case "blocked": circle.bob.id
            default: "00000000-0000-0000-0000-000000000000"
            }
        let response = await circle.api.call(
            circle.olivia, "POST", "/groups", #"{"name":"Mixed","memberIds":["\#(circle.max.id)","\#(id)"]}"#)
        #expect(response.status == status)
        #expect(response.apiErrorCode == code)
        #expect(response.apiErrorField == "memberIds")
        #expect(try await circle.groupIDs(of: circle.olivia).isEmpty)
        #expect(try await circle.groupIDs(of: circle.max).isEmpty)
        try await circle.api.expectEvents([], for: circle.everyone)
    }

    @Test func renamingTellsEveryMember() async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max) = (circle.api, circle.olivia, circle.max)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max])
        try await api.skipEvents(of: olivia, max)
        let response = await api.call(olivia, "PATCH", "/groups/\(groupID)", #"{"name":"Bouldering"}"#)
        #expect(response.status == 200)
        #expect(try response.decoded(Group.self).name == "Bouldering")
        let events = try await api.expectEvents([EventKind.groupChanged], for: [olivia, max])
        #expect(events.allSatisfy { $0.groupId == groupID })
        #expect(try await circle.group(groupID, as: max).decoded(Group.self).name == "Bouldering")

        for name in ["", "   ", String(repeating: "n", count: 101)] {
            let bad = await api.call(olivia, "PATCH", "/groups/\(groupID)", #"{"name":"\#(name)"}"#)
            #expect(bad.status == 400)
            #expect(bad.apiErrorField == "name")
        }
        try await api.expectEvents([], for: [olivia, max])
    }

    @Test func addingAndRemovingMembersTellsEveryoneConcerned() async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max, fay) = (circle.api, circle.olivia, circle.max, circle.fay)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max])
        try await api.skipEvents(of: olivia, max)

        let added = await api.call(olivia, "POST", "/groups/\(groupID)/members", #"{"userIds":["\#(fay.id)"]}"#)
        #expect(added.status == 200)
        #expect(try added.decoded(Group.self).members.count == 3)
        try await api.expectEvents([EventKind.groupMembersChanged], for: [olivia, max, fay])
        #expect(try await circle.groupIDs(of: fay) == [groupID])
        // Adding someone already in the group changes nothing and tells nobody.
        #expect(
            await api.call(olivia, "POST", "/groups/\(groupID)/members", #"{"userIds":["\#(fay.id)"]}"#).status == 200)
        try await api.expectEvents([], for: [olivia, max, fay])

        #expect(await api.call(olivia, "DELETE", "/groups/\(groupID)/members/\(max.id)").status == 204)
        let events = try await api.expectEvents([EventKind.groupMembersChanged], for: [olivia, max, fay])
        #expect(events.allSatisfy { $0.groupId == groupID })
        try await expectShutOut(max, from: groupID, circle: circle)

        // Later group messages no longer reach him.
        _ = try await api.post("after Max", from: fay, toGroup: groupID)
        try await api.expectEvents([EventKind.groupMessage], for: [olivia, fay])
        try await api.expectEvents([], for: [max])

        let again = await api.call(olivia, "DELETE", "/groups/\(groupID)/members/\(max.id)")
        #expect(again.status == 404)
        let owner = await api.call(olivia, "DELETE", "/groups/\(groupID)/members/\(olivia.id)")
        #expect(owner.status == 409)
        #expect(owner.apiErrorCode == "CANNOT_REMOVE_OWNER")
        #expect(await circle.group(groupID, as: olivia).status == 200)
    }

    @Test func aMemberLeavesButTheOwnerCannot() async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max, fay) = (circle.api, circle.olivia, circle.max, circle.fay)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max, fay])
        try await api.skipEvents(of: olivia, max, fay)

        #expect(await api.call(max, "POST", "/groups/\(groupID)/leave").status == 204)
        try await api.expectEvents([EventKind.groupMembersChanged], for: [olivia, max, fay])
        try await expectShutOut(max, from: groupID, circle: circle)
        let members = try await circle.group(groupID, as: olivia).decoded(Group.self).members.map(\.user.id)
        #expect(Set(members) == [olivia.id, fay.id])

        let owner = await api.call(olivia, "POST", "/groups/\(groupID)/leave")
        #expect(owner.status == 409)
        #expect(owner.apiErrorCode == "OWNER_CANNOT_LEAVE")
        #expect(await circle.group(groupID, as: olivia).status == 200)
        try await api.expectEvents([], for: [olivia, fay])
    }

    @Test func dissolvingHidesTheGroupFromEveryone() async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max, fay) = (circle.api, circle.olivia, circle.max, circle.fay)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max, fay])
        _ = try await api.post("last words", from: max, toGroup: groupID)
        try await api.skipEvents(of: olivia, max, fay)

        #expect(await api.call(olivia, "DELETE", "/groups/\(groupID)").status == 204)
        let events = try await api.expectEvents([EventKind.groupChanged], for: [olivia, max, fay])
        #expect(events.allSatisfy { $0.groupId == groupID })
        for user in [olivia, max, fay] { try await expectShutOut(user, from: groupID, circle: circle) }
        #expect(await api.call(olivia, "DELETE", "/groups/\(groupID)").status == 404)
        #expect(await api.call(olivia, "PATCH", "/groups/\(groupID)", #"{"name":"Revived"}"#).status == 404)
        try await api.expectEvents([], for: [olivia, max, fay])
    }

    @Test func groupMessagesAndReadMarkersReachEveryMember() async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max, fay) = (circle.api, circle.olivia, circle.max, circle.fay)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max, fay])
        try await api.skipEvents(of: olivia, max, fay)

        let response = await api.send("who's in on Saturday?", from: max, toGroup: groupID)
        #expect(response.status == 201)
        let message = try response.decoded(Message.self)
        #expect(message.groupId == groupID && message.conversationId == nil && message.senderId == max.id)
        let events = try await api.expectEvents([EventKind.groupMessage], for: [olivia, max, fay])
        #expect(events.allSatisfy { $0.groupId == groupID && $0.messageId == message.id })
        try await api.expectEvents([], for: [circle.bob, circle.sam])
        let history = try await api.messages("/groups/\(groupID)/messages", as: fay)
        #expect(history.messages == [message])

        let read = await api.call(fay, "PUT", "/groups/\(groupID)/read", #"{"messageId":"\#(message.id)"}"#)
        #expect(read.status == 200)
        let readEvents = try await api.expectEvents([EventKind.groupMessageRead], for: [olivia, max, fay])
        #expect(readEvents.allSatisfy { $0.groupId == groupID && $0.messageId == message.id })
        let markers = try await circle.group(groupID, as: olivia).decoded(Group.self).readMarkers
        #expect(markers.map(\.userId) == [fay.id] && markers.map(\.messageId) == [message.id])
        // Reading it again tells nobody.
        #expect(await api.call(fay, "PUT", "/groups/\(groupID)/read", #"{"messageId":"\#(message.id)"}"#).status == 200)
        try await api.expectEvents([], for: [olivia, max, fay])
    }

    /// A member whose answer was lost retries with the same `clientId` after being removed (or
    /// after the group was dissolved): the message was stored and delivered, so the retry gets
    /// it back (200) instead of a 404 that makes the client show it as failed. New messages
    /// stay refused.
    @Test(arguments: ["removed", "dissolved"])
    func aRetryAfterLosingTheGroupStillGetsTheStoredMessage(how: String) async throws {
        let circle = try await Circle.make()
        defer { circle.api.app.close() }
        let (api, olivia, max) = (circle.api, circle.olivia, circle.max)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max])
        let clientID = "8d0f5a4e-0000-4000-8000-000000000001"
        let first = await api.send("count me in", from: max, toGroup: groupID, clientId: clientID)
        #expect(first.status == 201)
        let gone =
            how == "removed"
            ? await api.call(olivia, "DELETE", "/groups/\(groupID)/members/\(max.id)")
            : await api.call(olivia, "DELETE", "/groups/\(groupID)")
        #expect(gone.status == 204)
        try await api.skipEvents(of: olivia, max)

        let retry = await api.send("count me in", from: max, toGroup: groupID, clientId: clientID)
        #expect(retry.status == 200, "\(retry.text)")
        if retry.status == 200 {
            #expect(try retry.decoded(Message.self).id == first.decoded(Message.self).id)
        }
        #expect(await api.send("still here?", from: max, toGroup: groupID).status == 404)
        try await api.expectEvents([], for: [olivia, max])
    }

    /// The user can no longer see the group in any way: get, list, messages, send, read.
    private func expectShutOut(
        _ user: SocialUser, from groupID: String, circle: Circle, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let api = circle.api
        #expect(await circle.group(groupID, as: user).status == 404, sourceLocation: sourceLocation)
        #expect(try await !circle.groupIDs(of: user).contains(groupID), sourceLocation: sourceLocation)
        #expect(
            await api.call(user, "GET", "/groups/\(groupID)/messages").status == 404, sourceLocation: sourceLocation)
        #expect(await api.send("hello?", from: user, toGroup: groupID).status == 404, sourceLocation: sourceLocation)
        #expect(await api.call(user, "POST", "/groups/\(groupID)/leave").status == 404, sourceLocation: sourceLocation)
    }
}
