import Foundation
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardWire

/// `/admin/webhooks`: the app's webhook endpoints (where events go, which ones, the secrets
/// that sign them), their deliveries (recent attempts, status, latency) and resending one;
/// behind the admin key.
struct WebhookRoutes {
    let store: ServerStore
    let adminKey: String
    let settings: WebhookSettings
    /// Told of a deleted endpoint (its connections go).
    var deleted: @Sendable (String) -> Void = { _ in }

    struct NewEndpoint: Decodable {
        var url: String
        var events: [String]?
        var enabled: Bool?
        var description: String?
        var secret: String?
    }

    struct EndpointChange: Decodable {
        var url: String?
        var events: [String]?
        var enabled: Bool?
        var description: String?
    }

    struct Rotation: Decodable {
        var secret: String?
        var keepPrevious: Bool?
    }

    /// An endpoint as the API shows it; `secrets` only in the answers that made one.
    struct EndpointView: Encodable {
        let id: String
        let url: String
        let events: [String]
        let enabled: Bool
        let description: String
        /// The last 4 characters of each valid secret, newest first.
        let secretHints: [String]
        @NullWhenAbsent var secrets: [String]?
        let createdAt: String
        let updatedAt: String
    }

    struct EndpointList: Encodable {
        let endpoints: [EndpointView]
    }

    struct AttemptView: Encodable {
        let at: String
        @NullWhenAbsent var status: Int?
        let latencyMs: Int64
        @NullWhenAbsent var error: String?
    }

    struct DeliveryView: Encodable {
        let id: String
        let eventId: String
        let eventType: String
        let state: String
        let attempts: Int
        let createdAt: String
        @NullWhenAbsent var nextAttemptAt: String?
        @NullWhenAbsent var finishedAt: String?
        @NullWhenAbsent var lastStatus: Int?
        @NullWhenAbsent var lastLatencyMs: Int64?
        @NullWhenAbsent var lastError: String?
        let recentAttempts: [AttemptView]
    }

    struct DeliveryList: Encodable {
        let deliveries: [DeliveryView]
    }

