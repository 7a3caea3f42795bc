import Glibc
import Synchronization

/// Serialises response heads; runs on handler tasks, not on the loop.
enum ResponseEncoder {
    /// Headers the server owns; a handler's own values for these are dropped.
    private static func isManaged(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: HTTPHeaders.equalsIgnoringCase(name, "Date")
        case 10: HTTPHeaders.equalsIgnoringCase(name, "Connection")
        case 14: HTTPHeaders.equalsIgnoringCase(name, "Content-Length")
        case 17: HTTPHeaders.equalsIgnoringCase(name, "Transfer-Encoding")
        default: false
        }
    }

    static func head(
        status: Int, headers: HTTPHeaders, version: HTTPVersion, keepAlive: Bool,
        contentLength: Int?, chunked: Bool, extraCapacity: Int = 0
    ) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256 + extraCapacity)
        func append(_ text: String) { output.append(contentsOf: text.utf8) }
        append("HTTP/1.1 ")
        append(String(status))
        append(" ")
        append(HTTPResponse.reasonPhrase(status))
        append("\r\n")
        for field in headers where !isManaged(field.name) {
            append(field.name)
            append(": ")
            append(field.value)
            append("\r\n")
        }
        append("Date: ")
        append(HTTPDate.current())
        append("\r\n")
        if let contentLength, status >= 200, status != 204, status != 304 {
            append("Content-Length: ")
            append(String(contentLength))
            append("\r\n")
        }
        if chunked { append("Transfer-Encoding: chunked\r\n") }
        if status == 101 {
            append("Connection: Upgrade\r\n")
        } else if !keepAlive {
            append("Connection: close\r\n")
        } else if version == .http1_0 {
            append("Connection: keep-alive\r\n")
        }
        append("\r\n")
        return output
    }

    /// A complete fixed-length response.
    static func fixed(_ response: HTTPResponse, bytes: [UInt8], for head: HTTPRequestHead?, keepAlive: Bool) -> [UInt8]
    {
        var output = Self.head(
            status: response.status, headers: response.headers, version: head?.version ?? .http1_1,
            keepAlive: keepAlive, contentLength: bytes.count, chunked: false, extraCapacity: bytes.count)
        let bodyAllowed =
            head?.method != "HEAD" && response.status >= 200 && response.status != 204 && response.status != 304
        if bodyAllowed { output.append(contentsOf: bytes) }
        return output
    }
}

/// The `Date` header value, formatted at most once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static func current() -> String {
        let now = time(nil)
        if let cached = cache.withLock({ $0.second == now ? $0.text : nil }) { return cached }
        var t = now
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        let text = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        cache.withLock { $0 = (now, text) }
        return text
    }
}
