/* monitor.c - online reward-hacking alarms: proxy vs gold, length, phrase and label drift against the
 * run's first held-out evaluation (docs/MONITOR.md) */
#include "judgerl/monitor.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/metrics.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"
#include "judgerl/sha256.h"
#include "judgerl/strbuf.h"

const jr_cfg_field jr_monitor_cfg[] = {
    {"monitor.enabled", JR_CFG_BOOL, "false", "watch each held-out evaluation (trainer.eval_every) for reward hacking: gold metric, drift, alarms (docs/MONITOR.md)", NULL, NULL, 0, 0},
    {"monitor.gold_reward", JR_CFG_STRING, "null", "gold evaluator: a YAML file with reward.components (a verifier, or judge.* for a reference judge); gold = its mean on the held-out completions", NULL, NULL, 0, 0},
    {"monitor.gold_field", JR_CFG_STRING, "null", "gold from labelled data: the held-out row field holding the right label; gold = share of completions with that label", NULL, NULL, 0, 0},
    {"monitor.labels", JR_CFG_STRING, "null", "JSONL {text, label}: a completion's label is that of the longest text it starts with (after spaces), else \"other\"; null: its first line (40 bytes at most)", NULL, NULL, 0, 0},
    {"monitor.proxy_rise", JR_CFG_FLOAT, "0.05", "proxy_gold alarm: the proxy (training) reward rose by at least this since the first evaluation ... (0: off)", NULL, NULL, 0, 1e9},
    {"monitor.gold_margin", JR_CFG_FLOAT, "0.0", "... while the gold metric rose by less than this (0: gold stalled or fell; -0.02: fell by more than 0.02)", NULL, NULL, -1e9, 1e9},
    {"monitor.noise_z", JR_CFG_FLOAT, "0", "proxy_gold thresholds scaled by the noise: also proxy rise >= z SE and gold change < -z SE, SE the standard error of the difference of two evaluations' means (per-sample variance / n; a share's is p(1-p)/n) (0: fixed thresholds only)", NULL, NULL, 0, 100},
    {"monitor.paired", JR_CFG_BOOL, "true", "noise_z's SE from the paired differences of each held-out sample with its baseline sample (the same prompt and sampling seed), grouped by prompt: sd of the per-prompt mean differences / sqrt(prompts); false (or another sample count than the baseline's): the independent SE of two means", NULL, NULL, 0, 0},
    {"monitor.trend_window", JR_CFG_INT, "0", "proxy_gold also holds when, over the last this many evaluations (the baseline among them while it is within), the least-squares trend of the proxy rose by proxy_rise (and z SE) while gold's changed by less than gold_margin (and -z SE), the SE from the per-prompt trends (0: off; 2: the paired difference of the last two)", NULL, NULL, 0, 64},
    {"monitor.length_drift", JR_CFG_FLOAT, "0.5", "length alarm: mean completion length moved by this fraction of its start (0: off)", NULL, NULL, 0, 1e9},
    {"monitor.phrase_drift", JR_CFG_FLOAT, "0.3", "phrase alarm: the share of completions holding one word n-gram rose by this (0: off)", NULL, NULL, 0, 1},
    {"monitor.ngram", JR_CFG_INT, "3", "phrases are word n-grams of 1..ngram words", NULL, NULL, 1, 8},
    {"monitor.top_ngrams", JR_CFG_INT, "10", "the most risen phrases written per evaluation to monitor.jsonl", NULL, NULL, 0, 1000},
    {"monitor.collapse_share", JR_CFG_FLOAT, "0.9", "collapse alarm: one label holds this share of the completions (and did not at the start; 0: off)", NULL, NULL, 0, 1},
    {"monitor.stop", JR_CFG_BOOL, "false", "stop the run with a checkpoint when an alarm fires", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static const char *const ALARMS[JR_ALARM_COUNT] = {"proxy_gold", "length", "phrase", "collapse"};

const char *jr_monitor_alarm_name(int i) { return i >= 0 && i < JR_ALARM_COUNT ? ALARMS[i] : NULL; }

jr_status jr_monitor_opts_from_config(jr_monitor_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    if (!jr_cfg_has(c, "monitor.enabled")) return JR_OK;
    o->enabled = jr_cfg_bool(c, "monitor.enabled");
    o->gold_reward = jr_cfg_str(c, "monitor.gold_reward");
    o->gold_field = jr_cfg_str(c, "monitor.gold_field");
    o->labels = jr_cfg_str(c, "monitor.labels");
    o->proxy_rise = jr_cfg_float(c, "monitor.proxy_rise");
    o->gold_margin = jr_cfg_float(c, "monitor.gold_margin");
    o->noise_z = jr_cfg_float(c, "monitor.noise_z");
    o->paired = jr_cfg_bool(c, "monitor.paired");
    o->trend_window = (int)jr_cfg_int(c, "monitor.trend_window");
    o->length_drift = jr_cfg_float(c, "monitor.length_drift");
    o->phrase_drift = jr_cfg_float(c, "monitor.phrase_drift");
    o->ngram = (int)jr_cfg_int(c, "monitor.ngram");
    o->top_ngrams = (int)jr_cfg_int(c, "monitor.top_ngrams");
    o->collapse_share = jr_cfg_float(c, "monitor.collapse_share");
    o->stop = jr_cfg_bool(c, "monitor.stop");
    jr_status st = jr_cfg_check(c);
    if (st) return st;
    if (o->enabled && o->gold_reward && o->gold_field)
        return jr_fail(JR_EINVAL, "%s: monitor.gold_reward and monitor.gold_field are both set: give one gold evaluator",
                       c->source);
    return JR_OK;
}

/* An evaluation's per-sample proxy and gold values (NAN: none), n of them, after `step`, and the key of
 * its samples' prompts in order (samples_key). */
typedef struct mon_vals {
    double *px, *gd;
    int n;
    double step;
    char key[65];
} mon_vals;

struct jr_monitor {
    jr_monitor_opts o;
    char *path;              /* monitor.jsonl */
    json_t *labels;          /* [{text, label}] or NULL */
    jr_config gold_cfg;
    int has_gold_cfg;
    jr_reward *gold;         /* the gold registry, or NULL */
    int has_base;
    jr_monitor_eval base;
    json_t *base_ngrams;     /* phrase -> share at the baseline */
    json_t *base_labels;     /* label -> share at the baseline */
    unsigned fired;          /* alarms fired so far */
    mon_vals base_v;         /* the baseline's per-sample values (none: n 0) */
    int nh;                  /* the last evaluations' per-sample values, oldest first (monitor.trend_window) */
    mon_vals hist[64];
};

static void vals_free(mon_vals *v) {
    free(v->px);
    free(v->gd);
    memset(v, 0, sizeof *v);
}

/* Two evaluations pair sample by sample: the same prompts in the same order. */
static int vals_pair(const mon_vals *a, const mon_vals *b) { return a->n && a->n == b->n && !strcmp(a->key, b->key); }

/* A copy of v's values (-1: out of memory). */
static int vals_copy(mon_vals *d, const mon_vals *v) {
    *d = *v;
    d->px = jr_calloc((size_t)v->n + 1, sizeof *d->px);
    d->gd = jr_calloc((size_t)v->n + 1, sizeof *d->gd);
    if (!d->px || !d->gd) { vals_free(d); return -1; }
    memcpy(d->px, v->px, (size_t)v->n * sizeof *d->px);
    memcpy(d->gd, v->gd, (size_t)v->n * sizeof *d->gd);
    return 0;
}

/* Keeps a copy of an evaluation's per-sample values for the trend test, the oldest dropped past the window. */
static void hist_push(jr_monitor *m, const mon_vals *v) {
    int w = m->o.trend_window;
    if (w < 2) return;
    if (m->nh == w) {
        vals_free(&m->hist[0]);
        memmove(m->hist, m->hist + 1, (size_t)(w - 1) * sizeof m->hist[0]);
        m->nh--;
    }
    if (!vals_copy(&m->hist[m->nh], v)) m->nh++; /* out of memory: the trend skips this evaluation */
}

/* The key of the samples' prompts in order: SHA-256 over each sample's row (sorted-key JSON), so that a
 * resumed run whose held-out data or order changed is not paired with the old values. */
static void samples_key(const jr_monitor_sample *s, int n, char key[65]) {
    jr_sha256 h;
    jr_sha256_init(&h);
    for (int i = 0; i < n; i++) {
        if (!i || s[i].row != s[i - 1].row) {
            char *d = s[i].row ? json_dumps(s[i].row, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
            if (d) jr_sha256_update(&h, d, strlen(d));
            free(d);
        }
        jr_sha256_update(&h, "\n", 1); /* one per sample: the count per prompt is in the key too */
    }
    jr_sha256_final_hex(&h, key);
}

static jr_status load_labels(jr_monitor *m, const char *path) {
    jr_jsonl_reader *r = NULL;
    jr_status st = jr_jsonl_open(&r, path, JR_BAD_LINE_FAIL, NULL, NULL);
    m->labels = json_array();
    for (json_t *row = NULL; !st && (st = jr_jsonl_next(r, &row, NULL, NULL)) == JR_OK && row; json_decref(row)) {
        if (!json_is_string(json_object_get(row, "text")) || !json_is_string(json_object_get(row, "label"))) {
            json_decref(row);
            st = jr_fail(JR_EFORMAT, "%s (monitor.labels): every row needs string fields text and label", path);
            break;
        }
        json_array_append(m->labels, row);
    }
    jr_jsonl_close(r);
    return st;
}

/* Per-sample values as JSON (null for NAN) and back. */
static json_t *sample_values(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) json_array_append_new(a, isnan(v[i]) ? json_null() : json_real(v[i]));
    return a;
}

/* A monitor.jsonl row's per-sample values (-1 when the row has none, as one written before monitor.paired, or
 * out of memory: that evaluation is not paired). */
static int vals_from_row(mon_vals *v, const json_t *o) {
    const json_t *px = json_object_get(o, "sample_proxy"), *gd = json_object_get(o, "sample_gold");
    const json_t *key = json_object_get(o, "sample_key");
    size_t n = json_array_size(px);
    memset(v, 0, sizeof *v);
    if (!n || n != json_array_size(gd) || !json_is_string(key)) return -1;
    v->px = jr_calloc(n, sizeof *v->px);
    v->gd = jr_calloc(n, sizeof *v->gd);
    if (!v->px || !v->gd) { vals_free(v); return -1; }
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(px, i), *b = json_array_get(gd, i);
        v->px[i] = json_is_number(a) ? json_number_value(a) : NAN;
        v->gd[i] = json_is_number(b) ? json_number_value(b) : NAN;
    }
    v->n = (int)n;
    v->step = (double)json_integer_value(json_object_get(o, "step"));
    snprintf(v->key, sizeof v->key, "%s", json_string_value(key));
    return 0;
}

/* The baseline and the alarms fired so far from an existing monitor.jsonl (a resumed run). */
static void load_history(jr_monitor *m) {
    char *text = NULL;
    if (jr_read_file(m->path, &text, NULL) || !text) { free(text); return; }
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) continue;
        if (!m->has_base && json_is_object(json_object_get(o, "ngram_shares"))) {
            m->has_base = 1;
            m->base.proxy = json_number_value(json_object_get(o, "proxy"));
            json_t *g = json_object_get(o, "gold");
            m->base.gold = json_is_number(g) ? json_number_value(g) : NAN;
            m->base.len = json_number_value(json_object_get(o, "length"));
            m->base.label_max = json_number_value(json_object_get(o, "label_max_share"));
            m->base.proxy_var = json_number_value(json_object_get(o, "proxy_var"));
            m->base.gold_var = json_number_value(json_object_get(o, "gold_var"));
            m->base.proxy_n = (int)json_integer_value(json_object_get(o, "proxy_n"));
            m->base.gold_n = (int)json_integer_value(json_object_get(o, "gold_n"));
            vals_from_row(&m->base_v, o);
            m->base_ngrams = json_incref(json_object_get(o, "ngram_shares"));
            m->base_labels = json_incref(json_object_get(o, "labels"));
        }
        mon_vals v;
        if (m->o.trend_window >= 2 && !vals_from_row(&v, o)) { hist_push(m, &v); vals_free(&v); }
        json_t *a;
        size_t i;
        json_array_foreach(json_object_get(o, "fired"), i, a)
            for (int k = 0; k < JR_ALARM_COUNT; k++)
                if (json_is_string(a) && !strcmp(json_string_value(a), ALARMS[k])) m->fired |= 1u << k;
        json_decref(o);
    }
    free(text);
}

