import Foundation

/// One ring of the wake-up bench.
public struct WakeupSample: Codable, Sendable, Equatable {
    /// From `POST /calls` sent by the caller to the incoming call reported in the callee's call
    /// system; nil when the callee never rang.
    public var wakeupMilliseconds: Double?
    /// Answer → both sides connected within the setup limit.
    public var setupSucceeded: Bool
    /// From the answer to both sides connected; nil when they never both were.
    public var setupMilliseconds: Double?
    /// Which path woke the callee (`push` or `event_stream`).
    public var wokenBy: String?
    /// What went wrong, when something did.
    public var failure: String?
    /// From the answer to each side connected, when it was (where setup time goes).
    public var calleeConnectedMilliseconds: Double?
    public var callerConnectedMilliseconds: Double?
    /// From the push accepted by APNs (the emulator's `receivedAt`) to the incoming call
    /// reported: the design's wake-up metric. nil when the callee never rang.
    public var pushToReportedMilliseconds: Double?
    /// Where the time went, step by step, in milliseconds (``WakeupStep``'s names); a step
    /// that did not happen is missing.
    public var steps: [String: Double]?
    /// The adaptive answer deadline (seconds) the callee's own requests called for when it
    /// answered (``NetworkQualityMonitor``); nil when it did not answer.
    public var adaptiveAnswerDeadlineSeconds: Double?
    /// The same deadline as last re-evaluated: when the callee joined media, or when the time
    /// waited reached it.
    public var adaptiveAnswerDeadlineAtEndSeconds: Double?
    /// Whether the time waited reached the re-evaluated adaptive deadline before the callee
    /// joined media: the coordinator would have failed the answer.
    public var adaptiveAnswerDeadlineMissed: Bool?

    public init(
        wakeupMilliseconds: Double?, setupSucceeded: Bool, setupMilliseconds: Double?, wokenBy: String?,
        failure: String?,
        calleeConnectedMilliseconds: Double? = nil, callerConnectedMilliseconds: Double? = nil,
        pushToReportedMilliseconds: Double? = nil, steps: [String: Double]? = nil,
        adaptiveAnswerDeadlineSeconds: Double? = nil,
        adaptiveAnswerDeadlineAtEndSeconds: Double? = nil, adaptiveAnswerDeadlineMissed: Bool? = nil
    ) {
        self.adaptiveAnswerDeadlineSeconds = adaptiveAnswerDeadlineSeconds
        self.adaptiveAnswerDeadlineAtEndSeconds = adaptiveAnswerDeadlineAtEndSeconds
        self.adaptiveAnswerDeadlineMissed = adaptiveAnswerDeadlineMissed
        self.pushToReportedMilliseconds = pushToReportedMilliseconds
        self.steps = steps
        self.wakeupMilliseconds = wakeupMilliseconds
        self.setupSucceeded = setupSucceeded
        self.setupMilliseconds = setupMilliseconds
        self.wokenBy = wokenBy
        self.failure = failure
        self.calleeConnectedMilliseconds = calleeConnectedMilliseconds
        self.callerConnectedMilliseconds = callerConnectedMilliseconds
    }
}

/// The gates a profile must pass.
public struct WakeupThreshold: Codable, Sendable, Equatable {
    /// The 95th percentile wake-up latency (dial → reported) must be below this.
    public var p95WakeupMilliseconds: Double
    /// The 95th percentile push → reported latency must be below this; when absent, the same
    /// as `p95WakeupMilliseconds`.
    public var p95PushToReportedMilliseconds: Double?
    /// The share of rings whose setup succeeded must be above this (0…1).
    public var minimumSetupSuccessRate: Double

    public init(
        p95WakeupMilliseconds: Double = 1500, p95PushToReportedMilliseconds: Double? = nil,
        minimumSetupSuccessRate: Double = 0.95
    ) {
        self.p95WakeupMilliseconds = p95WakeupMilliseconds
        self.p95PushToReportedMilliseconds = p95PushToReportedMilliseconds
        self.minimumSetupSuccessRate = minimumSetupSuccessRate
    }

    /// The push → reported gate in force.
    public var pushGateMilliseconds: Double { p95PushToReportedMilliseconds ?? p95WakeupMilliseconds }
}

/// The steps of one ring, in order, by the names ``WakeupSample/steps`` uses.
public enum WakeupStep: String, CaseIterable, Sendable {
    case dialRequest = "dial request (caller's POST /calls)"
    case toAPNs = "dial → push accepted by APNs"
    case pushLeg = "push leg (APNs → phone)"
    case report = "push arrived → reported"
    case answerRequest = "answer request (callee's accept)"
    case calleeToken = "callee's media token request"
    case calleeMedia = "callee's media join"
    /// Until the caller's first poll answered after the accept, or its held media token
    /// request answered, whichever came first.
    case callerHears = "answer → caller hears of it"
    /// From when the caller heard (or sent the request, if later) to the token: zero when the
    /// held request brought both.
    case callerToken = "caller's media token, after that"
    case callerMedia = "caller's media join"
}

