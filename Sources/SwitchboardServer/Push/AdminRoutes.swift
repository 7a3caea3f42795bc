import Foundation
import SwitchboardCrypto
import SwitchboardCore
import SwitchboardHTTP

/// `GET /admin/push/status`: the outbox at a glance; `GET /admin/push/devices?userId=`: a
/// user's tokens, each with its last delivery and last failure; behind the admin key.
struct AdminRoutes {
    let store: ServerStore
    /// Empty disables the admin endpoints.
    let adminKey: String

    // Every field is always present, as the document says: `@NullWhenAbsent` writes `null`
    // where the synthesized encoder would leave a nil out.
    struct Outcome: Encodable {
        let provider: String
        let channel: String
        let state: String
        @NullWhenAbsent var reason: String?
        let count: Int
    }

    struct Failure: Encodable {
        let jobId: String
        let callId: String
        let userId: String
        let provider: String
        let channel: String
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

    /// One token of a user's installation, with what its push service last said.
    struct DeviceToken: Encodable {
        let deviceId: String
        let channel: String
        let platform: String
        @NullWhenAbsent var brand: String?
        @NullWhenAbsent var locale: String?
        let tokenSuffix: String
        let registeredAt: String
        /// Whether the session that registered it is still signed in (only then is it rung).
        let bound: Bool
        @NullWhenAbsent var lastSuccessAt: String?
        @NullWhenAbsent var lastFailureAt: String?
        @NullWhenAbsent var lastFailureReason: String?
    }

    struct DeviceTokens: Encodable {
        let userId: String
        let tokens: [DeviceToken]
    }

    func register(in router: inout Router) {
        let store = self.store, adminKey = self.adminKey
        router.add("GET", "/admin/push/devices") { context in
            try Self.requireAdmin(context.request.headers, key: adminKey)
            guard let userID = context.request.queryParameters["userId"]?.lowercased(), UUID(uuidString: userID) != nil
            else {
                throw APIError.validation("'userId' must be a user id", field: "userId")
            }
            let health = try await store.snapshot { try $0.devices.health(of: userID) }
            return .json(
                DeviceTokens(
                    userId: userID,
                    tokens: health.map {
                        DeviceToken(
                            deviceId: $0.deviceID, channel: $0.channel, platform: $0.platform, brand: $0.brand,
                            locale: $0.locale, tokenSuffix: DeviceRoutes.suffix($0.token),
                            registeredAt: $0.registeredAt,
                            bound: $0.bound, lastSuccessAt: $0.lastSuccessAt, lastFailureAt: $0.lastFailureAt,
                            lastFailureReason: $0.lastFailureReason)
                    }))
        }
        router.add("GET", "/admin/push/status") { context in
            try Self.requireAdmin(context.request.headers, key: adminKey)
            let now = CallStore.milliseconds(store.environment.now())
            // It counts over every push job: off the event loop.
            // Every job that ended undelivered after an error: failed ones, and those that then
            // expired or were dropped (a TLS mistake retried for a whole ring window).
            let report = try await store.snapshot(onReaderQueue: true) { try $0.pushJobs.report(failures: 20) }
            let status = Status(
                pending: report.pending,
                oldestPendingAgeSeconds: report.oldestPendingCreatedMS.map { Double(now - $0) / 1000 },
                outcomes: report.outcomes.map {
                    Outcome(
                        provider: $0.provider, channel: $0.channel, state: $0.state, reason: $0.reason, count: $0.count)
                },
                newestFailures: report.newestFailures.map { job in
                    Failure(
                        jobId: job.id, callId: job.callID, userId: job.userID, provider: job.provider,
                        channel: job.channel, tokenSuffix: DeviceRoutes.suffix(job.token),
                        state: job.state, reason: job.reason, lastError: job.lastError, attempts: job.attempts,
                        finishedAt: job.finishedAtMS.map { Timestamp.iso8601(CallStore.date($0)) })
                })
            return .json(status)
        }
    }

    /// `Authorization: Bearer <admin key>`, compared in constant time. With the admin API off
    /// (no `adminKey`), a request without credentials is 401 like any other, and one with
    /// credentials 403 `ADMIN_DISABLED`: no key can open it.
    static func requireAdmin(_ headers: HTTPHeaders, key: String) throws(APIError) {
        guard !key.isEmpty else {
            guard headers["Authorization"] != nil else {
                throw APIError(
                    .unauthorized,
                    "admin key required: Authorization: Bearer <admin key> (the admin endpoints are off: set adminKey, SWITCHBOARD_ADMIN_KEY)"
                )
            }
            throw APIError(.adminDisabled, "set adminKey (SWITCHBOARD_ADMIN_KEY) to enable the admin endpoints")
        }
        guard let header = headers["Authorization"], header.hasPrefix("Bearer "),
            ConstantTime.equals(Array(header.dropFirst(7).utf8), Array(key.utf8))
        else { throw APIError(.unauthorized, "admin key required: Authorization: Bearer <admin key>") }
    }
}
