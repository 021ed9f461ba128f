/* server.c - the OpenAI-compatible HTTP server: libmicrohttpd routes, auth, limits, batching thread, SSE */
#include "judgerl/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/respond.h"

#define N_STATUS 11
static const int status_codes[N_STATUS] = {200, 400, 401, 404, 405, 413, 429, 500, 503, 504, 0};
#define N_BUCKETS 12
static const double buckets[N_BUCKETS] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

typedef struct job {
    struct job *next;
    jr_server *srv;
    jr_serve_req req;
    int32_t *prompt;
    int n_prompt;
    jr_gen_params gp;
    jr_constraint *constraint;
    jr_gen_req *greq;
    int refs;
    int cancelled;
    int cancel_status; /* when cancelled by the server: the status to answer (503 drain, 504 deadline) */
    int fd;            /* the client's socket (to notice a disconnect), -1 unknown */
    int finished;  /* no more output will be appended */
    int status;    /* non-stream: the HTTP status of out */
    char *out;     /* stream: SSE bytes not yet read; else the whole body */
    size_t out_len, out_pos, out_cap;
    char id[48];
    long created;
    double t0;
    int oom;
} job;

struct jr_server {
    jr_serve_opts o;
    char *host, *api_key, *model_name;
    char **aliases; /* o.aliases copied */
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv_sched, cv_out;
    pthread_t sched;
    int sched_started, stop_sched, draining, ready;
    jr_serve_backend b;
    jr_gen *gen;
    job *queue; /* waiting for slots, FIFO */
    int n_queued;
    job **running;
    int n_running, cap_running;
    uint64_t next_id;
    /* metrics */
    unsigned long long by_status[N_STATUS];
    unsigned long long prompt_tokens, completion_tokens;
    unsigned long long lat_buckets[N_BUCKETS], lat_count;
    double lat_sum;
    /* connection deadlines (watchdog thread) */
    pthread_mutex_t conn_mu;
    struct sock_ctx *socks;
    pthread_t watchdog;
    int watchdog_started, stop_watchdog;
};

/* One TCP connection, for the header and body deadlines: the watchdog shuts down the socket of a
 * connection that has been in the header phase longer than --header-timeout (counted from the
 * connection or the end of its previous request) or in the body phase longer than --body-timeout. */
enum { PH_HEADERS, PH_BODY, PH_BUSY };
typedef struct sock_ctx {
    struct sock_ctx *prev, *next;
    int fd, phase, shut;
    int served;      /* a complete request has arrived on it */
    uint32_t addr;   /* the client's IPv4 address */
    double since;
} sock_ctx;

typedef struct conn {
    int route;
    char *body;
    size_t len, cap;
    int too_big;
} conn;

enum { R_NONE, R_HEALTH, R_METRICS, R_MODELS, R_CHAT, R_TEXT };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void count_status(jr_server *s, int status) {
    int i = 0;
    while (status_codes[i] && status_codes[i] != status) i++;
    s->by_status[i]++;
}

