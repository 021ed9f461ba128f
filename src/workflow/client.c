/* client.c - the executor's model calls: the judge client (concurrency, retries, SSE, rate limits,
 * cache) with a pass-through protocol, one collector thread routing results to blocked callers */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/clock.h"
#include "judgerl/judge.h"
#include "workflow/wf_exec.h"

const jr_cfg_field jr_workflow_cfg[] = {
    {"workflow.max_statements", JR_CFG_INT, "12", "most lines of a workflow, the return included", NULL, NULL, 2, 1000},
    {"workflow.max_depth", JR_CFG_INT, "3", "deepest call nesting", NULL, NULL, 1, 100},
    {"workflow.max_calls", JR_CFG_INT, "24", "most executor calls a workflow may make, counted statically before it runs", NULL, NULL, 1, 100000},
    {"workflow.budget_calls", JR_CFG_INT, "24", "executor calls allowed per run (a run that needs more fails with a budget reason)", NULL, NULL, 1, 100000},
    {"workflow.budget_tokens", JR_CFG_INT, "32000", "prompt + completion tokens allowed per run (server usage; bytes/4 when the server gives none)", NULL, NULL, 1, 1e12},
    {"workflow.budget_seconds", JR_CFG_FLOAT, "300.0", "wall time allowed per run", NULL, NULL, 0.001, 1e6},
    {"workflow.max_tokens", JR_CFG_INT, "512", "max_tokens of each executor call", NULL, NULL, 1, 1e7},
    {"workflow.temperature", JR_CFG_FLOAT, "0.7", "sampling temperature of each executor call (xK branches differ by seed)", NULL, NULL, 0, 2},
    {"workflow.templates", JR_CFG_STRING, "templates/workflow", "directory of the Layer-2 operator templates (OP_TYPE.txt, else OP.txt)", NULL, NULL, 0, 0},
    {"workflow.seed", JR_CFG_INT, "0", "seed of the per-call request seeds and of mdensemble's shuffles", NULL, NULL, 0, 0},
    {"workflow.parallel", JR_CFG_INT, "4", "rows run at once by `judgerl workflow run`", NULL, NULL, 1, 1024},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

void jr_workflow_opts_from_config(jr_workflow_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->limits.max_statements = (int)jr_cfg_int(c, "workflow.max_statements");
    o->limits.max_depth = (int)jr_cfg_int(c, "workflow.max_depth");
    o->limits.max_calls = (int)jr_cfg_int(c, "workflow.max_calls");
    o->budget_calls = (int)jr_cfg_int(c, "workflow.budget_calls");
    o->budget_tokens = (long)jr_cfg_int(c, "workflow.budget_tokens");
    o->budget_seconds = jr_cfg_float(c, "workflow.budget_seconds");
    o->max_tokens = (int)jr_cfg_int(c, "workflow.max_tokens");
    o->temperature = jr_cfg_float(c, "workflow.temperature");
    o->templates = jr_cfg_str(c, "workflow.templates");
    o->seed = (uint64_t)jr_cfg_int(c, "workflow.seed");
    o->parallel = (int)jr_cfg_int(c, "workflow.parallel");
    jr_sandbox_opts_from_config(&o->sandbox, c);
}

/* ---- the pass-through protocol: row {id, messages, params} -> one call -> its text ---- */
static jr_status pt_open(const jr_judge_opts *jo, const char *cfg_dir, void **state) {
    (void)jo;
    (void)cfg_dir;
    *state = NULL;
    return JR_OK;
}
static void pt_close(void *state) { (void)state; }

static jr_status pt_build(void *state, const json_t *row, jr_judge_calls *calls) {
    (void)state;
    json_t *m = json_object_get(row, "messages");
    if (!json_is_array(m)) return jr_fail(JR_EINVAL, "workflow call: field 'messages' must be an array");
    json_t *p = json_object_get(row, "params");
    return jr_judge_calls_add(calls, json_deep_copy(m), p ? json_deep_copy(p) : NULL, NULL, NULL);
}

static jr_parse_rc pt_parse(void *state, const json_t *row, const jr_judge_call *call, int index, const jr_judge_response *resp,
                            double *value, json_t **detail, char *why, size_t why_len) {
    (void)state, (void)row, (void)call, (void)index, (void)why, (void)why_len;
    *value = 0;
    *detail = json_pack("{s:s, s:s, s:I, s:b}", "text", resp->text, "finish", resp->finish_reason, "tokens",
                        (json_int_t)resp->total_tokens, "cached", resp->cached);
    return JR_PARSE_OK;
}

static jr_verdict pt_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                             jr_judge_outcome *out) {
    (void)state, (void)row, (void)calls;
    if (n < 1 || !res[0].ok) {
        out->reason = strdup(n >= 1 && res[0].error ? res[0].error : "the call failed");
        return JR_VERDICT_UNSCORED;
    }
    out->reward = 0;
    out->detail = json_incref(res[0].detail);
    return JR_VERDICT_SCORED;
}

static const jr_protocol passthrough = {"workflow_call", pt_open, pt_close, pt_build, pt_parse, pt_combine};

/* ---- one pending call ---- */
typedef struct slot {
    int done, abandoned;
    jr_judge_result res;
} slot;

