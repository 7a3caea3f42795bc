import CMaxMindDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where an address is, as far as a city database knows: either part may be missing.
public struct CityMatch: Sendable, Equatable {
    /// The city's English name (`city.names.en`), or nil when the entry has none.
    public var city: String?
    /// The ISO 3166-1 alpha-2 country code (`country.iso_code`, else
    /// `registered_country.iso_code`), or nil when the entry has neither.
    public var countryCode: String?

    /// A match with the given parts.
    public init(city: String?, countryCode: String?) {
        self.city = city
        self.countryCode = countryCode
    }
}

/// A city database that could not be opened: the path and libmaxminddb's reason.
public struct CityDatabaseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed, naming the file and quoting libmaxminddb's `MMDB_strerror` text.
    public var message: String

    /// An error with the given message.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// The one place a libmaxminddb status becomes an error; `errno` is read for the two
    /// statuses whose cause libmaxminddb leaves there.
    init(opening path: String, status: Int32, errno savedErrno: Int32) {
        var reason = String(cString: MMDB_strerror(status))
        if status == MMDB_FILE_OPEN_ERROR || status == MMDB_IO_ERROR, savedErrno != 0 {
            reason += " (\(String(cString: strerror(savedErrno))))"
        }
        self.init(message: "cannot open the MaxMind DB file \(path): \(reason)")
    }
}

/// A MaxMind DB city database (GeoIP2/GeoLite2 City or the same layout), opened once and
/// shared: it maps the file into memory and answers lookups from any thread.
///
/// ```swift
/// let database = try CityDatabase(path: "/var/lib/GeoIP/GeoLite2-City.mmdb")
/// database.city(for: "81.2.69.160")  // CityMatch(city: "London", countryCode: "GB")
/// ```
///
/// The file must not be rewritten in place while it is open (the mapping would change under
/// the lookups); replace it by renaming a new file over it and open that.
// @unchecked Sendable: every stored property is a `let` set in `init`, and nothing writes to
// `handle.pointee` after MMDB_open returns until MMDB_close in `deinit`, which runs only once no
// other reference (so no lookup) remains. MMDB_open in MMDB_MODE_MMAP maps the file read-only
// and fills the struct, including the IPv4 start node that lookups read (computed at open since
// libmaxminddb 1.3.1, GitHub #153; earlier releases set it on the first lookup, a race; this
// links 1.7.1). After that, MMDB_lookup_string takes a `const MMDB_s *` and, like
// MMDB_aget_value, only reads the struct and the mapping, writing solely to caller-owned
// out-parameters (here locals of one call: the result, the two error codes, the entry and the
// entry data). MMDB_lookup_string resolves the text with getaddrinfo(AI_NUMERICHOST) and frees
// the result, both thread-safe in glibc. The library's manual says it is thread safe given a
// thread-safe malloc and free, which glibc's are. So concurrent lookups share no mutable state.
public final class CityDatabase: @unchecked Sendable {
    /// On the heap, not a stored struct: every MMDB_entry_s a lookup returns points back at
    /// the MMDB_s, so it must stay at one address for the database's lifetime.
    private let handle: UnsafeMutablePointer<MMDB_s>

    /// The database's `metadata.database_type`, such as "GeoLite2-City".
    public let databaseType: String

    /// Opens the database at `path` (memory-mapped); throws when the file is missing,
    /// unreadable, or not a valid MaxMind DB.
    public init(path: String) throws(CityDatabaseError) {
        guard !path.utf8.contains(0) else {
            throw CityDatabaseError(message: "cannot open the MaxMind DB file \(path): the path contains a NUL byte")
        }
        let handle = UnsafeMutablePointer<MMDB_s>.allocate(capacity: 1)
        handle.initialize(to: MMDB_s())
        errno = 0
        let status = MMDB_open(path, UInt32(MMDB_MODE_MMAP), handle)
        let savedErrno = errno
        guard status == MMDB_SUCCESS else {
            // A failed MMDB_open has freed whatever it allocated; only our struct remains.
            handle.deinitialize(count: 1)
            handle.deallocate()
            throw CityDatabaseError(opening: path, status: status, errno: savedErrno)
        }
        self.handle = handle
        databaseType = handle.pointee.metadata.database_type.map { String(cString: $0) } ?? ""
    }

    deinit {
        MMDB_close(handle)
        handle.deinitialize(count: 1)
        handle.deallocate()
    }

    /// The city and country of `address`.
    ///
    /// nil when the address is not a valid IPv4/IPv6 literal, is not public (see
    /// ``AddressScope``), or the database has no entry / the entry has neither field. An
    /// IPv4-mapped IPv6 address is looked up as its IPv4 address. A value that is not a
    /// non-empty UTF-8 string counts as absent.
    public func city(for address: String) -> CityMatch? {
        guard let parsed = IPAddress(address), parsed.isPublic else { return nil }
        var gaiError: Int32 = 0
        var mmdbError: Int32 = 0
        var result = MMDB_lookup_string(handle, parsed.lookupText(original: address), &gaiError, &mmdbError)
        guard gaiError == 0, mmdbError == MMDB_SUCCESS, result.found_entry else { return nil }
        let city = Self.string(in: &result.entry, "city", "names", "en")
        let countryCode =
            Self.string(in: &result.entry, "country", "iso_code")
            ?? Self.string(in: &result.entry, "registered_country", "iso_code")
        guard city != nil || countryCode != nil else { return nil }
        return CityMatch(city: city, countryCode: countryCode)
    }

    /// The non-empty UTF-8 string at the map path `first.second[.third]` below `entry`, or nil
    /// when the path is missing, leads through something that is not a map, or ends at
    /// another type.
    private static func string(
        in entry: inout MMDB_entry_s, _ first: String, _ second: String, _ third: String? = nil
    ) -> String? {
        var data = MMDB_entry_data_s()
        let status = switchboard_mmdb_get_value(&entry, &data, first, second, third)
        guard status == MMDB_SUCCESS, data.has_data, data.type == UInt32(MMDB_DATA_TYPE_UTF8_STRING),
            let start = data.utf8_string, data.data_size > 0
        else { return nil }
        // Not NUL-terminated: data_size bytes inside the mapped data section.
        let bytes = UnsafeRawBufferPointer(start: start, count: Int(data.data_size))
        let text = String(decoding: bytes, as: UTF8.self)
        // Decoding replaced invalid sequences if the bytes differ: not a UTF-8 string.
        return text.utf8.elementsEqual(bytes) ? text : nil
    }
}
