/* server.c - the OpenAI-compatible HTTP server: routes over the shared HTTP layer (http.c), batching thread, SSE */
#include "judgerl/clock.h"
#include "judgerl/serve.h"
#include "judgerl/strbuf.h"

#include <math.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/http.h"
#include "serve/respond.h"

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
    jr_strbuf out; /* stream: SSE bytes, read up to out_pos; else the whole body */
    size_t out_pos;
    char id[48];
    long created;
    double t0;
    int oom;
    int live;      /* counted in srv->n_live until freed (its response may still be on its way) */
} job;

struct jr_server {
    jr_serve_opts o;
    char *model_name;
    char **aliases; /* o.aliases copied */
    jr_http *http;
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
    int n_live; /* queued jobs whose response is not yet fully handed to the client */
    uint64_t next_id;
    /* metrics */
    unsigned long long prompt_tokens, completion_tokens;
    jr_http_hist lat;
};

enum { R_NONE, R_HEALTH, R_METRICS, R_MODELS, R_CHAT, R_TEXT };

static enum MHD_Result send_body(jr_server *s, struct MHD_Connection *c, int status, const char *type, char *body) {
    return jr_http_send(s->http, c, status, type, body);
}

static enum MHD_Result send_error(jr_server *s, struct MHD_Connection *c, int status, const char *msg, const char *code) {
    return jr_http_error(s->http, c, status, msg, code);
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
    if (j->live) {
        j->srv->n_live--;
        pthread_cond_broadcast(&j->srv->cv_out);
    }
    jr_serve_req_free(&j->req);
    free(j->prompt);
    jr_constraint_free(j->constraint);
    jr_strbuf_free(&j->out);
    free(j);
}