/// One step's figures over a profile's rings.
public struct WakeupStepSummary: Codable, Sendable, Equatable {
    public var step: String
    /// Rings in which the step happened.
    public var count: Int
    public var p50Milliseconds: Double
    public var p95Milliseconds: Double
}

/// The thresholds file: defaults, and overrides per profile name.
///
/// ```json
/// {"default": {"p95WakeupMilliseconds": 1500, "minimumSetupSuccessRate": 0.95},
///  "profiles": {"wifi_50_loss": {"p95WakeupMilliseconds": 4000, "minimumSetupSuccessRate": 0.8}}}
/// ```
public struct WakeupThresholds: Codable, Sendable, Equatable {
    public var `default`: WakeupThreshold
    public var profiles: [String: WakeupThreshold]

    public init(default: WakeupThreshold = WakeupThreshold(), profiles: [String: WakeupThreshold] = [:]) {
        self.default = `default`
        self.profiles = profiles
    }

    public func threshold(for profile: String) -> WakeupThreshold { profiles[profile] ?? self.default }

    /// Reads a thresholds file; a clear error for anything that is not one.
    public static func load(path: String) throws(BenchUsageError) -> WakeupThresholds {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BenchUsageError("cannot read the thresholds file \(path)")
        }
        let thresholds: WakeupThresholds
        do {
            thresholds = try JSONDecoder().decode(WakeupThresholds.self, from: data)
        } catch {
            throw BenchUsageError("the thresholds file \(path) is not valid: \(error)")
        }
        for (name, threshold) in [("default", thresholds.default)] + thresholds.profiles.sorted(by: { $0.key < $1.key })
        {
            guard threshold.p95WakeupMilliseconds > 0, threshold.pushGateMilliseconds > 0,
                (0...1).contains(threshold.minimumSetupSuccessRate)
            else {
                throw BenchUsageError(
                    "thresholds for \(name): p95WakeupMilliseconds and p95PushToReportedMilliseconds must be > 0 and minimumSetupSuccessRate within 0…1"
                )
            }
        }
        return thresholds
    }
}

/// A bad flag or file: exit status 2.
public struct BenchUsageError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One profile's figures and verdict.
public struct WakeupProfileResult: Codable, Sendable, Equatable {
    public var profile: String
    public var rings: Int
    public var woken: Int
    public var p50WakeupMilliseconds: Double?
    public var p95WakeupMilliseconds: Double?
    public var p99WakeupMilliseconds: Double?
    public var p50PushToReportedMilliseconds: Double?
    public var p95PushToReportedMilliseconds: Double?
    public var p99PushToReportedMilliseconds: Double?
    public var setupSuccessRate: Double
    public var threshold: WakeupThreshold
    /// The p95 the push leg alone cannot beat under the profile's loss (``NetworkProfile``'s
    /// arithmetic; nil when not computed).
    public var pushLegFloorMilliseconds: Double?
    /// Gates this profile cannot meet by arithmetic (the push leg's floor is above them), so
    /// they are reported and not applied, with the reason.
    public var outOfReach: [String]
    public var passed: Bool
    /// Why the gate failed, when it did.
    public var gateFailures: [String]
    /// Where the time went, step by step.
    public var steps: [WakeupStepSummary]
    /// Broken CallKit rules seen on any phone (should be none).
    public var contractViolations: [String]
    /// The adaptive answer deadline measured at each answer and its effect (reported, not gated);
    /// nil when no ring was answered.
    public var answerDeadline: AnswerDeadlineEffect?
    public var samples: [WakeupSample]

