import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit

/// One request as a ``ScriptedTransport`` received it.
struct RecordedRequest: Sendable {
    let method: String
    /// Percent-encoded, as on the wire.
    let path: String
    /// Percent-encoded, as on the wire; nil without one.
    let query: String?
    let body: Data?
    let repeatable: Bool

    /// `METHOD /path?query`.
    var line: String { "\(method) \(path)" + (query.map { "?" + $0 } ?? "") }

    /// The query's decoded value of `name`.
    func queryValue(_ name: String) -> String? {
        var parts = URLComponents()
        parts.percentEncodedQuery = query
        return parts.queryItems?.first { $0.name == name }?.value
    }

    /// The body as a JSON object.
    func jsonBody() -> [String: Any]? {
        body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }
}

/// Answers each request with what `respond` says (a status and a JSON body, or a thrown
/// transport failure) and records every request. Shared by the live-location and E2EE tests.
final class ScriptedTransport: HTTPTransport {
    typealias Responder = @Sendable (RecordedRequest) throws -> (status: Int, body: String)

    private let respond: Responder
    private let log = Mutex<[RecordedRequest]>([])

    init(_ respond: @escaping Responder) { self.respond = respond }

    /// Answers every request alike.
    convenience init(status: Int = 200, body: String) {
        self.init { _ in (status, body) }
    }

    var requests: [RecordedRequest] { log.withLock { $0 } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await send(request, repeatable: false)
    }

    func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse) {
        let url = try #require(request.url)
        let parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let recorded = RecordedRequest(
            method: request.httpMethod ?? "GET", path: parts?.percentEncodedPath ?? "",
            query: parts?.percentEncodedQuery,
            body: request.httpBody, repeatable: repeatable)
        log.withLock { $0.append(recorded) }
        let (status, body) = try respond(recorded)
        let response = try #require(
            HTTPURLResponse(
                url: url, statusCode: status, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/json"]))
        return (Data(body.utf8), response)
    }
}