/* Appends to the job's output; a stream's buffer starts again once the client read all of it. */
static void out_append(job *j, const char *data, size_t n) {
    if (j->out_pos == j->out.n) { jr_strbuf_reset(&j->out); j->out_pos = 0; }
    jr_strbuf_addn(&j->out, data, n);
    if (j->out.oom) j->oom = 1;
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
    jr_http_hist_add(&s->lat, jr_now_s() - j->t0);
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
        char *e = jr_error_body(status, msg, NULL);
        jr_strbuf_reset(&j->out);
        j->out_pos = 0;
        if (e) jr_strbuf_add(&j->out, e);
        else j->oom = 1;
        free(e);
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

/* Queued jobs past the request deadline are answered 504 without running. */
static void expire_queued(jr_server *s) {
    if (s->o.request_timeout <= 0) return;
    double t = jr_now_s();
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
            if (s->queue && s->o.request_timeout > 0) jr_http_timed_wait(&s->cv_sched, &s->mu, 0.1);
            else pthread_cond_wait(&s->cv_sched, &s->mu);
            continue;
        }
        for (int k = 0; k < s->n_running; k++) {
            job *j = s->running[k];
            if (!j->cancelled && s->o.request_timeout > 0 && jr_now_s() - j->t0 > s->o.request_timeout) {
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

/* Waits (under s->mu) until `more` holds or the job finished; checks every 50 ms whether the
 * client went away, and then cancels the job. Returns 0 when the client is gone. */
static int wait_job(jr_server *s, job *j, int (*more)(const job *)) {
    while (!more(j) && !j->finished) {
        jr_http_timed_wait(&s->cv_out, &s->mu, 0.05);
        if (!more(j) && !j->finished && jr_http_client_gone(j->fd)) {
            j->cancelled = 1;
            pthread_cond_signal(&s->cv_sched);
            return 0;
        }
    }
    return 1;
}

static int has_output(const job *j) { return j->out_pos < j->out.n; }
static int never(const job *j) { (void)j; return 0; }

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    job *j = cls;
    jr_server *s = j->srv;
    pthread_mutex_lock(&s->mu);
    if (!wait_job(s, j, has_output)) { pthread_mutex_unlock(&s->mu); return MHD_CONTENT_READER_END_WITH_ERROR; }
    ssize_t n;
    if (j->out_pos < j->out.n) {
        size_t k = j->out.n - j->out_pos;
        if (k > max) k = max;
        memcpy(buf, j->out.p + j->out_pos, k);
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
    jr_strbuf b = {0};
    jr_http_metrics_requests(s->http, &b);
    pthread_mutex_lock(&s->mu);
    jr_http_metrics_value(&b, "judgerl_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", (double)s->prompt_tokens);
    jr_http_metrics_value(&b, "judgerl_completion_tokens_total", "counter", "Generated tokens of finished requests.", (double)s->completion_tokens);
    jr_http_metrics_hist(&b, "judgerl_request_latency_seconds", "Time from arrival to the last token.", &s->lat);
    jr_http_metrics_value(&b, "judgerl_requests_in_flight", "gauge", "Requests holding decode slots.", s->n_running);
    jr_http_metrics_value(&b, "judgerl_requests_queued", "gauge", "Requests waiting for slots.", s->n_queued);
    pthread_mutex_unlock(&s->mu);
    return send_body(s, c, 200, "text/plain; version=0.0.4", jr_strbuf_take(&b));
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

static enum MHD_Result serve_completion(jr_server *s, struct MHD_Connection *c, jr_http_req *cx) {
    /* --max-tokens 0: a request may ask for up to the context (the prompt + max_tokens check follows) */
    int mt_limit = s->o.max_tokens > 0 ? s->o.max_tokens : s->b.lm ? s->b.lm->max_ctx : 1 << 20;
    jr_serve_limits lim = {s->o.parallel, mt_limit, 16, 1024};
    job *j = calloc(1, sizeof *j);
    if (!j) return send_error(s, c, 500, "out of memory", NULL);
    j->srv = s;
    j->refs = 1;
    j->t0 = jr_now_s();
    j->fd = cx->fd;
    j->created = (long)time(NULL);
    if (jr_serve_parse_request(&j->req, cx->route == R_CHAT, cx->body.p ? cx->body.p : "", cx->body.n, &lim)) {
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
    j->live = 1;
    s->n_live++;
    job **pp = &s->queue;
    while (*pp) pp = &(*pp)->next;
    *pp = j;
    s->n_queued++;
    pthread_cond_signal(&s->cv_sched);
    if (j->req.stream) {
        jr_http_count(s->http, 200);
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
    char *body = j->oom ? jr_error_body(500, "out of memory", NULL) : j->out.p;
    if (!j->oom) j->out = (jr_strbuf){0}; /* the body is send_body's now */
    job_unref(j);
    pthread_mutex_unlock(&s->mu);
    return send_body(s, c, st, "application/json", body);
}

static int route(void *ud, const char *url, int *post, int *auth) {
    (void)ud;
    int r = !strcmp(url, "/health") ? R_HEALTH : !strcmp(url, "/metrics") ? R_METRICS : !strcmp(url, "/v1/models") ? R_MODELS
          : !strcmp(url, "/v1/chat/completions") ? R_CHAT : !strcmp(url, "/v1/completions") ? R_TEXT : R_NONE;
    *post = r == R_CHAT || r == R_TEXT;
    *auth = *post || r == R_MODELS;
    return r;
}

static enum MHD_Result serve(void *ud, struct MHD_Connection *c, jr_http_req *cx) {
    jr_server *s = ud;
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

jr_status jr_server_start(jr_server **out, const jr_serve_opts *opts) {
    *out = NULL;
    jr_server *s = calloc(1, sizeof *s);
    if (!s) return jr_fail(JR_ENOMEM, "serve: out of memory");
    s->o = *opts;
    s->model_name = strdup(opts->model_name ? opts->model_name : "judgerl");
    int na = opts->aliases && opts->n_aliases > 0 ? opts->n_aliases : 0;
    s->o.n_aliases = 0; /* counts the copies made, so stop frees exactly those */
    s->o.aliases = NULL;
    int alias_oom = na && !(s->aliases = calloc((size_t)na, sizeof *s->aliases));
    for (int i = 0; !alias_oom && i < na; i++, s->o.n_aliases++) alias_oom = !(s->aliases[i] = strdup(opts->aliases[i]));
    if (s->o.parallel <= 0) s->o.parallel = 4;
    if (s->o.max_tokens < 0) s->o.max_tokens = 0;
    if (s->o.max_queue <= 0) s->o.max_queue = 64;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_sched, NULL);
    pthread_cond_init(&s->cv_out, NULL);
    if (!s->model_name || alias_oom) { jr_server_stop(s, 0); return jr_fail(JR_ENOMEM, "serve: out of memory"); }
    jr_http_opts ho = {.who = "serve", .host = opts->host, .port = opts->port, .api_key = opts->api_key, .max_body = opts->max_body,
                       .max_connections = opts->max_connections, .max_per_client = opts->max_per_client,
                       .header_timeout = opts->header_timeout, .body_timeout = opts->body_timeout, .route = route, .serve = serve, .ud = s};
    jr_status st = jr_http_start(&s->http, &ho);
    if (st) { jr_server_stop(s, 0); return st; }
    *out = s;
    return JR_OK;
}

int jr_server_port(const jr_server *s) { return jr_http_port(s->http); }

jr_status jr_server_set_backend(jr_server *s, const jr_serve_backend *b) {
    if (b->lm->n_slots < s->o.parallel)
        return jr_fail(JR_EINVAL, "serve: the model has %d slots, --parallel is %d", b->lm->n_slots, s->o.parallel);
    s->b = *b;
    jr_status st = jr_gen_open(&s->gen, s->b.lm, &s->b.vocab, s->o.seed);
    if (st) return st;
    if (s->o.prefill_chunk > 0) jr_gen_set_prefill_chunk(s->gen, s->o.prefill_chunk);
    jr_gen_set_itl_target(s->gen, s->o.itl_target);
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
    double until = jr_now_s() + timeout_s;
    while ((s->n_queued || s->n_running) && jr_now_s() < until)
        jr_http_timed_wait(&s->cv_out, &s->mu, 0.05);
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
    /* The generation is over, but a response (a stream's last chunks, [DONE]) may still be on its way:
     * stopping the HTTP daemon now would cut it. Wait until every response is handed over, up to the
     * drain deadline and a few seconds more (for the error bodies of cancelled requests). */
    pthread_mutex_lock(&s->mu);
    double deliver_until = (until > jr_now_s() ? until : jr_now_s()) + 5;
    while (s->n_live && jr_now_s() < deliver_until)
        jr_http_timed_wait(&s->cv_out, &s->mu, 0.05);
    pthread_mutex_unlock(&s->mu);
    jr_http_stop(s->http);
    jr_gen_close(s->gen);
    free(s->running);
    free(s->model_name);
    for (int i = 0; i < s->o.n_aliases; i++) free(s->aliases[i]);
    free(s->aliases);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_sched);
    pthread_cond_destroy(&s->cv_out);
    free(s);
}
