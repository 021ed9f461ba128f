/* reward.c - the reward registry: components from the config, rule components computed here, judge
 * components submitted together to one judge client, composed per row with weights */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "judgerl/reward.h"
#include "judgerl/sha256.h"

/* ---- the table of reward functions ---- */

extern const jr_reward_fn jr_reward_builtins[]; /* fns.c, ended by a row with name NULL */

enum { MAX_EXTRA = 32 };
static const jr_reward_fn *extra[MAX_EXTRA];
static int n_extra;

const jr_reward_fn *jr_reward_fn_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; jr_reward_builtins[i].name; i++)
        if (!strcmp(jr_reward_builtins[i].name, name)) return &jr_reward_builtins[i];
    for (int i = 0; i < n_extra; i++)
        if (!strcmp(extra[i]->name, name)) return extra[i];
    return NULL;
}

jr_status jr_reward_fn_register(const jr_reward_fn *fn) {
    if (!fn || !fn->name || !fn->eval) return jr_fail(JR_EINVAL, "reward function: needs a name and an eval");
    if (jr_reward_fn_find(fn->name)) return jr_fail(JR_EINVAL, "reward function '%s' is already registered", fn->name);
    if (n_extra == MAX_EXTRA) return jr_fail(JR_EINVAL, "reward function '%s': the table is full (%d)", fn->name, MAX_EXTRA);
    extra[n_extra++] = fn;
    return JR_OK;
}

/* ---- the registry ---- */

typedef struct {
    char *name;
    const jr_reward_fn *fn;
    double weight;
    int optional;
    int gate; /* index of the component that gates this one (counts only when it is scored and > 0); -1 = none */
    json_t *params;
    int proto; /* judge protocol handle (fn->protocol only) */
} component;

struct flight;

struct jr_reward {
    jr_reward_opts o; /* a copy (strings borrowed from the caller's config) */
    jr_reason_tally *why; /* every unscored row's reason since open */
    component *c;
    int n;
    jr_judge *judge;
    /* shared scoring (jr_reward_shared_*): rows in flight, the collector thread */
    pthread_mutex_t mu;
    pthread_cond_t cv_work;
    long judge_waiting; /* judge results submitted and not yet collected */
    pthread_t collector;
    int shared, stop;
    struct flight *flights;
    uint64_t next_id;
};

static void shared_stop(jr_reward *r);

void jr_reward_close(jr_reward *r) {
    if (!r) return;
    shared_stop(r);
    for (int i = 0; i < r->n; i++) {
        free(r->c[i].name);
        json_decref(r->c[i].params);
    }
    free(r->c);
    jr_judge_close(r->judge);
    jr_reason_tally_free(r->why);
    free(r);
}

static const char *known_names(void) {
    static char buf[512];
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; jr_reward_builtins[i].name && off < sizeof buf - 40; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? ", " : "", jr_reward_builtins[i].name);
    for (int i = 0; i < n_extra && off < sizeof buf - 40; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, ", %s", extra[i]->name);
    return buf;
}

jr_status jr_reward_opts_from_config(jr_reward_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    jr_status st = jr_judge_opts_from_config(&o->judge, c);
    if (st) return st;
    /* sandbox.* exist when the config was loaded with jr_sandbox_cfg (train, grade, config) */
    if (jr_cfg_has(c, "sandbox")) jr_sandbox_opts_from_config(&o->sandbox, c);
    else jr_sandbox_opts_default(&o->sandbox);
    json_t *comps = jr_cfg_json(c, "reward.components");
    if ((st = jr_cfg_check(c))) return st;
    if (json_array_size(comps) > JR_REWARD_MAX_COMPONENTS)
        return jr_fail(JR_EINVAL, "%s: reward.components: more than %d components", c->source, JR_REWARD_MAX_COMPONENTS);
    for (size_t i = 0; i < json_array_size(comps); i++) {
        json_t *k = json_array_get(comps, i);
        jr_reward_component_opts *x = &o->components[o->n_components++];
        x->name = json_string_value(json_object_get(k, "name"));
        x->fn = json_string_value(json_object_get(k, "fn"));
        x->weight = json_number_value(json_object_get(k, "weight"));
        x->optional = json_is_true(json_object_get(k, "optional"));
        x->gate = json_string_value(json_object_get(k, "gate"));
        x->params = json_object_get(k, "params");
    }
    return JR_OK;
}

