import Foundation
import SwitchboardCallKit
import SwitchboardKit

extension PushEnvironment {
    /// The APNs environment this build was signed for, read from the signed
    /// `aps-environment` entitlement in the embedded provisioning profile, never guessed
    /// from the build configuration: `development` is the sandbox. App Store and TestFlight
    /// builds carry no embedded profile and always use production.
    static var ofThisBuild: PushEnvironment {
        guard let url = Bundle.main.url(forResource: "embedded", withExtension: "mobileprovision"),
            let profile = try? Data(contentsOf: url)
        else { return .production }
        return environment(inProvisioningProfile: profile) ?? .production
    }

    /// The profile is a CMS envelope whose content is a plain XML property list; the
    /// entitlements are in it under `Entitlements`.
    static func environment(inProvisioningProfile profile: Data) -> PushEnvironment? {
        guard let start = profile.range(of: Data("<?xml".utf8)),
            let end = profile.range(of: Data("</plist>".utf8), in: start.lowerBound..<profile.endIndex)
        else { return nil }
        let plist = profile.subdata(in: start.lowerBound..<end.upperBound)
        guard let object = try? PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any],
            let entitlements = object["Entitlements"] as? [String: Any],
            let value = entitlements["aps-environment"] as? String
        else { return nil }
        return value == "development" ? .sandbox : .production
    }
}
