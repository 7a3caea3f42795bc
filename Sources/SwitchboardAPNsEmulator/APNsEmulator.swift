import Foundation
import Synchronization
import SwitchboardPOSIX

/// A local stand-in for Apple's APNs: HTTP/2 (h2c with prior knowledge, or TLS with ALPN `h2`),
/// APNs's validation and answers, scripted faults, and an inbox per device token that a
/// simulated phone long-polls.
///
/// ```swift
/// let emulator = APNsEmulator(configuration: APNsEmulatorConfiguration(port: 0))
/// let address = try emulator.start()                 // address.port
/// emulator.addFaults([APNsFault(.unregistered, token: deadToken)])
/// …
/// emulator.inbox(token: token)                      // the pushes it accepted, in order
/// await emulator.shutdown()
/// ```
/// It runs on one dedicated thread of its own (never Swift's cooperative pool).
public final class APNsEmulator: Sendable {
    /// Where a started emulator listens.
    public struct Address: Sendable, Hashable, CustomStringConvertible {
        /// The host it was configured with.
        public let host: String
        /// The bound port (the real one when 0 was configured).
        public let port: Int
        /// `h2` with TLS, `h2c` without.
        public let mode: String

        /// `host:port`, with brackets around an IPv6 literal.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    private enum Phase {
        case idle
        case running(EmulatorLoop, Address, certificatePEM: String?)
        case stopped
    }

    /// The configuration it was created with.
    public let configuration: APNsEmulatorConfiguration
    private let shared: EmulatorShared
    private let phase = Mutex(Phase.idle)

    /// Creates an emulator; nothing listens until ``start()``.
    public init(configuration: APNsEmulatorConfiguration) {
        self.configuration = configuration
        shared = EmulatorShared(faults: configuration.faults, inboxCapacity: configuration.inboxCapacity)
    }

    deinit {
        if case .running(let loop, _, _) = phase.withLock({ $0 }) { loop.requestStop() }
    }

    /// Binds the listening socket, starts the loop thread and returns the address.
    ///
    /// Throws ``APNsEmulatorSystemError`` when the address cannot be bound, an
    /// ``APNsEmulatorTLSError`` when the TLS certificate cannot be made, and an
    /// ``APNsEmulatorStateError`` when called twice.
    @discardableResult
    public func start() throws -> Address {
        try phase.withLock { phase in
            guard case .idle = phase else { throw APNsEmulatorStateError(message: "start() was already called") }
            let makeTransport: (Int32) throws -> any ConnectionTransport
            var certificatePEM: String?
            if let tls = configuration.tls {
                let context = try TLSServerContext(tls)
                certificatePEM = context.certificatePEM
                makeTransport = { fd in try TLSTransport(fd: fd, context: context) }
            } else {
                makeTransport = { fd in PlainTransport(fd: fd) }
            }
            let (fd, bound) = try TCPSocket.listen(host: configuration.host, port: configuration.port)
            let port = bound.port
            let router = EmulatorRouter(
                policy: configuration.validationPolicy, shared: shared, clock: configuration.clock,
                makeID: configuration.makeID, maxLongPollSeconds: configuration.maxLongPollSeconds,
                fcm: FCMRouter(
                    account: configuration.fcmAccount, accessTokenSeconds: max(1, configuration.fcmAccessTokenSeconds)),
                huawei: HuaweiRouter(app: configuration.huaweiApp),
                vendors: VendorRouters(
                    xiaomi: XiaomiRouter(app: configuration.xiaomiApp), oppo: OPPORouter(app: configuration.oppoApp),
                    vivo: VivoRouter(app: configuration.vivoApp)))
            let loop: EmulatorLoop
            do {
                loop = try EmulatorLoop(
                    listenFD: fd, shared: shared, router: router,
                    maxConcurrentStreams: UInt32(clamping: configuration.maxConcurrentStreams),
                    // Push bodies beyond the payload limit are only counted; control bodies get 1 MiB.
                    bodyLimit: max(configuration.maxPayloadBytes + 1, 1 << 20), log: configuration.log,
                    makeTransport: makeTransport)
            } catch {
                close(fd)
                throw error
            }
            let thread = Thread { loop.run() }
            thread.name = "switchboard.apns-emulator"
            thread.start()
            let address = Address(host: configuration.host, port: port, mode: configuration.tls == nil ? "h2c" : "h2")
            phase = .running(loop, address, certificatePEM: certificatePEM)
            return address
        }
    }

    /// Closes every connection, stops listening and returns once the loop thread has finished.
    /// Safe to call more than once, or before ``start()``.
    public func shutdown() async {
        let loop: EmulatorLoop? = phase.withLock { phase in
            defer { phase = .stopped }
            if case .running(let loop, _, _) = phase { return loop }
            return nil
        }
        guard let loop else { return }
        loop.requestStop()
        await loop.waitUntilFinished()
    }