jr_status jr_reward_open(jr_reward **out, const jr_config *cfg) {
    *out = NULL;
    jr_reward_opts o;
    jr_status st = jr_reward_opts_from_config(&o, cfg);
    return st ? st : jr_reward_open_opts(out, &o);
}

/* reward.components[i].gate: the index of the named component (not itself, not gated itself: one level). */
static jr_status resolve_gates(jr_reward *r, const jr_reward_opts *o) {
    for (int i = 0; i < r->n; i++) r->c[i].gate = -1;
    for (int i = 0; i < r->n; i++) {
        const char *g = o->components[i].gate;
        if (!g) continue;
        for (int j = 0; j < r->n; j++)
            if (j != i && !strcmp(r->c[j].name, g)) r->c[i].gate = j;
        if (r->c[i].gate < 0)
            return jr_fail(JR_EINVAL, "reward.components.%d (%s).gate: no other component is named '%s'", i, r->c[i].name, g);
        if (o->components[r->c[i].gate].gate)
            return jr_fail(JR_EINVAL, "reward.components.%d (%s).gate: '%s' is gated itself (one level only)", i, r->c[i].name, g);
    }
    return JR_OK;
}

jr_status jr_reward_open_opts(jr_reward **out, const jr_reward_opts *o) {
    *out = NULL;
    size_t n = (size_t)(o->n_components > 0 ? o->n_components : 0);
    if (!n) return jr_fail(JR_EINVAL, "reward.components is empty: list at least one {fn, weight}");
    jr_reward *r = jr_calloc(1, sizeof *r);
    if (!r || !(r->c = jr_calloc(n, sizeof *r->c))) { free(r); return JR_ENOMEM; }
    r->o = *o;
    if (!(r->why = jr_reason_tally_new())) { jr_reward_close(r); return JR_ENOMEM; }
    int need_judge = 0;
    jr_status st = JR_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const jr_reward_component_opts *c = &o->components[i];
        const char *fname = c->fn;
        const jr_reward_fn *fn = jr_reward_fn_find(fname);
        if (!fn) { st = jr_fail(JR_EINVAL, "reward.components.%zu.fn: unknown reward function '%s' (known: %s)", i, fname ? fname : "", known_names()); break; }
        const char *name = c->name;
        component *k = &r->c[r->n];
        k->fn = fn;
        k->weight = c->weight;
        k->optional = c->optional;
        k->params = c->params ? json_incref((json_t *)c->params) : json_object();
        if (!(k->name = jr_strdup(name ? name : fname))) { st = JR_ENOMEM; break; }
        r->n++;
        for (int j = 0; j + 1 < r->n; j++)
            if (!strcmp(r->c[j].name, k->name))
                st = jr_fail(JR_EINVAL, "reward.components.%zu.name: '%s' is used twice (give each component its own name)", i, k->name);
        if (!st && fn->check && (st = fn->check(k->params)))
            jr_fail_ctx(st, "reward.components.%zu (%s) params", i, k->name);
        need_judge |= fn->protocol != NULL;
    }
    if (!st) st = resolve_gates(r, o);
    if (!st && need_judge) {
        st = jr_judge_open_opts(&r->judge, &r->o.judge);
        const char *dflt = r->o.judge.protocol;
        for (int i = 0; i < r->n && !st; i++) {
            const char *p = r->c[i].fn->protocol;
            if (!p) continue;
            r->c[i].proto = -1;
            for (int j = 0; j < i; j++)
                if (r->c[j].fn->protocol && !strcmp(r->c[j].fn->protocol, p)) r->c[i].proto = r->c[j].proto;
            if (r->c[i].proto >= 0) continue;
            if (dflt && !strcmp(dflt, p)) r->c[i].proto = 0;
            else if ((st = jr_judge_add_protocol(r->judge, p, &r->c[i].proto)))
                jr_fail_ctx(st, "reward.components.%d (%s)", i, r->c[i].name);
        }
    }
    if (st) { jr_reward_close(r); return st; }
    *out = r;
    return JR_OK;
}

int jr_reward_n_parts(const jr_reward *r) { return r->n; }
const char *jr_reward_part_name(const jr_reward *r, int i) { return r->c[i].name; }
double jr_reward_part_weight(const jr_reward *r, int i) { return r->c[i].weight; }
const char *jr_reward_part_fn(const jr_reward *r, int i) { return r->c[i].fn->name; }
jr_judge *jr_reward_judge(jr_reward *r) { return r->judge; }

