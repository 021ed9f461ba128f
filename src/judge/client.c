/* client.c - the judge client: one I/O thread drives every request through libcurl's multi
 * interface, with least-in-flight routing, token buckets, retries with full-jitter backoff, the
 * cache and the protocols' parse/combine steps; a sample that fails is UNSCORED, never 0 */
#include <ctype.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <time.h>

#include "judge/cache.h"
#include "judge/identity.h"
#include "judge/dialect.h"
#include "judge/redact.h"
#include "judge/response.h"
#include "judgerl/clock.h"
#include "judgerl/judge.h"
#include "judgerl/strbuf.h"
#include "judgerl/fsutil.h"
#include "judgerl/rng.h"

#define MAX_PROTOS 16
#define MAX_ROUNDS 32
#define MAX_BODY (64u << 20)

typedef struct endpoint {
    char *url;     /* the POST URL */
    char *model;
    int conc, in_flight; /* conc: requests in flight at most (concurrency capped by max_connections) */
    int max_conn;        /* HTTP connections (max_connections) */
    jr_server_info info; /* its kind (given or detected) */
    json_t *cfields;     /* judge.constraint in its kind's request fields, or NULL */
    char *desc;          /* one line for the log: URL, kind, how it was found, limits */
    double rtok, ttok;  /* token bucket levels (requests, tokens) */
    double down_until;  /* after a connect failure: avoided until then while others can serve */
    double pause_until; /* after 429/503 with Retry-After: nothing is sent to it before then */
} endpoint;

typedef struct sample sample;
typedef struct job job;

/* One call of one sample, from its first request to its result. */
struct job {
    job *next;
    job *wprev, *wnext;   /* the list of jobs on the wire */
    sample *s;
    int index;            /* the call's index in s->calls */
    char *body;           /* the request body sent */
    char key[65];         /* cache key */
    int http_attempts;    /* requests sent for this call */
    int fails;            /* transient failures so far */
    int parse_fails;      /* answers that did not parse */
    int no_cache;         /* a parse failure: the next answer must come from the server */
    jr_judge_constraint *cons; /* the call's own constraint (jr_judge_call.constraint), or NULL: judge.constraint */
    int wrapped;          /* the call's constraint goes as a JSON schema answered {"answer": ...} */
    double not_before;    /* monotonic time before which it is not sent */
    double t_first;
    double est_tokens;
    /* while on the wire */
    CURL *easy;
    endpoint *ep;
    jr_strbuf resp; /* the answer's body as it arrives */
    int too_big;
    double retry_after;
    int rl_empty[2];      /* x-ratelimit-remaining-{requests,tokens} was 0 */
    double rl_reset[2];   /* x-ratelimit-reset-{requests,tokens} in seconds */
};

struct sample {
    sample *prev, *next;  /* the live list (I/O thread), or the inbox/done lists (next only) */
    uint64_t ticket;
    void *user;
    char *id;
    json_t *row;
    int proto;
    int rounds;
    jr_judge_calls calls;
    jr_call_result *res;
    int res_cap;
    int open_calls;       /* calls of the current round still running */
    double t_submit;
    jr_judge_result result;
};

