import Testing
@testable import SwitchboardCore

@Suite("Relay audio: format, N−1 mixing, the mixer's queue", .timeLimit(.minutes(1)))
struct RelayAudioTests {
    static func frame(_ value: Int16) -> [Int16] { [Int16](repeating: value, count: RelayAudioFormat.samplesPerFrame) }

    @Test func theFormatIs20msOf8kHzS16LE() {
        #expect(RelayAudioFormat.samplesPerFrame == 160)
        #expect(RelayAudioFormat.bytesPerFrame == 320)
        let samples: [Int16] = [0, 1, -1, .max, .min, 0x1234]
        let bytes = RelayAudioFormat.bytes(samples)
        #expect(bytes == [0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x80, 0x34, 0x12])
        #expect(RelayAudioFormat.samples(bytes) == samples)
    }

    @Test func everyoneHearsTheOthersButNotThemselves() {
        let mixes = AudioMixer.mixMinusOne([Self.frame(100), Self.frame(20), Self.frame(3)])
        #expect(mixes == [Self.frame(23), Self.frame(103), Self.frame(120)])
    }

    @Test func loudVoicesClipInsteadOfWrappingAround() {
        let mixes = AudioMixer.mixMinusOne([
            Self.frame(30000), Self.frame(30000), Self.frame(-30000), Self.frame(-30000), Self.frame(0),
        ])
        #expect(mixes[0] == Self.frame(-30000))
        #expect(mixes[4] == Self.frame(0))
        let loud = AudioMixer.mixMinusOne([Self.frame(.max), Self.frame(.max), Self.frame(0)])
        #expect(loud[2] == Self.frame(.max))
        let quiet = AudioMixer.mixMinusOne([Self.frame(.min), Self.frame(.min), Self.frame(0)])
        #expect(quiet[2] == Self.frame(.min))
    }

    @Test func aSilentParticipantStillHearsTheOthersAndAddsNothing() {
        let mixes = AudioMixer.mixMinusOne([nil, Self.frame(5), Self.frame(7)])
        #expect(mixes == [Self.frame(12), Self.frame(7), Self.frame(5)])
    }

    @Test func whoeverNobodyElseSpokeToGetsNothing() {
        #expect(AudioMixer.mixMinusOne([Self.frame(9)]) == [nil])
        #expect(AudioMixer.mixMinusOne([Self.frame(4), nil, nil]) == [nil, Self.frame(4), Self.frame(4)])
        #expect(AudioMixer.mixMinusOne([nil, nil, nil]) == [nil, nil, nil])
    }

    @Test func mixingIsSamplewise() {
        let ramp = (0..<160).map { Int16($0) }
        let mixes = AudioMixer.mixMinusOne([ramp, ramp.map { -$0 }, Self.frame(1)])
        #expect(mixes[2] == Self.frame(0))
        #expect(mixes[0] == ramp.map { 1 - $0 })
    }

    @Test func theQueueKeepsTheNewestFramesAndCountsWhatItDropped() {
        var queue = RelayFrameQueue(capacity: 3)
        #expect(queue.pop() == nil)
        for value in 1...5 { queue.push(Self.frame(Int16(value))) }
        #expect(queue.count == 3)
        #expect(queue.droppedLate == 2)
        #expect(queue.pop() == Self.frame(3))
        #expect(queue.pop() == Self.frame(4))
        #expect(queue.pop() == Self.frame(5))
        #expect(queue.pop() == nil)
    }
}
