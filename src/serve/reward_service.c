/* reward_service.c - `judgerl serve-reward`: OpenRLHF's, slime's and judgerl's batch reward
 * protocols over the shared HTTP layer (http.c) and the reward registry's shared scoring */
#include "judgerl/clock.h"
#include "judgerl/reward_service.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/strbuf.h"
#include "serve/http.h"
#include "serve/respond.h"

enum { R_NONE, R_HEALTH, R_METRICS, R_OPENRLHF, R_SLIME, R_BATCH };
static const char *route_name[] = {"", "/health", "/metrics", "openrlhf", "slime", "/v1/rewards"};

#define N_LAT 4096 /* judge latencies kept for the percentiles */

struct jr_rsvc {
    jr_rsvc_opts o;
    jr_reward *r;
    jr_http *http;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int draining;
    long inflight_rows;
    /* metrics */
    unsigned long long rows, unscored, valued, judge_calls;
    jr_http_hist req_lat;
    double judge_lat[N_LAT];
    unsigned long long n_judge_lat;
};

static char *dump(json_t *j) {
    if (!j) return NULL;
    char *t = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(j);
    return t;
}

/* ---- requests into rows ------------------------------------------------------------------- */

/* The row's reference and label from whichever the engine sends: label (OpenRLHF, slime),
 * ground_truth (verl) or reference; each fills the others that are absent. */
static void map_reference(json_t *row) {
    const char *names[] = {"reference", "label", "ground_truth"};
    json_t *v = NULL;
    for (int k = 0; k < 3 && !v; k++) {
        v = json_object_get(row, names[k]);
        if (json_is_null(v)) v = NULL;
    }
    if (!v) return;
    v = json_incref(v);
    if (!json_object_get(row, "reference")) json_object_set(row, "reference", v);
    if (!json_object_get(row, "label")) json_object_set(row, "label", v);
    json_decref(v);
}

/* OpenRLHF: {"query": [str], "prompts": [str], "labels": [any]}; query is prompt + response (the
 * prompt prefix is stripped when query starts with it). */
