import Foundation

/// A server address as a person types it, completed to the base URL the SDK talks to.
///
/// People write `192.168.1.20:8080`, `switchboard.example.com`, `mac-mini.local:8080` or a
/// whole `https://example.com/switchboard/`; `ServerAddress(parsing:)` accepts all of them and
/// says precisely what is wrong with anything else. Platform neutral (Foundation only).
///
/// Completion rules, in order:
/// 1. Whitespace around the text is ignored; whitespace inside it is an error.
/// 2. A scheme, if written, must be `http` or `https` (any case). Without one, the scheme is
///    **http** when the port is written and is not 443 (a server's own plain port, as
///    `make run` listens on 8080), and when the host is an IP address, `localhost` (or a
///    `….localhost` name), a `.local` (Bonjour) name or a single label such as `mac-mini`
///    (all of them reachable only on a local network, where TLS is rarely set up).
///    Otherwise it is **https** (a public name, served behind a TLS proxy).
/// 3. The host is an IPv4 address (four decimal numbers 0–255), an IPv6 address in brackets
///    (`[fe80::1]`; without brackets only when no port follows, e.g. `::1`), or a DNS name
///    (letters, digits and hyphens per label; lowercased; a trailing dot is dropped). User
///    names (`user@host`), queries and fragments are refused.
/// 4. A port is 1–65535; the scheme's default port (80 for http, 443 for https) is dropped.
/// 5. A path is kept as the prefix the server lives under (`/switchboard`), with empty and
///    `.` segments and trailing slashes removed; `..` is refused.
///
/// ```swift
/// let address = try ServerAddress(parsing: "192.168.1.20:8080")
/// address.baseURL        // http://192.168.1.20:8080
/// try ServerAddress(parsing: "example.com/switchboard/").baseURL   // https://example.com/switchboard
/// ```
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The two schemes the server speaks.
    public enum Scheme: String, Sendable, Hashable, CaseIterable {
        /// Plain HTTP: the server's own listener on a local network.
        case http
        /// HTTP over TLS: the server behind a TLS-terminating proxy.
        case https

        /// The port a URL of this scheme means when it names none.
        public var defaultPort: Int { self == .http ? 80 : 443 }
    }

    /// The host part.
    public enum Host: Sendable, Hashable, CustomStringConvertible {
        /// A DNS name, lowercased, without a trailing dot.
        case name(String)
        /// Dotted decimal, as written (leading zeros refused).
        case ipv4(String)
        /// The address as written between the brackets, lowercased.
        case ipv6(String)

        /// The host as it appears in a URL (IPv6 in brackets).
        public var description: String {
            switch self {
            case .name(let name): name
            case .ipv4(let address): address
            case .ipv6(let address): "[\(address)]"
            }
        }

        /// Whether the host is reachable only on a local network, or is this machine: an IP
        /// address, `localhost`, a `.local` name or a name of one label.
        public var isLocal: Bool {
            switch self {
            case .ipv4, .ipv6: return true
            case .name(let name):
                return name == "localhost" || name.hasSuffix(".localhost") || name.hasSuffix(".local")
                    || !name.contains(".")
            }
        }
    }

    /// Written, or completed by the rules above.
    public let scheme: Scheme
    /// The host, normalised (lowercased; IPv6 without its brackets).
    public let host: Host
    /// The port, or nil for the scheme's default.
    public let port: Int?
    /// The prefix the server's routes live under: empty, or `/a/b` (no trailing slash).
    public let path: String
    /// Whether the scheme was written (false: completed by the rules above).
    public let schemeWasWritten: Bool
    /// The base URL: scheme, host, port when not the default, path; never a trailing slash,
    /// so `baseURL.absoluteString + "/auth/login"` is a request URL.
    public let baseURL: URL

    /// Parses an address as a person types it, or throws a ``ServerAddressError`` that says
    /// what is wrong in words a person understands.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ServerAddressError.empty }
        if trimmed.unicodeScalars.contains(where: { CharacterSet.whitespacesAndNewlines.contains($0) }) {
            throw ServerAddressError.containsWhitespace
        }

        // The scheme, if any: "name://". Text such as "localhost:8080" has no "//" and so no
        // scheme (URL parsers would take "localhost" for one).
        var rest = Substring(trimmed)
        var writtenScheme: Scheme?
        if let separator = rest.range(of: "://") {
            let name = rest[..<separator.lowerBound]
            guard let scheme = Scheme(rawValue: name.lowercased()) else {
                throw ServerAddressError.unsupportedScheme(String(name))
            }
            writtenScheme = scheme
            rest = rest[separator.upperBound...]
        } else if let colon = rest.firstIndex(of: ":") {
            // A scheme without "//": "http:/host", "https:host", "file:/x", "mailto:bob@x".
            // Anything else with one colon is host:port, so "host:abc" is a bad port.
            let name = rest[..<colon], after = rest[rest.index(after: colon)...]
            if Scheme(rawValue: name.lowercased()) != nil {
                throw ServerAddressError.schemeWithoutSlashes(String(name))
            }
            if Self.looksLikeScheme(name), after.hasPrefix("/") || after.contains("@") {
                throw ServerAddressError.unsupportedScheme(String(name))
            }
        }

        // Authority, then path; queries and fragments have no place in a base URL.
        if rest.contains("?") || rest.contains("#") { throw ServerAddressError.queryOrFragment }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let rawPath = rest[slash...]
        guard !authority.isEmpty else { throw ServerAddressError.missingHost }
        if authority.contains("@") { throw ServerAddressError.userInfo }

        let (host, port) = try Self.parseAuthority(authority)
        let path = try Self.normalizedPath(rawPath)

        let scheme: Scheme
        if let writtenScheme {
            scheme = writtenScheme
        } else if let port {
            scheme = port == 443 ? .https : .http
        } else {
            scheme = host.isLocal ? .http : .https
        }
        self.scheme = scheme
        self.host = host
        self.port = port == scheme.defaultPort ? nil : port
        self.path = path
        schemeWasWritten = writtenScheme != nil

        var text = "\(scheme.rawValue)://\(host)"
        if let port = self.port { text += ":\(port)" }
        text += path
        guard let url = URL(string: text) else { throw ServerAddressError.invalidHost(host.description) }
        baseURL = url
    }

    /// The base URL's text (what to show and to store; parsing it again gives this address).
    public var description: String { baseURL.absoluteString }

    // MARK: Parts

    /// `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` (RFC 3986 §3.1).
    private static func looksLikeScheme(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCIILetter else { return false }
        return text.unicodeScalars.allSatisfy {
            $0.isASCIILetter || $0.isASCIIDigit || "+-.".unicodeScalars.contains($0)
        }
    }

    private static func parseAuthority(_ authority: Substring) throws -> (Host, Int?) {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ServerAddressError.invalidIPv6(String(authority))
            }
            let inside = authority[authority.index(after: authority.startIndex)..<close]
            guard IPv6Syntax.isValid(inside) else { throw ServerAddressError.invalidIPv6(String(inside)) }
            let after = authority[authority.index(after: close)...]
            let port: Int?
            if after.isEmpty {
                port = nil
            } else if after.hasPrefix(":") {
                port = try parsePort(after.dropFirst())
            } else {
                throw ServerAddressError.invalidHost(String(authority))
            }
            return (.ipv6(inside.lowercased()), port)
        }
        let colons = authority.filter { $0 == ":" }.count
        if colons > 1 {
            // An IPv6 address without brackets: fine alone, but a port cannot follow it.
            guard IPv6Syntax.isValid(authority) else { throw ServerAddressError.ipv6NeedsBrackets(String(authority)) }
            return (.ipv6(authority.lowercased()), nil)
        }
        var hostText = authority
        var port: Int?
        if let colon = authority.firstIndex(of: ":") {
            hostText = authority[..<colon]
            port = try parsePort(authority[authority.index(after: colon)...])
        }
        guard !hostText.isEmpty else { throw ServerAddressError.missingHost }
        return (try parseHost(hostText), port)
    }

    private static func parsePort(_ text: Substring) throws -> Int {
        guard !text.isEmpty, text.count <= 5, text.unicodeScalars.allSatisfy(\.isASCIIDigit), let value = Int(text),
            (1...65535).contains(value)
        else { throw ServerAddressError.invalidPort(String(text)) }
        return value
    }

    private static func parseHost(_ text: Substring) throws -> Host {
        // All digits and dots: meant as an IPv4 address, so it must be a whole one.
        if text.unicodeScalars.allSatisfy({ $0.isASCIIDigit || $0 == "." }) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            let valid =
                parts.count == 4
                && parts.allSatisfy { part in
                    !part.isEmpty && part.count <= 3 && (part == "0" || !part.hasPrefix("0"))
                        && Int(part).map { $0 <= 255 } == true
                }
            guard valid else { throw ServerAddressError.invalidIPv4(String(text)) }
            return .ipv4(String(text))
        }
        guard text.unicodeScalars.allSatisfy(\.isASCII) else { throw ServerAddressError.nonASCIIHost(String(text)) }
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            !name.isEmpty && name.utf8.count <= 253
            && labels.allSatisfy { label in
                !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "-" }
            }
        guard valid else { throw ServerAddressError.invalidHost(String(text)) }
        // A name whose last label is all digits ("host.123", "10.0.0.1a.5") is no name a DNS
        // top-level domain allows, and usually a mistyped address.
        if let last = labels.last, last.unicodeScalars.allSatisfy(\.isASCIIDigit) {
            throw ServerAddressError.invalidHost(String(text))
        }
        return .name(name)
    }

    /// `/a//b/./c/` → `/a/b/c`; a segment may hold RFC 3986 `pchar`s (percent escapes
    /// included); `..` is refused rather than guessed.
    private static func normalizedPath(_ text: Substring) throws -> String {
        var segments: [Substring] = []
        for segment in text.split(separator: "/", omittingEmptySubsequences: true) {
            if segment == "." { continue }
            if segment == ".." { throw ServerAddressError.invalidPath(String(text)) }
            guard isPathSegment(segment) else { throw ServerAddressError.invalidPath(String(text)) }
            segments.append(segment)
        }
        return segments.isEmpty ? "" : "/" + segments.joined(separator: "/")
    }

    private static func isPathSegment(_ segment: Substring) -> Bool {
        let scalars = Array(segment.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "%" {
                guard index + 2 < scalars.count, scalars[index + 1].isASCIIHexDigit, scalars[index + 2].isASCIIHexDigit
                else { return false }
                index += 3
                continue
            }
            guard scalar.isASCIILetter || scalar.isASCIIDigit || "-._~!$&'()*+,;=:@".unicodeScalars.contains(scalar)
            else { return false }
            index += 1
        }
        return true
    }
}

