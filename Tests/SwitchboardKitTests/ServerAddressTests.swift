import Foundation
import Testing
import SwitchboardKit

/// What a person types into the app's server field, and the base URL it becomes.
@Suite("ServerAddress: typed addresses completed to base URLs", .timeLimit(.minutes(1)))
struct ServerAddressTests {
    /// Input → base URL, for every form the field accepts.
    static let completions: [(String, String)] = [
        // IPv4, with and without a port: plain http (a LAN address, `make run`'s port).
        ("192.168.1.20:8080", "http://192.168.1.20:8080"),
        ("192.168.1.20", "http://192.168.1.20"),
        ("10.0.0.1:443", "https://10.0.0.1"),
        ("0.0.0.0:1", "http://0.0.0.0:1"),
        ("255.255.255.255:65535", "http://255.255.255.255:65535"),
        // IPv6: in brackets with a port, bare without one; lowercased.
        ("[::1]:8080", "http://[::1]:8080"),
        ("[::1]", "http://[::1]"),
        ("[FE80::1]:9000", "http://[fe80::1]:9000"),
        ("[2001:db8::8a2e:370:7334]", "http://[2001:db8::8a2e:370:7334]"),
        ("[::ffff:192.168.1.20]:8080", "http://[::ffff:192.168.1.20]:8080"),
        ("[1:2:3:4:5:6:7:8]", "http://[1:2:3:4:5:6:7:8]"),
        ("::1", "http://[::1]"),
        ("fe80::1", "http://[fe80::1]"),
        ("abcd:ef01::1", "http://[abcd:ef01::1]"),
        ("https://[::1]:8443", "https://[::1]:8443"),
        // Public host names: https, unless a plain port is written.
        ("switchboard.example.com", "https://switchboard.example.com"),
        ("Switchboard.Example.COM", "https://switchboard.example.com"),
        ("example.com.", "https://example.com"),
        ("example.com:8080", "http://example.com:8080"),
        ("example.com:443", "https://example.com"),
        ("xn--mnchen-3ya.de", "https://xn--mnchen-3ya.de"),
        ("a-b.c-d.io", "https://a-b.c-d.io"),
        // localhost, .local and one-label names: the local network, http.
        ("localhost", "http://localhost"),
        ("localhost:8080", "http://localhost:8080"),
        ("LOCALHOST:8080", "http://localhost:8080"),
        ("app.localhost:8080", "http://app.localhost:8080"),
        ("mac-mini.local", "http://mac-mini.local"),
        ("mac-mini.local:8080", "http://mac-mini.local:8080"),
        ("raspberrypi", "http://raspberrypi"),
        ("raspberrypi:8080", "http://raspberrypi:8080"),
        // Full URLs keep their scheme; the default port is dropped, another kept.
        ("http://192.168.1.20:8080", "http://192.168.1.20:8080"),
        ("http://example.com", "http://example.com"),
        ("https://localhost:8443", "https://localhost:8443"),
        ("https://example.com:443", "https://example.com"),
        ("http://example.com:80", "http://example.com"),
        ("https://example.com:80", "https://example.com:80"),
        ("http://example.com:443", "http://example.com:443"),
        ("HTTPS://Example.com", "https://example.com"),
        ("HtTp://localhost:8080", "http://localhost:8080"),
        // Paths: the prefix is kept, trailing, doubled and "." segments go.
        ("example.com/", "https://example.com"),
        ("example.com///", "https://example.com"),
        ("example.com/switchboard", "https://example.com/switchboard"),
        ("example.com/switchboard/", "https://example.com/switchboard"),
        ("https://example.com/api/v1/", "https://example.com/api/v1"),
        ("http://example.com:80//a//b/./c/", "http://example.com/a/b/c"),
        ("192.168.1.20:8080/sb", "http://192.168.1.20:8080/sb"),
        ("[::1]:8080/sb/", "http://[::1]:8080/sb"),
        ("example.com/Case/Kept", "https://example.com/Case/Kept"),
        ("example.com/a%20b", "https://example.com/a%20b"),
        ("example.com/~me/x-y_z.1", "https://example.com/~me/x-y_z.1"),
        // Whitespace around the text.
        ("  192.168.1.20:8080  ", "http://192.168.1.20:8080"),
        ("\texample.com\n", "https://example.com"),
        (" https://example.com/ ", "https://example.com"),
    ]

