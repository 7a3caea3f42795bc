import Foundation
import SwitchboardCLI
import SwitchboardNetSim
import SwitchboardTesting

/// `switchboard-dev bench audio`: real sound through the relay in real time, per network
/// profile, with speech quality scored by an independent implementation of ITU-T P.862.
enum AudioBench {
    static let help = """
        Usage: switchboard-dev bench audio [--profiles LIST] [--rounds N] [--pesq SCRIPT] [--out FILE]

        Real sound through the built-in audio relay, in real time: two phrases spoken by
        espeak-ng go from one simulated phone to another, each phone behind its own link with a
        weak-network profile (LIST, default every profile: good, poor_4g, poor_3g, wifi_30_loss,
        wifi_50_loss), through a server in this process, N times per profile (default 3, each
        with other seeds for the links' randomness). Each round measures the mouth-to-ear delay,
        the frames that never played (lost, or dropped by the jitter buffer), the SNR through the
        8 kHz band (over the whole sound, and the median of its 20 ms pieces), and the speech
        quality by ITU-T P.862 (PESQ, narrowband, MOS-LQO from 1.0 to 4.5), computed by SCRIPT
        (default bench/pesq_score.py: PyPI `pesq`) from what was said and what was heard, both
        at 8 kHz. Per profile the table shows the median round, with the lowest and highest.
        A round in which the machine did not keep the 20 ms audio schedule (more than 5 % of its
        steps began late) measures the machine, not the network: it is shown and left out of
        the medians. Run it on an otherwise idle machine.
        Prints one table; with --out FILE.tsv, its figures as bench-summary rows (TSV) and the
        table beside them (FILE.md).
        Needs espeak-ng, sox, and python3 with pesq and numpy (scripts/ensure-python-tools.sh bench).
        """

    struct Options: Sendable {
        var profiles = NetworkProfile.all
        var rounds = 3
        var pesqScript = "bench/pesq_score.py"
        var out: String?
    }

