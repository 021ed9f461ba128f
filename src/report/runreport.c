/* runreport.c - `judgerl report RUN` for any run (SFT / GRPO / distill run directories, eval
 * directories, grade outputs, demo runs) and `judgerl compare RUN...`: curves from metrics.jsonl
 * with smoothing, sample completions, hyperparameters and the config, unscored reasons; one colour
 * per run on every chart and table (report.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "judgerl/config.h"
#include "judgerl/fsutil.h"
#include "judgerl/report.h"
#include "judgerl/study_report.h"

enum { KIND_TRAIN, KIND_EVAL, KIND_GRADE, KIND_DEMO };
static const char *const KIND_NAME[] = {"training run", "eval run", "grade output", "demo run"};
enum { MAX_SAMPLES = 8, MAX_METRICS = 48, HIST_BINS = 10 };

typedef struct {
    const char *path;
    char label[160];
    int kind;
    json_t *metrics;  /* {name: [[step, value|null], ...]} in first-seen order */
    json_t *dropped;  /* {name: true}: metrics past MAX_METRICS, not charted (said on the page) */
    json_t *samples;  /* up to MAX_SAMPLES rows (the last logged step's; a grade output's first) */
    json_t *config;   /* the run's config.yaml as JSON, or NULL */
    char *config_text;
    json_t *reasons;  /* {reason: count} of unscored rows / samples */
    json_t *summary;  /* an eval run's summary.json */
    long n_rows, n_ok, n_unscored;
    double *rewards;  /* a grade output's rewards (n_ok of them) */
} run_t;

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void add_reason(json_t *reasons, const char *r) {
    char k[160];
    snprintf(k, sizeof k, "%.150s", r && *r ? r : "(no reason given)");
    json_t *c = json_object_get(reasons, k);
    json_object_set_new(reasons, k, json_integer(c ? json_integer_value(c) + 1 : 1));
}

/* metrics.jsonl: every numeric (or null) field but step and wall_time, per step. */
static jr_status load_metrics(run_t *r, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return JR_OK;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL), *st = json_object_get(o, "step");
        const char *k;
        json_t *v;
        if (json_is_integer(st)) json_object_foreach(o, k, v) {
            if (!strcmp(k, "step") || !strcmp(k, "wall_time") || !(json_is_number(v) || json_is_null(v))) continue;
            json_t *arr = json_object_get(r->metrics, k);
            if (!arr && json_object_size(r->metrics) >= MAX_METRICS) {
                json_object_set_new(r->dropped, k, json_true());
                continue;
            }
            if (!arr) json_object_set_new(r->metrics, k, arr = json_array());
            json_array_append_new(arr, json_pack("[O,O]", st, v));
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return JR_OK;
}

/* samples.jsonl (GRPO's logged completions, an eval's scored samples): the last step's rows, or
 * the last rows when they carry no step; unscored reasons tallied over all. */
static void load_samples(run_t *r, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    json_int_t last = -1;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, JSON_ALLOW_NUL, NULL);
        if (!json_is_object(o)) { json_decref(o); continue; }
        json_t *st = json_object_get(o, "step"), *rw = json_object_get(o, "reward");
        if (json_is_null(rw) || (rw == NULL && json_object_get(o, "reason")))
            add_reason(r->reasons, json_string_value(json_object_get(o, "reason")));
        json_int_t s = json_is_integer(st) ? json_integer_value(st) : -1;
        if (s != last && s >= 0) { json_array_clear(r->samples); last = s; }
        if (json_array_size(r->samples) == MAX_SAMPLES) json_array_remove(r->samples, s >= 0 ? MAX_SAMPLES - 1 : 0);
        json_array_append(r->samples, o);
        json_decref(o);
    }
    free(line);
    fclose(f);
}

