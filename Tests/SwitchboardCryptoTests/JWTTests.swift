import SwitchboardCrypto
import Testing

@Suite("HS256 JSON Web Tokens", .timeLimit(.minutes(3)))
struct JWTTests {
    static let secret = utf8("switchboard-test-secret")
    static let claims = utf8(#"{"sub":"user-42","room":"call-7","exp":1900000000}"#)

    /// Computed once with Python's standard library only:
    /// ```
    /// import hmac, hashlib, base64
    /// b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=").decode()
    /// h = b'{"alg":"HS256","typ":"JWT"}'
    /// c = b'{"sub":"user-42","room":"call-7","exp":1900000000}'
    /// si = b(h) + "." + b(c)
    /// print(si + "." + b(hmac.new(b"switchboard-test-secret", si.encode(), hashlib.sha256).digest()))
    /// ```
    static let pythonToken =
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwicm9vbSI6ImNhbGwtNyIsImV4cCI6MTkwMDAwMDAwMH0.26_kDfJ2Ugf47ADTs2FfcsCcWPj5NUy1POwEnuvSyw4"

    @Test("signing matches a token computed independently with Python, and that token verifies")
    func matchesPython() {
        #expect(JWT.signHS256(claimsJSON: Self.claims, secret: Self.secret) == Self.pythonToken)
        #expect(JWT.verifyHS256(Self.pythonToken, secret: Self.secret) == Self.claims)
    }

    @Test("sign then verify returns the claims bytes unchanged")
    func roundTrip() {
        let secret = SecureRandom.bytes(32)
        let claims = utf8(#"{"video":{"room":"r1","roomJoin":true},"sub":"ü"}"#)
        #expect(JWT.verifyHS256(JWT.signHS256(claimsJSON: claims, secret: secret), secret: secret) == claims)
    }

    @Test("a different secret gives nil")
    func wrongSecret() {
        #expect(JWT.verifyHS256(Self.pythonToken, secret: utf8("switchboard-test-secreT")) == nil)
        #expect(JWT.verifyHS256(Self.pythonToken, secret: []) == nil)
    }

    @Test("a modified header, payload or signature gives nil")
    func tampering() throws {
        let parts = Self.pythonToken.split(separator: ".").map(String.init)
        let otherClaims = Base64URL.encode(utf8(#"{"sub":"admin","room":"call-7","exp":1900000000}"#))
        var signature = try #require(Base64URL.decode(parts[2]))
        signature[31] ^= 0x01
        let otherHeader = Base64URL.encode(utf8(#"{"alg":"HS256","typ":"JWT","kid":"x"}"#))
        for token in [
            [parts[0], otherClaims, parts[2]], [parts[0], parts[1], Base64URL.encode(signature)],
            [otherHeader, parts[1], parts[2]], [parts[0], parts[1], String(parts[2].dropLast())],
        ] {
            #expect(JWT.verifyHS256(token.joined(separator: "."), secret: Self.secret) == nil, "\(token)")
        }
    }

    @Test(
        "a correctly MACed token whose header is not plain HS256 gives nil",
        arguments: [
            #"{"alg":"none","typ":"JWT"}"#, #"{"alg":"HS512"}"#, #"{"typ":"JWT"}"#, #"["HS256"]"#,
            #"{"alg":"HS256","crit":["exp"]}"#, "not json",
        ])
    func rejectsHeader(header: String) {
        let token = JWT.signHS256(claimsJSON: Self.claims, secret: Self.secret, headerJSON: utf8(header))
        #expect(JWT.verifyHS256(token, secret: Self.secret) == nil)
    }

    @Test("a header with alg HS256 and extra members is accepted")
    func extraHeaderMembers() {
        let token = JWT.signHS256(
            claimsJSON: Self.claims, secret: Self.secret, headerJSON: utf8(#"{"typ":"JWT","kid":"k1","alg":"HS256"}"#))
        #expect(JWT.verifyHS256(token, secret: Self.secret) == Self.claims)
    }

    @Test(
        "unsigned and structurally broken tokens give nil",
        arguments: [
            "", ".", "..", "a.b", "a.b.c.d",
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyLTQyIn0.",  // alg none, empty signature
            pythonToken + "=", pythonToken + ".x", " " + pythonToken,
        ])
    func structurallyBroken(token: String) {
        #expect(JWT.verifyHS256(token, secret: Self.secret) == nil)
    }
}
