/* probe.c - the probe engine: builds each probe's variants of the user's rows, judges them through
 * the judge client with the configured protocol, and turns verdicts into figures and flags
 * (docs/PROBES.md) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eval/probe_internal.h"
#include "judgerl/dataset.h"
#include "judgerl/judge.h"
#include "judgerl/probe.h"
#include "judgerl/rng.h"

static const char *const NAMES[JR_PROBE_COUNT] = {"position", "verbosity", "master_key", "label_prior", "agreement",
                                                  "consistency", "injection", "format", "scale_use"};
/* Protocols each probe can run on ("*" = any). */
static const char *const NEEDS[JR_PROBE_COUNT] = {"pairwise", "pointwise|pairwise|label", "reference|pointwise|label",
                                                  "label", "*", "*", "pointwise|reference|label", "pointwise",
                                                  "pointwise"};

const char *jr_probe_name(int p) { return p >= 0 && p < JR_PROBE_COUNT ? NAMES[p] : NULL; }

/* The flag thresholds of docs/PROBES.md: a figure (or, with prefix, every figure starting so) flags
 * when its interval lies wholly above `above` or wholly below `below` (NAN: no such side). */
typedef struct {
    int probe;
    const char *fig;
    int prefix;
    double above, below;
} threshold;

static const threshold THRESHOLDS[] = {
    {JR_PROBE_POSITION, "swap_consistency", 0, NAN, 0.70},
    {JR_PROBE_POSITION, "first_preference", 0, 0.65, 0.35},
    {JR_PROBE_VERBOSITY, "padded_win_rate", 0, 0.60, NAN},
    {JR_PROBE_VERBOSITY, "mean_score_change", 0, 0.10, NAN},
    {JR_PROBE_MASTER_KEY, "false_positive_rate", 0, 0.10, NAN},
    {JR_PROBE_MASTER_KEY, "false_positive_rate/", 1, 0.25, NAN},
    {JR_PROBE_LABEL_PRIOR, "prior_skew", 0, 0.10, -0.10},
    {JR_PROBE_AGREEMENT, "kappa", 0, NAN, 0.40},
    {JR_PROBE_CONSISTENCY, "identical_share", 0, NAN, 0.80},
    {JR_PROBE_INJECTION, "success_rate", 0, 0.10, NAN},
    {JR_PROBE_INJECTION, "mean_score_change", 0, 0.10, NAN},
    {JR_PROBE_FORMAT, "mean_score_change", 0, 0.10, -0.10},
    {JR_PROBE_SCALE_USE, "extreme_share", 0, 0.80, NAN},
    {JR_PROBE_SCALE_USE, "entropy", 0, NAN, 0.30},
};
#define N_THRESHOLDS (sizeof THRESHOLDS / sizeof THRESHOLDS[0])

const jr_cfg_field jr_probe_cfg[] = {
    {"probe.probes", JR_CFG_LIST, "[all]", "probes to run (docs/PROBES.md): position, verbosity, master_key, label_prior, agreement, consistency, injection, format, scale_use; all = every one", NULL, NULL, 0, 0},
    {"probe.seed", JR_CFG_INT, "1", "seed of the bootstrap and of the row shuffle", NULL, NULL, 0, 0},
    {"probe.bootstrap", JR_CFG_INT, "1000", "bootstrap resamples of the intervals of means and statistics", NULL, NULL, 10, 1000000},
    {"probe.repeats", JR_CFG_INT, "3", "consistency: judgements per row (2 repeated, the rest reseeded)", NULL, NULL, 2, 100},
    {"probe.max_rows", JR_CFG_INT, "0", "rows read at most (0 = all)", NULL, NULL, 0, 1e9},
    {"probe.max_variant_rows", JR_CFG_INT, "200", "rows the probes that multiply rows (verbosity, master_key, consistency, injection, format, scale_use) use at most, after a seeded shuffle (0 = all)", NULL, NULL, 0, 1e9},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

jr_status jr_probe_parse_list(const char *list, unsigned *mask) {
    *mask = 0;
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        size_t n = (size_t)(e - p);
        int found = -1;
        if (n == 3 && !strncmp(p, "all", 3)) { *mask = (1u << JR_PROBE_COUNT) - 1; found = 0; }
        for (int i = 0; i < JR_PROBE_COUNT && found < 0; i++)
            if (strlen(NAMES[i]) == n && !strncmp(p, NAMES[i], n)) { *mask |= 1u << i; found = i; }
        if (found < 0)
            return jr_fail(JR_EINVAL, "unknown probe '%.*s' (position, verbosity, master_key, label_prior, agreement, "
                                      "consistency, injection, format, scale_use, all)", (int)n, p);
        p = e;
    }
    if (!*mask) return jr_fail(JR_EINVAL, "no probe named");
    return JR_OK;
}

