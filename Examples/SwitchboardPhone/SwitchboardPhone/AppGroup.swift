import Foundation

/// The app group the app keeps its settings in (the server address, this installation's
/// device id, the event cursor), so that extensions a real app adds can read them.
enum AppGroup {
    /// From the Info.plist key `SwitchboardAppGroup`, which project.yml fills from the build
    /// setting that also names the group in the entitlements.
    static var identifier: String {
        Bundle.main.object(forInfoDictionaryKey: "SwitchboardAppGroup") as? String
            ?? "group.com.example.switchboard.phone"
    }

    /// The Call Directory extension's bundle identifier: the app's, then `.directory`
    /// (project.yml names the extension so).
    static var callDirectoryExtension: String {
        (Bundle.main.bundleIdentifier ?? "com.example.switchboard.phone") + ".directory"
    }

    /// The group's defaults; the app's own when the group is not provisioned (a build run
    /// without the capability).
    static var defaults: UserDefaults {
        UserDefaults(suiteName: identifier) ?? .standard
    }
}
