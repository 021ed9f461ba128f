/* env.c - the environment interface (env.h): completion queue, the trainer's batch (back-pressure,
 * deadline, cancel, results by sample id), and two environments: a plain function and the reward registry */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/clock.h"
#include "judgerl/env.h"
#include "judgerl/fsutil.h"
#include "judgerl/reward.h"

void jr_env_result_free(jr_env_result *r) {
    if (!r) return;
    free(r->reason);
    free(r->parts);
    free(r->parts_scored);
    json_decref(r->detail);
    memset(r, 0, sizeof *r);
}

jr_status jr_env_result_parts(jr_env_result *r, int n) {
    r->parts = jr_calloc((size_t)n + 1, sizeof *r->parts);
    r->parts_scored = jr_calloc((size_t)n + 1, 1);
    r->n_parts = n;
    return r->parts && r->parts_scored ? JR_OK : JR_ENOMEM;
}

void jr_env_close(jr_env *e) {
    if (e && e->ops && e->ops->close) e->ops->close(e->ctx);
    if (e) memset(e, 0, sizeof *e);
}

/* ---- the completion queue ---- */

typedef struct qnode {
    jr_env_result r;
    struct qnode *next;
} qnode;

struct jr_env_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    qnode *head, *tail;
};

void jr_env_queue_push(jr_env_queue *q, jr_env_result *r) {
    qnode *n = jr_calloc(1, sizeof *n);
    if (!n) { jr_env_result_free(r); return; } /* the sample then ends UNSCORED at the deadline */
    n->r = *r;
    memset(r, 0, sizeof *r);
    pthread_mutex_lock(&q->mu);
    if (q->tail) q->tail->next = n;
    else q->head = n;
    q->tail = n;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Pops one result, waiting until the absolute CLOCK_MONOTONIC time `until` (0: do not wait). 1 when one came. */
static int queue_pop(jr_env_queue *q, jr_env_result *out, double until) {
    pthread_mutex_lock(&q->mu);
    while (!q->head && until > 0 && jr_now_s() < until) {
        double w = until - jr_now_s();
        if (w > 0.05) w = 0.05; /* wake up to look at the stop flag */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long ns = ts.tv_nsec + (long)(w * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    qnode *n = q->head;
    if (n) {
        q->head = n->next;
        if (!q->head) q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    if (!n) return 0;
    *out = n->r;
    free(n);
    return 1;
}

/* ---- the trainer's batch ---- */

struct jr_env_batch {
    jr_env *env;
    jr_env_batch_opts o;
    jr_env_queue q;
    size_t n, in_flight;
    jr_env_result *out;
    uint8_t *state;         /* 0 never submitted, 1 in flight, 2 done */
};

jr_status jr_env_batch_open(jr_env_batch **bp, jr_env *env, size_t n, jr_env_result *out, const jr_env_batch_opts *o) {
    jr_env_batch *b = jr_calloc(1, sizeof *b);
    if (!b || !(b->state = jr_calloc(n + 1, 1))) { free(b); return JR_ENOMEM; }
    b->env = env;
    if (o) b->o = *o;
    b->n = n;
    b->out = out;
    memset(out, 0, n * sizeof *out);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&b->q.mu, NULL);
    pthread_cond_init(&b->q.cv, &ca);
    pthread_condattr_destroy(&ca);
    *bp = b;
    return JR_OK;
}

/* Files one popped result under its sample id (results for unknown or finished ids are dropped). */
static void take(jr_env_batch *b, jr_env_result *r) {
    if (r->id >= b->n || b->state[r->id] != 1) { jr_env_result_free(r); return; }
    b->out[r->id] = *r;
    b->state[r->id] = 2;
    b->in_flight--;
}

static int stopped(const jr_env_batch *b) { return b->o.stop && *b->o.stop; }

jr_status jr_env_batch_submit(jr_env_batch *b, size_t i, const json_t *row, const char *completion, size_t len) {
    if (i >= b->n || b->state[i]) return jr_fail(JR_EINVAL, "environment %s: sample id %zu submitted twice or out of "
                                                            "range (%zu samples)", b->env->ops->name, i, b->n);
    jr_env_result r;
    while (b->o.max_in_flight > 0 && b->in_flight >= (size_t)b->o.max_in_flight && !stopped(b)) {
        if (queue_pop(&b->q, &r, jr_now_s() + 0.05)) take(b, &r);
        else if (b->env->ops->flush) { /* a batching environment finishes only when flushed */
            jr_status st = b->env->ops->flush(b->env->ctx, &b->q);
            if (st) return st;
        }
    }
    b->state[i] = 1;
    b->in_flight++;
    jr_status st = b->env->ops->submit(b->env->ctx, row, completion, len, (uint64_t)i, &b->q);
    if (st) { b->state[i] = 0; b->in_flight--; }
    return st;
}

/* Every sample without a result becomes UNSCORED with `reason` (state 1) or "not submitted" (state 0). */
static void mark_missing(jr_env_batch *b, const char *reason) {
    for (size_t i = 0; i < b->n; i++) {
        if (b->state[i] == 2) continue;
        jr_env_result *r = &b->out[i];
        r->id = i;
        r->scored = 0;
        r->reward = NAN;
        r->reason = jr_strdup(b->state[i] ? reason : "not submitted");
        jr_env_result_parts(r, b->env->n_parts);
    }
}

jr_status jr_env_batch_finish(jr_env_batch *b) {
    jr_status st = b->env->ops->flush ? b->env->ops->flush(b->env->ctx, &b->q) : JR_OK;
    double until = b->o.deadline_s > 0 ? jr_now_s() + b->o.deadline_s : INFINITY;
    jr_env_result r;
    while (!st && b->in_flight > 0 && !stopped(b) && jr_now_s() < until)
        if (queue_pop(&b->q, &r, fmin(until, jr_now_s() + 0.05))) take(b, &r);
    const char *why = stopped(b) ? "canceled" : "deadline";
    int cut = b->in_flight > 0;
    if (cut && b->env->ops->cancel) b->env->ops->cancel(b->env->ctx);
    while (queue_pop(&b->q, &r, 0)) take(b, &r); /* what arrived before the cancel */
    mark_missing(b, why);
    if (!st && cut && stopped(b)) st = jr_fail(JR_ECANCELED, "environment %s: canceled by a stop request", b->env->ops->name);
    pthread_mutex_destroy(&b->q.mu);
    pthread_cond_destroy(&b->q.cv);
    free(b->state);
    free(b);
    return st;
}

/* ---- a plain function ---- */

typedef struct {
    jr_env_fn fn;
    void *ud;
} fn_env;

static jr_status fn_submit(void *ctx, const json_t *row, const char *completion, size_t len, uint64_t id,
                           jr_env_queue *q) {
    fn_env *f = ctx;
    jr_env_result r = {.id = id};
    double t0 = jr_now_s();
    const char *reason = NULL;
    r.scored = 1;
    r.reward = f->fn(f->ud, row, completion, len, &r.scored, &reason);
    if (!r.scored) {
        r.reward = NAN;
        r.reason = jr_strdup(reason ? reason : "unscored");
    }
    r.cost.seconds = jr_now_s() - t0;
    jr_env_result_parts(&r, 0);
    jr_env_queue_push(q, &r);
    return JR_OK;
}

static void fn_close(void *ctx) { free(ctx); }

static const jr_env_ops fn_ops = {"function", fn_submit, NULL, NULL, fn_close};

jr_status jr_env_from_fn(jr_env *e, jr_env_fn fn, void *ud) {
    memset(e, 0, sizeof *e);
    fn_env *f = jr_calloc(1, sizeof *f);
    if (!f) return JR_ENOMEM;
    f->fn = fn;
    f->ud = ud;
    e->ops = &fn_ops;
    e->ctx = f;
    return JR_OK;
}

/* ---- the reward registry ---- */

typedef struct {
    jr_reward *rw;
    size_t cap;
    jr_reward_batch *batch;  /* open while samples are pending */
    jr_reward_result *res;   /* (cap) */
    uint8_t *added;
    const char **names;
    double *weights;
} reward_env;

static jr_status rw_submit(void *ctx, const json_t *row, const char *completion, size_t len, uint64_t id,
                           jr_env_queue *q) {
    reward_env *e = ctx;
    (void)q;
    if (id >= e->cap) return jr_fail(JR_EINVAL, "reward environment: sample id %llu >= %zu", (unsigned long long)id, e->cap);
    jr_status st = e->batch ? JR_OK : jr_reward_batch_open(e->rw, e->cap, e->res, &e->batch);
    json_t *r = st ? NULL : json_copy((json_t *)row);
    if (!st && !r) st = JR_ENOMEM;
    if (st) return st;
    json_object_set_new(r, "response", json_stringn(completion, len));
    e->added[id] = 1;
    st = jr_reward_batch_add(e->batch, (size_t)id, r);
    json_decref(r);
    return st;
}

/* Waits for the judge results (jr_reward_batch_finish) and pushes every submitted sample's result. */
static jr_status rw_flush(void *ctx, jr_env_queue *q) {
    reward_env *e = ctx;
    if (!e->batch) return JR_OK;
    jr_status st = jr_reward_batch_finish(e->batch);
    e->batch = NULL;
    for (size_t i = 0; i < e->cap; i++) {
        jr_reward_result *x = &e->res[i];
        if (e->added[i]) {
            jr_env_result r = {.id = i, .scored = x->scored, .reward = x->reward};
            r.reason = x->reason ? jr_strdup(x->reason) : NULL;
            r.detail = jr_reward_result_json(e->rw, x);
            r.cost.model_calls = x->judge_calls;
            r.cost.seconds = x->judge_latency_s;
            if (!jr_env_result_parts(&r, x->n_parts))
                for (int k = 0; k < x->n_parts; k++) {
                    r.parts[k] = x->parts[k].value;
                    r.parts_scored[k] = (uint8_t)x->parts[k].scored;
                }
            jr_env_queue_push(q, &r);
        }
        jr_reward_result_free(x);
        e->added[i] = 0;
    }
    return st;
}

/* The registry's judge calls cannot be withdrawn: cancel waits for them and drops the results. */
static void rw_cancel(void *ctx) {
    reward_env *e = ctx;
    if (!e->batch) return;
    jr_reward_batch_finish(e->batch);
    e->batch = NULL;
    for (size_t i = 0; i < e->cap; i++) { jr_reward_result_free(&e->res[i]); e->added[i] = 0; }
}

static void rw_close(void *ctx) {
    reward_env *e = ctx;
    rw_cancel(e);
    free(e->res); free(e->added); free(e->names); free(e->weights);
    free(e);
}

static const jr_env_ops rw_ops = {"reward", rw_submit, rw_flush, rw_cancel, rw_close};

jr_status jr_env_from_reward(jr_env *env, jr_reward *rw, size_t cap) {
    memset(env, 0, sizeof *env);
    reward_env *e = jr_calloc(1, sizeof *e);
    int K = jr_reward_n_parts(rw);
    if (!e) return JR_ENOMEM;
    e->rw = rw;
    e->cap = cap;
    e->res = jr_calloc(cap + 1, sizeof *e->res);
    e->added = jr_calloc(cap + 1, 1);
    e->names = jr_calloc((size_t)K + 1, sizeof *e->names);
    e->weights = jr_calloc((size_t)K + 1, sizeof *e->weights);
    if (!e->res || !e->added || !e->names || !e->weights) { rw_close(e); return JR_ENOMEM; }
    for (int k = 0; k < K; k++) {
        e->names[k] = jr_reward_part_name(rw, k);
        e->weights[k] = jr_reward_part_weight(rw, k);
    }
    *env = (jr_env){&rw_ops, e, K, e->names, e->weights};
    return JR_OK;
}
