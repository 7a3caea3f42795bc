import Glibc
import SwitchboardCLI
import SwitchboardLifecycle

/// `switchboard-dev proxy`: runs an ``ImpairmentProxy`` until SIGINT or SIGTERM.
///
/// ```swift
/// // in the CLI's dispatcher, with the arguments after "proxy":
/// case "proxy": return ProxyCommand.run(rest)
/// ```
public enum ProxyCommand {
    /// The `--help` text.
    public static let help = """
        Usage: switchboard-dev proxy --upstream HOST:PORT --profile NAME [--listen HOST:PORT]
                                     [--seed N] [--delay-only] [--allow-non-loopback]

        Forwards every TCP connection it accepts to the upstream through a simulated weak
        network until SIGINT or SIGTERM, then closes everything and exits 0. Bytes are never
        dropped, reordered or corrupted (TCP would retransmit them); they are delayed: latency
        and jitter per direction, a bandwidth cap, stalls of one retransmission timeout (200 ms
        or more, doubling on consecutive losses) for lost segments, which hold up everything
        behind them, and connection resets (an RST to both sides). The first line on standard
        output is
          listening on 127.0.0.1:PORT profile NAME
        and the last, after the signal,
          stopped connections=N uplink_bytes=N downlink_bytes=N stalls=N resets=N upstream_failures=N

        Options:
          --upstream HOST:PORT   where to forward (an IPv4 address or localhost)
          --profile NAME         the network to simulate (see Profiles)
          --listen HOST:PORT     where to listen (default 127.0.0.1:0, the kernel picks the
                                 port); only loopback addresses unless --allow-non-loopback
          --seed N               seeds every random decision (default 1): the same seed makes
                                 the same decisions for the Nth connection
          --delay-only           keep the profile's latency, jitter and bandwidth but simulate
                                 no loss and no resets: for when real packets are dropped
                                 below it (nftables in a network namespace), so the kernel's
                                 own TCP recovers them
          --allow-non-loopback   allow a --listen address outside 127.0.0.0/8 (the proxy has
                                 no authentication of its own)
          -h, --help             show this help

        Profiles (one-way latency + jitter, down/up bandwidth, loss per 1448-byte segment,
        share of connections reset and their mean lifetime):
          good           10 ms + 0-2 ms, 100/20 Mbit/s, no loss, no resets
          poor_4g        40 ms + 0-20 ms, 4/1 Mbit/s, 2% (first RTO 300 ms), 2% after ~30 s
          poor_3g        100 ms + 0-30 ms, 750/250 kbit/s, 1% (first RTO 400 ms), 5% after ~20 s
          wifi_30_loss   10 ms + 0-10 ms, 20/20 Mbit/s, 30% (first RTO 200 ms), 5% after ~15 s
          wifi_50_loss   10 ms + 0-10 ms, 20/20 Mbit/s, 50% (first RTO 200 ms), 10% after ~10 s

        Exit status: 0 after SIGINT/SIGTERM or --help, 1 when it cannot listen, 2 for bad usage.

        Example:
          switchboard-dev proxy --upstream 127.0.0.1:8080 --profile poor_3g --seed 42
        """

    /// Runs the command with the arguments that follow `proxy` and returns the exit status.
    ///
    /// Blocks SIGINT and SIGTERM on the calling thread before the proxy's threads start (they
    /// inherit the mask) and waits for them with `sigwait`.
    public static func run(_ arguments: [String]) -> Int32 {
        if arguments.contains("-h") || arguments.contains("--help") {
            Console.write(help + "\n")
            return 0
        }
        let options: Options
        do {
            options = try Options(parsing: arguments)
        } catch {
            Console.error("\(error.message)\nRun 'switchboard-dev proxy --help' for usage.")
            return 2
        }

        // Handled from here on: a stop while the tool starts is kept for the wait below.
        let stop: StopSignalWait
        do {
            stop = try StopSignalWait([SIGTERM, SIGINT])
        } catch {
            Console.error("cannot start: \(error)")
            return 1
        }

        let proxy = ImpairmentProxy(configuration: options.configuration(diagnostics: { Console.error($0) }))
        let port: Int
        do {
            port = try proxy.start()
        } catch {
            Console.error("cannot start: \(error.message)")
            return 1
        }
        Console.write("listening on \(options.listen.host):\(port) profile \(options.profile.name)\n")

        _ = stop.wait()
        proxy.stop()
        let statistics = proxy.statistics
        Console.write(
            "stopped connections=\(statistics.connectionsAccepted) uplink_bytes=\(statistics.uplinkBytes) "
                + "downlink_bytes=\(statistics.downlinkBytes) stalls=\(statistics.stalls) resets=\(statistics.resets) "
                + "upstream_failures=\(statistics.upstreamFailures)\n")
        return 0
    }

