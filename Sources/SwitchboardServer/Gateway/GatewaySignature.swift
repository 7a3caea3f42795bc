import Foundation

/// How an app server signs a push-gateway request (SPEC §8), and the checks before anything
/// is done for it. Pure: time is an input.
///
/// The app sends five headers:
/// - `Switchboard-App`: its app id;
/// - `Switchboard-Key`: the id of the key it signs with (an app may hold several, to rotate);
/// - `Switchboard-Timestamp`: the time of signing, in whole seconds since 1970 (UTC);
/// - `Switchboard-Signature-Version`: `2`;
/// - `Switchboard-Signature`: the Ed25519 signature, base64url without padding (86
///   characters), of the canonical request:
///
///       "switchboard-gateway-v2\n" + APP + "\n" + KEY + "\n" + METHOD + "\n" + TARGET + "\n" + TIMESTAMP + "\n" + BODY
///
///   where APP and KEY are the two headers' values, METHOD is upper case (`POST`), TARGET the
///   request target exactly as sent (path and query: `/gateway/v1/app`), TIMESTAMP the
///   header's digits and BODY the body's bytes exactly as sent (nothing for a GET).
///
/// Version 1 (no version header: `"switchboard-gateway-v1\n" + METHOD + …`) did not cover the
/// app and key ids, so a signature made for one app passed as another's that held the same
/// key. It is refused (401 `GATEWAY_SIGNATURE_V1`) unless the server is told to accept it
/// while app servers move over (`gatewaySignatureV1: accept`).
enum GatewaySignature {
    static let appHeader = "Switchboard-App"
    static let keyHeader = "Switchboard-Key"
    static let timestampHeader = "Switchboard-Timestamp"
    static let signatureHeader = "Switchboard-Signature"
    static let versionHeader = "Switchboard-Signature-Version"

    /// How far the timestamp may be from the server's clock, either way.
    static let window: Int64 = 60
    /// How long a signature is remembered: far past its freshness (±60 s), whatever the
    /// instances' clocks, so no fresh request is forgotten.
    static let replayMemoryMS: Int64 = 10 * 60 * 1000

    /// The largest gateway body.
    static let maxBodyBytes = 64 * 1024

    /// The bytes a version 2 signature covers.
    static func canonical(
        app: String, key: String, method: String, target: String, timestamp: String, body: [UInt8]
    ) -> [UInt8] {
        Array("switchboard-gateway-v2\n\(app)\n\(key)\n\(method.uppercased())\n\(target)\n\(timestamp)\n".utf8) + body
    }

    /// The bytes a version 1 signature covers (neither the app nor the key).
    static func canonicalV1(method: String, target: String, timestamp: String, body: [UInt8]) -> [UInt8] {
        Array("switchboard-gateway-v1\n\(method.uppercased())\n\(target)\n\(timestamp)\n".utf8) + body
    }

    /// The timestamp header as seconds, when it is 1 to 12 digits.
    static func seconds(_ text: String) -> Int64? {
        guard (1...12).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// Whether a request signed at `timestamp` (seconds) may be taken at `now`.
    static func isFresh(_ timestamp: Int64, now: Date) -> Bool {
        let current = Int64(now.timeIntervalSince1970.rounded(.down))
        return timestamp >= current - window && timestamp <= current + window
    }
}
