/* http.c - the HTTP layer shared by `serve` and `serve-reward`: libmicrohttpd daemon, routes,
 * Bearer auth (constant time), body limits, header/body deadlines (watchdog), per-client cap,
 * status counts, Prometheus text */
#include "judgerl/clock.h"
#include "serve/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/respond.h"

#define N_STATUS 11
static const int status_codes[N_STATUS] = {200, 400, 401, 404, 405, 413, 429, 500, 503, 504, 0};
static const double buckets[JR_HTTP_N_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

/* One TCP connection, for the header and body deadlines: the watchdog shuts down the socket of a
 * connection that has been in the header phase longer than header_timeout (counted from the
 * connection or the end of its previous request) or in the body phase longer than body_timeout. */
enum { PH_HEADERS, PH_BODY, PH_BUSY };
typedef struct sock_ctx {
    struct sock_ctx *prev, *next;
    int fd, phase, shut;
    int served;      /* a complete request has arrived on it */
    uint32_t addr;   /* the client's IPv4 address */
    double since;
} sock_ctx;

struct jr_http {
    jr_http_opts o;
    char *host, *api_key;
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu; /* counts */
    unsigned long long by_status[N_STATUS];
    pthread_mutex_t conn_mu;
    sock_ctx *socks;
    pthread_t watchdog;
    int watchdog_started, stop_watchdog;
};

void jr_http_count(jr_http *h, int status) {
    pthread_mutex_lock(&h->mu);
    int i = 0;
    while (status_codes[i] && status_codes[i] != status) i++;
    h->by_status[i]++;
    pthread_mutex_unlock(&h->mu);
}

enum MHD_Result jr_http_send(jr_http *h, struct MHD_Connection *c, int status, const char *type, char *body) {
    if (!body) {
        status = 500;
        type = "application/json";
        body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"internal_error\",\"param\":null,\"code\":null}}");
        if (!body) return MHD_NO;
    }
    jr_http_count(h, status);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(body); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result jr_http_error(jr_http *h, struct MHD_Connection *c, int status, const char *msg, const char *code) {
    return jr_http_send(h, c, status, "application/json", jr_error_body(status, msg, code));
}

void jr_http_hist_add(jr_http_hist *hh, double s) {
    hh->sum += s;
    hh->count++;
    for (int b = 0; b < JR_HTTP_N_BUCKETS; b++)
        if (s <= buckets[b]) hh->le[b]++;
}

double jr_http_hist_quantile(const jr_http_hist *hh, double q) {
    if (!hh->count) return 0;
    double want = q * (double)hh->count;
    for (int b = 0; b < JR_HTTP_N_BUCKETS; b++)
        if ((double)hh->le[b] >= want) return buckets[b];
    return buckets[JR_HTTP_N_BUCKETS - 1];
}

void jr_http_metrics_requests(jr_http *h, jr_strbuf *b) {
    jr_strbuf_addf(b, "# HELP judgerl_requests_total HTTP responses by status code.\n# TYPE judgerl_requests_total counter\n");
    pthread_mutex_lock(&h->mu);
    for (int i = 0; status_codes[i]; i++) jr_strbuf_addf(b, "judgerl_requests_total{status=\"%d\"} %llu\n", status_codes[i], h->by_status[i]);
    pthread_mutex_unlock(&h->mu);
}

void jr_http_metrics_hist(jr_strbuf *b, const char *name, const char *help, const jr_http_hist *hh) {
    jr_strbuf_addf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int k = 0; k < JR_HTTP_N_BUCKETS; k++) jr_strbuf_addf(b, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[k], hh->le[k]);
    jr_strbuf_addf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, hh->count);
    jr_strbuf_addf(b, "%s_sum %.6f\n%s_count %llu\n", name, hh->sum, name, hh->count);
}

