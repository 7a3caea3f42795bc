import Foundation
import SwitchboardTesting
import Testing

/// `switchboard demo` as a user runs it: the binary, no configuration, every scenario.
@Suite("switchboard demo (the binary)")
struct DemoLiveTests {
    @Test func theDemoPlaysEveryScenarioAndExitsZero() async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-demo-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.binaryPath)
        process.arguments = ["demo", "--ring-timeout", "5"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = process.standardOutput
        try process.run()
        let finished = await eventually(seconds: 120) { !process.isRunning }
        if !finished { process.terminate() }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(finished && process.terminationStatus == 0, "\(text.suffix(3000))")
        #expect(text.contains("All six scenarios ended as expected."))
        for number in 1...6 { #expect(text.contains("✓ scenario \(number) ended as expected")) }
        #expect(text.contains("woken by push"))
        #expect(text.contains("(answeredElsewhere)") && text.contains("(unanswered)"))
    }
}