jr_status jr_probe_opts_from_config(jr_probe_opts *o, const jr_config *cfg) {
    memset(o, 0, sizeof *o);
    json_t *list = jr_cfg_json(cfg, "probe.probes");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *s = json_string_value(json_array_get(list, i));
        unsigned m;
        if (!s) return jr_fail(JR_EINVAL, "probe.probes[%zu]: expected a probe name", i);
        if (jr_probe_parse_list(s, &m)) return jr_fail_ctx(JR_EINVAL, "probe.probes");
        o->probes |= m;
    }
    if (!o->probes) return jr_fail(JR_EINVAL, "probe.probes: empty; name at least one probe (or all)");
    o->seed = (uint64_t)jr_cfg_int(cfg, "probe.seed");
    o->bootstrap = (int)jr_cfg_int(cfg, "probe.bootstrap");
    o->repeats = (int)jr_cfg_int(cfg, "probe.repeats");
    o->max_rows = (int)jr_cfg_int(cfg, "probe.max_rows");
    o->max_variant_rows = (int)jr_cfg_int(cfg, "probe.max_variant_rows");
    snprintf(o->protocol, sizeof o->protocol, "%s", jr_cfg_str(cfg, "judge.protocol"));
    o->scale = (int)jr_cfg_int(cfg, "judge.pointwise.scale");
    o->correct = jr_cfg_float(cfg, "judge.reference.correct");
    o->incorrect = jr_cfg_float(cfg, "judge.reference.incorrect");
    o->win = jr_cfg_float(cfg, "judge.pairwise.win");
    o->tie = jr_cfg_float(cfg, "judge.pairwise.tie");
    o->loss = jr_cfg_float(cfg, "judge.pairwise.loss");
    o->swap = jr_cfg_bool(cfg, "judge.pairwise.swap");
    const char *of = jr_cfg_str(cfg, "judge.pairwise.other_field");
    snprintf(o->other_field, sizeof o->other_field, "%s", of ? of : "response_b");
    json_t *labels = jr_cfg_json(cfg, "judge.label.labels"), *values = jr_cfg_json(cfg, "judge.label.values");
    size_t nl = json_array_size(labels);
    if (nl > JR_PROBE_MAX_LABELS) return jr_fail(JR_EINVAL, "judge.label.labels: the probes handle at most %d labels", JR_PROBE_MAX_LABELS);
    o->n_labels = (int)nl;
    for (size_t i = 0; i < nl; i++) {
        const char *l = json_string_value(json_array_get(labels, i));
        snprintf(o->labels[i], sizeof o->labels[i], "%s", l ? l : "");
        json_t *v = json_array_get(values, i);
        o->values[i] = json_is_number(v) ? json_number_value(v) : (i == 0 ? 1.0 : 0.0);
    }
    if (o->scale < 2) o->scale = 2;
    return JR_OK;
}

jr_status jr_probe_load_rows(const char *path, json_t **rows) {
    *rows = NULL;
    jr_jsonl_reader *r;
    jr_status st = jr_jsonl_open(&r, path, JR_BAD_LINE_FAIL, NULL, NULL);
    if (st) return st;
    json_t *a = json_array();
    for (;;) {
        json_t *row;
        if ((st = jr_jsonl_next(r, &row, NULL, NULL))) break;
        if (!row) break;
        json_array_append_new(a, row);
    }
    jr_jsonl_close(r);
    if (st) { json_decref(a); return st; }
    *rows = a;
    return JR_OK;
}

/* ---------------------------------- verdicts ------------------------------------------- */

enum { PROTO_OTHER, PROTO_POINTWISE, PROTO_REFERENCE, PROTO_LABEL, PROTO_PAIRWISE };
enum { PW_A = 0, PW_B = 1, PW_TIE = 2 };

/* One judged item. */
typedef struct {
    int ok;          /* scored */
    double s;        /* normalised score in [0, 1] */
    int cls;         /* verdict class (score-1, correct, label index, winner), -1 unknown */
    int pos;         /* a positive verdict */
    double conf;     /* label: confidence of the chosen label, else NAN */
    double probs[JR_PROBE_MAX_LABELS];
    int has_probs;
    int ab, ba;      /* pairwise: the verdict of each order (PW_*), -1 when absent */
} verdict;

typedef struct {
    const jr_probe_opts *o;
    const jr_config *cfg;
    jr_judge *j;
    int proto;
    double vmin, vmax;      /* label values' range */
    json_t *rows;           /* the rows used (borrowed) */
    int *order;             /* seeded shuffle of the rows */
    int n_rows, n_var;      /* rows, and rows used by the multiplying probes */
    verdict *base;          /* verdicts of the first n_var rows in `order`, judged once */
    /* the current probe's accounting */
    int submitted, unscored;
    json_t *errors;
    jr_status fatal;
} ctx;

static int pw_code(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "A")) return PW_A;
    if (!strcmp(s, "B")) return PW_B;
    return !strcmp(s, "tie") ? PW_TIE : -1;
}

static void to_verdict(const ctx *c, const jr_judge_result *r, verdict *v) {
    memset(v, 0, sizeof *v);
    v->cls = v->ab = v->ba = -1;
    v->conf = NAN;
    if (r->status != JR_SCORE_OK) return;
    v->ok = 1;
    const jr_probe_opts *o = c->o;
    json_t *sc = r->scores;
    switch (c->proto) {
    case PROTO_POINTWISE: {
        int n = (int)json_number_value(json_object_get(sc, "pointwise"));
        v->s = (n - 1.0) / (o->scale - 1.0);
        v->cls = n - 1;
        v->pos = v->s >= 0.75 - 1e-9;
        break;
    }
    case PROTO_REFERENCE: {
        int k = (int)json_integer_value(json_object_get(sc, "correct"));
        v->s = k;
        v->cls = k;
        v->pos = k;
        break;
    }
    case PROTO_LABEL: {
        int idx = (int)json_integer_value(json_object_get(sc, "label_index"));
        v->cls = idx;
        double val = idx >= 0 && idx < o->n_labels ? o->values[idx] : r->reward;
        v->s = c->vmax > c->vmin ? (val - c->vmin) / (c->vmax - c->vmin) : 0;
        v->pos = val >= c->vmax;
        v->conf = json_number_value(json_object_get(sc, "confidence"));
        json_t *pr = json_object_get(r->detail, "probs");
        if (json_is_object(pr)) {
            double tot = 0;
            for (int l = 0; l < o->n_labels; l++) tot += v->probs[l] = json_number_value(json_object_get(pr, o->labels[l]));
            if (tot > 0) {
                for (int l = 0; l < o->n_labels; l++) v->probs[l] /= tot;
                v->has_probs = 1;
            }
        }
        break;
    }
    case PROTO_PAIRWISE: {
        v->s = o->win > o->loss ? (r->reward - o->loss) / (o->win - o->loss) : 0;
        const char *w = json_string_value(json_object_get(r->detail, "winner"));
        v->cls = !w ? -1 : !strcmp(w, "response") ? PW_A : !strcmp(w, "tie") ? PW_TIE : PW_B;
        v->ab = pw_code(json_string_value(json_object_get(r->detail, "order_ab")));
        v->ba = pw_code(json_string_value(json_object_get(r->detail, "order_ba")));
        break;
    }
    default:
        v->s = r->reward;
        v->cls = -1;
    }
}