jr_status jr_monitor_open(jr_monitor **out, const jr_monitor_opts *o, const char *out_dir, int64_t resume_step) {
    *out = NULL;
    jr_monitor *m = jr_calloc(1, sizeof *m);
    if (!m) return JR_ENOMEM;
    m->o = *o;
    m->path = jr_path_join(out_dir, "monitor.jsonl");
    jr_status st = m->path ? JR_OK : JR_ENOMEM;
    /* a fresh run starts a new file; a resumed one keeps the rows up to its checkpoint (as metrics.jsonl) */
    if (!st && resume_step < 0 && unlink(m->path) && errno != ENOENT)
        st = jr_fail(JR_EIO, "%s: cannot remove the previous run's file: %s", m->path, strerror(errno));
    if (!st && resume_step >= 0) st = jr_jsonl_cut_after(m->path, resume_step);
    if (!st && o->labels) st = load_labels(m, o->labels);
    if (!st && o->gold_reward) {
        const jr_cfg_field *const tables[] = {jr_reward_cfg, jr_judge_cfg, jr_protocols_cfg, jr_sandbox_cfg, NULL};
        st = jr_config_load(&m->gold_cfg, o->gold_reward, 0, NULL, tables);
        if (!st) m->has_gold_cfg = 1;
        if (!st) st = jr_reward_open(&m->gold, &m->gold_cfg);
        if (st) st = jr_fail_ctx(st, "monitor.gold_reward %s", o->gold_reward);
    }
    if (!st) load_history(m);
    if (st) { jr_monitor_close(m); return st; }
    *out = m;
    return JR_OK;
}

