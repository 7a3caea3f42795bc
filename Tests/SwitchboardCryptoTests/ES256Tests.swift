import SwitchboardCrypto
import Testing

/// Keys and a token made outside this code, once, by hand, and pasted in.
enum ExternalES256 {
    // The P-256 key, its SEC 1 form, its SPKI public key and the token were printed by this
    // script, run once with Python 3, cryptography 48.0.0 and PyJWT 2.15.1:
    // ```
    // import jwt
    // from cryptography.hazmat.primitives import serialization
    // from cryptography.hazmat.primitives.asymmetric import ec
    // key = ec.generate_private_key(ec.SECP256R1())
    // print(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
    // print(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()).decode())
    // print(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode())
    // print(jwt.encode({"iss": "DEF123GHIJ", "iat": 1700000000}, key, algorithm="ES256", headers={"kid": "ABC123DEFG"}))
    // ```

    static let pkcs8 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgx4gAfK7PpP7r/QH6
        gjYX5rtSp7u8sgh8pXZ8ZjwlByShRANCAAQ5ZqlUTBB+Dfj5hsgZTO1yCbK8a3Tt
        1Qi4pAT2/umTQ2vAIWWVteefoCT5we/zILEa6H0f5SnNR4O66cpe6Aw/
        -----END PRIVATE KEY-----
        """

    static let sec1 = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIMeIAHyuz6T+6/0B+oI2F+a7Uqe7vLIIfKV2fGY8JQckoAoGCCqGSM49
        AwEHoUQDQgAEOWapVEwQfg34+YbIGUztcgmyvGt07dUIuKQE9v7pk0NrwCFllbXn
        n6Ak+cHv8yCxGuh9H+UpzUeDuunKXugMPw==
        -----END EC PRIVATE KEY-----
        """

    static let spki = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEOWapVEwQfg34+YbIGUztcgmyvGt0
        7dUIuKQE9v7pk0NrwCFllbXnn6Ak+cHv8yCxGuh9H+UpzUeDuunKXugMPw==
        -----END PUBLIC KEY-----
        """

    /// PyJWT's token; it sorts header members and adds `typ`.
    static let token =
        "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkciLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoxNzAwMDAwMDAwfQ.aB1IzXC05fR19pgN_U8Q1oFODbxJO-o3-7xQfCcmRl6P-6mP1y_4V1ah5AzxUfi5gq4jNMUBQfzECoGtrZU0XA"
    static let tokenHeader = #"{"alg":"ES256","kid":"ABC123DEFG","typ":"JWT"}"#
    static let tokenClaims = #"{"iss":"DEF123GHIJ","iat":1700000000}"#

    // The keys below, which must all be refused, were made with the OpenSSL 3.0.19 command line:
    // `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:512` (small on purpose),
    // `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384`,
    // `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:secp256k1`,
    // `openssl genpkey -algorithm ED25519`,
    // `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -aes-128-cbc -pass pass:switchboard`,
    // and each public key with `openssl pkey -in KEY.pem -pubout`.

    static let rsa = """
        -----BEGIN PRIVATE KEY-----
        MIIBUwIBADANBgkqhkiG9w0BAQEFAASCAT0wggE5AgEAAkEAmvccwLx9FtwTsJcr
        sGUouk8V9IZ7pTlDy+6IRl5xzMqLKPbrbL5XZFnLh8ud7PpRYo0D1ZslCuq06Vua
        cJbnkwIDAQABAkBErtfgmOo8UoirkST9Bqj5gonxmhV9Upc48N0Xi06W/FIAwasH
        VVQkK5CnX6bQC+KsF3KbaGBWhBK6hG9MKdPZAiEAyuSgdp7mmLwSdJi+o5Y+s7yb
        4NOSTjXoglukA/V8S98CIQDDhvXbBU9+6AThSRoyOgNSxUWtNesogYH6uZRaltaa
        zQIga67iF3MIkmGnLejvrWUNjFl7Jd1Elmv4Jk+7AjrlKGMCIFpqtJJduE81N9x+
        E5EaZqMF+pyIjIAks1igLMxfaEoZAiA8SXDp6cvsGwNR46ajypin+RCtUkBBLZYa
        05UkSPPkag==
        -----END PRIVATE KEY-----
        """

    static let rsaPublic = """
        -----BEGIN PUBLIC KEY-----
        MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAJr3HMC8fRbcE7CXK7BlKLpPFfSGe6U5
        Q8vuiEZecczKiyj262y+V2RZy4fLnez6UWKNA9WbJQrqtOlbmnCW55MCAwEAAQ==
        -----END PUBLIC KEY-----
        """

    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDab1NQg5u+VoaOKjrB
        WVAgPc+6t28HsE7RFIK5FFg4IylafpIPugtfL5fv1sSGvXChZANiAAQ5sglnU3n0
        dGjRLPXbH9raxnCF+4NarFJIvrla7saMOhwsNLP1uKVNeQ+EPQQxX+ap4uMhe5b8
        AwlNVr6StPnaLy3FNJEFYCXO4N4BxHsbXHziwYdk4tfp/meFyrYaCKI=
        -----END PRIVATE KEY-----
        """

