/// The words a push shows a person, in the languages the server speaks (``catalogue``), and
/// the choice of one for a device's BCP 47 locale (``language(for:)``). A device that says
/// nothing, or speaks a language not here, gets English. Pure.
public struct PushText: Sendable, Equatable {
    /// The catalogue's language tag: `en`, `zh-Hans`, `zh-Hant`, `es`, `de`, `fr` or `ja`.
    public let language: String
    public let incomingAudioCall: String
    public let incomingVideoCall: String
    /// `%@`: the caller (a group call; the group's name is the title).
    public let incomingAudioCallFrom: String
    public let incomingVideoCallFrom: String
    public let missedCall: String
    /// `%@`: the caller.
    public let missedCallFrom: String
    public let answeredElsewhere: String
    public let declinedElsewhere: String
    public let callCancelled: String
    public let callEnded: String
    public let unknownCaller: String

    /// Fills the `%@` of one of the texts.
    public static func format(_ text: String, _ argument: String) -> String {
        text.replacingOccurrences(of: "%@", with: argument)
    }

    /// Every language, English first.
    public static let catalogue: [PushText] = [
        english, simplifiedChinese, traditionalChinese, spanish, german, french, japanese,
    ]

    public static let english = PushText(
        language: "en", incomingAudioCall: "Incoming audio call", incomingVideoCall: "Incoming video call",
        incomingAudioCallFrom: "Incoming audio call from %@", incomingVideoCallFrom: "Incoming video call from %@",
        missedCall: "Missed call", missedCallFrom: "Missed call from %@",
        answeredElsewhere: "Answered on another device", declinedElsewhere: "Declined on another device",
        callCancelled: "Call cancelled", callEnded: "Call ended", unknownCaller: "Unknown caller")
    public static let simplifiedChinese = PushText(
        language: "zh-Hans", incomingAudioCall: "语音通话邀请", incomingVideoCall: "视频通话邀请",
        incomingAudioCallFrom: "%@ 邀请您加入语音通话", incomingVideoCallFrom: "%@ 邀请您加入视频通话",
        missedCall: "未接来电", missedCallFrom: "%@ 的未接来电",
        answeredElsewhere: "已在其他设备上接听", declinedElsewhere: "已在其他设备上拒绝",
        callCancelled: "通话已取消", callEnded: "通话已结束", unknownCaller: "未知来电")
    public static let traditionalChinese = PushText(
        language: "zh-Hant", incomingAudioCall: "語音通話邀請", incomingVideoCall: "視訊通話邀請",
        incomingAudioCallFrom: "%@ 邀請您加入語音通話", incomingVideoCallFrom: "%@ 邀請您加入視訊通話",
        missedCall: "未接來電", missedCallFrom: "%@ 的未接來電",
        answeredElsewhere: "已在其他裝置上接聽", declinedElsewhere: "已在其他裝置上拒絕",
        callCancelled: "通話已取消", callEnded: "通話已結束", unknownCaller: "未知來電")
    public static let spanish = PushText(
        language: "es", incomingAudioCall: "Llamada de voz entrante", incomingVideoCall: "Videollamada entrante",
        incomingAudioCallFrom: "Llamada de voz entrante de %@", incomingVideoCallFrom: "Videollamada entrante de %@",
        missedCall: "Llamada perdida", missedCallFrom: "Llamada perdida de %@",
        answeredElsewhere: "Respondida en otro dispositivo", declinedElsewhere: "Rechazada en otro dispositivo",
        callCancelled: "Llamada cancelada", callEnded: "Llamada finalizada", unknownCaller: "Llamante desconocido")
    public static let german = PushText(
        language: "de", incomingAudioCall: "Eingehender Anruf", incomingVideoCall: "Eingehender Videoanruf",
        incomingAudioCallFrom: "Eingehender Anruf von %@", incomingVideoCallFrom: "Eingehender Videoanruf von %@",
        missedCall: "Verpasster Anruf", missedCallFrom: "Verpasster Anruf von %@",
        answeredElsewhere: "Auf einem anderen Gerät angenommen", declinedElsewhere: "Auf einem anderen Gerät abgelehnt",
        callCancelled: "Anruf abgebrochen", callEnded: "Anruf beendet", unknownCaller: "Unbekannter Anrufer")
    public static let french = PushText(
        language: "fr", incomingAudioCall: "Appel audio entrant", incomingVideoCall: "Appel vidéo entrant",
        incomingAudioCallFrom: "Appel audio entrant de %@", incomingVideoCallFrom: "Appel vidéo entrant de %@",
        missedCall: "Appel manqué", missedCallFrom: "Appel manqué de %@",
        answeredElsewhere: "Répondu sur un autre appareil", declinedElsewhere: "Refusé sur un autre appareil",
        callCancelled: "Appel annulé", callEnded: "Appel terminé", unknownCaller: "Appelant inconnu")
    public static let japanese = PushText(
        language: "ja", incomingAudioCall: "音声通話の着信", incomingVideoCall: "ビデオ通話の着信",
        incomingAudioCallFrom: "%@さんからの音声通話", incomingVideoCallFrom: "%@さんからのビデオ通話",
        missedCall: "不在着信", missedCallFrom: "%@さんからの不在着信",
        answeredElsewhere: "別のデバイスで応答しました", declinedElsewhere: "別のデバイスで拒否しました",
        callCancelled: "通話はキャンセルされました", callEnded: "通話は終了しました", unknownCaller: "不明な発信者")

    /// The texts for a device's locale (a BCP 47 tag, any case, `_` taken as `-`): the
    /// catalogue's language the tag falls back to, else English.
    public static func forLocale(_ locale: String?) -> PushText {
        let language = language(for: locale)
        return catalogue.first { $0.language == language } ?? english
    }

    /// The catalogue language for a BCP 47 tag, by RFC 4647 lookup: the whole tag, then with its
    /// last subtag cut, and so on (`zh-Hant-TW` → `zh-Hant`); Chinese without a script takes
    /// the one its region writes (`zh-TW`, `zh-HK`, `zh-MO`: Traditional; otherwise Simplified);
    /// nothing matched is English.
    public static func language(for locale: String?) -> String {
        guard let locale, !locale.isEmpty else { return english.language }
        let subtags = locale.replacingOccurrences(of: "_", with: "-").split(separator: "-").map { $0.lowercased() }
        guard let primary = subtags.first else { return english.language }
        if primary == "zh" {
            if subtags.contains("hant") { return traditionalChinese.language }
            if subtags.contains("hans") { return simplifiedChinese.language }
            return subtags.contains(where: { ["tw", "hk", "mo"].contains($0) })
                ? traditionalChinese.language : simplifiedChinese.language
        }
        var candidate = subtags
        while !candidate.isEmpty {
            let tag = candidate.joined(separator: "-")
            if let found = catalogue.first(where: { $0.language.lowercased() == tag }) { return found.language }
            candidate.removeLast()
        }
        return english.language
    }
}