    /// The address it listens on, once started.
    public var address: Address? {
        phase.withLock { phase in
            if case .running(_, let address, _) = phase { return address }
            return nil
        }
    }

    /// With TLS, once started: the self-signed certificate (PEM) a client must trust.
    public var certificatePEM: String? {
        phase.withLock { phase in
            if case .running(_, _, let certificatePEM) = phase { return certificatePEM }
            return nil
        }
    }

    // MARK: Faults, inbox and statistics (the same as the control endpoints)

    /// Adds faults after those already in force.
    public func addFaults(_ faults: [APNsFault]) {
        shared.state.withLock { $0.faults.add(faults) }
    }

    /// Removes every fault, or only those for `token`.
    public func clearFaults(token: String? = nil) {
        shared.state.withLock { $0.faults.clear(token: token) }
    }

    /// The faults in force, with their remaining counts.
    public var faults: [APNsFault] {
        shared.state.withLock { $0.faults.faults }
    }

    /// The pushes accepted for `token` (any case) after index `after`, oldest first.
    public func inbox(token: String, after: Int = 0) -> [APNsInboxMessage] {
        shared.state.withLock { $0.inbox.read(token: token.lowercased(), after: after).messages }
    }

    /// The FCM messages accepted for `token` (case kept) after index `after`: the request bodies.
    public func fcmInbox(token: String, after: Int = 0) -> [APNsInboxMessage] {
        shared.state.withLock { $0.inbox.read(token: "fcm:" + token, after: after).messages }
    }

    /// The Huawei messages accepted for `token` (case kept) after index `after`.
    public func huaweiInbox(token: String, after: Int = 0) -> [APNsInboxMessage] {
        shared.state.withLock { $0.inbox.read(token: "huawei:" + token, after: after).messages }
    }

    /// Scripts Huawei result codes for `token`, answered in order (`80300007`: invalid token).
    public func addHuaweiCodes(_ codes: [String], token: String) {
        addVendorCodes(codes, channel: "huawei", token: token)
    }

    /// The messages of `channel` (`huawei`, `xiaomi`, `oppo`, `vivo`) accepted for `token` (case
    /// kept) after index `after`: Xiaomi's as a JSON object of its form fields, OPPO's `message`,
    /// vivo's and Huawei's request bodies.
    public func vendorInbox(channel: String, token: String, after: Int = 0) -> [APNsInboxMessage] {
        shared.state.withLock { $0.inbox.read(token: "\(channel):" + token, after: after).messages }
    }

    /// Scripts result codes of `channel` for `token`, answered in order.
    public func addVendorCodes(_ codes: [String], channel: String, token: String) {
        shared.state.withLock { _ = $0.withVendor(channel) { $0.faults[token, default: []] += codes } }
    }

    /// Forgets every auth token a vendor stand-in issued, as if they had expired.
    public func revokeVendorTokens(channel: String) {
        shared.state.withLock { _ = $0.withVendor(channel) { $0.accessTokens.removeAll() } }
    }

    /// Auth tokens a vendor stand-in (`huawei`, `oppo`, `vivo`) has issued so far.
    public func vendorTokensIssued(channel: String) -> Int {
        shared.state.withLock { $0.withVendor(channel) { $0.tokensIssued } ?? 0 }
    }

    /// FCM access tokens the stand-in has issued so far.
    public var fcmAccessTokensIssued: Int { shared.state.withLock { $0.fcm.tokensIssued } }

    /// The pushes accepted for `token` after index `after`, waiting up to `seconds` for the first:
    /// the in-process form of `GET /inbox/<token>?after=&wait=` (empty when none came).
    public func inbox(token: String, after: Int = 0, waitingUpTo seconds: Double) async -> [APNsInboxMessage] {
        let deadline = ContinuousClock.now + .milliseconds(Int(max(seconds, 0) * 1000))
        let key = token.lowercased()
        while true {
            let messages = inbox(token: key, after: after)
            let left = deadline - ContinuousClock.now
            if !messages.isEmpty || left <= .zero || Task.isCancelled { return messages }
            let wait = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            await shared.inboxWaiters.wait(token: key, seconds: wait) { [self] in
                !inbox(token: key, after: after).isEmpty
            }
        }
    }

    /// Counters since start.
    public var stats: APNsEmulatorStats {
        shared.state.withLock { $0.stats }
    }
}

/// ``APNsEmulator/start()`` was called in the wrong state.
public struct APNsEmulatorStateError: Error, Sendable, CustomStringConvertible {
    /// What was wrong.
    public let message: String
    /// The message.
    public var description: String { message }
}