/* A grade output: counts, the rewards, the unscored reasons and the first rows. */
static jr_status load_grade(run_t *r) {
    FILE *f = fopen(r->path, "r");
    if (!f) return jr_fail(JR_EIO, "%s: cannot open", r->path);
    char *line = NULL;
    size_t cap = 0, rcap = 0;
    jr_status st = JR_OK;
    long lineno = 0;
    while (!st && getline(&line, &cap, f) > 0) {
        lineno++;
        json_t *o = json_loads(line, JSON_ALLOW_NUL, NULL);
        if (!json_is_object(o) || !json_object_get(o, "status")) {
            st = jr_fail(JR_EFORMAT, "%s: line %ld is not a `judgerl grade` output row (no status field)", r->path, lineno);
            json_decref(o);
            break;
        }
        r->n_rows++;
        json_t *rw = json_object_get(o, "reward");
        if (json_is_number(rw)) {
            if ((size_t)r->n_ok == rcap) {
                rcap = rcap ? 2 * rcap : 256;
                double *nr = realloc(r->rewards, rcap * sizeof *nr);
                if (!nr) { st = JR_ENOMEM; json_decref(o); break; }
                r->rewards = nr;
            }
            r->rewards[r->n_ok++] = json_number_value(rw);
        } else {
            r->n_unscored++;
            add_reason(r->reasons, json_string_value(json_object_get(o, "error")));
        }
        if (json_array_size(r->samples) < MAX_SAMPLES) json_array_append(r->samples, o);
        json_decref(o);
    }
    free(line);
    fclose(f);
    if (!st && !r->n_rows) st = jr_fail(JR_EFORMAT, "%s: no rows", r->path);
    return st;
}

/* Flattens nested mappings into {"a.b": value}. */
static void flatten(json_t *out, const char *prefix, json_t *v) {
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            char p[512];
            snprintf(p, sizeof p, "%s%s%s", prefix, *prefix ? "." : "", k);
            flatten(out, p, x);
        }
    } else if (*prefix) {
        json_object_set(out, prefix, v);
    }
}

static jr_status load_run(run_t *r, const char *path) {
    memset(r, 0, sizeof *r);
    r->path = path;
    r->metrics = json_object();
    r->samples = json_array();
    r->reasons = json_object();
    r->dropped = json_object();
    if (!r->metrics || !r->samples || !r->reasons || !r->dropped) return JR_ENOMEM;
    const char *base = strrchr(path, '/');
    snprintf(r->label, sizeof r->label, "%s", base && base[1] ? base + 1 : path);
    if (!is_dir(path)) {
        if (!jr_path_exists(path)) return jr_fail(JR_ENOTFOUND, "%s: no such run directory or grade output", path);
        r->kind = KIND_GRADE;
        return load_grade(r);
    }
    char *mp = jr_path_join(path, "metrics.jsonl"), *sp = jr_path_join(path, "samples.jsonl"),
         *cp = jr_path_join(path, "config.yaml"), *up = jr_path_join(path, "unscored.json"),
         *sm = jr_path_join(path, "summary.json");
    jr_status st = mp && sp && cp && up && sm ? JR_OK : JR_ENOMEM;
    json_error_t je;
    json_t *summary = !st && jr_path_exists(sm) ? json_load_file(sm, 0, &je) : NULL;
    if (!st && !summary && jr_path_exists(sm)) st = jr_fail(JR_EFORMAT, "%s: line %d: %s", sm, je.line, je.text);
    if (!st && json_object_get(summary, "stages")) r->kind = KIND_DEMO;
    else if (!st && jr_path_exists(mp)) r->kind = KIND_TRAIN;
    else if (!st && (summary || jr_path_exists(sp))) r->kind = KIND_EVAL;
    else if (!st)
        st = jr_fail(JR_ENOTFOUND, "%s: not a run directory (no metrics.jsonl, samples.jsonl or summary.json; a grade "
                                   "output is its .jsonl file)", path);
    if (!st && r->kind == KIND_EVAL) r->summary = json_incref(summary);
    if (!st) st = load_metrics(r, mp);
    if (!st) load_samples(r, sp);
    size_t len;
    if (!st && jr_path_exists(cp) && !jr_read_file(cp, &r->config_text, &len)) {
        json_t *tree = NULL;
        if (!jr_yaml_parse(r->config_text, len, cp, &tree)) {
            r->config = json_object();
            flatten(r->config, "", tree);
        }
        json_decref(tree);
    }
    json_t *un = !st && jr_path_exists(up) ? json_load_file(up, 0, NULL) : NULL;
    json_t *top = json_object_get(un, "top");
    for (size_t i = 0; i < json_array_size(top); i++) {
        json_t *e = json_array_get(top, i);
        const char *k = json_string_value(json_object_get(e, "reason"));
        if (k) json_object_set(r->reasons, k, json_object_get(e, "count"));
    }
    json_decref(un);
    json_decref(summary);
    free(mp); free(sp); free(cp); free(up); free(sm);
    return st;
}