void jr_http_metrics_value(jr_strbuf *b, const char *name, const char *type, const char *help, double v) {
    jr_strbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

int jr_http_client_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return 1;
    char c;
    ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static int authorized(jr_http *h, struct MHD_Connection *c) {
    if (!h->api_key) return 1;
    const char *hd = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!hd || strncmp(hd, "Bearer ", 7)) return 0;
    const char *k = hd + 7;
    size_t a = strlen(k), b = strlen(h->api_key);
    unsigned diff = (unsigned)(a != b);
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned)(k[i] ^ h->api_key[i]);
    return diff == 0;
}

/* ---- connection deadlines and the per-client cap --------------------------------------------- */

static void sock_phase(jr_http *h, struct MHD_Connection *c, int phase) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    sock_ctx *k = ci ? ci->socket_context : NULL;
    if (!k) return;
    pthread_mutex_lock(&h->conn_mu);
    k->phase = phase;
    k->since = jr_now_s();
    if (phase == PH_BUSY) k->served = 1;
    pthread_mutex_unlock(&h->conn_mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code) {
    jr_http *h = cls;
    pthread_mutex_lock(&h->conn_mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        sock_ctx *k = calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (k && ci) {
            k->fd = ci->connect_fd;
            k->since = jr_now_s();
            if (ai && ai->client_addr && ai->client_addr->sa_family == AF_INET)
                k->addr = ((const struct sockaddr_in *)ai->client_addr)->sin_addr.s_addr;
            /* the per-client cap: connections of this address that have not yet sent a complete
             * request (a slow client's); busy and keep-alive connections of a fast client do not count */
            int pending = 0;
            for (sock_ctx *o = h->socks; o; o = o->next) pending += o->addr == k->addr && !o->served && !o->shut;
            if (pending >= h->o.max_per_client) {
                shutdown(k->fd, SHUT_RDWR);
                k->shut = 1;
            }
            k->next = h->socks;
            if (h->socks) h->socks->prev = k;
            h->socks = k;
        } else {
            free(k);
            k = NULL;
        }
        *socket_context = k;
    } else if (*socket_context) { /* closed (MHD closes the fd after this call) */
        sock_ctx *k = *socket_context;
        if (k->prev) k->prev->next = k->next;
        else h->socks = k->next;
        if (k->next) k->next->prev = k->prev;
        free(k);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&h->conn_mu);
}

/* Every 100 ms: shuts down the sockets past their header or body deadline (the connection's
 * thread then sees end-of-file and closes it). */
static void *watchdog_main(void *arg) {
    jr_http *h = arg;
    pthread_mutex_lock(&h->conn_mu);
    while (!h->stop_watchdog) {
        double t = jr_now_s();
        for (sock_ctx *k = h->socks; k; k = k->next) {
            double limit = k->phase == PH_HEADERS ? h->o.header_timeout : k->phase == PH_BODY ? h->o.body_timeout : 0;
            if (!k->shut && limit > 0 && t - k->since > limit) {
                shutdown(k->fd, SHUT_RDWR);
                k->shut = 1;
            }
        }
        pthread_mutex_unlock(&h->conn_mu);
        usleep(100000);
        pthread_mutex_lock(&h->conn_mu);
    }
    pthread_mutex_unlock(&h->conn_mu);
    return NULL;
}

