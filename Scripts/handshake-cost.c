// What a TLS reconnect costs in OpenSSL itself, without LegacyAPNs: a client and a server thread
// in one process do N sequential connections over loopback with the fixture certificates, each
// writing one byte and answering six, as a gateway answers a bad frame. Built and run by
// Scripts/handshake-cost.sh; see BENCHMARKS.md ("reconnect").
//
//   handshake-cost CERTS_DIR COUNT tls1.2|tls1.3 full|resumed
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int count;
static int listener;
static SSL_CTX *server_context;

static void fail(const char *what) {
    fprintf(stderr, "handshake-cost: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static void *serve(void *unused) {
    (void)unused;
    for (int i = 0; i < count; i++) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) fail("accept");
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        SSL *ssl = SSL_new(server_context);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) != 1) fail("SSL_accept");
        unsigned char byte;
        if (SSL_read(ssl, &byte, 1) != 1) fail("SSL_read");
        const unsigned char response[6] = {8, 8, 0, 0, 0, 1};
        if (SSL_write(ssl, response, 6) != 6) fail("SSL_write");
        SSL_shutdown(ssl);
        shutdown(fd, SHUT_WR);
        char scratch[256];
        while (read(fd, scratch, sizeof scratch) > 0) {}
        SSL_free(ssl);
        close(fd);
    }
    return NULL;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec + time.tv_nsec / 1e9;
}

static void load(SSL_CTX *context, const char *directory, const char *certificate, const char *key) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, certificate);
    if (SSL_CTX_use_certificate_file(context, path, SSL_FILETYPE_PEM) != 1) fail(path);
    snprintf(path, sizeof path, "%s/%s", directory, key);
    if (SSL_CTX_use_PrivateKey_file(context, path, SSL_FILETYPE_PEM) != 1) fail(path);
}

static void trust(SSL_CTX *context, const char *directory, const char *file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, file);
    if (SSL_CTX_load_verify_locations(context, path, NULL) != 1) fail(path);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: handshake-cost CERTS_DIR COUNT tls1.2|tls1.3 full|resumed\n");
        return 2;
    }
    const char *certs = argv[1];
    count = atoi(argv[2]);
    int version = strcmp(argv[3], "tls1.2") == 0 ? TLS1_2_VERSION : TLS1_3_VERSION;
    int resume = strcmp(argv[4], "resumed") == 0;

    // The same settings as LegacyAPNs' TLSContext: TLS 1.2 at least, verification both ways,
    // sessions kept in the server's cache (no stateless tickets), one TLS 1.3 ticket.
    server_context = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(server_context, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(server_context, version);
    load(server_context, certs, "server.pem", "server.key");
    trust(server_context, certs, "chain.pem");
    SSL_CTX_set_verify(server_context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_CTX_set_session_id_context(server_context, (const unsigned char *)"cost", 4);
    SSL_CTX_set_num_tickets(server_context, 1);
    SSL_CTX_set_options(server_context, SSL_OP_NO_TICKET);

    SSL_CTX *client_context = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(client_context, TLS1_2_VERSION);
    load(client_context, certs, "universal.pem", "universal.key");
    trust(client_context, certs, "ca.pem");
    SSL_CTX_set_verify(client_context, SSL_VERIFY_PEER, NULL);

    listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 128) != 0
        || getsockname(listener, (struct sockaddr *)&address, &length) != 0)
        fail("listen");
    pthread_t server;
    pthread_create(&server, NULL, serve, NULL);

    SSL_SESSION *session = NULL;
    int resumed = 0;
    double cpu = cpu_seconds(), start = now();
    for (int i = 0; i < count; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        SSL *ssl = SSL_new(client_context);
        SSL_set_fd(ssl, fd);
        SSL_set1_host(ssl, "127.0.0.1");
        if (session != NULL) SSL_set_session(ssl, session);
        if (SSL_connect(ssl) != 1) fail("SSL_connect");
        unsigned char response[6];
        if (SSL_write(ssl, "\x09", 1) != 1 || SSL_read(ssl, response, 6) != 6) fail("exchange");
        resumed += SSL_session_reused(ssl);
        if (resume) {
            SSL_SESSION *latest = SSL_get1_session(ssl);
            if (latest != NULL && SSL_SESSION_is_resumable(latest)) {
                SSL_SESSION_free(session);
                session = latest;
            } else {
                SSL_SESSION_free(latest);
            }
        }
        SSL_shutdown(ssl);
        SSL_free(ssl);
        close(fd);
    }
    pthread_join(server, NULL);
    double seconds = now() - start, cpu_used = cpu_seconds() - cpu;
    printf("%s %s: %d connections (%d resumed), %.0f connections/s, %.0f us CPU each (client + server)\n", argv[3],
           argv[4], count, resumed, count / seconds, cpu_used / count * 1e6);
    SSL_SESSION_free(session);
    SSL_CTX_free(client_context);
    SSL_CTX_free(server_context);
    return 0;
}