static enum MHD_Result send_body(jr_server *s, struct MHD_Connection *c, int status, const char *type, char *body) {
    pthread_mutex_lock(&s->mu);
    count_status(s, status);
    pthread_mutex_unlock(&s->mu);
    if (!body) {
        status = 500;
        body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"internal_error\",\"param\":null,\"code\":null}}");
        if (!body) return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(body); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_error(jr_server *s, struct MHD_Connection *c, int status, const char *msg, const char *code) {
    return send_body(s, c, status, "application/json", jr_error_body(status, msg, code));
}

static char *dump(json_t *j) {
    if (!j) return NULL;
    char *t = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return t;
}

/* ---- jobs ----------------------------------------------------------------------------------- */

static void job_unref(job *j) { /* under s->mu */
    if (--j->refs > 0) return;
    jr_serve_req_free(&j->req);
    free(j->prompt);
    jr_constraint_free(j->constraint);
    free(j->out);
    free(j);
}

static void out_append(job *j, const char *data, size_t n) {
    if (j->out_pos == j->out_len) j->out_pos = j->out_len = 0;
    if (j->out_len + n + 1 > j->out_cap) {
        size_t cap = j->out_cap ? j->out_cap : 1024;
        while (cap < j->out_len + n + 1) cap *= 2;
        char *b = realloc(j->out, cap);
        if (!b) { j->oom = 1; return; }
        j->out = b;
        j->out_cap = cap;
    }
    memcpy(j->out + j->out_len, data, n);
    j->out_len += n;
    j->out[j->out_len] = 0;
}

static void sse(job *j, json_t *obj) {
    char *t = dump(obj);
    if (!t) { j->oom = 1; return; }
    out_append(j, "data: ", 6);
    out_append(j, t, strlen(t));
    out_append(j, "\n\n", 2);
    free(t);
}

static json_t *chunk_head(job *j) {
    jr_server *s = j->srv;
    json_t *o = json_pack("{s:s,s:s,s:I,s:s}", "id", j->id, "object", j->req.chat ? "chat.completion.chunk" : "text_completion",
                          "created", (json_int_t)j->created, "model", s->model_name);
    if (o && j->req.include_usage) json_object_set_new(o, "usage", json_null());
    return o;
}

/* One SSE chunk for choice `index`: text delta, log-probs of tokens [from, to), finish reason. */
static void stream_chunk(job *j, int index, const jr_gen_seq *q, const char *delta, size_t len, int from, int to,
                         const char *finish, int role) {
    jr_server *s = j->srv;
    json_t *o = chunk_head(j);
    json_t *ch = json_pack("{s:i}", "index", index);
    if (!o || !ch) { json_decref(o); json_decref(ch); j->oom = 1; return; }
    if (j->req.chat) {
        json_t *d = json_object();
        if (role) json_object_set_new(d, "role", json_string("assistant"));
        if (len || role) json_object_set_new(d, "content", jr_json_text(delta, len));
        json_object_set_new(ch, "delta", d);
        json_object_set_new(ch, "logprobs", j->req.logprobs && q && to > from ? jr_chat_logprobs(q, &s->b.vocab, from, to) : json_null());
    } else {
        json_object_set_new(ch, "text", jr_json_text(delta, len));
        json_object_set_new(ch, "logprobs", j->req.logprobs && q && to > from ? jr_text_logprobs(q, &s->b.vocab, from, to, 0) : json_null());
    }
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    json_object_set_new(o, "choices", json_pack("[o]", ch));
    sse(j, o);
}

/* The generator's event callback (from jr_gen_step on the batching thread, which does not hold
 * s->mu during a step): stream new text as it comes. */
static void on_event(void *ud, jr_gen_req *r, int index, const jr_gen_seq *q, const char *delta, size_t len, int tok_from) {
    job *j = ud;
    (void)r;
    if (!j->req.stream) return;
    int to = q->n_text_tokens;
    if (!len && !q->done && !(j->req.logprobs && to > tok_from)) return;
    pthread_mutex_lock(&j->srv->mu);
    stream_chunk(j, index, q, delta, len, tok_from, to, q->done ? q->finish_reason : NULL, 0);
    pthread_cond_broadcast(&j->srv->cv_out);
    pthread_mutex_unlock(&j->srv->mu);
}

static int completion_tokens(const job *j) {
    int c = 0;
    for (int i = 0; i < jr_gen_req_n(j->greq); i++) c += jr_gen_req_seq(j->greq, i)->n_tokens;
    return c;
}

/* Builds the final body (non-stream) or the closing chunks (stream) of a finished job. */
static void job_finish(jr_server *s, job *j) {
    int ct = completion_tokens(j);
    s->prompt_tokens += (unsigned long long)j->n_prompt;
    s->completion_tokens += (unsigned long long)ct;
    double lat = now_s() - j->t0;
    s->lat_sum += lat;
    s->lat_count++;
    for (int b = 0; b < N_BUCKETS; b++)
        if (lat <= buckets[b]) s->lat_buckets[b]++;
    if (j->req.stream) {
        if (j->req.include_usage) {
            json_t *o = chunk_head(j);
            if (o) {
                json_object_set_new(o, "choices", json_array());
                json_object_set_new(o, "usage", jr_usage(j->n_prompt, ct));
            }
            sse(j, o);
        }
        out_append(j, "data: [DONE]\n\n", 14);
    } else {
        json_t *choices = json_array();
        for (int i = 0; i < jr_gen_req_n(j->greq); i++) {
            const jr_gen_seq *q = jr_gen_req_seq(j->greq, i);
            json_t *ch;
            if (j->req.chat)
                ch = json_pack("{s:i,s:{s:s,s:o},s:o,s:s}", "index", i, "message", "role", "assistant", "content",
                               jr_json_text(q->text, q->text_len), "logprobs",
                               j->req.logprobs ? jr_chat_logprobs(q, &s->b.vocab, 0, q->n_text_tokens) : json_null(),
                               "finish_reason", q->finish_reason);
            else
                ch = json_pack("{s:i,s:o,s:o,s:s}", "index", i, "text", jr_json_text(q->text, q->text_len), "logprobs",
                               j->req.logprobs ? jr_text_logprobs(q, &s->b.vocab, 0, q->n_text_tokens, 0) : json_null(),
                               "finish_reason", q->finish_reason);
            json_array_append_new(choices, ch);
        }
        json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:o,s:o}", "id", j->id, "object", j->req.chat ? "chat.completion" : "text_completion",
                              "created", (json_int_t)j->created, "model", s->model_name, "choices", choices, "usage",
                              jr_usage(j->n_prompt, ct));
        char *t = dump(o);
        if (t) { out_append(j, t, strlen(t)); free(t); }
        else j->oom = 1;
        j->status = 200;
    }
}