/// Why a typed server address cannot be used; ``description`` is a sentence to show the user.
public enum ServerAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing but whitespace.
    case empty
    /// Whitespace inside the address.
    case containsWhitespace
    /// A scheme other than http and https (as written; empty for text that starts with "://").
    case unsupportedScheme(String)
    /// `http:` or `https:` without the two slashes (as written).
    case schemeWithoutSlashes(String)
    /// No host before the port or path (`:8080`, `http://`).
    case missingHost
    /// A user name (`user@host`).
    case userInfo
    /// A `?` query or a `#` fragment.
    case queryOrFragment
    /// Not a port number 1–65535 (as written).
    case invalidPort(String)
    /// Digits and dots that are no IPv4 address (as written).
    case invalidIPv4(String)
    /// Brackets around something that is no IPv6 address (as written, without brackets).
    case invalidIPv6(String)
    /// Several colons without brackets that are no IPv6 address, e.g. `fe80::1:8080:x`.
    case ipv6NeedsBrackets(String)
    /// A host name with letters outside ASCII (as written); its punycode form is accepted.
    case nonASCIIHost(String)
    /// Not a DNS name (as written).
    case invalidHost(String)
    /// A path with `..`, a bad percent escape or a character a path cannot hold (as written).
    case invalidPath(String)

    /// A stable code for logs and tests.
    public var code: String {
        switch self {
        case .empty: "EMPTY"
        case .containsWhitespace: "WHITESPACE"
        case .unsupportedScheme: "UNSUPPORTED_SCHEME"
        case .schemeWithoutSlashes: "SCHEME_WITHOUT_SLASHES"
        case .missingHost: "MISSING_HOST"
        case .userInfo: "USER_INFO"
        case .queryOrFragment: "QUERY_OR_FRAGMENT"
        case .invalidPort: "INVALID_PORT"
        case .invalidIPv4: "INVALID_IPV4"
        case .invalidIPv6: "INVALID_IPV6"
        case .ipv6NeedsBrackets: "IPV6_NEEDS_BRACKETS"
        case .nonASCIIHost: "NON_ASCII_HOST"
        case .invalidHost: "INVALID_HOST"
        case .invalidPath: "INVALID_PATH"
        }
    }

    /// What is wrong, as a sentence to show the user.
    public var description: String {
        switch self {
        case .empty:
            "Enter the server's address, for example 192.168.1.20:8080 or switchboard.example.com."
        case .containsWhitespace:
            "A server address cannot contain spaces."
        case .unsupportedScheme(let scheme):
            scheme.isEmpty
                ? "Write http:// or https:// before “://”, or leave the scheme out and start with the host."
                : "“\(scheme)” is not supported: the address must start with http:// or https://, or with the host."
        case .schemeWithoutSlashes(let scheme):
            "Write “\(scheme.lowercased())://” with two slashes, or leave the scheme out and start with the host."
        case .missingHost:
            "The address names no host. Write a host name or an IP address, for example 192.168.1.20:8080."
        case .userInfo:
            "Leave out the user name (the part before “@”): sign in on the next screen instead."
        case .queryOrFragment:
            "A server address cannot contain “?” or “#”."
        case .invalidPort(let port):
            port.isEmpty
                ? "A port number must follow the “:”."
                : "“\(port)” is not a port: a port is a number from 1 to 65535."
        case .invalidIPv4(let address):
            "“\(address)” is not an IPv4 address: it takes four numbers from 0 to 255, like 192.168.1.20."
        case .invalidIPv6(let address):
            address.contains("%")
                ? "“\(address)” has a zone id (“%…”), which a server address cannot use; use another address of the server or its name."
                : "“\(address)” is not an IPv6 address."
        case .ipv6NeedsBrackets(let text):
            "“\(text)” has more than one “:”. An IPv6 address with a port goes in brackets, like [fe80::1]:8080."
        case .nonASCIIHost(let host):
            "“\(host)” contains letters a host name cannot; write its xn-- (punycode) form or an IP address."
        case .invalidHost(let host):
            "“\(host)” is not a host name: use letters, digits, hyphens and dots, like switchboard.example.com."
        case .invalidPath(let path):
            "“\(path)” cannot be the server's path: use letters, digits and “-._~”, without “..”."
        }
    }
}

