import Foundation
import SwitchboardKit

// Contacts: friends (each with the conversation a 1:1 call rings in), groups, and friend
// requests, through the SDK's social graph calls.
extension AppModel {
    /// Reads friends, requests and groups again (the snapshot, and after social events).
    func refreshContacts() async {
        guard let session else { return }
        let client = session.client
        do {
            async let friends = client.friends()
            async let requests = client.friendRequests()
            async let groups = client.groups()
            let (newFriends, newRequests, newGroups) = try await (friends, requests, groups)
            guard self.session === session else { return }  // signed out meanwhile
            self.friends = newFriends.sorted {
                $0.user.displayName.localizedCaseInsensitiveCompare($1.user.displayName) == .orderedAscending
            }
            self.requests = newRequests
            self.groups = newGroups
        } catch {
            report(error)
        }
    }

    /// Sends a friend request by username; true when the server took it.
    func sendFriendRequest(toUsername username: String) async -> Bool {
        let name = username.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let session, !name.isEmpty else { return false }
        do {
            _ = try await session.client.sendFriendRequest(toUsername: name)
            await refreshContacts()
            return true
        } catch {
            report(error)
            return false
        }
    }

    func accept(_ request: FriendRequest) async {
        await change { _ = try await $0.acceptFriendRequest(request.id) }
    }

    func decline(_ request: FriendRequest) async {
        await change { _ = try await $0.declineFriendRequest(request.id) }
    }

    func cancel(_ request: FriendRequest) async {
        await change { try await $0.cancelFriendRequest(request.id) }
    }

    func remove(_ friend: Friend) async {
        await change { try await $0.removeFriend(userID: friend.user.id) }
    }

    func call(_ friend: Friend) async {
        await placeCall(scopeKind: .conversation, scopeID: friend.conversationId, name: friend.user.displayName)
    }

    func call(_ group: Group) async {
        await placeCall(scopeKind: .group, scopeID: group.id, name: group.name)
    }

    /// One change on the server, then the contacts read again.
    private func change(_ operation: @Sendable (SwitchboardClient) async throws -> Void) async {
        guard let session else { return }
        do {
            try await operation(session.client)
        } catch {
            report(error)
        }
        await refreshContacts()
    }
}
