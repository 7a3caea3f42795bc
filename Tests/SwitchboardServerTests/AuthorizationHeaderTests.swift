import Testing
@testable import SwitchboardServer

/// What a client that sends a wrong `Authorization` header is told: what came and what was expected.
@Suite("Authorization header", .timeLimit(.minutes(1)))
struct AuthorizationHeaderTests {
    static let good = String(repeating: "A", count: 43)

    private func message(_ header: String) -> String? {
        do {
            _ = try Authenticator.token(fromAuthorization: header)
            return nil
        } catch {
            #expect(error.status == 401 && error.code == .unauthorized)
            return error.message
        }
    }

    @Test func aWellFormedTokenIsTaken() throws {
        #expect(try Authenticator.token(fromAuthorization: "Bearer \(Self.good)").text == Self.good)
        #expect(try Authenticator.token(fromAuthorization: "bearer  \(Self.good)").text == Self.good)
    }

    @Test(arguments: [
        ("Bearer \"\(good)\"", "malformed bearer token: the token is quoted; send it without quotes"),
        (
            "Bearer null",
            "malformed bearer token: the token is 'null': the register or login request that should have given it failed"
        ),
        ("Bearer abc", "malformed bearer token: the token has 3 characters, not 43"),
        (
            "Bearer \(String(repeating: "+", count: 43))",
            "malformed bearer token: the token has characters outside base64url"
        ),
        (good, "the word Bearer is missing before the token"),
        ("Basic dXNlcjpwYXNz", "Authorization scheme 'Basic' is not supported"),
        ("Bearer", "no token after Bearer"),
        ("Bearer \(good) \(good)", "more than one token after Bearer"),
        ("   ", "empty Authorization header"),
    ])
    func aWrongHeaderSaysWhatCameAndWhatWasExpected(header: String, start: String) {
        let text = message(header)
        #expect(text?.hasPrefix(start) == true, "\(text ?? "accepted")")
        #expect(
            text?.hasSuffix(
                "expected Authorization: Bearer <token>, with the 43-character token from /auth/register or /auth/login"
            ) == true)
    }
}