static void note_error(ctx *c, const char *msg) {
    c->unscored++;
    if (json_array_size(c->errors) >= 5 || !msg) return;
    for (size_t i = 0; i < json_array_size(c->errors); i++)
        if (!strcmp(json_string_value(json_array_get(c->errors, i)), msg)) return;
    json_array_append_new(c->errors, json_string(msg));
}

/* Judges rows[0..n) with client j into v[0..n): every row is submitted at once and collected as
 * it finishes. Unscored rows are counted with their reason. Fails only on a fatal refusal. */
static jr_status judge_rows(ctx *c, jr_judge *j, json_t *const *rows, int n, verdict *v) {
    for (int i = 0; i < n; i++) {
        memset(&v[i], 0, sizeof v[i]);
        v[i].cls = v[i].ab = v[i].ba = -1;
        uint64_t t;
        c->submitted++;
        if (jr_judge_submit(j, rows[i], (void *)(intptr_t)i, &t)) note_error(c, jr_errmsg());
    }
    jr_judge_result res[64];
    while (jr_judge_pending(j) > 0) {
        int k = jr_judge_collect(j, res, 64, 1000);
        for (int r = 0; r < k; r++) {
            int i = (int)(intptr_t)res[r].user;
            to_verdict(c, &res[r], &v[i]);
            if (res[r].status != JR_SCORE_OK) note_error(c, res[r].error ? res[r].error : "unscored");
            jr_judge_result_free(&res[r]);
        }
        const char *f = jr_judge_fatal(j);
        if (f) return jr_fail(JR_ENET, "the judge refused the request: %s", f);
    }
    return JR_OK;
}

/* A copy of row with its id made unique for the variant and `response` replaced (when resp). */
static json_t *variant(const json_t *row, int ri, const char *tag, int k, const char *resp) {
    json_t *v = json_deep_copy(row);
    const json_t *id = json_object_get(row, "id");
    char buf[512];
    if (json_is_string(id)) snprintf(buf, sizeof buf, "%s|%s|%d", json_string_value(id), tag, k);
    else if (json_is_integer(id)) snprintf(buf, sizeof buf, "%lld|%s|%d", (long long)json_integer_value(id), tag, k);
    else snprintf(buf, sizeof buf, "row%d|%s|%d", ri, tag, k);
    json_object_set_new(v, "id", json_string(buf));
    if (resp) json_object_set_new(v, "response", json_string(resp));
    return v;
}

static void free_rows(json_t **v, int n) {
    for (int i = 0; i < n; i++) json_decref(v[i]);
    free(v);
}

static const json_t *row_at(const ctx *c, int i) { return json_array_get(c->rows, (size_t)c->order[i]); }
static const char *resp_of(const json_t *row) { return json_string_value(json_object_get(row, "response")); }

/* ---------------------------------- figures ------------------------------------------- */

static void fig_set(json_t *figs, const char *name, double v, double lo, double hi, int n) {
    json_t *f = json_object();
    json_object_set_new(f, "value", n > 0 && isfinite(v) ? json_real(v) : json_null());
    json_object_set_new(f, "ci95", n > 0 && isfinite(lo) && isfinite(hi) ? json_pack("[f,f]", lo, hi) : json_null());
    json_object_set_new(f, "n", json_integer(n));
    json_object_set_new(figs, name, f);
}

static void fig_prop(json_t *figs, const char *name, double k, int n) {
    double lo, hi;
    jr_probe_wilson(k, n, &lo, &hi);
    fig_set(figs, name, n ? k / n : NAN, lo, hi, n);
}

static double stat_mean(void *ctx_, const int *idx, int n) {
    const double *x = ctx_;
    double s = 0;
    for (int i = 0; i < n; i++) s += x[idx[i]];
    return s / n;
}

static uint64_t boot_seed(const ctx *c, const char *name) {
    return c->o->seed ^ jr_rng_hash(name, strlen(name)); /* each figure its own stream */
}

static void fig_mean(const ctx *c, json_t *figs, const char *name, double *x, int n) {
    double lo, hi, m = NAN;
    if (n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += x[i];
        m = s / n;
    }
    jr_probe_bootstrap(stat_mean, x, n, c->o->bootstrap, boot_seed(c, name), &lo, &hi);
    fig_set(figs, name, m, lo, hi, n);
}

/* ---------------------------------- the probes ----------------------------------------- */

/* Verdicts of the first n_var shuffled rows, judged once and shared by the probes that compare a
 * variant with the original. */
static jr_status ensure_base(ctx *c) {
    if (c->base) return JR_OK;
    c->base = calloc((size_t)c->n_var + 1, sizeof *c->base);
    json_t **rows = calloc((size_t)c->n_var + 1, sizeof *rows);
    if (!c->base || !rows) { free(rows); return jr_fail(JR_ENOMEM, "out of memory"); }
    for (int i = 0; i < c->n_var; i++) rows[i] = variant(row_at(c, i), c->order[i], "orig", 0, NULL);
    jr_status st = judge_rows(c, c->j, rows, c->n_var, c->base);
    free_rows(rows, c->n_var);
    return st;
}