/* ---- requests -------------------------------------------------------------------------------- */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                               const char *upload_data, size_t *upload_data_size, void **con_cls) {
    (void)version;
    jr_http *h = cls;
    jr_http_req *rq = *con_cls;
    if (!rq) {
        sock_phase(h, c, PH_BODY); /* headers are in: the body deadline starts */
        if (!(rq = calloc(1, sizeof *rq))) return MHD_NO;
        *con_cls = rq;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        rq->fd = ci ? ci->connect_fd : -1;
        int want_post = 0, need_auth = 0;
        rq->route = h->o.route(h->o.ud, url, &want_post, &need_auth);
        char m[300];
        if (!rq->route) {
            snprintf(m, sizeof m, "no route %.16s %.200s", method, url);
            return jr_http_error(h, c, 404, m, NULL);
        }
        if (strcmp(method, want_post ? "POST" : "GET")) {
            snprintf(m, sizeof m, "method %.16s not allowed on %.200s (use %s)", method, url, want_post ? "POST" : "GET");
            return jr_http_error(h, c, 405, m, NULL);
        }
        if (need_auth && !authorized(h, c))
            return jr_http_error(h, c, 401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "invalid_api_key");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (want_post && cl && strtoull(cl, NULL, 10) > h->o.max_body) {
            snprintf(m, sizeof m, "the request body is %.30s bytes, the limit is %zu", cl, h->o.max_body);
            return jr_http_error(h, c, 413, m, NULL);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->too_big || rq->body.n + n > h->o.max_body) { rq->too_big = 1; return MHD_YES; }
        jr_strbuf_addn(&rq->body, upload_data, n);
        if (rq->body.oom) return MHD_NO;
        return MHD_YES;
    }
    sock_phase(h, c, PH_BUSY); /* the whole request is in */
    if (rq->too_big) {
        char m[100];
        snprintf(m, sizeof m, "the request body exceeds the limit of %zu bytes", h->o.max_body);
        return jr_http_error(h, c, 413, m, NULL);
    }
    return h->o.serve(h->o.ud, c, rq);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)toe;
    sock_phase(cls, c, PH_HEADERS); /* keep-alive: the next request's headers have their deadline */
    jr_http_req *rq = *con_cls;
    if (!rq) return;
    jr_strbuf_free(&rq->body);
    free(rq);
    *con_cls = NULL;
}

jr_status jr_http_start(jr_http **out, const jr_http_opts *o) {
    *out = NULL;
    jr_http *h = calloc(1, sizeof *h);
    if (!h) return jr_fail(JR_ENOMEM, "%s: out of memory", o->who);
    h->o = *o;
    h->host = strdup(o->host ? o->host : "127.0.0.1");
    h->api_key = o->api_key ? strdup(o->api_key) : NULL;
    if (!h->o.max_body) h->o.max_body = 1 << 20;
    if (h->o.max_connections <= 0) h->o.max_connections = 512;
    /* Half the connections per client address, counting only those that have not yet sent a complete
     * request (see on_connection): on loopback every local client shares 127.0.0.1. */
    if (h->o.max_per_client <= 0) h->o.max_per_client = h->o.max_connections / 2 > 0 ? h->o.max_connections / 2 : 1;
    if (h->o.header_timeout <= 0) h->o.header_timeout = 10;
    if (h->o.body_timeout <= 0) h->o.body_timeout = 30;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->conn_mu, NULL);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)o->port);
    if (!h->host || (o->api_key && !h->api_key) || inet_pton(AF_INET, h->host, &a.sin_addr) != 1) {
        jr_status st = jr_fail(JR_EINVAL, "%s: --host '%s' is not an IPv4 address", o->who, o->host ? o->host : "");
        jr_http_stop(h);
        return st;
    }
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, (uint16_t)o->port, NULL, NULL,
                            handler, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)h->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
    if (!h->d) {
        jr_status st = jr_fail(JR_ENET, "%s: cannot listen on %s:%d (port in use or not permitted)", o->who, h->host, o->port);
        jr_http_stop(h);
        return st;
    }
    if (pthread_create(&h->watchdog, NULL, watchdog_main, h)) {
        jr_http_stop(h);
        return jr_fail(JR_EINTERNAL, "%s: cannot start the connection watchdog thread", o->who);
    }
    h->watchdog_started = 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : o->port;
    *out = h;
    return JR_OK;
}

int jr_http_port(const jr_http *h) { return h->port; }

void jr_http_timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

void jr_http_stop(jr_http *h) {
    if (!h) return;
    if (h->watchdog_started) {
        pthread_mutex_lock(&h->conn_mu);
        h->stop_watchdog = 1;
        pthread_mutex_unlock(&h->conn_mu);
        pthread_join(h->watchdog, NULL);
    }
    if (h->d) MHD_stop_daemon(h->d);
    free(h->host);
    free(h->api_key);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->conn_mu);
    free(h);
}
