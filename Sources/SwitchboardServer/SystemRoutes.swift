import Synchronization
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardObservability

/// `/healthz`, `/metrics` and `/openapi.json`.
struct SystemRoutes {
    let database: any SQLStore
    let metrics: Metrics
    let probe = DatabaseProbe()

    struct Health: Encodable {
        let status: String
        let database: String
    }

    /// The answer when all is well, encoded once.
    static let healthy = HTTPResponse.json(Health(status: "ok", database: "ok"))

    func register(in router: inout Router) {
        router.add("GET", "/healthz") { [database, probe] context in
            do {
                try await probe.check(database)
                return Self.healthy
            } catch is CancellationError {
                // The client went away; its reply is dropped, and the database is not at fault.
                throw CancellationError()
            } catch {
                context.logger.error("health check: database unavailable", ["error": .string(String(describing: error))])
                return .json(Health(status: "unavailable", database: "unavailable"), status: 503)
            }
        }
        router.add("GET", "/metrics") { [metrics] _ in
            HTTPResponse(
                status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: Array(metrics.render().utf8))
        }
        router.add("GET", "/openapi.json") { _ in
            HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Array(openAPIDocumentJSON.utf8))
        }
    }
}

/// Asks the database at most once a second; the health check reports the latest answer, so a
/// load balancer polling hard never turns into database load.
final class DatabaseProbe: Sendable {
    private let lastSuccess = Mutex<ContinuousClock.Instant?>(nil)
    static let freshness = Duration.seconds(1)

    func check(_ database: any SQLStore) async throws {
        let now = ContinuousClock.now
        if let last = lastSuccess.withLock({ $0 }), now - last < Self.freshness { return }
        try await database.probe()
        lastSuccess.withLock { $0 = now }
    }
}