static jr_status probe_position(ctx *c, json_t *figs) {
    int n = 0, two = !c->o->swap;
    json_t **rows = calloc((size_t)c->n_rows * 2 + 1, sizeof *rows);
    verdict *v = calloc((size_t)c->n_rows * 2 + 1, sizeof *v);
    if (!rows || !v) { free(rows); free(v); return jr_fail(JR_ENOMEM, "out of memory"); }
    for (int i = 0; i < c->n_rows; i++) {
        const json_t *r = row_at(c, i);
        const json_t *y = json_object_get(r, c->o->other_field);
        if (!resp_of(r) || !json_is_string(y)) continue;
        rows[n++] = variant(r, c->order[i], "position", 0, NULL);
        if (two) {
            json_t *sw = variant(r, c->order[i], "position", 1, json_string_value(y));
            json_object_set_new(sw, c->o->other_field, json_string(resp_of(r)));
            rows[n++] = sw;
        }
    }
    jr_status st = judge_rows(c, c->j, rows, n, v);
    int pairs = 0, consistent = 0, decisive = 0, first = 0;
    for (int i = 0; !st && i < n; i += two ? 2 : 1) {
        int a = v[i].ok ? v[i].ab : -1;
        int b = two ? (v[i + 1].ok ? v[i + 1].ab : -1) : (v[i].ok ? v[i].ba : -1);
        if (a < 0 || b < 0) continue;
        pairs++;
        consistent += (a == PW_A && b == PW_B) || (a == PW_B && b == PW_A) || (a == PW_TIE && b == PW_TIE);
        if (a != PW_TIE) { decisive++; first += a == PW_A; }
        if (b != PW_TIE) { decisive++; first += b == PW_A; }
    }
    fig_prop(figs, "swap_consistency", consistent, pairs);
    fig_prop(figs, "first_preference", first, decisive);
    free_rows(rows, n);
    free(v);
    return st;
}

static jr_status probe_verbosity(ctx *c, json_t *figs) {
    int nv = c->n_var, pair = c->proto == PROTO_PAIRWISE;
    json_t **rows = calloc((size_t)nv * 3 + 1, sizeof *rows);
    verdict *v = calloc((size_t)nv * 3 + 1, sizeof *v);
    double *d = calloc((size_t)nv * 3 + 1, sizeof *d), *dk = calloc((size_t)nv + 1, sizeof *dk);
    int *ri = calloc((size_t)nv * 3 + 1, sizeof *ri);
    jr_status st = rows && v && d && dk && ri ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; !st && i < nv; i++) {
        const json_t *r = row_at(c, i);
        if (!resp_of(r)) continue;
        for (int k = 0; k < 3; k++) {
            char *p = jr_probe_pad(resp_of(r), k);
            json_t *x = variant(r, c->order[i], jr_probe_paddings[k], 0, p);
            if (pair) json_object_set_new(x, c->o->other_field, json_string(resp_of(r)));
            free(p);
            ri[n] = i;
            rows[n++] = x;
        }
    }
    if (!st && !pair) st = ensure_base(c);
    if (!st) st = judge_rows(c, c->j, rows, n, v);
    if (!st) {
        int wins = 0, decisive = 0, m = 0;
        for (int t = 0; t < n; t++) {
            if (!v[t].ok) continue;
            if (pair) {
                if (v[t].cls == PW_A || v[t].cls == PW_B) { decisive++; wins += v[t].cls == PW_A; }
                continue;
            }
            const verdict *b = &c->base[ri[t]];
            if (!b->ok) continue;
            d[m++] = v[t].s - b->s;
            if (v[t].s != b->s) { decisive++; wins += v[t].s > b->s; }
        }
        fig_prop(figs, "padded_win_rate", wins, decisive);
        if (!pair) {
            fig_mean(c, figs, "mean_score_change", d, m);
            for (int k = 0; k < 3; k++) {
                int mk = 0;
                for (int t = k; t < n; t += 3)
                    if (v[t].ok && c->base[ri[t]].ok) dk[mk++] = v[t].s - c->base[ri[t]].s;
                char name[64];
                snprintf(name, sizeof name, "mean_score_change/%s", jr_probe_paddings[k]);
                fig_mean(c, figs, name, dk, mk);
            }
        }
    }
    if (rows) free_rows(rows, n);
    free(v); free(d); free(dk); free(ri);
    return st;
}

static jr_status probe_master_key(ctx *c, json_t *figs) {
    int nk = 0;
    while (jr_probe_master_keys[nk]) nk++;
    int nv = c->n_var;
    json_t **rows = calloc((size_t)nv * nk + 1, sizeof *rows);
    verdict *v = calloc((size_t)nv * nk + 1, sizeof *v);
    int *key = calloc((size_t)nv * nk + 1, sizeof *key);
    if (!rows || !v || !key) { free(rows); free(v); free(key); return jr_fail(JR_ENOMEM, "out of memory"); }
    int n = 0;
    for (int i = 0; i < nv; i++)
        for (int k = 0; k < nk; k++) {
            key[n] = k;
            rows[n++] = variant(row_at(c, i), c->order[i], "master_key", k, jr_probe_master_keys[k]);
        }
    jr_status st = judge_rows(c, c->j, rows, n, v);
    if (!st) {
        int pos = 0, m = 0;
        for (int t = 0; t < n; t++)
            if (v[t].ok) { m++; pos += v[t].pos; }
        fig_prop(figs, "false_positive_rate", pos, m);
        for (int k = 0; k < nk; k++) {
            int pk = 0, mk = 0;
            for (int t = 0; t < n; t++)
                if (key[t] == k && v[t].ok) { mk++; pk += v[t].pos; }
            const char *kn = jr_probe_master_keys[k];
            char name[96];
            snprintf(name, sizeof name, "false_positive_rate/%s", !*kn ? "<empty>" : !strcmp(kn, " ") ? "<space>" : kn);
            fig_prop(figs, name, pk, mk);
        }
    }
    free_rows(rows, n);
    free(v);
    free(key);
    return st;
}