    static let p384Public = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEObIJZ1N59HRo0Sz12x/a2sZwhfuDWqxS
        SL65Wu7GjDocLDSz9bilTXkPhD0EMV/mqeLjIXuW/AMJTVa+krT52i8txTSRBWAl
        zuDeAcR7G1x84sGHZOLX6f5nhcq2Ggii
        -----END PUBLIC KEY-----
        """

    /// Also 256 bits, so a bit-size check alone would let it through.
    static let secp256k1 = """
        -----BEGIN PRIVATE KEY-----
        MIGEAgEAMBAGByqGSM49AgEGBSuBBAAKBG0wawIBAQQg84dDnoE4S+3plEgnFj5g
        l11xMT5MCfOT7qqr8lMlqHqhRANCAASvlV5aPbP3/ocub8f/ogFrWkIsOiswb96O
        6JAmiBCbtHfteG64+36PMcmTyqsUJfSORAjO/8Y5/n2yQtILz7qH
        -----END PRIVATE KEY-----
        """

    static let secp256k1Public = """
        -----BEGIN PUBLIC KEY-----
        MFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAEr5VeWj2z9/6HLm/H/6IBa1pCLDorMG/e
        juiQJogQm7R37XhuuPt+jzHJk8qrFCX0jkQIzv/GOf59skLSC8+6hw==
        -----END PUBLIC KEY-----
        """

    static let ed25519 = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIH79/7GJCLTZ2yKJziAhHjJBZwKtR3iWqy8t9gBIBVrB
        -----END PRIVATE KEY-----
        """

    /// A P-256 key encrypted with the passphrase "switchboard".
    static let encrypted = """
        -----BEGIN ENCRYPTED PRIVATE KEY-----
        MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAjhVPeMI42sVwICCAAw
        DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEELBBFVNkZhDBEQ27RadnDc0EgZBW
        sry+TaqpyP3qRTp/8vsvPJCIKMN3uGr7YZ3DkAnRKvgZ5skjX/m6WtQI6bCuTR34
        DYrDmSY+W1H3fZ+aqHGF1lekfXQ0hXz8SCSJ5zMco2wapMyrPZVAttYYxtFwmbuJ
        eKDJxVmxsRav/cqdolTgQchtn/pNjlGVV7N+urbF6vFDHkKGIoz5Dapku6OxtCk=
        -----END ENCRYPTED PRIVATE KEY-----
        """