static void job_fail(job *j, int status, const char *msg) {
    if (j->req.stream) {
        char *e = jr_error_body(status, msg, NULL);
        if (e) {
            out_append(j, "data: ", 6);
            out_append(j, e, strlen(e));
            out_append(j, "\n\ndata: [DONE]\n\n", 16);
            free(e);
        }
    } else {
        free(j->out);
        j->out = jr_error_body(status, msg, NULL);
        j->out_len = j->out ? strlen(j->out) : 0;
        j->out_cap = j->out_len;
        j->out_pos = 0;
        j->status = status;
    }
}

/* A job the server cancelled (drain timeout, request deadline) gets an error body; one whose
 * client went away gets none (nobody reads it). */
static void job_cancelled(job *j) {
    if (j->cancel_status == 503) job_fail(j, 503, "the server is shutting down: the request was cancelled at the end of the drain timeout");
    else if (j->cancel_status == 504) job_fail(j, 504, "the request exceeded the server's request timeout (--request-timeout) and was cancelled");
    else if (!j->req.stream) j->status = 499;
}

static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Queued jobs past the request deadline are answered 504 without running. */
static void expire_queued(jr_server *s) {
    if (s->o.request_timeout <= 0) return;
    double t = now_s();
    for (job **pp = &s->queue; *pp;) {
        job *j = *pp;
        if (t - j->t0 <= s->o.request_timeout) { pp = &j->next; continue; }
        *pp = j->next;
        s->n_queued--;
        j->cancel_status = 504;
        job_cancelled(j);
        j->finished = 1;
        job_unref(j);
    }
    pthread_cond_broadcast(&s->cv_out);
}

/* ---- the batching thread -------------------------------------------------------------------- */

