import SwitchboardCrypto
import Testing

@Suite("SHA-256 and HMAC-SHA256", .timeLimit(.minutes(3)))
struct DigestTests {
    @Test("SHA-256 matches the FIPS 180-2 vectors for \"\" and \"abc\"")
    func sha256Vectors() {
        #expect(SHA256.hash(utf8("")) == bytes(hex: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
        #expect(
            SHA256.hash(utf8("abc")) == bytes(hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(SHA256.hex(utf8("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("a non-contiguous collection is streamed in chunks: one million 'a' gives the published digest")
    func sha256Streaming() {
        let million = repeatElement(UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // Lengths around the 4096-byte chunk size, streamed and contiguous, agree.
        for count in [4095, 4096, 4097, 8192] {
            let lazyBytes = (0..<count).lazy.map { UInt8(truncatingIfNeeded: $0 &* 31) }
            #expect(SHA256.hash(lazyBytes) == SHA256.hash(Array(lazyBytes)), "length \(count)")
        }
    }

    @Test("an ArraySlice hashes only its own elements")
    func sha256Slice() {
        let message = utf8("xxabcxx")
        #expect(SHA256.hash(message[2..<5]) == SHA256.hash(utf8("abc")))
    }

    @Test(
        "HMAC-SHA256 matches RFC 4231 test cases 1, 2 and 6",
        arguments: [
            (
                bytes(hex: String(repeating: "0b", count: 20)), utf8("Hi There"),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                utf8("Jefe"), utf8("what do ya want for nothing?"),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                bytes(hex: String(repeating: "aa", count: 131)),
                utf8("Test Using Larger Than Block-Size Key - Hash Key First"),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
        ])
    func hmacVectors(key: [UInt8], message: [UInt8], expected: String) {
        #expect(HMAC.sha256(key: key, message: message) == bytes(hex: expected))
    }

    @Test("HMAC-SHA256 with an empty key and message (value from Python's hmac module)")
    func hmacEmpty() {
        // python3 -c 'import hmac; print(hmac.new(b"", b"", "sha256").hexdigest())'
        #expect(
            HMAC.sha256(key: [], message: [])
                == bytes(hex: "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
    }

    @Test("ConstantTime.equals: equal, different content, different length, empty")
    func constantTimeEquals() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([9, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equals([], [0]))
        #expect(ConstantTime.equals([], []))
    }
}

@Suite("MD5 (vivo's auth signature only)", .timeLimit(.minutes(1)))
struct MD5Tests {
    @Test func knownDigests() {
        // RFC 1321 §A.5.
        #expect(MD5.hex([]) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex(Array("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(MD5.hex(Array("message digest".utf8)) == "f96b697d7cb7938d525a2f31aaf161d0")
    }
}
