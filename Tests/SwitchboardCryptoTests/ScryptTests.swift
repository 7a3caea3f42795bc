@testable import SwitchboardCrypto
import Testing

@Suite("scrypt key derivation", .timeLimit(.minutes(3)))
struct ScryptTests {
    typealias Cost = PasswordHasher.Cost

    @Test("RFC 7914 §12 vector: \"password\", \"NaCl\", N=1024, r=8, p=16, 64 bytes")
    func rfcPasswordNaCl() throws {
        let key = try PasswordHasher.scrypt(
            password: utf8("password"), salt: utf8("NaCl"), cost: Cost(n: 1024, r: 8, p: 16), length: 64)
        #expect(
            key
                == bytes(
                    hex: """
                        fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162\
                        2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640
                        """))
    }

    @Test("RFC 7914 §12 vector: empty password and salt, N=16, r=1, p=1, 64 bytes")
    func rfcEmpty() throws {
        let key = try PasswordHasher.scrypt(password: [], salt: [], cost: Cost(n: 16, r: 1, p: 1), length: 64)
        #expect(
            key
                == bytes(
                    hex: """
                        77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442\
                        fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906
                        """))
    }

    @Test(
        "costs outside the limits are refused before OpenSSL runs",
        arguments: [
            Cost(n: 0, r: 8, p: 1), Cost(n: 1, r: 8, p: 1), Cost(n: 1000, r: 8, p: 1),  // not a power of two ≥ 2
            Cost(n: 1 << 21, r: 1, p: 1),  // ln 21 > 20
            Cost(n: 1 << 20, r: 8, p: 1),  // 1 GiB
            Cost(n: 1 << 10, r: 0, p: 1), Cost(n: 1 << 10, r: 8, p: 0),
            Cost(n: 1 << 10, r: 64, p: 64),  // r·p = 4096
            Cost(n: 2, r: UInt64.max, p: 2),  // r·p overflows
            Cost(n: 1 << 16, r: 8, p: 64),  // n·r·p = 2^25
        ])
    func refusesAbsurdCosts(cost: Cost) {
        let error = #expect(throws: CryptoError.self) {
            try PasswordHasher.scrypt(password: utf8("pw"), salt: utf8("salt"), cost: cost, length: 32)
        }
        #expect(error?.code == .unsupportedParameters)
    }

    @Test("the production cost is within the limits and uses about 32 MiB")
    func standardCostFits() throws {
        try Cost.standard.checkLimits()
        try Cost.fastForTests.checkLimits()
        #expect(Cost.standard.memory >> 20 == 32)
        #expect(Cost.standard.logN == 15)
    }
}
