import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardStore
import SwitchboardWire

/// Webhook events as outbox jobs (kind `webhook`): one job per event and endpoint that wants
/// it, written in the transaction of the change that causes the event. Each attempt POSTs the
/// event's JSON, signed with the endpoint's current secrets (``WebhookSignature``); a 2xx
/// answer delivers it. Anything else (a timeout, a refused connection, a redirect, which is
/// never followed, a 4xx or 5xx) is tried again, the pause doubling from 5 s up to
/// `webhookRetryMaxSeconds` (a `Retry-After` in seconds is honoured, up to a day), until
/// `webhookGiveUpHours` after the event; then it is dead-lettered, and can be sent again through the admin API. The jobs of
/// one call for one endpoint go in order (a `call.ended` never overtakes its `call.ringing`).
enum WebhookOutbox {
    /// The events of one change, written for every enabled endpoint that wants them. `order`
    /// keeps an endpoint's events in sequence (the call's id); nil for an event that needs no
    /// order with others. Returns how many deliveries it wrote.
    @discardableResult
    static func emit<Payload: Encodable>(
        _ type: WebhookEventType, _ data: Payload, order: String?, to endpoints: [WebhookEndpointRecord]? = nil,
        in transaction: WriteTransaction
    ) throws -> Int {
        let endpoints = try (endpoints ?? transaction.webhookEndpoints.all()).filter { $0.wants(type.rawValue) }
        guard !endpoints.isEmpty else { return 0 }
        let eventID = "evt_" + transaction.newID()
        let event = Body(id: eventID, type: type.rawValue, createdAt: transaction.timestamp, data: data)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = String(decoding: try encoder.encode(event), as: UTF8.self)
        for endpoint in endpoints {
            try transaction.enqueue(
                NewOutboxJob(
                    id: "dlv_" + transaction.newID(), kind: .webhook,
                    queue: "webhook:\(endpoint.id):\(order ?? eventID)", target: endpoint.id, payload: body))
        }
        return endpoints.count
    }

    /// The event id and type of a stored delivery's body (for its headers and the admin view).
    static func envelope(of payload: String) -> (id: String, type: String)? {
        (try? JSONDecoder().decode(Envelope.self, from: Data(payload.utf8))).map { ($0.id, $0.type) }
    }

    private struct Envelope: Decodable {
        var id: String
        var type: String
    }

    /// A delivery's body (``WebhookEvent``'s shape, for any encodable data).
    private struct Body<Payload: Encodable>: Encodable {
        let id: String
        let type: String
        let createdAt: String
        let data: Payload
    }
}

/// The handler that makes the deliveries (see ``WebhookOutbox``).
final class WebhookDeliveries: OutboxJobHandler {
    let store: ServerStore
    let settings: WebhookSettings
    /// One client per endpoint (and its URL's origin), made on first use: endpoints on one
    /// host never share connections, so a hung one holds up no other.
    private let clients = Mutex<[String: (origin: String, client: HTTP2Client)]>([:])

    /// Requests one endpoint may have open at once: the outbox runner's share per target.
    let maxConnectionsPerEndpoint: Int

    init(store: ServerStore, settings: WebhookSettings, maxConnectionsPerEndpoint: Int = 8) {
        self.store = store
        self.settings = settings
        self.maxConnectionsPerEndpoint = maxConnectionsPerEndpoint
    }

    var lease: TimeInterval { TimeInterval(settings.timeoutSeconds) + 30 }
    var giveUpAfter: TimeInterval? { TimeInterval(settings.giveUpHours) * 3600 }

    func retryDelay(afterFailures failures: Int) -> TimeInterval {
        min(TimeInterval(settings.retryMaxSeconds), 5 * pow(2, Double(max(0, min(failures, 20)))))
    }

