import Foundation
import SwitchboardCrypto
import SwitchboardCore
import SwitchboardHTTP

/// `GET /admin/push/status`: the outbox at a glance, behind the admin key.
struct AdminRoutes {
    let store: ServerStore
    /// Empty disables the admin endpoints.
    let adminKey: String

    // Every field is always present, as the document says: `@NullWhenAbsent` writes `null`
    // where the synthesized encoder would leave a nil out.
    struct Outcome: Encodable {
        let provider: String
        let state: String
        @NullWhenAbsent var reason: String?
        let count: Int
    }

    struct Failure: Encodable {
        let jobId: String
        let callId: String
        let userId: String
        let provider: String
        let tokenSuffix: String
        let state: String
        @NullWhenAbsent var reason: String?
        @NullWhenAbsent var lastError: String?
        let attempts: Int
        @NullWhenAbsent var finishedAt: String?
    }

    struct Status: Encodable {
        let pending: Int
        /// Null when nothing is pending.
        @NullWhenAbsent var oldestPendingAgeSeconds: Double?
        let outcomes: [Outcome]
        let newestFailures: [Failure]
    }

    func register(in router: inout Router) {
        let store = self.store, adminKey = self.adminKey
        router.add("GET", "/admin/push/status") { context in
            try Self.requireAdmin(context.request.headers, key: adminKey)
            let now = CallStore.milliseconds(store.environment.now())
            // It counts over every push job: off the event loop.
            let status = try await store.read(onReaderQueue: true) { connection -> Status in
                let queue = try connection.query(
                    "SELECT count(*) AS pending, min(created_at_ms) AS oldest FROM push_jobs WHERE state = 'pending'"
                ).first
                let oldest = try queue?.optionalInt64("oldest")
                let outcomes = try connection.query(
                    "SELECT provider, state, reason, count(*) AS n FROM push_jobs WHERE state != 'pending' GROUP BY provider, state, reason ORDER BY provider, state, n DESC"
                ).map { Outcome(provider: try $0.string("provider"), state: try $0.string("state"), reason: try $0.optionalString("reason"), count: try $0.int("n")) }
                // Every job that ended undelivered after an error: failed ones, and those that then
                // expired or were dropped (a TLS mistake retried for a whole ring window).
                let failures = try connection.query(
                    "SELECT * FROM push_jobs WHERE last_error IS NOT NULL AND state != 'pending' AND state != 'delivered' ORDER BY finished_at_ms DESC LIMIT 20"
                ).map { row in
                    Failure(
                        jobId: try row.string("id"), callId: try row.string("call_id"), userId: try row.string("user_id"),
                        provider: try row.string("provider"), tokenSuffix: DeviceRoutes.suffix(try row.string("token")),
                        state: try row.string("state"), reason: try row.optionalString("reason"),
                        lastError: try row.optionalString("last_error"), attempts: try row.int("attempts"),
                        finishedAt: try row.optionalInt64("finished_at_ms").map { Timestamp.iso8601(CallStore.date($0)) })
                }
                return Status(
                    pending: try queue?.int("pending") ?? 0, oldestPendingAgeSeconds: oldest.map { Double(now - $0) / 1000 },
                    outcomes: outcomes, newestFailures: failures)
            }
            return .json(status)
        }
    }

    /// `Authorization: Bearer <admin key>`, compared in constant time.
    static func requireAdmin(_ headers: HTTPHeaders, key: String) throws(APIError) {
        guard !key.isEmpty else {
            throw APIError(status: 403, code: "ADMIN_DISABLED", message: "set adminKey (SWITCHBOARD_ADMIN_KEY) to enable the admin endpoints")
        }
        guard let header = headers["Authorization"], header.hasPrefix("Bearer "),
            ConstantTime.equals(Array(header.dropFirst(7).utf8), Array(key.utf8))
        else { throw APIError(status: 401, code: "UNAUTHORIZED", message: "admin key required: Authorization: Bearer <admin key>") }
    }
}
