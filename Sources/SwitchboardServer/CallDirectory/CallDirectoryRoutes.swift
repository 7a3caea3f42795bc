import SwitchboardHTTP
import SwitchboardWire

/// Call Directory lists (SPEC §11): `/call-directory` for the signed-in user, and
/// `/admin/organizations…` (behind the admin key) for organisations, their members and lists.
struct CallDirectoryRoutes {
    let service: CallDirectoryService
    let authenticator: Authenticator
    let adminKey: String

    func register(in router: inout Router) {
        let auth = authenticator, service = self.service, adminKey = self.adminKey
        router.add(
            "GET", "/call-directory",
            auth.require { context, principal in
                let since = try context.request.queryParameters["since"].map { text throws(APIError) in
                    try EventRoutes.cursor(text, name: "since")
                }
                return .json(try await service.list(for: principal, since: since))
            })
        router.add(
            "GET", "/call-directory/own",
            auth.require { _, principal in
                .json(try await service.own(for: principal))
            })
        router.add(
            "PATCH", "/call-directory",
            auth.require { context, principal in
                .json(
                    try await service.change(
                        try JSONBody.decode(CallDirectoryChanges.self, from: context.request.body), for: principal))
            })

        router.add("POST", "/admin/organizations") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            return .json(
                try await service.createOrganization(
                    try JSONBody.decode(OrganizationName.self, from: context.request.body)), status: 201)
        }
        router.add("GET", "/admin/organizations") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            return .json(try await service.organizations())
        }
        router.add("GET", "/admin/organizations/{id}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            return .json(try await service.organization(context.parameter("id")))
        }
        router.add("PUT", "/admin/organizations/{id}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            return .json(
                try await service.rename(
                    context.parameter("id"), try JSONBody.decode(OrganizationName.self, from: context.request.body)))
        }
        router.add("DELETE", "/admin/organizations/{id}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            try await service.deleteOrganization(context.parameter("id"))
            return .noContent
        }
        router.add("GET", "/admin/organizations/{id}/members") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            return .json(try await service.members(of: context.parameter("id")))
        }
        router.add("PUT", "/admin/organizations/{id}/members/{userId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            try await service.addMember(context.parameter("userId"), to: context.parameter("id"))
            return .noContent
        }
        router.add("DELETE", "/admin/organizations/{id}/members/{userId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            try await service.removeMember(context.parameter("userId"), from: context.parameter("id"))
            return .noContent
        }
        router.add("GET", "/admin/organizations/{id}/call-directory") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            return .json(try await service.organizationEntries(context.parameter("id")))
        }
        router.add("PATCH", "/admin/organizations/{id}/call-directory") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let changes = try JSONBody.decode(CallDirectoryChanges.self, from: context.request.body)
            return .json(try await service.changeOrganization(context.parameter("id"), changes))
        }
    }
}