/// The server's error envelope.
func errorBody(_ code: String, field: String? = nil) -> String {
    let field = field.map { #","field":"\#($0)""# } ?? ""
    return #"{"error":{"code":"\#(code)","message":"refused"\#(field)}}"#
}

func makeClient(_ transport: ScriptedTransport) -> SwitchboardClient {
    SwitchboardClient(baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: transport)
}

/// Live location over a scripted server: the request each method sends, how answers and
/// errors come back, and how fresh a shared position is.
@Suite("LiveLocationClient", .timeLimit(.minutes(1)))
struct LiveLocationClientTests {
    static let share = LiveLocation(
        userId: "u1", conversationId: "c/1 +x", groupId: nil, latitude: 52.52, longitude: 13.405, accuracy: 15,
        startedAt: "2026-12-01T10:00:00.000Z", updatedAt: "2026-12-01T10:05:00.250Z",
        expiresAt: "2026-12-01T11:00:00.000Z")

    static func json(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    static let here = Position(latitude: 52.52, longitude: 13.405, accuracy: 15)

    // MARK: Requests

    /// Start posts the position and whole seconds of duration to the scope's path, the id
    /// percent-encoded (`/` and `+` included); without a duration none is sent.
    @Test func startPostsThePositionToTheScopesPath() async throws {
        let transport = ScriptedTransport(status: 201, body: try Self.json(Self.share))
        let location = LiveLocationClient(client: makeClient(transport))
        let started = try await location.start(
            in: .conversation("c/1 +x"), at: Self.here, duration: .milliseconds(900_600))
        #expect(started == Self.share)
        let sent = try #require(transport.requests.first)
        #expect(sent.line == "POST /conversations/c%2F1%20%2Bx/live-locations")
        #expect(sent.repeatable)
        let body = try #require(sent.jsonBody())
        #expect(
            body["latitude"] as? Double == 52.52 && body["longitude"] as? Double == 13.405
                && body["accuracy"] as? Double == 15)
        #expect(body["durationSeconds"] as? Int == 901)

        _ = try await location.start(in: .group("g 2"), at: Self.here)
        let again = try #require(transport.requests.last)
        #expect(again.line == "POST /groups/g%202/live-locations")
        #expect(again.jsonBody()?.keys.contains("durationSeconds") == false)
        #expect(transport.requests.count == 2)
    }

    /// Update puts the new position; the answer is the moved share.
    @Test func updatePutsTheNewPosition() async throws {
        let transport = ScriptedTransport(body: try Self.json(Self.share))
        let location = LiveLocationClient(client: makeClient(transport))
        let moved = try await location.update(
            in: .group("g+1"), to: Position(latitude: -33.9, longitude: 151.2, accuracy: 0))
        #expect(moved.updatedAt == Self.share.updatedAt)
        let sent = try #require(transport.requests.first)
        #expect(sent.line == "PUT /groups/g%2B1/live-locations")
        let body = try #require(sent.jsonBody())
        #expect(
            body["latitude"] as? Double == -33.9 && body["longitude"] as? Double == 151.2
                && body["accuracy"] as? Double == 0)
        #expect(body.count == 3)
    }

    /// List and mine read the shares; stop deletes one's own (204, empty body).
    @Test func listMineAndStop() async throws {
        let other = LiveLocation(
            userId: "u2", conversationId: nil, groupId: "g", latitude: 1, longitude: 2, accuracy: 3,
            startedAt: "2026-12-01T09:00:00.000Z", updatedAt: "2026-12-01T09:00:00.000Z",
            expiresAt: "2026-12-01T10:00:00.000Z")
        let listing = try Self.json(LiveLocationList(liveLocations: [Self.share, other]))
        let transport = ScriptedTransport { request in
            request.method == "DELETE" ? (204, "") : (200, listing)
        }
        let location = LiveLocationClient(client: makeClient(transport))

        let shares = try await location.list(in: .conversation("c 1"))
        #expect(shares.count == 2)
        #expect(shares.first?.userId == "u1" && shares.last?.groupId == "g")
        #expect(transport.requests.last?.line == "GET /conversations/c%201/live-locations")

        let mine = try await location.mine()
        #expect(mine.count == 2)
        #expect(transport.requests.last?.line == "GET /live-locations/mine")

        try await location.stop(in: .group("g/1"))
        let stop = try #require(transport.requests.last)
        #expect(stop.line == "DELETE /groups/g%2F1/live-locations" && stop.body == nil)
        #expect(transport.requests.allSatisfy { $0.body == nil })
    }

    /// The city is an object, or nil when the server answers the JSON literal `null`.
    @Test(arguments: [
        ("null", nil), ("null\n", nil),
        (#"{"city":"Berlin","countryCode":"DE"}"#, CityLocation(city: "Berlin", countryCode: "DE")),
        (#"{"city":null,"countryCode":"NZ"}"#, CityLocation(city: nil, countryCode: "NZ")),
    ])
    func cityIsNilWhenUnknown(body: String, expected: CityLocation?) async throws {
        let transport = ScriptedTransport(body: body)
        let city = try await LiveLocationClient(client: makeClient(transport)).city()
        #expect(city == expected)
        #expect(transport.requests.map(\.line) == ["GET /location/city"])
    }

    // MARK: Errors

    /// An update with no running share is `.notSharing`, which an app can catch by case.
    @Test func updateWithoutAShareIsNotSharing() async throws {
        let transport = ScriptedTransport(status: 409, body: errorBody("NOT_SHARING"))
        let location = LiveLocationClient(client: makeClient(transport))
        await #expect(throws: LiveLocationError.notSharing) {
            _ = try await location.update(in: .conversation("c"), to: Self.here)
        }
        var caught = false
        do {
            _ = try await location.update(in: .conversation("c"), to: Self.here)
        } catch LiveLocationError.notSharing {
            caught = true
        }
        #expect(caught)
        #expect(LiveLocationError.notSharing.code == .notSharing && ErrorCode.notSharing.rawValue == "NOT_SHARING")
    }

    /// Other refusals stay `SwitchboardAPIError`s with the server's status, code and field.
    @Test(arguments: [
        (403, "NOT_FRIENDS", nil), (403, "BLOCKED", nil), (404, "NOT_FOUND", nil),
        (400, "VALIDATION_FAILED", "latitude"),
    ])
    func otherRefusalsAreAPIErrors(status: Int, code: String, field: String?) async throws {
        let transport = ScriptedTransport(status: status, body: errorBody(code, field: field))
        let location = LiveLocationClient(client: makeClient(transport))
        let error = await #expect(throws: SwitchboardAPIError.self) {
            _ = try await location.start(in: .group("g"), at: Self.here)
        }
        #expect(error?.status == status && error?.code.rawValue == code && error?.field == field)
    }

    /// A coordinate that is not a finite number is refused before anything is sent, naming it.
    @Test(arguments: [
        (Position(latitude: .nan, longitude: 0, accuracy: 1), "latitude"),
        (Position(latitude: 0, longitude: .infinity, accuracy: 1), "longitude"),
        (Position(latitude: 0, longitude: 0, accuracy: -.infinity), "accuracy"),
    ])
    func nonFiniteCoordinatesAreRefusedLocally(position: Position, field: String) async throws {
        let transport = ScriptedTransport(body: try Self.json(Self.share))
        let location = LiveLocationClient(client: makeClient(transport))
        let started = await #expect(throws: SwitchboardAPIError.self) {
            _ = try await location.start(in: .conversation("c"), at: position)
        }
        #expect(started?.status == 0 && started?.code == .validationFailed && started?.field == field)
        let updated = await #expect(throws: SwitchboardAPIError.self) {
            _ = try await location.update(in: .conversation("c"), to: position)
        }
        #expect(updated?.field == field)
        #expect(transport.requests.isEmpty)
    }

    // MARK: Freshness

    static func sharing(updatedAt: String, expiresAt: String = "2026-12-01T11:00:00.000Z") -> LiveLocation {
        var share = Self.share
        share.updatedAt = updatedAt
        share.expiresAt = expiresAt
        return share
    }

    /// 2026-12-01T10:05:00.250Z.
    static let updated = Date(timeIntervalSince1970: 1_796_119_500.25)

    /// The age counts from `updatedAt`, to the millisecond; past `staleAfter` it is stale.
    @Test func freshnessFollowsTheAgeOfTheLastUpdate() {
        #expect(Self.share.freshness(at: Self.updated) == .fresh(age: 0))
        #expect(Self.share.freshness(at: Self.updated + 30) == .fresh(age: 30))
        #expect(Self.share.freshness(at: Self.updated + 120) == .fresh(age: 120))
        #expect(Self.share.freshness(at: Self.updated + 121) == .stale(age: 121))
        #expect(Self.share.freshness(at: Self.updated + 40, staleAfter: 10) == .stale(age: 40))
        // An update stamped ahead of this device's clock is as fresh as can be.
        #expect(Self.share.freshness(at: Self.updated - 5) == .fresh(age: 0))
    }

    /// Once `expiresAt` has passed the share is expired, however recent its last update.
    @Test func aShareExpiresAtItsEnd() {
        let ends = Date(timeIntervalSince1970: 1_796_122_800)  // 2026-12-01T11:00:00Z
        #expect(Self.share.freshness(at: ends - 0.5) == .stale(age: ends.timeIntervalSince(Self.updated) - 0.5))
        #expect(Self.share.freshness(at: ends) == .expired)
        #expect(Self.share.freshness(at: ends + 3600) == .expired)
        let justMoved = Self.sharing(updatedAt: "2026-12-01T10:59:59.000Z")
        #expect(justMoved.freshness(at: ends + 1) == .expired)
    }

    /// The usual ISO-8601 spellings read alike: no fraction, more digits, an offset.
    @Test(arguments: [
        "2026-12-01T10:05:00.250Z", "2026-12-01T10:05:00.25Z", "2026-12-01T10:05:00.250000Z",
        "2026-12-01t10:05:00.250z",
        "2026-12-01T12:05:00.250+02:00", "2026-12-01T05:05:00.250-0500", "2026-12-01 10:05:00.250Z",
    ])
    func datesParseRobustly(updatedAt: String) {
        #expect(Self.sharing(updatedAt: updatedAt).freshness(at: Self.updated + 10) == .fresh(age: 10))
        #expect(Self.sharing(updatedAt: "2026-12-01T10:05:00Z").freshness(at: Self.updated) == .fresh(age: 0.25))
    }

    /// A date that cannot be read counts as stale with an infinite age (never as fresh).
    @Test(arguments: [
        ("yesterday", "2026-12-01T11:00:00.000Z"), ("", "2026-12-01T11:00:00.000Z"),
        ("2026-13-01T10:05:00.000Z", "2026-12-01T11:00:00.000Z"),
        ("2026-02-30T10:05:00.000Z", "2026-12-01T11:00:00.000Z"),
        ("2026-12-01T10:05:00.000", "2026-12-01T11:00:00.000Z"),
        ("2026-12-01T10:05:00.Z", "2026-12-01T11:00:00.000Z"),
        ("2026-12-01T10:05:00.000Zjunk", "2026-12-01T11:00:00.000Z"),
        ("2026-12-01T10:05:00.250Z", "soon"),
    ])
    func unreadableDatesAreStale(updatedAt: String, expiresAt: String) {
        #expect(
            Self.sharing(updatedAt: updatedAt, expiresAt: expiresAt).freshness(at: Self.updated + 1)
                == .stale(age: .infinity))
    }
}
