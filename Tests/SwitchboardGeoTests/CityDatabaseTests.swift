import Foundation
import SwitchboardGeo
import SwitchboardTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct CityDatabaseTests {
    // MARK: - Hits and misses

    @Test func anIPv4AddressFindsItsNetworksCity() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        try writer.insertCity(network: "2.125.160.216/29", city: "Boxford", countryCode: "GB")
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: "London", countryCode: "GB"))
            #expect(database.city(for: "81.2.69.0") == CityMatch(city: "London", countryCode: "GB"))
            #expect(database.city(for: "81.2.69.255") == CityMatch(city: "London", countryCode: "GB"))
            #expect(database.city(for: "2.125.160.219") == CityMatch(city: "Boxford", countryCode: "GB"))
            #expect(database.city(for: "2.125.160.224") == nil)
        }
    }

    @Test func anIPv6AddressFindsItsNetworksCity() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "2001:480::/32", city: "San Diego", countryCode: "US")
        try withDatabase(writer) { database in
            #expect(database.city(for: "2001:480::1") == CityMatch(city: "San Diego", countryCode: "US"))
            #expect(
                database.city(for: "2001:480:ffff:ffff:ffff:ffff:ffff:ffff")
                    == CityMatch(city: "San Diego", countryCode: "US"))
            #expect(database.city(for: "2001:481::1") == nil)
        }
    }

    @Test(arguments: [false, true])
    func aMoreSpecificNetworkOverridesABroaderOne(specificFirst: Bool) throws {
        var writer = MMDBWriter()
        let broad = { (writer: inout MMDBWriter) in
            try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        }
        let specific = { (writer: inout MMDBWriter) in
            try writer.insertCity(network: "81.2.69.160/27", city: "Westminster", countryCode: "GB")
        }
        if specificFirst {
            try specific(&writer)
            try broad(&writer)
        } else {
            try broad(&writer)
            try specific(&writer)
        }
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160")?.city == "Westminster")
            #expect(database.city(for: "81.2.69.191")?.city == "Westminster")
            #expect(database.city(for: "81.2.69.159")?.city == "London")
            #expect(database.city(for: "81.2.69.192")?.city == "London")
        }
    }

    @Test func anAddressInNoNetworkHasNoMatch() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.70.1") == nil)
            #expect(database.city(for: "175.16.199.0") == nil)
            #expect(database.city(for: "2001:480::1") == nil)
        }
    }

    // MARK: - Addresses that are never looked up

    /// A database that covers every address, so a nil below can only come from the scope check.
    private static func everywhere() throws -> MMDBWriter {
        var writer = MMDBWriter()
        try writer.insertCity(network: "::/0", city: "Everywhere v6", countryCode: "ZZ")
        try writer.insertCity(network: "0.0.0.0/0", city: "Everywhere v4", countryCode: "ZZ")
        return writer
    }

    @Test(arguments: [
        "10.0.0.1", "172.16.5.4", "192.168.1.1", "127.0.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
        "255.255.255.255", "192.0.2.1", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
        "::ffff:10.0.0.1", "::ffff:127.0.0.1",
    ])
    func aNonPublicAddressHasNoMatchEvenWhenCovered(address: String) throws {
        try withDatabase(Self.everywhere()) { database in
            #expect(database.city(for: "81.2.69.160")?.city == "Everywhere v4")
            #expect(database.city(for: "2001:480::1")?.city == "Everywhere v6")
            #expect(database.city(for: address) == nil)
        }
    }

    @Test(arguments: [
        "", "not an ip", "1.2.3", "81.2.69.160:443", "[2001:480::1]", " 81.2.69.160", "81.2.69.160\0",
        "2001:480::1%eth0", "81.2.69.0/24",
    ])
    func textThatIsNotAnAddressHasNoMatch(text: String) throws {
        try withDatabase(Self.everywhere()) { database in
            #expect(database.city(for: text) == nil)
        }
    }

    @Test func anIPv4MappedAddressIsLookedUpAsItsIPv4Address() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        try withDatabase(writer) { database in
            #expect(database.city(for: "::ffff:81.2.69.160") == CityMatch(city: "London", countryCode: "GB"))
            #expect(database.city(for: "::ffff:5102:45a0") == CityMatch(city: "London", countryCode: "GB"))
        }
    }

    // MARK: - Entry shapes

    @Test func anEntryWithOnlyACountryHasNoCity() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: nil, countryCode: "GB")
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: nil, countryCode: "GB"))
        }
    }

    @Test func anEntryWithOnlyACityHasNoCountry() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: nil)
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: "London", countryCode: nil))
        }
    }

    @Test func anEntryWithNeitherFieldHasNoMatch() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: nil, countryCode: nil)
        try writer.insert(network: "2.125.160.0/24", value: .string("not a map"))
        try writer.insert(
            network: "175.16.199.0/24",
            value: .map([
                ("continent", .map([("code", .string("AS"))])), ("location", .map([("latitude", .double(43.88))])),
            ]))
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == nil)
            #expect(database.city(for: "2.125.160.216") == nil)
            #expect(database.city(for: "175.16.199.1") == nil)
        }
    }

    @Test func aValueThatIsNotAStringCountsAsAbsent() throws {
        var writer = MMDBWriter()
        try writer.insert(
            network: "81.2.69.0/24",
            value: .map([
                ("city", .map([("names", .map([("en", .uint32(2_643_743))]))])),
                ("country", .map([("iso_code", .string("GB"))])),
            ]))
        try writer.insert(
            network: "2.125.160.0/24",
            value: .map([
                ("city", .map([("names", .string("Boxford"))])),
                ("country", .map([("iso_code", .bool(true))])),
            ]))
        try writer.insert(
            network: "175.16.199.0/24",
            value: .map([
                ("city", .map([("names", .map([("en", .string(""))]))])),
                ("country", .array([.string("CN")])),
            ]))
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: nil, countryCode: "GB"))
            #expect(database.city(for: "2.125.160.216") == nil)
            #expect(database.city(for: "175.16.199.1") == nil)
        }
    }

    @Test func aStringThatIsNotValidUTF8CountsAsAbsent() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "Zürich", countryCode: "CH")
        var bytes = writer.bytes()
        // "ü" is C3 BC; C3 followed by "!" is not UTF-8. The string keeps its length.
        let lead = try #require(bytes.indices.dropLast().first { bytes[$0] == 0xC3 && bytes[$0 + 1] == 0xBC })
        bytes[lead + 1] = UInt8(ascii: "!")
        try withDatabase(bytes: bytes) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: nil, countryCode: "CH"))
        }
    }

    @Test func theRegisteredCountryStandsInForAMissingCountry() throws {
        var writer = MMDBWriter()
        try writer.insert(
            network: "81.2.69.0/24",
            value: .map([
                ("city", .map([("names", .map([("en", .string("London"))]))])),
                ("registered_country", .map([("iso_code", .string("DE"))])),
            ]))
        try writer.insert(
            network: "2.125.160.0/24",
            value: .map([
                ("registered_country", .map([("iso_code", .string("DE"))])),
                ("country", .map([("iso_code", .string("GB"))])),
            ]))
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: "London", countryCode: "DE"))
            #expect(database.city(for: "2.125.160.216") == CityMatch(city: nil, countryCode: "GB"))
        }
    }

    /// Lengths on each side of the format's size encodings (inline below 29, then 1, 2 and 3
    /// extra bytes from 29, 285 and 65,821), with names that are not all ASCII.
    @Test(arguments: [1, 28, 29, 30, 284, 285, 286, 65_820, 65_821, 65_822, 70_000])
    func aCityNameOfAnyLengthReadsBack(length: Int) throws {
        let name = String(repeating: "é", count: length / 2) + String(repeating: "a", count: length % 2)
        #expect(name.utf8.count == length)
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: name, countryCode: "GB")
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: name, countryCode: "GB"))
        }
    }

    @Test func aMapWithManyKeysReadsBack() throws {
        let filler = (0..<300).map { ("key\($0)", MMDBWriter.Value.uint16(UInt16($0))) }
        var writer = MMDBWriter()
        try writer.insert(
            network: "81.2.69.0/24",
            value: .map(
                filler + [
                    ("country", .map([("iso_code", .string("GB"))])),
                    ("city", .map([("names", .map([("en", .string("London"))]))])),
                ]))
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: "London", countryCode: "GB"))
        }
    }

    // MARK: - The file

    /// A first entry of 16.8 MB puts every later data offset past 2^24, so records need the
    /// bits that only 28- and 32-bit records have, on both sides of one node.
    @Test(arguments: [28, 32])
    func largerRecordSizesAreReadable(recordSize: Int) throws {
        var writer = MMDBWriter(recordSize: recordSize)
        try writer.insert(
            network: "175.16.199.0/24", value: .map([("padding", .string(String(repeating: "p", count: 16_800_000)))]))
        try writer.insertCity(network: "81.2.69.0/25", city: "Left", countryCode: "GB")
        try writer.insertCity(network: "81.2.69.128/25", city: "Right", countryCode: "GB")
        try writer.insertCity(network: "2001:480::/32", city: "San Diego", countryCode: "US")
        try withDatabase(writer) { database in
            #expect(database.city(for: "81.2.69.1") == CityMatch(city: "Left", countryCode: "GB"))
            #expect(database.city(for: "81.2.69.160") == CityMatch(city: "Right", countryCode: "GB"))
            #expect(database.city(for: "2001:480::1") == CityMatch(city: "San Diego", countryCode: "US"))
            #expect(database.city(for: "175.16.199.1") == nil)
            #expect(database.city(for: "1.1.1.1") == nil)
        }
    }

    @Test func theDatabaseTypeComesFromTheMetadata() throws {
        try withDatabase(MMDBWriter(databaseType: "GeoLite2-City")) { database in
            #expect(database.databaseType == "GeoLite2-City")
            #expect(database.city(for: "81.2.69.160") == nil)
        }
    }

    @Test func aMissingFileIsAnErrorNamingThePath() {
        let path = Self.temporaryPath()
        let error = #expect(throws: CityDatabaseError.self) { _ = try CityDatabase(path: path) }
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("Error opening the specified MaxMind DB file") == true)
        #expect(error?.description == error?.message)
    }

    @Test(arguments: [0, 1, 4096, 100_000])
    func aFileThatIsNotADatabaseIsAnErrorNamingThePath(size: Int) throws {
        var generator = SplitMix64(seed: UInt64(size))
        let garbage = (0..<size).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(garbage).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: CityDatabaseError.self) { _ = try CityDatabase(path: path) }
        #expect(error?.message.contains(path) == true)
    }

    @Test func aTruncatedDatabaseIsAnError() throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(writer.bytes().dropLast(20)).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: CityDatabaseError.self) { _ = try CityDatabase(path: path) }
        #expect(error?.message.contains(path) == true)
    }

    @Test func lookupsFromManyTasksAtOnceAgree() async throws {
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        try writer.insertCity(network: "2001:480::/32", city: "San Diego", countryCode: "US")
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try writer.write(to: path)
        let database = try CityDatabase(path: path)
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<500).filter { index in
                        let v4 = database.city(for: "81.2.69.\((index + task) % 256)")
                        let v6 = database.city(for: "2001:480::\(String(index, radix: 16))")
                        return v4 != CityMatch(city: "London", countryCode: "GB")
                            || v6 != CityMatch(city: "San Diego", countryCode: "US")
                    }.count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    // MARK: - AddressScope

    @Test(arguments: [
        ("81.2.69.160", true), ("2.125.160.216", true), ("175.16.199.0", true), ("1.1.1.1", true),
        ("223.255.255.255", true),
        ("172.15.255.255", true), ("172.32.0.0", true), ("100.63.255.255", true), ("100.128.0.0", true),
        ("192.0.1.255", true),
        ("198.17.255.255", true), ("198.20.0.0", true), ("2001:480::1", true), ("2a00:1450:4009:81f::200e", true),
        ("::ffff:81.2.69.160", true),
        ("0.0.0.0", false), ("0.1.2.3", false), ("10.0.0.1", false), ("172.16.0.1", false), ("172.31.255.255", false),
        ("192.168.1.1", false), ("100.64.0.1", false), ("100.127.255.255", false), ("127.0.0.1", false),
        ("127.255.255.254", false),
        ("169.254.169.254", false), ("192.0.0.8", false), ("192.0.2.1", false), ("198.51.100.7", false),
        ("203.0.113.9", false),
        ("198.18.0.1", false), ("198.19.255.255", false), ("224.0.0.1", false), ("239.255.255.250", false),
        ("240.0.0.1", false),
        ("255.255.255.255", false),
        ("::", false), ("::1", false), ("fe80::1", false), ("febf::1", false), ("fc00::1", false),
        ("fdff:ffff::1", false),
        ("ff02::1", false), ("2001:db8::1", false), ("3fff::1", false), ("2001:2::1", false),
        ("::ffff:10.0.0.1", false),
        ("::ffff:192.168.0.1", false), ("::ffff:100.64.0.1", false),
        ("", false), ("not an ip", false), ("1.2.3", false), ("81.2.69.160:443", false), ("fe80::1%eth0", false),
        ("2001:480::1/32", false), ("081.2.69.160", false), ("1.2.3.256", false),
    ])
    func isPublic(address: String, expected: Bool) {
        #expect(AddressScope.isPublic(address) == expected)
    }

    // MARK: - Helpers

    private static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-geo-\(UUID().uuidString).mmdb").path
    }

    /// Writes `writer`'s database to a new temporary file, opens it for `body`, and removes the
    /// file afterwards.
    private func withDatabase<Result>(_ writer: MMDBWriter, _ body: (CityDatabase) throws -> Result) throws -> Result {
        try withDatabase(bytes: writer.bytes(), body)
    }

    /// ``withDatabase(_:_:)`` for a file's bytes as given.
    private func withDatabase<Result>(bytes: [UInt8], _ body: (CityDatabase) throws -> Result) throws -> Result {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return try body(CityDatabase(path: path))
    }
}

/// A seeded generator, so that the garbage files are the same on every run.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xbf58_476d_1ce4_e5b9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94d0_49bb_1331_11eb
        return mixed ^ (mixed >> 31)
    }
}
