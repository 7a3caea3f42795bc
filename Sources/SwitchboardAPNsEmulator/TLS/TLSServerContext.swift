internal import CTLS

/// The one choke point where libssl/libcrypto return codes become ``APNsEmulatorTLSError``s.
///
/// Call it right after the OpenSSL function, on the same thread: the error queue is
/// thread-local, and building the error drains it.
enum TLSLibrary {
    /// Throws unless `result` is 1 (or, with `positive`, any value above 0).
    static func check(
        _ result: Int32, _ operation: @autoclosure () -> String, positive: Bool = false
    ) throws(APNsEmulatorTLSError) {
        guard result == 1 || (positive && result > 0) else { throw failure(operation()) }
    }

    /// Returns `value`, or throws if OpenSSL returned `NULL`.
    static func nonNull<T>(_ value: T?, _ operation: @autoclosure () -> String) throws(APNsEmulatorTLSError) -> T {
        guard let value else { throw failure(operation()) }
        return value
    }

    /// Builds an error from (and empties) this thread's OpenSSL error queue.
    static func failure(_ operation: String) -> APNsEmulatorTLSError {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return APNsEmulatorTLSError(
            operation: operation,
            detail: messages.isEmpty ? "OpenSSL reported no detail" : messages.joined(separator: "; "))
    }
}

/// Owns one `EVP_PKEY` (the certificate's P-256 key) and frees it in `deinit`.
final class TLSPrivateKey {
    let handle: OpaquePointer

    init() throws(APNsEmulatorTLSError) {
        handle = try TLSLibrary.nonNull(switchboard_tls_generate_p256_key(), "EVP_EC_gen")
    }

    deinit {
        EVP_PKEY_free(handle)
    }
}

/// Owns one `X509` certificate and frees it in `deinit`.
final class TLSCertificate {
    let handle: OpaquePointer

    /// Makes a self-signed certificate for `key` naming `settings`' hosts and addresses: CA
    /// (so a client can trust it as its own root) and a TLS server certificate at once.
    init(selfSignedWith key: TLSPrivateKey, settings: APNsEmulatorTLS) throws(APNsEmulatorTLSError) {
        handle = try TLSLibrary.nonNull(X509_new(), "X509_new")
        try TLSLibrary.check(X509_set_version(handle, 2), "X509_set_version")  // 2 means v3
        let serial = Int64.random(in: 1...Int64.max)
        try TLSLibrary.check(ASN1_INTEGER_set_int64(X509_get_serialNumber(handle), serial), "ASN1_INTEGER_set_int64")
        _ = try TLSLibrary.nonNull(X509_gmtime_adj(X509_getm_notBefore(handle), -3600), "X509_gmtime_adj")
        _ = try TLSLibrary.nonNull(
            X509_gmtime_adj(X509_getm_notAfter(handle), settings.validityDays * 86_400), "X509_gmtime_adj")
        try TLSLibrary.check(X509_set_pubkey(handle, key.handle), "X509_set_pubkey")
        let name = try TLSLibrary.nonNull(X509_get_subject_name(handle), "X509_get_subject_name")
        try TLSLibrary.check(
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "Switchboard APNs emulator", -1, -1, 0),
            "X509_NAME_add_entry_by_txt")
        try TLSLibrary.check(X509_set_issuer_name(handle, name), "X509_set_issuer_name")

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, handle, handle, nil, nil, 0)
        let alternativeNames = (settings.dnsNames.map { "DNS:\($0)" } + settings.ipAddresses.map { "IP:\($0)" })
            .joined(separator: ",")
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:TRUE"),
            (NID_key_usage, "critical,digitalSignature,keyCertSign"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_subject_alt_name, alternativeNames),
        ]
        for (nid, value) in extensions {
            let ext = try TLSLibrary.nonNull(
                X509V3_EXT_nconf_nid(nil, &context, nid, value), "X509V3_EXT_nconf_nid \(value)")
            defer { X509_EXTENSION_free(ext) }
            try TLSLibrary.check(X509_add_ext(handle, ext, -1), "X509_add_ext")
        }
        try TLSLibrary.check(X509_sign(handle, key.handle, EVP_sha256()), "X509_sign", positive: true)
    }

    deinit {
        X509_free(handle)
    }

    /// The certificate as PEM (`-----BEGIN CERTIFICATE-----`).
    func pem() throws(APNsEmulatorTLSError) -> String {
        let bio = try TLSMemoryBIO()
        try TLSLibrary.check(PEM_write_bio_X509(bio.handle, handle), "PEM_write_bio_X509")
        return try bio.readAll()
    }
}

/// Owns one memory `BIO` and frees it in `deinit`.
final class TLSMemoryBIO {
    let handle: OpaquePointer

    init() throws(APNsEmulatorTLSError) {
        handle = try TLSLibrary.nonNull(BIO_new(BIO_s_mem()), "BIO_new")
    }

    deinit {
        BIO_free(handle)
    }

    /// Everything written to the BIO, as text.
    func readAll() throws(APNsEmulatorTLSError) -> String {
        let count = Int(BIO_ctrl_pending(handle))
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { BIO_read(handle, $0.baseAddress, Int32(count)) }
        guard read == count else { throw TLSLibrary.failure("BIO_read") }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Owns one server `SSL_CTX` (TLS 1.2+, ALPN `h2` only, the self-signed certificate) and frees
/// it in `deinit`.
final class TLSServerContext {
    let handle: OpaquePointer
    /// The certificate clients must trust, as PEM.
    let certificatePEM: String

    init(_ settings: APNsEmulatorTLS) throws(APNsEmulatorTLSError) {
        let key = try TLSPrivateKey()
        let certificate = try TLSCertificate(selfSignedWith: key, settings: settings)
        certificatePEM = try certificate.pem()
        handle = try TLSLibrary.nonNull(SSL_CTX_new(TLS_server_method()), "SSL_CTX_new")
        // The context takes its own references to the certificate and key.
        try TLSLibrary.check(switchboard_tls_ctx_set_min_tls12(handle), "SSL_CTX_set_min_proto_version")
        try TLSLibrary.check(SSL_CTX_use_certificate(handle, certificate.handle), "SSL_CTX_use_certificate")
        try TLSLibrary.check(SSL_CTX_use_PrivateKey(handle, key.handle), "SSL_CTX_use_PrivateKey")
        try TLSLibrary.check(SSL_CTX_check_private_key(handle), "SSL_CTX_check_private_key")
        switchboard_tls_ctx_ignore_unexpected_eof(handle)
        SSL_CTX_set_alpn_select_cb(handle, Self.selectH2, nil)
    }

    deinit {
        SSL_CTX_free(handle)
    }

    /// Picks `h2` from the client's ALPN list, or fails the handshake: APNs speaks HTTP/2 only.
    private static let selectH2:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, out, outLength, offered, offeredLength, _ in
            guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            var index = 0
            let total = Int(offeredLength)
            while index < total {
                let length = Int(offered[index])
                if length == 2, index + 2 < total, offered[index + 1] == UInt8(ascii: "h"),
                    offered[index + 2] == UInt8(ascii: "2")
                {
                    out.pointee = offered + index + 1
                    outLength.pointee = 2
                    return SSL_TLSEXT_ERR_OK
                }
                index += 1 + length
            }
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }
}
