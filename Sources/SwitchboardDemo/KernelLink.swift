import Foundation
import Glibc
import Synchronization
import SwitchboardNetSim
import SwitchboardTesting

/// A failure to set up, change or use a ``KernelLink``. `code` is stable; `message` names the
/// command that failed and what it printed on standard error.
public typealias KernelLinkError = CodedError<KernelLinkErrorCode>

/// The kinds of ``KernelLinkError``, as stable snake_case strings.
public enum KernelLinkErrorCode: String, Sendable {
    /// Not root, `ip` or `nft` missing, or the kernel refused a namespace (see ``KernelLink/availability()``).
    case unavailable
    /// A command (`ip`, `nft`) could not be started or exited with a failure.
    case commandFailed = "command_failed"
    /// Every 10.213.X.0/30 is in use.
    case noFreeSubnet = "no_free_subnet"
    /// A loss percentage outside 0...99 or a port outside 1...65535.
    case invalidArgument = "invalid_argument"
    /// The link was destroyed before the call.
    case destroyed
    /// A launched process did not print a line in time, or ended first.
    case noOutput = "no_output"
}

/// A real Linux network path with real packet loss: a veth pair from the root namespace into a
/// network namespace of its own, where an nftables table drops a settable share of the TCP
/// packets to and from chosen ports.
///
/// The namespace's end is `namespaceAddress` (10.213.X.2/30), the root end `rootAddress`
/// (10.213.X.1/30). Processes started with ``launch(_:)`` run inside the namespace; a proxy
/// there listening on one of the impaired ports is reached from the root side over the lossy
/// link, and reaches servers in the root namespace at `rootAddress` over a clean one (only the
/// impaired ports lose packets). Segmentation offload is off on both ends (`gso_max_segs 1`),
/// so each drop decision is about one segment of at most the MTU, as on a real link, not about
/// a 64 KB super-packet.
///
/// The drops are `numgen random mod 100 < N drop` in the namespace's input hook (packets from
/// the root side) and output hook (packets to it). An input drop is plain loss. An output drop
/// happens inside the sending stack, which sees the transmit fail and retries on its probe
/// timer instead of detecting the loss; measured over 400 round trips at 30 %, the latency
/// distribution matches drops made on a bridge between two namespaces (where neither stack can
/// tell) within the spread between runs.
///
/// Needs root, iproute2 and nftables; ``availability()`` says whether it can work here. The
/// host's own ruleset and routes are never touched: the table lives in the namespace, and the
/// only thing added to the root namespace is the veth end with its /30 address, which
/// ``destroy()`` deletes (and ``removeStale()`` after a crash).
///
/// ```swift
/// if let reason = KernelLink.availability() { fatalError(reason) }
/// let link = try KernelLink.create(impairedPorts: [7000])
/// let proxy = try link.launch(["switchboard-dev", "proxy", "--listen", "\(link.namespaceAddress):7000",
///                              "--allow-non-loopback", "--upstream", "\(link.rootAddress):8080", "--profile", "good"])
/// let line = try KernelLink.readLine(from: proxy, timeout: 10)   // "listening on 10.213.X.2:7000 profile good"
/// try link.setLoss(percent: 30)
/// …
/// link.destroy()
/// ```
///
/// Every call runs `ip` or `nft` and waits for it (a few milliseconds each; `create` runs about
/// ten), blocking the calling thread: from async code, call it off the cooperative pool.
public final class KernelLink: Sendable {
    private struct State {
        var lossPercent = 0
        var impairedPorts: [Int]
        var processes: [Process] = []
        var destroyed = false
    }

    /// The network namespace's name, `sbw-<pid>-<counter>`.
    public let namespace: String
    /// The root namespace's end of the link (10.213.X.1): where processes in the namespace
    /// reach servers in the root namespace (which must listen on it, or on 0.0.0.0).
    public let rootAddress: String
    /// The namespace's end of the link (10.213.X.2): where the root side reaches listeners in
    /// the namespace.
    public let namespaceAddress: String
    /// The veth end in the root namespace (`sbw<pid mod 100000>-<counter>a`).
    public let rootInterface: String
    /// The veth end in the namespace (`…b`).
    public let namespaceInterface: String
    private let state: Mutex<State>

