import Foundation
import SwitchboardCore
import Testing
import SwitchboardWire

/// SplitMix64: a tiny seeded generator, so every run replays the same sequences.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// Random event sequences against fresh calls; after every transition the rules that must always
/// hold are checked. Failures name the seed and step so a sequence can be replayed.
@Suite("Calls: invariants over random sequences", .timeLimit(.minutes(3)))
struct CallInvariantTests {
    static let grace: TimeInterval = 30

    /// What a run saw, so the test can prove it exercised the machine rather than passing vacuously.
    struct Coverage {
        var endReasons: Set<CallInfo.EndReason> = []
        var succeeded: Set<String> = []
        var media: Set<String> = []
        var transitions = 0
        /// `from->to event` for every successful transition.
        var paths: Set<String> = []
    }

    @Test("2,000 random sequences keep every call rule")
    func randomSequences() {
        var violations: [String] = []
        var coverage = Coverage()
        for seed in 0..<2_000 {
            runSequence(seed: UInt64(seed), violations: &violations, coverage: &coverage)
        }
        #expect(
            violations.isEmpty, "\(violations.count) violations, first: \(violations.prefix(5).joined(separator: "\n"))"
        )
        // The generator reaches every ending and every kind of event and media work.
        #expect(
            coverage.endReasons == Set(CallInfo.EndReason.known),
            "reached \(coverage.endReasons.map(\.rawValue).sorted())")
        #expect(
            coverage.succeeded == [
                "accept", "decline", "join", "leave", "cancel", "ringTimedOut", "mediaCounted", "scopeEnded",
                "memberRemoved",
            ])
        #expect(coverage.media == ["deleteRoom", "removeParticipant"])
        #expect(coverage.transitions > 2_000)
        let paths: Set<String> = [
            "ringing->active accept", "ringing->ringing decline", "ringing->ended decline", "ringing->ended cancel",
            "ringing->ended ringTimedOut", "ringing->ended scopeEnded", "ringing->ringing memberRemoved",
            "ringing->ended memberRemoved",
            "active->active accept", "active->active decline", "active->active join", "active->active leave",
            "active->ended leave",
            "active->active ringTimedOut", "active->active mediaCounted", "active->ended mediaCounted",
            "active->ended scopeEnded",
            "active->active memberRemoved", "active->ended memberRemoved",
        ]
        #expect(paths.isSubset(of: coverage.paths), "never reached: \(paths.subtracting(coverage.paths).sorted())")
    }

    func runSequence(seed: UInt64, violations: inout [String], coverage: inout Coverage) {
        var random = SplitMix64(seed: seed)
        let scope: ScopeKind = seed.isMultiple(of: 2) ? .group : .conversation
        let invitees = scope == .group ? ["bob", "cora", "dan"] : ["bob"]
        let busy = Set(invitees.filter { _ in random.chance(scope == .group ? 20 : 8) })
        var now = at(0)
        let created = CallStateMachine.create(
            id: "call-\(seed)", scopeKind: scope, scopeID: "scope", mode: .audio, caller: "alice", invitees: invitees,
            busy: busy,
            roomName: room, now: now, ringTimeout: ringTimeout)
        var problems = checkCreate(created, invitees: invitees, busy: busy)
        problems += check(before: nil, created, now: now)
        if created.call.state == .ended { coverage.endReasons.insert(.busy) }
        var call = created.call
        var members: Set<String> = scope == .group ? Set(cast) : ["alice", "bob"]
        var log = ["create busy=\(busy.sorted())"]

        for step in 0..<(1 + random.below(12)) {
            now = now.addingTimeInterval(random.pick([0, 0.001, 0.5, 1, 2, 4, 8, 16, 31]))
            // 30% of the time anyone in the cast, else someone the call already involves (otherwise most
            // events would be refused strangers and the sequences would explore little).
            let actor = random.chance(30) ? random.pick(cast) : random.pick(involved(call))
            let busyElsewhere = random.chance(10)
            var name = ""
            var transition: CallStateMachine.Transition?
            switch random.below(80) {
            case 0..<16:
                name = "accept"
                transition = try? CallStateMachine.accept(call, by: actor, now: now, busyElsewhere: busyElsewhere)
            case 16..<24:
                name = "decline"
                transition = try? CallStateMachine.decline(call, by: actor, now: now)
            case 24..<38:
                name = "join"
                transition = try? CallStateMachine.join(
                    call, by: actor, now: now, isMember: members.contains(actor), busyElsewhere: busyElsewhere)
            case 38..<48:
                name = "leave"
                transition = try? CallStateMachine.leave(call, by: actor, now: now)
            case 48..<50:
                name = "cancel"
                transition = try? CallStateMachine.cancel(call, by: actor, now: now)
            case 50..<56:
                name = "ringTimedOut"
                transition = CallStateMachine.ringTimedOut(call, now: now)
            case 56..<72:
                name = "mediaCounted"
                transition = CallStateMachine.mediaCounted(
                    call, participants: random.pick([nil, 0, 0, 0, 0, 1, 2]), now: now, grace: Self.grace)
            case 72:
                name = "scopeEnded"
                let reasons: [CallInfo.EndReason] = scope == .group ? [.groupDissolved] : [.unfriended, .blocked]
                transition = CallStateMachine.scopeEnded(call, reason: random.pick(reasons), now: now)
            default:
                name = "memberRemoved"
                if scope == .group {
                    members.remove(actor)
                    transition = CallStateMachine.memberRemoved(call, userID: actor, now: now)
                }
            }
            log.append("\(offset(now)) \(name) \(actor)\(transition == nil ? " -" : "")")
            guard let transition else { continue }
            coverage.transitions += 1
            coverage.paths.insert("\(call.state)->\(transition.call.state) \(name)")
            coverage.succeeded.insert(name)
            for action in transition.effects.media {
                switch action {
                case .deleteRoom: coverage.media.insert("deleteRoom")
                case .removeParticipant: coverage.media.insert("removeParticipant")
                }
            }
            if let reason = transition.call.endReason, call.state != .ended { coverage.endReasons.insert(reason) }
            problems += check(before: call, transition, now: now).map { "step \(step) \(name) by \(actor): \($0)" }
            call = transition.call
        }
        if !problems.isEmpty {
            violations.append("seed \(seed) [\(log.joined(separator: "; "))]: \(problems.joined(separator: "; "))")
        }
    }

    func checkCreate(_ created: CallStateMachine.Transition, invitees: [String], busy: Set<String>) -> [String] {
        var problems: [String] = []
        let ringing = invitees.filter { !busy.contains($0) }
        if created.effects.ring != ringing { problems.append("create rang \(created.effects.ring), not \(ringing)") }
        if created.call.ringingUserIDs != ringing {
            problems.append("create left \(created.call.ringingUserIDs) ringing")
        }
        if (created.call.state == .ended) != ringing.isEmpty {
            problems.append("create state \(created.call.state) with \(ringing) ringing")
        }
        return problems
    }

    /// Every rule that holds after any transition (`before` is `nil` for create).
    func check(before: CallRecord?, _ transition: CallStateMachine.Transition, now: Date) -> [String] {
        let call = transition.call
        let effects = transition.effects
        var problems: [String] = []
        func require(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { problems.append(message()) }
        }

        switch call.state {
        case .ended:
            require(call.endedAt != nil && call.endReason != nil, "ended without endedAt/endReason")
            require(call.ringingUserIDs.isEmpty, "ended with \(call.ringingUserIDs) still ringing")
            require(call.presentUserIDs.isEmpty, "ended with \(call.presentUserIDs) still present")
            require(call.emptySince == nil, "ended with a watchdog memory")
        case .active:
            require(call.answeredAt != nil, "active without answeredAt")
            require(!call.presentUserIDs.isEmpty, "active with nobody present")
            require(call.endedAt == nil && call.endReason == nil, "active with an ending")
        case .unknown(let state):
            require(false, "a state the rules never make: \(state)")
        case .ringing:
            require(call.participants.isEmpty, "ringing with participants")
            require(
                call.answeredAt == nil && call.endedAt == nil && call.endReason == nil, "ringing with answeredAt/ending"
            )
            require(!call.ringingUserIDs.isEmpty, "ringing with no invitation ringing: nothing would ever end it")
            require(call.emptySince == nil, "ringing with a watchdog memory")
        }
        require(Set(call.participants.map(\.userID)).count == call.participants.count, "a participant listed twice")
        require(Set(call.invitations.map(\.userID)).count == call.invitations.count, "an invitation listed twice")
        require(!call.invitations.contains { $0.userID == call.createdBy }, "the caller is invited")
        require(
            effects.media.allSatisfy {
                switch $0 {
                case .deleteRoom(let name): name == call.roomName
                case .removeParticipant(let name, _): name == call.roomName
                }
            }, "media action for another room: \(effects.media)")

        guard let before else {
            require(effects.notify == involved(call), "create notified \(effects.notify)")
            require(effects.media.isEmpty, "create did media work")
            return problems
        }

        require(before.state != .ended, "a transition of an ended call, to \(call.state)")
        let rank: [CallState: Int] = [.ringing: 0, .active: 1, .ended: 2]
        require(rank[call.state]! >= rank[before.state]!, "went from \(before.state) to \(call.state)")
        require(effects.ring.isEmpty, "rang \(effects.ring) outside create")
        require(
            call.id == before.id && call.createdAt == before.createdAt && call.ringDeadline == before.ringDeadline
                && call.roomName == before.roomName && call.createdBy == before.createdBy && call.mode == before.mode,
            "identity changed")
        if let answered = before.answeredAt { require(call.answeredAt == answered, "answeredAt changed") }
        require(call.invitations.map(\.userID) == before.invitations.map(\.userID), "invitees changed")
        for (old, new) in zip(before.invitations, call.invitations) where old != new {
            require(
                old.state == .ringing || new.state == old.state,
                "\(new.userID)'s \(old.state) invitation became \(new.state)")
            require(new.state != .ringing, "\(new.userID)'s invitation rings again")
            require(new.updatedAt == now, "\(new.userID)'s invitation changed without updatedAt = now")
        }
        require(
            Array(call.participants.map(\.userID).prefix(before.participants.count))
                == before.participants.map(\.userID),
            "participants removed or reordered")
        for participant in call.participants {
            if let leftAt = participant.leftAt {
                require(leftAt >= participant.joinedAt, "\(participant.userID) left before joining")
            }
        }
        for (old, new) in zip(before.participants, call.participants) where old.isPresent && !new.isPresent {
            require(new.leftAt == now, "\(new.userID) left at \(new.leftAt.map(offset) ?? "-"), not now")
        }

        // Notify: everyone involved, unless only the watchdog's memory changed (then nobody).
        var withoutMemory = call
        withoutMemory.emptySince = before.emptySince
        if withoutMemory == before && call.emptySince != before.emptySince {
            require(
                effects.notify.isEmpty && effects.media.isEmpty,
                "watchdog bookkeeping notified \(effects.notify) / media \(effects.media)")
        } else {
            require(effects.notify == involved(call), "notified \(effects.notify), involved \(involved(call))")
        }

        // Media: the room is deleted exactly when an answered call ends; otherwise only leavers are removed.
        let endsAnswered = call.state == .ended && call.answeredAt != nil
        if call.state == .ended {
            require(call.endedAt == now, "ended at \(call.endedAt.map(offset) ?? "-"), not now")
            require(
                effects.media == (endsAnswered ? [.deleteRoom(call.roomName)] : []),
                "ending did media work \(effects.media)")
        } else {
            for action in effects.media {
                guard case .removeParticipant(_, let user) = action else {
                    problems.append("deleteRoom without ending the call")
                    continue
                }
                require(
                    before.presentUserIDs.contains(user) && !call.presentUserIDs.contains(user),
                    "removed \(user), who was not leaving")
            }
            let leavers = before.presentUserIDs.filter { !call.presentUserIDs.contains($0) }
            require(
                leavers.map { MediaAction.removeParticipant(room: call.roomName, identity: $0) } == effects.media,
                "\(leavers) left the call but media work was \(effects.media)")
        }
        return problems
    }
}
