import SwitchboardHTTP
import SwitchboardWire

/// `/e2ee/devices` and the per-scope queue routes `/e2ee/{conversations|groups}/{id}/…`.
struct E2EERoutes {
    let service: E2EEService
    let authenticator: Authenticator

    func register(in router: inout Router) {
        let auth = authenticator, service = self.service
        router.add(
            "POST", "/e2ee/devices",
            auth.require { context, principal in
                let (device, isNew) = try await service.register(
                    try context.decode(RegisterE2EEDevice.self), by: principal)
                return .json(device, status: isNew ? 201 : 200)
            })
        router.add(
            "GET", "/e2ee/devices",
            auth.require { _, principal in
                .json(try await service.devices(of: principal))
            })
        router.add(
            "DELETE", "/e2ee/devices/{deviceId}",
            auth.require { context, principal in
                try await service.remove(context.parameter("deviceId"), by: principal)
                return .noContent
            })
        for (prefix, scope) in [
            ("/e2ee/conversations", MessageScope.conversation), ("/e2ee/groups", MessageScope.group),
        ] {
            router.add(
                "GET", "\(prefix)/{id}/devices",
                auth.require { context, principal in
                    .json(try await service.devices(in: scope(context.parameter("id")), for: principal))
                })
            router.add(
                "POST", "\(prefix)/{id}/messages",
                auth.require { context, principal in
                    let (result, isNew) = try await service.send(
                        try context.decode(SendE2EEMessage.self), in: scope(context.parameter("id")), by: principal)
                    return .json(result, status: isNew ? 201 : 200)
                })
            router.add(
                "GET", "\(prefix)/{id}/events",
                auth.require { context, principal in
                    let query = context.request.queryParameters
                    return .json(
                        try await service.events(
                            in: scope(context.parameter("id")), deviceID: query["deviceId"], after: query["after"],
                            for: principal))
                })
        }
    }
}