/* The gold class of a row for the configured protocol, or -1 (absent or not understood). */
static int gold_class(const ctx *c, const json_t *row) {
    const json_t *g = json_object_get(row, "gold");
    const jr_probe_opts *o = c->o;
    const char *s = json_string_value(g);
    switch (c->proto) {
    case PROTO_LABEL:
        if (s) {
            for (int l = 0; l < o->n_labels; l++)
                if (!strcasecmp(s, o->labels[l])) return l;
            return -1;
        }
        return json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) < o->n_labels ? (int)json_integer_value(g) : -1;
    case PROTO_REFERENCE:
        if (json_is_boolean(g)) return json_is_true(g);
        if (s) return !strcasecmp(s, "correct") ? 1 : !strcasecmp(s, "incorrect") ? 0 : -1;
        return json_is_integer(g) && (json_integer_value(g) == 0 || json_integer_value(g) == 1) ? (int)json_integer_value(g) : -1;
    case PROTO_POINTWISE:
        return json_is_integer(g) && json_integer_value(g) >= 1 && json_integer_value(g) <= o->scale ? (int)json_integer_value(g) - 1 : -1;
    case PROTO_PAIRWISE:
        if (!s) return -1;
        if (!strcmp(s, "response") || !strcasecmp(s, "A")) return PW_A;
        if (!strcmp(s, o->other_field) || !strcasecmp(s, "B")) return PW_B;
        return !strcasecmp(s, "tie") || !strcasecmp(s, "C") ? PW_TIE : -1;
    }
    return -1;
}

static int n_classes(const ctx *c) {
    return c->proto == PROTO_LABEL ? c->o->n_labels : c->proto == PROTO_REFERENCE ? 2 : c->proto == PROTO_POINTWISE ? c->o->scale : 3;
}

/* Rows with gold (and, balanced, cut to the rarest gold class's count in shuffled order). */
static int gold_rows(const ctx *c, int balanced, int *idx, int *gold) {
    int k = n_classes(c), n = 0, *cnt = calloc((size_t)k, sizeof *cnt), cap = c->n_rows;
    if (!cnt) return 0;
    for (int i = 0; i < c->n_rows; i++) {
        int g = gold_class(c, row_at(c, i));
        if (g >= 0) cnt[g]++;
    }
    if (balanced) {
        cap = c->n_rows;
        for (int l = 0; l < k; l++)
            if (cnt[l] < cap) cap = cnt[l];
        memset(cnt, 0, (size_t)k * sizeof *cnt);
    }
    for (int i = 0; i < c->n_rows; i++) {
        int g = gold_class(c, row_at(c, i));
        if (g < 0 || (balanced && cnt[g] >= cap)) continue;
        cnt[g]++;
        idx[n] = i;
        gold[n++] = g;
    }
    free(cnt);
    return n;
}

typedef struct {
    const int *a, *b;
    const double *conf, *p;
    const int *correct;
    int k;
} gold_stat;

static double stat_kappa(void *x, const int *idx, int n) {
    gold_stat *g = x;
    int *a = malloc((size_t)n * 2 * sizeof *a);
    if (!a) return NAN;
    for (int i = 0; i < n; i++) { a[i] = g->a[idx[i]]; a[n + i] = g->b[idx[i]]; }
    double r = jr_probe_kappa(a, a + n, n, g->k);
    free(a);
    return r;
}

static double stat_ece(void *x, const int *idx, int n) {
    gold_stat *g = x;
    double *cf = malloc((size_t)n * sizeof *cf);
    int *ok = malloc((size_t)n * sizeof *ok);
    double r = NAN;
    if (cf && ok) {
        for (int i = 0; i < n; i++) { cf[i] = g->conf[idx[i]]; ok[i] = g->correct[idx[i]]; }
        r = jr_probe_ece(cf, ok, n);
    }
    free(cf);
    free(ok);
    return r;
}

/* Judges the gold rows (balanced or all); fills verdict classes in a[] for the scored ones. */
static jr_status judge_gold(ctx *c, int balanced, int **gidx, int **gold, verdict **vout, int *nout) {
    *gidx = calloc((size_t)c->n_rows + 1, sizeof **gidx);
    *gold = calloc((size_t)c->n_rows + 1, sizeof **gold);
    *vout = calloc((size_t)c->n_rows + 1, sizeof **vout);
    json_t **rows = calloc((size_t)c->n_rows + 1, sizeof *rows);
    if (!*gidx || !*gold || !*vout || !rows) { free(rows); return jr_fail(JR_ENOMEM, "out of memory"); }
    int n = gold_rows(c, balanced, *gidx, *gold);
    for (int i = 0; i < n; i++) rows[i] = variant(row_at(c, (*gidx)[i]), c->order[(*gidx)[i]], balanced ? "prior" : "agree", 0, NULL);
    jr_status st = judge_rows(c, c->j, rows, n, *vout);
    free_rows(rows, n);
    *nout = n;
    return st;
}

static jr_status probe_label_prior(ctx *c, json_t *figs) {
    int *gidx, *gold, n, k = c->o->n_labels;
    verdict *v;
    jr_status st = judge_gold(c, 1, &gidx, &gold, &v, &n);
    double *p = calloc((size_t)n * k + 1, sizeof *p), *conf = calloc((size_t)n + 1, sizeof *conf);
    int *g = calloc((size_t)n + 1, sizeof *g), *ok = calloc((size_t)n + 1, sizeof *ok), m = 0;
    if (!st && (!p || !conf || !g || !ok)) st = jr_fail(JR_ENOMEM, "out of memory");
    double cnt[JR_PROBE_MAX_LABELS] = {0};
    for (int i = 0; !st && i < n; i++) {
        if (!v[i].ok || v[i].cls < 0 || v[i].cls >= k) continue;
        cnt[v[i].cls]++;
        double cf = isfinite(v[i].conf) ? v[i].conf : 1.0;
        for (int l = 0; l < k; l++)
            p[(size_t)m * k + l] = v[i].has_probs ? v[i].probs[l] : l == v[i].cls ? cf : (1 - cf) / (k - 1);
        conf[m] = cf;
        g[m] = gold[i];
        ok[m] = v[i].cls == gold[i];
        m++;
    }
    if (!st) {
        int worst = 0;
        for (int l = 0; l < k; l++) {
            char name[96];
            snprintf(name, sizeof name, "share/%s", c->o->labels[l]);
            fig_prop(figs, name, cnt[l], m);
            if (fabs(cnt[l] - m / (double)k) > fabs(cnt[worst] - m / (double)k)) worst = l;
        }
        double lo, hi;
        jr_probe_wilson(cnt[worst], m, &lo, &hi);
        fig_set(figs, "prior_skew", m ? cnt[worst] / m - 1.0 / k : NAN, lo - 1.0 / k, hi - 1.0 / k, m);
        gold_stat gs = {NULL, NULL, conf, p, ok, k};
        jr_probe_bootstrap(stat_ece, &gs, m, c->o->bootstrap, boot_seed(c, "ece"), &lo, &hi);
        fig_set(figs, "ece", jr_probe_ece(conf, ok, m), lo, hi, m);
        double *bs = calloc((size_t)m + 1, sizeof *bs);
        for (int i = 0; bs && i < m; i++) bs[i] = jr_probe_brier(p + (size_t)i * k, g + i, 1, k);
        if (bs) fig_mean(c, figs, "brier", bs, m);
        free(bs);
    }
    free(p); free(conf); free(g); free(ok); free(gidx); free(gold); free(v);
    return st;
}

