import Foundation
import Testing
import SwitchboardPushCore

@Suite("Push text: one catalogue, the language for a device's locale", .timeLimit(.minutes(1)))
struct PushTextTests {
    @Test(
        arguments: [
            ("zh-Hant-TW", "zh-Hant"), ("zh-Hant", "zh-Hant"), ("zh-TW", "zh-Hant"), ("zh-HK", "zh-Hant"),
            ("zh_Hant_MO", "zh-Hant"), ("zh", "zh-Hans"), ("zh-CN", "zh-Hans"), ("zh-Hans-SG", "zh-Hans"),
            ("ZH-hans", "zh-Hans"), ("en", "en"), ("en-GB", "en"), ("de-CH", "de"), ("de_AT", "de"), ("fr-CA", "fr"),
            ("ja-JP", "ja"), ("es-419", "es"), ("pt-BR", "en"), ("x-klingon", "en"), ("", "en"),
        ])
    func aLocaleFallsBackToTheCatalogue(locale: String, language: String) {
        #expect(PushText.language(for: locale) == language)
        #expect(PushText.forLocale(locale).language == language)
    }

    @Test func noLocaleIsEnglish() {
        #expect(PushText.language(for: nil) == "en")
    }

    /// Every language has every text, the caller's place in those that name one, and no two
    /// languages share a catalogue tag.
    @Test func everyLanguageIsComplete() {
        #expect(PushText.catalogue.map(\.language) == ["en", "zh-Hans", "zh-Hant", "es", "de", "fr", "ja"])
        for text in PushText.catalogue {
            let named = [text.incomingAudioCallFrom, text.incomingVideoCallFrom, text.missedCallFrom]
            let plain = [
                text.incomingAudioCall, text.incomingVideoCall, text.missedCall, text.answeredElsewhere,
                text.declinedElsewhere, text.callCancelled, text.callEnded, text.unknownCaller,
            ]
            #expect(named.allSatisfy { $0.components(separatedBy: "%@").count == 2 }, "\(text.language)")
            #expect(plain.allSatisfy { !$0.isEmpty && !$0.contains("%@") }, "\(text.language)")
            #expect(Set(named + plain).count == named.count + plain.count, "\(text.language): a text twice")
        }
        #expect(PushText.format(PushText.japanese.missedCallFrom, "山田") == "山田さんからの不在着信")
    }

    /// A maker's notification is worded in the data's language.
    @Test func aMakersNotificationIsInTheDevicesLanguage() throws {
        let ring = Array(
            #"{"callId":"c","callerName":"张三","groupName":"项目组","locale":"zh-Hans","mode":"video","type":"call"}"#
                .utf8)
        let shown = try #require(VendorNotification.from(data: ring))
        #expect(shown.title == "项目组" && shown.content == "张三 邀请您加入视频通话")
        let missed = Array(#"{"callId":"c","callerName":"","locale":"fr","reason":"missed","type":"call_ended"}"#.utf8)
        let lost = try #require(VendorNotification.from(data: missed))
        #expect(lost.title == "Appel manqué" && lost.content == "Appel manqué de Appelant inconnu")
        let answered = Array(
            #"{"callId":"c","callerName":"Ana","locale":"es","reason":"answered_elsewhere","type":"call_ended"}"#.utf8)
        #expect(VendorNotification.from(data: answered, everyEnding: true)?.content == "Respondida en otro dispositivo")
    }

    /// The data object names the catalogue language, not the raw tag.
    @Test func theDataObjectCarriesTheCatalogueLanguage() throws {
        let now = Date(timeIntervalSince1970: 1_900_000_000)
        let data = try FCMMessage.ringData(
            callID: "c", scopeKind: "conversation", scopeID: "s", mode: "audio", callerName: "A", groupName: nil,
            expiresAt: now.addingTimeInterval(30), now: now, locale: "zh-Hant-TW")
        #expect(VendorNotification.fields(of: data)?["locale"] == "zh-Hant")
        let none = try FCMMessage.ringData(
            callID: "c", scopeKind: "conversation", scopeID: "s", mode: "audio", callerName: "A", groupName: nil,
            expiresAt: now.addingTimeInterval(30), now: now)
        #expect(VendorNotification.fields(of: none)?["locale"] == nil)
    }
}
