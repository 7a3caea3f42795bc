import SwitchboardGeo
import SwitchboardHTTP
import SwitchboardWire

/// Live location (`/conversations/{id}/live-locations`, `/groups/{id}/live-locations`,
/// `/live-locations/mine`) and the city lookup (`/location/city`), SPEC §9.
struct LocationRoutes {
    let service: LiveLocationService
    let cities: CityLookup
    let authenticator: Authenticator

    func register(in router: inout Router) {
        let auth = authenticator, service = self.service, cities = self.cities
        for (prefix, scope) in [("/conversations", MessageScope.conversation), ("/groups", MessageScope.group)] {
            router.add(
                "POST", "\(prefix)/{id}/live-locations",
                auth.require { context, principal in
                    let request = try Self.decodePosition(StartLiveLocation.self, from: context.request.body)
                    let (share, isNew) = try await service.start(
                        request, in: scope(context.parameter("id")), by: principal)
                    return .json(share, status: isNew ? 201 : 200)
                })
            router.add(
                "PUT", "\(prefix)/{id}/live-locations",
                auth.require { context, principal in
                    let request = try Self.decodePosition(UpdateLiveLocation.self, from: context.request.body)
                    return .json(try await service.update(request, in: scope(context.parameter("id")), by: principal))
                })
            router.add(
                "GET", "\(prefix)/{id}/live-locations",
                auth.require { context, principal in
                    .json(try await service.list(in: scope(context.parameter("id")), for: principal))
                })
            router.add(
                "DELETE", "\(prefix)/{id}/live-locations",
                auth.require { context, principal in
                    try await service.stop(in: scope(context.parameter("id")), by: principal)
                    return .noContent
                })
        }
        router.add(
            "GET", "/live-locations/mine",
            auth.require { _, principal in
                .json(try await service.mine(for: principal))
            })
        router.add(
            "GET", "/location/city",
            auth.require { context, _ in
                guard let match = cities.city(for: context.request) else {
                    return HTTPResponse(
                        status: 200, headers: ["Content-Type": "application/json"], body: Array("null".utf8))
                }
                return .json(CityLocation(city: match.city, countryCode: match.countryCode))
            })
    }

    /// Decodes a position body (``JSONBody`` names a field holding NaN or an infinity). A
    /// fraction or an out-of-range number where the integer `durationSeconds` belongs fails in
    /// the decoder without a path; the 400 names it all the same.
    static func decodePosition<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws(APIError) -> T {
        do {
            return try JSONBody.decode(type, from: body)
        } catch  where error.field == nil {
            if JSONBody.nonFiniteField(in: body, among: ["durationSeconds"], integer: true) != nil {
                throw APIError.validation(
                    "'durationSeconds' must be an integer from 60 to 28800", field: "durationSeconds")
            }
            throw error
        }
    }
}

/// The city of a request's public address (SPEC §9), from the configured MaxMind-format
/// database. `X-Forwarded-For` counts only when the peer is a trusted proxy
/// (``ClientAddress``). No database, an address that is private, loopback or unknown: nil.
struct CityLookup: Sendable {
    let database: CityDatabase?
    let trustedProxies: Set<String>

    func city(for request: HTTPRequest) -> CityMatch? {
        guard let database else { return nil }
        return database.city(for: ClientAddress.address(of: request, trusting: trustedProxies))
    }
}
