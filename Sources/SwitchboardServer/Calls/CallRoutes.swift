import SwitchboardHTTP
import SwitchboardWire

/// `/calls…`.
struct CallRoutes {
    let service: CallService
    let authenticator: Authenticator

    func register(in router: inout Router) {
        let auth = authenticator, service = self.service
        router.add(
            "POST", "/calls",
            auth.require { context, principal in
                let (call, isNew) = try await service.create(try context.decode(CreateCall.self), by: principal)
                return .json(call, status: isNew ? 201 : 200)
            })
        router.add(
            "GET", "/calls/active",
            auth.require { _, principal in
                .json(try await service.active(for: principal))
            })
        router.add(
            "GET", "/calls/current",
            auth.require { context, principal in
                let parameters = context.request.queryParameters
                let call = try await service.current(
                    scopeKind: parameters["scopeKind"], scopeID: parameters["scopeId"], for: principal)
                return .json(call)
            })
        router.add(
            "GET", "/calls/history",
            auth.require { context, principal in
                let parameters = context.request.queryParameters
                return .json(
                    try await service.history(
                        scopeKind: parameters["scopeKind"], scopeID: parameters["scopeId"], for: principal))
            })
        router.add(
            "GET", "/calls/{id}",
            auth.require { context, principal in
                .json(try await service.get(context.parameter("id"), for: principal))
            })
        for action in [CallService.Action.accept, .decline, .join, .leave, .cancel] {
            let takesOptions = action == .accept || action == .join
            router.add(
                "POST", "/calls/{id}/\(action.rawValue)",
                auth.require { context, principal in
                    // accept and join take an optional {"mediaToken": true} (an empty body is none),
                    // or ?mediaToken=true: a request without a body leaves the phone as one packet.
                    let options =
                        takesOptions && !context.request.body.isEmpty
                        ? try context.decode(AnswerOptions.self) : AnswerOptions()
                    let query =
                        takesOptions ? try Self.flag(context.request.queryParameters["mediaToken"], "mediaToken") : nil
                    let (call, media) = try await service.perform(
                        action, on: context.parameter("id"), by: principal,
                        mediaToken: options.mediaToken == true || query == true,
                        preauthorization: action == .join ? options.preauthorization : nil)
                    return .json(call, media: media)
                })
        }
        router.add(
            "POST", "/calls/{id}/media-token",
            auth.require { context, principal in
                // ?wait=S (0-25, default 0): the caller of a ringing call is answered once it is
                // answered (or after S seconds), as a long poll is.
                let wait =
                    try context.request.queryParameters["wait"].map { text throws(APIError) in
                        try EventRoutes.waitSeconds(text)
                    } ?? 0
                return .json(try await service.mediaToken(context.parameter("id"), for: principal, wait: wait))
            })
    }

    /// A boolean query parameter: `true` or `false`, absent is nil, anything else a 400.
    static func flag(_ value: String?, _ name: String) throws(APIError) -> Bool? {
        switch value {
        case nil: nil
        case "true": true
        case "false": false
        default: throw APIError.validation("query parameter '\(name)' must be true or false", field: name)
        }
    }
}
