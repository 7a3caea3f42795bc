import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardWire
import SwitchboardTesting
import SwitchboardCore
import SwitchboardCLI
import SwitchboardAPNsEmulator

/// `switchboard-dev bench wakeup`: simulated phones behind the impairment proxy, one network
/// profile after another; for each ring the wake-up latency and whether the call was set up.
public enum WakeupBench {
    public struct Options: Sendable, Equatable {
        /// Phones in all: half call, half are called (one ring per pair and profile).
        public var phones = 200
        public var profiles: [NetworkProfile] = NetworkProfile.all
        public var thresholds = WakeupThresholds()
        public var outDirectory = "wakeup-results"
        /// Rings in flight at once.
        public var concurrency = 20
        /// Answer → both connected within this many seconds counts as a successful setup.
        public var setupLimitSeconds = 3.0
        public var seed: UInt64 = 1
        /// Who loses the packets: the proxy's model, or the kernel (``Impairment``).
        public var impairment = Impairment.model
        public init() {}
    }

    /// Where loss comes from.
    public enum Impairment: String, Sendable, Equatable, CaseIterable {
        /// The impairment proxy simulates everything on loopback, loss as retransmission stalls.
        case model
        /// Real packets are dropped by nftables on a veth into a network namespace and Linux's
        /// own TCP recovers them; the proxy, inside the namespace, adds only delay and bandwidth.
        /// The VoIP pushes cross the same link on a warm TCP connection (a push relay).
        case kernel
    }