/* Hands each answer to its waiting call. It sleeps while no call is out: jr_judge_collect returns at once when
 * nothing is pending, and polling it kept a core busy beside the executor and the policy. */
static void *collector(void *arg) {
    jr_wf_executor *e = arg;
    jr_judge_result rs[16];
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stop && e->waiting == 0) pthread_cond_wait(&e->cv_work, &e->mu);
        int stop = e->stop;
        pthread_mutex_unlock(&e->mu);
        if (stop) break;
        int n = jr_judge_collect(e->judge, rs, 16, 50);
        pthread_mutex_lock(&e->mu);
        e->waiting -= n;
        for (int i = 0; i < n; i++) {
            slot *s = rs[i].user;
            if (s->abandoned) { /* freed at close (it is in e->lost) */
                jr_judge_result_free(&rs[i]);
                continue;
            }
            s->res = rs[i];
            s->done = 1;
        }
        if (n) pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
    return NULL;
}

jr_status wf_client_open(jr_wf_executor *e, const jr_judge_opts *jo) {
    jr_status st = jr_judge_open_opts(&e->judge, jo);
    if (st) return st;
    if ((st = jr_judge_add_protocol_impl(e->judge, &passthrough, &e->proto))) return st;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_cond_init(&e->cv_work, NULL);
    if (pthread_create(&e->thread, NULL, collector, e)) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        pthread_cond_destroy(&e->cv_work);
        return jr_fail(JR_EINTERNAL, "workflow executor: cannot start the collector thread");
    }
    e->started = 1;
    return JR_OK;
}

void wf_client_close(jr_wf_executor *e) {
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = 1;
        pthread_cond_signal(&e->cv_work);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        pthread_cond_destroy(&e->cv_work);
    }
    jr_judge_close(e->judge); /* frees uncollected results */
    for (int i = 0; i < e->n_lost; i++) free(e->lost[i]);
    free(e->lost);
}

int wf_client_call(jr_wf_executor *e, const char *prompt, uint64_t seed, double deadline, wf_reply *out) {
    memset(out, 0, sizeof *out);
    static long counter;
    long id = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    char ids[32];
    snprintf(ids, sizeof ids, "wf-%ld", id);
    json_t *row = json_pack("{s:s, s:[{s:s, s:s}], s:{s:I, s:f, s:i}}", "id", ids, "messages", "role", "user", "content", prompt,
                            "params", "seed", (json_int_t)(seed & 0x7fffffffffffLL), "temperature", e->o.temperature,
                            "max_tokens", e->o.max_tokens);
    slot *s = calloc(1, sizeof *s);
    if (!row || !s) {
        json_decref(row);
        free(s);
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    uint64_t ticket;
    double t0 = jr_now_s();
    pthread_mutex_lock(&e->mu); /* counted before it is sent: the collector may take its answer at once */
    e->waiting++;
    pthread_cond_signal(&e->cv_work);
    pthread_mutex_unlock(&e->mu);
    jr_status st = jr_judge_submit_proto(e->judge, e->proto, row, s, &ticket);
    json_decref(row);
    pthread_mutex_lock(&e->mu);
    if (st) {
        e->waiting--;
        pthread_mutex_unlock(&e->mu);
        free(s);
        snprintf(out->error, sizeof out->error, "%s", jr_errmsg());
        return -1;
    }
    while (!s->done) {
        double left = deadline - jr_now_s();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double w = fmin(left, 0.5);
        ts.tv_sec += (time_t)w;
        ts.tv_nsec += (long)((w - floor(w)) * 1e9);
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    if (!s->done) {
        s->abandoned = 1; /* the collector drops its answer; close frees it */
        void **l = realloc(e->lost, (size_t)(e->n_lost + 1) * sizeof *l);
        if (l) { e->lost = l; e->lost[e->n_lost++] = s; }
        pthread_mutex_unlock(&e->mu);
        out->timed_out = 1;
        out->latency_s = jr_now_s() - t0;
        snprintf(out->error, sizeof out->error, "budget: wall time of %.3g s ran out waiting for the executor", e->o.budget_seconds);
        return -1;
    }
    pthread_mutex_unlock(&e->mu);
    jr_judge_result *r = &s->res;
    out->latency_s = jr_now_s() - t0;
    int rc = 0;
    if (r->status != JR_SCORE_OK) {
        snprintf(out->error, sizeof out->error, "executor call failed: %s", r->error ? r->error : "unknown error");
        rc = -1;
    } else {
        const char *text = json_string_value(json_object_get(r->detail, "text"));
        out->text = strdup(text ? text : "");
        out->finish = json_string_value(json_object_get(r->detail, "finish")) ? strdup(json_string_value(json_object_get(r->detail, "finish"))) : NULL;
        out->tokens = (long)json_integer_value(json_object_get(r->detail, "tokens"));
        out->cached = json_is_true(json_object_get(r->detail, "cached"));
        if (!out->text) { snprintf(out->error, sizeof out->error, "out of memory"); rc = -1; }
    }
    jr_judge_result_free(r);
    free(s);
    return rc;
}

void wf_reply_free(wf_reply *r) {
    free(r->text);
    free(r->finish);
    memset(r, 0, sizeof *r);
}
