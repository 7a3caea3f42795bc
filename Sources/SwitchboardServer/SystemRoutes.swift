import Foundation
import Synchronization
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardObservability

/// `/healthz` (liveness), `/readyz` (readiness), `/metrics` and `/openapi.json`.
struct SystemRoutes {
    let database: any SQLStore
    let metrics: Metrics
    /// The schema version this build migrates to.
    let expectedSchemaVersion: Int
    /// The push channels this server was configured with (their names).
    let pushChannels: [String]
    let probe = CachedProbe.read()
    let writeProbe = CachedProbe.write()

    /// `/readyz`: whether this instance can do its work now.
    struct Readiness: Encodable {
        /// `ready` or `not_ready`.
        let status: String
        /// Why not, when not ready.
        let reason: String?
        /// `ok`, or what the store said to a write.
        let database: String
        let schemaVersion: Int
        let expectedSchemaVersion: Int
        /// The push channels with credentials (the others answer every job `ProviderNotConfigured`).
        let pushChannels: [String]
    }

    struct Health: Encodable {
        let status: String
        let database: String
    }

    /// The answer when all is well, encoded once.
    static let healthy = HTTPResponse.json(Health(status: "ok", database: "ok"))

    func register(in router: inout Router) {
        router.add("GET", "/healthz") { [database, probe] context in
            do {
                try await probe.check { try await database.probe() }
                return Self.healthy
            } catch is CancellationError {
                // The client went away; its reply is dropped, and the database is not at fault.
                throw CancellationError()
            } catch {
                context.logger.error(
                    "health check: database unavailable", ["error": .string(String(describing: error))])
                return .json(Health(status: "unavailable", database: "unavailable"), status: 503)
            }
        }
        router.add("GET", "/readyz") { [database, writeProbe, expectedSchemaVersion, pushChannels] context in
            let version = database.migratedVersion
            let written: String
            do {
                try await writeProbe.check {
                    let stamp = String(Int64(Date().timeIntervalSince1970 * 1000))
                    _ = try await database.transaction(
                        { executor in
                            try SQLServerStateRepository(connection: executor).set("ready_probe", to: stamp)
                        }, afterCommit: nil)
                }
                written = "ok"
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                written = CachedProbe.describe(error)
                context.logger.error(
                    "readiness: the database takes no write", ["error": .string(String(describing: error))])
            }
            var reason: String?
            if version != expectedSchemaVersion {
                reason = "the schema is at version \(version), this build needs \(expectedSchemaVersion)"
            } else if written != "ok" {
                reason = "the database takes no write: \(written)"
            }
            let readiness = Readiness(
                status: reason == nil ? "ready" : "not_ready", reason: reason, database: written,
                schemaVersion: version,
                expectedSchemaVersion: expectedSchemaVersion, pushChannels: pushChannels)
            return .json(readiness, status: reason == nil ? 200 : 503)
        }
        router.add("GET", "/metrics") { [metrics] _ in
            HTTPResponse(
                status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: Array(metrics.render().utf8))
        }
        router.add("GET", "/openapi.json") { _ in
            HTTPResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: Array(openAPIDocumentJSON.utf8))
        }
    }
}

/// Runs a database check at most once a second and answers from its latest outcome meanwhile,
/// so a load balancer polling hard never turns into database load. The health check's read
/// (`SELECT 1`) remembers only successes (a failure is asked again at once); the readiness
/// check's write remembers failures too, in plain words.
final class CachedProbe: Sendable {
    static let freshness = Duration.seconds(1)
    private let last = Mutex<(at: ContinuousClock.Instant, failure: String?)?>(nil)
    private let remembersFailures: Bool

    init(remembersFailures: Bool) {
        self.remembersFailures = remembersFailures
    }

    /// The health check's: can the store serve a read.
    static func read() -> CachedProbe { CachedProbe(remembersFailures: false) }

    /// The readiness check's: can the store take a write (`server_state.ready_probe`): a
    /// read-only or full database, or a lost write lock, shows here while reads still work.
    static func write() -> CachedProbe { CachedProbe(remembersFailures: true) }

    /// Runs `probe` unless an outcome younger than ``freshness`` is at hand; throws
    /// ``ProbeFailure`` for a failure.
    func check(_ probe: () async throws -> Void) async throws {
        let now = ContinuousClock.now
        if let last = last.withLock({ $0 }), now - last.at < Self.freshness, last.failure == nil || remembersFailures {
            if let failure = last.failure { throw ProbeFailure(description: failure) }
            return
        }
        do {
            try await probe()
            last.withLock { $0 = (now, nil) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            let text = Self.describe(error)
            if remembersFailures { last.withLock { $0 = (now, text) } }
            throw ProbeFailure(description: text)
        }
    }

    /// A store error in plain words.
    static func describe(_ error: any Error) -> String {
        if let failure = error as? ProbeFailure { return failure.description }
        guard let store = error as? StoreError else { return String(describing: error) }
        switch store.code {
        case .readOnly: return "the database is read-only"
        case .full: return "the disk is full"
        case .busy, .locked: return "the database is locked by someone else"
        default: return store.message
        }
    }
}

struct ProbeFailure: Error, CustomStringConvertible {
    let description: String
}