    /// Summarises `samples` and applies `threshold`. A ring that never woke counts as a miss for
    /// setup and as an infinitely late wake-up for the percentiles.
    ///
    /// `pushLegFloor`: the p95 the push leg alone cannot beat (ms). A wake-up gate at or below
    /// it is out of physical reach: it is reported in ``outOfReach`` and not applied.
    public init(
        profile: String, samples: [WakeupSample], threshold: WakeupThreshold, contractViolations: [String] = [],
        pushLegFloor: Double? = nil
    ) {
        self.profile = profile
        self.samples = samples
        self.threshold = threshold
        self.contractViolations = contractViolations
        pushLegFloorMilliseconds = pushLegFloor
        rings = samples.count
        answerDeadline = AnswerDeadlineEffect(samples: samples)
        let latencies = samples.map { $0.wakeupMilliseconds ?? .infinity }.sorted()
        let pushLatencies = samples.map { $0.pushToReportedMilliseconds ?? .infinity }.sorted()
        woken = latencies.filter(\.isFinite).count
        func finite(_ value: Double?) -> Double? { value.flatMap { $0.isFinite ? $0 : nil } }
        p50WakeupMilliseconds = finite(Self.percentile(latencies, 50))
        p95WakeupMilliseconds = finite(Self.percentile(latencies, 95))
        p99WakeupMilliseconds = finite(Self.percentile(latencies, 99))
        p50PushToReportedMilliseconds = finite(Self.percentile(pushLatencies, 50))
        p95PushToReportedMilliseconds = finite(Self.percentile(pushLatencies, 95))
        p99PushToReportedMilliseconds = finite(Self.percentile(pushLatencies, 99))
        setupSuccessRate = samples.isEmpty ? 0 : Double(samples.filter(\.setupSucceeded).count) / Double(samples.count)
        steps = WakeupStep.allCases.compactMap { step in
            let values = samples.compactMap { $0.steps?[step.rawValue] }.sorted()
            guard let p50 = Self.percentile(values, 50), let p95 = Self.percentile(values, 95) else { return nil }
            return WakeupStepSummary(
                step: step.rawValue, count: values.count, p50Milliseconds: p50, p95Milliseconds: p95)
        }
        var failures: [String] = [], unreachable: [String] = []
        func gate(_ name: String, _ sorted: [Double], _ limit: Double) {
            let p95 = Self.percentile(sorted, 95) ?? .infinity
            if p95 < limit { return }
            let measured = p95.isFinite ? String(format: "%.0f ms", p95) : "(some phones never rang)"
            if let floor = pushLegFloor, floor >= limit {
                unreachable.append(
                    String(
                        format: "p95 %@ %@ ≥ %.0f ms, and the push leg alone has p95 ≥ %.0f ms at this loss", name,
                        measured, limit, floor))
                return
            }
            failures.append(String(format: "p95 %@ %@ ≥ %.0f ms", name, measured, limit))
        }
        gate("dial → reported", latencies, threshold.p95WakeupMilliseconds)
        gate("push → reported", pushLatencies, threshold.pushGateMilliseconds)
        outOfReach = unreachable
        if !(setupSuccessRate > threshold.minimumSetupSuccessRate) {
            failures.append(
                String(
                    format: "setup success %.1f %% ≤ %.1f %%", setupSuccessRate * 100,
                    threshold.minimumSetupSuccessRate * 100))
        }
        if !contractViolations.isEmpty { failures.append("\(contractViolations.count) CallKit contract violations") }
        gateFailures = failures
        passed = failures.isEmpty
    }

    /// Nearest-rank percentile of ascending `values`.
    public static func percentile(_ values: [Double], _ percent: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let rank = Int((percent / 100 * Double(values.count)).rounded(.up))
        return values[min(max(rank, 1), values.count) - 1]
    }
}

/// The whole run, as written to `wakeup.json`.
public struct WakeupReport: Codable, Sendable, Equatable {
    public var phones: Int
    public var startedAt: String
    public var passed: Bool
    public var profiles: [WakeupProfileResult]
    /// `model` or `kernel` (``WakeupBench/Impairment``); nil in reports from before it existed.
    public var impairment: String?

    public init(phones: Int, startedAt: String, profiles: [WakeupProfileResult], impairment: String? = nil) {
        self.phones = phones
        self.startedAt = startedAt
        self.profiles = profiles
        self.impairment = impairment
        passed = profiles.allSatisfy(\.passed)
    }