    @Test(arguments: completions)
    func completesToABaseURL(input: String, expected: String) throws {
        let address = try ServerAddress(parsing: input)
        #expect(address.baseURL.absoluteString == expected)
        #expect(address.description == expected)
        // Never a trailing slash: the client appends "/auth/login" and the like.
        #expect(!address.baseURL.absoluteString.hasSuffix("/"))
    }

    /// What the app stores (the description) parses back to the same address.
    @Test(arguments: completions.map(\.0))
    func itsTextParsesBackToItself(input: String) throws {
        let address = try ServerAddress(parsing: input)
        let again = try ServerAddress(parsing: address.description)
        #expect(again.baseURL == address.baseURL)
        #expect(
            again.scheme == address.scheme && again.host == address.host && again.port == address.port
                && again.path == address.path)
        #expect(again.schemeWasWritten)
    }

    @Test func exposesItsParts() throws {
        let lan = try ServerAddress(parsing: "192.168.1.20:8080/sb/")
        #expect(lan.scheme == .http && lan.host == .ipv4("192.168.1.20") && lan.port == 8080 && lan.path == "/sb")
        #expect(!lan.schemeWasWritten && lan.host.isLocal)

        let v6 = try ServerAddress(parsing: "[FE80::1]:9000")
        #expect(v6.host == .ipv6("fe80::1") && v6.host.description == "[fe80::1]" && v6.port == 9000)

        let public_ = try ServerAddress(parsing: "https://Example.com:443/")
        #expect(
            public_.scheme == .https && public_.host == .name("example.com") && public_.port == nil
                && public_.path == "")
        #expect(public_.schemeWasWritten && !public_.host.isLocal)
        #expect(URLComponents(url: public_.baseURL, resolvingAgainstBaseURL: false)?.host == "example.com")
    }

    /// Input → the error it gives, for every kind of mistake.
    static let mistakes: [(String, ServerAddressError)] = [
        // Nothing there.
        ("", .empty),
        ("   ", .empty),
        ("\n\t", .empty),
        // Whitespace inside.
        ("192.168.1 .20", .containsWhitespace),
        ("example .com", .containsWhitespace),
        ("http://example.com/a b", .containsWhitespace),
        // Schemes other than http and https.
        ("ftp://example.com", .unsupportedScheme("ftp")),
        ("ws://example.com:8080", .unsupportedScheme("ws")),
        ("wss://example.com", .unsupportedScheme("wss")),
        ("file:///etc/passwd", .unsupportedScheme("file")),
        ("file:/etc/passwd", .unsupportedScheme("file")),
        ("mailto:bob@example.com", .unsupportedScheme("mailto")),
        ("HTTPX://example.com", .unsupportedScheme("HTTPX")),
        ("://example.com", .unsupportedScheme("")),
        ("http:/example.com", .schemeWithoutSlashes("http")),
        ("https:example.com", .schemeWithoutSlashes("https")),
        // No host.
        ("http://", .missingHost),
        ("https:///path", .missingHost),
        ("/switchboard", .missingHost),
        (":8080", .missingHost),
        // User names, queries, fragments.
        ("bob@example.com", .userInfo),
        ("http://bob:secret@example.com", .userInfo),
        ("example.com?x=1", .queryOrFragment),
        ("example.com/#top", .queryOrFragment),
        // Ports.
        ("example.com:0", .invalidPort("0")),
        ("example.com:65536", .invalidPort("65536")),
        ("192.168.1.20:70000", .invalidPort("70000")),
        ("192.168.1.20:99999999999999999999", .invalidPort("99999999999999999999")),
        ("localhost:", .invalidPort("")),
        ("localhost:http", .invalidPort("http")),
        ("example.com:80a", .invalidPort("80a")),
        ("example.com:-1", .invalidPort("-1")),
        ("example.com:+80", .invalidPort("+80")),
        ("[::1]:", .invalidPort("")),
        ("[::1]:65536", .invalidPort("65536")),
        // IPv4 that is not.
        ("192.168.1", .invalidIPv4("192.168.1")),
        ("192.168.1.256", .invalidIPv4("192.168.1.256")),
        ("192.168.1.20.5", .invalidIPv4("192.168.1.20.5")),
        ("192.168..20", .invalidIPv4("192.168..20")),
        ("192.168.01.20", .invalidIPv4("192.168.01.20")),
        ("1234.1.1.1:80", .invalidIPv4("1234.1.1.1")),
        ("192.168.1.20.", .invalidIPv4("192.168.1.20.")),
        // IPv6 that is not, or has a zone, or lacks brackets before a port.
        ("[::1", .invalidIPv6("[::1")),
        ("[1::2::3]", .invalidIPv6("1::2::3")),
        ("[12345::1]", .invalidIPv6("12345::1")),
        ("[1:2:3:4:5:6:7:8:9]", .invalidIPv6("1:2:3:4:5:6:7:8:9")),
        ("[1:2:3:4:5:6:7]", .invalidIPv6("1:2:3:4:5:6:7")),
        ("[g::1]", .invalidIPv6("g::1")),
        ("[]", .invalidIPv6("")),
        ("[fe80::1%en0]:8080", .invalidIPv6("fe80::1%en0")),
        ("[::1.2.3]", .invalidIPv6("::1.2.3")),
        ("[1.2.3.4::]", .invalidIPv6("1.2.3.4::")),
        ("[::1]8080", .invalidHost("[::1]8080")),
        ("fe80::1:8080:zz", .ipv6NeedsBrackets("fe80::1:8080:zz")),
        ("example.com:80:90", .ipv6NeedsBrackets("example.com:80:90")),
        // Host names that are not.
        ("-example.com", .invalidHost("-example.com")),
        ("example-.com", .invalidHost("example-.com")),
        ("exa_mple.com", .invalidHost("exa_mple.com")),
        ("example..com", .invalidHost("example..com")),
        (".example.com", .invalidHost(".example.com")),
        ("example.123", .invalidHost("example.123")),
        (String(repeating: "a", count: 64) + ".com", .invalidHost(String(repeating: "a", count: 64) + ".com")),
        ("münchen.de", .nonASCIIHost("münchen.de")),
        ("%%%", .invalidHost("%%%")),
        ("!!!", .invalidHost("!!!")),
        // Paths.
        ("example.com/../admin", .invalidPath("/../admin")),
        ("example.com/a/../b", .invalidPath("/a/../b")),
        ("example.com/a%2", .invalidPath("/a%2")),
        ("example.com/a%zz", .invalidPath("/a%zz")),
        ("example.com/a\"b", .invalidPath("/a\"b")),
        ("example.com/ü", .invalidPath("/ü")),
    ]

    @Test(arguments: mistakes)
    func refusesWithAReason(input: String, expected: ServerAddressError) {
        #expect(throws: expected) { try ServerAddress(parsing: input) }
    }

    /// Every error reads as a sentence for the user, and its code is stable and distinct.
    @Test func errorsSayWhatIsWrong() {
        let all = Self.mistakes.map(\.1)
        for error in all {
            #expect(error.description.count > 20, "\(error.code)")
            #expect(error.description.last == ".", "\(error.code): \(error.description)")
        }
        #expect(ServerAddressError.invalidPort("70000").description.contains("70000"))
        #expect(ServerAddressError.invalidPort("70000").description.contains("65535"))
        #expect(ServerAddressError.unsupportedScheme("ftp").description.contains("ftp"))
        #expect(ServerAddressError.invalidIPv6("fe80::1%en0").description.contains("zone"))
        #expect(ServerAddressError.invalidPort("").description.contains("must follow"))
        let codes = Set(all.map(\.code))
        #expect(codes.count == 14)
        #expect(ServerAddressError.empty.code == "EMPTY" && ServerAddressError.invalidPort("x").code == "INVALID_PORT")
    }

    /// The base URL works where the SDK uses it: request paths are appended to it, and the
    /// relay's socket path resolves under its prefix.
    @Test func baseURLServesTheClientAndTheRelay() throws {
        let address = try ServerAddress(parsing: "example.com/switchboard/")
        #expect(address.baseURL.absoluteString + "/auth/login" == "https://example.com/switchboard/auth/login")
        let socket = RelayMediaSession.socketURL("/calls/c1/audio", server: address.baseURL)
        #expect(socket?.absoluteString == "wss://example.com/switchboard/calls/c1/audio")

        let lan = try ServerAddress(parsing: "[::1]:8080")
        #expect(
            RelayMediaSession.socketURL("/calls/c1/audio", server: lan.baseURL)?.absoluteString
                == "ws://[::1]:8080/calls/c1/audio")
    }
}
