import SwitchboardCallKit

/// The Call Directory extension: the signed-in user's blocking and identification entries
/// (their own and their organisations'), which the app keeps in the app group. Everything is
/// in `SwitchboardCallDirectoryProvider`; the app group comes from this extension's Info.plist
/// key `SwitchboardAppGroup`. Turn it on in Settings › Phone › Call Blocking & Identification.
// @unchecked Sendable: it adds no stored state to its base class, which stores none either.
final class CallDirectoryHandler: SwitchboardCallDirectoryProvider, @unchecked Sendable {}
