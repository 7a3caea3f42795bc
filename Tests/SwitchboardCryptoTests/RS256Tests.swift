import Testing
@testable import SwitchboardCrypto

@Suite("RS256: RSA keys and JWTs (FCM's OAuth2 assertions)", .timeLimit(.minutes(1)))
struct RS256Tests {
    @Test func aSignedTokenVerifiesAndATamperedOneDoesNot() throws {
        let key = try RS256PrivateKey.generate()
        let token = try JWT.signRS256(
            headerJSON: Array(#"{"alg":"RS256","typ":"JWT"}"#.utf8), claimsJSON: Array(#"{"iss":"a"}"#.utf8), key: key)
        let verified = try #require(JWT.verifyRS256(token, key: key.publicKey))
        #expect(String(decoding: verified.claims, as: UTF8.self) == #"{"iss":"a"}"#)
        // Another claim under the same signature, another key, another algorithm: all refused.
        let parts = token.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"iss":"b"}"#.utf8)) + "." + parts[2]
        #expect(JWT.verifyRS256(String(forged), key: key.publicKey) == nil)
        #expect(JWT.verifyRS256(token, key: try RS256PrivateKey.generate().publicKey) == nil)
        let hs = Base64URL.encode(Array(#"{"alg":"HS256"}"#.utf8)) + "." + parts[1] + "." + parts[2]
        #expect(JWT.verifyRS256(hs, key: key.publicKey) == nil)
    }

    @Test func keysRoundTripThroughPEMAndOtherKindsAreRefused() throws {
        let key = try RS256PrivateKey.generate()
        let again = try RS256PrivateKey(pem: try key.pkcs8PEM())
        #expect(again.publicKey.pem == key.publicKey.pem)
        #expect(try RS256PublicKey(pem: key.publicKey.pem).pem == key.publicKey.pem)
        let signature = try again.sign(Array("m".utf8))
        #expect(signature.count == 256 && key.publicKey.verify(signature: signature, message: Array("m".utf8)))
        #expect(throws: CryptoError.self) { try RS256PrivateKey(pem: try ES256PrivateKey.generate().pkcs8PEM()) }
        #expect(throws: CryptoError.self) { try RS256PrivateKey(pem: "not a key") }
    }
}
