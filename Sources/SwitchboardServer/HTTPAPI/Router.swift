import SwitchboardHTTP
import SwitchboardObservability

/// What a route handler gets: the request, its path parameters, and a logger carrying the
/// request id.
public struct RequestContext: Sendable {
    /// The request.
    public let request: HTTPRequest
    /// Path parameters by name, percent-decoded.
    public let parameters: [String: String]
    /// The request id (also sent back as `X-Request-Id`).
    public let requestID: String
    /// A logger whose every line carries `request.id`.
    public let logger: Logger

    /// A path parameter that the route pattern guarantees.
    public func parameter(_ name: String) -> String {
        guard let value = parameters[name] else { preconditionFailure("route has no parameter \(name)") }
        return value
    }
}

/// A route handler: returns a response or throws an `APIError` (anything else becomes a 500).
public typealias RouteHandler = @Sendable (RequestContext) async throws -> HTTPResponse

/// Method + path-pattern routing. Patterns are `/literal/{parameter}/...`; a `GET` route also
/// answers `HEAD`. Built once before the server starts, then only read.
///
/// ```swift
/// var router = Router()
/// router.add("GET", "/calls/{id}") { context in ... context.parameter("id") ... }
/// ```
public struct Router: Sendable {
    /// One registered route.
    public struct Route: Sendable {
        /// The method it answers.
        public let method: String
        /// The pattern as written, used as the metrics label.
        public let pattern: String
        /// The most body bytes the route reads, when lower than the server's limit.
        public let maxBodyBytes: Int?
        fileprivate let segments: [Segment]
        fileprivate let handler: RouteHandler
    }

    fileprivate enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// The outcome of matching a request.
    public enum Match: Sendable {
        case found(Route, parameters: [String: String], handler: RouteHandler)
        case methodNotAllowed(allowed: [String])
        case notFound
        case badPath
    }

    /// Every route, in registration order.
    public private(set) var routes: [Route] = []
    /// Indices into `routes` by segment count: a path is compared only with patterns as long.
    private var routesBySegmentCount: [Int: [Int]] = [:]

    /// Creates an empty router.
    public init() {}

    /// A body limit for routes whose bodies are a few short fields (sign-in): a larger body is
    /// refused with 413 before it is read.
    public static let smallBodyBytes = 8 * 1024

    /// Adds a route, reading bodies of at most `maxBodyBytes` (the server's limit when `nil`).
    /// Registering the same method and pattern twice is a programmer error.
    public mutating func add(
        _ method: String, _ pattern: String, maxBodyBytes: Int? = nil, _ handler: @escaping RouteHandler
    ) {
        precondition(pattern.hasPrefix("/"), "route patterns start with /")
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        precondition(
            !routes.contains { $0.method == method && $0.segments == segments }, "duplicate route \(method) \(pattern)")
        routesBySegmentCount[segments.count, default: []].append(routes.count)
        routes.append(
            Route(method: method, pattern: pattern, maxBodyBytes: maxBodyBytes, segments: segments, handler: handler))
    }

    /// Finds the route for a method and a (percent-encoded) path.
    ///
    /// Runs for every request: only patterns with as many segments are compared, without
    /// copying them, and the parameters are collected for the winner alone.
    public func match(method: String, path: String) -> Match {
        let rawSegments = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        var segments: [String] = []
        segments.reserveCapacity(rawSegments.count)
        for raw in rawSegments {
            guard let decoded = PercentDecoding.decode(Substring(raw)) else { return .badPath }
            segments.append(decoded)
        }
        // The most specific route wins: at the first segment where two candidates differ, a
        // literal beats a parameter, so `/calls/active` is found before `/calls/{id}` whatever
        // the registration order.
        var best: Int?
        var allowed: [String] = []
        for index in routesBySegmentCount[segments.count] ?? [] where Self.fits(routes[index].segments, segments) {
            let route = routes[index]
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                if best == nil || Self.isMoreSpecific(route, than: routes[best!]) { best = index }
            } else {
                allowed.append(route.method)
                if route.method == "GET" { allowed.append("HEAD") }
            }
        }
        if let best {
            let route = routes[best]
            var parameters: [String: String] = [:]
            for (part, segment) in zip(route.segments, segments) {
                if case .parameter(let name) = part { parameters[name] = segment }
            }
            return .found(route, parameters: parameters, handler: route.handler)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    private static func isMoreSpecific(_ candidate: Route, than current: Route) -> Bool {
        for (a, b) in zip(candidate.segments, current.segments) {
            switch (a, b) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        // An exact method match beats HEAD answered by GET.
        return candidate.method != "GET" && current.method == "GET"
    }

    /// Whether `segments` (as many as the pattern's) fit the pattern: literals equal, parameters
    /// not empty.
    private static func fits(_ pattern: [Segment], _ segments: [String]) -> Bool {
        for (part, segment) in zip(pattern, segments) {
            switch part {
            case .literal(let text): if text != segment { return false }
            case .parameter: if segment.isEmpty { return false }
            }
        }
        return true
    }
}
