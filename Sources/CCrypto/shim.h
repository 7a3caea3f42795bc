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
#include <openssl/bio.h>    /* BIO_new(BIO_s_mem()), BIO_write, BIO_read: PEM text in and out of OpenSSL */
#include <openssl/pem.h>    /* PEM_read_bio_PrivateKey, PEM_read_bio_PUBKEY, PEM_write_bio_PUBKEY/PrivateKey */
#include <openssl/ec.h>     /* ECDSA_SIG_*, d2i/i2d_ECDSA_SIG, EC_curve_nist2nid (none deprecated in 3.0) */
#include <openssl/bn.h>     /* BN_bin2bn, BN_bn2binpad, BN_free: raw r || s <-> ECDSA_SIG */
#include <openssl/objects.h> /* OBJ_sn2nid, NID_X9_62_prime256v1 (from obj_mac.h) */
#include <openssl/rsa.h>    /* EVP_PKEY_CTX_set_rsa_keygen_bits (RS256 keys for tests and emulators) */

/* No static inline wrappers are needed: every call SwitchboardCrypto makes is a plain C function,
   and the constants it reads (EVP_MAX_MD_SIZE, NID_X9_62_prime256v1) are integer macros Swift imports directly. */

#endif
