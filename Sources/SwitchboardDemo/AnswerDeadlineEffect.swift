import Foundation
import SwitchboardKit

/// What the adaptive answer deadline (SPEC §4 rule 12) would do on a profile, next to the fixed
/// one the bench's phones run with: the deadline each callee's own requests measured at the
/// moment it answered, and how many answers joined media within it versus within the fixed
/// deadline. An answer that did not is one the coordinator fails (the call ends as failed).
public struct AnswerDeadlineEffect: Codable, Sendable, Equatable {
    /// The fixed deadline (seconds), `CallLedger.Configuration`'s default.
    public var fixedSeconds: Double
    /// Rings that were answered and had a deadline measured.
    public var answers: Int
    /// The adaptive deadlines measured as the callees answered (seconds): median, least, most.
    public var p50Seconds: Double?
    public var minimumSeconds: Double?
    public var maximumSeconds: Double?
    /// The median of the deadlines as last re-evaluated while the answers waited.
    public var p50AtEndSeconds: Double?
    /// Answers whose media joined within the fixed deadline, and within their adaptive one.
    public var withinFixed: Int
    public var withinAdaptive: Int

    /// From the samples of one profile; nil when none was answered with a deadline measured.
    public init?(samples: [WakeupSample], fixedSeconds: Double = CallLedger.Configuration().answerDeadline) {
        let answered = samples.filter { $0.adaptiveAnswerDeadlineSeconds != nil }
        guard !answered.isEmpty else { return nil }
        self.fixedSeconds = fixedSeconds
        answers = answered.count
        let deadlines = answered.compactMap(\.adaptiveAnswerDeadlineSeconds).sorted()
        p50Seconds = WakeupProfileResult.percentile(deadlines, 50)
        minimumSeconds = deadlines.first
        maximumSeconds = deadlines.last
        p50AtEndSeconds = WakeupProfileResult.percentile(
            answered.compactMap(\.adaptiveAnswerDeadlineAtEndSeconds).sorted(), 50)
        func within(_ sample: WakeupSample, _ seconds: Double) -> Bool {
            sample.calleeConnectedMilliseconds.map { $0 <= seconds * 1000 } ?? false
        }
        withinFixed = answered.filter { within($0, fixedSeconds) }.count
        // The verdict of the re-evaluated deadline where the bench recorded one, else the
        // deadline at the answer alone.
        withinAdaptive =
            answered.filter { sample in
                guard let missed = sample.adaptiveAnswerDeadlineMissed else {
                    return within(sample, sample.adaptiveAnswerDeadlineSeconds ?? fixedSeconds)
                }
                return !missed && sample.calleeConnectedMilliseconds != nil
            }.count
    }
}

extension WakeupReport {
    /// The adaptive answer deadline per profile, and its effect against the fixed one.
    public var answerDeadlineTable: String {
        func seconds(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "—" }
        var lines = [
            "answer deadline   adaptive s at answer (p50  min  max), at the end (p50)   answers joined within: fixed    adaptive (would fail)"
        ]
        for result in profiles {
            let name = result.profile.padding(toLength: 16, withPad: " ", startingAt: 0)
            guard let effect = result.answerDeadline else {
                lines.append(name + "  — (no answer with a measured deadline)")
                continue
            }
            let adaptive =
                [effect.p50Seconds, effect.minimumSeconds, effect.maximumSeconds].map(seconds).joined(separator: "  ")
                + "   " + seconds(effect.p50AtEndSeconds)
            lines.append(
                name + "  " + adaptive.padding(toLength: 55, withPad: " ", startingAt: 0)
                    + String(
                        format: "  %3d/%-3d (%.0f s)  %3d/%-3d (%d)", effect.withinFixed, effect.answers,
                        effect.fixedSeconds,
                        effect.withinAdaptive, effect.answers, effect.answers - effect.withinAdaptive))
        }
        return lines.joined(separator: "\n")
    }
}