static int rows_openrlhf(json_t *body, json_t *rows, char *msg, size_t msz) {
    json_t *q = json_object_get(body, "query"), *p = json_object_get(body, "prompts"), *l = json_object_get(body, "labels");
    if (!json_is_array(q)) { snprintf(msg, msz, "query: a list of strings is required"); return -1; }
    size_t n = json_array_size(q);
    if (p && !json_is_null(p) && (!json_is_array(p) || json_array_size(p) != n)) {
        snprintf(msg, msz, "prompts: a list as long as query (%zu) is required", n);
        return -1;
    }
    if (l && !json_is_null(l) && (!json_is_array(l) || json_array_size(l) != n)) {
        snprintf(msg, msz, "labels: a list as long as query (%zu) is required", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *qi = json_array_get(q, i), *pi = json_array_get(p, i);
        if (!json_is_string(qi)) { snprintf(msg, msz, "query[%zu]: a string is required", i); return -1; }
        if (pi && !json_is_string(pi)) { snprintf(msg, msz, "prompts[%zu]: a string is required", i); return -1; }
        const char *qs = json_string_value(qi), *ps = pi ? json_string_value(pi) : "";
        size_t ql = json_string_length(qi), pl = pi ? json_string_length(pi) : 0;
        size_t off = pl <= ql && !memcmp(qs, ps, pl) ? pl : 0;
        json_t *row = json_object();
        json_object_set_new(row, "prompt", json_stringn(ps, pl));
        json_object_set_new(row, "response", json_stringn(qs + off, ql - off));
        json_t *li = json_array_get(l, i);
        if (li && !json_is_null(li)) json_object_set(row, "label", li);
        map_reference(row);
        json_array_append_new(rows, row);
    }
    return 0;
}

/* slime: {"prompt": str, "response": str, "label": any, ...}: one row with every field. */
static int rows_slime(json_t *body, json_t *rows, char *msg, size_t msz) {
    if (!json_is_string(json_object_get(body, "response"))) { snprintf(msg, msz, "response: a string is required"); return -1; }
    json_t *row = json_copy(body);
    map_reference(row);
    json_array_append_new(rows, row);
    return 0;
}

/* judgerl's batch API: {"rows": [{prompt, response, reference?, label?, data_source?, ...}]}. */
static int rows_batch(json_t *body, json_t *rows, char *msg, size_t msz) {
    json_t *in = json_object_get(body, "rows");
    if (!json_is_array(in)) { snprintf(msg, msz, "rows: a list of objects is required"); return -1; }
    for (size_t i = 0; i < json_array_size(in); i++) {
        json_t *r = json_array_get(in, i);
        if (!json_is_object(r)) { snprintf(msg, msz, "rows[%zu]: an object is required", i); return -1; }
        json_t *row = json_copy(r);
        map_reference(row);
        json_array_append_new(rows, row);
    }
    return 0;
}

int jr_rsvc_parse_rows(jr_rsvc_protocol p, const char *text, size_t len, json_t **out, char *msg, size_t msz) {
    *out = NULL;
    json_error_t je;
    json_t *body = len ? json_loadb(text, len, 0, &je) : NULL;
    if (!json_is_object(body)) {
        if (!len) snprintf(msg, msz, "the body is empty: a JSON object is required");
        else snprintf(msg, msz, "the body is not a JSON object%s%.200s", body ? "" : ": ", body ? "" : je.text);
        json_decref(body);
        return 400;
    }
    json_t *rows = json_array();
    int bad = !rows ? (snprintf(msg, msz, "out of memory"), -1)
            : p == JR_RSVC_OPENRLHF ? rows_openrlhf(body, rows, msg, msz)
            : p == JR_RSVC_SLIME    ? rows_slime(body, rows, msg, msz)
                                    : rows_batch(body, rows, msg, msz);
    json_decref(body);
    if (bad) { json_decref(rows); return 400; }
    *out = rows;
    return 0;
}

/* ---- answers -------------------------------------------------------------------------------- */

/* The value answered for row i to a caller that cannot carry null: its reward, or the configured
 * unscored value (logged). */
static double value_of(jr_rsvc *s, const jr_reward_result *res, size_t i, const char *route) {
    if (res->scored) return res->reward;
    fprintf(stderr, "judgerl serve-reward: %s row %zu unscored (%s): answered %g (service.on_unscored: value)\n", route, i,
            res->reason ? res->reason : "?", s->o.unscored_value);
    return s->o.unscored_value;
}

/* {"rewards", "scores", "extra_logs": {component: [value]}}; a component unscored in any row (an
 * optional one, or every one of a row answered with the configured value) is left out of
 * extra_logs rather than logged as a number it never had. */
static json_t *answer_openrlhf(jr_rsvc *s, jr_reward_result *res, size_t n) {
    json_t *rewards = json_array(), *scores = json_array(), *logs = json_object();
    for (size_t i = 0; i < n; i++) {
        double v = value_of(s, &res[i], i, s->o.openrlhf_path);
        json_array_append_new(rewards, json_real(v));
        json_array_append_new(scores, json_real(fmin(1, fmax(0, v)))); /* OpenRLHF's dynamic filtering reads [0, 1] */
    }
    for (int k = 0; k < jr_reward_n_parts(s->r) && n; k++) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
            if (k >= res[i].n_parts || !res[i].parts[k].scored) { json_decref(a); a = NULL; break; }
            json_array_append_new(a, json_real(res[i].parts[k].value));
        }
        if (a) json_object_set_new(logs, jr_reward_part_name(s->r, k), a);
    }
    return json_pack("{s:o,s:o,s:o}", "rewards", rewards, "scores", scores, "extra_logs", logs);
}

/* slime: the reward as the body, or {"reward": r, component: value, ...} read with --reward-key
 * (a component unscored in an optional part is left out). */
static json_t *answer_slime(jr_rsvc *s, jr_reward_result *res) {
    double v = value_of(s, res, 0, s->o.slime_path);
    if (!s->o.slime_object) return json_real(v);
    json_t *o = json_pack("{s:f}", "reward", v);
    for (int k = 0; o && k < res->n_parts; k++)
        if (res->parts[k].scored) json_object_set_new(o, jr_reward_part_name(s->r, k), json_real(res->parts[k].value));
    return o;
}

