// Thin, header-only bridge from OpenSSL 3 to Swift.
//
// Swift imports OpenSSL's real functions directly. What it cannot import are the
// function-like macros over `*_ctrl` calls and the `SSL_OP_*` constants (built from
// `SSL_OP_BIT`), so this header re-exports exactly the ones LegacyAPNs calls, each
// named `COpenSSL_<original name>`. Nothing here holds state.
#ifndef LEGACYAPNS_COPENSSL_SHIM_H
#define LEGACYAPNS_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>

#include <signal.h>
#include <stdint.h>

// MARK: - Constants Swift cannot see

static const uint64_t COpenSSL_SSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
static const uint64_t COpenSSL_SSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;
static const uint64_t COpenSSL_SSL_OP_IGNORE_UNEXPECTED_EOF = SSL_OP_IGNORE_UNEXPECTED_EOF;
static const uint64_t COpenSSL_SSL_OP_NO_TICKET = SSL_OP_NO_TICKET;
static const long COpenSSL_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER = SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
static const long COpenSSL_SSL_MODE_ENABLE_PARTIAL_WRITE = SSL_MODE_ENABLE_PARTIAL_WRITE;
static const long COpenSSL_SSL_MODE_RELEASE_BUFFERS = SSL_MODE_RELEASE_BUFFERS;
static const unsigned long COpenSSL_XN_FLAG_RFC2253 = XN_FLAG_RFC2253;
static const unsigned long COpenSSL_XN_FLAG_ONELINE = XN_FLAG_ONELINE;

// MARK: - Macros over *_ctrl

static inline int COpenSSL_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int COpenSSL_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline int COpenSSL_SSL_set_max_proto_version(SSL *ssl, int version) {
    return (int)SSL_set_max_proto_version(ssl, version);
}

static inline long COpenSSL_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline int COpenSSL_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline int COpenSSL_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

/// Lets OpenSSL read whole socket buffers instead of a 5-byte record header and then the body:
/// half the read syscalls.
static inline long COpenSSL_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    return SSL_CTX_set_read_ahead(ctx, yes);
}

static inline long COpenSSL_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

static inline void COpenSSL_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

// MARK: - Stacks of certificates

static inline int COpenSSL_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}

static inline X509 *COpenSSL_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

static inline STACK_OF(X509) *COpenSSL_sk_X509_new_null(void) {
    return sk_X509_new_null();
}

static inline int COpenSSL_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) {
    return sk_X509_push(stack, cert);
}

/// Frees the stack and drops one reference on every certificate in it.
static inline void COpenSSL_sk_X509_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}

/// Frees the stack only; the certificates stay alive.
static inline void COpenSSL_sk_X509_free(STACK_OF(X509) *stack) {
    sk_X509_free(stack);
}

// MARK: - PKCS#12 safes and bags (PKCS12_parse keeps only the first key; LegacyAPNs looks at all)

static inline int COpenSSL_sk_PKCS7_num(const STACK_OF(PKCS7) *stack) {
    return sk_PKCS7_num(stack);
}

static inline PKCS7 *COpenSSL_sk_PKCS7_value(const STACK_OF(PKCS7) *stack, int index) {
    return sk_PKCS7_value(stack, index);
}

static inline void COpenSSL_sk_PKCS7_pop_free(STACK_OF(PKCS7) *stack) {
    sk_PKCS7_pop_free(stack, PKCS7_free);
}

/// The content type of a PKCS#7 ContentInfo (NID_pkcs7_data, NID_pkcs7_encrypted, ...).
static inline int COpenSSL_PKCS7_type_nid(const PKCS7 *p7) {
    return OBJ_obj2nid(p7->type);
}

static inline int COpenSSL_sk_PKCS12_SAFEBAG_num(const STACK_OF(PKCS12_SAFEBAG) *stack) {
    return sk_PKCS12_SAFEBAG_num(stack);
}

static inline PKCS12_SAFEBAG *COpenSSL_sk_PKCS12_SAFEBAG_value(const STACK_OF(PKCS12_SAFEBAG) *stack, int index) {
    return sk_PKCS12_SAFEBAG_value(stack, index);
}

static inline void COpenSSL_sk_PKCS12_SAFEBAG_pop_free(STACK_OF(PKCS12_SAFEBAG) *stack) {
    sk_PKCS12_SAFEBAG_pop_free(stack, PKCS12_SAFEBAG_free);
}

// MARK: - Errors

static inline int COpenSSL_ERR_GET_LIB(unsigned long code) {
    return ERR_GET_LIB(code);
}

static inline int COpenSSL_ERR_GET_REASON(unsigned long code) {
    return ERR_GET_REASON(code);
}

// MARK: - Process

/// Writing to a socket the peer has closed must fail with EPIPE, not kill the process.
static inline void COpenSSL_ignore_sigpipe(void) {
    signal(SIGPIPE, SIG_IGN);
}

// MARK: - Credentials (certificates, keys, PKCS#12)
//
// Added for the credentials work (Certificate, PrivateKey, ClientIdentity, PKCS#12 writing).

/// `ERR_R_UNSUPPORTED` ("unsupported"), what OpenSSL reports for RC2-40 without the legacy provider.
static const int COpenSSL_ERR_R_UNSUPPORTED = ERR_R_UNSUPPORTED;

#endif