/// RFC 4291 §2.2 text forms: eight groups of 1–4 hex digits, one `::` for a run of zero
/// groups, and an IPv4 tail in the last 32 bits. Zone ids (`%en0`) are not accepted.
enum IPv6Syntax {
    static func isValid(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.isASCIIHexDigit || $0 == ":" || $0 == "." }) else {
            return false
        }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return false }
        let compressed = halves.count == 2
        var groups = 0
        for (index, half) in halves.enumerated() {
            if half.isEmpty { continue }
            let parts = half.split(separator: ":", omittingEmptySubsequences: false)
            for (position, part) in parts.enumerated() {
                let isLastOverall = index == halves.count - 1 && position == parts.count - 1
                if part.contains(".") {
                    // An IPv4 tail: only as the very last part.
                    guard isLastOverall, isIPv4(part) else { return false }
                    groups += 2
                } else {
                    guard (1...4).contains(part.count) else { return false }
                    groups += 1
                }
            }
        }
        return compressed ? groups <= 7 : groups == 8
    }

    private static func isIPv4(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.unicodeScalars.allSatisfy(\.isASCIIDigit)
                    && (part == "0" || !part.hasPrefix("0")) && Int(part).map { $0 <= 255 } == true
            }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIHexDigit: Bool { isASCIIDigit || ("a"..."f").contains(self) || ("A"..."F").contains(self) }
}
