import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardWire
import SwitchboardTesting
import SwitchboardCLI
import SwitchboardAPNsEmulator

/// The APNs → phone leg of a profile: each push is delayed as the profile's downlink would
/// deliver one segment on a warm connection (latency, jitter, loss stalls).
final class PushLink: Sendable {
    private let schedule: Mutex<LinkSchedule<SplitMix64>>
    private let start = Date()

    init(profile: NetworkProfile, seed: UInt64) {
        schedule = Mutex(
            LinkSchedule(link: profile.downlink, random: SplitMix64(seed: seed), reverse: profile.uplink))
    }

    /// Seconds until a push that arrives now reaches the phone.
    func delay() -> Double {
        let now = Date().timeIntervalSince(start)
        let release = schedule.withLock { $0.segmentArrived(byteCount: 400, at: now) }
        return max(0, release.releaseAt - now)
    }
}

/// A progress bar on standard error.
final class Progress: Sendable {
    private let profile: String
    private let total: Int
    private let done = Mutex(0)

    init(profile: String, total: Int) {
        self.profile = profile
        self.total = total
    }

    func advance() {
        done.withLock { $0 += 1 }
        draw()
    }

    func draw() {
        let count = done.withLock { $0 }
        let width = 30
        let filled = total == 0 ? width : count * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(
            Data("\r  \(profile.padding(toLength: 13, withPad: " ", startingAt: 0)) [\(bar)] \(count)/\(total)".utf8))
    }

    func finish() { FileHandle.standardError.write(Data("\n".utf8)) }
}

/// The kernel impairment's plumbing for one run: the link (namespace, veth, nftables), the push
/// relay beside the server, and per profile two proxies inside the namespace (the API's and
/// the pushes'), delay-only.
final class KernelPath: Sendable {
    /// The ports the proxies listen on inside the namespace; nftables drops packets to and
    /// from them.
    static let apiPort = 7100, pushPort = 7101

    let link: KernelLink
    private let state = Mutex<(relay: PushRelay?, relayPort: Int, proxies: [Process])>((nil, 0, []))

    init(link: KernelLink) { self.link = link }

    func startRelay(emulator: APNsEmulator) throws {
        let relay = PushRelay(emulator: emulator, listen: IPv4Endpoint(host: link.rootAddress, port: 0))
        let port = try relay.start()
        state.withLock { $0 = (relay, port, []) }
    }

    /// Sets the profile's loss on the link (its downlink's: the named profiles lose alike both
    /// ways) and starts its proxies; returns the API's URL. It blocks (commands, a line from
    /// each proxy), so callers run it off the cooperative pool, as ``end()`` and ``stop()``.
    func begin(_ profile: NetworkProfile, serverPort: Int, seed: UInt64) throws -> URL {
        try link.setLoss(percent: Int((profile.downlink.loss.probability * 100).rounded()))
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let relayPort = state.withLock { $0.relayPort }
        for (listen, upstream, offset) in [(Self.apiPort, serverPort, UInt64(0)), (Self.pushPort, relayPort, 1)] {
            let process = try link.launch([
                executable, "proxy", "--upstream", "\(link.rootAddress):\(upstream)", "--listen",
                "\(link.namespaceAddress):\(listen)",
                "--profile", profile.name, "--delay-only", "--allow-non-loopback", "--seed", String(seed &+ offset),
            ])
            state.withLock { $0.proxies.append(process) }
            let line = try KernelLink.readLine(from: process, timeout: 10)
            guard line.hasPrefix("listening on") else {
                throw BenchUsageError("the proxy in \(link.namespace) said '\(line)'")
            }
        }
        return URL(string: "http://\(link.namespaceAddress):\(Self.apiPort)")!
    }

    /// Stops the profile's proxies; returns what the link did, for the log.
    func end() -> String {
        let proxies = state.withLock { state -> [Process] in
            defer { state.proxies = [] }
            return state.proxies
        }
        for process in proxies where process.isRunning { process.terminate() }
        for process in proxies { process.waitUntilExit() }
        return "kernel link \(link.namespace), \(link.lossPercent) % of packets dropped on the proxies' ports"
    }

    func stop() {
        _ = end()
        let relay = state.withLock { $0.relay }
        relay?.stop()
        link.destroy()
    }
}