    /// Splits an endpoint's URL into its origin and the request's path (with its query).
    static func split(_ url: String) -> (origin: String, path: String)? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil
        else { return nil }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let origin = "\(scheme)://\(hostPart)" + (components.port.map { ":\($0)" } ?? "")
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        return (origin, path)
    }

    private func client(for endpoint: String, origin: String) throws -> HTTP2Client {
        let (client, replaced) = try clients.withLock { clients -> (HTTP2Client, HTTP2Client?) in
            if let kept = clients[endpoint], kept.origin == origin { return (kept.client, nil) }
            var configuration = HTTP2ClientConfiguration(
                baseURL: origin, maxConnections: maxConnectionsPerEndpoint,
                requestTimeout: .seconds(settings.timeoutSeconds),
                connectTimeout: .seconds(min(settings.timeoutSeconds, 5)), priorKnowledge: false,
                reconnectInitialDelay: .milliseconds(50), reconnectMaximumDelay: .seconds(1),
                maxResponseBodySize: 64 * 1024)
            configuration.acceptsHTTP1 = true
            configuration.discardsOversizedBody = true
            let client = try HTTP2Client(configuration: configuration)
            let old = clients[endpoint]?.client
            clients[endpoint] = (origin, client)
            return (client, old)
        }
        // The endpoint moved to another origin: its old connections go.
        if let replaced { Task { await replaced.shutdown() } }
        return client
    }

    /// An endpoint was deleted: its connections go.
    func forget(endpoint: String) {
        if let gone = clients.withLock({ $0.removeValue(forKey: endpoint) }) {
            Task { await gone.client.shutdown() }
        }
    }

    /// Stops every client's connections (the server is stopping).
    func shutdown() async {
        for kept in clients.withLock({ Array($0.values) }) { await kept.client.shutdown() }
    }

    func attempt(_ job: OutboxJob) async -> OutboxAttemptResult {
        let endpoint: WebhookEndpointRecord?
        do {
            endpoint = try await store.snapshot { try $0.webhookEndpoints.endpoint(job.target) }
        } catch {
            return OutboxAttemptResult(outcome: .retry(notBefore: nil), error: "store: \(error)", attempted: false)
        }
        guard let endpoint else {
            return OutboxAttemptResult(outcome: .giveUp, error: "the endpoint was deleted", attempted: false)
        }
        guard endpoint.enabled else {
            // Nothing was sent: no attempt counts. Enabling the endpoint makes it due at once.
            return OutboxAttemptResult(
                outcome: .retry(notBefore: TimeInterval(settings.retryMaxSeconds)), error: "the endpoint is disabled",
                attempted: false)
        }
        guard let (origin, path) = Self.split(endpoint.url) else {
            return OutboxAttemptResult(outcome: .retry(notBefore: nil), error: "the endpoint's URL is not usable")
        }
        let body = Array(job.payload.utf8)
        let now = Int64(store.environment.now().timeIntervalSince1970.rounded(.down))
        let event = WebhookOutbox.envelope(of: job.payload)
        let request = HTTP2Request(
            method: "POST", path: path,
            headers: [
                ("content-type", "application/json"),
                ("user-agent", "Switchboard-Webhooks/1"),
                (
                    WebhookSignature.headerName.lowercased(),
                    WebhookSignature.header(body: body, secrets: endpoint.secrets, at: now)
                ),
                ("switchboard-event-id", event?.id ?? ""),
                ("switchboard-event-type", event?.type ?? ""),
                ("switchboard-delivery-id", job.id),
                ("switchboard-delivery-attempt", String(job.attempts + 1)),
            ],
            body: body)
        do {
            let response = try await client(for: endpoint.id, origin: origin).send(request)
            if (200..<300).contains(response.status) {
                return OutboxAttemptResult(outcome: .done, status: response.status)
            }
            let retryAfter = response.headerValue("retry-after").flatMap { TimeInterval($0) }
            let what = (300..<400).contains(response.status) ? "a redirect (not followed)" : "HTTP \(response.status)"
            return OutboxAttemptResult(
                outcome: .retry(notBefore: retryAfter), status: response.status, error: "the endpoint answered \(what)")
        } catch {
            return OutboxAttemptResult(outcome: .retry(notBefore: nil), error: String(describing: error))
        }
    }

}
