import Foundation
import SwitchboardCrypto
import SwitchboardPushCore

/// Checks an APNs provider token (`authorization: bearer <JWT>`) the way APNs does: ES256
/// signature under the configured key, `kid` and `iss` matching the configured key and team,
/// and an `iat` no older than the token lifetime and not in the future.
///
/// Without a public key the signature is not checked, only the token's structure (three
/// base64url parts, a 64-byte signature, the header and claims APNs requires). Verified tokens
/// are cached (the signature check is the expensive part; the age is checked on every request).
struct ProviderTokenVerifier {
    /// What the verifier is checked against.
    struct Policy: Sendable {
        var teamID: String?
        var keyID: String?
        var publicKey: ES256PublicKey?
        /// APNs rejects a token older than an hour.
        var lifetimeSeconds: Int64 = 3600
        /// How far in the future `iat` may be before the token is invalid.
        var futureSkewSeconds: Int64 = 60
    }

    /// A failed check: the APNs reason and, for logs only, what exactly was wrong.
    struct Failure: Error, Equatable {
        var reason: APNsReason
        var detail: String
    }

    let policy: Policy
    /// JWT text → issued-at, for tokens whose signature, `kid` and `iss` already passed.
    private var verified: [String: Int64] = [:]
    private static let cacheLimit = 256

    init(policy: Policy) {
        self.policy = policy
    }

    /// Checks the `authorization` header values (all of them, so a duplicate is noticed by the
    /// caller first) at `nowSeconds`; returns the token's `iat` or the failure.
    mutating func verify(authorization: String?, nowSeconds: Int64) -> Result<Int64, Failure> {
        guard let authorization, !authorization.isEmpty else {
            return .failure(Failure(reason: .missingProviderToken, detail: "no authorization header"))
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .failure(Failure(reason: .invalidProviderToken, detail: "authorization is not 'bearer <jwt>'"))
        }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        let issuedAt: Int64
        if let cached = verified[token] {
            issuedAt = cached
        } else {
            switch check(token) {
            case .failure(let failure): return .failure(failure)
            case .success(let iat):
                if verified.count >= Self.cacheLimit { verified.removeAll(keepingCapacity: true) }
                verified[token] = iat
                issuedAt = iat
            }
        }
        if nowSeconds - issuedAt > policy.lifetimeSeconds {
            return .failure(
                Failure(
                    reason: .expiredProviderToken,
                    detail: "iat is \(nowSeconds - issuedAt) s old, more than \(policy.lifetimeSeconds) s"))
        }
        if issuedAt - nowSeconds > policy.futureSkewSeconds {
            return .failure(
                Failure(reason: .invalidProviderToken, detail: "iat is \(issuedAt - nowSeconds) s in the future"))
        }
        return .success(issuedAt)
    }

    /// The time-independent checks: structure, signature, `alg`, `kid`, `iss`, an integer `iat`.
    private func check(_ token: String) -> Result<Int64, Failure> {
        func invalid(_ detail: String) -> Result<Int64, Failure> {
            .failure(Failure(reason: .invalidProviderToken, detail: detail))
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(String(parts[0])),
            let claimsBytes = Base64URL.decode(String(parts[1])),
            let signature = Base64URL.decode(String(parts[2]))
        else { return invalid("not three base64url parts") }
        guard signature.count == 64 else { return invalid("signature is not 64 bytes (r || s)") }
        if let key = policy.publicKey {
            guard JWT.verifyES256(token, key: key) != nil else {
                return invalid("signature or alg does not verify under the configured key")
            }
        }
        let decoder = JSONDecoder()
        guard let header = try? decoder.decode(Header.self, from: Data(headerBytes)) else {
            return invalid("header is not a JSON object with string alg and kid")
        }
        guard header.alg == "ES256" else { return invalid("alg is \(header.alg), not ES256") }
        if let keyID = policy.keyID, header.kid != keyID { return invalid("kid \(header.kid) is not \(keyID)") }
        guard let claims = try? decoder.decode(Claims.self, from: Data(claimsBytes)) else {
            return invalid("claims are not a JSON object with string iss and integer iat")
        }
        if let teamID = policy.teamID, claims.iss != teamID { return invalid("iss \(claims.iss) is not \(teamID)") }
        return .success(claims.iat)
    }

    private struct Header: Decodable {
        let alg: String
        let kid: String
    }

    private struct Claims: Decodable {
        let iss: String
        let iat: Int64
    }
}
