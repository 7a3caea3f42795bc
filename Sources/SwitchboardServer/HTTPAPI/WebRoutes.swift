import Foundation
import SwitchboardCrypto
import SwitchboardHTTP

/// The browser client, served from the binary: the softphone at `/app/`, the operator console at
/// `/console/` and the browser SDK's modules at `/sdk/` (the files of the repository's `Web/`,
/// embedded at build time like `openapi.json`).
///
/// Every answer carries a strict Content-Security-Policy (scripts, styles and connections only
/// from this origin, no inline script, no plugins, no framing) and an `ETag`; the pages are
/// revalidated on each load (`Cache-Control: no-cache`), so a new binary's files are picked up
/// at once and an unchanged file costs a 304.
struct WebRoutes {
    /// One embedded file, ready to send.
    struct Asset: Sendable {
        let body: [UInt8]
        let contentType: String
        let etag: String
    }

    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
        + "connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        + "frame-ancestors 'none'"

    /// The embedded files by path below `Web/` (`app/index.html`, `sdk/switchboard.js` …).
    static let assets: [String: Asset] = Dictionary(
        uniqueKeysWithValues: webAssetFiles.map { path, text in
            let body = Array(text.utf8)
            let tag = SHA256.hash(body).prefix(12).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
            return (path, Asset(body: body, contentType: contentType(of: path), etag: "\"\(tag)\""))
        })

    static func contentType(of path: String) -> String {
        switch path.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "json": "application/json"
        default: "text/plain; charset=utf-8"
        }
    }

    func register(in router: inout Router) {
        for (folder, index) in [("app", true), ("console", true), ("sdk", false)] {
            if index {
                router.add("GET", "/\(folder)") { _ in
                    HTTPResponse(status: 308, headers: ["Location": "/\(folder)/", "Content-Length": "0"])
                }
                router.add("GET", "/\(folder)/") { context in
                    try Self.serve("\(folder)/index.html", to: context.request)
                }
            }
            router.add("GET", "/\(folder)/{file}") { context in
                try Self.serve("\(folder)/\(context.parameter("file"))", to: context.request)
            }
        }
    }

    /// The file, or 304 when the client holds this version, or 404.
    static func serve(_ path: String, to request: HTTPRequest) throws(APIError) -> HTTPResponse {
        guard let asset = assets[path] else { throw APIError.notFound("no such file: /\(path)") }
        var headers: HTTPHeaders = [
            "ETag": asset.etag, "Cache-Control": "no-cache", "Content-Security-Policy": contentSecurityPolicy,
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        ]
        if let held = request.headers["If-None-Match"],
            held.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == asset.etag })
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.set("Content-Type", asset.contentType)
        return HTTPResponse(status: 200, headers: headers, body: asset.body)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
