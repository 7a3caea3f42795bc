import Testing

@testable import SwitchboardPush

/// The reconnect backoff as a pure value: instants are made up, nothing sleeps.
@Suite("ReconnectGate", .timeLimit(.minutes(1)))
struct ReconnectGateTests {
    let t0 = ContinuousClock.now
    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }
    func gate() -> ReconnectGate { ReconnectGate(initialDelay: .milliseconds(100), maximumDelay: .seconds(5)) }

    /// A gate whose first connection worked.
    func openGate() -> ReconnectGate {
        var gate = gate()
        gate.probeAdmitted(id: 1_000)
        gate.connectionReady(id: 1_000)
        return gate
    }

    @Test("at the start one request probes; once its connection is ready everything flows")
    func firstConnectionIsAProbe() {
        var gate = gate()
        #expect(gate.admission(at: at(0)) == .one)
        #expect(!gate.mayConnect(id: 1))
        gate.probeAdmitted(id: 1)
        #expect(gate.admission(at: at(0)) == .none(until: nil))
        #expect(gate.mayConnect(id: 1))
        #expect(!gate.mayConnect(id: 2))
        gate.connectionReady(id: 1)
        #expect(gate.admission(at: at(1)) == .all)
        #expect(gate.mayConnect(id: 2))
        #expect(gate.mayConnect(id: 3))
    }

    @Test("a connection failure closes the gate for the delay, then lets exactly one probe through")
    func failureClosesThenProbes() {
        var gate = openGate()
        gate.requestFinished(id: 1, epoch: 0, outcome: .connectionFailed, at: at(0))
        #expect(gate.admission(at: at(50)) == .none(until: at(100)))
        #expect(!gate.mayConnect(id: 2))
        #expect(gate.admission(at: at(100)) == .one)
        gate.probeAdmitted(id: 7)
        #expect(gate.admission(at: at(101)) == .none(until: nil))
        #expect(gate.mayConnect(id: 7))
        #expect(!gate.mayConnect(id: 8))
        gate.connectionReady(id: 7)
        #expect(gate.admission(at: at(102)) == .all)
        #expect(gate.mayConnect(id: 8))
    }

    @Test("the streams of one dead connection count as one failure")
    func oneIncidentCountsOnce() {
        var gate = openGate()
        for id in 1...100 {
            gate.requestFinished(id: UInt64(id), epoch: 0, outcome: .connectionFailed, at: at(0))
        }
        #expect(gate.admission(at: at(100)) == .one)
        #expect(gate.nextDelay == .milliseconds(200))
    }

    @Test("failed probes double the pause up to the maximum; a response resets it")
    func delaysDoubleAndReset() {
        var gate = gate()
        var now = 0
        var pauses: [Int] = []
        gate.requestFinished(id: 0, epoch: gate.epoch, outcome: .connectionFailed, at: at(now))
        for probe in 1...8 {
            guard case .none(let until?) = gate.admission(at: at(now)) else {
                Issue.record("gate should be closed")
                return
            }
            let pause = Int((until - at(now)) / .milliseconds(1))
            pauses.append(pause)
            now += pause
            #expect(gate.admission(at: at(now)) == .one)
            gate.probeAdmitted(id: UInt64(probe))
            gate.requestFinished(id: UInt64(probe), epoch: gate.epoch, outcome: .connectionFailed, at: at(now))
        }
        #expect(pauses == [100, 200, 400, 800, 1600, 3200, 5000, 5000])

        // The next probe connects (gate opens) and then gets a response (pause resets).
        now += 5000
        gate.probeAdmitted(id: 99)
        gate.connectionReady(id: 99)
        #expect(gate.nextDelay == .seconds(5), "a ready connection alone does not reset the pause")
        gate.requestFinished(id: 99, epoch: gate.epoch, outcome: .responded, at: at(now))
        #expect(gate.state == .open)
        #expect(gate.nextDelay == .milliseconds(100))
    }

    @Test("a server that accepts and then drops every request still backs off")
    func acceptThenDropEscalates() {
        var gate = gate()
        gate.requestFinished(id: 1, epoch: 0, outcome: .connectionFailed, at: at(0))
        gate.probeAdmitted(id: 2)
        gate.connectionReady(id: 2)  // TCP (and TLS) worked ...
        gate.requestFinished(id: 2, epoch: gate.epoch, outcome: .connectionFailed, at: at(100))  // ... then it died
        #expect(gate.admission(at: at(150)) == .none(until: at(300)))
    }

    @Test("a probe that ends without a verdict (cancelled) frees the probe slot at once")
    func abandonedProbe() {
        var gate = gate()
        gate.requestFinished(id: 1, epoch: 0, outcome: .connectionFailed, at: at(0))
        gate.probeAdmitted(id: 2)
        gate.requestFinished(id: 2, epoch: gate.epoch, outcome: .other, at: at(120))
        #expect(gate.admission(at: at(120)) == .one)
        #expect(!gate.mayConnect(id: 3), "the next request must be admitted as the probe first")
        #expect(gate.nextDelay == .milliseconds(200), "no failure was counted")
    }

    @Test("late results from before the last failure change nothing")
    func staleResultsIgnored() {
        var gate = gate()
        gate.requestFinished(id: 1, epoch: 0, outcome: .connectionFailed, at: at(0))
        gate.requestFinished(id: 2, epoch: 0, outcome: .responded, at: at(10))
        #expect(gate.nextDelay == .milliseconds(200))
        #expect(gate.admission(at: at(10)) == .none(until: at(100)))
    }
}