    /// The parsed options.
    struct Options {
        var upstream: IPv4Endpoint
        var profile: NetworkProfile
        var listen = IPv4Endpoint.loopback(port: 0)
        var seed: UInt64 = 1
        var allowNonLoopback = false
        var delayOnly = false

        init(parsing arguments: [String]) throws(UsageError) {
            var upstream: IPv4Endpoint?
            var profile: NetworkProfile?
            var scanner = ArgumentScanner(arguments)
            func endpoint(_ flag: String) throws(UsageError) -> IPv4Endpoint {
                let text = try scanner.value(for: flag)
                do {
                    return try IPv4Endpoint.parse(text, role: flag)
                } catch {
                    throw UsageError(message: error.message)
                }
            }
            while let flag = scanner.nextFlag() {
                switch flag {
                case "--upstream":
                    let parsed = try endpoint(flag)
                    guard parsed.port != 0 else { throw UsageError(message: "--upstream needs a port in 1...65535") }
                    upstream = parsed
                case "--listen":
                    listen = try endpoint(flag)
                case "--profile":
                    let name = try scanner.value(for: flag)
                    if name.contains(",") {
                        throw UsageError(
                            message: "--profile takes one name, not a list ('\(name)'); run one proxy per profile")
                    }
                    guard let named = NetworkProfile.named(name) else {
                        throw UsageError(
                            message: "unknown network profile '\(name)'; known profiles: \(NetworkProfile.knownNames)")
                    }
                    profile = named
                case "--seed":
                    let text = try scanner.value(for: flag)
                    guard let number = UInt64(text) else {
                        throw UsageError(message: "--seed needs a whole number in 0...\(UInt64.max), not '\(text)'")
                    }
                    seed = number
                case "--allow-non-loopback":
                    allowNonLoopback = true
                case "--delay-only":
                    delayOnly = true
                default:
                    throw scanner.unknown(flag)
                }
            }
            guard let upstream else { throw UsageError(message: "--upstream HOST:PORT is required") }
            guard let profile else {
                throw UsageError(message: "--profile NAME is required; known profiles: \(NetworkProfile.knownNames)")
            }
            if !allowNonLoopback, !listen.isLoopback {
                throw UsageError(
                    message: "--listen \(listen) is not a loopback address; add --allow-non-loopback to listen there")
            }
            self.upstream = upstream
            self.profile = delayOnly ? profile.delayOnly : profile
        }

        func configuration(diagnostics: @escaping @Sendable (String) -> Void) -> ImpairmentProxyConfiguration {
            ImpairmentProxyConfiguration(
                upstream: upstream, profile: profile, listen: listen, seed: seed,
                allowNonLoopbackListen: allowNonLoopback, diagnostics: diagnostics)
        }
    }
}

/// Whole lines to standard output and standard error, each with one `write(2)`: unbuffered,
/// so a harness reading the pipe sees the "listening" line at once.
enum Console {
    static func write(_ text: String) { write(text, to: STDOUT_FILENO) }

    static func error(_ message: String) { write("switchboard-dev proxy: \(message)\n", to: STDERR_FILENO) }

    private static func write(_ text: String, to fd: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