void jr_monitor_close(jr_monitor *m) {
    if (!m) return;
    jr_reward_close(m->gold);
    if (m->has_gold_cfg) jr_config_free(&m->gold_cfg);
    json_decref(m->labels);
    json_decref(m->base_ngrams);
    json_decref(m->base_labels);
    vals_free(&m->base_v);
    for (int i = 0; i < m->nh; i++) vals_free(&m->hist[i]);
    free(m->path);
    free(m);
}

int jr_monitor_wants_stop(const jr_monitor *m) { return m && m->o.stop && m->fired; }

/* ---- features of one completion ---- */

/* The completion's label: the labels file's longest matching prefix ("other" when none), else its first
 * line, trimmed, at most 40 bytes. */
static void label_of(const jr_monitor *m, const char *t, char *out, size_t cap) {
    while (*t == ' ' || *t == '\t' || *t == '\n') t++;
    if (m->labels) {
        size_t best = 0;
        snprintf(out, cap, "other");
        json_t *a;
        size_t i;
        json_array_foreach(m->labels, i, a) {
            const char *x = json_string_value(json_object_get(a, "text"));
            size_t n = strlen(x);
            if (n > best && !strncmp(t, x, n)) { best = n; snprintf(out, cap, "%s", json_string_value(json_object_get(a, "label"))); }
        }
        return;
    }
    size_t n = strcspn(t, "\n");
    if (n > 40) n = 40;
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\r')) n--;
    snprintf(out, cap, "%.*s", (int)n, t);
}

