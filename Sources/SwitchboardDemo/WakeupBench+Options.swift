import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardWire
import SwitchboardTesting
import SwitchboardCore
import SwitchboardCLI
import SwitchboardAPNsEmulator

// The bench's command line: its help and how its arguments are read.
extension WakeupBench {
    public static let help = """
        Usage: switchboard-dev bench wakeup [--phones N] [--profiles LIST] [--thresholds FILE]
                                            [--out DIR] [--concurrency N] [--seed N]
                                            [--impairment model|kernel]

        Starts the server, the APNs emulator and N simulated phones in one process. Each phone
        talks to the server through the impairment proxy (see 'switchboard-dev proxy --help'),
        and each VoIP push reaches it after the same profile's downlink delay. For each profile
        in turn, half the phones call the other half (their apps not running, so only the push
        can wake them), and for each ring it measures:
          wake-up latency   from POST /calls sent by the caller to the incoming call reported
                            in the callee's (simulated) CallKit
          setup             the callee answers at once; success when both sides are connected
                            within 3 s of the answer
          push → reported   from APNs accepting the push to the incoming call reported
        It prints a progress bar, then a table per profile (p50, p95, p99 of both wake-up
        metrics, setup success rate) gated against the thresholds, a table of where the time
        goes (each step's p50 / p95), a table of the adaptive answer deadline (the SDK's
        answer deadline, adapted to the network) each callee's own requests called for as it answered, with how many answers joined
        media within it and within the fixed 10 s (reported, not gated), and writes DIR/wakeup.json (every sample) and
        DIR/wakeup-latency.svg (the latency distribution per profile). A wake-up gate that a
        profile's loss puts out of reach (the push leg alone cannot reach its p95) is reported
        and not applied.

        Options:
          --phones N          phones in all, an even number from 2 (default 200)
          --profiles LIST     comma-separated profile names (default: all five:
                              good,poor_4g,poor_3g,wifi_30_loss,wifi_50_loss)
          --thresholds FILE   JSON gates (default: p95 wake-up < 1500 ms and setup success
                              > 95 % for every profile); format:
                              {"default":{"p95WakeupMilliseconds":1500,"minimumSetupSuccessRate":0.95},
                               "profiles":{"wifi_50_loss":{…}}}
          --out DIR           where to write the results (default ./wakeup-results)
          --concurrency N     rings in flight at once (default 20)
          --seed N            seeds the proxy's and the push path's random decisions (default 1)
          --impairment WHO    model (default): the proxy simulates loss as retransmission
                              stalls; kernel: nftables drops real packets on a veth into a
                              network namespace (root, ip and nft needed), Linux's TCP
                              recovers them, the proxy adds only delay and bandwidth, and
                              pushes cross the same link on a warm connection
          -h, --help          this text

        Exit status: 0 when every profile passed its gates, 1 when one failed (or the run could
        not complete), 2 for bad options.
        """

    /// Parses the flags after `bench wakeup`.
    public static func parse(_ arguments: [String]) throws(BenchUsageError) -> Options? {
        var options = Options()
        var scanner = ArgumentScanner(arguments)
        func value(_ flag: String) throws(BenchUsageError) -> String {
            do throws(UsageError) {
                return try scanner.value(for: flag)
            } catch {
                throw BenchUsageError(error.message)
            }
        }
        func number(_ text: String, _ flag: String, _ range: ClosedRange<Int>) throws(BenchUsageError) -> Int {
            guard let number = Int(text), range.contains(number) else {
                throw BenchUsageError(
                    "\(flag) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return number
        }
        while let flag = scanner.nextFlag() {
            switch flag {
            case "-h", "--help": return nil
            case "--phones":
                options.phones = try number(try value(flag), flag, 2...10_000)
                guard options.phones % 2 == 0 else {
                    throw BenchUsageError("--phones must be even (callers and callees in pairs)")
                }
            case "--profiles":
                do {
                    options.profiles = try NetworkProfile.parseList(try value(flag))
                } catch let error as NetSimError {
                    throw BenchUsageError(error.description)
                } catch {
                    throw BenchUsageError("\(error)")
                }
            case "--thresholds": options.thresholds = try WakeupThresholds.load(path: try value(flag))
            case "--out":
                options.outDirectory = try value(flag)
                guard !options.outDirectory.isEmpty else { throw BenchUsageError("--out needs a directory") }
            case "--concurrency": options.concurrency = try number(try value(flag), flag, 1...1000)
            case "--impairment":
                let text = try value(flag)
                guard let impairment = Impairment(rawValue: text) else {
                    throw BenchUsageError("--impairment must be model or kernel, not '\(text)'")
                }
                options.impairment = impairment
            case "--seed":
                let text = try value(flag)
                guard let seed = UInt64(text) else {
                    throw BenchUsageError("--seed must be a whole number ≥ 0, not '\(text)'")
                }
                options.seed = seed
            default: throw BenchUsageError("unknown option '\(flag)' (see --help)")
            }
        }
        return options
    }
}
