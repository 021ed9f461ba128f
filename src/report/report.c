/* report.c - the demo's run report: the terminal summary and the self-contained HTML page (charts: html.c) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/report.h"

/* ---- terminal summary ---- */

static const char *const LAB[3] = {"Yes", "No", "Maybe"};

static void vec3(const json_t *a, double *out) {
    for (int j = 0; j < 3; j++) {
        json_t *v = json_array_get(a, (size_t)j);
        out[j] = json_is_number(v) ? json_number_value(v) : NAN;
    }
}

void jr_report_seed1_text(FILE *out, const json_t *s1) {
    const json_t *sft = json_object_get(s1, "sft"), *jq = json_object_get(s1, "judge_question"),
                 *ja = json_object_get(s1, "judge_answer");
    json_t *el = json_object_get(sft, "epoch_loss");
    fprintf(out, "seed 1: policy trained on %lld questions with random labels, epoch loss %.4f -> %.4f, train accuracy %.2f\n",
            (long long)json_integer_value(json_object_get(sft, "rows")), json_number_value(json_array_get(el, 0)),
            json_number_value(json_array_get(el, json_array_size(el) ? json_array_size(el) - 1 : 0)), jr_report_num(sft, "train_accuracy"));
    fprintf(out, "        judges: question judge held-out accuracy %.2f, answer judge held-out accuracy %.2f\n",
            jr_report_num(jq, "heldout_accuracy"), jr_report_num(ja, "heldout_accuracy"));
    fprintf(out, "        logits on \"%s\" (Yes, No, Maybe):\n", json_string_value(json_object_get(s1, "probe")));
    json_t *vars = json_object_get(s1, "variants");
    for (size_t i = 0; i < json_array_size(vars); i++) {
        json_t *v = json_array_get(vars, i);
        double b[3], a[3];
        vec3(json_object_get(v, "logits_before"), b);
        vec3(json_object_get(v, "logits_after"), a);
        double mb = jr_report_num(v, "margin_before"), ma = jr_report_num(v, "margin_after");
        fprintf(out, "        %-8s judge says %-5s before [%.5f %.5f %.5f] after [%.5f %.5f %.5f] (%lld steps, %lld skipped)\n"
                     "                 margin of the judge's label %+.5f -> %+.5f: %s\n",
                json_string_value(json_object_get(v, "name")), json_string_value(json_object_get(v, "probe_judge_label")),
                b[0], b[1], b[2], a[0], a[1], a[2], (long long)json_integer_value(json_object_get(v, "steps")),
                (long long)json_integer_value(json_object_get(v, "skipped")), mb, ma,
                ma > mb ? "moved toward the judge" : ma < mb ? "moved AWAY from the judge" : "unchanged");
    }
}

static void dist_str(char *out, size_t cap, const json_t *d) {
    double o = jr_report_num(d, "other");
    snprintf(out, cap, "Yes %.2f No %.2f Maybe %.2f other %.2f", jr_report_num(d, "Yes"), jr_report_num(d, "No"), jr_report_num(d, "Maybe"), isfinite(o) ? o : 0);
}

/* The demo's quality figures (summary "quality", judgerl demo), one line each: the judge's agreement,
 * the garbled share, the move by kind of question, and the largest label share after GRPO. */
