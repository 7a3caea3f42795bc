#ifndef SWITCHBOARD_CCRYPTO_SHIM_H
#define SWITCHBOARD_CCRYPTO_SHIM_H

/* Hide every API that OpenSSL 3.0 deprecated, so SwitchboardCrypto cannot start using one by accident
   (HMAC_CTX, SHA256_Init and friends simply do not exist for Swift). */
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1

#include <openssl/crypto.h> /* CRYPTO_memcmp, OPENSSL_cleanse */
#include <openssl/err.h>    /* ERR_get_error, ERR_error_string_n, ERR_clear_error */
#include <openssl/evp.h>    /* EVP_MD_CTX, EVP_sha256, EVP_PBE_scrypt */
#include <openssl/hmac.h>   /* HMAC() one-shot (not deprecated in 3.0) */
#include <openssl/rand.h>   /* RAND_bytes */

/* No static inline wrappers are needed: every call SwitchboardCrypto makes is a plain C function,
   and the constants it reads (EVP_MAX_MD_SIZE) are integer macros Swift imports directly. */

#endif
