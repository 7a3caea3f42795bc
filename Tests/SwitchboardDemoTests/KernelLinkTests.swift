import Foundation
import Glibc
import Testing
@testable import SwitchboardDemo
import SwitchboardTesting

/// The kernel link's nftables script and the parsing of `ip` output (no I/O).
@Suite("Kernel link: rules and names", .timeLimit(.minutes(2)))
struct KernelLinkRulesTests {
    @Test func theScriptReplacesTheTableAndDropsBothDirectionsOnTheVethOnly() {
        let script = KernelLink.ruleset(interface: "sbw123-0b", ports: [7001, 7000, 7000], percent: 30)
        let lines = script.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        // Created if missing, then deleted and made again: one transaction, whatever was there.
        #expect(
            Array(lines.prefix(3)) == [
                "table inet switchboard_loss {}", "delete table inet switchboard_loss", "table inet switchboard_loss {",
            ])
        #expect(lines.contains("elements = { 7000, 7001 }"))
        #expect(lines.contains("type filter hook input priority 0; policy accept;"))
        #expect(lines.contains("type filter hook output priority 0; policy accept;"))
        #expect(lines.contains(#"iifname "sbw123-0b" tcp dport @ports numgen random mod 100 < 30 drop"#))
        #expect(
            lines.contains(#"iifname "sbw123-0b" tcp sport @ports tcp dport != @ports numgen random mod 100 < 30 drop"#)
        )
        #expect(lines.contains(#"oifname "sbw123-0b" tcp sport @ports numgen random mod 100 < 30 drop"#))
        #expect(
            lines.contains(#"oifname "sbw123-0b" tcp dport @ports tcp sport != @ports numgen random mod 100 < 30 drop"#)
        )
    }

    @Test(arguments: [(ports: [7000], percent: 0), (ports: [], percent: 50)])
    func noLossOrNoPortsMeansNoDropRule(ports: [Int], percent: Int) {
        let script = KernelLink.ruleset(interface: "x", ports: ports, percent: percent)
        #expect(!script.contains("drop"))
        #expect(script.contains("chain input") && script.contains("chain output"))
        #expect(script.contains("elements") == !ports.isEmpty, "an empty element list is a syntax error for nft")
    }

    @Test func usedSubnetsComeFromAddressesAndRoutes() {
        let text = """
            3: sbw1-0a    inet 10.213.7.1/30 scope global sbw1-0a\\       valid_lft forever preferred_lft forever
            2: eth0    inet 10.2.13.4/24 brd 10.2.13.255 scope global eth0
            10.213.200.0/30 dev sbw2-0a proto kernel scope link src 10.213.200.1
            """
        #expect(KernelLink.usedSubnets(in: text) == [7, 200])
    }

    @Test func staleNamespacesAreOursWithADeadPid() {
        let listing = "sbw-100-0 (id: 3)\nsbw-200-1\nsbw-100-probe\nother-300-0\nsbw-x-1\nsbw-300\n"
        let stale = KernelLink.staleNamespaces(in: listing) { $0 == 200 }
        #expect(stale == ["sbw-100-0", "sbw-100-probe"])
    }

    @Test func staleInterfacesAreVethsAliasedToAStaleNamespace() {
        let listing = [
            #"29: sbw100-0a@if2: <BROADCAST,UP> mtu 1500 qdisc noqueue state UP\    link/ether 82:7b brd ff:ff link-netnsid 2\    alias sbw-100-0"#,
            #"30: sbw200-1a@if2: <BROADCAST,UP> mtu 1500\    link/ether 82:7c brd ff:ff\    alias sbw-200-1"#,
            #"31: veth9@if3: <BROADCAST,UP> mtu 1500\    link/ether 82:7d brd ff:ff"#,
            #"32: other@if4: <BROADCAST,UP> mtu 1500\    alias docker-100-0"#,
        ].joined(separator: "\n")
        #expect(KernelLink.staleInterfaces(in: listing) { $0 == 200 } == ["sbw100-0a"])
    }
}

/// A real veth into a real namespace, with nftables dropping packets: needs root, `ip` and `nft`.
@Suite("Kernel link over a real veth pair", .enabled(if: KernelLink.availability() == nil), .timeLimit(.minutes(3)))
struct KernelLinkLiveTests {
    /// A threaded TCP echo server that prints `listening` once it listens. It unblocks
    /// SIGTERM, which it inherits blocked from the test process (see ``KernelLink/launch(_:)``).
    static let echoScript = """
        import signal, socket, sys, threading
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16)
        print("listening", flush=True)
        def serve(c):
            while True:
                d = c.recv(65536)
                if not d: break
                c.sendall(d)
            c.close()
        while True:
            c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
        """