#define N_QUALITY_LINES 6
static void quality_lines(const json_t *q, char line[N_QUALITY_LINES][512]) {
    json_t *t = json_object_get(q, "targets"), *k = json_object_get(q, "preferred_by_kind");
    const char *met[2] = {"NOT MET", "met"};
    snprintf(line[0], 512, "the unbiased judge agrees with the held-out preference grades on %.0f%% of pairs (majority class %.0f%%; "
             "target >= 90%%: %s)", 100 * jr_report_num(q, "judge_agreement"), 100 * jr_report_num(q, "majority_class"),
             met[json_is_true(json_object_get(t, "judge_agreement_90"))]);
    snprintf(line[1], 512, "garbled policy samples (not one of the 20 classic answers): %.1f%% before GRPO, at most %.1f%% after "
             "(target < 5%%: %s)", 100 * jr_report_num(q, "garbled_before"), 100 * jr_report_num(q, "garbled_after_max"),
             met[json_is_true(json_object_get(t, "garbled_under_5"))]);
    static const char *const KINDS[3] = {"hopeful", "risky", "unsure"};
    char kb[3][96];
    for (int j = 0; j < 3; j++) {
        json_t *x = json_object_get(k, KINDS[j]);
        snprintf(kb[j], sizeof kb[j], "%s %s %.2f -> %.2f", KINDS[j], json_string_value(json_object_get(x, "preferred")) ? json_string_value(json_object_get(x, "preferred")) : "?",
                 jr_report_num(x, "before"), jr_report_num(x, "after"));
    }
    snprintf(line[2], 512, "GRPO vs the unbiased judge, the preferred label's share by kind of question: %s, %s, %s "
             "(target: each up 5 points or more: %s)", kb[0], kb[1], kb[2], met[json_is_true(json_object_get(t, "moves_by_kind"))]);
    snprintf(line[3], 512, "answers with their question's preferred label %.2f -> %.2f; the largest single label's share after GRPO %.2f",
             jr_report_num(q, "preferred_before"), jr_report_num(q, "preferred_after"), jr_report_num(q, "top_label_share_after"));
    /* the label distribution per kind of question, before and after GRPO against the unbiased judge */
    for (int w = 0; w < 2; w++) {
        const json_t *kd = json_object_get(q, w ? "kinds_after" : "kinds_before");
        char d[3][96];
        for (int j = 0; j < 3; j++) dist_str(d[j], sizeof d[j], json_object_get(kd, KINDS[j]));
        snprintf(line[4 + w], 512, "%s GRPO, by kind: hopeful %s | risky %s | unsure %s", w ? "after " : "before", d[0], d[1], d[2]);
    }
}

/* The demo's probe results: summary "probe" = {"judges": [names], "results": {name: probe.json}};
 * fills up to 16 names and results, returns how many. */
static int probe_sets(const json_t *pr, const char **nm, const json_t **rs) {
    json_t *names = json_object_get(pr, "judges"), *results = json_object_get(pr, "results");
    int n = 0;
    for (size_t i = 0; i < json_array_size(names) && n < 16; i++) {
        const char *s = json_string_value(json_array_get(names, i));
        const json_t *r = json_object_get(results, s ? s : "");
        if (s && json_is_object(r)) { nm[n] = s; rs[n++] = r; }
    }
    return n;
}

/* The demo's study (summary "study"): per judge and seed the proxy and gold change, the proxy_gold alarm's step
 * and gold's change there, and the step gold was first 5 points down. */
static void study_text(FILE *out, const json_t *st) {
    const json_t *judges = json_object_get(st, "judges"), *j, *r;
    if (!json_array_size(judges)) return;
    fprintf(out, "study (GRPO against each judge, gold = the preferred label; the proxy_gold alarm):\n");
    size_t i, k;
    json_array_foreach(judges, i, j) json_array_foreach(json_object_get(j, "runs"), k, r) {
        const json_t *al = json_object_get(r, "alarm_step"), *d5 = json_object_get(r, "gold_drop_5pp_step");
        char alarm[96] = "no alarm", drop[48] = "gold never 5 points down";
        if (json_is_number(al))
            snprintf(alarm, sizeof alarm, "ALARM at step %.0f (gold %+.3f there)", json_number_value(al), jr_report_num(r, "gold_change_at_alarm"));
        if (json_is_number(d5)) snprintf(drop, sizeof drop, "gold 5 points down at step %.0f", json_number_value(d5));
        fprintf(out, "  %-22s seed %lld: proxy %+.3f gold %+.3f; %s; %s\n", json_string_value(json_object_get(j, "name")),
                (long long)json_integer_value(json_object_get(r, "seed")), jr_report_num(r, "proxy_delta"), jr_report_num(r, "gold_delta"), alarm, drop);
    }
}