void jr_reward_result_free(jr_reward_result *res) {
    if (!res) return;
    for (int i = 0; i < res->n_parts; i++) {
        free(res->parts[i].reason);
        json_decref(res->parts[i].detail);
    }
    free(res->parts);
    free(res->reason);
    memset(res, 0, sizeof *res);
}

/* Where a judge result goes. */
typedef struct {
    size_t row;
    int comp;
} slot;

static void set_unscored(jr_reward_part *p, const char *why) {
    p->scored = 0;
    free(p->reason);
    p->reason = jr_strdup(why && *why ? why : "unscored");
}

/* Merges a judge result into part p: value, reason, and detail {judge: ..., scores: ...} added to
 * what eval left there. */
static void take_judge_result(jr_reward_part *p, jr_judge_result *jres) {
    if (jres->status == JR_SCORE_OK) {
        p->scored = 1;
        p->value = jres->reward;
    } else {
        set_unscored(p, jres->error);
    }
    if (jres->detail || jres->scores) {
        if (!p->detail) p->detail = json_object();
        if (p->detail && jres->detail) json_object_set(p->detail, "judge", jres->detail);
        if (p->detail && jres->scores) json_object_set(p->detail, "scores", jres->scores);
    }
}

static void take_judge_counts(jr_reward_result *res, const jr_judge_result *jres) {
    res->judge_calls += jres->n_calls - jres->n_cached;
    res->judge_cached += jres->n_cached;
    if (jres->latency_s > res->judge_latency_s) res->judge_latency_s = jres->latency_s;
}

/* Runs a row's rule components into res->parts (allocated here) and submits its judge components
 * with users[k] as component k's user pointer (a row without "id" is judged as `id`). Calls
 * pending(ud, +1) before each submission and pending(ud, -1) when it failed. */
static void eval_row(jr_reward *r, json_int_t id, const json_t *row, jr_reward_result *res, void *const *users,
                     void (*pending)(void *ud, int delta), void *ud) {
    memset(res, 0, sizeof *res);
    res->parts = jr_calloc((size_t)r->n, sizeof *res->parts);
    if (!res->parts) return; /* composed as "out of memory" */
    res->n_parts = r->n;
    for (int k = 0; k < r->n; k++) {
        component *c = &r->c[k];
        jr_reward_part *p = &res->parts[k];
        jr_rw_out o = {0};
        jr_rw_rc rc = json_is_object(row) ? c->fn->eval(&r->o, c->params, row, &o) : JR_RW_UNSCORED;
        if (!json_is_object(row) && !o.reason) o.reason = jr_strdup("the row is not a JSON object");
        p->detail = o.detail;
        if (rc == JR_RW_SCORED) {
            p->scored = 1;
            p->value = o.value;
        } else if (rc == JR_RW_UNSCORED) {
            p->reason = o.reason ? o.reason : jr_strdup("unscored");
            o.reason = NULL;
        } else if (!r->judge || !o.judge_row) {
            set_unscored(p, "internal: judge requested without a judge row");
        } else {
            json_t *jrow = o.judge_row;
            o.judge_row = NULL;
            if (!json_object_get(jrow, "id")) {
                json_t *cp = json_copy(jrow);
                json_decref(jrow);
                jrow = cp;
                if (jrow) json_object_set_new(jrow, "id", json_integer(id));
            }
            uint64_t ticket;
            pending(ud, +1);
            jr_status st = jrow ? jr_judge_submit_proto(r->judge, c->proto, jrow, users[k], &ticket) : JR_ENOMEM;
            json_decref(jrow);
            if (st) {
                pending(ud, -1);
                char buf[600];
                snprintf(buf, sizeof buf, "judge: %s", jr_errmsg());
                set_unscored(p, buf);
            }
        }
        free(o.reason);
        json_decref(o.judge_row);
    }
}

/* Composes a row's reward from its parts (a row without parts: "out of memory" when added, else
 * "not scored"); `missing`: judge results that never came are "judge: no result". Adds an
 * unscored row's reason to the tally. */
