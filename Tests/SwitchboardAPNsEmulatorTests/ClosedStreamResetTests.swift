import Foundation
import SwitchboardAPNsEmulator
import SwitchboardPush
import Testing
import SwitchboardTesting

/// Our HTTP/2 client (libcurl 7.88.1 + the closed-stream reset filter) against the emulator
/// over TLS: a long run of pushes stays on one connection and resets no stream.
@Suite(.timeLimit(.minutes(3))) struct ClosedStreamResetTests {
    /// Without the filter libcurl 7.88.1 sends RST_STREAM(STREAM_CLOSED) after every push but
    /// the first on a connection; past 1,000 of them nghttp2 (and so the emulator) answers
    /// GOAWAY, and the client reconnects, retries and delivers some pushes twice.
    @Test func pushesAfterTheFirstOnAConnectionResetNoStream() async throws {
        #expect(HTTP2Client.closedStreamResets.active, "libcurl's resets bind to the filter in this binary")
        var configuration = Fixture.configuration()
        configuration.tls = APNsEmulatorTLS()
        try await withEmulator(configuration) { emulator, port in
            let pem = try #require(emulator.certificatePEM)
            let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-reset-ca-\(port).pem").path
            try pem.write(toFile: caFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: caFile) }
            let client = try HTTP2Client(
                configuration: HTTP2ClientConfiguration(baseURL: "https://127.0.0.1:\(port)", caFile: caFile))
            let headers = Fixture.pushHeaders()
            var statuses: [Int: Int] = [:]
            do {
                // One after another, then 20 at a time: both the sequential and the multiplexed end of a stream.
                for seed in 0..<30 {
                    let token = Fixture.deviceToken(0x500 + seed)
                    let response = try await client.send(
                        HTTP2Request(
                            method: "POST", path: "/3/device/\(token)", headers: headers, body: Fixture.payload()))
                    statuses[response.status, default: 0] += 1
                }
                for batch in 0..<5 {
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        for seed in 0..<20 {
                            let token = Fixture.deviceToken(0x600 + batch * 20 + seed)
                            group.addTask {
                                try await client.send(
                                    HTTP2Request(
                                        method: "POST", path: "/3/device/\(token)", headers: headers,
                                        body: Fixture.payload())
                                ).status
                            }
                        }
                        for try await status in group { statuses[status, default: 0] += 1 }
                    }
                }
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
            #expect(statuses == [200: 130])
            // The emulator counts frames as it reads them; the last ones arrive with the client's close.
            #expect(await eventually { emulator.stats.connectionsOpen == 0 })
            let stats = emulator.stats
            #expect(stats.resetsReceived == 0, "RST_STREAM frames the emulator received")
            #expect(stats.connectionsAccepted == 1)
            #expect(stats.pushesDelivered == 130 && stats.duplicateDeliveries == 0)
        }
    }
}