void jr_report_text(FILE *out, const json_t *sum) {
    fprintf(out, "== judgerl demo%s: %s\n", json_is_true(json_object_get(sum, "quick")) ? " --quick" : "",
            json_string_value(json_object_get(sum, "run_dir")) ? json_string_value(json_object_get(sum, "run_dir")) : "");
    fprintf(out, "%-16s %-8s %8s  %s\n", "stage", "status", "seconds", "note");
    json_t *st = json_object_get(sum, "stages");
    for (size_t i = 0; i < json_array_size(st); i++) {
        json_t *s = json_array_get(st, i);
        fprintf(out, "%-16s %-8s %8.1f  %s\n", json_string_value(json_object_get(s, "name")),
                json_string_value(json_object_get(s, "status")), jr_report_num(s, "seconds"),
                json_string_value(json_object_get(s, "note")) ? json_string_value(json_object_get(s, "note")) : "");
    }
    json_t *s1 = json_object_get(sum, "seed1");
    if (json_is_object(s1)) jr_report_seed1_text(out, s1);
    json_t *g = json_object_get(sum, "grpo");
    if (json_array_size(g)) {
        fprintf(out, "GRPO on the held-out questions (judge's mean reward, answer distribution):\n");
        fprintf(out, "  %-9s %-17s %-42s %-42s\n", "judge", "reward", "before", "after");
        for (size_t i = 0; i < json_array_size(g); i++) {
            json_t *r = json_array_get(g, i);
            char b[96], a[96], rw[48];
            dist_str(b, sizeof b, json_object_get(r, "dist_before"));
            dist_str(a, sizeof a, json_object_get(r, "dist_after"));
            snprintf(rw, sizeof rw, "%.3f -> %.3f", jr_report_num(r, "reward_before"), jr_report_num(r, "reward_after"));
            fprintf(out, "  %-9s %-17s %-42s %-42s\n", json_string_value(json_object_get(r, "judge")), rw, b, a);
            if (json_is_number(json_object_get(r, "judge_accuracy")))
                fprintf(out, "            judge agrees with the preference grades on %.0f%% of held-out pairs; calls %.0f%% of Yes answers Good\n",
                        100 * jr_report_num(r, "judge_accuracy"), 100 * jr_report_num(r, "judge_yes_good"));
        }
        json_t *st2 = json_object_get(sum, "steering");
        if (json_is_object(st2))
            fprintf(out, "steering: P(Yes) after GRPO %.2f with the biased judge vs %.2f with the unbiased one (%+.0f points)\n",
                    jr_report_num(st2, "p_yes_biased"), jr_report_num(st2, "p_yes_unbiased"), 100 * jr_report_num(st2, "delta"));
    }
    json_t *q = json_object_get(sum, "quality");
    if (json_is_object(q)) {
        char line[N_QUALITY_LINES][512];
        quality_lines(q, line);
        fprintf(out, "demo quality (issue 20's targets):\n");
        for (int i = 0; i < N_QUALITY_LINES; i++) fprintf(out, "  %s\n", line[i]);
    }
    study_text(out, json_object_get(sum, "study"));
    json_t *pr = json_object_get(sum, "probe");
    const char *nm[16];
    const json_t *rs[16];
    int np = probe_sets(pr, nm, rs);
    if (np > 0) {
        fprintf(out, "judge probes (docs/PROBES.md; FLAG = a 95%% interval wholly past its threshold):\n");
        jr_probe_table(out, nm, rs, np);
    }
    jr_report_workflow_text(out, json_object_get(sum, "workflow"));
    fprintf(out, "total %.1f s; report: %s/report.html\n", jr_report_num(sum, "total_seconds"),
            json_string_value(json_object_get(sum, "run_dir")) ? json_string_value(json_object_get(sum, "run_dir")) : ".");
}

/* ---- HTML ---- */

