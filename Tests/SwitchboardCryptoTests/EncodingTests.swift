import SwitchboardCrypto
import Testing

@Suite("Base64URL and SecureRandom", .timeLimit(.minutes(3)))
struct EncodingTests {
    @Test("encode then decode gives back every length from 0 to 64, with and without padding")
    func roundTrip() {
        for count in 0...64 {
            let original = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let encoded = Base64URL.encode(original)
            #expect(encoded.count == (count * 4 + 2) / 3, "length \(count)")
            #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
            #expect(Base64URL.decode(encoded) == original, "length \(count)")
            let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
            #expect(Base64URL.decode(padded) == original, "padded length \(count)")
        }
    }

    @Test("known encodings use the URL-safe alphabet")
    func knownValues() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.encode(utf8("hello")) == "aGVsbG8")
        #expect(Base64URL.decode("aGVsbG8") == utf8("hello"))
        #expect(Base64URL.decode("aGVsbG8=") == utf8("hello"))
    }

    @Test(
        "invalid input decodes to nil",
        arguments: [
            "+/8", "ab/c", "ab+c",  // standard-alphabet characters
            "aGVs bG8", "aGVsbG8\n", "aGV$", "é",  // whitespace, symbols, non-ASCII
            "a", "abcde",  // impossible lengths
            "aGVsbG8==", "aG=VsbG8", "=", "====", "ab=c",  // misplaced or wrong padding
            "aGVsbG9", "-_-", "QR",  // non-zero unused bits in the last character
        ])
    func rejectsInvalid(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("a default token is 43 base64url characters of 32 random bytes, and 1,000 tokens are distinct")
    func tokens() {
        let tokens = (0..<1000).map { _ in SecureRandom.token() }
        #expect(Set(tokens).count == 1000)
        for token in tokens.prefix(20) {
            #expect(token.count == 43)
            #expect(Base64URL.decode(token)?.count == 32)
        }
        #expect(SecureRandom.token(byteCount: 16).count == 22)
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(100).count == 100)
    }

    @Test("random bytes are not constant: every bit position takes both values over 64 draws")
    func bytesVary() {
        let draws = (0..<64).map { _ in SecureRandom.bytes(16) }
        for index in 0..<16 {
            let ored = draws.reduce(UInt8(0)) { $0 | $1[index] }
            let anded = draws.reduce(UInt8(0xFF)) { $0 & $1[index] }
            #expect(ored == 0xFF && anded == 0x00, "byte \(index)")
        }
    }

    @Test("uuid() is a lowercase RFC 4122 version-4 UUID string, and 1,000 are distinct")
    func uuids() {
        let uuids = (0..<1000).map { _ in SecureRandom.uuid() }
        #expect(Set(uuids).count == 1000)
        for uuid in uuids {
            let characters = Array(uuid)
            #expect(characters.count == 36)
            for (index, character) in characters.enumerated() {
                if [8, 13, 18, 23].contains(index) {
                    #expect(character == "-", "\(uuid)")
                } else {
                    #expect("0123456789abcdef".contains(character), "\(uuid)")
                }
            }
            #expect(characters[14] == "4", "version nibble of \(uuid)")
            #expect("89ab".contains(characters[19]), "variant nibble of \(uuid)")
        }
    }
}
