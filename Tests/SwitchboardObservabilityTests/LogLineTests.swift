import Foundation
import Synchronization
import Testing

@testable import SwitchboardObservability

/// The pieces of a log line written by hand for speed, against the slow references they replace.
@Suite("Log lines", .timeLimit(.minutes(1)))
struct LogLineTests {
    final class Lines: LogSink {
        let all = Mutex<[String]>([])
        func write(line: String) { all.withLock { $0.append(line) } }
    }

    @Test func escapedTextIsWhatJSONSerializationReadsBack() throws {
        let samples = [
            "", "plain", "GET /calls/{id}", "quote \" and backslash \\", "new\nline\r\ttab", "\u{0}\u{1}\u{1f}\u{7f}",
            "ünïcödé ✓ 📞", "mixed \"📞\"\n\u{8}end",
        ]
        for sample in samples {
            let document = "[\"\(JSONText.escape(sample))\"]"
            let parsed = try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String]
            #expect(parsed == [sample], "\(document)")
        }
        #expect(JSONText.escape("\u{1}") == "\\u0001")
        #expect(JSONText.escape("\u{1f}") == "\\u001f")
    }

    @Test func aDoubleHasThreeDecimalsAsPrintfWritesThem() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0, -0.0, 0.0004, 0.0005, 0.0015, -0.0004, 1, -1, 12.3456, 999.9995, 1e12, -1e12]
        for _ in 0..<10_000 { values.append(Double.random(in: -100_000...100_000, using: &generator)) }
        for _ in 0..<2_000 { values.append(Double.random(in: 0...2, using: &generator)) }
        // printf rounds the binary value half-to-even; the hand-written one rounds the scaled
        // value half away from zero. They may differ only where the value sits on a half.
        let mismatches = values.filter { value in
            let ours = LogValue.thousandths(value), reference = String(format: "%.3f", value)
            return ours != reference && !(ours == "0.000" && reference == "-0.000")
                && abs((abs(value) * 1000).truncatingRemainder(dividingBy: 1) - 0.5) > 1e-6
        }
        #expect(
            mismatches.count == 0,
            "first: \(mismatches.first.map { "\($0): \(LogValue.thousandths($0)) vs \(String(format: "%.3f", $0))" } ?? "")"
        )
        #expect(LogValue.thousandths(.infinity) == "null")
        #expect(LogValue.thousandths(.nan) == "null")
        #expect(LogValue.thousandths(1e300) == String(format: "%.3f", 1e300))
    }

    @Test func aLogLineIsOneJSONObjectWithEveryField() throws {
        let lines = Lines()
        let logger = Logger(level: .info, sink: lines).with(["request.id": .string("abc")])
        logger.info(
            "request \"x\"",
            ["status": .int(200), "duration_ms": .double(1.25), "ok": .bool(true), "path": .string("/a\nb")])
        logger.debug("not written")
        let written = lines.all.withLock { $0 }
        #expect(written.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "request \"x\"")
        #expect(object["request.id"] as? String == "abc")
        #expect(object["status"] as? Int == 200)
        #expect(object["duration_ms"] as? Double == 1.25)
        #expect(object["path"] as? String == "/a\nb")
        #expect((object["ts"] as? String)?.count == 24)
    }
}