    /// A link with an echo server on `port` inside it.
    static func linkWithEcho(port: Int = 7000) async throws -> (KernelLink, Process) {
        let (link, echo, line) = try await offPool {
            let link = try KernelLink.create(impairedPorts: [port])
            let echo = try link.launch(["python3", "-c", echoScript, link.namespaceAddress, String(port)])
            return (link, echo, try KernelLink.readLine(from: echo, timeout: generousWait))
        }
        #expect(line == "listening")
        return (link, echo)
    }

    static func namespaces() throws -> String { try Command.run(Tools.ip, ["netns", "list"]) }

    @Test func echoCrossesTheLinkLossCutsItOffAndDestroyRemovesIt() async throws {
        let (link, echo) = try await Self.linkWithEcho()
        #expect(link.rootAddress.hasPrefix("10.213.") && link.rootAddress.hasSuffix(".1"))
        #expect(link.namespaceAddress == link.rootAddress.dropLast() + "2")
        #expect(link.rootInterface.count <= 15 && link.namespaceInterface.count <= 15)
        #expect(try Self.namespaces().contains(link.namespace))

        let echoed = try await offPool {
            try TestConnection.roundTrip(Array("hello".utf8), host: link.namespaceAddress, port: 7000)
        }
        #expect(echoed == Array("hello".utf8))

        try await offPool { try link.setLoss(percent: 99) }
        #expect(link.lossPercent == 99)
        // Both the SYN and the SYN-ACK must get through: 1 in 10,000 per attempt, and two
        // attempts fit in the 2 s.
        let refusedConnect = await offPool {
            TestConnection.connect(host: link.namespaceAddress, port: 7000, timeout: 2)
        }
        #expect(refusedConnect == nil, "a connect got through 99 % loss")
        refusedConnect.map { _ = close($0) }

        try await offPool { try link.setLoss(percent: 0) }
        let restored = try await offPool {
            try TestConnection.roundTrip(Array("again".utf8), host: link.namespaceAddress, port: 7000)
        }
        #expect(restored == Array("again".utf8))

        await offPool { link.destroy() }
        #expect(try !Self.namespaces().contains(link.namespace))
        #expect(await eventually { !echo.isRunning }, "destroy stops what was launched")
        #expect(
            await eventually { (try? Command.run(Tools.ip, ["link", "show", link.rootInterface])) == nil },
            "the root end goes with the namespace")
        await offPool { link.destroy() }  // a second time does nothing
        #expect(throws: KernelLinkError.self) { try link.setLoss(percent: 1) }
    }

    @Test func withFifteenPercentLossKilobytesStillArriveIntactByRetransmission() async throws {
        let (link, _) = try await Self.linkWithEcho()
        defer { link.destroy() }
        // 15 %, not 30 %: a segment stalls for a minute once its retransmission or their ACKs
        // are lost about 8 times in a row, which at 30 % each way (half the round trips lost)
        // happens to one of the segments in about one run in ten, past any time limit. At 15 %
        // 64 KiB (~45 segments) keeps both tails near one run in two thousand: a stall past the
        // read's 150 s (9 lost round trips in a row) and no segment of ours lost at all
        // (0.85^45). Loss and recovery are what is tested.
        try await offPool { try link.setLoss(percent: 15) }
        var random = SystemRandomNumberGenerator()
        let payload = (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &random) }
        let (echoed, retransmitted) = try await offPool {
            // Linux backs its retransmission timer off while retransmissions and their ACKs keep
            // being lost (200 ms doubling); at 30 % a fresh-clone run once went 60 s without a
            // byte. The read still waits up to 150 s for the rare long stall at 15 %.
            try TestConnection.roundTripCountingRetransmissions(
                payload, host: link.namespaceAddress, port: 7000, readTimeout: 150)
        }
        #expect(echoed.count == payload.count)
        #expect(echoed == payload, "the echo differs from what was sent")
        // About 45 segments each needing a delivery and an ACK through 15 % loss: some were resent.
        #expect(retransmitted > 0, "no retransmission: the loss rules did not apply")
    }

    @Test func portsAndLossCanBeChangedAndBadValuesAreRefused() async throws {
        let link = try await offPool { try KernelLink.create(impairedPorts: []) }
        defer { link.destroy() }
        try await offPool {
            try link.setImpairedPorts([7100, 7101])
            try link.setLoss(percent: 50)
        }
        #expect(link.impairedPorts == [7100, 7101] && link.lossPercent == 50)
        let rules = try await offPool {
            try Command.run(
                Tools.ip, ["netns", "exec", link.namespace, Tools.nft, "list", "table", "inet", "switchboard_loss"])
        }
        #expect(rules.contains("7100") && rules.contains("numgen random mod 100 < 50"))
        #expect(throws: KernelLinkError.self) { try link.setLoss(percent: 100) }
        #expect(throws: KernelLinkError.self) { try link.setImpairedPorts([0]) }
        #expect(link.lossPercent == 50)
        // The host's own ruleset never gets the table.
        let hostRules = (try? Command.run(Tools.nft, ["list", "tables"])) ?? ""
        #expect(!hostRules.contains("switchboard_loss"))
    }

    @Test func removeStaleDeletesNamespacesOfProcessesThatAreGone() async throws {
        let deadPID = try await offPool { () throws -> Int32 in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try ProcessLauncher.run(process)
            process.waitUntilExit()
            return process.processIdentifier
        }
        let stale = "sbw-\(deadPID)-7", staleInterface = "sbw\(deadPID % 100_000)-7a"
        let live = "sbw-\(getpid())-stale-test"
        try await offPool {
            try Command.run(Tools.ip, ["netns", "add", stale])
            try Command.run(Tools.ip, ["netns", "add", live])
            // A root end left behind by a namespace that lived on (its peer is in `live` here).
            try Command.run(
                Tools.ip, ["link", "add", staleInterface, "type", "veth", "peer", "name", "stalepeer", "netns", live])
            try Command.run(Tools.ip, ["link", "set", "dev", staleInterface, "alias", stale])
        }
        defer { _ = try? Command.run(Tools.ip, ["netns", "delete", live]) }
        await offPool { KernelLink.removeStale() }
        let listing = try Self.namespaces()
        #expect(!listing.contains(stale))
        #expect(listing.contains(live), "a namespace of a live process is kept")
        #expect((try? Command.run(Tools.ip, ["link", "show", staleInterface])) == nil, "the stale veth is gone")
    }
}

