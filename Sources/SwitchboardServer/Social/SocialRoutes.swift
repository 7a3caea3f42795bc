import SwitchboardHTTP
import SwitchboardWire

/// Friend requests, friends, blocks, conversations, groups and messages.
struct SocialRoutes {
    let friends: FriendService
    let conversations: ConversationService
    let groups: GroupService
    let authenticator: Authenticator

    func register(in router: inout Router) {
        let auth = authenticator
        let friends = self.friends, conversations = self.conversations, groups = self.groups

        router.add(
            "POST", "/friend-requests",
            auth.require { context, principal in
                .json(
                    try await friends.sendRequest(try context.decode(SendFriendRequest.self), from: principal),
                    status: 201)
            })
        router.add(
            "GET", "/friend-requests",
            auth.require { _, principal in
                .json(try await friends.pendingRequests(for: principal))
            })
        router.add(
            "POST", "/friend-requests/{id}/accept",
            auth.require { context, principal in
                .json(try await friends.accept(context.parameter("id"), by: principal))
            })
        router.add(
            "POST", "/friend-requests/{id}/decline",
            auth.require { context, principal in
                .json(try await friends.decline(context.parameter("id"), by: principal))
            })
        router.add(
            "DELETE", "/friend-requests/{id}",
            auth.require { context, principal in
                try await friends.cancel(context.parameter("id"), by: principal)
                return .noContent
            })

        router.add(
            "GET", "/friends",
            auth.require { _, principal in
                .json(try await friends.friends(of: principal))
            })
        router.add(
            "DELETE", "/friends/{userId}",
            auth.require { context, principal in
                try await friends.removeFriend(context.parameter("userId"), by: principal)
                return .noContent
            })

        router.add(
            "GET", "/blocks",
            auth.require { _, principal in
                .json(try await friends.blocks(of: principal))
            })
        router.add(
            "PUT", "/blocks/{userId}",
            auth.require { context, principal in
                .json(try await friends.block(context.parameter("userId"), by: principal))
            })
        router.add(
            "DELETE", "/blocks/{userId}",
            auth.require { context, principal in
                try await friends.unblock(context.parameter("userId"), by: principal)
                return .noContent
            })

        router.add(
            "GET", "/conversations",
            auth.require { _, principal in
                .json(try await conversations.list(for: principal))
            })
        router.add(
            "GET", "/conversations/{id}",
            auth.require { context, principal in
                .json(try await conversations.get(context.parameter("id"), for: principal))
            })
        router.add(
            "POST", "/conversations/{id}/messages",
            auth.require { context, principal in
                let (message, isNew) = try await conversations.send(
                    try context.decode(SendMessage.self), to: context.parameter("id"), from: principal)
                return .json(message, status: isNew ? 201 : 200)
            })
        router.add(
            "GET", "/conversations/{id}/messages",
            auth.require { context, principal in
                let parameters = context.request.queryParameters
                return .json(
                    try await conversations.messages(
                        in: context.parameter("id"), before: parameters["before"], limit: parameters["limit"],
                        for: principal))
            })
        router.add(
            "PUT", "/conversations/{id}/read",
            auth.require { context, principal in
                .json(
                    try await conversations.markRead(
                        try context.decode(MarkRead.self), in: context.parameter("id"), by: principal))
            })

        router.add(
            "POST", "/groups",
            auth.require { context, principal in
                .json(try await groups.create(try context.decode(CreateGroup.self), by: principal), status: 201)
            })
        router.add(
            "GET", "/groups",
            auth.require { _, principal in
                .json(try await groups.list(for: principal))
            })
        router.add(
            "GET", "/groups/{id}",
            auth.require { context, principal in
                .json(try await groups.get(context.parameter("id"), for: principal))
            })
        router.add(
            "PATCH", "/groups/{id}",
            auth.require { context, principal in
                .json(
                    try await groups.rename(
                        context.parameter("id"), to: try context.decode(RenameGroup.self), by: principal))
            })
        router.add(
            "DELETE", "/groups/{id}",
            auth.require { context, principal in
                try await groups.dissolve(context.parameter("id"), by: principal)
                return .noContent
            })
        router.add(
            "POST", "/groups/{id}/members",
            auth.require { context, principal in
                .json(
                    try await groups.addMembers(
                        try context.decode(AddGroupMembers.self), to: context.parameter("id"), by: principal))
            })
        router.add(
            "DELETE", "/groups/{id}/members/{userId}",
            auth.require { context, principal in
                try await groups.removeMember(context.parameter("userId"), from: context.parameter("id"), by: principal)
                return .noContent
            })
        router.add(
            "POST", "/groups/{id}/leave",
            auth.require { context, principal in
                try await groups.leave(context.parameter("id"), by: principal)
                return .noContent
            })
        router.add(
            "POST", "/groups/{id}/messages",
            auth.require { context, principal in
                let (message, isNew) = try await groups.send(
                    try context.decode(SendMessage.self), to: context.parameter("id"), from: principal)
                return .json(message, status: isNew ? 201 : 200)
            })
        router.add(
            "GET", "/groups/{id}/messages",
            auth.require { context, principal in
                let parameters = context.request.queryParameters
                return .json(
                    try await groups.messages(
                        in: context.parameter("id"), before: parameters["before"], limit: parameters["limit"],
                        for: principal))
            })
        router.add(
            "PUT", "/groups/{id}/read",
            auth.require { context, principal in
                .json(
                    try await groups.markRead(
                        try context.decode(MarkRead.self), in: context.parameter("id"), by: principal))
            })
    }
}