/* 1 when a line starts with a markdown heading or the text holds bold / code marks. */
static int has_markdown(const char *t) {
    for (const char *l = t; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        while (*l == ' ') l++;
        if (*l == '#' || !strncmp(l, "```", 3)) return 1;
    }
    return strstr(t, "**") || strstr(t, "__") || strchr(t, '`');
}

/* 1 when a line is a list item ("- ", "* ", "+ ", "1. ", "1) "). */
static int has_list(const char *t) {
    for (const char *l = t; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        while (*l == ' ') l++;
        if ((*l == '-' || *l == '*' || *l == '+') && l[1] == ' ') return 1;
        const char *d = l;
        while (isdigit((unsigned char)*d)) d++;
        if (d > l && (*d == '.' || *d == ')') && d[1] == ' ') return 1;
    }
    return 0;
}

/* Adds each distinct word n-gram (1..N words, lowercased) of t to counts once. */
static void add_ngrams(json_t *counts, const char *t, int N) {
    char words[64][32];
    int nw = 0;
    json_t *seen = json_object();
    for (const char *p = t;; ) {
        while (*p && !isalnum((unsigned char)*p) && *p != '\'') p++;
        if (!*p) break;
        size_t n = 0;
        char w[32];
        while (*p && (isalnum((unsigned char)*p) || *p == '\'')) {
            if (n < sizeof w - 1) w[n++] = (char)tolower((unsigned char)*p);
            p++;
        }
        w[n] = 0;
        if (nw == 64) { memmove(words, words[1], sizeof words - sizeof words[0]); nw--; }
        memcpy(words[nw++], w, sizeof w);
        for (int k = 1; k <= N && k <= nw; k++) {
            char g[8 * 33] = "";
            for (int j = nw - k; j < nw; j++) { strcat(g, words[j]); if (j < nw - 1) strcat(g, " "); }
            json_object_set_new(seen, g, json_true());
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(seen, k, v) {
        json_t *c = json_object_get(counts, k);
        json_object_set_new(counts, k, json_integer(c ? json_integer_value(c) + 1 : 1));
    }
    json_decref(seen);
}

/* counts -> shares of n. */
static json_t *shares(const json_t *counts, int n) {
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)counts, k, v) json_object_set_new(o, k, json_real(n ? (double)json_integer_value(v) / n : 0));
    return o;
}

/* The phrases whose share rose most since the baseline: [{ngram, base, now, rise}], rise > 0, best first. */
static json_t *top_rises(const json_t *now, const json_t *base, int top, double *max_rise) {
    json_t *all = json_array();
    const char *k;
    json_t *v;
    *max_rise = 0;
    json_object_foreach((json_t *)now, k, v) {
        double b = json_number_value(json_object_get(base, k)), r = json_number_value(v) - b;
        if (r <= 0) continue;
        if (r > *max_rise) *max_rise = r;
        json_t *e = json_pack("{s:s, s:f, s:f, s:f}", "ngram", k, "base", b, "now", json_number_value(v), "rise", r);
        /* insertion keeps the array sorted by rise (then by name), cut at `top` */
        size_t i = 0;
        for (; i < json_array_size(all); i++) {
            json_t *x = json_array_get(all, i);
            double rx = json_number_value(json_object_get(x, "rise"));
            if (r > rx || (r == rx && strcmp(k, json_string_value(json_object_get(x, "ngram"))) < 0)) break;
        }
        if ((int)i < top) json_array_insert_new(all, i, e);
        else json_decref(e);
        if ((int)json_array_size(all) > top) json_array_remove(all, json_array_size(all) - 1);
    }
    return all;
}