/// Blocking client sockets for the live tests (run them with `offPool`).
enum TestConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A blocking connection to `host:port` made within `timeout` seconds, or `nil`.
    static func connect(host: String, port: Int, timeout: Double) -> Int32? {
        let fd = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if started != 0, errno == EINPROGRESS {
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var code: Int32 = ETIMEDOUT
            if poll(&ready, 1, Int32(timeout * 1000)) == 1 {
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            }
            if code != 0 {
                close(fd)
                return nil
            }
        } else if started != 0 {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var limit = timeval(tv_sec: Int(generousWait), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends `bytes` and reads as many back (from an echo server).
    static func roundTrip(_ bytes: [UInt8], host: String, port: Int) throws -> [UInt8] {
        try roundTripCountingRetransmissions(bytes, host: host, port: port).echoed
    }

    /// ``roundTrip(_:host:port:)`` and the segments this side retransmitted (`tcpi_total_retrans`).
    static func roundTripCountingRetransmissions(
        _ bytes: [UInt8], host: String, port: Int, readTimeout: Int? = nil
    ) throws -> (echoed: [UInt8], retransmitted: Int) {
        guard let fd = connect(host: host, port: port, timeout: generousWait) else {
            throw Failure(description: "cannot connect to \(host):\(port)")
        }
        defer { close(fd) }
        if let readTimeout {
            var limit = timeval(tv_sec: readTimeout, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        // Written from a thread of its own, so a full send buffer never waits on our reads.
        let writer = Thread { _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        writer.start()
        var echoed: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        while echoed.count < bytes.count {
            let count = recv(fd, &scratch, scratch.count, 0)
            guard count > 0 else {
                throw Failure(description: "the echo ended after \(echoed.count) of \(bytes.count) bytes")
            }
            echoed += scratch[0..<count]
        }
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length)
        return (echoed, Int(info.tcpi_total_retrans))
    }
}