static void free_run(run_t *r) {
    json_decref(r->metrics);
    json_decref(r->dropped);
    json_decref(r->samples);
    json_decref(r->config);
    json_decref(r->reasons);
    json_decref(r->summary);
    free(r->config_text);
    free(r->rewards);
}

/* ---- HTML pieces ---- */

static void swatch(jr_strbuf *b, int i) {
    jr_strbuf_addf(b, "<span style=\"display:inline-block;width:10px;height:10px;background:%s\"></span> ",
                  jr_report_color(i));
}

/* A value's text (a string as it is, anything else as compact JSON), cut to `cut` bytes + "...". */
static void text_cell(jr_strbuf *b, const json_t *v, int cut) {
    jr_strbuf_addf(b, "<td>");
    if (v && !json_is_null(v)) {
        char *t = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(6));
        const char *s = json_is_string(v) ? json_string_value(v) : t ? t : "";
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%.*s%s", cut, s, strlen(s) > (size_t)cut ? "..." : "");
        jr_html_escape(b, tmp);
        free(t);
    } else {
        jr_strbuf_addf(b, "<i>null</i>");
    }
    jr_strbuf_addf(b, "</td>");
}

/* A chat prompt shows its last message. */
static const json_t *prompt_of(const json_t *row) {
    const json_t *p = json_object_get(row, "prompt");
    if (!p) p = json_object_get(row, "messages");
    if (json_is_array(p) && json_array_size(p))
        return json_object_get(json_array_get(p, json_array_size(p) - 1), "content");
    return p;
}

static const json_t *completion_of(const json_t *row) {
    const json_t *c = json_object_get(row, "completion");
    return c ? c : json_object_get(row, "response");
}

static const json_t *reason_of(const json_t *row) {
    const json_t *c = json_object_get(row, "reason");
    return c ? c : json_object_get(row, "error");
}

