import Foundation
import SwitchboardWire

// Calls an app server rang through the push gateway: answered over its own signaling.
extension CallCoordinator {
    /// How often (seconds) a live gateway call is re-read from the app server, in case its own
    /// signaling did not say that the call changed.
    public static let gatewayRecheckSeconds = 5.0

    /// The app's own signaling says a gateway call changed (the caller cancelled, another
    /// device answered, someone hung up): with `state`, that is the call's state now;
    /// without, the coordinator asks ``GatewayCallBackend/state(of:)``. A call this
    /// coordinator does not know is ignored (its push rings it).
    public func gatewayCallChanged(_ callID: String, to state: GatewayCallState? = nil) {
        guard let call = self.state.withLock({ $0.gatewayCalls[callID] }) else { return }
        if let state {
            let info = call.info(state, for: userID)
            input { $0.callRead(info) }
        } else {
            spawn { [self] in await request(callID, .fetch) }
        }
    }

    /// Re-reads a live gateway call every ``gatewayRecheckSeconds`` until it ended; forgets
    /// it once the ledger has.
    func recheckGatewayCall(_ callID: String) {
        clock.schedule(after: .milliseconds(Int(Self.gatewayRecheckSeconds * 1000))) { [self] in
            let live = state.withLock { state -> Bool in
                guard let entry = state.ledger.entries[callID] else {
                    state.gatewayCalls[callID] = nil
                    return false
                }
                return entry.stage != .ended && !state.closed
            }
            guard live else { return }
            spawn { [self] in await request(callID, .fetch) }
            recheckGatewayCall(callID)
        }
    }

    var userID: String { state.withLock { $0.ledger.userID } }

    /// One request for a gateway call, to the app server's signaling.
    func send(_ request: CallLedger.ServerRequest, _ call: GatewayCall) async -> CallLedger.ServerResult {
        guard let gateway else {
            return .failure(status: 404, code: .notFound)
        }
        let userID = self.userID
        do {
            switch request {
            case .fetch: return .call(call.info(try await gateway.state(of: call), for: userID))
            case .accept: return .call(call.info(try await gateway.answer(call), for: userID))
            case .decline: return .call(call.info(try await gateway.decline(call), for: userID))
            case .leave, .cancel: return .call(call.info(try await gateway.hangUp(call), for: userID))
            case .mediaToken, .earlyMediaToken: return .mediaToken(try await gateway.mediaToken(for: call))
            }
        } catch let error as SwitchboardAPIError {
            // A 401 from the app server says nothing of the Switchboard session.
            return .failure(status: error.status == 401 ? 403 : error.status, code: error.code)
        } catch {
            return .failure(status: 0, code: .transport)
        }
    }
}
