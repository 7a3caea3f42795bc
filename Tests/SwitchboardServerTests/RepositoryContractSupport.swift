import Foundation
import Testing
@testable import SwitchboardServer

extension StoreKind {
    /// A fresh store of this kind with the server's schema, inside a running application (so
    /// users and sessions are made the way the API makes them).
    func fixture() throws -> RepositoryFixture {
        try RepositoryFixture(world: CallWorld(store: self))
    }
}

/// Users and sessions to hang repository rows on, made through the API.
struct RepositoryFixture {
    struct Account {
        let person: CallWorld.Person
        let sessionID: String
        var userID: String { person.id }
    }

    let world: CallWorld
    var store: ServerStore { world.app.application.store }

    /// A new user with one live session.
    func account(_ name: String) async throws -> Account {
        let person = try await world.person(name)
        return Account(person: person, sessionID: try await session(of: person))
    }

    /// Another live session of the same user (a second sign-in).
    func signIn(_ account: Account, name: String) async throws -> Account {
        let response = await world.app.request(
            "POST", "/auth/login", body: #"{"username":"\#(name)","password":"long enough"}"#)
        guard let token = response.json?["token"] as? String else {
            throw TestFailure("login failed: \(response.text)")
        }
        let person = CallWorld.Person(token: token, id: account.userID)
        return Account(person: person, sessionID: try await session(of: person))
    }

    /// Ends the account's session (logout, which also unbinds its devices).
    func signOut(_ account: Account) async {
        _ = await world.app.request("POST", "/auth/logout", headers: account.person.headers)
    }

    /// Ends the session in the database only, leaving its devices (as a session that ended
    /// some other way would).
    func endSessionOnly(_ account: Account) async throws {
        _ = try await store.write { transaction in
            try transaction.accounts.endSession(account.sessionID, at: transaction.timestamp)
        }
    }

    /// A call `caller` places to a new friend of theirs (rows that refer to a call need one).
    func call(from caller: Account) async throws -> String {
        let callee = try await world.person("callee-\(UUID().uuidString.prefix(8))")
        let conversation = try await world.befriend(caller.person, callee)
        guard let id = await world.call(caller.person, "conversation", conversation).call?.id else {
            throw TestFailure("no call")
        }
        return id
    }

    /// When the session ended, as stored (nil while it lives).
    func sessionEndedAt(_ sessionID: String) async throws -> String? {
        try await store.snapshot { snapshot in
            try snapshot.connection.query("SELECT ended_at FROM sessions WHERE id = ?", [.text(sessionID)]).first?
                .optionalString("ended_at")
        }
    }

    /// The session a token opened.
    private func session(of person: CallWorld.Person) async throws -> String {
        guard let hash = Token(person.token)?.hash else { throw TestFailure("not a token: \(person.token)") }
        return try await store.snapshot {
            try $0.accounts.principal(forTokenHash: hash, startedAfterMS: .min, seenAfterMS: .min)?.0.sessionID
        }
            ?? {
                throw TestFailure("no live session for \(person.id)")
            }()
    }

    func close() { world.close() }
}

extension AccountRepository {
    /// The live session of `tokenHash` whatever its age (the contract tests' clock is not the server's).
    func principal(forTokenHash tokenHash: [UInt8]) throws -> Principal? {
        try principal(forTokenHash: tokenHash, startedAfterMS: .min, seenAfterMS: .min)?.0
    }

    /// A session started at `timestamp`, its milliseconds 0.
    func startSession(id: String, userID: String, tokenHash: [UInt8], at timestamp: String) throws {
        try startSession(id: id, userID: userID, tokenHash: tokenHash, at: timestamp, atMS: 0)
    }
}
