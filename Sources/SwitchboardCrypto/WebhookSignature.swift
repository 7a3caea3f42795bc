/// The `Switchboard-Signature` header of a webhook delivery:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, one `v1` for each secret that is
/// valid (two while one is being rotated out). A receiver accepts the delivery when any `v1`
/// matches one of its secrets and `t` is recent (five minutes, ``defaultTolerance``): a
/// captured delivery cannot be replayed later, and the body cannot be changed.
///
/// ```swift
/// let header = WebhookSignature.header(body: body, secrets: ["whsec_…"], at: now)
/// WebhookSignature.verify(header: header, body: body, secrets: ["whsec_…"], now: now) // .valid
/// ```
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "Switchboard-Signature"
    /// How old a signature's timestamp may be (either way, for clock skew), in seconds.
    public static let defaultTolerance: Int64 = 300

    /// Why a delivery was not accepted.
    public enum Verdict: Sendable, Equatable {
        case valid
        /// The header is missing a `t` or any `v1`, or is not `key=value` pairs.
        case malformed
        /// `t` is further from now than the tolerance.
        case stale
        /// No `v1` matches a secret.
        case mismatch
    }

    /// The lowercase hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
    public static func mac(body: [UInt8], secret: String, timestamp: Int64) -> String {
        Hex.encode(HMAC.sha256(key: Array(secret.utf8), message: Array("\(timestamp).".utf8) + body))
    }

    /// The header for `body`, signed at `timestamp` (unix seconds) with each of `secrets`.
    public static func header(body: [UInt8], secrets: [String], at timestamp: Int64) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + mac(body: body, secret: $0, timestamp: timestamp) })
            .joined(separator: ",")
    }

    /// Checks a delivery's header against the receiver's secrets at `now` (unix seconds).
    public static func verify(
        header: String, body: [UInt8], secrets: [String], now: Int64, tolerance: Int64 = defaultTolerance
    ) -> Verdict {
        var timestamp: Int64?
        var presented: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
            guard pair.count == 2 else { return .malformed }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1": presented.append(pair[1].lowercased())
            default: continue  // later schemes
            }
        }
        guard let timestamp, !presented.isEmpty else { return .malformed }
        // Compared without subtracting: a hostile `t` (Int64.min) must not overflow.
        let earliest = now.subtractingReportingOverflow(tolerance), latest = now.addingReportingOverflow(tolerance)
        guard timestamp >= (earliest.overflow ? .min : earliest.partialValue),
            timestamp <= (latest.overflow ? .max : latest.partialValue)
        else { return .stale }
        for secret in secrets {
            let expected = Array(mac(body: body, secret: secret, timestamp: timestamp).utf8)
            if presented.contains(where: { ConstantTime.equals(Array($0.utf8), expected) }) { return .valid }
        }
        return .mismatch
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
