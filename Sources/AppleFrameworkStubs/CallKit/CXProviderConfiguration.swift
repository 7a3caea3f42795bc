import Foundation

/// A provider's capabilities. `CXProvider` keeps a copy, as Apple's does.
open class CXProviderConfiguration: NSObject, NSCopying {
    open var ringtoneSound: String?
    open var iconTemplateImageData: Data?
    /// Apple's default is 2.
    open var maximumCallGroups = 2
    /// Apple's default is 5.
    open var maximumCallsPerCallGroup = 5
    open var includesCallsInRecents = true
    open var supportsVideo = false
    open var supportedHandleTypes: Set<CXHandle.HandleType> = []

    public override init() { super.init() }

    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = CXProviderConfiguration()
        copy.ringtoneSound = ringtoneSound
        copy.iconTemplateImageData = iconTemplateImageData
        copy.maximumCallGroups = maximumCallGroups
        copy.maximumCallsPerCallGroup = maximumCallsPerCallGroup
        copy.includesCallsInRecents = includesCallsInRecents
        copy.supportsVideo = supportsVideo
        copy.supportedHandleTypes = supportedHandleTypes
        return copy
    }
}
