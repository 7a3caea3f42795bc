import SwiftUI
import UIKit

@main
@MainActor
struct SwitchboardPhoneApp: App {
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var appDelegate

    var body: some Scene {
        WindowGroup {
            RootView(model: appDelegate.model)
        }
    }
}

/// Builds the app model at launch, synchronously: a VoIP push may be what launched the app
/// (in the background, with no scene), and it must reach CallKit before PushKit's
/// completion, never behind a login screen, a network call or a task (SPEC §4 rule 1).
@MainActor
final class AppDelegate: NSObject, UIApplicationDelegate {
    /// Made on first use, on the main thread: in `didFinishLaunching` below, or by the scene
    /// if SwiftUI asks for it first.
    private(set) lazy var model = AppModel()

    func application(
        _ application: UIApplication,
        didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil
    ) -> Bool {
        model.start()
        return true
    }
}