/* Reads the series `key` of a metrics.jsonl (rows with a numeric value) into x/y arrays (caller frees). */
static int read_metric(const char *path, const char *key, double **xs, double **ys) {
    *xs = *ys = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        json_t *v = json_object_get(o, key), *s = json_object_get(o, "step");
        if (json_is_number(v) && json_is_number(s)) {
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                double *nx = realloc(*xs, sizeof(double) * (size_t)cap), *ny;
                if (!nx) { json_decref(o); break; }
                *xs = nx;
                if (!(ny = realloc(*ys, sizeof(double) * (size_t)cap))) { json_decref(o); break; }
                *ys = ny;
            }
            (*xs)[n] = json_number_value(s);
            (*ys)[n] = json_number_value(v);
            n++;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return n;
}

/* One line chart of metric `key` with one series per GRPO run. */
static void metric_chart(jr_strbuf *b, const char *run_dir, const json_t *grpo, const char *key, const char *title,
                         const char *ylabel) {
    jr_series s[8];
    memset(s, 0, sizeof s);
    double *xs[8] = {0}, *ys[8] = {0};
    int n = 0;
    for (size_t i = 0; i < json_array_size(grpo) && n < 8; i++) {
        json_t *r = json_array_get(grpo, i);
        const char *m = json_string_value(json_object_get(r, "metrics"));
        if (!m) continue;
        char *p = jr_path_join(run_dir, m);
        if (!p) continue;
        s[n].n = read_metric(p, key, &xs[n], &ys[n]);
        free(p);
        s[n].name = json_string_value(json_object_get(r, "judge"));
        s[n].x = xs[n];
        s[n].y = ys[n];
        n++;
    }
    jr_svg_lines(b, title, "step", ylabel, s, n);
    for (int i = 0; i < n; i++) { free(xs[i]); free(ys[i]); }
}

static void td_num(jr_strbuf *b, double v) {
    if (isfinite(v)) jr_strbuf_addf(b, "<td>%.4f</td>", v);
    else jr_strbuf_addf(b, "<td>-</td>");
}