static void compose(jr_reward *r, jr_reward_result *res, int added, int missing) {
    if (!res->parts) {
        res->reward = NAN;
        res->reason = jr_strdup(added ? "out of memory" : "not scored");
        jr_reason_tally_add(r->why, res->reason);
        return;
    }
    double sum = 0;
    int ok = 1;
    for (int k = 0; k < r->n; k++) {
        jr_reward_part *p = &res->parts[k];
        if (missing && !p->scored && !p->reason && r->c[k].fn->protocol) set_unscored(p, "judge: no result");
        int g = r->c[k].gate, open = g < 0 || (res->parts[g].scored && res->parts[g].value > 0);
        if (p->scored) sum += open ? r->c[k].weight * p->value : 0.0;
        else if (!r->c[k].optional && ok) {
            ok = 0;
            char m[1200];
            snprintf(m, sizeof m, "component '%s': %s", r->c[k].name, p->reason ? p->reason : "unscored");
            res->reason = jr_strdup(m);
        }
    }
    res->scored = ok;
    res->reward = ok ? sum : NAN;
    if (!ok) jr_reason_tally_add(r->why, res->reason);
}

struct jr_reward_batch {
    jr_reward *r;
    jr_reward_result *results;
    size_t cap;
    uint8_t *added;
    slot *slots;
    size_t n_slots, outstanding;
};

jr_status jr_reward_batch_open(jr_reward *r, size_t cap, jr_reward_result *results, jr_reward_batch **out) {
    *out = NULL;
    jr_reward_batch *b = jr_calloc(1, sizeof *b);
    if (!b) return JR_ENOMEM;
    b->r = r;
    b->results = results;
    b->cap = cap;
    b->slots = jr_calloc(cap * (size_t)r->n + 1, sizeof *b->slots);
    b->added = jr_calloc(cap + 1, 1);
    if (!b->slots || !b->added) { free(b->slots); free(b->added); free(b); return JR_ENOMEM; }
    memset(results, 0, cap * sizeof *results);
    *out = b;
    return JR_OK;
}

/* Moves finished judge results into their rows' parts (waits up to timeout_ms for the first). */
static void batch_collect(jr_reward_batch *b, int timeout_ms) {
    enum { BATCH = 64 };
    jr_judge_result buf[BATCH];
    int m = jr_judge_collect(b->r->judge, buf, BATCH, timeout_ms);
    for (int t = 0; t < m; t++) {
        slot *s = buf[t].user;
        if (s >= b->slots && s < b->slots + b->cap * (size_t)b->r->n) {
            jr_reward_result *res = &b->results[s->row];
            if (res->parts) {
                take_judge_result(&res->parts[s->comp], &buf[t]);
                take_judge_counts(res, &buf[t]);
            }
            b->outstanding--;
        }
        jr_judge_result_free(&buf[t]);
    }
}

static void batch_pending(void *ud, int delta) {
    jr_reward_batch *b = ud;
    if (delta > 0) b->outstanding++;
    else b->outstanding--;
}

jr_status jr_reward_batch_add(jr_reward_batch *b, size_t i, const json_t *row) {
    jr_reward *r = b->r;
    if (i >= b->cap || b->added[i]) return jr_fail(JR_EINVAL, "reward batch: row %zu is out of range or added twice", i);
    b->added[i] = 1;
    void *users[JR_REWARD_MAX_COMPONENTS];
    for (int k = 0; k < r->n; k++) users[k] = &b->slots[i * (size_t)r->n + (size_t)k];
    for (int k = 0; k < r->n; k++) {
        b->slots[i * (size_t)r->n + (size_t)k].row = i;
        b->slots[i * (size_t)r->n + (size_t)k].comp = k;
    }
    eval_row(r, (json_int_t)i, row, &b->results[i], users, batch_pending, b);
    /* take what already finished, without waiting, so the client's queue stays short */
    if (b->outstanding && r->judge) batch_collect(b, 0);
    return JR_OK;
}

jr_status jr_reward_batch_finish(jr_reward_batch *b) {
    if (!b) return JR_OK;
    jr_reward *r = b->r;
    while (b->outstanding > 0) {
        size_t before = b->outstanding;
        batch_collect(b, -1);
        if (b->outstanding == before && jr_judge_pending(r->judge) == 0) break;
    }
    for (size_t i = 0; i < b->cap; i++) compose(r, &b->results[i], b->added[i], b->outstanding > 0);
    free(b->slots);
    free(b->added);
    free(b);
    const char *fatal = r->judge ? jr_judge_fatal(r->judge) : NULL;
    if (fatal) return jr_fail(JR_ENET, "%s", fatal);
    return JR_OK;
}