    /// ``sec1`` with its 65-byte public point replaced, in Python, by the point of another freshly
    /// generated P-256 key: the private scalar and the public key do not belong together.
    static let mismatched = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIMeIAHyuz6T+6/0B+oI2F+a7Uqe7vLIIfKV2fGY8JQckoAoGCCqGSM49
        AwEHoUQDQgAE9k3JUtio7WLFMWQUFZ8mGSKyaKV40c9nB/4Mrck61694MYVwNtqq
        uJkEI0zM/qWLqgRoCc1A3ekN+lAeD/LHiQ==
        -----END EC PRIVATE KEY-----
        """
}

/// `text` without any whitespace, for comparing PEM blocks regardless of line breaks and indentation.
private func squeezed(_ text: String) -> String {
    String(text.unicodeScalars.filter { !$0.properties.isWhitespace })
}

/// The JSON bytes inside one base64url part of a token.
private func decodedPart(_ token: String, _ index: Int) -> String? {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let bytes = Base64URL.decode(String(parts[index])) else { return nil }
    return String(decoding: bytes, as: UTF8.self)
}

@Suite("ES256 keys, signatures and tokens", .timeLimit(.minutes(3)))
struct ES256Tests {
    static let message = utf8("switchboard ES256 test message")

    @Test("a generated key signs 64-byte signatures that its public key verifies")
    func signAndVerify() throws {
        let key = try ES256PrivateKey.generate()
        let signature = try key.sign(Self.message)
        #expect(signature.count == 64)
        #expect(key.publicKey.verify(signature: signature, message: Self.message))
        #expect(try ES256PublicKey(pem: key.publicKeyPEM).verify(signature: signature, message: Self.message))
        #expect(key.publicKeyPEM.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let empty = try key.sign([])
        #expect(key.publicKey.verify(signature: empty, message: []))
        #expect(!key.publicKey.verify(signature: empty, message: [0]))
    }

    @Test("a modified message, a modified signature or another key's signature does not verify")
    func rejectsModifications() throws {
        let key = try ES256PrivateKey.generate()
        let signature = try key.sign(Self.message)
        var message = Self.message
        message[0] ^= 0x01
        #expect(!key.publicKey.verify(signature: signature, message: message))
        #expect(!key.publicKey.verify(signature: signature, message: Self.message + [0]))
        for index in [0, 31, 32, 63] {
            var modified = signature
            modified[index] ^= 0x80
            #expect(!key.publicKey.verify(signature: modified, message: Self.message), "byte \(index) flipped")
        }
        // r and s swapped.
        #expect(!key.publicKey.verify(signature: Array(signature[32...] + signature[..<32]), message: Self.message))

        let other = try ES256PrivateKey.generate()
        #expect(!other.publicKey.verify(signature: signature, message: Self.message))
        #expect(!key.publicKey.verify(signature: try other.sign(Self.message), message: Self.message))
    }

    @Test("signatures of any length but 64 bytes, and r or s out of range, are refused")
    func rejectsMalformedSignatures() throws {
        let key = try ES256PrivateKey.generate()
        let signature = try key.sign(Self.message)
        for bad in [[], Array(signature.prefix(63)), signature + [0], [0] + signature, signature + signature] {
            #expect(!key.publicKey.verify(signature: bad, message: Self.message), "length \(bad.count)")
        }
        // Zero r or s, and r = s = 2^256 - 1 (above the group order n).
        #expect(!key.publicKey.verify(signature: [UInt8](repeating: 0, count: 64), message: Self.message))
        #expect(
            !key.publicKey.verify(
                signature: Array(signature.prefix(32)) + [UInt8](repeating: 0, count: 32), message: Self.message))
        #expect(!key.publicKey.verify(signature: [UInt8](repeating: 0xFF, count: 64), message: Self.message))
    }

    @Test("100 signatures of one message are all different, 64 bytes long and valid")
    func randomized() throws {
        let key = try ES256PrivateKey.generate()
        var seen: Set<[UInt8]> = []
        for _ in 0..<100 {
            let signature = try key.sign(Self.message)
            #expect(signature.count == 64)
            #expect(key.publicKey.verify(signature: signature, message: Self.message))
            seen.insert(signature)
        }
        #expect(seen.count == 100)
    }

    @Test("an r and an s with a leading zero byte are left-padded and still verify")
    func leftPadding() throws {
        let key = try ES256PrivateKey.generate()
        // Each half starts with 0x00 with probability 1/256, so both cases turn up within a few
        // hundred signatures; 10,000 without one of them has probability below 2·e^-39.
        var paddedR = false
        var paddedS = false
        for _ in 0..<10_000 where !(paddedR && paddedS) {
            let signature = try key.sign(Self.message)
            guard signature[0] == 0 || signature[32] == 0 else { continue }
            try #require(signature.count == 64)
            try #require(key.publicKey.verify(signature: signature, message: Self.message))
            paddedR = paddedR || signature[0] == 0
            paddedS = paddedS || signature[32] == 0
        }
        #expect(paddedR && paddedS)
    }

    @Test("one key signs from many tasks at once")
    func concurrentSigning() async throws {
        let key = try ES256PrivateKey.generate()
        let message = Self.message
        let valid = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<25 where !key.publicKey.verify(signature: try key.sign(message), message: message) {
                        return false
                    }
                    return true
                }
            }
            return try await group.reduce(true) { $0 && $1 }
        }
        #expect(valid)
    }

    @Test("a key and token made by Python's cryptography and PyJWT work here")
    func externalKeyAndToken() throws {
        let publicKey = try ES256PublicKey(pem: ExternalES256.spki)
        let verified = try #require(JWT.verifyES256(ExternalES256.token, key: publicKey))
        #expect(verified.header == utf8(ExternalES256.tokenHeader))
        #expect(verified.claims == utf8(ExternalES256.tokenClaims))

        let key = try ES256PrivateKey(pem: ExternalES256.pkcs8)
        #expect(squeezed(key.publicKeyPEM) == squeezed(ExternalES256.spki))
        #expect(squeezed(publicKey.pem) == squeezed(ExternalES256.spki))
        #expect(JWT.verifyES256(ExternalES256.token, key: key.publicKey) != nil)
        #expect(squeezed(try key.pkcs8PEM()) == squeezed(ExternalES256.pkcs8))

        let sec1Key = try ES256PrivateKey(pem: ExternalES256.sec1)
        #expect(squeezed(sec1Key.publicKeyPEM) == squeezed(ExternalES256.spki))

        // Our signatures with the external key verify under the externally written public key.
        let token = try JWT.apnsProviderToken(
            teamID: "DEF123GHIJ", keyID: "ABC123DEFG", issuedAt: 1_700_000_000, key: sec1Key)
        #expect(JWT.verifyES256(token, key: publicKey) != nil)
    }

    @Test("a PKCS#8 export reloads as the same key")
    func pkcs8RoundTrip() throws {
        let key = try ES256PrivateKey.generate()
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let reloaded = try ES256PrivateKey(pem: pem)
        #expect(reloaded.publicKeyPEM == key.publicKeyPEM)
        #expect(key.publicKey.verify(signature: try reloaded.sign(Self.message), message: Self.message))
        // Indentation and CRLF line ends, as a config file might hold it, load too.
        let messy = "  " + pem.split(separator: "\n").joined(separator: "\r\n  ") + "\r\n"
        #expect(try ES256PrivateKey(pem: messy).publicKeyPEM == key.publicKeyPEM)
    }

    /// One PEM text that must be refused, named for the test report (the PEM itself is not printed).
    struct RefusedKey: Sendable, CustomTestStringConvertible {
        let name: String
        let pem: String
        let code: CryptoError.Code
        var testDescription: String { name }

        init(_ name: String, _ pem: String, _ code: CryptoError.Code) {
            self.name = name
            self.pem = pem
            self.code = code
        }
    }

    static let refusedPrivateKeys: [RefusedKey] = [
        RefusedKey("empty", "", .malformedInput),
        RefusedKey("garbage", "hello, I am not a key", .malformedInput),
        RefusedKey(
            "garbage inside PEM armour", "-----BEGIN PRIVATE KEY-----\nAAAA////\n-----END PRIVATE KEY-----\n",
            .malformedInput),
        RefusedKey("truncated", String(ExternalES256.pkcs8.dropLast(40)), .malformedInput),
        RefusedKey("a public key", ExternalES256.spki, .malformedInput),
        RefusedKey("an encrypted key (no passphrase prompt)", ExternalES256.encrypted, .malformedInput),
        RefusedKey("mismatched public point", ExternalES256.mismatched, .malformedInput),
        RefusedKey("RSA", ExternalES256.rsa, .unsupportedParameters),
        RefusedKey("P-384", ExternalES256.p384, .unsupportedParameters),
        RefusedKey("secp256k1", ExternalES256.secp256k1, .unsupportedParameters),
        RefusedKey("Ed25519", ExternalES256.ed25519, .unsupportedParameters),
    ]

    @Test("private keys that are not usable P-256 keys throw CryptoError", arguments: refusedPrivateKeys)
    func refusesPrivateKey(_ key: RefusedKey) {
        let error = #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: key.pem) }
        #expect(error?.code == key.code, "\(String(describing: error))")
    }

    static let refusedPublicKeys: [RefusedKey] = [
        RefusedKey("empty", "", .malformedInput),
        RefusedKey("garbage", "-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----", .malformedInput),
        RefusedKey("a private key", ExternalES256.pkcs8, .malformedInput),
        RefusedKey("RSA", ExternalES256.rsaPublic, .unsupportedParameters),
        RefusedKey("P-384", ExternalES256.p384Public, .unsupportedParameters),
        RefusedKey("secp256k1", ExternalES256.secp256k1Public, .unsupportedParameters),
    ]

    @Test("public keys that are not P-256 SPKI throw CryptoError", arguments: refusedPublicKeys)
    func refusesPublicKey(_ key: RefusedKey) {
        let error = #expect(throws: CryptoError.self) { try ES256PublicKey(pem: key.pem) }
        #expect(error?.code == key.code, "\(String(describing: error))")
    }

    @Test("the APNs provider token has exactly the documented header and claims, and verifies")
    func apnsProviderToken() throws {
        let key = try ES256PrivateKey.generate()
        let token = try JWT.apnsProviderToken(
            teamID: "DEF123GHIJ", keyID: "ABC123DEFG", issuedAt: 1_700_000_000, key: key)
        #expect(decodedPart(token, 0) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(decodedPart(token, 1) == #"{"iss":"DEF123GHIJ","iat":1700000000}"#)
        let verified = try #require(JWT.verifyES256(token, key: key.publicKey))
        #expect(verified.claims == utf8(#"{"iss":"DEF123GHIJ","iat":1700000000}"#))
        #expect(Base64URL.decode(String(token.split(separator: ".")[2]))?.count == 64)
    }

    @Test(
        "APNs team and key IDs must be 10 ASCII letters or digits",
        arguments: [
            ("DEF123GHI", "ABC123DEFG"), ("DEF123GHIJ", "ABC123DEFG\n"), ("DEF123GHI\"", "ABC123DEFG"),
            ("DEF123GHIJ", ""), ("DEF123GHIÉ", "ABC123DEFG"),
        ])
    func refusesMalformedAPNsIDs(teamID: String, keyID: String) throws {
        let key = try ES256PrivateKey.generate()
        let error = #expect(throws: CryptoError.self) {
            try JWT.apnsProviderToken(teamID: teamID, keyID: keyID, issuedAt: 1_700_000_000, key: key)
        }
        #expect(error?.code == .malformedInput)
    }

    @Test("verifyES256 refuses other algorithms, crit, padding and malformed tokens")
    func verifyRefusals() throws {
        let key = try ES256PrivateKey.generate()
        let claims = utf8(#"{"sub":"user-42"}"#)
        func token(_ header: String) throws -> String {
            try JWT.signES256(headerJSON: utf8(header), claimsJSON: claims, key: key)
        }
        let good = try token(#"{"alg":"ES256","typ":"JWT"}"#)
        #expect(JWT.verifyES256(good, key: key.publicKey)?.claims == claims)

        // Validly signed, but the header does not say ES256 or asks for an extension.
        for header in [
            #"{"alg":"HS256"}"#, #"{"alg":"none"}"#, #"{"alg":"es256"}"#, #"{"typ":"JWT"}"#,
            #"{"alg":"ES256","crit":["exp"]}"#, #"["ES256"]"#, "not json",
        ] {
            #expect(JWT.verifyES256(try token(header), key: key.publicKey) == nil, "\(header)")
        }

        let parts = good.split(separator: ".").map(String.init)
        let (header, body, signature) = (parts[0], parts[1], parts[2])
        let otherClaims = Base64URL.encode(utf8(#"{"sub":"admin"}"#))
        let malformed: [String] = [
            "\(header).\(otherClaims).\(signature)",  // claims swapped
            "\(header).\(body)",  // no signature
            "\(header).\(body).",  // empty signature
            "\(good).",  // four parts
            "\(good)=",  // padding
            "\(header).\(body).\(signature)AA",  // 65-byte signature
        ]
        for bad in malformed {
            #expect(JWT.verifyES256(bad, key: key.publicKey) == nil, "\(bad)")
        }
        let other = try ES256PrivateKey.generate()
        #expect(JWT.verifyES256(good, key: other.publicKey) == nil)
        #expect(JWT.verifyES256(ExternalES256.token, key: key.publicKey) == nil)
    }
}

/// RFC 8032 §7.1's test vectors for Ed25519 (TEST 1, 2, 3 and SHA(abc)).
@Suite("Ed25519 (RFC 8032 vectors)", .timeLimit(.minutes(1)))
struct Ed25519Tests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    static let vectors: [(seed: String, publicKey: String, message: String, signature: String)] = [
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"
        ),
    ]

    @Test func theRFCVectorsSignAndVerify() throws {
        for vector in Self.vectors {
            let key = try Ed25519PrivateKey(seed: Self.hex(vector.seed))
            #expect(key.publicKey.rawBytes == Self.hex(vector.publicKey))
            let signature = try key.sign(Self.hex(vector.message))
            #expect(signature == Self.hex(vector.signature), "Ed25519 is deterministic: the RFC's signature")
            let publicKey = try Ed25519PublicKey(rawBytes: Self.hex(vector.publicKey))
            #expect(publicKey.verify(signature: Self.hex(vector.signature), message: Self.hex(vector.message)))
        }
    }

    @Test func aChangedMessageOrSignatureOrAnotherKeyFails() throws {
        let vector = Self.vectors[2]
        let key = try Ed25519PublicKey(rawBytes: Self.hex(vector.publicKey))
        var signature = Self.hex(vector.signature)
        #expect(!key.verify(signature: signature, message: Self.hex("af83")))
        signature[10] ^= 1
        #expect(!key.verify(signature: signature, message: Self.hex(vector.message)))
        #expect(!key.verify(signature: Array(signature.prefix(63)), message: Self.hex(vector.message)))
        #expect(
            !(try Ed25519PublicKey(rawBytes: Self.hex(Self.vectors[0].publicKey))).verify(
                signature: Self.hex(vector.signature), message: Self.hex(vector.message)))
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawBytes: [1, 2, 3]) }
        // Points of small order and unreduced encodings: with them a forgery could verify.
        var identity = [UInt8](repeating: 0, count: 32)
        identity[0] = 1
        var unreduced = [UInt8](repeating: 0xFF, count: 32)
        unreduced[0] = 0xED
        unreduced[31] = 0x7F
        var negativeZero = [UInt8](repeating: 0, count: 32)
        negativeZero[31] = 0x80
        for weak in [
            identity, unreduced, negativeZero, [UInt8](repeating: 0, count: 32),
            Self.hex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
        ] {
            #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawBytes: weak) }
        }
        let fresh = try Ed25519PrivateKey.generate()
        #expect(fresh.publicKey.verify(signature: try fresh.sign(Array("hello".utf8)), message: Array("hello".utf8)))
    }
}