static void *sched_main(void *arg) {
    jr_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop_sched) {
        expire_queued(s);
        /* Admit queued requests while their n fits in the free slots (arrival order). */
        while (s->queue && jr_gen_free_slots(s->gen) >= s->queue->req.n) {
            job *j = s->queue;
            s->queue = j->next;
            s->n_queued--;
            j->next = NULL;
            if (j->cancelled) { job_cancelled(j); j->finished = 1; job_unref(j); continue; }
            jr_status st = jr_gen_add(s->gen, j->prompt, j->n_prompt, j->req.n, &j->gp, on_event, j, &j->greq);
            if (st) {
                job_fail(j, 400, jr_errmsg());
                j->finished = 1;
                job_unref(j);
                continue;
            }
            if (j->req.stream && j->req.chat)
                for (int i = 0; i < j->req.n; i++) stream_chunk(j, i, NULL, "", 0, 0, 0, NULL, 1);
            if (s->n_running == s->cap_running) {
                int cap = s->cap_running ? s->cap_running * 2 : 16;
                job **r = realloc(s->running, (size_t)cap * sizeof *r);
                if (!r) { jr_gen_release(s->gen, j->greq); j->greq = NULL; job_fail(j, 500, "out of memory"); j->finished = 1; job_unref(j); continue; }
                s->running = r;
                s->cap_running = cap;
            }
            s->running[s->n_running++] = j;
        }
        if (s->n_running == 0) {
            pthread_cond_broadcast(&s->cv_out);
            if (s->queue && s->o.request_timeout > 0) timed_wait(&s->cv_sched, &s->mu, 0.1);
            else pthread_cond_wait(&s->cv_sched, &s->mu);
            continue;
        }
        for (int k = 0; k < s->n_running; k++) {
            job *j = s->running[k];
            if (!j->cancelled && s->o.request_timeout > 0 && now_s() - j->t0 > s->o.request_timeout) {
                j->cancelled = 1;
                j->cancel_status = 504;
            }
            if (j->cancelled) jr_gen_cancel(s->gen, j->greq);
        }
        /* The step runs without the lock: HTTP threads (health, metrics, queueing, streaming
         * readers) never wait for a decode step. Only this thread touches s->gen and s->running. */
        pthread_mutex_unlock(&s->mu);
        jr_status st = jr_gen_step(s->gen);
        char msg[512];
        if (st) snprintf(msg, sizeof msg, "generation failed: %s", jr_errmsg());
        pthread_mutex_lock(&s->mu);
        int m = 0;
        for (int k = 0; k < s->n_running; k++) {
            job *j = s->running[k];
            if (!st && !jr_gen_req_done(j->greq)) { s->running[m++] = j; continue; }
            const char *err = st ? NULL : jr_gen_req_error(j->greq);
            if (st) job_fail(j, 500, msg);
            else if (j->cancelled) job_cancelled(j);
            else if (err) job_fail(j, 400, err);
            else job_finish(s, j);
            jr_gen_release(s->gen, j->greq);
            j->greq = NULL;
            j->finished = 1;
            job_unref(j);
        }
        s->n_running = m;
        pthread_cond_broadcast(&s->cv_out);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

/* 1 when the client closed its end of the socket (or it failed): its request is cancelled. */
static int client_gone(int fd) {
    if (fd < 0) return 0;
    struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return 1;
    char c;
    ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Waits (under s->mu) until `more` holds or the job finished; checks every 50 ms whether the
 * client went away, and then cancels the job. Returns 0 when the client is gone. */
static int wait_job(jr_server *s, job *j, int (*more)(const job *)) {
    while (!more(j) && !j->finished) {
        timed_wait(&s->cv_out, &s->mu, 0.05);
        if (!more(j) && !j->finished && client_gone(j->fd)) {
            j->cancelled = 1;
            pthread_cond_signal(&s->cv_sched);
            return 0;
        }
    }
    return 1;
}

static int has_output(const job *j) { return j->out_pos < j->out_len; }
static int never(const job *j) { (void)j; return 0; }

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    job *j = cls;
    jr_server *s = j->srv;
    pthread_mutex_lock(&s->mu);
    if (!wait_job(s, j, has_output)) { pthread_mutex_unlock(&s->mu); return MHD_CONTENT_READER_END_WITH_ERROR; }
    ssize_t n;
    if (j->out_pos < j->out_len) {
        size_t k = j->out_len - j->out_pos;
        if (k > max) k = max;
        memcpy(buf, j->out + j->out_pos, k);
        j->out_pos += k;
        n = (ssize_t)k;
    } else {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void stream_free(void *cls) {
    job *j = cls;
    jr_server *s = j->srv;
    pthread_mutex_lock(&s->mu);
    j->cancelled = 1;
    job_unref(j);
    pthread_cond_signal(&s->cv_sched);
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result send_models(jr_server *s, struct MHD_Connection *c) {
    json_t *data = json_array();
    for (int i = -1; data && i < s->o.n_aliases; i++) {
        json_t *m = json_pack("{s:s,s:s,s:I,s:s,s:i}", "id", i < 0 ? s->model_name : s->aliases[i], "object", "model", "created",
                              (json_int_t)0, "owned_by", "judgerl", "max_model_len", s->b.lm ? s->b.lm->max_ctx : 0);
        if (m && s->b.fingerprint) json_object_set_new(m, "judgerl_fingerprint", json_string(s->b.fingerprint));
        json_array_append_new(data, m);
    }
    json_t *o = data ? json_pack("{s:s,s:o}", "object", "list", "data", data) : NULL;
    return send_body(s, c, 200, "application/json", dump(o));
}

/* 1 when requests may name the model `name` (the served name or an alias). */
static int serves_name(const jr_server *s, const char *name) {
    if (!strcmp(name, s->model_name)) return 1;
    for (int i = 0; i < s->o.n_aliases; i++)
        if (!strcmp(name, s->aliases[i])) return 1;
    return 0;
}

static enum MHD_Result send_metrics(jr_server *s, struct MHD_Connection *c) {
    size_t cap = 8192;
    char *t = malloc(cap);
    if (!t) return send_error(s, c, 500, "out of memory", NULL);
    size_t o = 0;
    pthread_mutex_lock(&s->mu);
#define P(...) do { int w_ = snprintf(t + o, cap - o, __VA_ARGS__); if (w_ > 0 && (size_t)w_ < cap - o) o += (size_t)w_; } while (0)
    P("# HELP judgerl_requests_total HTTP responses by status code.\n# TYPE judgerl_requests_total counter\n");
    for (int i = 0; status_codes[i]; i++) P("judgerl_requests_total{status=\"%d\"} %llu\n", status_codes[i], s->by_status[i]);
    P("# HELP judgerl_prompt_tokens_total Prompt tokens of finished requests.\n# TYPE judgerl_prompt_tokens_total counter\n");
    P("judgerl_prompt_tokens_total %llu\n", s->prompt_tokens);
    P("# HELP judgerl_completion_tokens_total Generated tokens of finished requests.\n# TYPE judgerl_completion_tokens_total counter\n");
    P("judgerl_completion_tokens_total %llu\n", s->completion_tokens);
    P("# HELP judgerl_request_latency_seconds Time from arrival to the last token.\n# TYPE judgerl_request_latency_seconds histogram\n");
    for (int b = 0; b < N_BUCKETS; b++) P("judgerl_request_latency_seconds_bucket{le=\"%g\"} %llu\n", buckets[b], s->lat_buckets[b]);
    P("judgerl_request_latency_seconds_bucket{le=\"+Inf\"} %llu\n", s->lat_count);
    P("judgerl_request_latency_seconds_sum %.6f\njudgerl_request_latency_seconds_count %llu\n", s->lat_sum, s->lat_count);
    P("# HELP judgerl_requests_in_flight Requests holding decode slots.\n# TYPE judgerl_requests_in_flight gauge\n");
    P("judgerl_requests_in_flight %d\n", s->n_running);
    P("# HELP judgerl_requests_queued Requests waiting for slots.\n# TYPE judgerl_requests_queued gauge\n");
    P("judgerl_requests_queued %d\n", s->n_queued);
#undef P
    pthread_mutex_unlock(&s->mu);
    return send_body(s, c, 200, "text/plain; version=0.0.4", t);
}

/* Turns a parsed request into a job: prompt ids, limits, sampling settings, constraint. Returns
 * the HTTP status to answer with (0 when the job is ready), with the message in msg. */
static int prepare(jr_server *s, job *j, char *msg, size_t msz) {
    jr_serve_req *r = &j->req;
    jr_status st;
    if (r->chat) st = s->b.encode_chat(s->b.tok, r->n_msgs, r->roles, (const char *const *)r->contents, &j->prompt, &j->n_prompt);
    else if (r->prompt) st = s->b.encode(s->b.tok, r->prompt, strlen(r->prompt), &j->prompt, &j->n_prompt);
    else {
        st = JR_OK;
        j->prompt = malloc((size_t)r->n_prompt_ids * sizeof *j->prompt);
        if (!j->prompt) { snprintf(msg, msz, "out of memory"); return 500; }
        memcpy(j->prompt, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof *j->prompt);
        j->n_prompt = r->n_prompt_ids;
        for (int i = 0; i < j->n_prompt; i++)
            if (j->prompt[i] >= s->b.vocab.tb.n) { snprintf(msg, msz, "prompt[%d]: token id %d is not below the vocabulary size %d", i, (int)j->prompt[i], s->b.vocab.tb.n); return 400; }
    }
    if (st) { snprintf(msg, msz, "%s", jr_errmsg()); return st == JR_ENOMEM ? 500 : 400; }
    if (j->n_prompt == 0) { snprintf(msg, msz, "the prompt is empty"); return 400; }
    for (int i = 0; i < r->n_bias; i++)
        if (r->bias_ids[i] >= s->b.vocab.tb.n) {
            snprintf(msg, msz, "logit_bias: token id %d is not below the vocabulary size %d", (int)r->bias_ids[i], s->b.vocab.tb.n);
            return 400;
        }
    int ctx = s->b.lm->max_ctx;
    int mt = r->max_tokens;
    if (mt == 0) { /* absent: what fits, at most --max-tokens (512 when that follows the context) */
        mt = ctx - j->n_prompt;
        int cap = s->o.max_tokens > 0 ? s->o.max_tokens : 512;
        if (mt > cap) mt = cap;
    }
    if (mt <= 0 || j->n_prompt + mt > ctx) {
        snprintf(msg, msz, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the prompt or max_tokens.",
                 ctx, j->n_prompt + (mt > 0 ? mt : 0), j->n_prompt, mt > 0 ? mt : 0);
        return 400;
    }
    jr_gen_params *g = &j->gp;
    *g = jr_gen_params_default();
    g->max_tokens = mt;
    g->sample.temperature = r->temperature;
    g->sample.top_p = r->top_p;
    g->sample.top_k = r->top_k;
    g->sample.min_p = r->min_p;
    g->sample.n_bias = r->n_bias;
    g->sample.bias_ids = r->bias_ids;
    g->sample.bias_vals = r->bias_vals;
    g->has_seed = r->has_seed;
    g->seed = r->seed;
    g->n_stop = r->n_stop;
    g->stop = r->stop;
    g->ignore_eos = r->ignore_eos;
    g->stop_ids = r->stop_ids;
    g->n_stop_ids = r->n_stop_ids;
    g->logprobs = r->logprobs;
    g->top_logprobs = r->top_logprobs;
    if (r->n_choices) st = jr_constraint_choice(&j->constraint, &s->b.vocab.tb, r->choices, r->n_choices);
    else if (r->regex) st = jr_constraint_regex(&j->constraint, &s->b.vocab.tb, r->regex);
    if (st) { snprintf(msg, msz, "%s", jr_errmsg()); return 400; }
    g->constraint = j->constraint;
    return 0;
}

static enum MHD_Result serve_completion(jr_server *s, struct MHD_Connection *c, conn *cx) {
    /* --max-tokens 0: a request may ask for up to the context (the prompt + max_tokens check follows) */
    int mt_limit = s->o.max_tokens > 0 ? s->o.max_tokens : s->b.lm ? s->b.lm->max_ctx : 1 << 20;
    jr_serve_limits lim = {s->o.parallel, mt_limit, 16, 1024};
    job *j = calloc(1, sizeof *j);
    if (!j) return send_error(s, c, 500, "out of memory", NULL);
    j->srv = s;
    j->refs = 1;
    j->t0 = now_s();
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    j->fd = ci ? ci->connect_fd : -1;
    j->created = (long)time(NULL);
    if (jr_serve_parse_request(&j->req, cx->route == R_CHAT, cx->body ? cx->body : "", cx->len, &lim)) {
        char *e = jr_error_body(400, jr_errmsg(), NULL);
        free(j);
        return send_body(s, c, 400, "application/json", e);
    }
    char msg[600];
    int status = 0;
    if (!j->req.model) { snprintf(msg, sizeof msg, "model: required (this server serves '%s')", s->model_name); status = 400; }
    else if (!serves_name(s, j->req.model)) {
        snprintf(msg, sizeof msg, "The model '%.200s' does not exist (this server serves '%.200s')", j->req.model, s->model_name);
        status = 404;
    }
    if (!status) status = prepare(s, j, msg, sizeof msg);
    if (status) {
        enum MHD_Result ret = send_error(s, c, status, msg, status == 404 ? "model_not_found" : NULL);
        pthread_mutex_lock(&s->mu);
        job_unref(j);
        pthread_mutex_unlock(&s->mu);
        return ret;
    }
    pthread_mutex_lock(&s->mu);
    if (s->draining) {
        job_unref(j);
        pthread_mutex_unlock(&s->mu);
        return send_error(s, c, 503, "the server is shutting down", NULL);
    }
    if (s->n_queued >= s->o.max_queue) {
        job_unref(j);
        pthread_mutex_unlock(&s->mu);
        return send_error(s, c, 429, "too many requests are waiting; retry later", NULL);
    }
    snprintf(j->id, sizeof j->id, "%s-%llu%06llx", j->req.chat ? "chatcmpl" : "cmpl", (unsigned long long)j->created,
             (unsigned long long)++s->next_id);
    j->refs = 2; /* this connection + the batching thread */
    job **pp = &s->queue;
    while (*pp) pp = &(*pp)->next;
    *pp = j;
    s->n_queued++;
    pthread_cond_signal(&s->cv_sched);
    if (j->req.stream) {
        count_status(s, 200);
        pthread_mutex_unlock(&s->mu);
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, j, stream_free);
        if (!r) { stream_free(j); return MHD_NO; }
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    if (!wait_job(s, j, never)) { /* the client went away: the batching thread drops the job */
        job_unref(j);
        pthread_mutex_unlock(&s->mu);
        return MHD_NO;
    }
    int st = j->oom ? 500 : j->status;
    char *body = j->oom ? jr_error_body(500, "out of memory", NULL) : j->out;
    if (!j->oom) { j->out = NULL; j->out_len = j->out_cap = 0; }
    job_unref(j);
    pthread_mutex_unlock(&s->mu);
    return send_body(s, c, st, "application/json", body);
}

static int authorized(jr_server *s, struct MHD_Connection *c) {
    if (!s->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7)) return 0;
    const char *k = h + 7;
    size_t a = strlen(k), b = strlen(s->api_key);
    unsigned diff = (unsigned)(a != b);
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned)(k[i] ^ s->api_key[i]);
    return diff == 0;
}

/* ---- connection deadlines and the per-client cap --------------------------------------------- */

static void sock_phase(jr_server *s, struct MHD_Connection *c, int phase) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    sock_ctx *k = ci ? ci->socket_context : NULL;
    if (!k) return;
    pthread_mutex_lock(&s->conn_mu);
    k->phase = phase;
    k->since = now_s();
    if (phase == PH_BUSY) k->served = 1;
    pthread_mutex_unlock(&s->conn_mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code) {
    jr_server *s = cls;
    pthread_mutex_lock(&s->conn_mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        sock_ctx *k = calloc(1, sizeof *k);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (k && ci) {
            k->fd = ci->connect_fd;
            k->since = now_s();
            if (ai && ai->client_addr && ai->client_addr->sa_family == AF_INET)
                k->addr = ((const struct sockaddr_in *)ai->client_addr)->sin_addr.s_addr;
            /* the per-client cap: connections of this address that have not yet sent a complete
             * request (a slow client's); busy and keep-alive connections of a fast client do not count */
            int pending = 0;
            for (sock_ctx *o = s->socks; o; o = o->next) pending += o->addr == k->addr && !o->served && !o->shut;
            if (pending >= s->o.max_per_client) {
                shutdown(k->fd, SHUT_RDWR);
                k->shut = 1;
            }
            k->next = s->socks;
            if (s->socks) s->socks->prev = k;
            s->socks = k;
        } else {
            free(k);
            k = NULL;
        }
        *socket_context = k;
    } else if (*socket_context) { /* closed (MHD closes the fd after this call) */
        sock_ctx *k = *socket_context;
        if (k->prev) k->prev->next = k->next;
        else s->socks = k->next;
        if (k->next) k->next->prev = k->prev;
        free(k);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&s->conn_mu);
}

/* Every 100 ms: shuts down the sockets past their header or body deadline (the connection's
 * thread then sees end-of-file and closes it). */
static void *watchdog_main(void *arg) {
    jr_server *s = arg;
    pthread_mutex_lock(&s->conn_mu);
    while (!s->stop_watchdog) {
        double t = now_s();
        for (sock_ctx *k = s->socks; k; k = k->next) {
            double limit = k->phase == PH_HEADERS ? s->o.header_timeout : k->phase == PH_BODY ? s->o.body_timeout : 0;
            if (!k->shut && limit > 0 && t - k->since > limit) {
                shutdown(k->fd, SHUT_RDWR);
                k->shut = 1;
            }
        }
        pthread_mutex_unlock(&s->conn_mu);
        usleep(100000);
        pthread_mutex_lock(&s->conn_mu);
    }
    pthread_mutex_unlock(&s->conn_mu);
    return NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                               const char *upload_data, size_t *upload_data_size, void **con_cls) {
    (void)version;
    jr_server *s = cls;
    conn *cx = *con_cls;
    if (!cx) {
        sock_phase(s, c, PH_BODY); /* headers are in: the body deadline starts */
        if (!(cx = calloc(1, sizeof *cx))) return MHD_NO;
        *con_cls = cx;
        int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
        if (!strcmp(url, "/health")) cx->route = R_HEALTH;
        else if (!strcmp(url, "/metrics")) cx->route = R_METRICS;
        else if (!strcmp(url, "/v1/models")) cx->route = R_MODELS;
        else if (!strcmp(url, "/v1/chat/completions")) cx->route = R_CHAT;
        else if (!strcmp(url, "/v1/completions")) cx->route = R_TEXT;
        else {
            char m[300];
            snprintf(m, sizeof m, "no route %.16s %.200s", method, url);
            return send_error(s, c, 404, m, NULL);
        }
        int want_post = cx->route == R_CHAT || cx->route == R_TEXT;
        if ((want_post && !post) || (!want_post && !get)) {
            char m[300];
            snprintf(m, sizeof m, "method %.16s not allowed on %.200s (use %s)", method, url, want_post ? "POST" : "GET");
            return send_error(s, c, 405, m, NULL);
        }
        if ((cx->route == R_MODELS || want_post) && !authorized(s, c))
            return send_error(s, c, 401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "invalid_api_key");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (want_post && cl && strtoull(cl, NULL, 10) > s->o.max_body) {
            char m[200];
            snprintf(m, sizeof m, "the request body is %s bytes, the limit is %zu", cl, s->o.max_body);
            return send_error(s, c, 413, m, NULL);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (cx->too_big || cx->len + n > s->o.max_body) { cx->too_big = 1; return MHD_YES; }
        if (cx->len + n + 1 > cx->cap) {
            size_t cap = cx->cap ? cx->cap : 4096;
            while (cap < cx->len + n + 1) cap *= 2;
            char *b = realloc(cx->body, cap);
            if (!b) return MHD_NO;
            cx->body = b;
            cx->cap = cap;
        }
        memcpy(cx->body + cx->len, upload_data, n);
        cx->len += n;
        return MHD_YES;
    }
    sock_phase(s, c, PH_BUSY); /* the whole request is in */
    if (cx->too_big) {
        char m[100];
        snprintf(m, sizeof m, "the request body exceeds the limit of %zu bytes", s->o.max_body);
        return send_error(s, c, 413, m, NULL);
    }
    pthread_mutex_lock(&s->mu);
    int ready = s->ready, draining = s->draining;
    pthread_mutex_unlock(&s->mu);
    switch (cx->route) {
    case R_HEALTH:
        if (!ready) return send_error(s, c, 503, "the model is loading", NULL);
        if (draining) return send_error(s, c, 503, "the server is shutting down", NULL);
        return send_body(s, c, 200, "application/json", strdup("{\"status\":\"ok\"}"));
    case R_METRICS: return send_metrics(s, c);
    case R_MODELS:
        if (!ready) return send_error(s, c, 503, "the model is loading", NULL);
        return send_models(s, c);
    default:
        if (!ready) return send_error(s, c, 503, "the model is loading", NULL);
        if (draining) return send_error(s, c, 503, "the server is shutting down", NULL);
        return serve_completion(s, c, cx);
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)toe;
    sock_phase(cls, c, PH_HEADERS); /* keep-alive: the next request's headers have their deadline */
    conn *cx = *con_cls;
    if (!cx) return;
    free(cx->body);
    free(cx);
    *con_cls = NULL;
}

jr_status jr_server_start(jr_server **out, const jr_serve_opts *opts) {
    *out = NULL;
    jr_server *s = calloc(1, sizeof *s);
    if (!s) return jr_fail(JR_ENOMEM, "serve: out of memory");
    s->o = *opts;
    s->host = strdup(opts->host ? opts->host : "127.0.0.1");
    s->model_name = strdup(opts->model_name ? opts->model_name : "judgerl");
    int na = opts->aliases && opts->n_aliases > 0 ? opts->n_aliases : 0;
    s->o.n_aliases = 0; /* counts the copies made, so stop frees exactly those */
    s->o.aliases = NULL;
    int alias_oom = na && !(s->aliases = calloc((size_t)na, sizeof *s->aliases));
    for (int i = 0; !alias_oom && i < na; i++, s->o.n_aliases++) alias_oom = !(s->aliases[i] = strdup(opts->aliases[i]));
    s->api_key = opts->api_key ? strdup(opts->api_key) : NULL;
    if (s->o.parallel <= 0) s->o.parallel = 4;
    if (s->o.max_tokens < 0) s->o.max_tokens = 0;
    if (s->o.max_queue <= 0) s->o.max_queue = 64;
    if (!s->o.max_body) s->o.max_body = 1 << 20;
    if (s->o.max_connections <= 0) s->o.max_connections = 512;
    /* Half the connections per client address, counting only those that have not yet sent a complete
     * request (see on_connection): on loopback every local client shares 127.0.0.1 (a judge client
     * keeps up to 64 connections, judgerl probe opens a second one beside it). */
    if (s->o.max_per_client <= 0) s->o.max_per_client = s->o.max_connections / 2 > 0 ? s->o.max_connections / 2 : 1;
    if (s->o.header_timeout <= 0) s->o.header_timeout = 10;
    if (s->o.body_timeout <= 0) s->o.body_timeout = 30;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->conn_mu, NULL);
    pthread_cond_init(&s->cv_sched, NULL);
    pthread_cond_init(&s->cv_out, NULL);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)opts->port);
    if (!s->host || !s->model_name || alias_oom) {
        jr_server_stop(s, 0);
        return jr_fail(JR_ENOMEM, "serve: out of memory");
    }
    if (inet_pton(AF_INET, s->host, &a.sin_addr) != 1) {
        jr_status st = jr_fail(JR_EINVAL, "serve: --host '%s' is not an IPv4 address", opts->host ? opts->host : "");
        jr_server_stop(s, 0);
        return st;
    }
    s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, (uint16_t)opts->port, NULL, NULL,
                            handler, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)s->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->d) {
        jr_status st = jr_fail(JR_ENET, "serve: cannot listen on %s:%d (port in use or not permitted)", s->host, opts->port);
        jr_server_stop(s, 0);
        return st;
    }
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s)) {
        jr_server_stop(s, 0);
        return jr_fail(JR_EINTERNAL, "serve: cannot start the connection watchdog thread");
    }
    s->watchdog_started = 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : opts->port;
    *out = s;
    return JR_OK;
}