const char *jr_reward_unscored_summary(jr_reward *r) { return jr_reason_tally_summary(r->why); }

long jr_reward_unscored_count(const jr_reward *r) { return jr_reason_tally_count(r->why); }

jr_status jr_reward_score(jr_reward *r, const json_t *const *rows, size_t n, jr_reward_result *results) {
    jr_reward_batch *b;
    jr_status st = jr_reward_batch_open(r, n, results, &b);
    if (st) return st;
    for (size_t i = 0; i < n; i++) jr_reward_batch_add(b, i, rows[i]);
    return jr_reward_batch_finish(b);
}

json_t *jr_reward_result_json(const jr_reward *r, const jr_reward_result *res) {
    json_t *o = json_object(), *comps = json_object();
    if (!o || !comps) { json_decref(o); json_decref(comps); return NULL; }
    json_object_set_new(o, "reward", res->scored ? json_real(res->reward) : json_null());
    json_object_set_new(o, "scored", json_boolean(res->scored));
    if (res->reason) json_object_set_new(o, "reason", json_string(res->reason));
    for (int k = 0; k < res->n_parts && k < r->n; k++) {
        const jr_reward_part *p = &res->parts[k];
        json_t *c = json_pack("{s:o,s:f,s:b}", "value", p->scored ? json_real(p->value) : json_null(), "weight",
                              r->c[k].weight, "scored", p->scored);
        if (!c) continue;
        if (p->reason) json_object_set_new(c, "reason", json_string(p->reason));
        if (p->detail) json_object_set(c, "detail", p->detail);
        json_object_set_new(comps, r->c[k].name, c);
    }
    json_object_set_new(o, "components", comps);
    return o;
}

/* ---- shared scoring ---- */

/* One distinct row being scored for one or more callers. */
typedef struct flight {
    struct flight *next;
    char key[65];             /* sha256 of the row's canonical JSON without "id" */
    jr_reward *r;
    jr_reward_result res;
    int outstanding;          /* judge results to come, +1 while the row is being evaluated */
    int done, waiters;
    pthread_cond_t cv;        /* signalled when done (one per flight: a result wakes only its callers) */
    struct fslot { struct flight *f; int comp; } slots[JR_REWARD_MAX_COMPONENTS];
} flight;

static void flight_compose_if_done(jr_reward *r, flight *f) { /* under r->mu */
    if (f->outstanding > 0 || f->done) return;
    compose(r, &f->res, 1, 0);
    f->done = 1;
    pthread_cond_broadcast(&f->cv);
}

static void *collector_main(void *arg) {
    jr_reward *r = arg;
    enum { BATCH = 64 };
    jr_judge_result buf[BATCH];
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (!r->stop && r->judge_waiting == 0) pthread_cond_wait(&r->cv_work, &r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop) break;
        int m = jr_judge_collect(r->judge, buf, BATCH, 100);
        pthread_mutex_lock(&r->mu);
        for (int t = 0; t < m; t++) {
            struct fslot *sl = buf[t].user;
            flight *f = sl->f;
            take_judge_result(&f->res.parts[sl->comp], &buf[t]);
            take_judge_counts(&f->res, &buf[t]);
            f->outstanding--;
            r->judge_waiting--;
            flight_compose_if_done(r, f);
            jr_judge_result_free(&buf[t]);
        }
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

jr_status jr_reward_shared_start(jr_reward *r) {
    if (r->shared) return JR_OK;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv_work, NULL);
    r->shared = 1;
    if (r->judge && pthread_create(&r->collector, NULL, collector_main, r)) {
        r->shared = 0;
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv_work);
        return jr_fail(JR_EINTERNAL, "reward: cannot start the judge collector thread");
    }
    r->shared = r->judge ? 2 : 1; /* 2: the collector runs */
    return JR_OK;
}

static void shared_stop(jr_reward *r) {
    if (!r->shared) return;
    if (r->shared == 2) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_signal(&r->cv_work);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->collector, NULL);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv_work);
    r->shared = 0;
}

static void flight_pending(void *ud, int delta) {
    flight *f = ud;
    pthread_mutex_lock(&f->r->mu);
    f->outstanding += delta;
    f->r->judge_waiting += delta;
    if (delta > 0) pthread_cond_signal(&f->r->cv_work);
    pthread_mutex_unlock(&f->r->mu);
}

