// Wiring only: no loop, C or async code here (top-level code is MainActor-isolated).
import Foundation
import SwitchboardAPNsEmulator
import SwitchboardDemo
import SwitchboardNetSim
import SwitchboardServer

let arguments = CommandLine.arguments
if arguments.count > 1, arguments[1] == "apns-emulator" {
    exit(APNsEmulatorCommand.run(Array(arguments.dropFirst(2))))
}
if arguments.count > 1, arguments[1] == "demo" {
    exit(DemoCommand.run(Array(arguments.dropFirst(2))))
}
if arguments.count > 2, arguments[1] == "help", arguments[2] == "apns-emulator" {
    print(APNsEmulatorCommand.help)
    exit(0)
}
if arguments.count > 1, arguments[1] == "proxy" {
    exit(ProxyCommand.run(Array(arguments.dropFirst(2))))
}
if arguments.count > 2, arguments[1] == "help", arguments[2] == "demo" {
    print(DemoCommand.help)
    exit(0)
}
if arguments.count > 2, arguments[1] == "help", arguments[2] == "proxy" {
    print(ProxyCommand.help)
    exit(0)
}
exit(CommandLineInterface.run(arguments))
