import Foundation

/// `switchboard-dev bench <kind>`.
public enum BenchCommand {
    public static let help = """
        Usage: switchboard-dev bench <wakeup|relay|audio> [options]

        Benchmarks of the whole system:
          wakeup   wake-up latency and call setup over weak networks (see 'switchboard-dev bench wakeup --help')
          relay    the built-in audio relay under load, and its WebSocket path beside an
                   independent server (see 'switchboard-dev bench relay --help')
          audio    real speech through the relay over every network profile: delay, loss, SNR
                   and PESQ speech quality (see 'switchboard-dev bench audio --help')
        """

    /// The help of `bench` itself (no kind), or of one benchmark; nil for an unknown one.
    public static func help(of kind: String?) -> String? {
        switch kind {
        case nil: help
        case "wakeup": WakeupBench.help
        case "relay": RelayBench.help
        case "audio": AudioBench.help
        default: nil
        }
    }

    public static func run(_ arguments: [String]) -> Int32 {
        guard let kind = arguments.first else {
            FileHandle.standardError.write(
                Data("switchboard-dev bench: which benchmark? (wakeup, relay, audio)\n".utf8))
            return 2
        }
        switch kind {
        case "wakeup": return WakeupBench.run(Array(arguments.dropFirst()))
        case "relay": return RelayBench.run(Array(arguments.dropFirst()))
        case "audio": return AudioBench.run(Array(arguments.dropFirst()))
        case "-h", "--help", "help":
            print(help)
            return 0
        default:
            FileHandle.standardError.write(
                Data("switchboard-dev bench: unknown benchmark '\(kind)' (wakeup, relay, audio)\n".utf8))
            return 2
        }
    }
}