/* The row's key: sha256 of its canonical JSON without "id". */
static int row_key(const json_t *row, char key[65]) {
    json_t *c = json_is_object(row) ? json_copy((json_t *)row) : json_incref((json_t *)row);
    if (!c) return -1;
    if (json_is_object(c)) json_object_del(c, "id");
    char *t = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(c);
    if (!t) return -1;
    jr_sha256 h;
    jr_sha256_init(&h);
    jr_sha256_update(&h, t, strlen(t));
    jr_sha256_final_hex(&h, key);
    free(t);
    return 0;
}

static json_t *deep(const json_t *j) { return j ? json_deep_copy(j) : NULL; }

/* dst = a copy of src (the flight's result stays with the flight). */
static void result_copy(jr_reward_result *dst, const jr_reward_result *src) {
    *dst = *src;
    dst->reason = src->reason ? jr_strdup(src->reason) : NULL;
    dst->parts = src->n_parts ? jr_calloc((size_t)src->n_parts, sizeof *dst->parts) : NULL;
    if (!dst->parts) dst->n_parts = 0;
    for (int k = 0; k < dst->n_parts; k++) {
        dst->parts[k] = src->parts[k];
        dst->parts[k].reason = src->parts[k].reason ? jr_strdup(src->parts[k].reason) : NULL;
        dst->parts[k].detail = deep(src->parts[k].detail);
    }
}

/* Starts scoring one row for this caller: joins a flight with the same key or starts one (and
 * evaluates it). NULL when out of memory. */
static flight *shared_begin(jr_reward *r, const json_t *row) {
    char key[65];
    int keyed = !row_key(row, key);
    flight *f = NULL;
    int mine = 0;
    pthread_mutex_lock(&r->mu);
    if (keyed)
        for (f = r->flights; f && (f->done || strcmp(f->key, key)); f = f->next) {}
    if (!f && (f = jr_calloc(1, sizeof *f))) {
        if (keyed) memcpy(f->key, key, sizeof key);
        else f->key[0] = 0; /* never joined: keys are 64 hex digits */
        f->r = r;
        f->outstanding = 1;
        pthread_cond_init(&f->cv, NULL);
        f->next = r->flights;
        r->flights = f;
        mine = 1;
    }
    if (f) f->waiters++;
    json_int_t id = (json_int_t)r->next_id++;
    pthread_mutex_unlock(&r->mu);
    if (mine) {
        void *users[JR_REWARD_MAX_COMPONENTS];
        for (int k = 0; k < r->n; k++) {
            f->slots[k].f = f;
            f->slots[k].comp = k;
            users[k] = &f->slots[k];
        }
        eval_row(r, id, row, &f->res, users, flight_pending, f);
        pthread_mutex_lock(&r->mu);
        f->outstanding--;
        flight_compose_if_done(r, f);
        pthread_mutex_unlock(&r->mu);
    }
    return f;
}

/* Waits for f and gives this caller its result: the last caller takes it and frees the flight. */
static void shared_end(jr_reward *r, flight *f, jr_reward_result *out) {
    if (!f) {
        memset(out, 0, sizeof *out);
        out->reward = NAN;
        out->reason = jr_strdup("out of memory");
        return;
    }
    pthread_mutex_lock(&r->mu);
    while (!f->done) pthread_cond_wait(&f->cv, &r->mu);
    if (--f->waiters == 0) {
        *out = f->res;
        flight **pp = &r->flights;
        while (*pp != f) pp = &(*pp)->next;
        *pp = f->next;
        pthread_cond_destroy(&f->cv);
        free(f);
    } else {
        result_copy(out, &f->res);
    }
    pthread_mutex_unlock(&r->mu);
}

jr_status jr_reward_shared_score(jr_reward *r, const json_t *const *rows, size_t n, jr_reward_result *results) {
    if (!r->shared) return jr_fail(JR_EINVAL, "reward: jr_reward_shared_score before jr_reward_shared_start");
    flight *one, **fl = n > 1 ? jr_calloc(n, sizeof *fl) : &one;
    if (!fl) return JR_ENOMEM;
    for (size_t i = 0; i < n; i++) fl[i] = shared_begin(r, rows[i]);
    for (size_t i = 0; i < n; i++) shared_end(r, fl[i], &results[i]);
    if (fl != &one) free(fl);
    const char *fatal = r->judge ? jr_judge_fatal(r->judge) : NULL;
    if (fatal) return jr_fail(JR_ENET, "%s", fatal);
    return JR_OK;
}