struct jr_judge {
    const jr_protocol *proto[MAX_PROTOS];
    void *pstate[MAX_PROTOS];
    int n_proto;
    jr_judge_opts o;  /* a copy; what it borrows lives until the last add_protocol */
    char *cfg_dir;
    endpoint *ep;
    int n_ep, rr;
    char *api_key;
    struct curl_slist *hdrs;
    int chat, stream, max_tokens, max_attempts, parse_attempts;
    double temperature, backoff_base, backoff_max, retry_after_max, rpm, tpm;
    long timeout_ms, connect_ms;
    json_t *extra_body;
    jr_judge_constraint constraint; /* judge.constraint */
    int wrapped;                    /* the constraint goes as a JSON schema answered {"answer": ...} */
    jr_cache *cache;
    char *identity;      /* who answers (identity.h) + "\n" + the model name: the cache key's prefix */
    long max_model_len;  /* the smallest context an endpoint reported (0: unknown) */
    int answered;        /* a request got a 2xx answer (I/O thread) */
    jr_rng rng;
    double t_bucket;
    /* shared with callers, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thr;
    int thr_started, stop, submitted_any;
    sample *inbox, *inbox_tail, *done, *done_tail;
    uint64_t next_ticket, pending;
    jr_judge_stats st;
    char *fatal;
    /* the I/O thread's own: curl's sockets in an epoll set (curl_multi_socket_action), an
     * eventfd to wake it, curl's timer */
    CURLM *multi;
    int epfd, evfd;
    double curl_deadline;
    job *ready, *ready_tail, *delayed, *wire;
    int n_waiting;  /* jobs in ready + delayed */
    sample *live;
    CURL **pool;
    int n_pool, cap_pool;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* The API key out of a text the client keeps (judge/redact.c). */
static char *redact(const jr_judge *j, char *s) { return jr_redact_secret(s, j->api_key); }

#define fmt jr_strfmt

/* ---- results ---------------------------------------------------------------------------- */

void jr_judge_result_free(jr_judge_result *r) {
    if (!r) return;
    free(r->id);
    json_decref(r->scores);
    json_decref(r->detail);
    free(r->error);
    memset(r, 0, sizeof *r);
}

static void sample_free(sample *s) {
    if (!s) return;
    json_decref(s->row);
    free(s->id);
    jr_judge_calls_free(&s->calls);
    for (int i = 0; i < s->res_cap; i++) {
        json_decref(s->res[i].detail);
        free(s->res[i].error);
    }
    free(s->res);
    jr_judge_result_free(&s->result);
    free(s);
}

static void job_free(job *jb) {
    if (!jb) return;
    if (jb->cons) jr_judge_constraint_free(jb->cons);
    free(jb->cons);
    free(jb->body);
    jr_strbuf_free(&jb->resp);
    free(jb);
}

/* ---- the I/O thread: queues ------------------------------------------------------------- */

static void push_ready(jr_judge *j, job *jb, int front) {
    j->n_waiting++;
    jb->next = NULL;
    if (front) {
        jb->next = j->ready;
        j->ready = jb;
        if (!j->ready_tail) j->ready_tail = jb;
    } else {
        if (j->ready_tail) j->ready_tail->next = jb;
        else j->ready = jb;
        j->ready_tail = jb;
    }
}

static void live_remove(jr_judge *j, sample *s) {
    if (s->prev) s->prev->next = s->next;
    else j->live = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* The sample is finished: move it to the done list and wake collectors. */
static void sample_done(jr_judge *j, sample *s) {
    live_remove(j, s);
    s->result.latency_s = jr_now_s() - s->t_submit;
    pthread_mutex_lock(&j->mu);
    j->st.done++;
    if (s->result.status == JR_SCORE_OK) j->st.scored++;
    else j->st.unscored++;
    j->st.unscored_frac = (double)j->st.unscored / (double)j->st.done;
    s->next = NULL;
    if (j->done_tail) j->done_tail->next = s;
    else j->done = s;
    j->done_tail = s;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void unscore(jr_judge *j, sample *s, char *reason /* owned */) {
    s->result.status = JR_SCORE_UNSCORED;
    s->result.reward = NAN;
    s->result.error = redact(j, reason ? reason : jr_strdup("unscored (out of memory)"));
    json_decref(s->result.scores);
    s->result.scores = NULL;
}

static void start_call(jr_judge *j, sample *s, int index);

/* Every call of the current round is finished: ask the protocol to combine. */
static void combine(jr_judge *j, sample *s) {
    const jr_protocol *p = j->proto[s->proto];
    int n = s->calls.n;
    jr_judge_outcome out = {0};
    jr_verdict v = p->combine(j->pstate[s->proto], s->row, &s->calls, s->res, n, &out);
    s->rounds++;
    s->result.attempts = 0;
    s->result.n_cached = 0;
    for (int i = 0; i < n; i++) {
        s->result.attempts += s->res[i].attempts;
        s->result.n_cached += s->res[i].cached;
    }
    s->result.n_calls = n;
    if (v == JR_VERDICT_MORE && s->calls.n > n && s->rounds < MAX_ROUNDS) {
        json_decref(out.scores);
        json_decref(out.detail);
        free(out.reason);
        if (s->calls.n > s->res_cap) {
            jr_call_result *r = realloc(s->res, sizeof *r * (size_t)s->calls.n);
            if (!r) { unscore(j, s, NULL); sample_done(j, s); return; }
            memset(r + s->res_cap, 0, sizeof *r * (size_t)(s->calls.n - s->res_cap));
            s->res = r;
            s->res_cap = s->calls.n;
        }
        int total = s->calls.n;
        s->open_calls = total - n;
        for (int i = n; i < total; i++) start_call(j, s, i);
        return;
    }
    s->result.detail = out.detail;
    if (v == JR_VERDICT_SCORED && isfinite(out.reward)) {
        s->result.status = JR_SCORE_OK;
        s->result.reward = out.reward;
        s->result.scores = out.scores;
        free(out.reason);
    } else {
        json_decref(out.scores);
        char *why = out.reason;
        if (v == JR_VERDICT_SCORED) { free(why); why = fmt("protocol %s gave a non-finite reward", p->name); }
        else if (v == JR_VERDICT_MORE) { free(why); why = fmt("protocol %s asked for more calls %s", p->name, s->rounds >= MAX_ROUNDS ? "too many times" : "but added none"); }
        else if (!why) why = fmt("protocol %s gave no reason", p->name);
        unscore(j, s, why);
    }
    sample_done(j, s);
}

/* A call is finished (ok or failed): record its result; combine when its round is complete. */
static void finish_call(jr_judge *j, job *jb, int ok, double value, json_t *detail, char *error, int cached) {
    sample *s = jb->s;
    jr_call_result *r = &s->res[jb->index];
    r->ok = ok;
    r->value = ok ? value : NAN;
    r->detail = detail;
    r->error = redact(j, error);
    r->attempts = jb->http_attempts;
    r->cached = cached;
    r->latency_s = jr_now_s() - jb->t_first;
    job_free(jb);
    if (--s->open_calls == 0) combine(j, s);
}

/* A choice sent as a JSON schema comes back as {"answer": "<choice>"}: *text becomes the choice,
 * and *lp_view (new, or NULL) the log-probs from the token where the choice starts. An answer of
 * another shape is left as it is (the constraint check then refuses it). */
static void unwrap_answer(char **text, const json_t *logprobs, json_t **lp_view) {
    *lp_view = NULL;
    json_t *o = json_loads(*text, 0, NULL);
    const char *a = json_string_value(json_object_get(o, "answer"));
    const char *at = a ? strstr(*text, "\"answer\"") : NULL;
    if (at) at = strchr(at + 8, '"');
    char *val = a && at ? jr_strdup(a) : NULL;
    json_decref(o);
    if (!val) return;
    size_t off = (size_t)(at + 1 - *text), pos = 0, i;
    free(*text);
    *text = val;
    json_t *e;
    json_array_foreach(logprobs, i, e) {
        size_t tl = strlen(json_string_value(json_object_get(e, "token")) ? json_string_value(json_object_get(e, "token")) : "");
        if (pos + tl > off) break;
        pos += tl;
    }
    if (i < json_array_size(logprobs)) {
        *lp_view = json_array();
        for (; i < json_array_size(logprobs); i++) json_array_append(*lp_view, json_array_get(logprobs, i));
    }
}

/* 1 when text satisfies the call's constraint (or judge.constraint); else 0 with the reason and
 * the judge's text in why. */
static int constraint_ok(const jr_judge *j, const job *jb, const char *text, char *why, size_t why_len) {
    char r[128];
    if (jr_judge_constraint_check(jb->cons ? jb->cons : &j->constraint, text, r, sizeof r)) return 1;
    snprintf(why, why_len, "answer outside %s (%s): judge's text '%.200s'", jb->cons ? "the call's constraint" : "judge.constraint", r, text);
    return 0;
}

/* The request fields of the call's own constraint (jr_judge_call.constraint) for the endpoints'
 * server kind; the parsed constraint stays with the job for the answer's check. */
static jr_status call_constraint(jr_judge *j, job *jb, const json_t *spec, json_t **fields) {
    *fields = NULL;
    if (!(jb->cons = jr_calloc(1, sizeof *jb->cons))) return JR_ENOMEM;
    jr_status st = jr_judge_constraint_parse(spec, "the protocol's constraint", jb->cons);
    if (!st) st = jr_judge_constraint_fields(jb->cons, &j->ep[0].info, fields, &jb->wrapped);
    return st;
}

/* Hands an answer (from the server or the cache) to the protocol's parser. */
static void handle_answer(jr_judge *j, job *jb, const char *raw_content, const char *finish, json_t *logprobs, int cached, long total_tokens) {
    sample *s = jb->s;
    /* an answer quoting the API key, in its text or its log-prob tokens: the key goes nowhere
     * (detail, cache, row, logs) */
    char *content = jr_redacted_copy(raw_content ? raw_content : "", j->api_key);
    jr_redact_logprobs(logprobs, j->api_key);
    char *fin = jr_redacted_copy(finish ? finish : "", j->api_key);
    finish = fin ? fin : "";
    const jr_protocol *p = j->proto[s->proto];
    char *text = content ? jr_judge_strip_reasoning(content) : NULL;
    json_t *lp_view = NULL;
    if (text && (jb->cons ? jb->wrapped : j->wrapped)) unwrap_answer(&text, logprobs, &lp_view);
    jr_judge_response resp = {text ? text : "", content ? content : "", finish ? finish : "", lp_view ? lp_view : logprobs, cached,
                              total_tokens};
    double value = NAN;
    json_t *detail = NULL;
    char why[512] = "";
    jr_parse_rc rc = !text ? JR_PARSE_GIVE_UP
                     : !constraint_ok(j, jb, text, why, sizeof why)
                         ? JR_PARSE_RETRY
                         : p->parse(j->pstate[s->proto], s->row, &s->calls.v[jb->index], jb->index, &resp, &value, &detail, why, sizeof why);
    free(text);
    json_decref(lp_view);
    if (!why[0]) snprintf(why, sizeof why, "unparsable answer");
    if (rc == JR_PARSE_OK) {
        if (!cached && j->cache) {
            char *lp = logprobs ? json_dumps(logprobs, JSON_COMPACT) : NULL;
            jr_cache_put(j->cache, jb->key, j->ep[0].model, content ? content : "", finish ? finish : "", lp);
            free(lp);
        }
        finish_call(j, jb, 1, value, detail, NULL, cached);
        free(content);
        free(fin);
        return;
    }
    json_decref(detail);
    jb->parse_fails++;
    if (rc == JR_PARSE_RETRY && jb->parse_fails < j->parse_attempts) {
        jb->no_cache = 1;
        pthread_mutex_lock(&j->mu);
        j->st.retries += !cached;
        pthread_mutex_unlock(&j->mu);
        push_ready(j, jb, 1);
        free(content);
        free(fin);
        return;
    }
    finish_call(j, jb, 0, NAN, NULL, fmt("parse failure after %d answer%s: %s", jb->parse_fails, jb->parse_fails > 1 ? "s" : "", why), 0);
    free(content);
    free(fin);
}

/* Builds the request body of call `index` and either answers it from the cache or queues it. */
static void start_call(jr_judge *j, sample *s, int index) {
    jr_judge_call *c = &s->calls.v[index];
    job *jb = jr_calloc(1, sizeof *jb);
    if (!jb) goto oom;
    jb->s = s;
    jb->index = index;
    jb->t_first = jr_now_s();
    const char *model = j->ep[0].model;
    json_t *body = json_object();
    json_object_set_new(body, "model", json_string(model));
    if (j->chat) json_object_set(body, "messages", c->messages ? c->messages : json_array());
    else if (c->prompt) json_object_set_new(body, "prompt", json_string(c->prompt));
    else {
        /* completions without a prompt: the messages' contents joined by blank lines */
        size_t i, cap = 1;
        json_t *m;
        json_array_foreach(c->messages, i, m) cap += json_string_length(json_object_get(m, "content")) + 2;
        char *pr = malloc(cap);
        if (!pr) { json_decref(body); free(jb); goto oom; }
        pr[0] = 0;
        json_array_foreach(c->messages, i, m) {
            if (i) strcat(pr, "\n\n");
            strcat(pr, json_string_value(json_object_get(m, "content")) ? json_string_value(json_object_get(m, "content")) : "");
        }
        json_object_set_new(body, "prompt", json_string(pr));
        free(pr);
    }
    json_object_set_new(body, "temperature", json_real(j->temperature));
    json_object_set_new(body, "max_tokens", json_integer(j->max_tokens));
    if (json_is_object(j->extra_body)) json_object_update(body, j->extra_body);
    if (json_is_object(c->params)) json_object_update(body, c->params);
    if (c->constraint) {
        json_t *cf = NULL;
        jr_status cst = call_constraint(j, jb, c->constraint, &cf);
        if (cst) {
            json_decref(body);
            finish_call(j, jb, 0, NAN, NULL, fmt("%s", jr_errmsg()), 0);
            return;
        }
        if (cf) json_object_update(body, cf);
        json_decref(cf);
    } else if (j->ep[0].cfields) json_object_update(body, j->ep[0].cfields); /* the same for every endpoint */
    if (!j->chat && json_is_boolean(json_object_get(body, "logprobs"))) {
        /* a protocol's chat-shaped {logprobs: true, top_logprobs: k} is {logprobs: k} on /completions */
        json_t *top = json_object_get(body, "top_logprobs");
        int k = json_is_true(json_object_get(body, "logprobs")) ? (json_is_integer(top) ? (int)json_integer_value(top) : 1) : 0;
        json_object_del(body, "top_logprobs");
        if (k > 0) json_object_set_new(body, "logprobs", json_integer(k));
        else json_object_del(body, "logprobs");
    }
    json_object_del(body, "stream");
    json_object_del(body, "stream_options");
    char *canon = j->cache ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (j->stream) json_object_set_new(body, "stream", json_true());
    jb->body = json_dumps(body, JSON_COMPACT);
    long mt = (long)json_integer_value(json_object_get(body, "max_tokens"));
    json_decref(body);
    if ((j->cache && !canon) || !jb->body) { free(canon); job_free(jb); goto oom; }
    if (canon) jr_cache_key(j->identity ? j->identity : model, canon, jb->key);
    free(canon);
    jb->est_tokens = (double)strlen(jb->body) / 4.0 + (double)(mt > 0 ? mt : j->max_tokens);
    if (j->cache) {
        char *content, *finish, *lps;
        int hit = jr_cache_get(j->cache, jb->key, &content, &finish, &lps);
        pthread_mutex_lock(&j->mu);
        j->st.cache_lookups++;
        j->st.cache_hits += hit == 1;
        pthread_mutex_unlock(&j->mu);
        if (hit == 1) {
            json_t *lp = lps ? json_loads(lps, 0, NULL) : NULL;
            handle_answer(j, jb, content, finish, lp, 1, -1);
            json_decref(lp);
            free(content);
            free(finish);
            free(lps);
            return;
        }
    }
    push_ready(j, jb, 0);
    return;
oom:;
    jr_call_result *r = &s->res[index];
    r->ok = 0;
    r->error = jr_strdup("out of memory");
    if (--s->open_calls == 0) combine(j, s);
}

/* ---- the I/O thread: HTTP --------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
    job *jb = ud;
    size_t len = size * n;
    if (jb->resp.n + len + 1 > MAX_BODY) { jb->too_big = 1; return 0; }
    jr_strbuf_addn(&jb->resp, data, len);
    if (jb->resp.oom) { jr_strbuf_free(&jb->resp); jb->too_big = 1; return 0; }
    return len;
}

/* An OpenAI rate-limit duration ("1s", "6m0s", "20ms", "1h2m3.5s", or plain seconds), or -1. */
static double parse_duration(const char *p) {
    double total = 0;
    int any = 0;
    while (*p == ' ') p++;
    while (*p && *p != '\r' && *p != '\n') {
        char *end;
        double v = strtod(p, &end);
        if (end == p) return -1;
        p = end;
        if (!strncmp(p, "ms", 2)) { total += v / 1000; p += 2; }
        else if (*p == 'h') { total += v * 3600; p++; }
        else if (*p == 'm') { total += v * 60; p++; }
        else if (*p == 's') { total += v; p++; }
        else if (!*p || *p == '\r' || *p == '\n' || *p == ' ') { total += v; }
        else return -1;
        any = 1;
        while (*p == ' ') p++;
    }
    return any ? total : -1;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud) {
    job *jb = ud;
    size_t len = size * n;
    char line[256];
    size_t l = len < sizeof line - 1 ? len : sizeof line - 1;
    memcpy(line, data, l);
    line[l] = 0;
    if (!strncasecmp(line, "HTTP/", 5)) { /* a new response (after 100 Continue) */
        jb->retry_after = 0;
        memset(jb->rl_empty, 0, sizeof jb->rl_empty);
        memset(jb->rl_reset, 0, sizeof jb->rl_reset);
    } else if (!strncasecmp(line, "x-ratelimit-remaining-", 22) || !strncasecmp(line, "x-ratelimit-reset-", 18)) {
        int remaining = tolower((unsigned char)line[12]) == 'r' && tolower((unsigned char)line[13]) == 'e' &&
                        tolower((unsigned char)line[14]) == 'm';
        const char *kind = line + (remaining ? 22 : 18);
        int which = !strncasecmp(kind, "requests:", 9) ? 0 : !strncasecmp(kind, "tokens:", 7) ? 1 : -1;
        if (which >= 0) {
            const char *v = strchr(kind, ':') + 1;
            while (*v == ' ') v++;
            if (remaining) jb->rl_empty[which] = *v == '0' && (v[1] == '\r' || v[1] == '\n' || !v[1]);
            else jb->rl_reset[which] = parse_duration(v);
        }
    }
    else if (!strncasecmp(line, "retry-after-ms:", 15)) {
        double v = strtod(line + 15, NULL);
        if (v > 0) jb->retry_after = v / 1000.0;
    } else if (!strncasecmp(line, "retry-after:", 12)) {
        char *end;
        double v = strtod(line + 12, &end);
        if (end != line + 12 && v >= 0) jb->retry_after = v;
        else {
            char *p = line + 12;
            while (*p == ' ') p++;
            char *nl = strpbrk(p, "\r\n");
            if (nl) *nl = 0;
            time_t t = curl_getdate(p, NULL);
            if (t > 0) jb->retry_after = difftime(t, time(NULL)) > 0 ? difftime(t, time(NULL)) : 0;
        }
    }
    return len;
}

/* A transient failure: back off (full jitter, at least Retry-After) and retry, or give up. */
static void transient(jr_judge *j, job *jb, char *why /* owned */) {
    jb->fails++;
    if (jb->fails >= j->max_attempts) {
        char *msg = fmt("gave up after %d attempt%s: %s", jb->http_attempts, jb->http_attempts > 1 ? "s" : "", why ? why : "?");
        free(why);
        finish_call(j, jb, 0, NAN, NULL, msg, 0);
        return;
    }
    free(why);
    double cap = j->backoff_base * pow(2.0, jb->fails - 1);
    if (cap > j->backoff_max) cap = j->backoff_max;
    double d = cap * jr_rng_double(&j->rng);
    if (jb->retry_after > 0) {
        double ra = jb->retry_after < j->retry_after_max ? jb->retry_after : j->retry_after_max;
        if (d < ra) d = ra;
    }
    jb->not_before = jr_now_s() + d;
    jb->next = j->delayed;
    j->delayed = jb;
    j->n_waiting++;
    pthread_mutex_lock(&j->mu);
    j->st.retries++;
    pthread_mutex_unlock(&j->mu);
}

static void set_fatal(jr_judge *j, const char *msg) {
    pthread_mutex_lock(&j->mu);
    if (!j->fatal) j->fatal = redact(j, jr_strdup(msg));
    pthread_mutex_unlock(&j->mu);
}

/* A 400 about the request's size rather than its row: the prompt does not fit the judge's context
 * (vLLM, OpenAI, llama.cpp, judgerl serve) or max_tokens is out of the server's range. 1: context,
 * 2: max_tokens, 0: neither. */
static int config_400(const char *msg) {
    if (strcasestr(msg, "context length") || strcasestr(msg, "context size") || strcasestr(msg, "context window")) return 1;
    return strcasestr(msg, "max_tokens") ? 2 : 0;
}

/* Before any answer, such a 400 is a configuration error (the template, judge.max_tokens or the
 * judge's context), not a sample's: every request would get it. */
static void set_config_400_fatal(jr_judge *j, const char *m, int kind) {
    const char *fix = kind == 1 ? "shorten judge.template or the rows, lower judge.max_tokens, or serve the judge with a longer context"
                                : "set judge.max_tokens within the server's range";
    char *f = j->max_model_len > 0 ? fmt("%s (the judge serves %ld positions: %s)", m ? m : "HTTP 400", j->max_model_len, fix)
                                   : fmt("%s (%s)", m ? m : "HTTP 400", fix);
    set_fatal(j, f ? f : "HTTP 400: the request does not fit the judge");
    free(f);
}

/* The reason an answer did not decode may quote its body: it is said again from a copy of the
 * body without the key (jr_redacted_body). */
static void reason_without_key(const jr_judge *j, const job *jb, char *why, size_t why_len) {
    size_t rn = 0;
    jr_answer a;
    char *rb = jr_redacted_body(jb->resp.p ? jb->resp.p : "", jb->resp.n, j->api_key, &rn);
    if (!rb) snprintf(why, why_len, "undecodable answer");
    else if (!jr_answer_decode(rb, rn, &a, why, why_len)) {
        jr_answer_free(&a);
        snprintf(why, why_len, "undecodable answer");
    }
    free(rb);
}

/* A transfer finished (CURLMSG_DONE). */
static void on_done(jr_judge *j, CURL *e, CURLcode code) {
    job *jb = NULL;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&jb);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(j->multi, e);
    curl_easy_reset(e);
    if (j->n_pool < j->cap_pool) j->pool[j->n_pool++] = e;
    else curl_easy_cleanup(e);
    jb->easy = NULL;
    if (jb->wprev) jb->wprev->wnext = jb->wnext;
    else j->wire = jb->wnext;
    if (jb->wnext) jb->wnext->wprev = jb->wprev;
    jb->wprev = jb->wnext = NULL;
    jb->ep->in_flight--;
    pthread_mutex_lock(&j->mu);
    j->st.in_flight--;
    pthread_mutex_unlock(&j->mu);
    const char *url = jb->ep->url;
    for (int k = 0; k < 2; k++)
        if (jb->rl_empty[k] && jb->rl_reset[k] > 0) {
            /* the server says its request (token) budget is spent until the reset: pause there */
            double until = jr_now_s() + fmin(jb->rl_reset[k], j->retry_after_max);
            if (until > jb->ep->pause_until) jb->ep->pause_until = until;
        }
    if (code != CURLE_OK) {
        if (code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL) {
            char *m = fmt("%s: %s", url, curl_easy_strerror(code));
            set_fatal(j, m ? m : "bad URL");
            finish_call(j, jb, 0, NAN, NULL, m, 0);
            return;
        }
        if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST)
            jb->ep->down_until = jr_now_s() + fmax(j->backoff_base, 0.05) * 4;
        transient(j, jb, fmt("%s: %s", url, jb->too_big ? "answer larger than 64 MiB" : curl_easy_strerror(code)));
        return;
    }
    if (status >= 200 && status < 300) {
        jr_answer a;
        char why[400];
        if (jr_answer_decode(jb->resp.p ? jb->resp.p : "", jb->resp.n, &a, why, sizeof why)) {
            if (j->api_key) reason_without_key(j, jb, why, sizeof why);
            transient(j, jb, fmt("%s: HTTP %ld: %s", url, status, why));
            return;
        }
        a.reasoning = redact(j, a.reasoning); /* kept by no one today; redacted like the rest */
        j->answered = 1;
        if (a.total_tokens >= 0 && j->tpm > 0) jb->ep->ttok -= (double)a.total_tokens - jb->est_tokens;
        jr_strbuf_free(&jb->resp);
        handle_answer(j, jb, a.content, a.finish, a.logprobs, 0, a.total_tokens);
        jr_answer_free(&a);
        return;
    }
    char msg[400];
    size_t rn = 0;
    char *rb = jr_redacted_body(jb->resp.p ? jb->resp.p : "", jb->resp.n, j->api_key, &rn);
    if (rb) jr_answer_error_message(rb, rn, msg, sizeof msg);
    else snprintf(msg, sizeof msg, "(error body not shown: out of memory)");
    free(rb);
    jr_strbuf_free(&jb->resp);
    if ((status == 429 || status == 503) && jb->retry_after > 0) {
        /* the server asked for a pause: it applies to the endpoint, not just this request */
        double until = jr_now_s() + fmin(jb->retry_after, j->retry_after_max);
        if (until > jb->ep->pause_until) jb->ep->pause_until = until;
    }
    if (status == 408 || status == 409 || status == 429 || status >= 500) {
        transient(j, jb, fmt("%s: HTTP %ld: %s", url, status, msg));
        return;
    }
    char *m = fmt("%s: HTTP %ld: %s", url, status, msg);
    if (status == 401 || status == 403 || status == 404) set_fatal(j, m ? m : "HTTP error");
    else if (status == 400 && !j->answered && config_400(msg)) set_config_400_fatal(j, m, config_400(msg));
    finish_call(j, jb, 0, NAN, NULL, m, 0);
}

/* Refills every endpoint's token buckets for the time since the last refill. */
static void refill(jr_judge *j, double now) {
    double dt = now - j->t_bucket;
    j->t_bucket = now;
    if (dt <= 0) return;
    for (int i = 0; i < j->n_ep; i++) {
        endpoint *e = &j->ep[i];
        if (j->rpm > 0) {
            double cap = j->rpm / 60.0 > 1 ? j->rpm / 60.0 : 1;
            e->rtok = fmin(cap, e->rtok + dt * j->rpm / 60.0);
        }
        if (j->tpm > 0) e->ttok = fmin(j->tpm / 60.0, e->ttok + dt * j->tpm / 60.0);
    }
}

/* The least loaded endpoint that may take a request of est tokens now, or NULL. */
static endpoint *pick(jr_judge *j, double est, double now) {
    endpoint *best = NULL;
    double best_load = 0;
    int up = 0;
    for (int k = 0; k < j->n_ep; k++) up += j->ep[k].down_until <= now;
    for (int k = 0; k < j->n_ep; k++) {
        endpoint *e = &j->ep[(j->rr + k) % j->n_ep];
        if (up && e->down_until > now) continue;
        if (e->pause_until > now) continue;
        if (e->in_flight >= e->conc) continue;
        if (j->rpm > 0 && e->rtok < 1) continue;
        /* a request bigger than the bucket goes when the bucket is full */
        if (j->tpm > 0 && e->ttok < fmin(est, j->tpm / 60.0)) continue;
        double load = (double)e->in_flight / e->conc;
        if (!best || load < best_load) { best = e; best_load = load; }
    }
    if (best) j->rr = (int)(best - j->ep + 1) % j->n_ep;
    return best;
}

static int send_job(jr_judge *j, job *jb, endpoint *ep) {
    CURL *e = j->n_pool ? j->pool[--j->n_pool] : curl_easy_init();
    if (!e) return -1;
    jb->easy = e;
    jb->ep = ep;
    jr_strbuf_reset(&jb->resp);
    jb->too_big = 0;
    jb->retry_after = 0;
    memset(jb->rl_empty, 0, sizeof jb->rl_empty);
    memset(jb->rl_reset, 0, sizeof jb->rl_reset);
    curl_easy_setopt(e, CURLOPT_URL, ep->url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, jb->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(jb->body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, jb);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, jb);
    curl_easy_setopt(e, CURLOPT_PRIVATE, jb);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, j->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, j->connect_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (curl_multi_add_handle(j->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        jb->easy = NULL;
        return -1;
    }
    jb->wprev = NULL;
    jb->wnext = j->wire;
    if (j->wire) j->wire->wprev = jb;
    j->wire = jb;
    ep->in_flight++;
    if (j->rpm > 0) ep->rtok -= 1;
    if (j->tpm > 0) ep->ttok -= jb->est_tokens;
    pthread_mutex_lock(&j->mu);
    j->st.requests++;
    j->st.in_flight++;
    pthread_mutex_unlock(&j->mu);
    jb->http_attempts++;
    return 0;
}

/* Takes new samples from the inbox and starts their calls. */
static void take_inbox(jr_judge *j) {
    pthread_mutex_lock(&j->mu);
    sample *s = j->inbox;
    j->inbox = j->inbox_tail = NULL;
    pthread_mutex_unlock(&j->mu);
    while (s) {
        sample *next = s->next;
        s->prev = NULL;
        s->next = j->live;
        if (j->live) j->live->prev = s;
        j->live = s;
        int n = s->calls.n;
        s->open_calls = n;
        for (int i = 0; i < n; i++) start_call(j, s, i);
        s = next;
    }
}

/* libcurl tells which sockets to watch for what (CURLMOPT_SOCKETFUNCTION). */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp) {
    (void)e;
    jr_judge *j = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(j->epfd, EPOLL_CTL_DEL, fd, NULL);
        if (socketp) curl_multi_assign(j->multi, fd, NULL);
        return 0;
    }
    struct epoll_event ev = {0};
    ev.data.fd = fd;
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    int op = socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(j->epfd, op, fd, &ev) != 0)
        epoll_ctl(j->epfd, op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
    if (!socketp) curl_multi_assign(j->multi, fd, (void *)1);
    return 0;
}

