import Foundation
import Testing

@testable import SwitchboardCrypto

@Suite("AES-256-GCM", .timeLimit(.minutes(2)))
struct AESGCMTests {
    /// The GCM specification's AES-256 test cases 13, 14 and 16 (McGrew and Viega, "The
    /// Galois/Counter Mode of Operation", appendix B).
    @Test("the GCM specification's AES-256 vectors, sealed and opened")
    func knownAnswers() throws {
        let cases: [(key: String, nonce: String, plaintext: String, aad: String, ciphertext: String, tag: String)] = [
            (
                String(repeating: "00", count: 32), String(repeating: "00", count: 12), "", "", "",
                "530f8afbc74536b9a963b4f1c4cb738b"
            ),
            (
                String(repeating: "00", count: 32), String(repeating: "00", count: 12),
                String(repeating: "00", count: 16), "",
                "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"
            ),
            (
                "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
                "feedfacedeadbeeffeedfacedeadbeefabaddad2",
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
                "76fc6ece0f4e1768cddf8853bb2d551b"
            ),
        ]
        for vector in cases {
            let box = try AESGCM.seal(
                bytes(hex: vector.plaintext), key: bytes(hex: vector.key), nonce: bytes(hex: vector.nonce),
                authenticating: bytes(hex: vector.aad))
            #expect(box.ciphertext == bytes(hex: vector.ciphertext))
            #expect(box.tag == bytes(hex: vector.tag))
            #expect(
                try AESGCM.open(box, key: bytes(hex: vector.key), authenticating: bytes(hex: vector.aad))
                    == bytes(hex: vector.plaintext))
        }
    }

    @Test("a fresh random nonce each time; combined form round-trips")
    func freshNonces() throws {
        let key = SecureRandom.bytes(32), message = Array("hello".utf8)
        let first = try AESGCM.seal(message, key: key), second = try AESGCM.seal(message, key: key)
        #expect(first.nonce.count == 12)
        #expect(first.nonce != second.nonce)
        #expect(first.ciphertext != second.ciphertext)
        let back = try #require(AESGCM.SealedBox(combined: first.combined))
        #expect(back == first)
        #expect(AESGCM.SealedBox(combined: Array(repeating: 0, count: 27)) == nil)
        #expect(try AESGCM.open(back, key: key) == message)
    }

    @Test("a changed byte anywhere, another key or other additional data is refused")
    func tampering() throws {
        let key = SecureRandom.bytes(32), aad = Array("k1".utf8)
        let box = try AESGCM.seal(Array("{\"callId\":\"c1\"}".utf8), key: key, authenticating: aad)
        func refused(_ box: AESGCM.SealedBox, key: [UInt8] = key, aad: [UInt8] = aad) -> Bool {
            do {
                _ = try AESGCM.open(box, key: key, authenticating: aad)
                return false
            } catch {
                return error.code == .malformedInput
            }
        }
        for index in box.ciphertext.indices {
            var ciphertext = box.ciphertext
            ciphertext[index] ^= 0x01
            #expect(refused(AESGCM.SealedBox(nonce: box.nonce, ciphertext: ciphertext, tag: box.tag)))
        }
        var tag = box.tag
        tag[15] ^= 0x80
        #expect(refused(AESGCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext, tag: tag)))
        var nonce = box.nonce
        nonce[0] ^= 0x01
        #expect(refused(AESGCM.SealedBox(nonce: nonce, ciphertext: box.ciphertext, tag: box.tag)))
        #expect(refused(AESGCM.SealedBox(nonce: box.nonce, ciphertext: Array(box.ciphertext.dropLast()), tag: box.tag)))
        #expect(refused(box, key: SecureRandom.bytes(32)))
        #expect(refused(box, aad: Array("k2".utf8)))
        #expect(refused(box, aad: []))
        #expect(throws: CryptoError.self) { try AESGCM.seal([1], key: [0, 1, 2]) }
        #expect(throws: CryptoError.self) { try AESGCM.seal([1], key: key, nonce: [0]) }
        #expect(throws: CryptoError.self) {
            try AESGCM.open(AESGCM.SealedBox(nonce: [0], ciphertext: [], tag: box.tag), key: key)
        }
    }

    /// Python's `cryptography` (the reference) opens what this seals, and this opens what it seals.
    @Test("boxes cross over with Python's cryptography, both ways")
    func pythonCrossCheck() throws {
        let key = SecureRandom.bytes(32), aad = Array("device-key-7".utf8)
        let message = Array(
            "{\"aps\":{},\"callId\":\"0f8fad5b-d9cb-469f-a165-70867728950e\",\"callerName\":\"Zoë ☎\"}".utf8)
        let ours = try AESGCM.seal(message, key: key, authenticating: aad)
        let script = """
            import sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            key, aad, nonce, ct_tag, message = (bytes.fromhex(a) for a in sys.argv[1:6])
            aes = AESGCM(key)
            assert aes.decrypt(nonce, ct_tag, aad) == message, "Python opened something else"
            theirs_nonce = bytes(range(12))
            print(theirs_nonce.hex(), aes.encrypt(theirs_nonce, message[::-1], aad).hex())
            """
        let output = try runPython(
            script,
            arguments: [
                hex(key), hex(aad), hex(ours.nonce), hex(ours.ciphertext + ours.tag), hex(message),
            ])
        let words = output.split(separator: " ").map(String.init)
        try #require(words.count == 2)
        let combined = bytes(hex: words[1])
        let theirs = AESGCM.SealedBox(
            nonce: bytes(hex: words[0]), ciphertext: Array(combined.dropLast(16)), tag: Array(combined.suffix(16)))
        #expect(try AESGCM.open(theirs, key: key, authenticating: aad) == Array(message.reversed()))
    }

    private func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    /// Runs `python3 -c script arguments…` and returns its standard output, trimmed; fails the
    /// test when it exits non-zero.
    private func runPython(_ script: String, arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        let problems = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0,
            "python3 exited \(process.terminationStatus): \(String(decoding: problems, as: UTF8.self))")
        return String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
