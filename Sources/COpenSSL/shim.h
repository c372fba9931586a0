#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// OpenSSL 3 for cookie-proxy's TLS interception. Function-like macros do not import into Swift: each one the
// proxy needs is a `COpenSSL_`-prefixed static inline function here. Nothing else is added.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/rand.h>
#include <openssl/bio.h>

static inline EVP_PKEY *COpenSSL_EC_P256_generate(void) { return EVP_EC_gen("P-256"); }
static inline long COpenSSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long COpenSSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long COpenSSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long COpenSSL_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
static inline int COpenSSL_BIO_pending(BIO *bio) { return BIO_pending(bio); }
static inline void COpenSSL_free(void *p) { OPENSSL_free(p); }
static inline void COpenSSL_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }
static inline int COpenSSL_set_app_data(SSL *ssl, void *data) { return SSL_set_app_data(ssl, data); }
static inline void *COpenSSL_get_app_data(const SSL *ssl) { return SSL_get_app_data(ssl); }
static inline long COpenSSL_OP_NO_COMPRESSION(void) { return (long)SSL_OP_NO_COMPRESSION; }
static inline long COpenSSL_MODE_RELEASE_BUFFERS(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline int COpenSSL_ERROR_WANT_READ(void) { return SSL_ERROR_WANT_READ; }
static inline int COpenSSL_ERROR_WANT_WRITE(void) { return SSL_ERROR_WANT_WRITE; }
static inline int COpenSSL_ERROR_ZERO_RETURN(void) { return SSL_ERROR_ZERO_RETURN; }
static inline int COpenSSL_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline int COpenSSL_NAMETYPE_host_name(void) { return TLSEXT_NAMETYPE_host_name; }
static inline int COpenSSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
static inline int COpenSSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }

#endif
