/// A set of strings the server sends, as an enum that stays open: a string this version does
/// not know decodes as `unknown(String)` instead of failing, and encodes back unchanged.
///
/// A conforming enum lists its known cases in `known` and spells each in `rawValue`; decoding,
/// encoding and `init(rawValue:)` come from here (the standard library's `Codable` for
/// `RawRepresentable` strings writes a known case exactly as the server does).
///
/// ```swift
/// let state = CallState(rawValue: "ringing")     // .ringing
/// let later = CallState(rawValue: "on_hold")     // .unknown("on_hold")
/// ```
public protocol WireEnum: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == String {
    /// Every case this version knows (all but `unknown`).
    static var known: [Self] { get }
    /// A string this version does not know. Never holds one of `known`'s strings when made by
    /// `init(rawValue:)` or decoding.
    static func unknown(_ rawValue: String) -> Self
}

extension WireEnum {
    /// The known case spelled `rawValue`, else `unknown(rawValue)`; never nil.
    public init(rawValue: String) {
        self = Self.known.first { $0.rawValue == rawValue } ?? .unknown(rawValue)
    }

    /// The known case spelled `rawValue`; nil for a string this version does not know (for
    /// the places that must refuse one: a request's field, a stored value).
    public init?(knownRawValue rawValue: String) {
        guard let known = Self.known.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// Whether this is one of the known cases.
    public var isKnown: Bool { Self.known.contains { $0.rawValue == rawValue } }

    /// The wire string.
    public var description: String { rawValue }

    /// Equal when the wire strings are: `.unknown("ringing")`, made by hand, is `.ringing`.
    /// (Synthesised equality would say otherwise, while the standard library's `==` for
    /// `RawRepresentable`, which generic code picks, compares strings: this keeps both alike.)
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue == rhs.rawValue }

    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
