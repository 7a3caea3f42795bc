import Foundation
import SwitchboardTesting
import Testing

/// What a stranger, or one account, can cost the server: bodies, password hashing, held
/// connections; and the operator's paths on a listener of their own.
extension AbuseLiveTests {
    private static let streamRequest =
        "GET /events/stream?after=0 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %@\r\n\r\n"

    @Test func signInBodiesAreSmallUnroutedBodiesAreNeverReadAndOneUserHoldsFewStreams() async throws {
        let (server, data) = try await launchAbuse(["SWITCHBOARD_MAX_STREAMS_PER_USER": "2"])
        defer {
            _ = server.stop()
            data.remove()
        }
        let port = try #require(Int(server.address.split(separator: ":").last ?? ""))
        // A sign-in body past 8 KiB is refused before it is read or decoded.
        let padded = #"{"username":"x","password":"\#(String(repeating: "p", count: 9000))"}"#
        let login = await fetch(server.address, "POST", "/auth/login", body: padded)
        #expect(login.status == 413 && Self.errorCode(login.body) == "BODY_TOO_LARGE", "\(login.body)")
        // A 1 MiB body announced for no route is answered at its head; nothing is sent after it.
        let stranger = try RawClient(port: port)
        stranger.send("POST /nowhere HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\n")
        let refused = await stranger.receive { $0.contains("}}") }
        #expect(refused.text.hasPrefix("HTTP/1.1 404 "), "\(refused.text)")
        // Two held event streams of one user; the third is 429 until one ends.
        let erin = try await liveRegister(server.address, "erin")
        let streams = try (0..<2).map { _ in try RawClient(port: port) }
        for stream in streams {
            stream.send(String(format: Self.streamRequest, erin.token))
            #expect(await stream.receive { $0.contains("retry: 3000") }.text.hasPrefix("HTTP/1.1 200 "))
        }
        let third = await fetch(server.address, "GET", "/events/stream?after=0", headers: erin.auth)
        #expect(third.status == 429 && Self.errorCode(third.body) == "RATE_LIMITED", "\(third.body)")
        #expect(third.headers.lowercased().contains("retry-after:"))
        #expect(
            await fetch(server.address, "GET", "/events?after=0&wait=1", headers: erin.auth).status == 429,
            "long polls count too")
        streams[0].hangUp()
        let again = try RawClient(port: port)
        #expect(
            await eventually {
                let probe = try? RawClient(port: port)
                probe?.send(String(format: Self.streamRequest, erin.token))
                return await probe?.receive(timeout: 2) { $0.contains("\r\n\r\n") }.text.hasPrefix("HTTP/1.1 200 ")
                    == true
            })
        _ = again
        // Another user is not held back by erin's streams.
        let fay = try await liveRegister(server.address, "fay")
        #expect(await fetch(server.address, "GET", "/events?after=0&wait=0", headers: fay.auth).status == 200)
    }

    @Test func aRegistrationFloodIsAnswered503WhileALoginStillGoesFirst() async throws {
        let (server, data) = try await launchAbuse([
            "SWITCHBOARD_PASSWORD_HASH_QUEUE": "1", "SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS": "1000000/3600",
        ])
        defer {
            _ = server.stop()
            data.remove()
        }
        _ = try await liveRegister(server.address, "gina")
        let replies = await withTaskGroup(of: (Int, String, String).self) { group in
            for index in 0..<40 {
                group.addTask {
                    let reply = await fetch(
                        server.address, "POST", "/auth/register",
                        body: #"{"username":"flood\#(index)","password":"long enough","displayName":"F"}"#)
                    return (reply.status, reply.headers, reply.body)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(50))
                let reply = await fetch(
                    server.address, "POST", "/auth/login", body: #"{"username":"gina","password":"long enough"}"#)
                return (reply.status, "login", reply.body)
            }
            var all: [(Int, String, String)] = []
            for await reply in group { all.append(reply) }
            return all
        }
        let registrations = replies.filter { $0.1 != "login" }
        let busy = registrations.filter { $0.0 == 503 }
        #expect(registrations.allSatisfy { $0.0 == 201 || $0.0 == 503 }, "\(registrations.map(\.0))")
        #expect(!busy.isEmpty, "40 hashes at once overflow a queue of one")
        #expect(busy.allSatisfy { Self.errorCode($0.2) == "SERVER_BUSY" && $0.1.lowercased().contains("retry-after:") })
        let login = try #require(replies.first { $0.1 == "login" })
        #expect(login.0 == 200, "the login's check waits in its own line, ahead of every hash: \(login.2)")
    }

    @Test func metricsAndAdminCanLiveOnAListenerOfTheirOwn() async throws {
        let adminKey = "operator-admin-key-0123456789"
        let (server, data) = try await launchAbuse([
            "SWITCHBOARD_OPERATOR_LISTEN": "127.0.0.1:0", "SWITCHBOARD_ADMIN_KEY": adminKey,
        ])
        defer {
            _ = server.stop()
            data.remove()
        }
        let line = try #require(server.lines.first { $0.contains("operator listener") })
        let operatorAddress = try #require(liveJSON(line)["address"] as? String)
        let admin = ["Authorization": "Bearer \(adminKey)"]
        #expect(await fetch(server.address, "GET", "/metrics").status == 404)
        #expect(await fetch(server.address, "GET", "/admin/push/status", headers: admin).status == 404)
        #expect(await fetch(server.address, "GET", "/healthz").status == 200)
        #expect(await fetch(operatorAddress, "GET", "/metrics").body.contains("switchboard_http_requests_total"))
        #expect(await fetch(operatorAddress, "GET", "/admin/push/status", headers: admin).status == 200)
        #expect(await fetch(operatorAddress, "GET", "/healthz").status == 200)
        #expect(await fetch(operatorAddress, "GET", "/me").status == 404, "the API is not served there")
        // The operator console moves with /admin; the browser SDK it imports is on both.
        #expect(await fetch(server.address, "GET", "/console/").status == 404)
        #expect(await fetch(operatorAddress, "GET", "/console/").status == 200)
        #expect(await fetch(operatorAddress, "GET", "/admin/console", headers: admin).status == 200)
        #expect(await fetch(operatorAddress, "GET", "/sdk/switchboard.js").status == 200)
        #expect(await fetch(server.address, "GET", "/sdk/switchboard.js").status == 200)
        #expect(await fetch(operatorAddress, "GET", "/app/").status == 404, "the softphone is not served there")
    }
}