/* latency_s: the request's time to its rows' results (the rows are scored together) */
static json_t *answer_batch(jr_rsvc *s, jr_reward_result *res, size_t n, double lat) {
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *full = jr_reward_result_json(s->r, &res[i]);
        json_t *scores = json_object();
        for (int k = 0; k < res[i].n_parts; k++)
            json_object_set_new(scores, jr_reward_part_name(s->r, k), res[i].parts[k].scored ? json_real(res[i].parts[k].value) : json_null());
        json_t *o = json_pack("{s:o,s:s,s:o,s:o,s:b,s:f}", "reward", res[i].scored ? json_real(res[i].reward) : json_null(), "status",
                              res[i].scored ? "ok" : "unscored", "scores", scores, "detail",
                              full ? json_incref(json_object_get(full, "components")) : json_null(), "cached",
                              res[i].judge_cached > 0 && res[i].judge_calls == 0, "latency_s", round(lat * 1e6) / 1e6);
        if (o && !res[i].scored) json_object_set_new(o, "reason", json_string(res[i].reason ? res[i].reason : "unscored"));
        json_decref(full);
        json_array_append_new(out, o);
    }
    return json_pack("{s:o}", "results", out);
}

/* ---- routes ----------------------------------------------------------------------------------- */

static int route(void *ud, const char *url, int *post, int *auth) {
    jr_rsvc *s = ud;
    int r = !strcmp(url, "/health") ? R_HEALTH : !strcmp(url, "/metrics") ? R_METRICS : !strcmp(url, s->o.openrlhf_path) ? R_OPENRLHF
          : !strcmp(url, s->o.slime_path) ? R_SLIME : !strcmp(url, "/v1/rewards") ? R_BATCH : R_NONE;
    *post = *auth = r >= R_OPENRLHF;
    return r;
}

static enum MHD_Result send_metrics(jr_rsvc *s, struct MHD_Connection *c) {
    jr_strbuf b = {0};
    jr_http_metrics_requests(s->http, &b);
    jr_judge_stats js = {0};
    jr_judge *j = jr_reward_judge(s->r);
    if (j) jr_judge_stats_get(j, &js);
    pthread_mutex_lock(&s->mu);
    jr_http_metrics_value(&b, "judgerl_reward_rows_total", "counter", "Rows scored.", (double)s->rows);
    jr_http_metrics_value(&b, "judgerl_reward_rows_unscored_total", "counter", "Rows left unscored (answered 503, null, or the configured value).", (double)s->unscored);
    jr_http_metrics_value(&b, "judgerl_reward_rows_valued_total", "counter", "Unscored rows answered with service.unscored_value.", (double)s->valued);
    jr_http_metrics_value(&b, "judgerl_reward_judge_calls_total", "counter", "Judge calls made for scored rows (cache hits aside).", (double)s->judge_calls);
    jr_http_metrics_value(&b, "judgerl_judge_cache_hits_total", "counter", "Judge calls answered by the cache.", (double)js.cache_hits);
    jr_http_metrics_value(&b, "judgerl_judge_requests_total", "counter", "HTTP requests sent to the judge (retries included).", (double)js.requests);
    jr_http_metrics_value(&b, "judgerl_judge_in_flight", "gauge", "Judge requests on the wire.", js.in_flight);
    jr_http_metrics_hist(&b, "judgerl_request_latency_seconds", "Time from a request's arrival to its answer.", &s->req_lat);
    size_t m = s->n_judge_lat < N_LAT ? (size_t)s->n_judge_lat : N_LAT;
    double *l = malloc((m ? m : 1) * sizeof *l);
    if (l) memcpy(l, s->judge_lat, m * sizeof *l);
    jr_http_metrics_value(&b, "judgerl_requests_in_flight", "gauge", "Rows being scored now.", (double)s->inflight_rows);
    pthread_mutex_unlock(&s->mu);
    jr_strbuf_add(&b, "# HELP judgerl_judge_latency_seconds Judge latency per row (submit to result) over the last 4096 judged rows.\n"
                      "# TYPE judgerl_judge_latency_seconds summary\n");
    if (l) {
        for (size_t a = 1; a < m; a++) /* insertion sort: at most 4096 values */
            for (size_t k = a; k > 0 && l[k - 1] > l[k]; k--) { double t = l[k]; l[k] = l[k - 1]; l[k - 1] = t; }
        const double qs[] = {0.5, 0.9, 0.99};
        for (int q = 0; q < 3; q++) {
            jr_strbuf_addf(&b, "judgerl_judge_latency_seconds{quantile=\"%g\"} %.6f\n", qs[q], m ? l[(size_t)(qs[q] * (double)(m - 1))] : 0.0);
        }
        free(l);
    }
    return jr_http_send(s->http, c, 200, "text/plain; version=0.0.4", jr_strbuf_take(&b));
}

