/* reward.c - the reward registry: components from the config, rule components computed here, judge
 * components submitted together to one judge client, composed per row with weights */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "judgerl/reward.h"

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
    json_t *params;
    int proto; /* judge protocol handle (fn->protocol only) */
} component;

struct jr_reward {
    jr_reward_opts o; /* a copy (strings borrowed from the caller's config) */
    jr_reason_tally *why; /* every unscored row's reason since open */
    component *c;
    int n;
    jr_judge *judge;
};

void jr_reward_close(jr_reward *r) {
    if (!r) return;
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
        if (s >= b->slots && s < b->slots + b->n_slots) {
            jr_reward_result *res = &b->results[s->row];
            if (res->parts) {
                take_judge_result(&res->parts[s->comp], &buf[t]);
                res->judge_calls += buf[t].n_calls - buf[t].n_cached;
                if (buf[t].latency_s > res->judge_latency_s) res->judge_latency_s = buf[t].latency_s;
            }
            b->outstanding--;
        }
        jr_judge_result_free(&buf[t]);
    }
}

jr_status jr_reward_batch_add(jr_reward_batch *b, size_t i, const json_t *row) {
    jr_reward *r = b->r;
    if (i >= b->cap || b->added[i]) return jr_fail(JR_EINVAL, "reward batch: row %zu is out of range or added twice", i);
    b->added[i] = 1;
    jr_reward_result *res = &b->results[i];
    memset(res, 0, sizeof *res);
    res->parts = jr_calloc((size_t)r->n, sizeof *res->parts);
    if (!res->parts) return JR_OK; /* composed as "out of memory" */
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
                if (jrow) json_object_set_new(jrow, "id", json_integer((json_int_t)i));
            }
            slot *s = &b->slots[b->n_slots];
            s->row = i;
            s->comp = k;
            uint64_t ticket;
            jr_status st = jrow ? jr_judge_submit_proto(r->judge, c->proto, jrow, s, &ticket) : JR_ENOMEM;
            json_decref(jrow);
            if (st) {
                char buf[600];
                snprintf(buf, sizeof buf, "judge: %s", jr_errmsg());
                set_unscored(p, buf);
            } else {
                b->n_slots++;
                b->outstanding++;
            }
        }
        free(o.reason);
        json_decref(o.judge_row);
    }
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
    /* Compose. */
    for (size_t i = 0; i < b->cap; i++) {
        jr_reward_result *res = &b->results[i];
        if (!res->parts) {
            res->reward = NAN;
            res->reason = jr_strdup(b->added[i] ? "out of memory" : "not scored");
            jr_reason_tally_add(r->why, res->reason);
            continue;
        }
        double sum = 0;
        int ok = 1;
        for (int k = 0; k < r->n; k++) {
            jr_reward_part *p = &res->parts[k];
            if (b->outstanding && !p->scored && !p->reason && r->c[k].fn->protocol) set_unscored(p, "judge: no result");
            if (p->scored) sum += r->c[k].weight * p->value;
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