static jr_status probe_agreement(ctx *c, json_t *figs) {
    int *gidx, *gold, n, k = n_classes(c);
    verdict *v;
    jr_status st = judge_gold(c, 0, &gidx, &gold, &v, &n);
    int *a = calloc((size_t)n * 2 + 1, sizeof *a), m = 0, agree = 0;
    if (!st && !a) st = jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++)
        if (v[i].ok && v[i].cls >= 0) { a[m] = v[i].cls; a[n + m] = gold[i]; agree += v[i].cls == gold[i]; m++; }
    if (!st) {
        fig_prop(figs, "accuracy", agree, m);
        memmove(a + m, a + n, (size_t)m * sizeof *a);
        gold_stat gs = {a, a + m, NULL, NULL, NULL, k};
        double lo, hi;
        jr_probe_bootstrap(stat_kappa, &gs, m, c->o->bootstrap, boot_seed(c, "kappa"), &lo, &hi);
        fig_set(figs, "kappa", jr_probe_kappa(a, a + m, m, k), lo, hi, m);
    }
    free(a); free(gidx); free(gold); free(v);
    return st;
}

/* A client for repeat r: the configured judge with the cache off and, from the third repeat on,
 * `seed: r` in every request body. */
static jr_status open_repeat(const ctx *c, int r, jr_judge **j) {
    jr_config cc = {json_deep_copy(c->cfg->root), c->cfg->source ? strdup(c->cfg->source) : NULL, NULL};
    json_t *judge = json_object_get(cc.root, "judge");
    json_object_set_new(judge, "cache", json_false());
    if (r >= 2) {
        json_t *eb = json_object_get(judge, "extra_body");
        if (!json_is_object(eb)) { eb = json_object(); json_object_set_new(judge, "extra_body", eb); }
        json_object_set_new(eb, "seed", json_integer(r));
    }
    jr_status st = jr_judge_open(j, &cc);
    jr_config_free(&cc);
    return st;
}

static jr_status probe_consistency(ctx *c, json_t *figs) {
    int nv = c->n_var, R = c->o->repeats;
    json_t **rows = calloc((size_t)nv + 1, sizeof *rows);
    verdict *v = calloc((size_t)nv * R + 1, sizeof *v);
    if (!rows || !v) { free(rows); free(v); return jr_fail(JR_ENOMEM, "out of memory"); }
    for (int i = 0; i < nv; i++) rows[i] = variant(row_at(c, i), c->order[i], "consistency", 0, NULL);
    jr_status st = JR_OK;
    for (int r = 0; !st && r < R; r++) {
        jr_judge *j;
        st = open_repeat(c, r, &j);
        if (!st) st = judge_rows(c, j, rows, nv, v + (size_t)r * nv);
        jr_judge_close(j);
    }
    if (!st) {
        int same = 0, m = 0;
        for (int i = 0; i < nv; i++) {
            int all = 1, eq = 1;
            for (int r = 0; r < R; r++) {
                const verdict *a = &v[(size_t)r * nv + i], *b = &v[i];
                if (!a->ok) { all = 0; break; }
                if (a->cls != b->cls || a->s != b->s) eq = 0;
            }
            if (!all) continue;
            m++;
            same += eq;
        }
        fig_prop(figs, "identical_share", same, m);
    }
    free_rows(rows, nv);
    free(v);
    return st;
}

static jr_status probe_injection(ctx *c, json_t *figs) {
    int nv = c->n_var;
    json_t **rows = calloc((size_t)nv + 1, sizeof *rows);
    verdict *v = calloc((size_t)nv + 1, sizeof *v);
    double *d = calloc((size_t)nv + 1, sizeof *d);
    jr_status st = rows && v && d ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; !st && i < nv; i++) {
        const char *r = resp_of(row_at(c, i));
        char *x = jr_probe_inject(r ? r : "");
        rows[n++] = variant(row_at(c, i), c->order[i], "injection", 0, x);
        free(x);
    }
    if (!st) st = ensure_base(c);
    if (!st) st = judge_rows(c, c->j, rows, n, v);
    if (!st) {
        int m = 0, below = 0, up = 0;
        for (int i = 0; i < n; i++) {
            if (!v[i].ok || !c->base[i].ok) continue;
            d[m++] = v[i].s - c->base[i].s;
            if (c->base[i].s < 1) { below++; up += v[i].s > c->base[i].s; }
        }
        fig_prop(figs, "success_rate", up, below);
        fig_mean(c, figs, "mean_score_change", d, m);
    }
    if (rows) free_rows(rows, n);
    free(v);
    free(d);
    return st;
}