static void note(jr_rsvc *s, const char *route, int status, size_t n, long unscored, double t0) {
    if (!s->o.log_requests) return;
    fprintf(stderr, "judgerl serve-reward: POST %s %d rows=%zu unscored=%ld %.1f ms\n", route, status, n, unscored, (jr_now_s() - t0) * 1e3);
}

/* Scores the rows of one request and answers in its protocol's shape. */
static enum MHD_Result serve_rows(jr_rsvc *s, struct MHD_Connection *c, jr_http_req *rq, double t0) {
    const char *rname = rq->route == R_OPENRLHF ? s->o.openrlhf_path : rq->route == R_SLIME ? s->o.slime_path : route_name[rq->route];
    char msg[600];
    json_t *rows = NULL;
    jr_rsvc_protocol proto = rq->route == R_OPENRLHF ? JR_RSVC_OPENRLHF : rq->route == R_SLIME ? JR_RSVC_SLIME : JR_RSVC_BATCH;
    int bad = jr_rsvc_parse_rows(proto, rq->body.p ? rq->body.p : "", rq->body.n, &rows, msg, sizeof msg);
    size_t n = json_array_size(rows);
    int status = bad ? 400 : 0;
    if (!bad && n > (size_t)s->o.max_rows) {
        snprintf(msg, sizeof msg, "%zu rows in one request, the limit is %d (service.max_rows)", n, s->o.max_rows);
        status = 413;
    }
    if (!status) {
        pthread_mutex_lock(&s->mu);
        if (s->draining) { snprintf(msg, sizeof msg, "the server is shutting down"); status = 503; }
        else if (s->inflight_rows + (long)n > s->o.max_inflight_rows) {
            snprintf(msg, sizeof msg, "%ld rows are being scored, %zu more would pass service.max_inflight_rows=%d; retry later", s->inflight_rows, n,
                     s->o.max_inflight_rows);
            status = 429;
        } else {
            s->inflight_rows += (long)n;
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (status) {
        json_decref(rows);
        note(s, rname, status, n, 0, t0);
        return jr_http_error(s->http, c, status, msg, NULL);
    }
    jr_reward_result *res = calloc(n + 1, sizeof *res);
    const json_t **rp = calloc(n + 1, sizeof *rp);
    for (size_t i = 0; rp && i < n; i++) rp[i] = json_array_get(rows, i);
    jr_status st = res && rp ? jr_reward_shared_score(s->r, rp, n, res) : JR_ENOMEM;
    double t1 = jr_now_s();
    long unscored = 0;
    for (size_t i = 0; res && i < n; i++) unscored += !res[i].scored;
    pthread_mutex_lock(&s->mu);
    s->inflight_rows -= (long)n;
    if (s->draining) pthread_cond_broadcast(&s->cv);
    if (res && st != JR_ENOMEM) {
        s->rows += n;
        s->unscored += (unsigned long long)unscored;
        for (size_t i = 0; i < n; i++) {
            s->judge_calls += (unsigned long long)res[i].judge_calls;
            if (res[i].judge_latency_s > 0) s->judge_lat[s->n_judge_lat++ % N_LAT] = res[i].judge_latency_s;
        }
        if (unscored && s->o.unscored_value_set && rq->route != R_BATCH) s->valued += (unsigned long long)unscored;
    }
    jr_http_hist_add(&s->req_lat, t1 - t0);
    pthread_mutex_unlock(&s->mu);
    json_t *ans = NULL;
    if (st == JR_ENOMEM || !res) status = 500, snprintf(msg, sizeof msg, "out of memory");
    else if (unscored && rq->route != R_BATCH && !s->o.unscored_value_set) {
        size_t i = 0;
        while (res[i].scored) i++;
        /* OpenRLHF and slime cannot carry "unscored": a failure they see, never a made-up number */
        snprintf(msg, sizeof msg, "%ld of %zu rows unscored; row %zu: %.400s (service.on_unscored: error; the caller should retry)", unscored, n, i,
                 res[i].reason ? res[i].reason : "unscored");
        status = 503;
    } else if (rq->route == R_OPENRLHF) ans = answer_openrlhf(s, res, n);
    else if (rq->route == R_SLIME) ans = answer_slime(s, &res[0]);
    else ans = answer_batch(s, res, n, t1 - t0);
    for (size_t i = 0; res && i < n; i++) jr_reward_result_free(&res[i]);
    free(res);
    free(rp);
    json_decref(rows);
    note(s, rname, status ? status : 200, n, unscored, t0);
    if (status) return jr_http_send(s->http, c, status, "application/json", jr_error_body(status, msg, status == 503 ? "unscored" : NULL));
    char *t = ans && json_is_real(ans) ? json_dumps(ans, JSON_ENCODE_ANY | JSON_REAL_PRECISION(9)) : dump(json_incref(ans));
    json_decref(ans);
    return jr_http_send(s->http, c, 200, "application/json", t);
}

static enum MHD_Result serve(void *ud, struct MHD_Connection *c, jr_http_req *rq) {
    jr_rsvc *s = ud;
    double t0 = jr_now_s();
    pthread_mutex_lock(&s->mu);
    int draining = s->draining;
    pthread_mutex_unlock(&s->mu);
    if (rq->route == R_METRICS) return send_metrics(s, c);
    if (draining) return jr_http_error(s->http, c, 503, "the server is shutting down", NULL);
    if (rq->route == R_HEALTH) return jr_http_send(s->http, c, 200, "application/json", strdup("{\"status\":\"ok\"}"));
    return serve_rows(s, c, rq, t0);
}

jr_status jr_rsvc_start(jr_rsvc **out, jr_reward *r, const jr_rsvc_opts *o) {
    *out = NULL;
    jr_status st = jr_reward_shared_start(r);
    if (st) return st;
    jr_rsvc *s = calloc(1, sizeof *s);
    if (!s) return jr_fail(JR_ENOMEM, "serve-reward: out of memory");
    s->o = *o;
    s->r = r;
    if (s->o.max_rows <= 0) s->o.max_rows = 4096;
    if (s->o.max_inflight_rows <= 0) s->o.max_inflight_rows = 16384;
    if (!s->o.openrlhf_path) s->o.openrlhf_path = "/get_reward";
    if (!s->o.slime_path) s->o.slime_path = "/slime";
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    jr_http_opts ho = {.who = "serve-reward", .host = o->host, .port = o->port, .api_key = o->api_key, .max_body = o->max_body,
                       .max_connections = o->max_connections, .max_per_client = o->max_per_client, .header_timeout = o->header_timeout,
                       .body_timeout = o->body_timeout, .route = route, .serve = serve, .ud = s};
    if ((st = jr_http_start(&s->http, &ho))) {
        jr_rsvc_stop(s, 0);
        return st;
    }
    *out = s;
    return JR_OK;
}

int jr_rsvc_port(const jr_rsvc *s) { return jr_http_port(s->http); }

void jr_rsvc_stop(jr_rsvc *s, double timeout_s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    double until = jr_now_s() + timeout_s;
    while (s->inflight_rows > 0 && jr_now_s() < until)
        jr_http_timed_wait(&s->cv, &s->mu, 0.05);
    pthread_mutex_unlock(&s->mu);
    jr_http_stop(s->http); /* waits for the connections' threads (a row still scoring finishes first) */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
