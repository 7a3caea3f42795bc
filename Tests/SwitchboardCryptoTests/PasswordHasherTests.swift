@testable import SwitchboardCrypto
import Testing

@Suite("Password hashing", .timeLimit(.minutes(3)))
struct PasswordHasherTests {
    let hasher = PasswordHasher(cost: .fastForTests)

    @Test("a hash has the documented shape and verifies; a wrong password does not")
    func hashAndVerify() throws {
        let stored = try hasher.hash("correct horse battery staple")
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false)
        #expect(fields.count == 5)
        #expect(fields[1] == "scrypt" && fields[2] == "ln=10,r=8,p=1")
        #expect(Base64URL.decode(String(fields[3]))?.count == 16)
        #expect(Base64URL.decode(String(fields[4]))?.count == 32)
        #expect(try hasher.verify("correct horse battery staple", against: stored))
        #expect(try !hasher.verify("correct horse battery stapler", against: stored))
        #expect(try !hasher.verify("", against: stored))
    }

    @Test("two hashes of the same password differ (fresh salt) and both verify")
    func saltDiffers() throws {
        let first = try hasher.hash("hunter2")
        let second = try hasher.hash("hunter2")
        #expect(first != second)
        #expect(try hasher.verify("hunter2", against: first))
        #expect(try hasher.verify("hunter2", against: second))
    }

    @Test("a hash verifies with the parameters stored in it, whatever the hasher's own cost")
    func verifiesWithStoredCost() throws {
        let old = try PasswordHasher(cost: PasswordHasher.Cost(n: 1 << 9, r: 4, p: 2)).hash("pw")
        #expect(old.contains("$ln=9,r=4,p=2$"))
        #expect(try hasher.verify("pw", against: old))
        #expect(try PasswordHasher(cost: .standard).verify("pw", against: old))
    }

    @Test("an independently formatted hash (same salt, key from the raw KDF) verifies")
    func formatMatchesKDF() throws {
        let salt = Array(0..<16).map(UInt8.init)
        let key = try PasswordHasher.scrypt(password: utf8("pw"), salt: salt, cost: .fastForTests, length: 32)
        let stored = "$scrypt$ln=10,r=8,p=1$\(Base64URL.encode(salt))$\(Base64URL.encode(key))"
        #expect(try hasher.verify("pw", against: stored))
        #expect(try !hasher.verify("pW", against: stored))
    }

    @Test("a well-formed hash with an altered key or salt verifies as false")
    func tamperedIsFalse() throws {
        let stored = try hasher.hash("pw")
        var fields = stored.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        var key = try #require(Base64URL.decode(fields[4]))
        key[0] ^= 0x01
        fields[4] = Base64URL.encode(key)
        #expect(try !hasher.verify("pw", against: fields.joined(separator: "$")))

        fields = stored.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        var salt = try #require(Base64URL.decode(fields[3]))
        salt[15] ^= 0x80
        fields[3] = Base64URL.encode(salt)
        #expect(try !hasher.verify("pw", against: fields.joined(separator: "$")))
    }

    static let salt = "AAECAwQFBgcICQoLDA0ODw"  // 16 bytes
    static let key = "2Y-8Ig3NCuUqtChQDDHhCHYzwDBzkFs8bDT-DtEx7ao"  // 32 bytes

    @Test(
        "malformed stored strings throw malformedInput",
        arguments: [
            "", "scrypt", "$scrypt$", "$scrypt$ln=10,r=8,p=1$\(salt)",  // missing fields
            "$scrypt$ln=10,r=8,p=1$\(salt)$\(key)$extra",
            "scrypt$ln=10,r=8,p=1$\(salt)$\(key)$",
            "$argon2id$ln=10,r=8,p=1$\(salt)$\(key)",  // other algorithm
            "$scrypt$ln=10,r=8$\(salt)$\(key)", "$scrypt$$\(salt)$\(key)",  // missing parameters
            "$scrypt$ln=10,r=8,p=1,x=2$\(salt)$\(key)", "$scrypt$ln=10,r=8,r=8,p=1$\(salt)$\(key)",
            "$scrypt$ln=+10,r=8,p=1$\(salt)$\(key)", "$scrypt$ln=,r=8,p=1$\(salt)$\(key)",
            "$scrypt$ln=10,r=99999999999,p=1$\(salt)$\(key)", "$scrypt$ln=10;r=8;p=1$\(salt)$\(key)",
            "$scrypt$ln=10,r=8,p=1$\(salt)!$\(key)", "$scrypt$ln=10,r=8,p=1$\(salt)$\(key)*",  // bad base64
            "$scrypt$ln=10,r=8,p=1$AAEC$\(key)",  // salt too short
            "$scrypt$ln=10,r=8,p=1$\(salt)$AAECAwQF",  // key too short
        ])
    func malformedThrows(stored: String) {
        let error = #expect(throws: CryptoError.self) { try hasher.verify("pw", against: stored) }
        #expect(error?.code == .malformedInput)
        #expect(error.map { !$0.description.contains(Self.key) } ?? false, "the stored hash must not leak into errors")
    }

    @Test(
        "absurd stored parameters throw unsupportedParameters without trying to compute",
        arguments: [
            "ln=21,r=8,p=1", "ln=63,r=8,p=1", "ln=64,r=8,p=1", "ln=9999999999,r=1,p=1",
            "ln=20,r=8,p=1", "ln=14,r=1024,p=1024", "ln=10,r=8,p=0", "ln=0,r=8,p=1",
        ])
    func absurdParametersThrow(parameters: String) {
        let stored = "$scrypt$\(parameters)$\(Self.salt)$\(Self.key)"
        let error = #expect(throws: CryptoError.self) { try hasher.verify("pw", against: stored) }
        #expect(error?.code == .unsupportedParameters)
    }

    @Test("needsRehash is false for the current cost, true for another cost or an unparseable string")
    func needsRehash() throws {
        let current = try hasher.hash("pw")
        #expect(!hasher.needsRehash(current))
        #expect(PasswordHasher(cost: .standard).needsRehash(current))
        let weaker = try PasswordHasher(cost: PasswordHasher.Cost(n: 1 << 10, r: 8, p: 2)).hash("pw")
        #expect(hasher.needsRehash(weaker))
        #expect(hasher.needsRehash("not a hash"))
    }

    @Test("a hasher configured beyond the limits throws instead of hashing")
    func badConfiguredCost() {
        let error = #expect(throws: CryptoError.self) {
            try PasswordHasher(cost: PasswordHasher.Cost(n: 1 << 22, r: 8, p: 1)).hash("pw")
        }
        #expect(error?.code == .unsupportedParameters)
    }

    @Test("non-ASCII passwords round-trip and differ from their lookalikes")
    func unicodePasswords() throws {
        let stored = try hasher.hash("pässwörd 🔑")
        #expect(try hasher.verify("pässwörd 🔑", against: stored))
        #expect(try !hasher.verify("passwort 🔑", against: stored))
    }

    @Test("one hash at the standard cost verifies (production parameters actually run)")
    func standardCostSmoke() async throws {
        let standard = PasswordHasher()
        let stored = try await standard.hash("pw")
        #expect(stored.hasPrefix("$scrypt$ln=15,r=8,p=1$"))
        #expect(try await standard.verify("pw", against: stored))
        #expect(try await !standard.verify("pv", against: stored))
    }
}