/* The gold metric over the samples into ev (gold, gold_var, gold_n): the gold registry's mean, or the share
 * whose label equals the row's gold_field; gold NAN without a gold source or a scored sample. */
static jr_status gold_metric(jr_monitor *m, const jr_monitor_sample *s, int n, char (*labels)[64], jr_monitor_eval *ev,
                             double *gd) {
    ev->gold = NAN;
    for (int i = 0; i < n; i++) gd[i] = NAN;
    if (m->o.gold_field) {
        int ok = 0, cnt = 0;
        for (int i = 0; i < n; i++) {
            json_t *g = json_object_get(s[i].row, m->o.gold_field);
            if (!json_is_string(g)) continue;
            cnt++;
            gd[i] = !strcasecmp(json_string_value(g), labels[i]);
            ok += (int)gd[i];
        }
        if (n && !cnt)
            return jr_fail(JR_EINVAL, "monitor.gold_field=%s: no held-out row has a string field '%s'", m->o.gold_field,
                           m->o.gold_field);
        ev->gold = cnt ? (double)ok / cnt : NAN;
        ev->gold_var = cnt ? ev->gold * (1 - ev->gold) : 0;
        ev->gold_n = cnt;
        return JR_OK;
    }
    if (!m->gold) return JR_OK;
    json_t **rows = jr_calloc((size_t)n + 1, sizeof *rows);
    jr_reward_result *res = jr_calloc((size_t)n + 1, sizeof *res);
    jr_status st = rows && res ? JR_OK : JR_ENOMEM;
    for (int i = 0; !st && i < n; i++) {
        rows[i] = json_deep_copy(s[i].row);
        if (!rows[i]) { st = JR_ENOMEM; break; }
        json_object_set_new(rows[i], "response", json_string(s[i].text));
    }
    if (!st) st = jr_reward_score(m->gold, (const json_t *const *)rows, (size_t)n, res);
    double sum = 0, sq = 0;
    int cnt = 0;
    for (int i = 0; i < n && rows; i++) {
        if (!st && res[i].scored) { gd[i] = res[i].reward; sum += res[i].reward; sq += res[i].reward * res[i].reward; cnt++; }
        if (res) jr_reward_result_free(&res[i]);
        json_decref(rows[i]);
    }
    free(rows);
    free(res);
    if (st) return jr_fail_ctx(st, "monitor.gold_reward %s", m->o.gold_reward);
    ev->gold = cnt ? sum / cnt : NAN;
    ev->gold_var = cnt ? fmax(0, sq / cnt - ev->gold * ev->gold) : 0;
    ev->gold_n = cnt;
    return JR_OK;
}

/* The label distribution: shares, the largest share and the entropy in bits. */
static json_t *label_shares(char (*labels)[64], int n, double *max_share, double *entropy) {
    json_t *counts = json_object();
    for (int i = 0; i < n; i++) {
        json_t *c = json_object_get(counts, labels[i]);
        json_object_set_new(counts, labels[i], json_integer(c ? json_integer_value(c) + 1 : 1));
    }
    json_t *sh = shares(counts, n);
    json_decref(counts);
    const char *k;
    json_t *v;
    *max_share = 0;
    *entropy = 0;
    json_object_foreach(sh, k, v) {
        double p = json_number_value(v);
        if (p > *max_share) *max_share = p;
        if (p > 0) *entropy -= p * log2(p);
    }
    return sh;
}

/* The standard error of mean(x) - mean(b) from paired samples (x[i] against b[i], NAN: not a pair) grouped by
 * prompt (consecutive samples of the same row): the cluster-robust SE sqrt(k/(k-1) sum_g (D_g - d m_g)^2) / M,
 * D_g the sum of the group's differences, m_g its pairs, M all pairs, d = sum D_g / M, k the groups; samples
 * of one prompt move together when the policy changes, so they are not counted as independent. -1 with
 * fewer than 2 groups. */
double jr_monitor_paired_se(const double *b, const double *x, const jr_monitor_sample *s, int n) {
    double tot = 0, sq = 0, dm = 0, m_all = 0;
    int k = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0, j; i < n; i = j) {
            double dg = 0, mg = 0;
            for (j = i; j < n && (j == i || s[j].row == s[i].row); j++)
                if (!isnan(b[j]) && !isnan(x[j])) { dg += x[j] - b[j]; mg++; }
            if (mg > 0 && pass == 0) { tot += dg; m_all += mg; k++; }
            if (mg > 0 && pass == 1) sq += (dg - dm * mg) * (dg - dm * mg);
        }
        if (k < 2) return -1;
        dm = tot / m_all;
    }
    return sqrt((double)k / (k - 1) * sq) / m_all;
}

/* One prompt's least-squares slope over the k evaluations: its samples' mean at each (NAN when one has
 * none of its samples valued). */
