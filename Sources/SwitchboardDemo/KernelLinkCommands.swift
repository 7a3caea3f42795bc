import Foundation
import Glibc
import Synchronization
import SwitchboardNetSim
import SwitchboardTesting

/// Where `ip` and `nft` are: the first of the usual system directories that has them.
enum Tools {
    static let directories = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]

    static func find(_ name: String) -> String? {
        directories.lazy.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Checked by ``KernelLink/availability()`` before any link is made.
    static var ip: String { find("ip") ?? "/usr/sbin/ip" }
    static var nft: String { find("nft") ?? "/usr/sbin/nft" }
}

/// Runs a short command to its end.
enum Command {
    /// Runs `executable` with `arguments` (and `input` on standard input) and returns its
    /// standard output; a failure to start or a non-zero exit throws `commandFailed` with the
    /// command line and its standard error.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], input: String? = nil) throws(KernelLinkError) -> String
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let inputPipe = input == nil ? nil : Pipe()
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        do {
            try ProcessLauncher.run(process)
        } catch {
            throw KernelLinkError(.commandFailed, "cannot start \(shown(executable, arguments)): \(error)")
        }
        if let inputPipe, let input {
            // The scripts are a few hundred bytes: well within a pipe's buffer, so this never
            // waits for the command to read.
            inputPipe.fileHandleForWriting.write(Data(input.utf8))
            try? inputPipe.fileHandleForWriting.close()
        }
        // The outputs are short (an address list at most), so reading one after the other
        // cannot fill the other pipe and stall the command.
        let standardOutput = output.fileHandleForReading.readDataToEndOfFile()
        let standardError = errors.fileHandleForReading.readDataToEndOfFile()
        ended.wait()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let text = String(decoding: standardError, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw KernelLinkError(
                .commandFailed,
                "\(shown(executable, arguments)) failed (status \(process.terminationStatus)): \(text.isEmpty ? "no message" : text)"
            )
        }
        return String(decoding: standardOutput, as: UTF8.self)
    }

    static func shown(_ executable: String, _ arguments: [String]) -> String {
        ([executable] + arguments).map { $0.contains(" ") || $0.contains("\n") ? "'\($0.prefix(60))…'" : $0 }.joined(
            separator: " ")
    }
}