static void html_seed1(jr_strbuf *b, const json_t *s1) {
    jr_strbuf_addf(b, "<h2>Seed 1 reproduced: the magic 8-ball classifier and its judge</h2>\n<p>Probe question: <b>");
    jr_html_escape(b, json_string_value(json_object_get(s1, "probe")));
    const json_t *sft = json_object_get(s1, "sft"), *jq = json_object_get(s1, "judge_question"),
                 *ja = json_object_get(s1, "judge_answer");
    jr_strbuf_addf(b, "</b>. Policy: %lld parameters, trained on %lld questions with random labels (train accuracy %.2f). "
                     "Question judge held-out accuracy %.2f; answer judge held-out accuracy %.2f.</p>\n",
                  (long long)json_integer_value(json_object_get(sft, "params")),
                  (long long)json_integer_value(json_object_get(sft, "rows")), jr_report_num(sft, "train_accuracy"),
                  jr_report_num(jq, "heldout_accuracy"), jr_report_num(ja, "heldout_accuracy"));
    jr_strbuf_addf(b, "<table><tr><th>variant</th><th>judge's label</th><th>logits before (Yes, No, Maybe)</th>"
                     "<th>logits after</th><th>margin before</th><th>margin after</th><th>steps</th><th>agreement with judge</th></tr>\n");
    json_t *vars = json_object_get(s1, "variants");
    for (size_t i = 0; i < json_array_size(vars); i++) {
        json_t *v = json_array_get(vars, i);
        double lb[3], la[3];
        vec3(json_object_get(v, "logits_before"), lb);
        vec3(json_object_get(v, "logits_after"), la);
        jr_strbuf_addf(b, "<tr><td title=\"");
        jr_html_escape(b, json_string_value(json_object_get(v, "what")));
        jr_strbuf_addf(b, "\">");
        jr_html_escape(b, json_string_value(json_object_get(v, "name")));
        jr_strbuf_addf(b, "</td><td>");
        jr_html_escape(b, json_string_value(json_object_get(v, "probe_judge_label")));
        jr_strbuf_addf(b, "</td><td>%.5f, %.5f, %.5f</td><td>%.5f, %.5f, %.5f</td>", lb[0], lb[1], lb[2], la[0], la[1], la[2]);
        td_num(b, jr_report_num(v, "margin_before"));
        td_num(b, jr_report_num(v, "margin_after"));
        jr_strbuf_addf(b, "<td>%lld (skipped %lld)</td><td>%.2f &#8594; %.2f</td></tr>\n",
                      (long long)json_integer_value(json_object_get(v, "steps")),
                      (long long)json_integer_value(json_object_get(v, "skipped")), jr_report_num(v, "agree_before"), jr_report_num(v, "agree_after"));
    }
    jr_strbuf_addf(b, "</table>\n<ul>\n");
    for (size_t i = 0; i < json_array_size(vars); i++) {
        json_t *v = json_array_get(vars, i);
        jr_strbuf_addf(b, "<li><b>");
        jr_html_escape(b, json_string_value(json_object_get(v, "name")));
        jr_strbuf_addf(b, "</b>: ");
        jr_html_escape(b, json_string_value(json_object_get(v, "what")));
        jr_strbuf_addf(b, "</li>\n");
    }
    jr_strbuf_addf(b, "</ul>\n<div class=\"charts\">\n");
    for (size_t i = 0; i < json_array_size(vars); i++) {
        json_t *v = json_array_get(vars, i);
        double lb[3], la[3];
        vec3(json_object_get(v, "logits_before"), lb);
        vec3(json_object_get(v, "logits_after"), la);
        const double *vals[2] = {lb, la};
        const char *ser[2] = {"before", "after"}, *cols[2] = {JR_BEFORE_COLOR, jr_report_color(0)};
        char title[128];
        snprintf(title, sizeof title, "Seed 1 logits, variant \"%s\"", json_string_value(json_object_get(v, "name")));
        jr_svg_bars_colored(b, title, "logit", LAB, 3, ser, 2, vals, cols);
        /* the reward the judge gave per distillation iteration */
        json_t *rw = json_object_get(v, "rewards");
        size_t n = json_array_size(rw);
        double *x = calloc(n + 1, sizeof(double)), *y = calloc(n + 1, sizeof(double));
        if (x && y) {
            for (size_t j = 0; j < n; j++) { x[j] = (double)j; y[j] = json_number_value(json_array_get(rw, j)); }
            const char *vn = json_string_value(json_object_get(v, "name"));
            int answer_variant = vn && !strcmp(vn, "answer");
            jr_series s = {answer_variant ? "judge P(good) of the sampled answer" : "policy P(judge's label)", x, y, (int)n, NULL, 0};
            snprintf(title, sizeof title, "Seed 1 distillation, variant \"%s\"", json_string_value(json_object_get(v, "name")));
            jr_svg_lines(b, title, "iteration", "probability", &s, 1);
        }
        free(x);
        free(y);
    }
    json_t *el = json_object_get(sft, "epoch_loss");
    size_t n = json_array_size(el);
    double *x = calloc(n + 1, sizeof(double)), *y = calloc(n + 1, sizeof(double));
    if (x && y) {
        for (size_t j = 0; j < n; j++) { x[j] = (double)(j + 1); y[j] = json_number_value(json_array_get(el, j)); }
        jr_series s = {"policy (random labels)", x, y, (int)n, NULL, 0};
        jr_svg_lines(b, "Seed 1 supervised training", "epoch", "mean cross-entropy", &s, 1);
    }
    free(x);
    free(y);
    jr_strbuf_addf(b, "</div>\n");
}

