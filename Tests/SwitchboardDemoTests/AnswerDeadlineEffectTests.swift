import Foundation
import Testing
import SwitchboardDemo

/// The wake-up bench's adaptive-deadline figures: what the deadline each callee measured would
/// have done to its answer, against the fixed deadline.
@Suite("Wake-up bench: adaptive answer deadline", .timeLimit(.minutes(1)))
struct AnswerDeadlineEffectTests {
    static func answered(connectedAfter milliseconds: Double?, deadline: Double?) -> WakeupSample {
        WakeupSample(
            wakeupMilliseconds: 300, setupSucceeded: milliseconds != nil, setupMilliseconds: milliseconds,
            wokenBy: "push", failure: nil,
            calleeConnectedMilliseconds: milliseconds, adaptiveAnswerDeadlineSeconds: deadline)
    }

    @Test func answersAreCountedWithinEachDeadline() throws {
        let samples = [
            Self.answered(connectedAfter: 400, deadline: 1.6),  // within both
            Self.answered(connectedAfter: 2500, deadline: 1.6),  // fails under the adaptive one
            Self.answered(connectedAfter: 3000, deadline: 3.5),  // within both
            Self.answered(connectedAfter: 12_000, deadline: 3.5),  // fails under both
            Self.answered(connectedAfter: nil, deadline: 2.0),  // never joined
            Self.answered(connectedAfter: 500, deadline: nil),  // not answered with a deadline: not counted
        ]
        let effect = try #require(AnswerDeadlineEffect(samples: samples, fixedSeconds: 10))
        #expect(effect.answers == 5)
        #expect(effect.withinFixed == 3)
        #expect(effect.withinAdaptive == 2)
        #expect(effect.p50Seconds == 2.0)
        #expect(effect.minimumSeconds == 1.6)
        #expect(effect.maximumSeconds == 3.5)
    }

    @Test func theReEvaluatedVerdictDecidesWhereTheBenchRecordedOne() throws {
        var late = Self.answered(connectedAfter: 1200, deadline: 3.5)
        late.adaptiveAnswerDeadlineAtEndSeconds = 1.1
        late.adaptiveAnswerDeadlineMissed = true  // the network looked good by then: 1.1 s passed first
        var fine = Self.answered(connectedAfter: 1200, deadline: 3.5)
        fine.adaptiveAnswerDeadlineAtEndSeconds = 2.0
        fine.adaptiveAnswerDeadlineMissed = false
        let effect = try #require(AnswerDeadlineEffect(samples: [late, fine], fixedSeconds: 10))
        #expect(effect.withinAdaptive == 1)
        #expect(effect.withinFixed == 2)
        #expect(effect.p50AtEndSeconds == 1.1)
    }

    @Test func noAnswerNoFigures() {
        #expect(AnswerDeadlineEffect(samples: [Self.answered(connectedAfter: nil, deadline: nil)]) == nil)
    }

    @Test func theTableNamesEveryProfile() {
        let good = WakeupProfileResult(
            profile: "good", samples: [Self.answered(connectedAfter: 400, deadline: 1.6)], threshold: WakeupThreshold())
        let none = WakeupProfileResult(profile: "poor_3g", samples: [], threshold: WakeupThreshold())
        let table = WakeupReport(phones: 2, startedAt: "now", profiles: [good, none]).answerDeadlineTable
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("good") && lines[1].contains("1.60") && lines[1].contains("1/1"), "\(table)")
        #expect(lines[2].hasPrefix("poor_3g") && lines[2].contains("no answer"), "\(table)")
    }
}