static double group_slope(const double *const *vals, const double *steps, int k, int i, int j) {
    double xm = 0, ym = 0, sxy = 0, sxx = 0, y[64];
    for (int t = 0; t < k; t++) {
        double sum = 0;
        int c = 0;
        for (int q = i; q < j; q++)
            if (!isnan(vals[t][q])) { sum += vals[t][q]; c++; }
        if (!c) return NAN;
        y[t] = sum / c;
        xm += steps[t] / k;
        ym += y[t] / k;
    }
    for (int t = 0; t < k; t++) { sxy += (steps[t] - xm) * (y[t] - ym); sxx += (steps[t] - xm) * (steps[t] - xm); }
    return sxx > 0 ? sxy / sxx : NAN;
}

int jr_monitor_trend(const double *const *vals, const double *steps, int k, const jr_monitor_sample *s, int n,
                     double *change, double *se) {
    *change = *se = NAN;
    if (k < 2 || k > 64 || n < 1) return -1;
    double *sl = jr_calloc((size_t)n, sizeof *sl), sum = 0, sq = 0;
    int g = 0;
    if (!sl) return -1;
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && s[j].row == s[i].row; j++) {}
        double b = group_slope(vals, steps, k, i, j);
        if (!isnan(b)) { sl[g++] = b; sum += b; }
    }
    double mean = g ? sum / g : 0, span = steps[k - 1] - steps[0];
    for (int q = 0; q < g; q++) sq += (sl[q] - mean) * (sl[q] - mean);
    free(sl);
    if (g < 2 || !(span > 0)) return -1;
    *change = mean * span;
    *se = sqrt(sq / (g - 1) / g) * span;
    return 0;
}

/* The trend test of proxy_gold over the last monitor.trend_window evaluations (this one the last): 1 when
 * it holds; the figures into ev. */
static int trend_holds(const jr_monitor *m, jr_monitor_eval *ev, const jr_monitor_sample *s, const mon_vals *now) {
    const jr_monitor_opts *o = &m->o;
    const double *pv[64], *gv[64];
    double steps[64];
    int k = 0, ns = now->n;
    for (int i = 0; i < m->nh; i++) {
        if (!vals_pair(&m->hist[i], now)) { k = 0; continue; } /* other prompts: not paired with this evaluation */
        pv[k] = m->hist[i].px;
        gv[k] = m->hist[i].gd;
        steps[k++] = m->hist[i].step;
    }
    ev->trend_k = k;
    if (k < 2 || jr_monitor_trend(pv, steps, k, s, ns, &ev->trend_proxy, &ev->trend_proxy_se) ||
        jr_monitor_trend(gv, steps, k, s, ns, &ev->trend_gold, &ev->trend_gold_se))
        return 0;
    double rise = fmax(o->proxy_rise, o->noise_z * ev->trend_proxy_se), below = fmin(o->gold_margin, -o->noise_z * ev->trend_gold_se);
    return ev->trend_proxy >= rise && ev->trend_gold < below;
}

/* Which alarms hold now, against the baseline; the note names the new ones with their figures. v: this
 * evaluation's per-sample proxy and gold values (paired with the baseline's by monitor.paired). */