    private init(
        namespace: String, subnet: Int, rootInterface: String, namespaceInterface: String, impairedPorts: [Int]
    ) {
        self.namespace = namespace
        rootAddress = "10.213.\(subnet).1"
        namespaceAddress = "10.213.\(subnet).2"
        self.rootInterface = rootInterface
        self.namespaceInterface = namespaceInterface
        state = Mutex(State(impairedPorts: impairedPorts))
    }

    deinit { destroy() }

    /// The share of packets on impaired ports dropped now, in percent.
    public var lossPercent: Int { state.withLock { $0.lossPercent } }

    /// The ports whose packets can be dropped (as source or destination).
    public var impairedPorts: [Int] { state.withLock { $0.impairedPorts } }

    // MARK: Creating and destroying

    private static let counter = Mutex(0)
    /// Held while a subnet is chosen and its root address added, with the lock file's `flock`,
    /// so that links made at once (in this process or another) get different subnets.
    private static let subnetLock = Mutex(())
    private static let lockFile =
        FileManager.default.fileExists(atPath: "/run/lock")
        ? "/run/lock/switchboard-kernel-link.lock" : NSTemporaryDirectory() + "switchboard-kernel-link.lock"

    /// Makes the namespace, the veth pair, their addresses and the (empty, 0 %) loss table.
    ///
    /// Namespaces left by earlier runs that crashed are removed first (``removeStale()``). On
    /// a failure, whatever was made is removed again.
    public static func create(impairedPorts: [Int]) throws(KernelLinkError) -> KernelLink {
        if let reason = availability() { throw KernelLinkError(.unavailable, reason) }
        try validate(ports: impairedPorts)
        removeStale()
        let pid = Int(getpid())
        let index = counter.withLock { counter in
            defer { counter += 1 }
            return counter
        }
        let namespace = "sbw-\(pid)-\(index)"
        let stem = "sbw\(pid % 100_000)-\(index % 100_000)"
        let rootInterface = stem + "a", namespaceInterface = stem + "b"
        let ip = Tools.ip
        do throws(KernelLinkError) {
            try Command.run(ip, ["netns", "add", namespace])
            // The peer is made inside the namespace at once: there is no moment where both ends
            // are in the root namespace.
            try Command.run(
                ip,
                ["link", "add", rootInterface, "type", "veth", "peer", "name", namespaceInterface, "netns", namespace])
            // Named after the namespace, so ``removeStale()`` finds a root end that outlives it.
            try Command.run(ip, ["link", "set", "dev", rootInterface, "alias", namespace])
            let subnet = try addRootAddress(interface: rootInterface)
            let link = KernelLink(
                namespace: namespace, subnet: subnet, rootInterface: rootInterface,
                namespaceInterface: namespaceInterface,
                impairedPorts: impairedPorts)
            try Command.run(
                ip, ["link", "set", "dev", rootInterface, "gso_max_segs", "1", "gso_max_size", "1500", "up"])
            try Command.run(
                ip, ["-n", namespace, "addr", "add", "\(link.namespaceAddress)/30", "dev", namespaceInterface])
            try Command.run(
                ip,
                [
                    "-n", namespace, "link", "set", "dev", namespaceInterface, "gso_max_segs", "1", "gso_max_size",
                    "1500", "up",
                ])
            try Command.run(ip, ["-n", namespace, "link", "set", "dev", "lo", "up"])
            try link.applyRules(percent: 0, ports: impairedPorts)
            return link
        } catch {
            deleteNamespace(namespace)
            _ = try? Command.run(ip, ["link", "delete", rootInterface])
            throw error
        }
    }

    /// Picks a free 10.213.X.0/30 (no address or route of the root namespace in 10.213.X.*)
    /// and adds X.1 to `interface`; returns X.
    private static func addRootAddress(interface: String) throws(KernelLinkError) -> Int {
        try subnetLock.withLock { _ throws(KernelLinkError) -> Int in
            let fd = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            if fd >= 0 { _ = flock(fd, LOCK_EX) }
            defer { if fd >= 0 { close(fd) } }  // closing releases the flock
            let addresses = try Command.run(Tools.ip, ["-4", "-o", "addr", "show"])
            let routes = try Command.run(Tools.ip, ["-4", "route", "show", "table", "all"])
            let used = usedSubnets(in: addresses + "\n" + routes)
            let start = Int(getpid()) % 256
            guard let subnet = (0..<256).lazy.map({ (start + $0) % 256 }).first(where: { !used.contains($0) }) else {
                throw KernelLinkError(
                    .noFreeSubnet,
                    "every 10.213.X.0/30 is in use by an address or route (see 'ip -4 addr'); remove stale links with 'ip netns delete sbw-…'"
                )
            }
            try Command.run(Tools.ip, ["addr", "add", "10.213.\(subnet).1/30", "dev", interface])
            return subnet
        }
    }

