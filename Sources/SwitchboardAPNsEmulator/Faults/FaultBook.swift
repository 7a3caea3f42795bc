import SwitchboardPushCore
/// The faults in force, in the order they were added, with what is left of each one's count.
///
/// A push takes at most one fault of each family: a refusal (checked before the request is
/// validated), an answer (`unregistered`, `badDeviceToken`, …, `respond`), a delay, and a
/// GOAWAY. Faults for the push's token are taken before global ones; taking a fault with a
/// count uses one up, and a fault whose count reaches zero is removed.
struct FaultBook: Sendable {
    private(set) var faults: [APNsFault] = []

    init(_ faults: [APNsFault] = []) {
        self.faults = faults
    }

    mutating func add(_ more: [APNsFault]) {
        faults.append(contentsOf: more)
    }

    /// Removes every fault, or only those for `token`.
    mutating func clear(token: String? = nil) {
        if let token {
            faults.removeAll { $0.token == token.lowercased() }
        } else {
            faults.removeAll()
        }
    }

    /// Whether the push for `token` is to be refused with `REFUSED_STREAM`.
    mutating func takeRefusal(token: String) -> Bool {
        take(token: token) { $0 == .refuseStream } != nil
    }

    /// The scripted answer for a valid push to `token`, if any.
    mutating func takeAnswer(token: String) -> APNsFault? {
        take(token: token) { kind in
            switch kind {
            case .unregistered, .badDeviceToken, .tooManyRequests, .internalServerError, .serviceUnavailable, .respond:
                true
            case .delay, .goawayAfter, .refuseStream:
                false
            }
        }
    }

    /// How long to hold the answer to a push for `token`, if at all.
    mutating func takeDelay(token: String) -> Int? {
        guard let fault = take(token: token, where: { if case .delay = $0 { true } else { false } }),
            case .delay(let milliseconds) = fault.kind
        else { return nil }
        return milliseconds
    }

    /// The GOAWAY reason if the connection has now carried enough push streams
    /// (`streamsOnConnection`, this one included) for a `goawayAfter` fault.
    mutating func takeGoaway(token: String, streamsOnConnection: Int) -> String? {
        let fault = take(token: token) { kind in
            if case .goawayAfter(let streams) = kind { streamsOnConnection >= streams } else { false }
        }
        guard let fault else { return nil }
        return fault.reason ?? APNsReason.shutdown.text
    }

    /// Finds the first matching fault for `token` (token-specific before global), uses one of
    /// its count, and returns it as it was found.
    private mutating func take(token: String, where matches: (APNsFault.Kind) -> Bool) -> APNsFault? {
        let lowercased = token.lowercased()
        let index =
            faults.firstIndex { $0.token == lowercased && matches($0.kind) }
            ?? faults.firstIndex { $0.token == nil && matches($0.kind) }
        guard let index else { return nil }
        let fault = faults[index]
        if let count = fault.count {
            if count <= 1 {
                faults.remove(at: index)
            } else {
                faults[index].count = count - 1
            }
        }
        return fault
    }
}