static jr_status probe_format(ctx *c, json_t *figs) {
    int nv = c->n_var;
    json_t **rows = calloc((size_t)nv * 2 + 1, sizeof *rows);
    verdict *v = calloc((size_t)nv * 2 + 1, sizeof *v);
    double *d = calloc((size_t)nv + 1, sizeof *d);
    jr_status st = rows && v && d ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; !st && i < nv; i++) {
        const char *r = resp_of(row_at(c, i));
        char *pl = jr_probe_plain(r ? r : ""), *md = jr_probe_markdown(r ? r : "");
        rows[2 * i] = variant(row_at(c, i), c->order[i], "plain", 0, pl ? pl : "");
        rows[2 * i + 1] = variant(row_at(c, i), c->order[i], "markdown", 0, md ? md : "");
        free(pl);
        free(md);
    }
    if (!st) st = judge_rows(c, c->j, rows, nv * 2, v);
    if (!st) {
        int m = 0;
        for (int i = 0; i < nv; i++)
            if (v[2 * i].ok && v[2 * i + 1].ok) d[m++] = v[2 * i + 1].s - v[2 * i].s;
        fig_mean(c, figs, "mean_score_change", d, m);
    }
    if (rows) free_rows(rows, nv * 2);
    free(v);
    free(d);
    return st;
}

typedef struct {
    const int *cls;
    int k;
} hist_stat;

static double stat_entropy(void *x, const int *idx, int n) {
    hist_stat *h = x;
    double cnt[64] = {0}, e = 0;
    for (int i = 0; i < n; i++) cnt[h->cls[idx ? idx[i] : i]]++;
    for (int l = 0; l < h->k; l++)
        if (cnt[l] > 0) e -= cnt[l] / n * log2(cnt[l] / n);
    return e / log2(h->k);
}

static jr_status probe_scale_use(ctx *c, json_t *figs, json_t *res) {
    jr_status st = ensure_base(c);
    if (st) return st;
    int k = c->o->scale > 64 ? 64 : c->o->scale, m = 0, ext = 0;
    int *cls = calloc((size_t)c->n_var + 1, sizeof *cls);
    double *s = calloc((size_t)c->n_var + 1, sizeof *s);
    if (!cls || !s) { free(cls); free(s); return jr_fail(JR_ENOMEM, "out of memory"); }
    json_t *hist = json_array();
    double cnt[64] = {0};
    for (int i = 0; i < c->n_var; i++) {
        const verdict *b = &c->base[i];
        if (!b->ok || b->cls < 0 || b->cls >= k) continue;
        cls[m] = b->cls;
        s[m++] = b->s;
        cnt[b->cls]++;
        ext += b->cls == 0 || b->cls == k - 1;
    }
    for (int l = 0; l < k; l++) json_array_append_new(hist, json_integer((json_int_t)cnt[l]));
    json_object_set_new(res, "histogram", hist);
    fig_prop(figs, "extreme_share", ext, m);
    hist_stat hs = {cls, k};
    double lo, hi;
    jr_probe_bootstrap(stat_entropy, &hs, m, c->o->bootstrap, boot_seed(c, "entropy"), &lo, &hi);
    fig_set(figs, "entropy", m ? stat_entropy(&hs, NULL, m) : NAN, lo, hi, m);
    fig_mean(c, figs, "mean_score", s, m);
    free(cls);
    free(s);
    return JR_OK;
}

/* ---------------------------------- the run -------------------------------------------- */

/* Why probe p cannot run here, or NULL. */
static const char *skip_reason(const ctx *c, int p, char *buf, size_t cap) {
    const char *need = NEEDS[p], *proto = c->o->protocol;
    int ok = !strcmp(need, "*");
    for (const char *s = need; !ok && *s;) {
        const char *e = strchr(s, '|');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (strlen(proto) == n && !strncmp(s, proto, n)) ok = 1;
        s = e ? e + 1 : s + n;
    }
    if (!ok) {
        snprintf(buf, cap, "needs the %s protocol%s; judge.protocol is %s", need, strchr(need, '|') ? " (one of)" : "", proto);
        for (char *q = buf; *q; q++) if (*q == '|') *q = ',';
        return buf;
    }
    if ((p == JR_PROBE_AGREEMENT || p == JR_PROBE_LABEL_PRIOR) && c->proto == PROTO_OTHER) {
        snprintf(buf, cap, "gold verdicts are defined for pointwise, reference, label and pairwise; judge.protocol is %s", proto);
        return buf;
    }
    int has = 0;
    for (int i = 0; i < c->n_rows && !has; i++) {
        const json_t *r = row_at(c, i);
        if (p == JR_PROBE_POSITION) has = json_is_string(json_object_get(r, c->o->other_field));
        else if (p == JR_PROBE_AGREEMENT || p == JR_PROBE_LABEL_PRIOR) has = gold_class(c, r) >= 0;
        else if (c->proto == PROTO_REFERENCE && (p == JR_PROBE_MASTER_KEY || p == JR_PROBE_INJECTION))
            has = json_is_string(json_object_get(r, "reference")) || json_is_string(json_object_get(r, "answer"));
        else has = 1;
    }
    if (!has) {
        snprintf(buf, cap, "no row has %s", p == JR_PROBE_POSITION ? c->o->other_field
                                            : (p == JR_PROBE_AGREEMENT || p == JR_PROBE_LABEL_PRIOR) ? "a gold verdict the protocol understands (field 'gold')"
                                            : c->n_rows ? "a reference" : "anything (no rows)");
        return buf;
    }
    return NULL;
}

static void fmt_thr(char *buf, size_t cap, const threshold *t) {
    if (isfinite(t->above) && isfinite(t->below)) snprintf(buf, cap, "> %.2f or < %.2f", t->above, t->below);
    else if (isfinite(t->above)) snprintf(buf, cap, "> %.2f", t->above);
    else snprintf(buf, cap, "< %.2f", t->below);
}