    /// The X of every `10.213.X.` in `text` (the output of `ip addr` and `ip route`).
    static func usedSubnets(in text: String) -> Set<Int> {
        var used = Set<Int>()
        var rest = Substring(text)
        while let range = rest.range(of: "10.213.") {
            let digits = rest[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
            if let subnet = Int(digits), subnet < 256 { used.insert(subnet) }
            rest = rest[range.upperBound...]
        }
        return used
    }

    /// Stops every process started with ``launch(_:)`` (SIGTERM, SIGKILL after 3 s), kills any
    /// other process left in the namespace, deletes the veth pair (both ends, with their
    /// addresses) and then the namespace with its nftables table. Calling it again does
    /// nothing; `deinit` calls it too.
    ///
    /// The veth is deleted explicitly because a namespace outlives `ip netns delete` while any
    /// socket in it lives: a closed connection still retransmitting its FIN through heavy loss
    /// keeps it (and a veth left in it) for minutes.
    public func destroy() {
        let processes = state.withLock { state -> [Process]? in
            guard !state.destroyed else { return nil }
            state.destroyed = true
            defer { state.processes = [] }
            return state.processes
        }
        guard let processes else { return }
        Self.terminate(processes)
        Self.deleteNamespace(namespace, rootInterface: rootInterface)
    }

    /// Deletes every namespace named `sbw-<pid>-…` whose process is gone (a run that crashed
    /// or was killed), with whatever still runs inside it, and every veth whose alias names
    /// such a namespace. Best effort: failures are ignored.
    public static func removeStale() {
        guard let ip = Tools.find("ip") else { return }
        let isAlive: (Int) -> Bool = { kill(pid_t($0), 0) == 0 || errno == EPERM }
        if let links = try? Command.run(ip, ["-o", "link", "show", "type", "veth"]) {
            for interface in staleInterfaces(in: links, isAlive: isAlive) {
                _ = try? Command.run(ip, ["link", "delete", interface])
            }
        }
        if let listing = try? Command.run(ip, ["netns", "list"]) {
            for name in staleNamespaces(in: listing, isAlive: isAlive) { deleteNamespace(name) }
        }
    }

    /// The interfaces in `ip -o link show` output whose alias is a stale `sbw-<pid>-…` name.
    static func staleInterfaces(in listing: String, isAlive: (Int) -> Bool) -> [String] {
        listing.split(separator: "\n").compactMap { line -> String? in
            guard let alias = line.range(of: "alias ").map({ line[$0.upperBound...].prefix { !$0.isWhitespace } }),
                !staleNamespaces(in: String(alias), isAlive: isAlive).isEmpty
            else { return nil }
            let fields = line.split(separator: " ")
            guard fields.count >= 2 else { return nil }
            // "29: sbw123-0a@if2: <…>": the name runs to the "@" (or the ":").
            let name = fields[1].prefix { $0 != "@" && $0 != ":" }
            return name.isEmpty ? nil : String(name)
        }
    }

    /// The names in `ip netns list` output that follow `sbw-<pid>-…` with a dead pid.
    static func staleNamespaces(in listing: String, isAlive: (Int) -> Bool) -> [String] {
        listing.split(separator: "\n").compactMap { line -> String? in
            guard let name = line.split(separator: " ").first, name.hasPrefix("sbw-") else { return nil }
            let parts = name.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count >= 3, let pid = Int(parts[1]), pid > 0 else { return nil }
            return isAlive(pid) ? nil : String(name)
        }
    }

    private static func deleteNamespace(_ name: String, rootInterface: String? = nil) {
        guard let ip = Tools.find("ip") else { return }
        // A process still inside would keep the namespace (and the veth) alive after the delete.
        if let pids = try? Command.run(ip, ["netns", "pids", name]) {
            for pid in pids.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        }
        if let rootInterface { _ = try? Command.run(ip, ["link", "delete", rootInterface]) }
        _ = try? Command.run(ip, ["netns", "delete", name])
    }

    private static func terminate(_ processes: [Process]) {
        let running = processes.filter(\.isRunning)
        for process in running { kill(process.processIdentifier, SIGTERM) }
        let deadline = monotonic() + 3
        while running.contains(where: \.isRunning), monotonic() < deadline { usleep(5_000) }
        for process in running where process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    // MARK: Loss

    /// Drops `percent` % (0...99) of the TCP packets whose source or destination port is
    /// impaired, in both directions, from now on. The whole table is replaced in one nftables
    /// transaction, so no packet sees a half-changed rule set.
    public func setLoss(percent: Int) throws(KernelLinkError) {
        guard (0...99).contains(percent) else {
            throw KernelLinkError(.invalidArgument, "the loss must be a percentage in 0...99, not \(percent)")
        }
        try change { $0.lossPercent = percent }
    }

    /// Replaces the impaired ports (1...65535), keeping the loss percentage: for listeners in
    /// the namespace whose ports are known only once they listen.
    public func setImpairedPorts(_ ports: [Int]) throws(KernelLinkError) {
        try Self.validate(ports: ports)
        try change { $0.impairedPorts = ports }
    }

    private func change(_ update: (inout State) -> Void) throws(KernelLinkError) {
        // Under the lock, so two changes at once apply in the order they are recorded.
        try state.withLock { state throws(KernelLinkError) in
            guard !state.destroyed else { throw KernelLinkError(.destroyed, "the link \(namespace) was destroyed") }
            var next = state
            update(&next)
            try applyRules(percent: next.lossPercent, ports: next.impairedPorts)
            state = next
        }
    }

    private func applyRules(percent: Int, ports: [Int]) throws(KernelLinkError) {
        let rules = Self.ruleset(interface: namespaceInterface, ports: ports, percent: percent)
        try Command.run(Tools.ip, ["netns", "exec", namespace, Tools.nft, "-f", "-"], input: rules)
    }

    static let tableName = "switchboard_loss"

    /// The nftables script for `nft -f -` inside the namespace: creates the table if missing,
    /// deletes it and adds it again with the rules, all in one transaction. With 0 % the chains
    /// are empty. A packet between two impaired ports is tested once, not twice.
    static func ruleset(interface: String, ports: [Int], percent: Int) -> String {
        let table = "inet \(tableName)"
        var lines = ["table \(table) {}", "delete table \(table)", "table \(table) {"]
        let elements = Set(ports).sorted().map(String.init).joined(separator: ", ")
        lines.append("    set ports {")
        lines.append("        type inet_service")
        if !elements.isEmpty { lines.append("        elements = { \(elements) }") }
        lines.append("    }")
        let drop = "numgen random mod 100 < \(percent) drop"
        for (chain, hook, device, ours, theirs) in [
            ("input", "input", "iifname", "dport", "sport"), ("output", "output", "oifname", "sport", "dport"),
        ] {
            lines.append("    chain \(chain) {")
            lines.append("        type filter hook \(hook) priority 0; policy accept;")
            if percent > 0, !elements.isEmpty {
                lines.append("        \(device) \"\(interface)\" tcp \(ours) @ports \(drop)")
                lines.append("        \(device) \"\(interface)\" tcp \(theirs) @ports tcp \(ours) != @ports \(drop)")
            }
            lines.append("    }")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func validate(ports: [Int]) throws(KernelLinkError) {
        if let bad = ports.first(where: { !(1...65535).contains($0) }) {
            throw KernelLinkError(.invalidArgument, "an impaired port must be in 1...65535, not \(bad)")
        }
    }

    // MARK: Processes in the namespace

    /// Starts `arguments` (a program found on `PATH`, then its arguments) inside the namespace
    /// with `ip netns exec`, standard input from /dev/null, standard output to a pipe (read it
    /// with ``readLine(from:timeout:)`` or `(process.standardOutput as! Pipe)`), standard error
    /// inherited. ``destroy()`` stops it if it still runs.
    ///
    /// The impairment proxy prints `listening on HOST:PORT profile NAME` first; listening on
    /// `namespaceAddress` needs its `--allow-non-loopback`.
    ///
    /// Foundation's `Process` does not reset the signal mask: the child starts with the mask of
    /// the thread that spawns it (``ProcessLauncher``'s), where SIGTERM may be blocked (it is in
    /// the test process, and wherever `StopSignalWait` ran first). The proxy waits for SIGTERM
    /// with `sigwait` and does not mind; a program that relies on SIGTERM's default action must
    /// unblock it, or ``destroy()`` kills it with SIGKILL after 3 s.
    public func launch(_ arguments: [String]) throws(KernelLinkError) -> Process {
        guard !arguments.isEmpty else { throw KernelLinkError(.invalidArgument, "launch needs a program to run") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Tools.ip)
        process.arguments = ["netns", "exec", namespace] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = Pipe()
        try state.withLock { state throws(KernelLinkError) in
            guard !state.destroyed else { throw KernelLinkError(.destroyed, "the link \(namespace) was destroyed") }
            do {
                try ProcessLauncher.run(process)
            } catch {
                throw KernelLinkError(
                    .commandFailed, "cannot start \(Command.shown(Tools.ip, process.arguments ?? [])): \(error)")
            }
            state.processes.append(process)
        }
        return process
    }

    /// Reads one line (without its newline) from the standard output of a process from
    /// ``launch(_:)``, byte by byte so nothing after it is consumed. Blocks up to `timeout`
    /// seconds; throws `noOutput` when the time passes or the output ends first.
    public static func readLine(from process: Process, timeout: Double) throws(KernelLinkError) -> String {
        guard let pipe = process.standardOutput as? Pipe else {
            throw KernelLinkError(.invalidArgument, "the process's standard output is not a pipe")
        }
        let fd = pipe.fileHandleForReading.fileDescriptor
        let deadline = monotonic() + timeout
        var line: [UInt8] = []
        while true {
            let left = deadline - monotonic()
            guard left > 0 else {
                throw KernelLinkError(
                    .noOutput,
                    "no line from the process within \(timeout) s (so far: '\(String(decoding: line, as: UTF8.self))')")
            }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let status = poll(&ready, 1, Int32(min(left * 1000, 1000).rounded(.up)))
            if status < 0, errno != EINTR {
                throw KernelLinkError(.noOutput, "poll on the process's output: \(String(cString: strerror(errno)))")
            }
            guard status > 0 else { continue }
            var byte: UInt8 = 0
            let count = read(fd, &byte, 1)
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count == 1 else {
                throw KernelLinkError(
                    .noOutput,
                    "the process's output ended before a line (so far: '\(String(decoding: line, as: UTF8.self))')")
            }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    // MARK: Availability

    /// `nil` when links can be made here; otherwise one line saying why not (not root, `ip` or
    /// `nft` missing, or the kernel refused a namespace, a veth pair or an nftables table).
    /// The first call tries all three in a throwaway namespace; the answer is kept.
    public static func availability() -> String? { probed }

    private static let probed: String? = {
        guard geteuid() == 0 else {
            return
                "the kernel impairment needs root (network namespaces, veth pairs and nftables); run as root or use the simulated impairment"
        }
        guard let ip = Tools.find("ip") else {
            return "the kernel impairment needs iproute2's 'ip' (apt-get install iproute2)"
        }
        guard let nft = Tools.find("nft") else { return "the kernel impairment needs 'nft' (apt-get install nftables)" }
        let name = "sbw-\(getpid())-probe"
        defer { deleteNamespace(name) }
        do throws(KernelLinkError) {
            try Command.run(ip, ["netns", "add", name])
            try Command.run(ip, ["-n", name, "link", "add", "sbwprobea", "type", "veth", "peer", "name", "sbwprobeb"])
            try Command.run(
                ip, ["netns", "exec", name, nft, "-f", "-"],
                input: "table inet probe {\n chain input { type filter hook input priority 0; policy accept; }\n}\n")
        } catch {
            return "the kernel refused a piece of the kernel impairment: \(error.message)"
        }
        return nil
    }()

    private static func monotonic() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }
}
