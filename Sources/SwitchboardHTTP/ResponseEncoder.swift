import Glibc
import Synchronization

/// Serialises response heads; runs on handler tasks, not on the loop.
enum ResponseEncoder {
    /// Headers the server owns; a handler's own values for these are dropped.
    private static let managed: Set<String> = ["content-length", "transfer-encoding", "connection", "date"]

    static func head(
        status: Int, headers: HTTPHeaders, version: HTTPVersion, keepAlive: Bool,
        contentLength: Int?, chunked: Bool
    ) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(HTTPResponse.reasonPhrase(status))\r\n"
        for field in headers where !managed.contains(field.name.lowercased()) {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Date: \(HTTPDate.current())\r\n"
        if let contentLength, status >= 200, status != 204, status != 304 {
            text += "Content-Length: \(contentLength)\r\n"
        }
        if chunked { text += "Transfer-Encoding: chunked\r\n" }
        if !keepAlive {
            text += "Connection: close\r\n"
        } else if version == .http1_0 {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A complete fixed-length response.
    static func fixed(_ response: HTTPResponse, bytes: [UInt8], for head: HTTPRequestHead?, keepAlive: Bool) -> [UInt8] {
        var output = Self.head(
            status: response.status, headers: response.headers, version: head?.version ?? .http1_1,
            keepAlive: keepAlive, contentLength: bytes.count, chunked: false)
        let bodyAllowed = head?.method != "HEAD" && response.status >= 200 && response.status != 204 && response.status != 304
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
