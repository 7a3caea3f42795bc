/// Input rules for accounts, each failure a 400 naming the field.
enum AccountValidation {
    static func username(_ raw: String) throws(APIError) -> String {
        // ASCII is checked before lowercasing: Unicode case mapping turns some non-ASCII
        // letters (the Kelvin sign) into ASCII ones, which would make look-alike names.
        let name = raw.utf8.allSatisfy({ $0 < 128 }) ? raw.lowercased() : ""
        guard (3...32).contains(name.utf8.count),
            name.utf8.allSatisfy({
                (97...122).contains($0) || (48...57).contains($0) || $0 == 46 || $0 == 95 || $0 == 45
            })
        else {
            throw APIError.validation(
                "'username' must be 3 to 32 characters: letters, digits, '.', '_' or '-'", field: "username")
        }
        return name
    }

    /// Counted in Unicode code points, as NIST SP 800-63B counts password length (and as JSON
    /// Schema's `minLength`/`maxLength` count), not in user-perceived characters: "e" plus a
    /// combining accent is two.
    static func password(_ password: String, field: String = "password") throws(APIError) {
        guard (8...128).contains(password.unicodeScalars.count) else {
            throw APIError.validation("'\(field)' must be 8 to 128 characters (Unicode code points)", field: field)
        }
    }

    static func displayName(_ raw: String) throws(APIError) -> String {
        try text(raw, field: "displayName", maxLength: 64)
    }

    /// Trimmed, 1…`maxLength` characters, no control characters (but line breaks and tabs
    /// when `multiline`, as message text needs).
    static func text(_ raw: String, field: String, maxLength: Int, multiline: Bool = false) throws(APIError) -> String {
        let trimmed = raw.trimmingWhitespace()
        let allowed: Set<Unicode.Scalar> = multiline ? ["\n", "\r", "\t"] : []
        guard (1...maxLength).contains(trimmed.count),
            !trimmed.unicodeScalars.contains(where: {
                $0.properties.generalCategory == .control && !allowed.contains($0)
            })
        else {
            throw APIError.validation(
                "'\(field)' must be 1 to \(maxLength) characters without control characters", field: field)
        }
        return trimmed
    }
}

extension String {
    /// Without leading and trailing whitespace (Unicode White_Space), scalar by scalar: trimming
    /// by `Character` would also drop what a whitespace scalar carries along, such as a combining
    /// accent or an emoji skin-tone modifier right after a space.
    func trimmingWhitespace() -> String {
        var scalars = unicodeScalars[...]
        while let first = scalars.first, first.properties.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars = scalars.dropLast() }
        return String(Substring(scalars))
    }
}