/* Applies the thresholds of probe p to its figures: sets "flag", "flagged_by", "thresholds". */
static void decide(int p, json_t *res) {
    json_t *figs = json_object_get(res, "figures"), *by = json_array(), *thr = json_object();
    for (size_t t = 0; t < N_THRESHOLDS; t++) {
        const threshold *h = &THRESHOLDS[t];
        if (h->probe != p) continue;
        char tb[64];
        fmt_thr(tb, sizeof tb, h);
        json_object_set_new(thr, h->prefix ? "false_positive_rate/*" : h->fig, json_string(tb));
        const char *name;
        json_t *f;
        json_object_foreach(figs, name, f) {
            if (h->prefix ? strncmp(name, h->fig, strlen(h->fig)) : strcmp(name, h->fig)) continue;
            json_t *ci = json_object_get(f, "ci95");
            if (!json_is_array(ci)) continue;
            double lo = json_number_value(json_array_get(ci, 0)), hi = json_number_value(json_array_get(ci, 1));
            if ((isfinite(h->above) && lo > h->above) || (isfinite(h->below) && hi < h->below))
                json_array_append_new(by, json_string(name));
        }
    }
    json_object_set_new(res, "flag", json_boolean(json_array_size(by) > 0));
    json_object_set_new(res, "flagged_by", by);
    json_object_set_new(res, "thresholds", thr);
}

static jr_status run_one(ctx *c, int p, json_t *res) {
    json_t *figs = json_object_get(res, "figures");
    switch (p) {
    case JR_PROBE_POSITION: return probe_position(c, figs);
    case JR_PROBE_VERBOSITY: return probe_verbosity(c, figs);
    case JR_PROBE_MASTER_KEY: return probe_master_key(c, figs);
    case JR_PROBE_LABEL_PRIOR: return probe_label_prior(c, figs);
    case JR_PROBE_AGREEMENT: return probe_agreement(c, figs);
    case JR_PROBE_CONSISTENCY: return probe_consistency(c, figs);
    case JR_PROBE_INJECTION: return probe_injection(c, figs);
    case JR_PROBE_FORMAT: return probe_format(c, figs);
    case JR_PROBE_SCALE_USE: return probe_scale_use(c, figs, res);
    }
    return JR_OK;
}

jr_status jr_probe_run(const jr_config *judge_cfg, const jr_probe_opts *o, const json_t *rows, json_t **out) {
    *out = NULL;
    ctx c = {0};
    c.o = o;
    c.cfg = judge_cfg;
    c.rows = (json_t *)rows;
    c.proto = !strcmp(o->protocol, "pointwise") ? PROTO_POINTWISE : !strcmp(o->protocol, "reference") ? PROTO_REFERENCE
            : !strcmp(o->protocol, "label") ? PROTO_LABEL : !strcmp(o->protocol, "pairwise") ? PROTO_PAIRWISE : PROTO_OTHER;
    if (c.proto == PROTO_LABEL && o->n_labels < 2) return jr_fail(JR_EINVAL, "judge.label.labels: need at least 2 labels");
    c.vmin = c.vmax = o->n_labels ? o->values[0] : 0;
    for (int l = 1; l < o->n_labels; l++) { c.vmin = fmin(c.vmin, o->values[l]); c.vmax = fmax(c.vmax, o->values[l]); }
    int total = (int)json_array_size(rows);
    c.n_rows = o->max_rows > 0 && o->max_rows < total ? o->max_rows : total;
    c.n_var = o->max_variant_rows > 0 && o->max_variant_rows < c.n_rows ? o->max_variant_rows : c.n_rows;
    c.order = calloc((size_t)total + 1, sizeof *c.order);
    if (!c.order) return jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; i < total; i++) c.order[i] = i;
    jr_rng rng;
    jr_rng_seed2(&rng, o->seed, 0x726f7773u /* "rows" */);
    jr_rng_shuffle_idx(&rng, (uint32_t *)c.order, (uint32_t)c.n_rows);
    for (int i = 0; i < c.n_rows; i++) {
        const json_t *r = row_at(&c, i);
        if (!json_is_object(r)) { free(c.order); return jr_fail(JR_EINVAL, "rows[%d]: expected an object", c.order[i]); }
    }
    jr_status st = jr_judge_open(&c.j, judge_cfg);
    if (st) { free(c.order); return st; }
    json_t *res = json_object(), *probes = json_object();
    json_object_set_new(res, "judge", json_pack("{s:s}", "protocol", o->protocol));
    jr_judge_opts jo;
    const char *model = !jr_judge_opts_from_config(&jo, judge_cfg) && jo.n_endpoints > 0 ? jo.endpoints[0].model : NULL;
    json_object_set_new(json_object_get(res, "judge"), "model", model ? json_string(model) : json_null());
    json_object_set_new(res, "rows", json_integer(c.n_rows));
    json_object_set_new(res, "variant_rows", json_integer(c.n_var));
    json_object_set_new(res, "probes", probes);
    for (int p = 0; p < JR_PROBE_COUNT && !st; p++) {
        if (!(o->probes & (1u << p))) continue;
        json_t *pr = json_object();
        json_object_set_new(probes, NAMES[p], pr);
        json_object_set_new(pr, "figures", json_object());
        char why[256];
        const char *skip = skip_reason(&c, p, why, sizeof why);
        if (skip) {
            json_object_set_new(pr, "flag", json_false());
            json_object_set_new(pr, "skipped", json_string(skip));
            continue;
        }
        json_object_set_new(pr, "skipped", json_null());
        json_object_set_new(pr, "protocol", json_string(o->protocol));
        c.submitted = c.unscored = 0;
        c.errors = json_array();
        st = run_one(&c, p, pr);
        json_object_set_new(pr, "submitted", json_integer(c.submitted));
        json_object_set_new(pr, "unscored", json_integer(c.unscored));
        json_object_set_new(pr, "errors", c.errors);
        c.errors = NULL;
        decide(p, pr);
    }
    jr_judge_close(c.j);
    free(c.base);
    free(c.order);
    if (st) { json_decref(res); return st; }
    *out = res;
    return JR_OK;
}
