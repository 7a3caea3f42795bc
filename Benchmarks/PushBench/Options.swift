import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardObservability
import SwitchboardWire
import SwitchboardPushCore

/// The command-line options of a benchmark run.
struct Options {
    struct UsageError: Error {
        let message: String
    }

    var url = ""
    var caFile: String?
    var teamID = ""
    var keyID = ""
    var keyFile = ""
    var bundleID = "com.example.switchboard"
    var count = 20_000
    var concurrency = 200
    var connections = 1
    /// Streams one connection may carry; by default concurrency / connections (rounded up), so
    /// libcurl has to spread the senders over every connection instead of multiplexing them all
    /// on the first.
    var streamsPerConnection = 0
    var warmup = 2_000
    var tokens = 1_000
    var timeoutMilliseconds = 10_000
    var label: String?
    /// Percent of the device tokens whose answers the emulator holds (0 = none).
    var hangPercent = 0
    var hangMilliseconds = 15_000
    /// Every how many tokens one is held (0 = none).
    var hangEvery: Int { hangPercent > 0 ? max(1, 100 / hangPercent) : 0 }

    init(parsing arguments: [String]) throws(UsageError) {
        var index = 0
        func value(_ flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[index]
        }
        func number(_ flag: String, minimum: Int) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), number >= minimum else {
                throw UsageError(message: "\(flag) needs an integer >= \(minimum), not '\(text)'")
            }
            return number
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--url": url = try value(flag)
            case "--ca-file": caFile = try value(flag)
            case "--team-id": teamID = try value(flag)
            case "--key-id": keyID = try value(flag)
            case "--key-file": keyFile = try value(flag)
            case "--bundle-id": bundleID = try value(flag)
            case "--count": count = try number(flag, minimum: 1)
            case "--concurrency": concurrency = try number(flag, minimum: 1)
            case "--connections": connections = try number(flag, minimum: 1)
            case "--streams-per-connection": streamsPerConnection = try number(flag, minimum: 1)
            case "--warmup": warmup = try number(flag, minimum: 0)
            case "--tokens": tokens = try number(flag, minimum: 1)
            case "--timeout-ms": timeoutMilliseconds = try number(flag, minimum: 1)
            case "--label": label = try value(flag)
            case "--hang-percent": hangPercent = try number(flag, minimum: 0)
            case "--hang-ms": hangMilliseconds = try number(flag, minimum: 1)
            default: throw UsageError(message: "unknown option '\(flag)'")
            }
            index += 1
        }
        guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
            throw UsageError(message: "--url must be https://HOST:PORT (or http:// for h2c)")
        }
        guard !teamID.isEmpty, !keyID.isEmpty, !keyFile.isEmpty else {
            throw UsageError(message: "--team-id, --key-id and --key-file are required")
        }
        guard hangPercent <= 50 else { throw UsageError(message: "--hang-percent must be 0 to 50") }
        if streamsPerConnection == 0 {
            streamsPerConnection = (concurrency + connections - 1) / connections
        }
    }
}

/// The pushes to send: one VoIP push (SPEC §3, built by `VoIPPush`), sent to `tokens` device
/// tokens in turn, each with its own `apns-id`.
struct Workload: Sendable {
    let payload: [UInt8]
    private let headers: [(String, String)]
    private let apnsIDIndex: Int
    private let tokens: [String]

    init(bundleID: String, tokens count: Int) throws {
        let now = Date()
        let call = VoIPPayload(
            callId: "0b7c2f5e-6a61-4d47-9a3e-2f4c1d8e9b10", scopeKind: .conversation,
            scopeId: "9d1e4a7b-3c2f-4e5a-8b6d-1f0e2d3c4b5a",
            mode: .audio, callerName: "Bench Caller")
        let push = try VoIPPush.build(
            call, bundleID: bundleID, apnsID: "00000000-0000-4000-8000-000000000000",
            expiresAt: now.addingTimeInterval(3600), now: now)
        payload = push.payload
        headers = push.headers
        guard let index = push.headers.firstIndex(where: { $0.0 == "apns-id" }) else {
            throw WorkloadError.noApnsID
        }
        apnsIDIndex = index
        // 64 hex digits, distinct per device: "00…01", "00…02", …
        tokens = (1...count).map { number in
            let hex = String(number, radix: 16)
            return String(repeating: "0", count: 64 - hex.count) + hex
        }
    }

    enum WorkloadError: Error {
        case noApnsID
    }

    /// The index of push number `index`'s device token.
    func tokenIndex(_ index: Int) -> Int { index % tokens.count }

    /// Every `every`-th device token (indices 0, every, 2 × every, …).
    func tokens(every: Int) -> [String] {
        guard every > 0 else { return [] }
        return stride(from: 0, to: tokens.count, by: every).map { tokens[$0] }
    }

    /// Push number `index`: its device token and its headers with a fresh `apns-id`.
    func push(_ index: Int) -> (token: String, headers: [(String, String)]) {
        var headers = headers
        headers[apnsIDIndex].1 = UUID().uuidString.lowercased()
        return (tokens[index % tokens.count], headers)
    }
}
