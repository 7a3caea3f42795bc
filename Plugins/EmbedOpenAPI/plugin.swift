import PackagePlugin

/// Generates `OpenAPIDocument.swift` from the repository's `openapi.json`, so the server binary
/// serves exactly the document kept in the repository, with no resource bundle beside it.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "openapi.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        return [
            .buildCommand(
                displayName: "Embedding openapi.json",
                executable: try context.tool(named: "embed-resource").url,
                arguments: [input.path(), output.path(), "openAPIDocumentJSON"],
                inputFiles: [input],
                outputFiles: [output])
        ]
    }
}
