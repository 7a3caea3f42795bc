// Wiring only: no loop, C or async code here (top-level code is MainActor-isolated).
// The developer tools beside the server: the demo, the benches, the weak-network proxy and the
// push emulator. The production server, `switchboard`, links none of them.
import Foundation
import SwitchboardAPNsEmulator
import SwitchboardCLI
import SwitchboardDemo
import SwitchboardNetSim
import SwitchboardServer

/// The tools, and how each runs with the arguments after its words. The overview, `help TOOL`
/// and `TOOL --help` come from the same table (`CommandLineProgram`), as the server's do.
let program = CommandLineProgram(
    name: "switchboard-dev", version: CommandLineInterface.version,
    summary: """
        switchboard-dev — Switchboard's developer tools. The server does not need them, and its
        binary, switchboard, does not contain them.
        """,
    commands: [
        .init(
            "demo", summary: "Play eight call scenarios: server, push emulator and simulated phones in one process.",
            help: DemoCommand.help),
        .init("bench", help: BenchCommand.help, listed: false),
        .init(
            "bench wakeup", summary: "Wake-up latency and call setup of simulated phones over weak networks.",
            help: BenchCommand.help(of: "wakeup")!),
        .init(
            "bench relay", summary: "The built-in audio relay under load (concurrent calls, loss, latency, CPU).",
            help: BenchCommand.help(of: "relay")!),
        .init(
            "bench audio", summary: "Real speech through the relay on every network profile: delay, loss, SNR, PESQ.",
            help: BenchCommand.help(of: "audio")!),
        .init(
            "proxy", summary: "A loopback TCP proxy that applies a weak-network profile (good, poor_3g, …).",
            help: ProxyCommand.help),
        .init(
            "push-emulator", aliases: ["apns-emulator"],
            summary: "Run local stand-ins for APNs, FCM, Huawei, Xiaomi, OPPO and vivo.", help: APNsEmulatorCommand.help
        ),
        .init(
            "phone",
            summary: "A Swift SDK phone in real time: answer or place one call, play a file, record the other side.",
            help: PhoneCommand.help),
        .init(
            "webhook-receiver",
            summary: "Receive the server's webhook deliveries, check their signatures and print them.",
            help: WebhookReceiverCommand.help),
    ],
    elsewhere: [
        "serve": "the server is 'switchboard serve'.", "backup": "it is the server's: 'switchboard backup'.",
        "copy-to-postgres": "it is the server's: 'switchboard copy-to-postgres'.",
    ])

let runs: [String: ([String]) -> Int32] = [
    "demo": DemoCommand.run,
    "bench": BenchCommand.run,
    "bench wakeup": { BenchCommand.run(["wakeup"] + $0) },
    "bench relay": { BenchCommand.run(["relay"] + $0) },
    "bench audio": { BenchCommand.run(["audio"] + $0) },
    "proxy": ProxyCommand.run,
    "push-emulator": APNsEmulatorCommand.run,
    "webhook-receiver": WebhookReceiverCommand.run,
    "phone": PhoneCommand.run,
]

switch program.resolve(Array(CommandLine.arguments.dropFirst())) {
case .print(let text, let status):
    print(text)
    exit(status)
case .fail(let message):
    FileHandle.standardError.write(Data("switchboard-dev: \(message)\n".utf8))
    exit(2)
case .run(let command, let arguments):
    exit(runs[command]?(arguments) ?? 2)
}
