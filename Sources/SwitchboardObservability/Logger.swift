import Foundation
import Glibc
import Synchronization
import SwitchboardCore

/// Log severity, lowest first.
public enum LogLevel: String, Sendable, CaseIterable, Comparable, Codable, Equatable {
    case debug, info, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// A value in a log line's metadata.
public enum LogValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }

    /// `number` with three decimals (`%.3f`), written without `String(format:)`, which costs
    /// more than the rest of a log line; `null` when not finite.
    static func thousandths(_ number: Double) -> String {
        guard number.isFinite else { return "null" }
        let scaled = (abs(number) * 1000).rounded()
        guard scaled < 1e15 else { return String(format: "%.3f", number) }
        let units = Int64(scaled)
        let fraction = units % 1000
        let sign = number < 0 && units != 0 ? "-" : ""
        let padding = fraction < 10 ? "00" : fraction < 100 ? "0" : ""
        return "\(sign)\(units / 1000).\(padding)\(fraction)"
    }

    var json: String {
        switch self {
        case .string(let text): "\"\(JSONText.escape(text))\""
        case .int(let number): String(number)
        case .double(let number): Self.thousandths(number)
        case .bool(let flag): flag ? "true" : "false"
        }
    }
}

/// Where log lines go; the default is standard output.
public protocol LogSink: Sendable {
    /// Writes one complete line (with its newline).
    func write(line: String)
}

/// Writes each line with one `write(2)` to a file descriptor, under a lock.
public final class FileDescriptorLogSink: LogSink {
    private let fd: Int32
    private let lock = Mutex(())

    /// Writes to standard output.
    public static let standardOutput = FileDescriptorLogSink(fd: 1)
    /// Writes to standard error.
    public static let standardError = FileDescriptorLogSink(fd: 2)

    init(fd: Int32) { self.fd = fd }

    public func write(line: String) {
        var bytes = Array(line.utf8)
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes {
                    Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset)
                }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
        bytes.removeAll()
    }
}

/// A JSON-lines logger with fixed metadata (for example the request id).
///
/// ```swift
/// logger.info("listening", ["address": "127.0.0.1:8080"])
/// let requestLogger = logger.with(["request.id": "4f2a..."])
/// ```
public struct Logger: Sendable {
    /// The lowest level written.
    public var level: LogLevel
    private let sink: any LogSink
    private var metadata: [(String, LogValue)]

    /// Creates a logger writing at `level` and above to `sink`.
    public init(level: LogLevel = .info, sink: any LogSink = FileDescriptorLogSink.standardOutput) {
        self.level = level
        self.sink = sink
        self.metadata = []
    }

    /// A logger that adds `metadata` to every line.
    public func with(_ metadata: KeyValuePairs<String, LogValue>) -> Logger {
        var copy = self
        copy.metadata.append(contentsOf: metadata.map { ($0.key, $0.value) })
        return copy
    }

    /// Whether a line at `level` would be written.
    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.debug, message, fields)
    }
    public func info(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.warning, message, fields)
    }
    public func error(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.error, message, fields)
    }

    /// Writes an info line whatever the level: for lines that scripts depend on, such as
    /// the `listening` line that carries the bound address.
    public func announce(_ message: String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        write(.info, message, fields)
    }

    /// Writes one line: `{"ts":…,"level":…,"msg":…, metadata…, fields…}`.
    public func log(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue>) {
        guard level >= self.level else { return }
        write(level, message, fields)
    }

    private func write(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue>) {
        var line =
            "{\"ts\":\"\(Timestamp.iso8601(Date()))\",\"level\":\"\(level.rawValue)\",\"msg\":\"\(JSONText.escape(message))\""
        for (key, value) in metadata { line += ",\"\(JSONText.escape(key))\":\(value.json)" }
        for (key, value) in fields { line += ",\"\(JSONText.escape(key))\":\(value.json)" }
        line += "}\n"
        sink.write(line: line)
    }
}
