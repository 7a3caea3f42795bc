// Wiring only: no loop, C or async code here (top-level code is MainActor-isolated).
import Foundation
import SwitchboardServer

exit(CommandLineInterface.run(CommandLine.arguments))