    func register(in router: inout Router) {
        let store = self.store, adminKey = self.adminKey, settings = self.settings, forget = self.deleted
        router.add("POST", "/admin/webhooks") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let request = try context.decode(NewEndpoint.self)
            let url = try Self.url(request.url)
            let events = try Self.events(request.events ?? [])
            let description = try Self.description(request.description ?? "")
            let secret = try request.secret.map(Self.secret) ?? Self.newSecret()
            let endpoint = try await store.write { transaction in
                let endpoint = WebhookEndpointRecord(
                    id: "whk_" + transaction.newID(), url: url, events: events, enabled: request.enabled ?? true,
                    secrets: [secret], description: description, createdAt: transaction.timestamp,
                    updatedAt: transaction.timestamp)
                try transaction.webhookEndpoints.save(endpoint)
                return endpoint
            }
            return .json(Self.view(endpoint, showSecrets: true), status: 201)
        }
        router.add("GET", "/admin/webhooks") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let endpoints = try await store.snapshot { try $0.webhookEndpoints.all() }
            return .json(EndpointList(endpoints: endpoints.map { Self.view($0, showSecrets: false) }))
        }
        router.add("GET", "/admin/webhooks/{endpointId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId")
            guard let endpoint = try await store.snapshot({ try $0.webhookEndpoints.endpoint(id) }) else {
                throw Self.noEndpoint(id)
            }
            return .json(Self.view(endpoint, showSecrets: false))
        }
        router.add("PATCH", "/admin/webhooks/{endpointId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId")
            let change = try context.decode(EndpointChange.self)
            let url = try change.url.map(Self.url)
            let events = try change.events.map(Self.events)
            let description = try change.description.map(Self.description)
            // Enabling it (again) makes its waiting deliveries due at once.
            let endpoint = try await Self.change(id, in: store, hurry: change.enabled == true) { endpoint in
                if let url { endpoint.url = url }
                if let events { endpoint.events = events }
                if let enabled = change.enabled { endpoint.enabled = enabled }
                if let description { endpoint.description = description }
            }
            return .json(Self.view(endpoint, showSecrets: false))
        }
        router.add("DELETE", "/admin/webhooks/{endpointId}") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId")
            let deleted = try await store.write { transaction -> Bool in
                guard try transaction.webhookEndpoints.delete(id) else { return false }
                try transaction.outboxJobs.deleteAll(of: .webhook, target: id)
                return true
            }
            guard deleted else { throw Self.noEndpoint(id) }
            forget(id)
            return .noContent
        }
        // Rotation: the new secret signs from now on, beside the previous one (receivers move
        // over at their pace), until the previous one is dropped.
        router.add("POST", "/admin/webhooks/{endpointId}/secrets") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId")
            let rotation = try context.decode(Rotation.self)
            let secret = try rotation.secret.map(Self.secret) ?? Self.newSecret()
            let endpoint = try await Self.change(id, in: store) { endpoint in
                endpoint.secrets = [secret] + (rotation.keepPrevious ?? true ? Array(endpoint.secrets.prefix(1)) : [])
            }
            return .json(Self.view(endpoint, showSecrets: true))
        }
        router.add("DELETE", "/admin/webhooks/{endpointId}/secrets/previous") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId")
            let endpoint = try await Self.change(id, in: store) { $0.secrets = Array($0.secrets.prefix(1)) }
            return .json(Self.view(endpoint, showSecrets: false))
        }
        router.add("GET", "/admin/webhooks/{endpointId}/deliveries") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId")
            let limit = try MessageStore.limit(context.request.queryParameters["limit"])
            let found = try await store.snapshot { snapshot -> [(OutboxJob, [OutboxAttempt])]? in
                guard try snapshot.webhookEndpoints.endpoint(id) != nil else { return nil }
                return try snapshot.outboxJobs.jobs(of: .webhook, target: id, limit: limit).map {
                    ($0, try snapshot.outboxJobs.attempts(of: $0.id, limit: 5))
                }
            }
            guard let found else { throw Self.noEndpoint(id) }
            return .json(DeliveryList(deliveries: found.map { Self.view($0.0, attempts: $0.1) }))
        }
        router.add("POST", "/admin/webhooks/{endpointId}/deliveries/{deliveryId}/resend") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            let id = context.parameter("endpointId"), deliveryID = context.parameter("deliveryId")
            let giveUpMS = Int64(settings.giveUpHours) * 3_600_000
            let job = try await store.write { transaction -> OutboxJob? in
                guard let job = try transaction.outboxJobs.job(deliveryID), job.kind == .webhook, job.target == id
                else { return nil }
                let now = CallStore.milliseconds(transaction.date)
                guard try transaction.outboxJobs.resend(deliveryID, at: now, giveUpAtMS: now + giveUpMS) else {
                    throw APIError(.deliveryPending, "the delivery is still pending; it is sent again by itself")
                }
                transaction.noteOutboxJobs()
                return try transaction.outboxJobs.job(deliveryID)
            }
            guard let job else { throw APIError.notFound("no delivery '\(deliveryID)' of endpoint '\(id)'") }
            return .json(Self.view(job, attempts: []), status: 202)
        }
    }

    private static func noEndpoint(_ id: String) -> APIError { APIError.notFound("no webhook endpoint '\(id)'") }

    /// Changes an endpoint in one transaction; 404 when there is none.
    private static func change(
        _ id: String, in store: ServerStore, hurry: Bool = false,
        _ body: @escaping @Sendable (inout WebhookEndpointRecord) -> Void
    ) async throws -> WebhookEndpointRecord {
        let endpoint = try await store.write { transaction -> WebhookEndpointRecord? in
            guard var endpoint = try transaction.webhookEndpoints.endpoint(id) else { return nil }
            body(&endpoint)
            endpoint.updatedAt = transaction.timestamp
            try transaction.webhookEndpoints.save(endpoint)
            if hurry {
                try transaction.outboxJobs.hurry(.webhook, target: id, at: CallStore.milliseconds(transaction.date))
                transaction.noteOutboxJobs()
            }
            return endpoint
        }
        guard let endpoint else { throw noEndpoint(id) }
        return endpoint
    }

    /// What the document's pattern allows: http:// or https://, a DNS name, IPv4 or bracketed
    /// IPv6 host, an optional port, and a path and query of URL characters (percent-escapes
    /// well formed); no credentials, no fragment.
    private static let urlPattern = try? NSRegularExpression(
        pattern:
            "^[Hh][Tt][Tt][Pp][Ss]?://(?:\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?(?:[/?](?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"
    )

    /// An absolute http:// or https:// URL with a host, no credentials and no fragment, up to 2048 bytes.
    static func url(_ text: String) throws(APIError) -> String {
        let whole = NSRange(text.startIndex..., in: text)
        guard (10...2048).contains(text.utf8.count), urlPattern?.firstMatch(in: text, range: whole) != nil,
            WebhookDeliveries.split(text) != nil
        else {
            throw APIError.validation(
                "'url' must be an absolute http:// or https:// URL with a host, without credentials or fragment, up to 2048 bytes",
                field: "url")
        }
        return text
    }

    /// Known event types, each once; empty for every type.
    static func events(_ list: [String]) throws(APIError) -> [String] {
        let known = Set(WebhookEventType.known.map(\.rawValue))
        for type in list where !known.contains(type) {
            throw APIError.validation(
                "'events' lists '\(type)'; the types are \(WebhookEventType.known.map(\.rawValue).joined(separator: ", "))",
                field: "events")
        }
        guard Set(list).count == list.count else {
            throw APIError.validation("'events' lists a type twice", field: "events")
        }
        return list
    }

    static func description(_ text: String) throws(APIError) -> String {
        guard text.unicodeScalars.count <= 200 else {
            throw APIError.validation("'description' must be at most 200 characters", field: "description")
        }
        return text
    }

    /// 16 to 128 printable ASCII characters without spaces.
    static func secret(_ text: String) throws(APIError) -> String {
        guard (16...128).contains(text.utf8.count), text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw APIError.validation(
                "'secret' must be 16 to 128 printable ASCII characters without spaces", field: "secret")
        }
        return text
    }

    static func newSecret() -> String { "whsec_" + SecureRandom.token(byteCount: 32) }

    static func view(_ endpoint: WebhookEndpointRecord, showSecrets: Bool) -> EndpointView {
        EndpointView(
            id: endpoint.id, url: endpoint.url, events: endpoint.events, enabled: endpoint.enabled,
            description: endpoint.description, secretHints: endpoint.secrets.map { String($0.suffix(4)) },
            secrets: showSecrets ? endpoint.secrets : nil, createdAt: endpoint.createdAt,
            updatedAt: endpoint.updatedAt)
    }

    static func view(_ job: OutboxJob, attempts: [OutboxAttempt]) -> DeliveryView {
        let event = WebhookOutbox.envelope(of: job.payload)
        func time(_ ms: Int64) -> String { Timestamp.iso8601(CallStore.date(ms)) }
        return DeliveryView(
            id: job.id, eventId: event?.id ?? "", eventType: event?.type ?? "", state: job.state.rawValue,
            attempts: job.attempts, createdAt: time(job.createdAtMS),
            nextAttemptAt: job.state == .pending ? time(job.nextAttemptMS) : nil,
            finishedAt: job.finishedAtMS.map(time), lastStatus: job.lastStatus, lastLatencyMs: job.lastLatencyMS,
            lastError: job.lastError,
            recentAttempts: attempts.map {
                AttemptView(at: time($0.atMS), status: $0.status, latencyMs: $0.latencyMS, error: $0.error)
            })
    }
}
