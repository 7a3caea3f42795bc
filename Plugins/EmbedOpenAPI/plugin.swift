import Foundation
import PackagePlugin

/// Generates `OpenAPIDocument.swift` from the repository's `openapi.json`, and
/// `WebAssets.swift` from the browser client's files under `Web/`, so the server binary serves
/// exactly what the repository keeps, with no resource bundle beside it.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let tool = try context.tool(named: "embed-resource").url
        let input = context.package.directoryURL.appending(path: "openapi.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        let web = context.package.directoryURL.appending(path: "Web")
        let webOutput = context.pluginWorkDirectoryURL.appending(path: "WebAssets.swift")
        // Every file below Web/ is an input, so changing one rebuilds the server. A file that is
        // only added is embedded at the next change of any file there (SwiftPM keeps the list
        // of inputs from the last run): a new file is normally linked from an existing one.
        var webFiles: [URL] = []
        if let walker = FileManager.default.enumerator(at: web, includingPropertiesForKeys: nil) {
            for case let url as URL in walker where !url.hasDirectoryPath { webFiles.append(url) }
        }
        return [
            .buildCommand(
                displayName: "Embedding openapi.json",
                executable: tool,
                arguments: [input.path(), output.path(), "openAPIDocumentJSON"],
                inputFiles: [input],
                outputFiles: [output]),
            .buildCommand(
                displayName: "Embedding the browser client (Web/)",
                executable: tool,
                arguments: ["--dir", web.path(), webOutput.path(), "webAssetFiles"],
                inputFiles: webFiles,
                outputFiles: [webOutput]),
        ]
    }
}