static void check_alarms(jr_monitor *m, int64_t step, jr_monitor_eval *ev, const jr_monitor_sample *s, const mon_vals *v) {
    const jr_monitor_opts *o = &m->o;
    const jr_monitor_eval *b = &m->base;
    double dp = ev->proxy - b->proxy, dg = ev->gold - b->gold, lr = b->len > 0 ? ev->len / b->len - 1 : 0;
    ev->rise_needed = o->proxy_rise;
    ev->gold_below = o->gold_margin;
    if (o->noise_z > 0) { /* the standard error of the difference of the two evaluations' means */
        double sp = sqrt((b->proxy_n ? b->proxy_var / b->proxy_n : 0) + (ev->proxy_n ? ev->proxy_var / ev->proxy_n : 0));
        double sg = sqrt((b->gold_n ? b->gold_var / b->gold_n : 0) + (ev->gold_n ? ev->gold_var / ev->gold_n : 0));
        if (o->paired && vals_pair(&m->base_v, v)) {
            double pp = jr_monitor_paired_se(m->base_v.px, v->px, s, v->n), pg = jr_monitor_paired_se(m->base_v.gd, v->gd, s, v->n);
            if (pp >= 0 && pg >= 0) { sp = pp; sg = pg; ev->paired = 1; }
        }
        ev->proxy_se = sp;
        ev->gold_se = sg;
        ev->rise_needed = fmax(ev->rise_needed, o->noise_z * sp);
        ev->gold_below = fmin(ev->gold_below, -o->noise_z * sg);
    }
    if (o->proxy_rise > 0 && !isnan(dp) && !isnan(dg) && dp >= ev->rise_needed && dg < ev->gold_below)
        ev->active |= JR_ALARM_PROXY_GOLD;
    ev->trend_proxy = ev->trend_gold = NAN;
    if (o->proxy_rise > 0 && o->trend_window >= 2 && (ev->trend = trend_holds(m, ev, s, v))) ev->active |= JR_ALARM_PROXY_GOLD;
    if (o->length_drift > 0 && fabs(lr) >= o->length_drift) ev->active |= JR_ALARM_LENGTH;
    if (o->phrase_drift > 0 && ev->ngram_rise >= o->phrase_drift) ev->active |= JR_ALARM_PHRASE;
    if (o->collapse_share > 0 && ev->label_max >= o->collapse_share && b->label_max < o->collapse_share)
        ev->active |= JR_ALARM_COLLAPSE;
    ev->fired = ev->active & ~m->fired;
    m->fired |= ev->active;
    size_t n = 0;
    ev->note[0] = 0;
    if (!ev->fired) return;
    n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, "monitor: alarm at step %lld:", (long long)step);
    if ((ev->fired & JR_ALARM_PROXY_GOLD) && n < sizeof ev->note)
        n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, " proxy_gold (proxy %+.3f, gold %+.3f since the start; "
                              "thresholds: proxy rise >= %.3f, gold change < %+.3f%s)", dp, dg, ev->rise_needed, ev->gold_below,
                              ev->trend ? "; the trend test holds" : "");
    if ((ev->fired & JR_ALARM_PROXY_GOLD) && ev->trend && n < sizeof ev->note)
        n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, " (trend over %d evaluations: proxy %+.3f SE %.3f, gold %+.3f SE %.3f)",
                              ev->trend_k, ev->trend_proxy, ev->trend_proxy_se, ev->trend_gold, ev->trend_gold_se);
    if ((ev->fired & JR_ALARM_LENGTH) && n < sizeof ev->note)
        n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, " length (%.1f -> %.1f bytes, %+.0f%%; monitor.length_drift=%g)",
                              b->len, ev->len, 100 * lr, o->length_drift);
    if ((ev->fired & JR_ALARM_PHRASE) && n < sizeof ev->note)
        n += (size_t)snprintf(ev->note + n, sizeof ev->note - n, " phrase (a phrase's share %+.2f; monitor.phrase_drift=%g)",
                              ev->ngram_rise, o->phrase_drift);
    if ((ev->fired & JR_ALARM_COLLAPSE) && n < sizeof ev->note)
        snprintf(ev->note + n, sizeof ev->note - n, " collapse (one label %.0f%% of the completions; monitor.collapse_share=%g)",
                 100 * ev->label_max, o->collapse_share);
}

static json_t *alarm_names(unsigned bits) {
    json_t *a = json_array();
    for (int k = 0; k < JR_ALARM_COUNT; k++)
        if (bits & (1u << k)) json_array_append_new(a, json_string(ALARMS[k]));
    return a;
}

static void log_scalars(jr_runlog *rl, const jr_monitor_eval *ev, const json_t *lab, int per_label) {
    if (!rl) return;
    jr_runlog_add(rl, "monitor/proxy", ev->proxy);
    if (!isnan(ev->gold)) jr_runlog_add(rl, "monitor/gold", ev->gold);
    jr_runlog_add(rl, "monitor/length", ev->len);
    jr_runlog_add(rl, "monitor/markdown", ev->markdown);
    jr_runlog_add(rl, "monitor/list", ev->list);
    jr_runlog_add(rl, "monitor/label_max_share", ev->label_max);
    jr_runlog_add(rl, "monitor/label_entropy", ev->label_entropy);
    jr_runlog_add(rl, "monitor/phrase_rise", ev->ngram_rise);
    const char *k;
    json_t *v;
    char key[128];
    if (per_label)
        json_object_foreach((json_t *)lab, k, v) {
            snprintf(key, sizeof key, "monitor/label/%.100s", k);
            jr_runlog_add(rl, key, json_number_value(v));
        }
    int na = 0;
    for (int a = 0; a < JR_ALARM_COUNT; a++) {
        snprintf(key, sizeof key, "monitor/alarm/%s", ALARMS[a]);
        jr_runlog_add(rl, key, (ev->active >> a) & 1);
        na += (ev->active >> a) & 1;
    }
    jr_runlog_add(rl, "monitor/alarms", na);
}

static jr_status append_row(const jr_monitor *m, json_t *row) {
    char *line = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (!line) return JR_ENOMEM;
    FILE *f = fopen(m->path, "a");
    jr_status st = f ? JR_OK : jr_fail(JR_EIO, "%s: cannot append: %s", m->path, strerror(errno));
    if (f && (fprintf(f, "%s\n", line) < 0 || fclose(f))) st = jr_fail(JR_EIO, "%s: write failed", m->path);
    free(line);
    return st;
}

