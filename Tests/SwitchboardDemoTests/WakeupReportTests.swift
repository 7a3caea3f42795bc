import Foundation
import Testing
import SwitchboardDemo

/// The wake-up bench's figures, gates, files and flags (the measuring itself runs in
/// `make test`'s short bench and in `make weaknet`).
@Suite("Wake-up bench: statistics, gates, report and flags", .timeLimit(.minutes(3)))
struct WakeupReportTests {
    static func sample(_ wakeup: Double?, ok: Bool = true, push: Double? = nil) -> WakeupSample {
        WakeupSample(
            wakeupMilliseconds: wakeup, setupSucceeded: ok, setupMilliseconds: ok ? 500 : nil,
            wokenBy: wakeup == nil ? nil : "push",
            failure: ok ? nil : "x", pushToReportedMilliseconds: push ?? wakeup.map { $0 / 2 },
            steps: wakeup.map { [WakeupStep.dialRequest.rawValue: $0 / 4, WakeupStep.pushLeg.rawValue: $0 / 3] })
    }

    @Test func percentilesAreNearestRank() {
        let values = (1...100).map(Double.init)
        #expect(WakeupProfileResult.percentile(values, 50) == 50)
        #expect(WakeupProfileResult.percentile(values, 95) == 95)
        #expect(WakeupProfileResult.percentile(values, 99) == 99)
        #expect(WakeupProfileResult.percentile([7], 95) == 7)
        #expect(WakeupProfileResult.percentile([1, 2, 3], 95) == 3)
        #expect(WakeupProfileResult.percentile([], 50) == nil)
    }

