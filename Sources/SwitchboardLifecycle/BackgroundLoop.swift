/// The name of the background loop the current task runs (push dispatcher, ring-timeout sweep,
/// …), for whoever looks at its sleeps: a test's manual clock tells the loops apart by it.
public enum BackgroundLoop {
    @TaskLocal public static var name: String?
}
