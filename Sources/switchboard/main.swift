// Wiring only: no loop or C code here. The one await hands the command line to the global
// executor (top-level code is MainActor-isolated; nothing here needs the main thread).
import Foundation
import SwitchboardAPNsEmulator
import SwitchboardDemo
import SwitchboardNetSim
import SwitchboardServer

/// Subcommands that live outside the server's own command line: how to run each, and its help.
let subcommands: [String: (run: ([String]) -> Int32, help: String)] = [
    "apns-emulator": (APNsEmulatorCommand.run, APNsEmulatorCommand.help),
    "demo": (DemoCommand.run, DemoCommand.help),
    "proxy": (ProxyCommand.run, ProxyCommand.help),
    "bench": (BenchCommand.run, BenchCommand.help),
]

let arguments = CommandLine.arguments
if arguments.count > 1, let command = subcommands[arguments[1]] {
    exit(command.run(Array(arguments.dropFirst(2))))
}
if arguments.count > 2, arguments[1] == "help", let command = subcommands[arguments[2]] {
    print(command.help)
    exit(0)
}
exit(await CommandLineInterface.run(arguments))
