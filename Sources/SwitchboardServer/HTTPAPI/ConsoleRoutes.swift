import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardWire

/// `GET /admin/console?minutes=`: what the operator console (`/console/`) draws, behind the
/// admin key: the live calls, and over the last `minutes` (5 to 1,440, default 60) the calls
/// started per minute, each answered call's ring-to-answer time and each delivered push's time
/// from its creation to its delivery, by channel. The push outbox's counts and newest failures
/// are `GET /admin/push/status`; the console reads both.
struct ConsoleRoutes {
    let store: ServerStore
    let adminKey: String

    struct Sample: Encodable {
        /// When it happened (the answer, the delivery).
        let at: String
        let seconds: Double
        @NullWhenAbsent var channel: String?
    }

    struct Overview: Encodable {
        let generatedAt: String
        let minutes: Int
        /// The newest ringing and active calls (at most 50).
        let liveCalls: [CallInfo]
        /// Calls started in each minute of the window, oldest first; the last is the current one.
        let callsPerMinute: [Int]
        let ringToAnswer: [Sample]
        let pushLatency: [Sample]
    }

    func register(in router: inout Router) {
        let store = self.store, adminKey = self.adminKey
        router.add("GET", "/admin/console") { context in
            try AdminRoutes.requireAdmin(context.request.headers, key: adminKey)
            var minutes = 60
            if let text = context.request.queryParameters["minutes"] {
                guard let value = Int(text), (5...1440).contains(value) else {
                    throw APIError.validation("'minutes' must be a whole number from 5 to 1440", field: "minutes")
                }
                minutes = value
            }
            let nowMS = CallStore.milliseconds(store.environment.now())
            let sinceMS = (nowMS / 60_000 - Int64(minutes - 1)) * 60_000
            let (live, timings, deliveries) = try await store.snapshot(onReaderQueue: true) { snapshot in
                let live = try snapshot.calls.liveCallIDs(limit: 50).compactMap { try snapshot.calls.load($0) }
                return (
                    live.map { CallStore.info($0.call) }, try snapshot.calls.callTimings(sinceMS: sinceMS),
                    try snapshot.pushJobs.deliveries(sinceMS: sinceMS)
                )
            }
            return .json(
                Self.overview(minutes: minutes, nowMS: nowMS, live: live, timings: timings, deliveries: deliveries))
        }
    }

    /// The overview from what the store read (pure: tested on given numbers).
    static func overview(
        minutes: Int, nowMS: Int64, live: [CallInfo], timings: [CallTiming],
        deliveries: [(channel: String, createdAtMS: Int64, deliveredAtMS: Int64)]
    ) -> Overview {
        let firstMinute = nowMS / 60_000 - Int64(minutes - 1)
        var perMinute = [Int](repeating: 0, count: minutes)
        for timing in timings {
            let index = Int(timing.createdAtMS / 60_000 - firstMinute)
            if perMinute.indices.contains(index) { perMinute[index] += 1 }
        }
        func iso(_ ms: Int64) -> String { Timestamp.iso8601(CallStore.date(ms)) }
        return Overview(
            generatedAt: iso(nowMS), minutes: minutes, liveCalls: live, callsPerMinute: perMinute,
            ringToAnswer: timings.compactMap { timing in
                timing.answeredAtMS.map {
                    Sample(at: iso($0), seconds: Double($0 - timing.createdAtMS) / 1000, channel: nil)
                }
            },
            pushLatency: deliveries.map {
                Sample(
                    at: iso($0.deliveredAtMS), seconds: Double(max(0, $0.deliveredAtMS - $0.createdAtMS)) / 1000,
                    channel: $0.channel)
            })
    }
}