int jr_server_port(const jr_server *s) { return s->port; }

jr_status jr_server_set_backend(jr_server *s, const jr_serve_backend *b) {
    if (b->lm->n_slots < s->o.parallel)
        return jr_fail(JR_EINVAL, "serve: the model has %d slots, --parallel is %d", b->lm->n_slots, s->o.parallel);
    s->b = *b;
    jr_status st = jr_gen_open(&s->gen, s->b.lm, &s->b.vocab, s->o.seed);
    if (st) return st;
    if (pthread_create(&s->sched, NULL, sched_main, s)) {
        jr_gen_close(s->gen);
        s->gen = NULL;
        return jr_fail(JR_EINTERNAL, "serve: cannot start the batching thread");
    }
    pthread_mutex_lock(&s->mu);
    s->sched_started = 1;
    s->ready = 1;
    pthread_mutex_unlock(&s->mu);
    return JR_OK;
}

void jr_server_stop(jr_server *s, double timeout_s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    double until = now_s() + timeout_s;
    while ((s->n_queued || s->n_running) && now_s() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&s->cv_out, &s->mu, &ts);
    }
    /* Whatever is left is cancelled: queued jobs are failed, running ones aborted. */
    while (s->queue) {
        job *j = s->queue;
        s->queue = j->next;
        s->n_queued--;
        job_fail(j, 503, "the server is shutting down");
        j->finished = 1;
        job_unref(j);
    }
    for (int k = 0; k < s->n_running; k++) {
        job *j = s->running[k];
        if (!j->cancelled) j->cancel_status = 503;
        j->cancelled = 1;
    }
    pthread_cond_broadcast(&s->cv_sched);
    pthread_mutex_unlock(&s->mu);
    if (s->sched_started) {
        /* Let the batching thread finish the cancelled jobs, then stop it. */
        pthread_mutex_lock(&s->mu);
        while (s->n_running) {
            pthread_cond_signal(&s->cv_sched);
            pthread_cond_wait(&s->cv_out, &s->mu);
        }
        s->stop_sched = 1;
        pthread_cond_signal(&s->cv_sched);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->sched, NULL);
    }
    if (s->watchdog_started) {
        pthread_mutex_lock(&s->conn_mu);
        s->stop_watchdog = 1;
        pthread_mutex_unlock(&s->conn_mu);
        pthread_join(s->watchdog, NULL);
    }
    if (s->d) MHD_stop_daemon(s->d);
    jr_gen_close(s->gen);
    free(s->running);
    free(s->host);
    free(s->model_name);
    for (int i = 0; i < s->o.n_aliases; i++) free(s->aliases[i]);
    free(s->aliases);
    free(s->api_key);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->conn_mu);
    pthread_cond_destroy(&s->cv_sched);
    pthread_cond_destroy(&s->cv_out);
    free(s);
}