    @Test func aProfileWithinItsGatesPasses() {
        let samples = (1...20).map { Self.sample(Double($0) * 50) }
        let result = WakeupProfileResult(profile: "good", samples: samples, threshold: WakeupThreshold())
        #expect(result.passed && result.gateFailures.isEmpty)
        #expect(
            result.p50WakeupMilliseconds == 500 && result.p95WakeupMilliseconds == 950
                && result.p99WakeupMilliseconds == 1000)
        #expect(result.setupSuccessRate == 1 && result.woken == 20)
    }

    @Test func aSlowP95FailsTheGate() {
        let samples = (1...20).map { Self.sample($0 >= 19 ? 1600 : 100) }
        let result = WakeupProfileResult(profile: "poor_3g", samples: samples, threshold: WakeupThreshold())
        #expect(!result.passed)
        #expect(result.gateFailures.first?.contains("p95 dial → reported 1600 ms") == true)
        #expect(result.gateFailures.count == 1, "push → reported (800 ms) is within its gate")
    }

    @Test func pushToReportedIsGatedToo() {
        let samples = (1...20).map { Self.sample(100, push: $0 >= 19 ? 2000 : 50) }
        let result = WakeupProfileResult(profile: "poor_3g", samples: samples, threshold: WakeupThreshold())
        #expect(!result.passed && result.gateFailures == ["p95 push → reported 2000 ms ≥ 1500 ms"])
        #expect(result.p50PushToReportedMilliseconds == 50 && result.p95PushToReportedMilliseconds == 2000)
        let ownGate = WakeupProfileResult(
            profile: "poor_3g", samples: samples,
            threshold: WakeupThreshold(p95WakeupMilliseconds: 1500, p95PushToReportedMilliseconds: 2500))
        #expect(ownGate.passed)
    }

    @Test func aGateBelowThePushLegsFloorIsReportedNotApplied() {
        let samples = (1...20).map { Self.sample($0 >= 19 ? 3200 : 100) }
        let result = WakeupProfileResult(
            profile: "wifi_50_loss", samples: samples, threshold: WakeupThreshold(), pushLegFloor: 3010)
        #expect(result.passed && result.gateFailures.isEmpty)
        #expect(result.outOfReach.count == 2 && result.outOfReach[0].contains("push leg alone has p95 ≥ 3010 ms"))
        // Met anyway (a lucky sample): nothing to excuse.
        let lucky = WakeupProfileResult(
            profile: "wifi_50_loss", samples: (1...20).map { _ in Self.sample(100) }, threshold: WakeupThreshold(),
            pushLegFloor: 3010)
        #expect(lucky.passed && lucky.outOfReach.isEmpty)
        // A floor under the gate excuses nothing.
        let reachable = WakeupProfileResult(
            profile: "wifi_30_loss", samples: samples, threshold: WakeupThreshold(), pushLegFloor: 610)
        #expect(!reachable.passed && reachable.outOfReach.isEmpty)
        // Setup is never excused.
        let noSetup = WakeupProfileResult(
            profile: "wifi_50_loss", samples: (1...20).map { Self.sample(3200, ok: $0 > 5) },
            threshold: WakeupThreshold(), pushLegFloor: 3010)
        #expect(!noSetup.passed && noSetup.gateFailures.count == 1)
    }

    @Test func theStepsAreSummarisedAndTabled() {
        let result = WakeupProfileResult(
            profile: "good", samples: (1...20).map { Self.sample(Double($0) * 40) }, threshold: WakeupThreshold())
        let dial = result.steps.first { $0.step == WakeupStep.dialRequest.rawValue }
        #expect(dial?.count == 20 && dial?.p50Milliseconds == 100 && dial?.p95Milliseconds == 190)
        #expect(
            !result.steps.contains { $0.step == WakeupStep.answerRequest.rawValue }, "a step no ring had is left out")
        let report = WakeupReport(phones: 40, startedAt: "t", profiles: [result])
        let lines = report.stepTable.split(separator: "\n")
        #expect(lines.count == WakeupStep.allCases.count + 1)
        #expect(lines[1].hasPrefix(WakeupStep.dialRequest.rawValue) && lines[1].hasSuffix("100 / 190"))
        #expect(lines.contains { $0.hasPrefix(WakeupStep.answerRequest.rawValue) && $0.hasSuffix("—") })
    }

    @Test func exactly95PercentSetupSuccessIsNotAbove95() {
        let samples = (1...20).map { Self.sample(100, ok: $0 != 1) }
        let result = WakeupProfileResult(profile: "x", samples: samples, threshold: WakeupThreshold())
        #expect(result.setupSuccessRate == 0.95 && !result.passed, "the gate is strictly greater than 95 %")
    }

    @Test func aPhoneThatNeverRangCountsAsInfinitelyLate() {
        var samples = (1...19).map { _ in Self.sample(100) }
        samples.append(Self.sample(nil, ok: false))
        let result = WakeupProfileResult(
            profile: "wifi_50_loss", samples: samples,
            threshold: WakeupThreshold(p95WakeupMilliseconds: 1500, minimumSetupSuccessRate: 0.9))
        #expect(result.woken == 19 && result.p99WakeupMilliseconds == nil && result.p95WakeupMilliseconds == 100)
        let worse = WakeupProfileResult(
            profile: "w", samples: samples + [Self.sample(nil, ok: false)],
            threshold: WakeupThreshold(p95WakeupMilliseconds: 1500, minimumSetupSuccessRate: 0))
        #expect(!worse.passed && worse.p95WakeupMilliseconds == nil)
    }

    @Test func contractViolationsFailTheProfile() {
        let result = WakeupProfileResult(
            profile: "good", samples: [Self.sample(100)], threshold: WakeupThreshold(),
            contractViolations: ["callee0: x"])
        #expect(!result.passed)
    }

    @Test func theThresholdsFileSetsDefaultsAndPerProfileGates() throws {
        let path = NSTemporaryDirectory() + "thresholds-\(UUID()).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try
            #"{"default":{"p95WakeupMilliseconds":1200,"minimumSetupSuccessRate":0.9},"profiles":{"wifi_50_loss":{"p95WakeupMilliseconds":5000,"minimumSetupSuccessRate":0.5}}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let thresholds = try WakeupThresholds.load(path: path)
        #expect(
            thresholds.threshold(for: "good")
                == WakeupThreshold(p95WakeupMilliseconds: 1200, minimumSetupSuccessRate: 0.9))
        #expect(
            thresholds.threshold(for: "wifi_50_loss")
                == WakeupThreshold(p95WakeupMilliseconds: 5000, minimumSetupSuccessRate: 0.5))
    }

    @Test(arguments: [
        "not json", #"{"default":{"p95WakeupMilliseconds":-1,"minimumSetupSuccessRate":0.9},"profiles":{}}"#,
        #"{"default":{"p95WakeupMilliseconds":100,"minimumSetupSuccessRate":1.5},"profiles":{}}"#,
    ])
    func aBrokenThresholdsFileIsAClearError(_ text: String) throws {
        let path = NSTemporaryDirectory() + "thresholds-\(UUID()).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: BenchUsageError.self) { try WakeupThresholds.load(path: path) }
        #expect(throws: BenchUsageError.self) { try WakeupThresholds.load(path: path + ".missing") }
    }

    @Test func flagsParseAndBadOnesAreClearErrors() throws {
        let options = try #require(
            try WakeupBench.parse([
                "--phones", "8", "--profiles", "good,poor_3g", "--out", "/tmp/x", "--concurrency", "4", "--seed", "9",
            ]))
        #expect(
            options.phones == 8 && options.profiles.map(\.name) == ["good", "poor_3g"]
                && options.outDirectory == "/tmp/x")
        #expect(options.concurrency == 4 && options.seed == 9 && options.impairment == .model)
        #expect(try WakeupBench.parse(["--impairment", "kernel"])?.impairment == .kernel)
        let defaults = try #require(try WakeupBench.parse([]))
        #expect(defaults.phones == 200 && defaults.profiles.count == 5 && defaults.thresholds == WakeupThresholds())
        #expect(try WakeupBench.parse(["--help"]) == nil)
        for bad in [
            ["--phones", "7"], ["--phones", "0"], ["--phones"], ["--profiles", "good,lunar"], ["--concurrency", "x"],
            ["--frobnicate"], ["--seed", "-1"], ["--impairment", "tc"],
        ] {
            #expect(throws: BenchUsageError.self, "\(bad)") { try WakeupBench.parse(bad) }
        }
        #expect(WakeupBench.run(["--phones", "3"]) == 2)
        #expect(
            WakeupBench.run(["--out", "/proc/switchboard-cannot-write-here"]) == 2,
            "a bad --out fails before any phone rings")
    }

    @Test func theReportPrintsATableAndDrawsEachProfile() {
        let good = WakeupProfileResult(
            profile: "good", samples: (1...10).map { Self.sample(Double($0) * 10) }, threshold: WakeupThreshold())
        let bad = WakeupProfileResult(
            profile: "wifi_50_loss", samples: [Self.sample(3000, ok: false)], threshold: WakeupThreshold())
        let report = WakeupReport(phones: 20, startedAt: "2026-11-30T00:00:00Z", profiles: [good, bad])
        #expect(!report.passed)
        let table = report.table.split(separator: "\n")
        #expect(
            table.count == 5 && table[0] == "impairment: model" && table[3].hasPrefix("good")
                && table[3].hasSuffix("pass") && table[4].contains("FAIL"))
        let svg = report.chartSVG
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.components(separatedBy: "<polyline").count == 3, "one curve per profile")
        #expect(svg.contains("p95 gate 1500 ms") && svg.contains("wifi_50_loss (FAIL)"))
        let decoded = try? JSONDecoder().decode(WakeupReport.self, from: JSONEncoder().encode(report))
        #expect(decoded == report)
    }
}