    static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        do {
            guard let parsed = try parse(arguments) else {
                print(help)
                return 0
            }
            options = parsed
        } catch {
            return usage(error.message)
        }
        guard FileManager.default.fileExists(atPath: options.pesqScript) else {
            return usage("no PESQ script at '\(options.pesqScript)' (run from the repository, or give --pesq)")
        }
        return waitForExitCode {
            do {
                try await bench(options)
                return 0
            } catch {
                FileHandle.standardError.write(Data("switchboard-dev bench audio: \(error)\n".utf8))
                return 1
            }
        }
    }

    /// The options after `bench audio`; nil for `--help`.
    static func parse(_ arguments: [String]) throws(UsageError) -> Options? {
        var options = Options()
        var scanner = ArgumentScanner(arguments)
        while let flag = scanner.nextFlag() {
            switch flag {
            case "-h", "--help": return nil
            case "--profiles":
                do {
                    options.profiles = try NetworkProfile.parseList(try scanner.value(for: flag))
                } catch let error as UsageError {
                    throw error
                } catch {
                    throw UsageError(message: "\(error)")
                }
            case "--rounds":
                options.rounds = try scanner.positiveInteger(for: flag)
                guard options.rounds <= 50 else { throw UsageError(message: "--rounds takes 1-50") }
            case "--pesq": options.pesqScript = try scanner.value(for: flag)
            case "--out": options.out = try scanner.value(for: flag)
            default: throw scanner.unknown(flag)
            }
        }
        return options
    }

    private static func usage(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("switchboard-dev bench audio: \(message)\n".utf8))
        return 2
    }

    /// One round's figures: no report when the call was not set up, no PESQ when most of the
    /// speech never played (or was not found).
    struct Round: Sendable {
        var report: AudioProbe.Report?
        var pesq: Double?
    }

    static func bench(_ options: Options) async throws {
        let mouth =
            try AudioProbe.spoken("The phone rings, even locked, on a bad network, and the call connects.")
            + [Float](repeating: 0, count: 24_000)
            + AudioProbe.spoken("Our users need it to be boringly reliable.")
        let stack = try await DemoStack()
        var results: [(NetworkProfile, [Round])] = []
        do {
            RelayBench.say(
                String(
                    format: "audio bench: %.1f s of speech, real time, %d rounds per profile",
                    Double(mouth.count) / 48_000, options.rounds))
            for profile in options.profiles {
                var rounds: [Round] = []
                for round in 0..<options.rounds {
                    let recording: AudioProbe.Recording
                    do {
                        recording = try await AudioProbe.record(
                            stack: stack, profile: profile, sound: "speech", mouth: mouth, pacing: .realTime,
                            seed: 7 &+ 2 &* UInt64(round))
                    } catch {
                        // The call itself did not come up over this link (a lost answer): a
                        // figure of the profile too, reported, not an end of the benchmark.
                        RelayBench.say("  \(profile.name): the call was not set up: \(error)")
                        rounds.append(Round(report: nil, pesq: nil))
                        continue
                    }
                    let report = recording.report
                    // PESQ needs the speech: when most of it never played there is nothing to
                    // score, and the library's alignment then finds chance matches.
                    let pesq =
                        report.found && report.frameLossPercent <= 50
                        ? try score(recording, script: options.pesqScript) : nil
                    RelayBench.say(
                        "  \(report.line), PESQ "
                            + (pesq.map { String(format: "%.2f", $0) } ?? "n/a (most of it never played)"))
                    rounds.append(Round(report: report, pesq: pesq))
                }
                results.append((profile, rounds))
            }
        } catch {
            await stack.shutDown()
            throw error
        }
        await stack.shutDown()
        let table = Table(results: results)
        RelayBench.say(table.text)
        if let out = options.out {
            try table.rows.joined(separator: "\n").appending("\n").write(toFile: out, atomically: true, encoding: .utf8)
            let fragment = (out.hasSuffix(".tsv") ? String(out.dropLast(4)) : out) + ".md"
            try table.text.write(toFile: fragment, atomically: true, encoding: .utf8)
        }
    }

    /// PESQ narrowband of what was heard against what was said, both brought to 8 kHz by sox.
    static func score(_ recording: AudioProbe.Recording, script: String) throws -> Double {
        let directory = NSTemporaryDirectory() + "switchboard-pesq-" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var waves: [String] = []
        for (name, signal) in [("mouth", recording.mouth), ("ear", recording.ear)] {
            let raw = "\(directory)/\(name).f32", wave = "\(directory)/\(name).wav"
            try signal.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: raw))
            try Command.run(
                "/usr/bin/sox",
                [
                    "-G", "-t", "raw", "-r", "48000", "-e", "floating-point", "-b", "32", "-c", "1", raw,
                    "-r", "8000", "-b", "16", "-e", "signed-integer", wave,
                ])
            waves.append(wave)
        }
        // The python3 on PATH: the one the Python tools were installed for.
        let printed = try Command.run("/usr/bin/env", ["python3", script, waves[0], waves[1]])
        guard let value = Double(printed.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw AudioProbe.ProbeError("\(script) printed '\(printed)', not a score")
        }
        return value
    }

    /// The medians per profile, over the rounds whose schedule was kept.
    struct Table {
        var text = ""
        var rows: [String] = []

        init(results: [(NetworkProfile, [Round])]) {
            text =
                "| profile | rounds | mouth to ear ms | frames never played % | SNR dB (median 20 ms piece) | PESQ (P.862 NB) |\n"
                + "|---|---|---:|---:|---:|---:|\n"
            for (profile, all) in results {
                let reports = all.compactMap(\.report)
                let kept = reports.filter(\.scheduleKept)
                var notes: [String] = []
                if all.count > reports.count { notes.append("\(all.count - reports.count) call(s) not set up") }
                if reports.count > kept.count { notes.append("\(reports.count - kept.count) late, left out") }
                let roundsText =
                    "\(kept.count) of \(all.count)" + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))")
                // A delay is the speech's: when most of it never played, the search for it
                // finds chance matches in what little came.
                let found = kept.filter { $0.found && $0.frameLossPercent <= 50 }
                let scores = all.filter { $0.report?.scheduleKept ?? false }.compactMap(\.pesq)
                let delay = found.isEmpty ? nil : Figure(found.map(\.delayMilliseconds))
                let loss = kept.isEmpty ? nil : Figure(kept.map(\.frameLossPercent))
                let snr = kept.isEmpty ? nil : Figure(kept.map(\.medianSegmentSNR))
                let pesq = scores.isEmpty ? nil : Figure(scores)
                func cell(_ figure: Figure?, _ format: String, _ none: String) -> String {
                    figure.map { $0.text(format) } ?? none
                }
                text +=
                    "| \(profile.name) | \(roundsText) | \(cell(delay, "%.0f", kept.isEmpty ? "n/a" : "n/a (most never played)")) | "
                    + "\(cell(loss, "%.1f", "n/a")) | \(cell(snr, "%.1f", "n/a")) | "
                    + "\(cell(pesq, "%.2f", kept.isEmpty ? "n/a" : "n/a (most never played)")) |\n"
                if let delay {
                    rows.append(
                        delay.row("audio: \(profile.name) mouth to ear, ms (real time, speech)", "%.0f", found.count))
                }
                if let loss {
                    rows.append(loss.row("audio: \(profile.name) frames never played, %", "%.1f", kept.count))
                }
                if let snr {
                    rows.append(snr.row("audio: \(profile.name) SNR of the median 20 ms piece, dB", "%.1f", kept.count))
                }
                if let pesq {
                    rows.append(
                        pesq.row("audio: \(profile.name) speech quality, PESQ P.862 NB (1-4.5)", "%.2f", scores.count))
                } else if !kept.isEmpty {
                    rows.append(
                        [
                            "audio: \(profile.name) speech quality, PESQ P.862 NB (1-4.5)",
                            "n/a: most of the speech never played",
                            "-", "-", "-", "-", "-", "-", "\(kept.count)",
                        ].joined(separator: "\t"))
                }
            }
        }
    }

    /// A median with the lowest and highest value.
    struct Figure {
        let median: Double, lowest: Double, highest: Double

        init(_ values: [Double]) {
            median = RelayBench.median(values)
            lowest = values.min() ?? 0
            highest = values.max() ?? 0
        }

        func text(_ format: String) -> String {
            String(format: "\(format) (\(format)–\(format))", median, lowest, highest)
        }

        /// A bench-summary row: figure, value, target, verdict, anchor, anchor's value, ratio,
        /// spread, rounds.
        func row(_ name: String, _ format: String, _ rounds: Int) -> String {
            [
                name, String(format: format, median), "-", "-", "-", "-", "-",
                String(format: "\(format)–\(format)", lowest, highest), "\(rounds)",
            ].joined(separator: "\t")
        }
    }
}