static void samples_table(jr_strbuf *b, const run_t *r) {
    if (!json_array_size(r->samples)) return;
    json_t *st = json_object_get(json_array_get(r->samples, 0), "step");
    if (json_is_integer(st)) jr_strbuf_addf(b, "<h2>Sample completions (step %lld)</h2>\n", (long long)json_integer_value(st));
    else jr_strbuf_addf(b, "<h2>Sample rows</h2>\n");
    jr_strbuf_addf(b, "<table><tr><th>prompt</th><th>completion</th><th>reward</th><th>unscored reason</th></tr>\n");
    for (size_t i = 0; i < json_array_size(r->samples); i++) {
        json_t *row = json_array_get(r->samples, i);
        jr_strbuf_addf(b, "<tr>");
        text_cell(b, prompt_of(row), 200);
        text_cell(b, completion_of(row), 400);
        text_cell(b, json_object_get(row, "reward"), 20);
        text_cell(b, reason_of(row), 200);
        jr_strbuf_addf(b, "</tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
}

static void reasons_table(jr_strbuf *b, const run_t *r) {
    if (!json_object_size(r->reasons)) return;
    jr_strbuf_addf(b, "<h2>Unscored reasons</h2>\n<table><tr><th>reason</th><th>count</th></tr>\n");
    const char *k;
    json_t *v;
    json_object_foreach(r->reasons, k, v) {
        jr_strbuf_addf(b, "<tr><td>");
        jr_html_escape(b, k);
        jr_strbuf_addf(b, "</td><td>%lld</td></tr>\n", (long long)json_integer_value(v));
    }
    jr_strbuf_addf(b, "</table>\n");
}

/* The hyperparameters worth a glance, when the config has them. */
static const char *const HYPER[] = {"trainer.algo", "trainer.steps", "trainer.lr", "trainer.lr_schedule",
                                    "trainer.warmup_steps", "trainer.batch_size", "trainer.grad_accum",
                                    "trainer.max_seq_len", "trainer.weight_decay", "trainer.max_grad_norm",
                                    "lora.enabled", "lora.rank", "lora.alpha", "grpo.num_generations",
                                    "grpo.prompts_per_step", "grpo.beta", "grpo.epsilon", "grpo.loss_type",
                                    "grpo.temperature", "grpo.max_completion_length", "model.path", "model.init",
                                    "data.train", "run.seed", NULL};

static int same_value(const json_t *a, const json_t *b) { return (!a && !b) || (a && b && json_equal(a, b)); }

/* Single run: hyperparameters. Several: every key whose value differs (the config diff), then the
 * hyperparameters; one column per run under its colour. */
static void config_tables(jr_strbuf *b, const run_t *r, int n) {
    int any = 0;
    for (int i = 0; i < n; i++) any |= r[i].config != NULL;
    if (!any) return;
    if (n > 1) {
        jr_strbuf_addf(b, "<h2>Config diff</h2>\n<table><tr><th>key</th>");
        for (int i = 0; i < n; i++) { jr_strbuf_addf(b, "<th>"); swatch(b, i); jr_html_escape(b, r[i].label); jr_strbuf_addf(b, "</th>"); }
        jr_strbuf_addf(b, "</tr>\n");
        json_t *keys = json_object();
        for (int i = 0; i < n; i++)
            if (r[i].config) json_object_update_missing(keys, r[i].config);
        const char *k;
        json_t *v;
        int rows = 0;
        json_object_foreach(keys, k, v) {
            int differ = 0;
            for (int i = 1; i < n; i++)
                differ |= !same_value(json_object_get(r[0].config, k), json_object_get(r[i].config, k));
            if (!differ) continue;
            rows++;
            jr_strbuf_addf(b, "<tr><td><code>");
            jr_html_escape(b, k);
            jr_strbuf_addf(b, "</code></td>");
            for (int i = 0; i < n; i++) text_cell(b, json_object_get(r[i].config, k), 200);
            jr_strbuf_addf(b, "</tr>\n");
        }
        json_decref(keys);
        if (!rows) jr_strbuf_addf(b, "<tr><td colspan=\"%d\">the configs are the same</td></tr>\n", n + 1);
        jr_strbuf_addf(b, "</table>\n");
    }
    jr_strbuf_addf(b, "<h2>Hyperparameters</h2>\n<table><tr><th>key</th>");
    for (int i = 0; i < n; i++) { jr_strbuf_addf(b, "<th>"); swatch(b, i); jr_html_escape(b, r[i].label); jr_strbuf_addf(b, "</th>"); }
    jr_strbuf_addf(b, "</tr>\n");
    for (int h = 0; HYPER[h]; h++) {
        int has = 0;
        for (int i = 0; i < n; i++) has |= json_object_get(r[i].config, HYPER[h]) != NULL;
        if (!has) continue;
        jr_strbuf_addf(b, "<tr><td><code>%s</code></td>", HYPER[h]);
        for (int i = 0; i < n; i++) text_cell(b, json_object_get(r[i].config, HYPER[h]), 200);
        jr_strbuf_addf(b, "</tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
    for (int i = 0; i < n; i++) {
        if (!r[i].config_text) continue;
        jr_strbuf_addf(b, "<details><summary>");
        swatch(b, i);
        jr_html_escape(b, r[i].label);
        jr_strbuf_addf(b, ": config.yaml</summary><pre>");
        jr_html_escape(b, r[i].config_text);
        jr_strbuf_addf(b, "</pre></details>\n");
    }
}

/* The curve of one metric of one run: raw values and the debiased EMA (TensorBoard's smoothing). */
static int curve(const run_t *r, const char *name, double smoothing, double **x, double **raw, double **sm) {
    json_t *arr = json_object_get(r->metrics, name);
    size_t n = json_array_size(arr);
    *x = *raw = *sm = NULL;
    if (!n) return 0;
    *x = malloc(n * sizeof(double));
    *raw = malloc(n * sizeof(double));
    *sm = malloc(n * sizeof(double));
    if (!*x || !*raw || !*sm) return 0;
    double acc = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(arr, i), *v = json_array_get(p, 1);
        (*x)[i] = (double)json_integer_value(json_array_get(p, 0));
        (*raw)[i] = json_is_number(v) ? json_number_value(v) : NAN;
        if (isfinite((*raw)[i])) {
            acc = acc * smoothing + (1 - smoothing) * (*raw)[i];
            w = w * smoothing + (1 - smoothing);
        }
        (*sm)[i] = w > 0 && isfinite((*raw)[i]) ? acc / w : NAN;
    }
    return (int)n;
}

static void charts(jr_strbuf *b, const run_t *r, int n, double smoothing) {
    json_t *names = json_object();
    for (int i = 0; i < n; i++) json_object_update_missing(names, r[i].metrics);
    if (!json_object_size(names)) { json_decref(names); return; }
    jr_strbuf_addf(b, "<h2>Curves</h2>\n<p class=\"note\">metrics.jsonl per step: the faint line is the raw value, the "
                     "solid one its exponential moving average (smoothing %.2f, debiased as TensorBoard does)%s.</p>\n"
                     "<div class=\"charts\">\n", smoothing, n > 1 ? "; one colour per run" : "");
    const char *name;
    json_t *unused;
    json_object_foreach(names, name, unused) {
        jr_series s[32];
        double *bufs[48] = {0};
        int ns = 0, nb = 0;
        char labels[16][200];
        for (int i = 0; i < n && i < 16; i++) {
            double *x, *raw, *sm;
            int np = curve(&r[i], name, smoothing, &x, &raw, &sm);
            bufs[nb++] = x; bufs[nb++] = raw; bufs[nb++] = sm;
            if (!np) continue;
            snprintf(labels[i], sizeof labels[i], "%s", n > 1 ? r[i].label : name);
            s[ns++] = (jr_series){NULL, x, raw, np, jr_report_color(i), 1};
            s[ns++] = (jr_series){labels[i], x, sm, np, jr_report_color(i), 0};
        }
        jr_svg_lines(b, name, "step", name, s, ns);
        for (int k = 0; k < nb; k++) free(bufs[k]);
    }
    json_decref(names);
    jr_strbuf_addf(b, "</div>\n");
    for (int i = 0; i < n; i++) {
        if (!json_object_size(r[i].dropped)) continue;
        jr_strbuf_addf(b, "<p class=\"note\">");
        jr_html_escape(b, r[i].label);
        jr_strbuf_addf(b, ": %zu more metrics not charted (at most %d per run):", json_object_size(r[i].dropped), MAX_METRICS);
        const char *name;
        json_t *unused;
        json_object_foreach(r[i].dropped, name, unused) {
            jr_strbuf_addf(b, " ");
            jr_html_escape(b, name);
        }
        jr_strbuf_addf(b, "</p>\n");
    }
}

static void grade_section(jr_strbuf *b, const run_t *r, int idx) {
    double mean = 0;
    for (long i = 0; i < r->n_ok; i++) mean += r->rewards[i];
    mean = r->n_ok ? mean / r->n_ok : NAN;
    jr_strbuf_addf(b, "<h2>Grades</h2>\n<table><tr><th>rows</th><th>scored</th><th>unscored</th><th>mean reward</th></tr>\n"
                     "<tr><td>%ld</td><td>%ld</td><td>%ld</td><td>%.4f</td></tr></table>\n",
                  r->n_rows, r->n_ok, r->n_unscored, mean);
    if (!r->n_ok) return;
    double lo = r->rewards[0], hi = r->rewards[0];
    for (long i = 1; i < r->n_ok; i++) { lo = fmin(lo, r->rewards[i]); hi = fmax(hi, r->rewards[i]); }
    if (hi - lo < 1e-12) hi = lo + 1;
    double counts[HIST_BINS] = {0};
    char glab[HIST_BINS][40];
    const char *groups[HIST_BINS];
    for (long i = 0; i < r->n_ok; i++) {
        int k = (int)((r->rewards[i] - lo) / (hi - lo) * HIST_BINS);
        counts[k < HIST_BINS ? k : HIST_BINS - 1] += 1;
    }
    for (int k = 0; k < HIST_BINS; k++) {
        snprintf(glab[k], sizeof glab[k], "%.3g", lo + (hi - lo) * (k + 0.5) / HIST_BINS);
        groups[k] = glab[k];
    }
    const double *vals[1] = {counts};
    const char *ser[1] = {r->label}, *cols[1] = {jr_report_color(idx)};
    jr_strbuf_addf(b, "<div class=\"charts\">\n");
    jr_svg_bars_colored(b, "Rewards of the scored rows", "rows", groups, HIST_BINS, ser, 1, vals, cols);
    jr_strbuf_addf(b, "</div>\n");
}

static void eval_summary(jr_strbuf *b, const run_t *r) {
    if (!json_is_object(r->summary)) return;
    jr_strbuf_addf(b, "<h2>Summary</h2>\n<table><tr><th>field</th><th>value</th></tr>\n");
    json_t *flat = json_object();
    flatten(flat, "", r->summary);
    const char *k;
    json_t *v;
    json_object_foreach(flat, k, v) {
        if (!json_is_number(v) && !json_is_string(v) && !json_is_boolean(v)) continue;
        jr_strbuf_addf(b, "<tr><td><code>");
        jr_html_escape(b, k);
        jr_strbuf_addf(b, "</code></td>");
        text_cell(b, v, 200);
        jr_strbuf_addf(b, "</tr>\n");
    }
    json_decref(flat);
    jr_strbuf_addf(b, "</table>\n");
}

/* Samples side by side: column i is run i's logged samples (its last step). */
static void samples_side_by_side(jr_strbuf *b, const run_t *r, int n) {
    size_t rows = 0;
    for (int i = 0; i < n; i++) rows = json_array_size(r[i].samples) > rows ? json_array_size(r[i].samples) : rows;
    if (!rows) return;
    jr_strbuf_addf(b, "<h2>Samples side by side</h2>\n<table><tr>");
    for (int i = 0; i < n; i++) { jr_strbuf_addf(b, "<th>"); swatch(b, i); jr_html_escape(b, r[i].label); jr_strbuf_addf(b, "</th>"); }
    jr_strbuf_addf(b, "</tr>\n");
    for (size_t k = 0; k < rows; k++) {
        jr_strbuf_addf(b, "<tr>");
        for (int i = 0; i < n; i++) {
            json_t *row = json_array_get(r[i].samples, k);
            jr_strbuf_addf(b, "<td>");
            if (row) {
                char tmp[700];
                const json_t *p = prompt_of(row), *c = completion_of(row), *rw = json_object_get(row, "reward");
                jr_strbuf_addf(b, "<b>");
                snprintf(tmp, sizeof tmp, "%.150s", json_is_string(p) ? json_string_value(p) : "");
                jr_html_escape(b, tmp);
                jr_strbuf_addf(b, "</b><br>");
                snprintf(tmp, sizeof tmp, "%.400s", json_is_string(c) ? json_string_value(c) : "");
                jr_html_escape(b, tmp);
                if (json_is_number(rw)) jr_strbuf_addf(b, "<br>reward %.4g", json_number_value(rw));
                else if (json_is_null(rw)) jr_strbuf_addf(b, "<br>unscored");
            }
            jr_strbuf_addf(b, "</td>");
        }
        jr_strbuf_addf(b, "</tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
}

static void page_head(jr_strbuf *b, const char *title, const run_t *r, int n) {
    jr_strbuf_addf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    jr_html_escape(b, title);
    jr_strbuf_addf(b, "</title><style>%s</style></head><body>\n<h1>", jr_report_css);
    jr_html_escape(b, title);
    jr_strbuf_addf(b, "</h1>\n<table><tr><th>run</th><th>kind</th><th>path</th><th>steps logged</th></tr>\n");
    for (int i = 0; i < n; i++) {
        long steps = 0;
        const char *k;
        json_t *v;
        json_object_foreach(r[i].metrics, k, v) steps = (long)json_array_size(v) > steps ? (long)json_array_size(v) : steps;
        jr_strbuf_addf(b, "<tr><td>");
        swatch(b, i);
        jr_html_escape(b, r[i].label);
        jr_strbuf_addf(b, "</td><td>%s</td><td><code>", KIND_NAME[r[i].kind]);
        jr_html_escape(b, r[i].path);
        jr_strbuf_addf(b, "</code></td><td>%ld</td></tr>\n", steps);
    }
    jr_strbuf_addf(b, "</table>\n");
}

static jr_status page_write(jr_strbuf *b, const char *out) {
    jr_strbuf_addf(b, "<p class=\"note\">Written by judgerl from the runs' metrics.jsonl, samples.jsonl, config.yaml, "
                     "unscored.json and outputs; one self-contained file.</p>\n</body></html>\n");
    if (b->oom) return jr_fail(JR_ENOMEM, "report: out of memory");
    return jr_write_atomic(out, b->p, b->n);
}

/* The last value of the first of these metrics a run has, for the terminal line. */
static void text_line(FILE *out, const run_t *r) {
    static const char *const MAIN[] = {"reward", "loss", "eval/reward", "val_loss", NULL};
    fprintf(out, "%s (%s)", r->label, KIND_NAME[r->kind]);
    for (int m = 0; MAIN[m]; m++) {
        json_t *arr = json_object_get(r->metrics, MAIN[m]);
        json_t *last = json_array_get(arr, json_array_size(arr) - 1), *v = json_array_get(last, 1);
        if (json_is_number(v))
            fprintf(out, ": %s %.4f at step %lld", MAIN[m], json_number_value(v), (long long)json_integer_value(json_array_get(last, 0)));
        if (json_is_number(v)) break;
    }
    if (r->kind == KIND_GRADE) fprintf(out, ": %ld rows, %ld scored, %ld unscored", r->n_rows, r->n_ok, r->n_unscored);
    if (json_object_size(r->dropped))
        fprintf(out, " (%zu metrics past the first %d not charted)", json_object_size(r->dropped), MAX_METRICS);
    fprintf(out, "\n");
}

/* A `judgerl study` directory: its page (default RUN/study.html) again, from study.json. */
static jr_status study_page(const char *run, const char *json_path, const char *out_html, FILE *text, char **written) {
    json_error_t e;
    json_t *s = json_load_file(json_path, 0, &e);
    if (!s) return jr_fail(JR_EFORMAT, "%s:%d: %s", json_path, e.line, e.text);
    char *out = out_html ? jr_strdup(out_html) : jr_path_join(run, "study.html");
    jr_status st = out ? jr_study_html_write(out, s) : JR_ENOMEM;
    if (!st && text) fprintf(text, "study: %zu judges\n", json_array_size(json_object_get(s, "judges")));
    json_decref(s);
    if (st) free(out);
    else *written = out;
    return st;
}

jr_status jr_run_report(const char *run, const char *out_html, double smoothing, FILE *text, char **written) {
    *written = NULL;
    char *sj = jr_path_join(run, "study.json");
    if (!sj) return JR_ENOMEM;
    if (jr_path_exists(sj)) {
        jr_status sst = study_page(run, sj, out_html, text, written);
        free(sj);
        return sst;
    }
    free(sj);
    run_t r;
    jr_status st = load_run(&r, run);
    if (!st && r.kind == KIND_DEMO) { /* the demo's own page */
        free_run(&r);
        json_t *sum = NULL;
        if ((st = jr_report_write(run, &sum))) return st;
        if (text) jr_report_text(text, sum);
        json_decref(sum);
        *written = jr_path_join(run, "report.html");
        return *written ? JR_OK : JR_ENOMEM;
    }
    char *out = NULL;
    if (!st) {
        if (out_html) out = jr_strdup(out_html);
        else if (r.kind == KIND_GRADE) {
            size_t n = strlen(run);
            out = jr_malloc(n + 16);
            if (out) snprintf(out, n + 16, "%.*s.report.html", (int)(n > 6 && !strcmp(run + n - 6, ".jsonl") ? n - 6 : n), run);
        } else out = jr_path_join(run, "report.html");
        if (!out) st = JR_ENOMEM;
    }
    if (!st) {
        jr_strbuf b = {0};
        char title[300];
        snprintf(title, sizeof title, "judgerl report: %s", r.label);
        page_head(&b, title, &r, 1);
        config_tables(&b, &r, 1);
        if (r.kind == KIND_GRADE) grade_section(&b, &r, 0);
        eval_summary(&b, &r);
        charts(&b, &r, 1, smoothing);
        samples_table(&b, &r);
        reasons_table(&b, &r);
        st = page_write(&b, out);
        free(b.p);
        if (!st && text) text_line(text, &r);
    }
    free_run(&r);
    if (st) free(out);
    else *written = out;
    return st;
}

jr_status jr_compare_report(const char *const *runs, int n, const char *out_html, double smoothing, FILE *text) {
    if (n < 2 || n > 16) return jr_fail(JR_EINVAL, "compare takes 2 to 16 runs (got %d)", n);
    run_t *r = jr_calloc((size_t)n, sizeof *r);
    if (!r) return JR_ENOMEM;
    jr_status st = JR_OK;
    int loaded = 0;
    for (; loaded < n && !st; loaded++) {
        st = load_run(&r[loaded], runs[loaded]);
        if (!st && r[loaded].kind == KIND_DEMO)
            st = jr_fail(JR_EUNSUPPORTED, "%s: a demo run (compare its GRPO runs, e.g. %s/grpo-unbiased)", runs[loaded], runs[loaded]);
    }
    /* the same last name twice (a/run, b/run): label by the whole path */
    for (int i = 0; !st && i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && !strcmp(r[i].label, r[j].label)) snprintf(r[i].label, sizeof r[i].label, "%s", r[i].path);
    if (!st) {
        jr_strbuf b = {0};
        page_head(&b, "judgerl compare", r, n);
        config_tables(&b, r, n);
        for (int i = 0; i < n; i++)
            if (r[i].kind == KIND_GRADE) {
                jr_strbuf_addf(&b, "<h3>");
                swatch(&b, i);
                jr_html_escape(&b, r[i].label);
                jr_strbuf_addf(&b, "</h3>\n");
                grade_section(&b, &r[i], i);
            }
        charts(&b, r, n, smoothing);
        samples_side_by_side(&b, r, n);
        st = page_write(&b, out_html);
        free(b.p);
        for (int i = 0; !st && text && i < n; i++) text_line(text, &r[i]);
    }
    for (int i = 0; i < loaded; i++) free_run(&r[i]);
    free(r);
    return st;
}
