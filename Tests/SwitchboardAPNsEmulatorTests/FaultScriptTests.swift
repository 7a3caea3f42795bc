import Testing

@testable import SwitchboardAPNsEmulator

@Suite(.timeLimit(.minutes(3))) struct FaultScriptTests {
    let token = Fixture.deviceToken(1)

    @Test func parsesEveryKindInEveryEnvelope() throws {
        let script = """
            {"faults":[
              {"kind":"unregistered","token":"\(token.uppercased())","count":1},
              {"kind":"unregistered","reason":"ExpiredToken"},
              {"kind":"badDeviceToken"}, {"kind":"tooManyRequests"}, {"kind":"internalServerError"},
              {"kind":"serviceUnavailable","reason":"Shutdown"},
              {"kind":"respond","status":403,"reason":"Forbidden"},
              {"kind":"delay","milliseconds":250},
              {"kind":"goawayAfter","streams":3},
              {"kind":"refuseStream","count":2}
            ]}
            """
        let faults = try APNsFault.parseScript(Array(script.utf8))
        #expect(
            faults == [
                APNsFault(.unregistered, token: token, count: 1),
                APNsFault(.unregistered, reason: "ExpiredToken"),
                APNsFault(.badDeviceToken), APNsFault(.tooManyRequests), APNsFault(.internalServerError),
                APNsFault(.serviceUnavailable, reason: "Shutdown"),
                APNsFault(.respond(status: 403), reason: "Forbidden"),
                APNsFault(.delay(milliseconds: 250)),
                APNsFault(.goawayAfter(streams: 3)),
                APNsFault(.refuseStream, count: 2),
            ])
        #expect(try APNsFault.parseScript(Array(#"{"kind":"refuseStream"}"#.utf8)) == [APNsFault(.refuseStream)])
        #expect(
            try APNsFault.parseScript(Array(#"[{"kind":"tooManyRequests"}]"#.utf8)) == [APNsFault(.tooManyRequests)])
    }

    @Test(arguments: [
        (#"{"kind":"explode"}"#, "unknown kind"),
        (#"{"kind":"delay"}"#, "milliseconds"),
        (#"{"kind":"delay","milliseconds":-1}"#, "milliseconds"),
        (#"{"kind":"goawayAfter","streams":0}"#, "streams"),
        (#"{"kind":"respond","status":42}"#, "status"),
        (#"{"kind":"unregistered","token":"xyz"}"#, "token"),
        (#"{"kind":"unregistered","count":0}"#, "count"),
        (#"{"kind":"unregistered","count":true}"#, "count"),
        (#"{"kind":"unregistered","tokens":"x"}"#, "unknown member"),
        (#"[{"kind":"tooManyRequests"}, 3]"#, "fault 1"),
        (#"{"faults":{}}"#, "array"),
        ("not json", "not JSON"),
    ])
    func rejectsAMalformedScriptSayingWhy(script: String, mention: String) {
        #expect {
            try APNsFault.parseScript(Array(script.utf8))
        } throws: { error in
            (error as? APNsFaultScriptError)?.message.contains(mention) == true
        }
    }

    @Test func tokenFaultsComeBeforeGlobalOnesAndCountsRunOut() {
        var book = FaultBook([
            APNsFault(.tooManyRequests),
            APNsFault(.unregistered, token: token, count: 2),
        ])
        #expect(book.takeAnswer(token: token)?.kind == .unregistered)
        #expect(book.takeAnswer(token: token.uppercased())?.kind == .unregistered)
        #expect(book.takeAnswer(token: token)?.kind == .tooManyRequests)
        #expect(book.takeAnswer(token: Fixture.deviceToken(2))?.kind == .tooManyRequests)
        #expect(book.faults == [APNsFault(.tooManyRequests)])
    }

    @Test func eachFamilyIsTakenSeparately() {
        var book = FaultBook([
            APNsFault(.delay(milliseconds: 5), count: 1), APNsFault(.refuseStream, count: 1),
            APNsFault(.goawayAfter(streams: 2), count: 1, reason: "Maintenance"),
        ])
        #expect(book.takeAnswer(token: token) == nil)
        let refusals = [book.takeRefusal(token: token), book.takeRefusal(token: token)]
        #expect(refusals == [true, false])
        #expect(book.takeDelay(token: token) == 5)
        #expect(book.takeDelay(token: token) == nil)
        #expect(book.takeGoaway(token: token, streamsOnConnection: 1) == nil)
        #expect(book.takeGoaway(token: token, streamsOnConnection: 2) == "Maintenance")
        #expect(book.faults.isEmpty)
    }

    @Test func clearingByTokenKeepsTheOthers() {
        var book = FaultBook([APNsFault(.badDeviceToken, token: token), APNsFault(.tooManyRequests)])
        book.clear(token: token.uppercased())
        #expect(book.faults == [APNsFault(.tooManyRequests)])
        book.clear()
        #expect(book.faults.isEmpty)
    }

    @Test func writesFaultsBackAsTheScriptReadsThem() throws {
        let faults = [
            APNsFault(.respond(status: 403), token: token, count: 2, reason: "Forbidden"),
            APNsFault(.delay(milliseconds: 9)), APNsFault(.goawayAfter(streams: 1)),
        ]
        var json = JSONWriter()
        json.beginArray()
        for fault in faults { fault.write(to: &json) }
        json.endArray()
        #expect(try APNsFault.parseScript(json.bytes) == faults)
    }
}

@Suite(.timeLimit(.minutes(3))) struct InboxStoreTests {
    @Test func indicesGrowPerTokenAndReadsFollowTheCursor() {
        var store = InboxStore(capacity: 3)
        let a = Fixture.deviceToken(1)
        for n in 1...4 {
            store.append(token: a, apnsID: "id\(n)", headers: [], payload: Array("{}".utf8), receivedAt: Int64(n))
        }
        store.append(token: Fixture.deviceToken(2), apnsID: "other", headers: [], payload: [], receivedAt: 0)
        let all = store.read(token: a, after: 0)
        #expect(all.messages.map(\.index) == [2, 3, 4])  // capacity 3: the oldest was dropped
        #expect(all.cursor == 4)
        #expect(store.read(token: a, after: 3).messages.map(\.apnsID) == ["id4"])
        #expect(store.read(token: a, after: 4).messages.isEmpty)
        #expect(store.read(token: a, after: 4).cursor == 4)
        #expect(!store.hasNews(token: a, after: 4))
        #expect(store.hasNews(token: a, after: 2))
    }

    @Test func aCursorBeyondTheInboxStartsOver() {
        var store = InboxStore(capacity: 10)
        let a = Fixture.deviceToken(1)
        store.append(token: a, apnsID: "x", headers: [], payload: [], receivedAt: 0)
        #expect(store.hasNews(token: a, after: 9))
        #expect(store.read(token: a, after: 9).cursor == 1)
        store.clear(token: a)
        #expect(store.read(token: a, after: 1).cursor == 0)
        #expect(store.hasNews(token: a, after: 1))
        #expect(!store.hasNews(token: a, after: 0))
    }
}
