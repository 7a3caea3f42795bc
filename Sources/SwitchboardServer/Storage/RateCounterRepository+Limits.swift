import SwitchboardCore
import SwitchboardStore

extension RateCounterRepository {
    /// ``take(_:_:at:)``, refusing with 429 `RATE_LIMITED` and `Retry-After`: for limits without
    /// a breaker, whose refusal writes nothing worth keeping (the transaction may roll back).
    func require(_ cost: Int, _ limits: [(key: String, limit: RateLimit)], at nowMS: Int64, what: String) throws {
        let decision = try take(cost, limits, at: nowMS)
        if let seconds = decision.retryAfterSeconds { throw APIError.rateLimited(what, retryAfter: seconds) }
    }
}

extension WriteTransaction {
    /// Takes `cost` of `limit` under `key` for this write, or refuses it with 429
    /// `RATE_LIMITED` (`what` names what was done too often): the per-user write quotas.
    func requireQuota(_ key: String, _ limit: RateLimit, cost: Int = 1, what: String) throws {
        try rateCounters.require(cost, [(key, limit)], at: CallStore.milliseconds(date), what: what)
    }
}
