/* http.h - the HTTP layer shared by `serve` and `serve-reward`: listening, routes, Bearer auth,
 * body limits, header/body deadlines, the per-client cap, status counts and Prometheus metrics
 * (server-internal) */
#ifndef JUDGERL_SERVE_HTTP_H
#define JUDGERL_SERVE_HTTP_H

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>

#include "judgerl/status.h"
#include "judgerl/strbuf.h"

/* One request as the layer hands it to serve(): its route and its whole body. */
typedef struct jr_http_req {
    int route;
    jr_strbuf body; /* body.p: NUL-terminated, NULL when empty; body.n bytes */
    int too_big;
    int fd;     /* the client's socket (to notice a disconnect) */
} jr_http_req;

typedef struct jr_http_opts {
    const char *who;          /* "serve", in messages */
    const char *host;         /* IPv4 address */
    int port;                 /* 0 = a free port */
    const char *api_key;      /* NULL = no auth (copied) */
    size_t max_body;
    int max_connections, max_per_client;
    double header_timeout, body_timeout;
    /* The route of url (> 0), or 0 when unknown (404). *post: the route takes POST (else GET);
     * *auth: it needs the API key. */
    int (*route)(void *ud, const char *url, int *post, int *auth);
    /* Answers a complete request (call jr_http_send / jr_http_error). */
    enum MHD_Result (*serve)(void *ud, struct MHD_Connection *c, jr_http_req *rq);
    void *ud;
} jr_http_opts;

typedef struct jr_http jr_http;

/* Listens and starts the connection watchdog. On failure *out is NULL and the message names the
 * address. */
jr_status jr_http_start(jr_http **out, const jr_http_opts *o);
int jr_http_port(const jr_http *h);
/* Stops the daemon (closing every connection) and the watchdog; frees h. Safe on NULL. */
void jr_http_stop(jr_http *h);

/* Waits on cv (mu held) for at most `seconds`: the step of the wait loops (drains, a job's output),
 * which re-check their condition and deadline after each wake-up. */
void jr_http_timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double seconds);

/* Queues body (owned, freed here; NULL = out of memory -> 500) with status; counts the status. */
enum MHD_Result jr_http_send(jr_http *h, struct MHD_Connection *c, int status, const char *type, char *body);
/* Counts a response sent some other way (a stream). */
void jr_http_count(jr_http *h, int status);
/* An OpenAI-style error body {"error": {"message", "type", "param", "code"}}. */
enum MHD_Result jr_http_error(jr_http *h, struct MHD_Connection *c, int status, const char *msg, const char *code);

/* Latency histogram in seconds (Prometheus buckets). Not locked: callers hold their own lock. */
#define JR_HTTP_N_BUCKETS 12
typedef struct jr_http_hist {
    unsigned long long le[JR_HTTP_N_BUCKETS], count;
    double sum;
} jr_http_hist;
void jr_http_hist_add(jr_http_hist *hh, double seconds);
/* The quantile q (0..1) estimated from the buckets (the bucket's upper bound), 0 when empty. */
double jr_http_hist_quantile(const jr_http_hist *hh, double q);

/* Metrics text: judgerl_requests_total{status} (from the layer's counts), a histogram, a counter
 * and a gauge, each with its HELP and TYPE lines. */
void jr_http_metrics_requests(jr_http *h, jr_strbuf *b);
void jr_http_metrics_hist(jr_strbuf *b, const char *name, const char *help, const jr_http_hist *hh);
void jr_http_metrics_value(jr_strbuf *b, const char *name, const char *type, const char *help, double v);

/* 1 when the client closed its end of the socket (its request can be abandoned). */
int jr_http_client_gone(int fd);

#endif
