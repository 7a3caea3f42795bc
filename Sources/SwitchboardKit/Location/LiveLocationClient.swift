import Foundation
import SwitchboardWire

/// A conversation or a group: where a live location is shared, and (as ``E2EEScope``) where an
/// E2EE device queue lives. One type for both, so the value an app keeps for a chat addresses
/// its shares and its encrypted queue alike.
public enum LiveLocationScope: Sendable, Hashable {
    /// A 1:1 conversation, by its id (from `Friend.conversationId`).
    case conversation(String)
    /// A group, by its id.
    case group(String)

    /// `/conversations/{id}` or `/groups/{id}`, the id percent-encoded.
    var path: String {
        switch self {
        case .conversation(let id): "/conversations/\(QueryEncoding.encode(id))"
        case .group(let id): "/groups/\(QueryEncoding.encode(id))"
        }
    }
}

/// A position to share: degrees and a radius of uncertainty in metres.
public struct Position: Sendable, Equatable {
    /// Degrees, −90…90.
    public var latitude: Double
    /// Degrees, −180…180.
    public var longitude: Double
    /// The radius of uncertainty in metres, 0…100000.
    public var accuracy: Double

    /// Creates the value; the server checks the ranges.
    public init(latitude: Double, longitude: Double, accuracy: Double) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
    }
}

/// A live-location failure an app handles on its own; every other failure is a
/// ``SwitchboardAPIError``.
public enum LiveLocationError: Error, Sendable, Equatable {
    /// An update came while no share runs (it expired or was stopped elsewhere): start a new
    /// one, or stop showing the share as running.
    case notSharing

    /// The server's error code this case stands for.
    public var code: ErrorCode {
        switch self {
        case .notSharing: .notSharing
        }
    }
}

/// Live location of SPEC §9 over a ``SwitchboardClient``: start, move and stop one's share
/// in a conversation or group, read the participants' shares, and the coarse city of one's
/// public address.
///
/// ```swift
/// let location = LiveLocationClient(client: client)
/// let chat = LiveLocationScope.conversation(friend.conversationId)
/// _ = try await location.start(in: chat, at: Position(latitude: 52.52, longitude: 13.40, accuracy: 15), duration: .seconds(3600))
/// do {
///     _ = try await location.update(in: chat, to: newPosition)
/// } catch LiveLocationError.notSharing {
///     // The share ended meanwhile (expired or stopped on another device).
/// }
/// for share in try await location.list(in: chat) {
///     show(share, freshness: share.freshness(at: Date()))
/// }
/// ```
public struct LiveLocationClient: Sendable {
    let client: SwitchboardClient

    /// Sends through `client` (its base URL and token).
    public init(client: SwitchboardClient) { self.client = client }

    /// Starts sharing `position` in `scope` (`POST {scope}/live-locations`); when a share
    /// already runs it starts again from now. `duration` nil: the server's default (1 h);
    /// it is sent in whole seconds (the server takes 60–28800).
    public func start(
        in scope: LiveLocationScope, at position: Position, duration: Duration? = nil
    ) async throws -> LiveLocation {
        try Self.checkFinite(position)
        let body = StartLiveLocation(
            latitude: position.latitude, longitude: position.longitude, accuracy: position.accuracy,
            durationSeconds: duration.map(Self.wholeSeconds))
        // Repeatable: a second copy restarts the same share at the same position.
        return try await mapped {
            try await client.call("POST", scope.path + "/live-locations", body: body, repeatable: true)
        }
    }

    /// Moves the running share in `scope` to `position` (`PUT {scope}/live-locations`).
    ///
    /// - Throws: ``LiveLocationError/notSharing`` when no share runs there.
    public func update(in scope: LiveLocationScope, to position: Position) async throws -> LiveLocation {
        try Self.checkFinite(position)
        let body = UpdateLiveLocation(
            latitude: position.latitude, longitude: position.longitude, accuracy: position.accuracy)
        return try await mapped {
            try await client.call("PUT", scope.path + "/live-locations", body: body, repeatable: true)
        }
    }

    /// Stops one's own share in `scope` (`DELETE {scope}/live-locations`); stopping a share
    /// that does not run is not an error.
    public func stop(in scope: LiveLocationScope) async throws {
        try await mapped { _ = try await client.send("DELETE", scope.path + "/live-locations") }
    }

    /// The running shares of the participants of `scope`, by user id.
    public func list(in scope: LiveLocationScope) async throws -> [LiveLocation] {
        let list: LiveLocationList = try await mapped { try await client.call("GET", scope.path + "/live-locations") }
        return list.liveLocations
    }

    /// One's own running shares, everywhere, by start (`GET /live-locations/mine`): what an
    /// app restores after a restart.
    public func mine() async throws -> [LiveLocation] {
        let list: LiveLocationList = try await mapped { try await client.call("GET", "/live-locations/mine") }
        return list.liveLocations
    }