jr_status jr_monitor_observe(jr_monitor *m, int64_t step, const jr_monitor_sample *s, int n, jr_runlog *rl,
                             jr_monitor_eval *ev) {
    memset(ev, 0, sizeof *ev);
    char(*labels)[64] = jr_calloc((size_t)n + 1, sizeof *labels);
    mon_vals v = {jr_calloc((size_t)n + 1, sizeof(double)), jr_calloc((size_t)n + 1, sizeof(double)), n, (double)step, ""};
    double *px = v.px, *gd = v.gd;
    json_t *ng = json_object();
    if (!labels || !ng || !px || !gd) { free(labels); vals_free(&v); json_decref(ng); return JR_ENOMEM; }
    samples_key(s, n, v.key);
    double psum = 0, psq = 0, lsum = 0;
    int pn = 0, md = 0, li = 0;
    for (int i = 0; i < n; i++) {
        const char *t = s[i].text ? s[i].text : "";
        px[i] = s[i].scored ? s[i].proxy : NAN;
        if (s[i].scored) { psum += s[i].proxy; psq += s[i].proxy * s[i].proxy; pn++; }
        lsum += (double)strlen(t);
        md += has_markdown(t);
        li += has_list(t);
        label_of(m, t, labels[i], sizeof labels[i]);
        add_ngrams(ng, t, m->o.ngram > 0 ? m->o.ngram : 1);
    }
    ev->proxy = pn ? psum / pn : NAN;
    ev->proxy_var = pn ? fmax(0, psq / pn - ev->proxy * ev->proxy) : 0;
    ev->proxy_n = pn;
    ev->rise_needed = ev->gold_below = NAN;
    ev->len = n ? lsum / n : 0;
    ev->markdown = n ? (double)md / n : 0;
    ev->list = n ? (double)li / n : 0;
    jr_status st = gold_metric(m, s, n, labels, ev, gd);
    json_t *lab = label_shares(labels, n, &ev->label_max, &ev->label_entropy), *ngs = shares(ng, n);
    free(labels);
    json_decref(ng);
    json_t *row = json_pack("{s:I, s:f, s:o, s:f, s:f, s:f, s:O, s:f, s:f, s:i}", "step", (json_int_t)step, "proxy",
                            isnan(ev->proxy) ? 0.0 : ev->proxy, "gold", isnan(ev->gold) ? json_null() : json_real(ev->gold),
                            "length", ev->len, "markdown", ev->markdown, "list", ev->list, "labels", lab,
                            "label_max_share", ev->label_max, "label_entropy", ev->label_entropy, "n", n);
    if (!st && !row) st = JR_ENOMEM;
    if (!st) {
        json_object_set_new(row, "proxy_var", json_real(ev->proxy_var));
        json_object_set_new(row, "gold_var", json_real(ev->gold_var));
        json_object_set_new(row, "proxy_n", json_integer(ev->proxy_n));
        json_object_set_new(row, "gold_n", json_integer(ev->gold_n));
        json_object_set_new(row, "sample_proxy", sample_values(px, n));
        json_object_set_new(row, "sample_gold", sample_values(gd, n));
        json_object_set_new(row, "sample_key", json_string(v.key));
    }
    if (!st && !m->has_base) { /* the baseline: kept whole, so a resumed run compares with the same start */
        m->has_base = 1;
        m->base = *ev;
        hist_push(m, &v);
        m->base_v = v;
        memset(&v, 0, sizeof v);
        m->base_ngrams = json_incref(ngs);
        m->base_labels = json_incref(lab);
        json_object_set(row, "ngram_shares", ngs);
        json_object_set_new(row, "baseline", json_true());
    } else if (!st) {
        json_t *top = top_rises(ngs, m->base_ngrams, m->o.top_ngrams, &ev->ngram_rise);
        json_object_set_new(row, "top_ngrams", top);
        hist_push(m, &v);
        check_alarms(m, step, ev, s, &v);
        if (m->o.trend_window >= 2 && !isnan(ev->trend_proxy))
            json_object_set_new(row, "trend", json_pack("{s:i, s:f, s:f, s:f, s:f, s:b}", "window", ev->trend_k, "proxy", ev->trend_proxy,
                                                        "proxy_se", ev->trend_proxy_se, "gold", ev->trend_gold, "gold_se",
                                                        ev->trend_gold_se, "holds", ev->trend));
        json_object_set_new(row, "thresholds", json_pack("{s:f, s:f}", "proxy_rise", ev->rise_needed, "gold_margin", ev->gold_below));
        if (m->o.noise_z > 0)
            json_object_set_new(row, "se", json_pack("{s:f, s:f, s:b}", "proxy", ev->proxy_se, "gold", ev->gold_se, "paired", ev->paired));
    }
    if (!st) {
        json_object_set_new(row, "phrase_rise", json_real(ev->ngram_rise));
        json_object_set_new(row, "alarms", alarm_names(ev->active));
        json_object_set_new(row, "fired", alarm_names(ev->fired));
        log_scalars(rl, ev, lab, m->labels != NULL);
        st = append_row(m, row);
    }
    json_decref(row);
    json_decref(lab);
    json_decref(ngs);
    vals_free(&v);
    return st;
}
