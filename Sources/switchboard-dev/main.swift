// Wiring only: no loop, C or async code here (top-level code is MainActor-isolated).
// The developer tools beside the server: the demo, the wake-up bench, the weak-network proxy
// and the push emulator. The production server, `switchboard`, links none of them.
import Foundation
import SwitchboardAPNsEmulator
import SwitchboardDemo
import SwitchboardNetSim
import SwitchboardServer

/// Each tool: how to run it (with the arguments after its name), and its help.
let tools: [String: (run: ([String]) -> Int32, help: String)] = [
    "demo": (DemoCommand.run, DemoCommand.help),
    "bench": (BenchCommand.run, BenchCommand.help),
    "proxy": (ProxyCommand.run, ProxyCommand.help),
    "push-emulator": (APNsEmulatorCommand.run, APNsEmulatorCommand.help),
    "apns-emulator": (APNsEmulatorCommand.run, APNsEmulatorCommand.help),
]

let overview = """
    switchboard-dev — Switchboard's developer tools. The server does not need them, and its
    binary, switchboard, does not contain them.

    Usage: switchboard-dev <command> [options]

    Commands:
      demo           Play eight call scenarios: server, push emulator and simulated phones in one process.
      bench wakeup   Wake-up latency and call setup of simulated phones over weak networks.
      bench relay    The built-in audio relay under load (concurrent calls, loss, latency, CPU).
      proxy          A loopback TCP proxy that applies a weak-network profile (good, poor_3g, …).
      push-emulator  Run local stand-ins for APNs, FCM, Huawei, Xiaomi, OPPO and vivo (also: apns-emulator).
      version        Print the version.
      help           Show help for a command: switchboard-dev help demo

    Run 'switchboard-dev <command> --help' for a command's options.
    """

let versionHelp = "Usage: switchboard-dev version\n\nPrints the version (the same as the server's, switchboard version)."

/// A command this binary does not have: exit status 2 with a hint, as `switchboard` does.
func unknownCommand(_ name: String) -> Never {
    let hint = name == "serve" ? "The server is 'switchboard serve'." : "Run 'switchboard-dev --help' for usage."
    FileHandle.standardError.write(Data("switchboard-dev: unknown command '\(name)'\n\(hint)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case nil:
    print(overview)
    exit(2)
case "-h", "--help":
    print(overview)
case "version", "--version":
    if arguments.contains("-h") || arguments.contains("--help") {
        print(versionHelp)
    } else {
        print("switchboard-dev \(CommandLineInterface.version)")
    }
case "help":
    // `help COMMAND [SUBCOMMAND]` shows what `COMMAND [SUBCOMMAND] --help` shows.
    let asked = Array(arguments.dropFirst())
    switch asked.first {
    case nil, "-h", "--help", "help": print(overview)
    case "version": print(versionHelp)
    case "bench":
        guard let text = BenchCommand.help(of: asked.dropFirst().first) else { unknownCommand("bench \(asked[1])") }
        print(text)
    case let name?:
        guard let tool = tools[name] else { unknownCommand(name) }
        print(tool.help)
    }
case let name?:
    guard let tool = tools[name] else { unknownCommand(name) }
    exit(tool.run(Array(arguments.dropFirst())))
}
exit(0)