    /// `switchboard-dev bench wakeup …` (the arguments after `wakeup`).
    public static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        do {
            guard let parsed = try parse(arguments) else {
                print(help)
                return 0
            }
            options = parsed
        } catch {
            FileHandle.standardError.write(Data("switchboard-dev bench wakeup: \(error)\n".utf8))
            return 2
        }
        // A results directory that cannot be written is found now, not after minutes of ringing.
        let directory = options.outDirectory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            guard FileManager.default.isWritableFile(atPath: directory) else { throw BenchUsageError("not writable") }
        } catch {
            FileHandle.standardError.write(
                Data("switchboard-dev bench wakeup: cannot write results to --out \(directory): \(error)\n".utf8))
            return 2
        }
        return waitForExitCode {
            do {
                return try await execute(options).passed ? 0 : 1
            } catch {
                FileHandle.standardError.write(Data("switchboard-dev bench wakeup: \(error)\n".utf8))
                return 1
            }
        }
    }

    /// Runs every profile, prints the table, writes the files.
    public static func execute(_ options: Options) async throws -> WakeupReport {
        let started = Timestamp.iso8601(Date())
        var link: KernelPath?
        var stackOptions = DemoStack.Options()
        if options.impairment == .kernel {
            let made = try await offPool {
                try KernelLink.create(impairedPorts: [KernelPath.apiPort, KernelPath.pushPort])
            }
            stackOptions.listenHost = made.rootAddress
            link = KernelPath(link: made)
        }
        let stack: DemoStack
        do {
            stack = try await DemoStack(options: stackOptions)
        } catch {
            if let link { await offPool { link.link.destroy() } }
            throw error
        }
        do {
            try link?.startRelay(emulator: stack.emulator)
            let report = try await measure(options, on: stack, kernel: link, startedAt: started)
            if let link { await offPool { link.stop() } }
            await stack.shutDown()
            return report
        } catch {
            if let link { await offPool { link.stop() } }
            await stack.shutDown()
            throw error
        }
    }

    private struct Pair: Sendable {
        let caller: AuthSession
        let callee: AuthSession
        let conversation: String
        let calleeDevice: UUID
    }

    private static func measure(
        _ options: Options, on stack: DemoStack, kernel: KernelPath?, startedAt: String
    ) async throws -> WakeupReport {
        let err = FileHandle.standardError
        err.write(Data("Setting up \(options.phones) phones (\(options.phones / 2) pairs)…\n".utf8))
        var pairs: [Pair] = []
        for index in 0..<(options.phones / 2) {
            let caller = try await stack.register("caller\(index)"), callee = try await stack.register("callee\(index)")
            pairs.append(
                Pair(
                    caller: caller, callee: callee, conversation: try await stack.befriend(caller, callee),
                    calleeDevice: UUID()))
        }
        guard let serverPort = Int(stack.server.address.split(separator: ":").last ?? "") else {
            throw BenchUsageError("cannot read the server's port from \(stack.server.address)")
        }
        var results: [WakeupProfileResult] = []
        for (profileIndex, profile) in options.profiles.enumerated() {
            let seed = options.seed &+ UInt64(profileIndex) &* 1_000_003
            let proxy = ImpairmentProxy(
                configuration: ImpairmentProxyConfiguration(
                    upstream: IPv4Endpoint(host: "127.0.0.1", port: serverPort), profile: profile, seed: seed))
            let proxied: URL
            if let kernel {
                proxied = try await offPool { try kernel.begin(profile, serverPort: serverPort, seed: seed) }
            } else {
                proxied = URL(string: "http://127.0.0.1:\(try proxy.start())")!
            }
            var relayed: [RelayedPushSource] = []
            var callers: [SimulatedPhone] = [], callees: [SimulatedPhone] = []
            var callerLogs: [RequestLog] = [], calleeLogs: [RequestLog] = []
            var transports: [any HTTPTransport] = []
            func timed(_ inner: any HTTPTransport, _ log: RequestLog) -> any HTTPTransport {
                let transport = TimedTransport(inner: inner, log: log)
                transports.append(transport)
                return transport
            }
            for (index, pair) in pairs.enumerated() {
                let link = PushLink(profile: profile, seed: seed &+ UInt64(index) &+ 7)
                let callerLog = RequestLog(), calleeLog = RequestLog()
                callerLogs.append(callerLog)
                calleeLogs.append(calleeLog)
                callers.append(
                    stack.phone(
                        "caller\(index)", of: pair.caller, baseURL: proxied,
                        transport: timed(HedgingTransport(), callerLog),
                        eventTransport: timed(URLSessionTransport(), callerLog),
                        callEventTransport: timed(HedgingTransport(lanes: 2), callerLog)))
                let token = DemoStack.newPushToken()
                // Under the kernel impairment the push crosses the lossy link itself, on the
                // phone's warm connection to the relay; under the model it is delayed as one
                // segment of the profile's downlink.
                let source = kernel.map {
                    RelayedPushSource(
                        relay: IPv4Endpoint(host: $0.link.namespaceAddress, port: KernelPath.pushPort), token: token)
                }
                if let source { relayed.append(source) }
                let delayed: @Sendable () -> Double = { link.delay() }
                let pushDelay = source == nil ? delayed : nil
                callees.append(
                    stack.phone(
                        "callee\(index)", of: pair.callee, baseURL: proxied, pushDelay: pushDelay,
                        transport: timed(HedgingTransport(), calleeLog),
                        eventTransport: timed(URLSessionTransport(), calleeLog),
                        callEventTransport: timed(HedgingTransport(lanes: 2), calleeLog),
                        pushSource: source, pushToken: token))
            }
            // Callers have their app open; callees' devices register directly (set-up, not
            // measured) and their apps then stay closed, so only the push can wake them.
            await withTaskGroup(of: Void.self) { group in
                for caller in callers { group.addTask { await caller.bringToForeground() } }
            }
            for (index, callee) in callees.enumerated() {
                _ = try await stack.client(pairs[index].callee).registerVoIPDevice(
                    deviceID: pairs[index].calleeDevice, pushToken: callee.pushToken, environment: .sandbox)
                callee.startReceivingPushes()
            }
            let progress = Progress(profile: profile.name, total: pairs.count)
            progress.draw()
            var samples = [WakeupSample?](repeating: nil, count: pairs.count)
            await withTaskGroup(of: (Int, WakeupSample).self) { group in
                var next = 0
                func launch() {
                    let index = next
                    next += 1
                    let caller = callers[index], callee = callees[index], pair = pairs[index]
                    let logs = (caller: callerLogs[index], callee: calleeLogs[index])
                    let emulator = stack.emulator
                    let token = callee.pushToken
                    group.addTask {
                        var ring = await ring(
                            caller: caller, callee: callee, conversation: pair.conversation, options: options)
                        let push = ring.callID.flatMap { callID in
                            emulator.inbox(token: token).last {
                                IncomingCallPush(json: Data($0.payload))?.callID == callID
                            }
                        }
                        let accepted = push.map { Date(timeIntervalSince1970: Double($0.receivedAt) / 1000) }
                        let arrived = ring.callID.flatMap { callID in
                            callee.timeline.first { $0.text == "VoIP push for call \(callID.prefix(8))" }?.at
                        }
                        Self.addTimings(
                            to: &ring, caller: caller, callee: callee, logs: logs, pushAcceptedAt: accepted,
                            pushArrivedAt: arrived)
                        return (index, ring.sample)
                    }
                }
                while next < min(options.concurrency, pairs.count) { launch() }
                for await (index, sample) in group {
                    samples[index] = sample
                    progress.advance()
                    if next < pairs.count { launch() }
                }
            }
            progress.finish()
            let violations = (callers + callees).flatMap { phone in
                (phone.callSystem?.violations ?? []).map { "\(phone.name): \($0)" }
            }
            for phone in callers + callees { phone.shutDown() }
            relayed.forEach { $0.stop() }
            // Close this profile's URL sessions before the next profile opens thousands of
            // connections: corelibs URLSession keeps a closed socket's descriptor registered
            // with libdispatch, and a new socket reusing the number then traps there.
            transports.forEach { $0.invalidate() }
            let requests = (callerLogs + calleeLogs).reduce(0) { $0 + $1.entries { _ in true }.count }
            let leftLive = await endCallsLeftLive(callers: pairs.map(\.caller), stack: stack)
            let left =
                leftLive > 0
                ? "; \(leftLive) calls whose hang-up had not reached the server when the phones shut down, ended directly"
                : ""
            if let kernel {
                let ended = await offPool { kernel.end() }
                err.write(Data("  \(profile.name): \(requests) requests; \(ended)\(left)\n".utf8))
            } else {
                proxy.stop()
                let traffic = proxy.statistics
                err.write(
                    Data(
                        "  \(profile.name): \(requests) requests over \(traffic.connectionsAccepted) connections; \(traffic.stalls) stalls (\(String(format: "%.1f", traffic.stallSeconds)) s), \(traffic.resets) resets\(left)\n"
                            .utf8))
            }
            results.append(
                WakeupProfileResult(
                    profile: profile.name, samples: samples.compactMap { $0 },
                    threshold: options.thresholds.threshold(for: profile.name),
                    contractViolations: violations,
                    pushLegFloor: LinkSchedule<SplitMix64>.delayFloor(of: profile.downlink, quantile: 0.95) * 1000))
        }
        let report = WakeupReport(
            phones: options.phones, startedAt: startedAt, profiles: results, impairment: options.impairment.rawValue)
        print(report.table)
        print()
        print(report.stepTable)
        print()
        print(report.answerDeadlineTable)
        try FileManager.default.createDirectory(atPath: options.outDirectory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let json = options.outDirectory + "/wakeup.json", chart = options.outDirectory + "/wakeup-latency.svg"
        try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        try report.chartSVG.write(toFile: chart, atomically: true, encoding: .utf8)
        print("wrote \(json) and \(chart)")
        print(report.passed ? "all gates passed" : "a gate FAILED")
        return report
    }

    /// Ends, straight on the server, the calls the callers still have live: a hang-up whose
    /// leave was still being retried over the lossy link when the phones shut down. Left
    /// alone, such a call keeps its callee busy, and the next profile's ring to them would be
    /// answered `busy` without a push ("never rang"). Returns how many it ended.
    static func endCallsLeftLive(callers: [AuthSession], stack: DemoStack) async -> Int {
        let transport = URLSessionTransport()
        defer { transport.invalidate() }
        var ended = 0
        for session in callers {
            let client = SwitchboardClient(
                baseURL: stack.baseURL, token: session.token, transport: transport, eventTransport: transport)
            for call in (try? await client.activeCalls()) ?? [] where call.state == .ringing || call.state == .active {
                if (try? await client.perform(call.state == .ringing ? .cancel : .leave, onCall: call.id)) != nil {
                    ended += 1
                }
            }
        }
        return ended
    }

    /// One ring's outcome and the moments the timing breakdown starts from.
    struct Ring: Sendable {
        var sample: WakeupSample
        var callID: String?
        var dialed: Date
        var answered: Date?
    }

    /// One ring: dial, wait for the callee's call system to ring, answer, wait for both sides
    /// connected, hang up.
    static func ring(
        caller: SimulatedPhone, callee: SimulatedPhone, conversation: String, options: Options
    ) async -> Ring {
        let dialed = Date()
        let callID: String
        do {
            callID = try await caller.dial(scopeKind: .conversation, scopeID: conversation, handle: callee.name)
        } catch {
            return Ring(
                sample: WakeupSample(
                    wakeupMilliseconds: nil, setupSucceeded: false, setupMilliseconds: nil, wokenBy: nil,
                    failure: "dial failed: \(error)"),
                dialed: dialed)
        }
        var origin: String?
        func woke() -> Date? {
            callee.notices.first { timed in
                guard case .incoming(let id, let how) = timed.notice, id == callID else { return false }
                origin = how.rawValue
                return true
            }?.at
        }
        guard await eventually(seconds: 30, { woke() != nil }), let wokeAt = woke() else {
            try? caller.hangUp(callID)
            return Ring(
                sample: WakeupSample(
                    wakeupMilliseconds: nil, setupSucceeded: false, setupMilliseconds: nil, wokenBy: nil,
                    failure: "never rang"),
                callID: callID, dialed: dialed)
        }
        let wakeup = wokeAt.timeIntervalSince(dialed) * 1000
        // What the callee's own requests (through the profile's network) say the answer
        // deadline should be, at the moment it answers.
        let adaptiveDeadline = callee.client.networkQuality.answerDeadline
        let answered = Date()
        do {
            try callee.answer(callID)
        } catch {
            try? caller.hangUp(callID)
            return Ring(
                sample: WakeupSample(
                    wakeupMilliseconds: wakeup, setupSucceeded: false, setupMilliseconds: nil, wokenBy: origin,
                    failure: "answer refused: \(error)"),
                callID: callID, dialed: dialed)
        }
        func connected(_ phone: SimulatedPhone) -> Date? {
            phone.notices.first { if case .connected(let id) = $0.notice { id == callID } else { false } }?.at
        }
        // The adaptive deadline as the coordinator applies it, re-evaluated while the answer
        // waits (here every poll of the wait below): the first moment the time waited reaches
        // it, the answer would fail. Reported beside the fixed deadline the phones run with.
        let quality = callee.client.networkQuality
        var adaptiveMiss = false, adaptiveLast = adaptiveDeadline
        let both = await eventually(seconds: options.setupLimitSeconds + 7) {
            if connected(callee) == nil, !adaptiveMiss {
                adaptiveLast = quality.answerDeadline
                adaptiveMiss = Date().timeIntervalSince(answered) >= adaptiveLast
            }
            return connected(caller) != nil && connected(callee) != nil
        }
        let setup = both ? max(connected(caller)!, connected(callee)!).timeIntervalSince(answered) * 1000 : nil
        let succeeded = setup.map { $0 <= options.setupLimitSeconds * 1000 } ?? false
        var failure: String?
        if !both {
            let ended = callee.notices.compactMap { timed -> String? in
                if case .ended(let id, let reason, _) = timed.notice, id == callID {
                    return reason.map { "\($0)" } ?? "here"
                }
                return nil
            }.first
            failure = "not connected" + (ended.map { " (callee ended: \($0))" } ?? "")
        } else if !succeeded {
            failure = "connected too late"
        }
        try? caller.hangUp(callID)
        _ = await eventually(seconds: 10) {
            caller.coordinator?.call(callID)?.stage == .ended && callee.coordinator?.call(callID)?.stage == .ended
        }
        let sample = WakeupSample(
            wakeupMilliseconds: wakeup, setupSucceeded: succeeded, setupMilliseconds: setup, wokenBy: origin,
            failure: failure,
            calleeConnectedMilliseconds: connected(callee).map { $0.timeIntervalSince(answered) * 1000 },
            callerConnectedMilliseconds: connected(caller).map { $0.timeIntervalSince(answered) * 1000 },
            adaptiveAnswerDeadlineSeconds: adaptiveDeadline, adaptiveAnswerDeadlineAtEndSeconds: adaptiveLast,
            adaptiveAnswerDeadlineMissed: adaptiveMiss)
        return Ring(sample: sample, callID: callID, dialed: dialed, answered: answered)
    }

    /// Adds push → reported and the per-step breakdown to a ring's sample, from both phones'
    /// request logs, the callee's timeline and notices, and the time APNs accepted the push.
    static func addTimings(
        to ring: inout Ring, caller: SimulatedPhone, callee: SimulatedPhone,
        logs: (caller: RequestLog, callee: RequestLog),
        pushAcceptedAt: Date?, pushArrivedAt: Date?
    ) {
        guard let callID = ring.callID else { return }
        func ms(_ from: Date?, _ to: Date?) -> Double? {
            guard let from, let to else { return nil }
            return to.timeIntervalSince(from) * 1000
        }
        let reported = callee.firstNotice { if case .incoming(let id, _) = $0 { id == callID } else { false } }
        let callerConnected = caller.firstNotice { if case .connected(let id) = $0 { id == callID } else { false } }
        let calleeConnected = callee.firstNotice { if case .connected(let id) = $0 { id == callID } else { false } }
        let dial = logs.caller.entries { $0 == "POST /calls" }.first { $0.sentAt >= ring.dialed }
        let accept = logs.callee.entries { $0 == "POST /calls/\(callID)/accept" }.first
        let calleeToken = logs.callee.entries { $0 == "POST /calls/\(callID)/media-token" }.first
        let callerToken = logs.caller.entries { $0 == "POST /calls/\(callID)/media-token" }.last { $0.status == 200 }
        // How the caller heard of the answer: its first long poll answered after the callee's
        // accept was sent, or its media token request held until the answer, whichever came
        // first. A token asked for before that costs nothing more from then on.
        let callerEvent = accept.flatMap { accept in
            logs.caller.entries { $0 == "GET /events" }.first { $0.answeredAt > accept.sentAt && $0.status == 200 }
        }
        let callerHeard = [callerEvent?.answeredAt, callerToken?.answeredAt].compactMap { $0 }.min()
        var steps: [String: Double] = [:]
        func put(_ step: WakeupStep, _ value: Double?) { if let value { steps[step.rawValue] = max(0, value) } }
        put(.dialRequest, ms(dial?.sentAt, dial?.answeredAt))
        put(.toAPNs, ms(ring.dialed, pushAcceptedAt))
        put(.pushLeg, ms(pushAcceptedAt, pushArrivedAt))
        put(.report, ms(pushArrivedAt, reported))
        put(.answerRequest, ms(accept?.sentAt, accept?.answeredAt))
        put(.calleeToken, ms(calleeToken?.sentAt, calleeToken?.answeredAt))
        put(.calleeMedia, ms(calleeToken?.answeredAt ?? accept?.answeredAt, calleeConnected))
        put(.callerHears, ms(ring.answered, callerHeard))
        put(.callerToken, ms(callerToken.map { max($0.sentAt, callerHeard ?? $0.sentAt) }, callerToken?.answeredAt))
        put(.callerMedia, ms(callerToken?.answeredAt, callerConnected))
        ring.sample.steps = steps
        ring.sample.pushToReportedMilliseconds = ms(pushAcceptedAt, reported)
    }
}
