import Foundation
import SwitchboardWire

// Server requests: each one's answer goes back to the ledger; a 401 for a token replaced
// meanwhile goes again with the new one. (Gateway calls go to the app's own signaling:
// CallCoordinator+Gateway.swift.)
extension CallCoordinator {
    /// One server request, its answer fed back to the ledger. A 401 for a token that was
    /// replaced while the request was on its way is sent again with the new one.
    func request(_ callID: String, _ request: CallLedger.ServerRequest) async {
        if let call = state.withLock({ $0.gatewayCalls[callID] }) {
            let result = await send(request, call)
            input { $0.serverAnswered(callID, request, result) }
            return
        }
        while true {
            let (backend, generation) = state.withLock { ($0.backend, $0.generation) }
            let result = await send(request, callID, to: backend)
            if case .failure(401, _) = result, !tokenRefused(generation) { continue }
            input { $0.serverAnswered(callID, request, result) }
            return
        }
    }

    func send(
        _ request: CallLedger.ServerRequest, _ callID: String, to backend: any CallBackend
    ) async -> CallLedger.ServerResult {
        do {
            switch request {
            case .fetch where callID.hasPrefix(CallLedger.placeholderPrefix):
                // A push we could not decrypt: which of our calls rings?
                return .calls(try await backend.activeCalls())
            case .fetch: return .call(try await backend.call(callID))
            case .accept:
                let answer = try await backend.accept(callID, withMediaToken: true)
                return answer.media.map { .callAndToken(answer.call, $0) } ?? .call(answer.call)
            case .decline: return .call(try await backend.perform(.decline, onCall: callID))
            case .leave: return .call(try await backend.perform(.leave, onCall: callID))
            case .cancel: return .call(try await backend.perform(.cancel, onCall: callID))
            case .mediaToken: return .mediaToken(try await backend.mediaToken(forCall: callID))
            case .earlyMediaToken:
                return .mediaToken(
                    try await backend.mediaToken(forCall: callID, waitingUpTo: CallLedger.earlyTokenWaitSeconds))
            }
        } catch let error as SwitchboardAPIError {
            return .failure(status: error.status, code: error.code)
        } catch {
            return .failure(status: 0, code: .transport)
        }
    }

    /// The server answered 401 to a request sent with the token of `generation`. True when that
    /// is still the current token (the app is told, once); false when `use(backend:)` replaced
    /// it meanwhile, so the request should go again with the new one.
    /// `stopWatching`: the event watcher asks; it stops in the same step (under the lock that
    /// `use(backend:)` takes), so a new token always finds either it running or it gone.
    func tokenRefused(_ generation: Int, stopWatching: Bool = false) -> Bool {
        let (refused, tell) = state.withLock { state -> (Bool, Bool) in
            guard state.generation == generation else { return (false, false) }
            if stopWatching { state.watcher = nil }
            let tell = state.rejectedGeneration != generation && !state.closed
            state.rejectedGeneration = generation
            return (true, tell)
        }
        if tell { onNotice(.tokenRejected) }
        return refused
    }
}