/* libcurl's single timer (CURLMOPT_TIMERFUNCTION): -1 = none. */
static int on_timer(CURLM *m, long timeout_ms, void *userp) {
    (void)m;
    jr_judge *j = userp;
    j->curl_deadline = timeout_ms < 0 ? INFINITY : jr_now_s() + (double)timeout_ms / 1000.0;
    return 0;
}

static void drain_done(jr_judge *j) {
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(j->multi, &left)))
        if (m->msg == CURLMSG_DONE) on_done(j, m->easy_handle, m->data.result);
}

static void *io_main(void *arg) {
    jr_judge *j = arg;
    struct epoll_event evs[256];
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        if (stop) break;
        take_inbox(j);
        double now = jr_now_s();
        refill(j, now);
        /* due retries go first */
        double next_due = INFINITY;
        for (job **pp = &j->delayed; *pp;) {
            job *jb = *pp;
            if (jb->not_before <= now) { *pp = jb->next; j->n_waiting--; push_ready(j, jb, 1); }
            else { if (jb->not_before < next_due) next_due = jb->not_before; pp = &jb->next; }
        }
        int blocked = 0;
        while (j->ready && j->fatal) { /* a configuration error: nothing more is sent */
            job *jb = j->ready;
            j->ready = jb->next;
            if (!j->ready) j->ready_tail = NULL;
            j->n_waiting--;
            finish_call(j, jb, 0, NAN, NULL, fmt("not sent: %s", j->fatal), 0);
        }
        while (j->ready) {
            job *jb = j->ready;
            endpoint *ep = pick(j, jb->est_tokens, now);
            if (!ep) { blocked = 1; break; }
            j->ready = jb->next;
            if (!j->ready) j->ready_tail = NULL;
            j->n_waiting--;
            if (send_job(j, jb, ep)) finish_call(j, jb, 0, NAN, NULL, fmt("cannot start a request (out of memory)"), 0);
        }
        pthread_mutex_lock(&j->mu);
        j->st.queued = j->n_waiting;
        pthread_mutex_unlock(&j->mu);
        double wait = 1.0;
        now = jr_now_s();
        if (next_due < INFINITY) wait = fmin(wait, next_due - now);
        if (blocked && (j->rpm > 0 || j->tpm > 0)) wait = fmin(wait, 0.01);
        for (int k = 0; blocked && k < j->n_ep; k++)
            if (j->ep[k].pause_until > now) wait = fmin(wait, j->ep[k].pause_until - now);
        if (j->curl_deadline < INFINITY) wait = fmin(wait, j->curl_deadline - now);
        if (wait < 0) wait = 0;
        int n = epoll_wait(j->epfd, evs, (int)(sizeof evs / sizeof *evs), (int)ceil(wait * 1000));
        int running;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == j->evfd) {
                uint64_t v;
                if (read(j->evfd, &v, sizeof v) < 0) { /* nothing to drain */ }
                continue;
            }
            int flags = ((evs[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((evs[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                        ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(j->multi, evs[i].data.fd, flags, &running);
        }
        if (j->curl_deadline <= jr_now_s()) {
            j->curl_deadline = INFINITY;
            curl_multi_socket_action(j->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        drain_done(j);
    }
    return NULL;
}

static void wake(jr_judge *j) {
    uint64_t one = 1;
    if (write(j->evfd, &one, sizeof one) < 0) { /* the counter is saturated: it is awake anyway */ }
}

/* ---- public API --------------------------------------------------------------------------- */

static jr_status open_cache(jr_judge *j, const jr_judge_opts *o) {
    char *path = NULL;
    if (!o->cache) return JR_OK;
    int per_rank = o->ranks > 1; /* never one SQLite file written by several ranks (maybe over NFS) */
    if (o->cache_path) path = per_rank ? fmt("%s.rank-%d", o->cache_path, o->rank) : jr_strdup(o->cache_path);
    else if (o->cache_dir && *o->cache_dir) {
        char name[64];
        if (per_rank) snprintf(name, sizeof name, "judge_cache.rank-%d.sqlite", o->rank);
        path = jr_path_join(o->cache_dir, per_rank ? name : "judge_cache.sqlite");
    } else return JR_OK; /* no run or output directory: nothing to keep it beside */
    if (!path) return JR_ENOMEM;
    jr_status st = jr_cache_open(&j->cache, path);
    free(path);
    return st;
}

/* Asks every endpoint who it is (GET /models) before the first request: the identity goes into
 * every cache key, a server that refuses the connection or the key stops the open, and a model
 * name the server does not list is warned about once. */
static jr_status probe_identity(jr_judge *j, const jr_judge_opts *o) {
    const char **urls = jr_calloc((size_t)j->n_ep, sizeof *urls), **models = jr_calloc((size_t)j->n_ep, sizeof *models);
    if (!urls || !models) { free(urls); free(models); return JR_ENOMEM; }
    for (int i = 0; i < j->n_ep; i++) {
        urls[i] = j->ep[i].url;
        models[i] = j->ep[i].model;
    }
    char *id = NULL, *warning = NULL;
    jr_status st = jr_judge_identity(urls, models, j->n_ep, j->hdrs, j->connect_ms, j->timeout_ms, &id, &j->max_model_len, &warning);
    free(urls);
    free(models);
    if (warning) {
        warning = redact(j, warning); /* it quotes the model names the server lists */
        if (o->on_warning) o->on_warning(o->warning_ud, warning);
        else fprintf(stderr, "judgerl: warning: %s\n", warning);
        free(warning);
    }
    if (st) return st;
    j->identity = redact(j, fmt("%s\n%s", id, j->ep[0].model));
    free(id);
    return j->identity ? JR_OK : JR_ENOMEM;
}

/* Each endpoint's kind (given, or detected when the defaults depend on it), its limits
 * (concurrency 0 = llama.cpp's slots + 1, else 64; max_connections 0 = the concurrency), the
 * constraint in its request fields and, with judge.stream auto, streaming for llama.cpp. */
static jr_status setup_servers(jr_judge *j, const jr_judge_opts *o, const char *src) {
    int all_llamacpp = 1;
    if (o->stream < -1 || o->stream > 1) return jr_fail(JR_EINVAL, "%s: judge.stream: expected true, false or auto", src);
    for (int i = 0; i < j->n_ep; i++) {
        endpoint *ep = &j->ep[i];
        jr_server_kind given = o->endpoints[i].kind;
        int conc_auto = ep->conc == 0;
        if (given == JR_KIND_AUTO || (given == JR_KIND_LLAMACPP && conc_auto) || (given == JR_KIND_VLLM && j->constraint.type)) {
            char *base = strndup(ep->url, strlen(ep->url) - strlen(j->chat ? "/chat/completions" : "/completions"));
            if (!base) return JR_ENOMEM;
            jr_server_detect(base, j->hdrs, j->api_key, j->connect_ms < 3000 ? j->connect_ms : 3000, &ep->info);
            free(base);
        }
        if (given != JR_KIND_AUTO) {
            if (ep->info.kind != (jr_server_kind)given && ep->info.how[0]) {
                size_t l = strlen(ep->info.how);
                snprintf(ep->info.how + l, sizeof ep->info.how - l, "; kind %s as configured", jr_server_kind_name(given));
            } else if (!ep->info.how[0]) snprintf(ep->info.how, sizeof ep->info.how, "as configured");
            ep->info.kind = (jr_server_kind)given;
        }
        if (conc_auto) ep->conc = ep->info.kind == JR_KIND_LLAMACPP && ep->info.slots > 0 ? ep->info.slots + 1 : 64;
        int mc = o->endpoints[i].max_connections;
        ep->max_conn = mc > 0 ? mc : ep->conc;
        if (ep->conc > ep->max_conn) ep->conc = ep->max_conn; /* HTTP/1.1: one request per connection */
        /* data-parallel: this rank's share; fewer requests than ranks cannot be shared without the ranks
         * together exceeding what was configured (or what the server's slots allow) */
        if (o->ranks > 1 && ep->conc < o->ranks)
            return jr_fail(JR_EINVAL, "%s: judge.endpoints[%d]: concurrency %d%s cannot be shared among %d MPI ranks (each "
                                      "needs one): set judge.endpoints[%d].concurrency to at least %d, or run fewer ranks",
                           src, i, ep->conc, conc_auto ? " (the server's default)" : "", o->ranks, i, o->ranks);
        if (o->ranks > 1) ep->conc /= o->ranks;
        all_llamacpp &= ep->info.kind == JR_KIND_LLAMACPP;
        int wrapped = 0;
        jr_status st = jr_judge_constraint_fields(&j->constraint, &ep->info, &ep->cfields, &wrapped);
        if (st) return jr_fail_ctx(st, "%s: judge.endpoints[%d] (%s, %s)", src, i, jr_server_kind_name(ep->info.kind), ep->info.how);
        int same = (!ep->cfields && !j->ep[0].cfields) || (ep->cfields && j->ep[0].cfields && json_equal(ep->cfields, j->ep[0].cfields));
        if (i > 0 && (wrapped != j->wrapped || !same))
            return jr_fail(JR_EINVAL, "%s: judge.endpoints[%d] is a %s server and endpoints[0] a %s one: judge.constraint "
                                      "takes different request fields on each; use servers of one kind per judge", src, i,
                           jr_server_kind_name(ep->info.kind), jr_server_kind_name(j->ep[0].info.kind));
        j->wrapped = wrapped;
    }
    if (o->stream < 0) j->stream = all_llamacpp; /* llama-server's plain answers are slow; streamed ones are not */
    for (int i = 0; i < j->n_ep; i++) {
        endpoint *ep = &j->ep[i];
        ep->desc = fmt("%s: %s%s%s (%s); %d in flight, %d connections, %s", ep->url, jr_server_kind_name(ep->info.kind),
                       ep->info.version[0] ? " " : "", ep->info.version, ep->info.how, ep->conc, ep->max_conn,
                       j->stream ? "streaming" : "not streaming");
        if (!ep->desc) return JR_ENOMEM;
    }
    return JR_OK;
}

int jr_judge_n_endpoints(const jr_judge *j) { return j->n_ep; }

int jr_judge_capacity(const jr_judge *j) {
    int n = 0;
    for (int i = 0; i < j->n_ep; i++) n += j->ep[i].conc;
    return n;
}

const char *jr_judge_endpoint_info(const jr_judge *j, int i) {
    return i >= 0 && i < j->n_ep ? j->ep[i].desc : NULL;
}

static jr_status add_impl(jr_judge *j, const jr_protocol *p, int *idx) {
    const char *name = p->name;
    if (j->n_proto >= MAX_PROTOS) return jr_fail(JR_EINVAL, "judge: more than %d protocols on one client", MAX_PROTOS);
    void *state = NULL;
    jr_status st = p->open(&j->o, j->cfg_dir, &state);
    if (st) return jr_fail_ctx(st, "judge.protocol=%s", name);
    j->proto[j->n_proto] = p;
    j->pstate[j->n_proto] = state;
    if (idx) *idx = j->n_proto;
    j->n_proto++;
    return JR_OK;
}

static jr_status add_proto(jr_judge *j, const char *name, int *idx) {
    const jr_protocol *p = jr_protocol_find(name);
    if (!p) return jr_fail(JR_EINVAL, "judge.protocol=%s: unknown protocol (known: %s)", name ? name : "null", jr_protocol_names());
    return add_impl(j, p, idx);
}

jr_status jr_judge_open(jr_judge **out, const jr_config *cfg) {
    *out = NULL;
    jr_judge_opts o;
    jr_status st = jr_judge_opts_from_config(&o, cfg);
    return st ? st : jr_judge_open_opts(out, &o);
}

jr_status jr_judge_opts_check(const jr_judge_opts *o, const char *src) {
    if (o->n_endpoints <= 0) return jr_fail(JR_EINVAL, "%s: judge.endpoints is empty: add at least one {url, model} (e.g. url: http://127.0.0.1:8000/v1)", src);
    for (int i = 0; i < o->n_endpoints; i++) {
        const char *url = o->endpoints[i].url, *model = o->endpoints[i].model;
        if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
            return jr_fail(JR_EINVAL, "%s: judge.endpoints[%d].url=%s: expected an http:// or https:// URL", src, i, url ? url : "null");
        if (!model) return jr_fail(JR_EINVAL, "%s: judge.endpoints[%d].model: required", src, i);
        if (i > 0 && strcmp(model, o->endpoints[0].model))
            return jr_fail(JR_EINVAL, "%s: judge.endpoints[%d].model=%s differs from endpoints[0].model=%s: endpoints are servers of one judge", src, i, model, o->endpoints[0].model);
    }
    return JR_OK; /* the key (an environment variable, not the config) is checked when the judge opens */
}

/* judge.endpoints: checks each {url, model} and fills j->ep (completions URL, concurrency, rate buckets). */
static jr_status setup_endpoints(jr_judge *j, const jr_judge_opts *o, const char *src) {
    jr_status st = jr_judge_opts_check(o, src);
    if (st) return st;
    j->n_ep = o->n_endpoints;
    j->ep = jr_calloc((size_t)j->n_ep, sizeof *j->ep);
    if (!j->ep) return JR_ENOMEM;
    int conc = o->concurrency > 0 ? o->concurrency : 0; /* 0: by kind, in setup_servers */
    for (int i = 0; i < j->n_ep; i++) {
        const char *url = o->endpoints[i].url;
        const char *model = o->endpoints[i].model;
        size_t ul = strlen(url);
        while (ul && url[ul - 1] == '/') ul--;
        const char *suffix = j->chat ? "/chat/completions" : "/completions";
        size_t sl = strlen(suffix);
        if (ul >= sl && !strncmp(url + ul - sl, suffix, sl)) j->ep[i].url = strndup(url, ul);
        else j->ep[i].url = fmt("%.*s%s", (int)ul, url, suffix);
        j->ep[i].model = jr_strdup(model);
        if (!j->ep[i].url || !j->ep[i].model) return JR_ENOMEM;
        int c = o->endpoints[i].concurrency;
        j->ep[i].conc = c > 0 ? c : conc;
        j->ep[i].rtok = j->rpm / 60.0 > 1 ? j->rpm / 60.0 : 1;
        j->ep[i].ttok = j->tpm / 60.0;
    }
    return JR_OK;
}

/* The request headers, with the bearer key from judge.api_key_env when set. */
static jr_status setup_headers(jr_judge *j, const jr_judge_opts *o, const char *src) {
    const char *kenv = o->api_key_env;
    j->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    j->hdrs = curl_slist_append(j->hdrs, "Expect:");
    if (kenv && *kenv) {
        const char *key = getenv(kenv);
        if (!key || !*key) {
            return jr_fail(JR_EINVAL, "%s: judge.api_key_env=%s: the environment variable %s is not set (export it, or set judge.api_key_env: null for servers without a key)", src, kenv, kenv);
        }
        for (const char *c = key; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) {
                return jr_fail(JR_EINVAL, "%s: judge.api_key_env=%s: the key contains a control character (a stray newline?)", src, kenv);
            }
        j->api_key = jr_strdup(key);
        char *h = fmt("Authorization: Bearer %s", key);
        if (!j->api_key || !h) { free(h); return JR_ENOMEM; }
        j->hdrs = curl_slist_append(j->hdrs, h);
        explicit_bzero(h, strlen(h));
        free(h);
    }
    if (!j->hdrs) return JR_ENOMEM;
    return JR_OK;
}

jr_status jr_judge_open_opts(jr_judge **out, const jr_judge_opts *o) {
    *out = NULL;
    pthread_once(&curl_once, curl_init_once);
    jr_judge *j = jr_calloc(1, sizeof *j);
    if (!j) return JR_ENOMEM;
    j->epfd = j->evfd = -1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->o = *o;
    jr_status st = JR_OK;
    const char *src = o->source ? o->source : "judge";
    const char *slash = o->source ? strrchr(o->source, '/') : NULL;
    j->cfg_dir = o->cfg_dir ? jr_strdup(o->cfg_dir) : slash ? strndup(o->source, (size_t)(slash - o->source)) : jr_strdup(".");
    j->chat = o->chat;
    j->stream = o->stream > 0; /* -1 (auto): decided by setup_servers */
    j->temperature = o->temperature;
    j->max_tokens = o->max_tokens;
    j->timeout_ms = (long)(o->timeout_s * 1000 + 0.5);
    j->connect_ms = (long)(o->connect_timeout_s * 1000 + 0.5);
    if (j->timeout_ms < 1) j->timeout_ms = 1;
    if (j->connect_ms < 1) j->connect_ms = 1;
    j->max_attempts = o->max_attempts > 0 ? o->max_attempts : 1;
    j->parse_attempts = o->parse_attempts > 0 ? o->parse_attempts : 1;
    j->backoff_base = o->backoff_base_s;
    j->backoff_max = o->backoff_max_s;
    j->retry_after_max = o->retry_after_max_s;
    j->rpm = o->ranks > 1 ? o->rpm / o->ranks : o->rpm; /* data-parallel: this rank's share of the limits */
    j->tpm = o->ranks > 1 ? o->tpm / o->ranks : o->tpm;
    jr_rng_seed2(&j->rng, o->seed, 0x6a75646765ULL);
    const json_t *eb = o->extra_body;
    if (eb && !json_is_object(eb)) { st = jr_fail(JR_EINVAL, "%s: judge.extra_body: expected a mapping of request fields", src); goto fail; }
    j->extra_body = eb ? json_deep_copy(eb) : NULL;
    st = setup_endpoints(j, o, src);
    if (st) goto fail;
    st = setup_headers(j, o, src);
    if (st) goto fail;
    st = jr_judge_constraint_parse(o->constraint, "judge.constraint", &j->constraint);
    if (st) { jr_fail_ctx(st, "%s", src); goto fail; }
    st = add_proto(j, o->protocol, NULL); /* the protocol's own options first: no network needed */
    if (st) goto fail;
    st = setup_servers(j, o, src);
    if (st) goto fail;
    st = probe_identity(j, o);
    if (st) goto fail;
    st = open_cache(j, o);
    if (st) goto fail;
    j->cap_pool = 64;
    j->pool = jr_calloc((size_t)j->cap_pool, sizeof *j->pool);
    j->multi = curl_multi_init();
    if (!j->pool || !j->multi) { st = jr_fail(JR_ENOMEM, "judge: cannot create the HTTP client"); goto fail; }
    curl_multi_setopt(j->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    curl_multi_setopt(j->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(j->multi, CURLMOPT_SOCKETDATA, j);
    curl_multi_setopt(j->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(j->multi, CURLMOPT_TIMERDATA, j);
    j->curl_deadline = INFINITY;
    j->epfd = epoll_create1(EPOLL_CLOEXEC);
    j->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (j->epfd < 0 || j->evfd < 0) { st = jr_fail(JR_EIO, "judge: cannot create the event loop"); goto fail; }
    struct epoll_event wev = {.events = EPOLLIN, .data.fd = j->evfd};
    if (epoll_ctl(j->epfd, EPOLL_CTL_ADD, j->evfd, &wev)) { st = jr_fail(JR_EIO, "judge: cannot create the event loop"); goto fail; }
    long max_host = 0, total_conn = 16;
    for (int i = 0; i < j->n_ep; i++) {
        max_host = j->ep[i].max_conn > max_host ? j->ep[i].max_conn : max_host;
        total_conn += j->ep[i].max_conn;
    }
    curl_multi_setopt(j->multi, CURLMOPT_MAX_HOST_CONNECTIONS, max_host);
    curl_multi_setopt(j->multi, CURLMOPT_MAXCONNECTS, total_conn);
    j->t_bucket = jr_now_s();
    if (pthread_create(&j->thr, NULL, io_main, j)) { st = jr_fail(JR_EINTERNAL, "judge: cannot start the I/O thread"); goto fail; }
    j->thr_started = 1;
    *out = j;
    return JR_OK;
fail:
    jr_judge_close(j);
    return st;
}

jr_status jr_judge_add_protocol(jr_judge *j, const char *name, int *proto) {
    pthread_mutex_lock(&j->mu);
    int started = j->submitted_any;
    pthread_mutex_unlock(&j->mu);
    if (started) return jr_fail(JR_EINVAL, "jr_judge_add_protocol(%s): call it before the first submit", name ? name : "null");
    return add_proto(j, name, proto);
}

jr_status jr_judge_add_protocol_impl(jr_judge *j, const jr_protocol *p, int *proto) {
    pthread_mutex_lock(&j->mu);
    int started = j->submitted_any;
    pthread_mutex_unlock(&j->mu);
    if (!p || !p->name || !p->open || !p->close || !p->build || !p->parse || !p->combine)
        return jr_fail(JR_EINVAL, "jr_judge_add_protocol_impl: a protocol needs a name and all five functions");
    if (started) return jr_fail(JR_EINVAL, "jr_judge_add_protocol_impl(%s): call it before the first submit", p->name);
    return add_impl(j, p, proto);
}

jr_status jr_judge_submit(jr_judge *j, const json_t *row, void *user, uint64_t *ticket) {
    return jr_judge_submit_proto(j, 0, row, user, ticket);
}

jr_status jr_judge_submit_proto(jr_judge *j, int proto, const json_t *row, void *user, uint64_t *ticket) {
    if (ticket) *ticket = 0;
    if (proto < 0 || proto >= j->n_proto) return jr_fail(JR_EINVAL, "judge submit: no protocol handle %d", proto);
    if (!json_is_object(row)) return jr_fail(JR_EINVAL, "judge submit: a row must be a JSON object");
    json_t *idv = json_object_get(row, "id");
    char *id = NULL;
    if (json_is_string(idv)) id = jr_strdup(json_string_value(idv));
    else if (json_is_integer(idv)) id = fmt("%lld", (long long)json_integer_value(idv));
    else return jr_fail(JR_EINVAL, "field 'id': expected a string or an integer");
    if (!id) return JR_ENOMEM;
    sample *s = jr_calloc(1, sizeof *s);
    if (!s) { free(id); return JR_ENOMEM; }
    s->id = id;
    s->user = user;
    s->proto = proto;
    s->row = json_deep_copy(row);
    s->t_submit = jr_now_s();
    if (!s->row) { sample_free(s); return JR_ENOMEM; }
    jr_status st = j->proto[proto]->build(j->pstate[proto], s->row, &s->calls);
    if (!st && s->calls.n < 1) st = jr_fail(JR_EINTERNAL, "protocol %s built no call", j->proto[proto]->name);
    if (st) { sample_free(s); return st; }
    s->res_cap = s->calls.n;
    s->res = jr_calloc((size_t)s->res_cap, sizeof *s->res);
    s->result.id = jr_strdup(id);
    if (!s->res || !s->result.id) { sample_free(s); return JR_ENOMEM; }
    s->result.user = user;
    pthread_mutex_lock(&j->mu);
    uint64_t t = ++j->next_ticket;
    s->ticket = t;
    s->result.ticket = t;
    j->submitted_any = 1;
    j->pending++;
    j->st.submitted++;
    if (j->inbox_tail) j->inbox_tail->next = s;
    else j->inbox = s;
    j->inbox_tail = s;
    pthread_mutex_unlock(&j->mu);
    /* s is the I/O thread's from here: once in the inbox it can be answered, collected and freed (another
     * submit's wake-up, a cached verdict) before this thread runs again, so only the local copy is read */
    if (ticket) *ticket = t;
    wake(j);
    return JR_OK;
}

int jr_judge_collect(jr_judge *j, jr_judge_result *out, int max, int timeout_ms) {
    int n = 0;
    pthread_mutex_lock(&j->mu);
    if (!j->done && timeout_ms != 0) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        if (timeout_ms > 0) {
            dl.tv_sec += timeout_ms / 1000;
            dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
            if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
        }
        while (!j->done && j->pending > 0) {
            if (timeout_ms > 0) { if (pthread_cond_timedwait(&j->cv, &j->mu, &dl)) break; }
            else pthread_cond_wait(&j->cv, &j->mu);
        }
    }
    while (j->done && n < max) {
        sample *s = j->done;
        j->done = s->next;
        if (!j->done) j->done_tail = NULL;
        out[n++] = s->result;
        memset(&s->result, 0, sizeof s->result);
        j->pending--;
        sample_free(s);
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

uint64_t jr_judge_pending(jr_judge *j) {
    pthread_mutex_lock(&j->mu);
    uint64_t p = j->pending;
    pthread_mutex_unlock(&j->mu);
    return p;
}

void jr_judge_stats_get(jr_judge *j, jr_judge_stats *s) {
    pthread_mutex_lock(&j->mu);
    *s = j->st;
    pthread_mutex_unlock(&j->mu);
}

const char *jr_judge_identity_text(const jr_judge *j) { return j->identity ? j->identity : ""; }

long jr_judge_max_model_len(const jr_judge *j) { return j->max_model_len; }

const char *jr_judge_fatal(jr_judge *j) {
    pthread_mutex_lock(&j->mu);
    const char *f = j->fatal;
    pthread_mutex_unlock(&j->mu);
    return f;
}

static void free_jobs(job *jb) {
    while (jb) {
        job *n = jb->next;
        job_free(jb);
        jb = n;
    }
}

void jr_judge_close(jr_judge *j) {
    if (!j) return;
    if (j->thr_started) {
        pthread_mutex_lock(&j->mu);
        j->stop = 1;
        pthread_mutex_unlock(&j->mu);
        wake(j);
        pthread_join(j->thr, NULL);
    }
    if (j->multi) {
        /* abandon transfers in flight */
        for (job *jb = j->wire; jb;) {
            job *n = jb->wnext;
            curl_multi_remove_handle(j->multi, jb->easy);
            curl_easy_cleanup(jb->easy);
            job_free(jb);
            jb = n;
        }
    }
    free_jobs(j->ready);
    free_jobs(j->delayed);
    for (int i = 0; i < j->n_pool; i++) curl_easy_cleanup(j->pool[i]);
    free(j->pool);
    if (j->multi) curl_multi_cleanup(j->multi);
    if (j->epfd >= 0) close(j->epfd);
    if (j->evfd >= 0) close(j->evfd);
    for (sample *lists[3] = {j->live, j->inbox, j->done}, **l = lists; l < lists + 3; l++)
        for (sample *s = *l; s;) {
            sample *n = s->next;
            sample_free(s);
            s = n;
        }
    for (int i = 0; i < j->n_proto; i++) j->proto[i]->close(j->pstate[i]);
    jr_cache_close(j->cache);
    for (int i = 0; i < j->n_ep; i++) {
        free(j->ep[i].url);
        free(j->ep[i].model);
        free(j->ep[i].desc);
        json_decref(j->ep[i].cfields);
    }
    jr_judge_constraint_free(&j->constraint);
    free(j->ep);
    for (struct curl_slist *h = j->hdrs; h; h = h->next) explicit_bzero(h->data, strlen(h->data));
    curl_slist_free_all(j->hdrs);
    if (j->api_key) {
        explicit_bzero(j->api_key, strlen(j->api_key));
        free(j->api_key);
    }
    json_decref(j->extra_body);
    free(j->cfg_dir);
    free(j->identity);
    free(j->fatal);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}
