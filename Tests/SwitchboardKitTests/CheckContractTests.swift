import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting

/// The one-line contract check app developers call at the end of a test.
@Suite("SimulatedCallSystem.checkContract", .timeLimit(.minutes(3)))
struct CheckContractTests {
    @Test func aCleanRunPassesAndZombiesOrViolationsThrow() async throws {
        let system = SimulatedCallSystem(clock: ManualClock())
        try system.checkContract(expectingNoCalls: true)
        let uuid = UUID()
        system.reportNewIncomingCall(uuid: uuid, update: CallUpdate(handle: "alice")) { _ in }
        await system.drain()
        try system.checkContract()
        #expect(throws: SimulatedCallSystem.ContractError(violations: [], callsLeft: [uuid])) {
            try system.checkContract(expectingNoCalls: true)
        }
        system.reportCallEnded(uuid: uuid, at: nil, reason: .remoteEnded)
        try system.checkContract(expectingNoCalls: true)
        system.reportCallEnded(uuid: uuid, at: nil, reason: .remoteEnded)
        #expect(throws: SimulatedCallSystem.ContractError(violations: [.endedTwice(uuid)], callsLeft: [])) {
            try system.checkContract()
        }
    }
}
