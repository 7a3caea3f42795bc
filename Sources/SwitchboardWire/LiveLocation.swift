/// One user's live position in a conversation or a group (exactly one of the two ids is set).
/// `updatedAt` is the position's freshness: a share whose last update is old shows an old
/// position, not a current one.
public struct LiveLocation: Codable, Sendable, Equatable {
    /// Who shares.
    public var userId: String
    /// The conversation shared in, if any.
    public var conversationId: String?
    /// The group shared in, if any.
    public var groupId: String?
    /// Degrees, −90…90.
    public var latitude: Double
    /// Degrees, −180…180.
    public var longitude: Double
    /// The radius of uncertainty in metres, 0…100000.
    public var accuracy: Double
    /// When the share started (ISO-8601 UTC, milliseconds).
    public var startedAt: String
    /// When the position was last set.
    public var updatedAt: String
    /// When the share ends by itself.
    public var expiresAt: String

    /// Creates the value.
    public init(
        userId: String, conversationId: String?, groupId: String?, latitude: Double, longitude: Double,
        accuracy: Double,
        startedAt: String, updatedAt: String, expiresAt: String
    ) {
        self.userId = userId
        self.conversationId = conversationId
        self.groupId = groupId
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case userId, conversationId, groupId, latitude, longitude, accuracy, startedAt, updatedAt, expiresAt
    }

    /// Writes `null` for the scope that does not apply.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(groupId, forKey: .groupId)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encode(accuracy, forKey: .accuracy)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(expiresAt, forKey: .expiresAt)
    }
}

/// `POST …/live-locations` body: starts sharing (or starts again, from now, when already sharing).
public struct StartLiveLocation: Codable, Sendable, Equatable {
    public var latitude: Double
    public var longitude: Double
    public var accuracy: Double
    /// How long the share lasts: 60–28800 seconds, default 3600.
    public var durationSeconds: Int?

    public init(latitude: Double, longitude: Double, accuracy: Double, durationSeconds: Int? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.durationSeconds = durationSeconds
    }
}

/// `PUT …/live-locations` body: a new position for a running share.
public struct UpdateLiveLocation: Codable, Sendable, Equatable {
    public var latitude: Double
    public var longitude: Double
    public var accuracy: Double

    public init(latitude: Double, longitude: Double, accuracy: Double) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
    }
}

/// The answer of `GET …/live-locations` and `GET /live-locations/mine`: the running shares,
/// ordered by user id (a scope's) or by start (one's own).
public struct LiveLocationList: Codable, Sendable, Equatable {
    public var liveLocations: [LiveLocation]

    public init(liveLocations: [LiveLocation]) { self.liveLocations = liveLocations }
}

/// The answer of `GET /location/city`: a coarse place from the client's public address
/// (never GPS). The endpoint answers `null` instead when the address is unknown, private or
/// loopback, or no city database is configured.
public struct CityLocation: Codable, Sendable, Equatable {
    /// The city's English name, when the database has one.
    public var city: String?
    /// ISO 3166-1 alpha-2, when the database has one.
    public var countryCode: String?

    public init(city: String?, countryCode: String?) {
        self.city = city
        self.countryCode = countryCode
    }

    enum CodingKeys: String, CodingKey { case city, countryCode }

    /// Writes `null` for what is not known.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(city, forKey: .city)
        try container.encode(countryCode, forKey: .countryCode)
    }
}
