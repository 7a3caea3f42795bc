import Foundation
import Glibc
import Synchronization
import Testing
@testable import SwitchboardNetSim
import SwitchboardTesting

/// Starts an echo server and a proxy in front of it for one test, and always stops both.
private func withEchoProxy(
    profile: NetworkProfile, seed: UInt64 = 1, _ body: (ImpairmentProxy, Int, EchoServer) async throws -> Void
) async throws {
    let echo = try EchoServer()
    let proxy = ImpairmentProxy(
        configuration: .init(upstream: .loopback(port: echo.port), profile: profile, seed: seed))
    do {
        let port = try proxy.start()
        try await body(proxy, port, echo)
    } catch {
        await offPool {
            proxy.stop()
            echo.stop()
        }
        throw error
    }
    await offPool {
        proxy.stop()
        echo.stop()
    }
}

private func plain(_ name: String, latency: Duration, downlinkBytesPerSecond: Int? = nil) -> NetworkProfile {
    NetworkProfile(
        name: name, uplink: .init(latency: latency),
        downlink: .init(latency: latency, bytesPerSecond: downlinkBytesPerSecond))
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

@Suite("Impairment proxy over loopback", .serialized, .timeLimit(.minutes(5)))
struct ImpairmentProxyLiveTests {
    @Test func goodPassesAMegabyteIntactBothWays() async throws {
        try await withEchoProxy(profile: .good) { proxy, port, _ in
            var random = SplitMix64(seed: 99)
            let payload = (0..<1_048_576).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let client = try TestSocket.connect(port: port)
            defer { Glibc.close(client) }
            async let sent: Bool = offPool {
                defer { shutdown(client, Int32(SHUT_WR)) }
                return TestSocket.sendAll(client, payload)
            }
            let (echoed, end) = await offPool { TestSocket.receive(client) }
            #expect(await sent)
            #expect(end == .endOfStream, "the half-close came back as a clean end, not a reset")
            #expect(echoed.count == payload.count)
            // Not `echoed == payload`: on a mismatch Swift Testing would diff a million bytes.
            #expect(firstDifference(echoed, payload) == nil, "the echo differs from the payload")
            // The proxy counts a chunk after writing it: on a loaded machine the client can read
            // the last bytes before the count moves.
            #expect(
                await eventually {
                    proxy.statistics.downlinkBytes == payload.count && proxy.statistics.uplinkBytes == payload.count
                })
            let statistics = proxy.statistics
            #expect(statistics.uplinkBytes == payload.count)
            #expect(statistics.downlinkBytes == payload.count)
            #expect(statistics.connectionsAccepted == 1)
            #expect(statistics.resets == 0 && statistics.stalls == 0)
        }
    }

    @Test func aSlowLinkDelaysByAtLeastItsLatency() async throws {
        try await withEchoProxy(profile: plain("slow", latency: .milliseconds(100))) { _, port, _ in
            let clock = ContinuousClock()
            let opened = clock.now
            let client = try TestSocket.connect(port: port)
            defer { Glibc.close(client) }
            let (replies, timings) = await offPool { () -> ([[UInt8]], [Double]) in
                TestSocket.sendAll(client, Array("ping".utf8))
                let first = TestSocket.receive(client, count: 4).bytes
                let afterFirst = clock.now
                TestSocket.sendAll(client, Array("pong".utf8))
                let second = TestSocket.receive(client, count: 4).bytes
                return ([first, second], [seconds(afterFirst - opened), seconds(clock.now - afterFirst)])
            }
            #expect(replies == [Array("ping".utf8), Array("pong".utf8)])
            // First exchange: handshake round trip, then up and down: 4 × 100 ms at least.
            #expect(timings[0] >= 0.4, "\(timings)")
            // Later exchanges: one round trip.
            #expect(timings[1] >= 0.2, "\(timings)")
        }
    }

    @Test func aBandwidthCapPacesTheBytes() async throws {
        // 20 KB at 100 KB/s takes at least 0.2 s, on top of the latency.
        let profile = plain("narrow", latency: .milliseconds(1), downlinkBytesPerSecond: 100_000)
        try await withEchoProxy(profile: profile) { _, port, _ in
            let client = try TestSocket.connect(port: port)
            defer { Glibc.close(client) }
            let clock = ContinuousClock()
            let (received, elapsed) = await offPool { () -> ([UInt8], Duration) in
                let started = clock.now
                TestSocket.sendAll(client, [UInt8](repeating: 7, count: 20_000))
                let received = TestSocket.receive(client, count: 20_000).bytes
                return (received, clock.now - started)
            }
            #expect(received.count == 20_000)
            #expect(seconds(elapsed) >= 0.2, "\(elapsed)")
        }
    }

    @Test func aCertainResetClosesTheClientAndNeverReachesTheUpstream() async throws {
        var profile = plain("doomed", latency: .zero)
        profile.resets = .init(probability: 1, meanDelay: .zero)
        try await withEchoProxy(profile: profile) { proxy, port, echo in
            let client = try TestSocket.connect(port: port)
            defer { Glibc.close(client) }
            let (bytes, end) = await offPool {
                TestSocket.sendAll(client, Array("hello".utf8))
                return TestSocket.receive(client)
            }
            #expect(bytes.isEmpty)
            #expect(end == .reset || end == .endOfStream, "\(String(describing: end))")
            #expect(await eventually { proxy.statistics.resets == 1 })
            #expect(echo.accepted == 0)
        }
    }

    @Test func aLaterResetReachesAnEstablishedConnectionAsAnRST() async throws {
        var profile = plain("flaky", latency: .zero)
        profile.resets = .init(probability: 1, meanDelay: .milliseconds(100))
        // The first connection's reset time follows from the proxy's seed alone: take a seed
        // that resets it after the exchange below but well within the test.
        func resetAfter(_ proxySeed: UInt64) -> Double {
            let seed = ConnectionSchedule.connectionSeed(proxySeed: proxySeed, index: 0)
            return ConnectionSchedule(profile: profile, seed: seed, openedAt: 0).resetAt ?? -1
        }
        let proxySeed = try #require((UInt64(1)...100).first { (0.05...0.5).contains(resetAfter($0)) })
        try await withEchoProxy(profile: profile, seed: proxySeed) { proxy, port, echo in
            let client = try TestSocket.connect(port: port)
            defer { Glibc.close(client) }
            let (first, rest) = await offPool {
                TestSocket.sendAll(client, Array("hello".utf8))
                return (TestSocket.receive(client, count: 5), TestSocket.receive(client))
            }
            #expect(first.bytes == Array("hello".utf8), "the connection worked before its reset")
            #expect(rest.end == .reset)
            #expect(await eventually { proxy.statistics.resets == 1 })
            #expect(echo.accepted == 1)
        }
    }

    @Test func theUpstreamIsContactedOnlyOnceTheSimulatedHandshakeIsDone() async throws {
        // 400 ms each way: the SYN and the SYN-ACK take 0.8 s, and only then does a real
        // server's accept return, so the upstream must not see the connection earlier.
        try await withEchoProxy(profile: plain("slow", latency: .milliseconds(400))) { proxy, port, echo in
            let opened = ContinuousClock.now
            let client = try TestSocket.connect(port: port)
            defer { Glibc.close(client) }
            try await Task.sleep(for: .milliseconds(300))
            // A busy machine can only make the accept later, never earlier; but the sleep may
            // oversleep past the handshake, so a look counts only while it is still too early.
            let looked = ContinuousClock.now, acceptedThen = echo.accepted
            if seconds(looked - opened) < 0.75 {
                #expect(acceptedThen == 0, "the upstream saw the connection before the handshake could be done")
            }
            #expect(await eventually { echo.accepted == 1 })
            let acceptedAt = try #require(echo.firstAcceptedAt)
            #expect(
                seconds(acceptedAt - opened) >= 0.75, "accepted \(seconds(acceptedAt - opened)) s after the connect")
        }
    }

    @Test func anUnreachableUpstreamClosesTheClientAndSaysWhy() async throws {
        let messages = Mutex<[String]>([])
        let proxy = ImpairmentProxy(
            configuration: .init(
                upstream: .loopback(port: try TestSocket.unusedPort()), profile: .good,
                diagnostics: { message in messages.withLock { $0.append(message) } }))
        let port = try proxy.start()
        let client = try TestSocket.connect(port: port)
        defer { Glibc.close(client) }
        let (bytes, end) = await offPool { TestSocket.receive(client) }
        #expect(bytes.isEmpty)
        #expect(end == .reset || end == .endOfStream)
        #expect(await eventually { proxy.statistics.upstreamFailures == 1 })
        #expect(messages.withLock { $0.first?.contains("cannot connect to upstream 127.0.0.1:") } == true)
        await offPool { proxy.stop() }
    }

    @Test func stopClosesTheListenerAndEveryConnectionAndLeaksNothing() async throws {
        let echo = try EchoServer()
        let proxy = ImpairmentProxy(configuration: .init(upstream: .loopback(port: echo.port), profile: .good))
        let port = try proxy.start()
        let client = try TestSocket.connect(port: port)
        let echoed = await offPool { () -> [UInt8] in
            TestSocket.sendAll(client, Array("hi".utf8))
            return TestSocket.receive(client, count: 2).bytes
        }
        #expect(echoed == Array("hi".utf8))
        #expect(proxy.statistics.connectionsOpen == 1)

        await offPool { proxy.stop() }
        #expect(proxy.port == nil)
        #expect(proxy.statistics.connectionsOpen == 0)
        let end = await offPool { TestSocket.receive(client).end }
        #expect(end == .endOfStream || end == .reset)
        Glibc.close(client)
        #expect(throws: TestFailure.self) { Glibc.close(try TestSocket.connect(port: port)) }
        #expect(
            await eventually {
                echo.openConnections == 0 && socketDescriptors(localPort: port, peerPort: echo.port).isEmpty
            }, "\(socketDescriptors(localPort: port, peerPort: echo.port)) still open")
        proxy.stop()  // again: nothing happens
        await offPool { echo.stop() }
    }

    @Test func startReportsBadAddressesBindFailuresAndProfiles() throws {
        func startError(_ configuration: ImpairmentProxyConfiguration) -> NetSimError? {
            let proxy = ImpairmentProxy(configuration: configuration)
            defer { proxy.stop() }
            do {
                _ = try proxy.start()
                return nil
            } catch {
                return error
            }
        }
        let badHost = startError(.init(upstream: IPv4Endpoint(host: "example.com", port: 80), profile: .good))
        #expect(badHost?.code == .badAddress)
        #expect(badHost?.message.contains("upstream 'example.com:80'") == true)
        #expect(startError(.init(upstream: .loopback(port: 0), profile: .good))?.code == .badAddress)

        let (held, heldPort) = try TestSocket.listen()
        defer { Glibc.close(held) }
        let taken = startError(.init(upstream: .loopback(port: 1), profile: .good, listen: .loopback(port: heldPort)))
        #expect(taken?.code == .bindFailed)
        #expect(taken?.message.contains("cannot listen on 127.0.0.1:\(heldPort)") == true)
        #expect(taken?.message.contains("Address already in use") == true)

        let open = startError(
            .init(upstream: .loopback(port: 1), profile: .good, listen: IPv4Endpoint(host: "0.0.0.0", port: 0)))
        #expect(open?.code == .nonLoopbackListen)

        var broken = NetworkProfile.good
        broken.uplink.loss.probability = 1
        #expect(startError(.init(upstream: .loopback(port: 1), profile: broken))?.code == .invalidProfile)

        let proxy = ImpairmentProxy(configuration: .init(upstream: .loopback(port: 1), profile: .good))
        defer { proxy.stop() }
        _ = try proxy.start()
        #expect(proxy.port != nil)
        #expect(
            throws: NetSimError(
                .alreadyStarted, "a proxy starts once: this one was started or stopped before; make a new one")
        ) { try proxy.start() }
    }
}
