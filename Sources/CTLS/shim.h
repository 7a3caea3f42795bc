#ifndef SWITCHBOARD_CTLS_SHIM_H
#define SWITCHBOARD_CTLS_SHIM_H

/* OpenSSL's TLS half (libssl) for the APNs emulator's --tls mode: a self-signed certificate made
   at start and a TLS server with ALPN h2. Only SwitchboardAPNsEmulator imports this module;
   SwitchboardCrypto keeps its own CCrypto for libcrypto. */

/* Hide every API OpenSSL 3.0 deprecated, as CCrypto does. */
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1

#include <openssl/ssl.h>    /* SSL_CTX, SSL, TLS_server_method, SSL_read/SSL_write, ALPN select callback */
#include <openssl/err.h>    /* ERR_get_error, ERR_error_string_n, ERR_clear_error */
#include <openssl/evp.h>    /* EVP_PKEY, EVP_sha256 */
#include <openssl/ec.h>     /* EVP_EC_gen */
#include <openssl/x509.h>   /* X509_new, X509_sign, X509_NAME_add_entry_by_txt */
#include <openssl/x509v3.h> /* X509V3_CTX, X509V3_EXT_nconf_nid, NID_subject_alt_name */
#include <openssl/pem.h>    /* PEM_write_bio_X509 */
#include <openssl/bio.h>    /* BIO_new(BIO_s_mem()), BIO_read, BIO_ctrl_pending */

/* EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call. */
static inline EVP_PKEY *switchboard_tls_generate_p256_key(void) {
    return EVP_EC_gen("P-256");
}

/* SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl; returns 1 on success. */
static inline int switchboard_tls_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/* SSL_OP_IGNORE_UNEXPECTED_EOF is a shifted uint64_t macro Swift does not import. With it, a client
   that closes without close_notify (curl does) reads as an orderly end, not an SSL error. */
static inline void switchboard_tls_ctx_ignore_unexpected_eof(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

/* SSL_set_mode is a macro over SSL_ctrl. Partial writes and a moving write buffer let the
   emulator write from whatever buffer holds its pending output, as a non-blocking loop needs. */
static inline void switchboard_tls_set_nonblocking_modes(SSL *ssl) {
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

#endif
