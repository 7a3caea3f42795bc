// The SDK's public API takes and returns the wire types (`CallInfo`, `Event`, `ScopeKind`,
// `CallMode`, `CallAction`…): `CallBackend`, `SwitchboardClient` and `CallCoordinator` are
// unusable without them. Re-exporting the module makes `import SwitchboardKit` the one import
// an app needs, also to write its own `CallBackend` double (proven by
// Tests/SwitchboardKitTests/OneImportTests.swift, which imports nothing else of ours).
@_exported import SwitchboardWire
