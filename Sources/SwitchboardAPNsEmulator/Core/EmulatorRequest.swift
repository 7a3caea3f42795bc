/// One HTTP/2 request as the emulator received it: pseudo-headers, regular headers in arrival
/// order (names lowercase, as HTTP/2 requires), and the body.
struct EmulatorRequest: Sendable {
    var method: String
    /// The `:path` pseudo-header, query included.
    var path: String
    var headers: [APNsHeader]
    var body: [UInt8]
    /// Whether more body arrived than the emulator keeps (the rest was counted, not stored).
    var bodyOverflowed: Bool = false
    /// The body length that arrived, stored or not.
    var bodyLength: Int

    init(method: String, path: String, headers: [APNsHeader] = [], body: [UInt8] = [], bodyOverflowed: Bool = false) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.bodyOverflowed = bodyOverflowed
        self.bodyLength = body.count
    }

    /// The path without its query.
    var pathWithoutQuery: Substring {
        path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// The query items of the path (`after=3&wait=20`), percent-decoding not needed for the
    /// integers and tokens the emulator reads.
    var query: [String: String] {
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return [:] }
        var items: [String: String] = [:]
        for pair in parts[1].split(separator: "&") {
            let keyValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            items[String(keyValue[0])] = keyValue.count == 2 ? String(keyValue[1]) : ""
        }
        return items
    }

    /// Every value of header `name` (lowercase), in arrival order.
    func values(_ name: String) -> [String] {
        headers.filter { $0.name == name }.map(\.value)
    }

    /// The first value of header `name` (lowercase).
    func value(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// One header field, name lowercase.
public struct APNsHeader: Sendable, Hashable {
    /// The field name, lowercase.
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a header field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
