import Foundation

/// A command-line problem: printed with a hint to `--help`, exit status 2.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// Walks a command's options the one way every command here spells them: `--flag value` or
/// `--flag=value`, boolean flags alone, no positional arguments.
///
/// ```swift
/// var scanner = ArgumentScanner(["--listen=127.0.0.1:0", "--tls"])
/// while let flag = scanner.nextFlag() {
///     switch flag {
///     case "--listen": listen = try scanner.value(for: flag)
///     case "--tls": tls = true
///     default: throw scanner.unknown(flag)
///     }
/// }
/// ```
public struct ArgumentScanner: Sendable {
    private let arguments: [String]
    private var index = 0

    public init(_ arguments: [String]) {
        // `--flag=value` is the same as `--flag value`.
        self.arguments = arguments.flatMap { argument -> [String] in
            guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return [argument] }
            return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
        }
    }

    /// The next option, or nil at the end.
    public mutating func nextFlag() -> String? {
        guard index < arguments.count else { return nil }
        defer { index += 1 }
        return arguments[index]
    }

    /// The value after `flag`; a missing one, or another option in its place, is an error.
    public mutating func value(for flag: String) throws(UsageError) -> String {
        guard index < arguments.count, !arguments[index].hasPrefix("--") else {
            throw UsageError(message: "\(flag) needs a value")
        }
        defer { index += 1 }
        return arguments[index]
    }

    /// The value after `flag` as an integer of at least 1.
    public mutating func positiveInteger(for flag: String) throws(UsageError) -> Int {
        let text = try value(for: flag)
        guard let number = Int(text), number >= 1 else {
            throw UsageError(message: "\(flag) needs a positive integer, not '\(text)'")
        }
        return number
    }

    /// The error for an option the command does not know.
    public func unknown(_ flag: String) -> UsageError { UsageError(message: "unknown option '\(flag)'") }
}

/// How a tool command starts, the same for each: `-h` or `--help` prints `help` (exit 0);
/// options that `parse` refuses with a ``UsageError`` are printed to standard error as
/// `<tool> <command>: <message>` with a hint to run `--help` (exit 2).
public enum CommandStart<Options> {
    /// Go on with these options.
    case run(Options)
    /// Return this exit status at once.
    case exit(Int32)

    public init(
        _ arguments: [String], tool: String = "switchboard-dev", command: String, help: String,
        parse: ([String]) throws(UsageError) -> Options
    ) {
        if arguments.contains("-h") || arguments.contains("--help") {
            print(help)
            self = .exit(0)
            return
        }
        do {
            self = .run(try parse(arguments))
        } catch {
            let text = "\(tool) \(command): \(error.message)\nRun '\(tool) \(command) --help' for usage.\n"
            FileHandle.standardError.write(Data(text.utf8))
            self = .exit(2)
        }
    }
}
