// The floor of `legacy-push send`: what the TLS connection itself costs. It writes frames that are
// already encoded, from a file, straight through OpenSSL in 16 KiB SSL_writes, with the same
// client certificate and trust as the CLI, then waits for the gateway's answer to the confirmation
// barrier that ends the file. No JSON, no resend bookkeeping, no threads. The `cli-floor`
// benchmark runs it alternately with `legacy-push send --input` and compares their CPU.
//
//   tls-floor HOST PORT CA_PEM CLIENT_P12 PASSPHRASE_FILE FRAMES_FILE
//
// Exit status 0 when the gateway answered the barrier (the last 13 bytes of FRAMES_FILE), else 1.
#include <openssl/err.h>
#include <openssl/pkcs12.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { record_size = 16 * 1024, read_size = 64 * 1024, barrier_size = 13 };

static void fail(const char *what) {
    fprintf(stderr, "tls-floor: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static SSL_CTX *client_context(const char *ca, const char *p12_path, const char *passphrase_path) {
    char passphrase[1024] = {0};
    FILE *file = fopen(passphrase_path, "r");
    if (!file || !fgets(passphrase, sizeof passphrase, file)) fail(passphrase_path);
    fclose(file);
    passphrase[strcspn(passphrase, "\r\n")] = 0;

    file = fopen(p12_path, "rb");
    if (!file) fail(p12_path);
    PKCS12 *p12 = d2i_PKCS12_fp(file, NULL);
    fclose(file);
    EVP_PKEY *key = NULL;
    X509 *certificate = NULL;
    if (!p12 || PKCS12_parse(p12, passphrase, &key, &certificate, NULL) != 1) fail("PKCS12_parse");
    PKCS12_free(p12);

    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (!context) fail("SSL_CTX_new");
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_options(context, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_read_ahead(context, 1);
    if (SSL_CTX_use_certificate(context, certificate) != 1 || SSL_CTX_use_PrivateKey(context, key) != 1)
        fail("SSL_CTX_use_certificate");
    if (SSL_CTX_load_verify_locations(context, ca, NULL) != 1) fail(ca);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
    X509_free(certificate);
    EVP_PKEY_free(key);
    return context;
}

static int connect_to(const char *host, int port) {
    int descriptor = socket(AF_INET, SOCK_STREAM, 0);
    if (descriptor < 0) fail("socket");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) fail("inet_pton");
    if (connect(descriptor, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
    int one = 1;
    setsockopt(descriptor, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return descriptor;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: tls-floor HOST PORT CA_PEM CLIENT_P12 PASSPHRASE_FILE FRAMES_FILE\n");
        return 2;
    }
    SSL_CTX *context = client_context(argv[3], argv[4], argv[5]);
    int frames = open(argv[6], O_RDONLY);
    if (frames < 0) fail(argv[6]);

    int descriptor = connect_to(argv[1], atoi(argv[2]));
    SSL *ssl = SSL_new(context);
    SSL_set_fd(ssl, descriptor);
    if (SSL_connect(ssl) != 1) fail("SSL_connect");

    // The barrier that ends the file, to recognise the gateway's answer.
    unsigned char barrier[barrier_size];
    off_t size = lseek(frames, 0, SEEK_END);
    if (size < barrier_size || pread(frames, barrier, barrier_size, size - barrier_size) != barrier_size)
        fail("reading the barrier");
    lseek(frames, 0, SEEK_SET);

    static unsigned char buffer[read_size];
    ssize_t count;
    while ((count = read(frames, buffer, sizeof buffer)) > 0) {
        for (ssize_t offset = 0; offset < count; offset += record_size) {
            int length = (int)(count - offset < record_size ? count - offset : record_size);
            if (SSL_write(ssl, buffer + offset, length) != length) fail("SSL_write");
        }
    }
    if (count < 0) fail("read");

    // The gateway answers the barrier with a 6-byte error response naming it.
    unsigned char response[6];
    int have = 0;
    while (have < 6) {
        int read_count = SSL_read(ssl, response + have, 6 - have);
        if (read_count <= 0) fail("SSL_read");
        have += read_count;
    }
    SSL_free(ssl);
    close(descriptor);
    SSL_CTX_free(context);
    return response[0] == 8 && memcmp(response + 2, barrier + 1, 4) == 0 ? 0 : 1;
}