    /// The table printed at the end.
    public var table: String {
        func ms(_ value: Double?) -> String { value.map { String(format: "%.0f", $0) } ?? "—" }
        func right(_ text: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - text.count)) + text
        }
        var lines = [
            "impairment: \(impairment ?? "model")",
            "                             dial → reported ms    push → reported ms",
            "profile        rings  woken    p50    p95    p99     p50    p95    p99  setup ok  gate",
        ]
        for result in profiles {
            var gate = result.passed ? "pass" : "FAIL: " + result.gateFailures.joined(separator: "; ")
            if !result.outOfReach.isEmpty {
                gate += " (not gated, out of physical reach: " + result.outOfReach.joined(separator: "; ") + ")"
            }
            lines.append(
                result.profile.padding(toLength: 14, withPad: " ", startingAt: 0)
                    + String(format: " %5d  %5d ", result.rings, result.woken)
                    + [result.p50WakeupMilliseconds, result.p95WakeupMilliseconds, result.p99WakeupMilliseconds].map {
                        right(ms($0), 6)
                    }
                    .joined(separator: " ")
                    + "  "
                    + [
                        result.p50PushToReportedMilliseconds, result.p95PushToReportedMilliseconds,
                        result.p99PushToReportedMilliseconds,
                    ]
                    .map { right(ms($0), 6) }.joined(separator: " ")
                    + String(format: "  %7.1f%%  ", result.setupSuccessRate * 100) + gate)
        }
        return lines.joined(separator: "\n")
    }

    /// Where the time goes: each step's p50 / p95 in milliseconds, a column per profile.
    public var stepTable: String {
        let width = 13
        func cell(_ text: String) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        var lines = ["step (p50 / p95 ms)                  " + profiles.map { cell($0.profile) }.joined(separator: " ")]
        for step in WakeupStep.allCases {
            let cells = profiles.map { result -> String in
                guard let summary = result.steps.first(where: { $0.step == step.rawValue }) else { return cell("—") }
                return cell(String(format: "%.0f / %.0f", summary.p50Milliseconds, summary.p95Milliseconds))
            }
            lines.append(
                step.rawValue.padding(toLength: 37, withPad: " ", startingAt: 0) + cells.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    /// The wake-up latency distribution per profile (cumulative), as an SVG image.
    public var chartSVG: String {
        let width = 860.0, height = 480.0, left = 70.0, right = 180.0, top = 40.0, bottom = 60.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let colours = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d"]
        let allLatencies = profiles.flatMap { $0.samples.compactMap(\.wakeupMilliseconds) }
        let thresholds = profiles.map(\.threshold.p95WakeupMilliseconds)
        let rawMax = max(allLatencies.max() ?? 1000, thresholds.max() ?? 1500) * 1.05
        let step = [100.0, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000].first { rawMax / $0 <= 8 } ?? 50000
        let maxX = (rawMax / step).rounded(.up) * step
        func x(_ ms: Double) -> Double { left + min(ms, maxX) / maxX * plotWidth }
        func y(_ share: Double) -> Double { top + (1 - share) * plotHeight }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="16">Wake-up latency (POST /calls → incoming call reported), cumulative, \(phones) phones</text>

            """
        for tick in stride(from: 0.0, through: maxX, by: step) {
            svg +=
                "<line x1=\"\(x(tick))\" y1=\"\(top)\" x2=\"\(x(tick))\" y2=\"\(top + plotHeight)\" stroke=\"#eee\"/>"
            svg += "<text x=\"\(x(tick))\" y=\"\(top + plotHeight + 18)\" text-anchor=\"middle\">\(Int(tick))</text>\n"
        }
        for share in stride(from: 0.0, through: 1.0, by: 0.25) {
            svg +=
                "<line x1=\"\(left)\" y1=\"\(y(share))\" x2=\"\(left + plotWidth)\" y2=\"\(y(share))\" stroke=\"#eee\"/>"
            svg += "<text x=\"\(left - 8)\" y=\"\(y(share) + 4)\" text-anchor=\"end\">\(Int(share * 100)) %</text>\n"
        }
        svg +=
            "<line x1=\"\(left)\" y1=\"\(y(0.95))\" x2=\"\(left + plotWidth)\" y2=\"\(y(0.95))\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n"
        for threshold in Set(thresholds).sorted() {
            svg +=
                "<line x1=\"\(x(threshold))\" y1=\"\(top)\" x2=\"\(x(threshold))\" y2=\"\(top + plotHeight)\" stroke=\"#c00\" stroke-dasharray=\"6 3\"/>"
            svg +=
                "<text x=\"\(x(threshold) + 4)\" y=\"\(top + 12)\" fill=\"#c00\">p95 gate \(Int(threshold)) ms</text>\n"
        }
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 16)\" text-anchor=\"middle\">milliseconds</text>\n"
        svg +=
            "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(plotHeight)\" fill=\"none\" stroke=\"#333\"/>\n"
        for (index, result) in profiles.enumerated() {
            let colour = colours[index % colours.count]
            let latencies = result.samples.compactMap(\.wakeupMilliseconds).sorted()
            if !latencies.isEmpty, result.rings > 0 {
                var points = [(x(0), y(0))]
                for (rank, latency) in latencies.enumerated() {
                    points.append((x(latency), y(Double(rank) / Double(result.rings))))
                    points.append((x(latency), y(Double(rank + 1) / Double(result.rings))))
                }
                let path = points.map { String(format: "%.1f,%.1f", $0.0, $0.1) }.joined(separator: " ")
                svg += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\" points=\"\(path)\"/>\n"
            }
            let legendY = top + 20 + Double(index) * 22
            svg +=
                "<line x1=\"\(left + plotWidth + 16)\" y1=\"\(legendY - 4)\" x2=\"\(left + plotWidth + 40)\" y2=\"\(legendY - 4)\" stroke=\"\(colour)\" stroke-width=\"3\"/>"
            svg +=
                "<text x=\"\(left + plotWidth + 46)\" y=\"\(legendY)\">\(result.profile)\(result.passed ? "" : " (FAIL)")</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }
}