    /// The coarse place of this device's public address (`GET /location/city`), never GPS;
    /// nil when the server does not know it (the server answers `null`).
    public func city() async throws -> CityLocation? {
        try await mapped { try await client.call("GET", "/location/city") }
    }

    // MARK: Helpers

    /// Runs `body`, turning the server's `NOT_SHARING` into ``LiveLocationError/notSharing``.
    private func mapped<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch let error as SwitchboardAPIError where error.code == LiveLocationError.notSharing.code {
            throw LiveLocationError.notSharing
        }
    }

    /// Rejects NaN and infinities before sending: JSON has no such numbers.
    private static func checkFinite(_ position: Position) throws {
        for (field, value) in [
            ("latitude", position.latitude), ("longitude", position.longitude), ("accuracy", position.accuracy),
        ]
        where !value.isFinite {
            throw SwitchboardAPIError(
                status: 0, code: .validationFailed, message: "\(field) must be a finite number", field: field)
        }
    }

    /// `duration` rounded to the nearest second.
    private static func wholeSeconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let rounded =
            attoseconds >= 500_000_000_000_000_000
            ? seconds + 1 : attoseconds <= -500_000_000_000_000_000 ? seconds - 1 : seconds
        return Int(clamping: rounded)
    }
}

/// How current a shared position is, for showing its age (never a static "last point").
public enum LiveLocationFreshness: Sendable, Equatable {
    /// Updated `age` seconds ago, within the stale limit.
    case fresh(age: TimeInterval)
    /// Updated `age` seconds ago, longer than the stale limit (`.infinity` when a date of the
    /// share cannot be read).
    case stale(age: TimeInterval)
    /// The share has ended by itself (`expiresAt` has passed).
    case expired
}

extension LiveLocation {
    /// How current this position is at `now`: ``LiveLocationFreshness/expired`` once
    /// `expiresAt` has passed, else its age from `updatedAt`, ``LiveLocationFreshness/stale(age:)``
    /// when older than `staleAfter` seconds. A date that cannot be read counts as stale with age
    /// `.infinity`; an `updatedAt` ahead of `now` (clock skew) counts as age 0.
    ///
    /// ```swift
    /// switch share.freshness(at: Date()) {
    /// case .fresh(let age), .stale(let age): label.text = "updated \(Int(age)) s ago"
    /// case .expired: hide(share)
    /// }
    /// ```
    public func freshness(at now: Date, staleAfter: TimeInterval = 120) -> LiveLocationFreshness {
        let expires = ISO8601Timestamp.date(from: expiresAt)
        if let expires, now >= expires { return .expired }
        guard expires != nil, let updated = ISO8601Timestamp.date(from: updatedAt) else {
            return .stale(age: .infinity)
        }
        let age = max(0, now.timeIntervalSince(updated))
        return age > staleAfter ? .stale(age: age) : .fresh(age: age)
    }
}

/// Reads ISO-8601 date-times as the server writes them (`2026-12-01T10:00:00.123Z`) and their
/// usual variants: any number of fraction digits or none, `Z` or a `±HH:MM`/`±HHMM` offset, a
/// lowercase `t`/`z` or a space for `T`. Pure arithmetic, so no formatter is shared between
/// threads and every platform reads the same.
enum ISO8601Timestamp {
    static func date(from text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2), scanner.skip("-"),
            let day = scanner.digits(2)
        else { return nil }
        guard scanner.skip("T") || scanner.skip("t") || scanner.skip(" ") else { return nil }
        guard let hour = scanner.digits(2), scanner.skip(":"), let minute = scanner.digits(2), scanner.skip(":"),
            let second = scanner.digits(2)
        else { return nil }
        var fraction = 0.0
        if scanner.skip(".") || scanner.skip(",") {
            // Up to nanoseconds, as a ratio of integers so `.250` is exactly 0.25.
            var numerator = 0, denominator = 1, count = 0
            while let digit = scanner.digit() {
                if count < 9 {
                    numerator = numerator * 10 + digit
                    denominator *= 10
                }
                count += 1
            }
            guard count > 0 else { return nil }
            fraction = Double(numerator) / Double(denominator)
        }
        var offsetSeconds = 0
        if scanner.skip("Z") || scanner.skip("z") {
            offsetSeconds = 0
        } else if let sign = scanner.sign() {
            guard let hours = scanner.digits(2) else { return nil }
            _ = scanner.skip(":")
            guard let minutes = scanner.digits(2), hours <= 23, minutes <= 59 else { return nil }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard scanner.atEnd, (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour <= 23,
            minute <= 59,
            second <= 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int? {
            guard index < bytes.count, (0x30...0x39).contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return Int(bytes[index] - 0x30)
        }

        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        /// `+1` or `-1` for a `+` or `-`, consumed.
        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