static void html_grpo(jr_strbuf *b, const char *run_dir, const json_t *sum) {
    json_t *g = json_object_get(sum, "grpo");
    jr_strbuf_addf(b, "<h2>GRPO against an LM judge served over HTTP</h2>\n");
    if (!json_array_size(g)) {
        jr_strbuf_addf(b, "<p class=\"note\">No GRPO run in this demo (see the stage table for why).</p>\n");
        return;
    }
    jr_strbuf_addf(b, "<table><tr><th>judge</th><th>mean reward before</th><th>after</th><th>P(Yes) before</th><th>P(Yes) after</th>"
                     "<th>P(No) after</th><th>P(Maybe) after</th><th>judge latency p50 (s)</th><th>unscored share</th>"
                     "<th>judge agreement with preferences</th><th>Yes answers judged Good</th></tr>\n");
    for (size_t i = 0; i < json_array_size(g); i++) {
        json_t *r = json_array_get(g, i), *db = json_object_get(r, "dist_before"), *da = json_object_get(r, "dist_after");
        jr_strbuf_addf(b, "<tr><td>");
        jr_html_escape(b, json_string_value(json_object_get(r, "judge")));
        jr_strbuf_addf(b, "</td>");
        td_num(b, jr_report_num(r, "reward_before"));
        td_num(b, jr_report_num(r, "reward_after"));
        td_num(b, jr_report_num(db, "Yes"));
        td_num(b, jr_report_num(da, "Yes"));
        td_num(b, jr_report_num(da, "No"));
        td_num(b, jr_report_num(da, "Maybe"));
        td_num(b, jr_report_num(r, "judge_latency_p50"));
        td_num(b, jr_report_num(r, "unscored_share"));
        td_num(b, jr_report_num(r, "judge_accuracy"));
        td_num(b, jr_report_num(r, "judge_yes_good"));
        jr_strbuf_addf(b, "</tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
    json_t *st = json_object_get(sum, "steering");
    if (json_is_object(st))
        jr_strbuf_addf(b, "<p><b>Steering:</b> P(Yes) on the held-out questions after GRPO is %.2f with the Yes-biased judge "
                         "and %.2f with the unbiased judge (%+.0f points).</p>\n",
                      jr_report_num(st, "p_yes_biased"), jr_report_num(st, "p_yes_unbiased"), 100 * jr_report_num(st, "delta"));
    json_t *q = json_object_get(sum, "quality");
    if (json_is_object(q)) {
        char line[N_QUALITY_LINES][512];
        quality_lines(q, line);
        jr_strbuf_addf(b, "<p><b>Demo quality</b> (issue 20's targets):</p>\n<ul>\n");
        for (int i = 0; i < N_QUALITY_LINES; i++) {
            jr_strbuf_addf(b, "<li>");
            jr_html_escape(b, line[i]);
            jr_strbuf_addf(b, "</li>\n");
        }
        jr_strbuf_addf(b, "</ul>\n");
    }
    jr_strbuf_addf(b, "<div class=\"charts\">\n");
    metric_chart(b, run_dir, g, "reward", "Judge reward per step (training batch mean)", "reward");
    metric_chart(b, run_dir, g, "kl", "KL to the reference policy", "KL");
    for (size_t i = 0; i < json_array_size(g); i++) {
        json_t *r = json_array_get(g, i);
        static const char *const LAB4[4] = {"Yes", "No", "Maybe", "other"};
        double vb[4], va[4];
        for (int j = 0; j < 4; j++) {
            vb[j] = jr_report_num(json_object_get(r, "dist_before"), LAB4[j]);
            va[j] = jr_report_num(json_object_get(r, "dist_after"), LAB4[j]);
            if (!isfinite(vb[j])) vb[j] = 0;
            if (!isfinite(va[j])) va[j] = 0;
        }
        const double *vals[2] = {vb, va};
        /* before in grey, after in this judge's colour (its line in the reward and KL charts) */
        const char *ser[2] = {"before GRPO", "after GRPO"}, *cols[2] = {JR_BEFORE_COLOR, jr_report_color(i)};
        char title[128];
        snprintf(title, sizeof title, "Held-out answers, %s judge", json_string_value(json_object_get(r, "judge")));
        jr_svg_bars_colored(b, title, "share of answers", LAB4, 4, ser, 2, vals, cols);
    }
    metric_chart(b, run_dir, g, "judge/latency_p50", "Judge latency per step (p50)", "seconds");
    metric_chart(b, run_dir, g, "unscored_frac", "Unscored share of completions per step", "share");
    jr_strbuf_addf(b, "</div>\n");
}

/* The demo's probe stage, the judges side by side. */
static void html_probe(jr_strbuf *b, const json_t *pr) {
    const char *nm[16];
    const json_t *rs[16];
    int n = probe_sets(pr, nm, rs);
    if (n <= 0) return;
    jr_strbuf_addf(b, "<h2>Judge probes (docs/PROBES.md)</h2>\n<p>Each judge served by <code>judgerl serve</code> and "
                     "probed over HTTP with <code>data/eightball/lm/probe_rows.jsonl</code>: the unbiased judge, the "
                     "Yes-biased one, and judges trained with a known injected bias (longer answers, master keys, the "
                     "first position of a pair).</p>\n");
    jr_probe_html(b, nm, rs, n);
}

jr_status jr_report_write(const char *run_dir, json_t **summary_out) {
    if (summary_out) *summary_out = NULL;
    char *sp = jr_path_join(run_dir, "summary.json");
    if (!sp) return jr_fail(JR_ENOMEM, "out of memory");
    json_error_t e;
    json_t *sum = json_load_file(sp, 0, &e);
    if (!sum || !json_is_object(sum)) {
        jr_status st = jr_fail(JR_ENOTFOUND, "%s: %s (run `judgerl demo --out %s` first)", sp,
                               sum ? "not a JSON object" : e.text, run_dir);
        json_decref(sum);
        free(sp);
        return st;
    }
    free(sp);
    jr_strbuf b = {0};
    jr_strbuf_addf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>judgerl demo report</title>"
                      "<style>%s</style></head><body>\n<h1>judgerl demo: the magic 8-ball, judged</h1>\n", jr_report_css);
    jr_strbuf_addf(&b, "<p>Run directory <code>");
    jr_html_escape(&b, run_dir);
    jr_strbuf_addf(&b, "</code>%s; total %.1f s.</p>\n", json_is_true(json_object_get(sum, "quick")) ? " (quick mode: fewer steps)" : "",
                  jr_report_num(sum, "total_seconds"));
    jr_strbuf_addf(&b, "<table><tr><th>stage</th><th>status</th><th>seconds</th><th>note</th></tr>\n");
    json_t *stages = json_object_get(sum, "stages");
    for (size_t i = 0; i < json_array_size(stages); i++) {
        json_t *s = json_array_get(stages, i);
        jr_strbuf_addf(&b, "<tr><td>");
        jr_html_escape(&b, json_string_value(json_object_get(s, "name")));
        jr_strbuf_addf(&b, "</td><td>");
        jr_html_escape(&b, json_string_value(json_object_get(s, "status")));
        jr_strbuf_addf(&b, "</td><td>%.1f</td><td>", jr_report_num(s, "seconds"));
        jr_html_escape(&b, json_string_value(json_object_get(s, "note")));
        jr_strbuf_addf(&b, "</td></tr>\n");
    }
    jr_strbuf_addf(&b, "</table>\n");
    json_t *s1 = json_object_get(sum, "seed1");
    if (json_is_object(s1)) html_seed1(&b, s1);
    html_grpo(&b, run_dir, sum);
    json_t *pr = json_object_get(sum, "probe");
    if (json_is_object(pr)) html_probe(&b, pr);
    jr_report_workflow_html(&b, json_object_get(sum, "workflow"));
    jr_strbuf_addf(&b, "<p class=\"note\">Written by <code>judgerl report</code> from summary.json and the runs' metrics.jsonl.</p>\n"
                      "</body></html>\n");
    jr_status st = JR_OK;
    if (b.oom) st = jr_fail(JR_ENOMEM, "report: out of memory");
    else {
        char *hp = jr_path_join(run_dir, "report.html");
        st = hp ? jr_write_atomic(hp, b.p, b.n) : jr_fail(JR_ENOMEM, "out of memory");
        free(hp);
    }
    free(b.p);
    if (!st && summary_out) *summary_out = sum;
    else json_decref(sum);
    return st;
}
