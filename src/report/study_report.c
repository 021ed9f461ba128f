/* study_report.c - the HTML page of `judgerl study`: per judge proxy vs gold, divergence, drift, alarms and
 * probe results side by side (inline CSS and SVG) */
#include "judgerl/study_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/report.h"

static void td(jr_strbuf *b, double v, const char *fmt) {
    if (isnan(v)) jr_strbuf_addf(b, "<td>-</td>");
    else { jr_strbuf_addf(b, "<td>"); jr_strbuf_addf(b, fmt, v); jr_strbuf_addf(b, "</td>"); }
}

static void td_text(jr_strbuf *b, const char *t) {
    jr_strbuf_addf(b, "<td>");
    jr_html_escape(b, t ? t : "");
    jr_strbuf_addf(b, "</td>");
}

/* A chart of one mean series, one line per judge. */
static void chart(jr_strbuf *b, const json_t *judges, const char *key, const char *title, const char *ylabel) {
    size_t n = json_array_size(judges);
    jr_series *s = calloc(n + 1, sizeof *s);
    double **xs = calloc(n + 1, sizeof *xs), **ys = calloc(n + 1, sizeof *ys);
    int any = 0;
    for (size_t j = 0; s && xs && ys && j < n; j++) {
        const json_t *jd = json_array_get(judges, j), *m = json_object_get(jd, "mean");
        const json_t *st = json_object_get(m, "step"), *v = json_object_get(m, key);
        size_t k = json_array_size(st);
        xs[j] = calloc(k + 1, sizeof **xs);
        ys[j] = calloc(k + 1, sizeof **ys);
        if (!xs[j] || !ys[j]) continue;
        for (size_t i = 0; i < k; i++) {
            xs[j][i] = (double)json_integer_value(json_array_get(st, i));
            const json_t *y = json_array_get(v, i);
            ys[j][i] = json_is_number(y) ? json_number_value(y) : NAN;
            any |= !isnan(ys[j][i]);
        }
        s[j] = (jr_series){json_string_value(json_object_get(jd, "name")), xs[j], ys[j], (int)k, NULL, 0};
    }
    if (s && any) jr_svg_lines(b, title, "step", ylabel, s, (int)n);
    for (size_t j = 0; xs && ys && j < n; j++) { free(xs[j]); free(ys[j]); }
    free(xs);
    free(ys);
    free(s);
}

static void alarms_cell(jr_strbuf *b, const json_t *jd, int n_runs) {
    const json_t *first = json_object_get(jd, "alarm_first_step"), *cnt = json_object_get(jd, "alarm_runs");
    const char *k;
    json_t *v;
    int any = 0;
    jr_strbuf_addf(b, "<td>");
    json_object_foreach((json_t *)first, k, v) {
        if (!json_is_integer(v)) continue;
        jr_strbuf_addf(b, "%s", any ? "<br>" : "");
        jr_html_escape(b, k);
        jr_strbuf_addf(b, " at step %lld (%lld of %d runs)", (long long)json_integer_value(v),
                      (long long)json_integer_value(json_object_get(cnt, k)), n_runs);
        any = 1;
    }
    jr_strbuf_addf(b, "%s</td>", any ? "" : "none");
}

static void summary_table(jr_strbuf *b, const json_t *judges) {
    jr_strbuf_addf(b, "<table><tr><th>judge</th><th>proxy start &rarr; end</th><th>gold start &rarr; end</th>"
                     "<th>divergence at the end</th><th>length (bytes)</th><th>markdown share &Delta;</th><th>list share &Delta;</th>"
                     "<th>top label share</th><th>KL to the start</th><th>alarms (first step)</th>"
                     "<th>gold down 5 points at step</th></tr>\n");
    for (size_t j = 0; j < json_array_size(judges); j++) {
        const json_t *jd = json_array_get(judges, j), *f = json_object_get(jd, "final"), *runs = json_object_get(jd, "runs");
        jr_strbuf_addf(b, "<tr>");
        td_text(b, json_string_value(json_object_get(jd, "name")));
        jr_strbuf_addf(b, "<td>%.3f &rarr; %.3f</td><td>%.3f &rarr; %.3f</td>", jr_report_num(f, "proxy_start"), jr_report_num(f, "proxy_end"),
                      jr_report_num(f, "gold_start"), jr_report_num(f, "gold_end"));
        td(b, jr_report_num(f, "divergence_end"), "%+.3f");
        jr_strbuf_addf(b, "<td>%.1f &rarr; %.1f</td>", jr_report_num(f, "length_start"), jr_report_num(f, "length_end"));
        td(b, jr_report_num(f, "markdown_delta"), "%+.3f");
        td(b, jr_report_num(f, "list_delta"), "%+.3f");
        jr_strbuf_addf(b, "<td>%.2f &rarr; %.2f</td>", jr_report_num(f, "label_max_share_start"), jr_report_num(f, "label_max_share_end"));
        td(b, jr_report_num(f, "kl_end"), "%.4f");
        alarms_cell(b, jd, (int)json_array_size(runs));
        jr_strbuf_addf(b, "<td>");
        for (size_t r = 0; r < json_array_size(runs); r++) {
            double s = jr_report_num(json_array_get(runs, r), "gold_drop_5pp_step");
            jr_strbuf_addf(b, "%s", r ? ", " : "");
            if (isnan(s)) jr_strbuf_addf(b, "never");
            else jr_strbuf_addf(b, "%.0f", s);
        }
        jr_strbuf_addf(b, "</td></tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
}

/* Per judge and seed: the phrases that rose most and the labels at the start and the end. */
static void drift_tables(jr_strbuf *b, const json_t *judges) {
    jr_strbuf_addf(b, "<table><tr><th>judge</th><th>seed</th><th>phrases whose share rose most (start &rarr; end)</th>"
                     "<th>labels at the start</th><th>labels at the end</th></tr>\n");
    for (size_t j = 0; j < json_array_size(judges); j++) {
        const json_t *jd = json_array_get(judges, j), *runs = json_object_get(jd, "runs");
        for (size_t r = 0; r < json_array_size(runs); r++) {
            const json_t *run = json_array_get(runs, r), *top = json_object_get(run, "top_ngrams_end");
            jr_strbuf_addf(b, "<tr>");
            td_text(b, json_string_value(json_object_get(jd, "name")));
            jr_strbuf_addf(b, "<td>%lld</td><td>", (long long)json_integer_value(json_object_get(run, "seed")));
            for (size_t i = 0; i < json_array_size(top) && i < 5; i++) {
                const json_t *t = json_array_get(top, i);
                jr_strbuf_addf(b, "%s&ldquo;", i ? "; " : "");
                jr_html_escape(b, json_string_value(json_object_get(t, "ngram")));
                jr_strbuf_addf(b, "&rdquo; %.2f&rarr;%.2f", jr_report_num(t, "base"), jr_report_num(t, "now"));
            }
            jr_strbuf_addf(b, "</td>");
            for (int e = 0; e < 2; e++) {
                const json_t *lab = json_object_get(run, e ? "labels_end" : "labels_start");
                const char *k;
                json_t *v;
                int shown = 0;
                jr_strbuf_addf(b, "<td>");
                json_object_foreach((json_t *)lab, k, v) {
                    if (json_number_value(v) < 0.05 || shown == 6) continue;
                    jr_strbuf_addf(b, "%s", shown++ ? ", " : "");
                    jr_html_escape(b, k);
                    jr_strbuf_addf(b, " %.2f", json_number_value(v));
                }
                jr_strbuf_addf(b, "</td>");
            }
            jr_strbuf_addf(b, "</tr>\n");
        }
    }
    jr_strbuf_addf(b, "</table>\n");
}

static void probes(jr_strbuf *b, const json_t *judges) {
    const char *nm[64];
    const json_t *rs[64];
    int n = 0;
    for (size_t j = 0; j < json_array_size(judges) && n < 64; j++) {
        const json_t *jd = json_array_get(judges, j), *p = json_object_get(jd, "probe");
        if (!json_is_object(p)) continue;
        nm[n] = json_string_value(json_object_get(jd, "name"));
        rs[n++] = p;
    }
    if (!n) return;
    jr_strbuf_addf(b, "<h2>Each judge's probes (docs/PROBES.md)</h2>\n");
    jr_probe_html(b, nm, rs, n);
}

jr_status jr_study_html_write(const char *path, const json_t *study) {
    const json_t *judges = json_object_get(study, "judges");
    jr_strbuf b = {0};
    jr_strbuf_addf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>judgerl study</title>"
                      "<style>%s</style></head><body>\n<h1>judgerl study: one GRPO config, several judges</h1>\n<p>Config <code>",
                  jr_report_css);
    jr_html_escape(&b, json_string_value(json_object_get(study, "train")));
    jr_strbuf_addf(&b, "</code>, seeds");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(study, "seeds"), i, v) jr_strbuf_addf(&b, " %lld", (long long)json_integer_value(v));
    jr_strbuf_addf(&b, "; every run with");
    json_array_foreach(json_object_get(study, "set"), i, v) {
        jr_strbuf_addf(&b, " <code>");
        jr_html_escape(&b, json_string_value(v));
        jr_strbuf_addf(&b, "</code>");
    }
    jr_strbuf_addf(&b, ". Figures are held-out evaluations (step 0: the starting policy), means over the seeds; "
                      "divergence = (proxy - proxy at step 0) - (gold - gold at step 0).</p>\n");
    summary_table(&b, judges);
    jr_strbuf_addf(&b, "<div class=\"charts\">\n");
    chart(&b, judges, "proxy", "Proxy reward (the judge's), held out", "reward");
    chart(&b, judges, "gold", "Gold metric, held out", "gold");
    chart(&b, judges, "divergence", "Divergence: proxy gain - gold gain", "points");
    chart(&b, judges, "length", "Completion length", "bytes");
    chart(&b, judges, "label_max_share", "Share of the most frequent label", "share");
    chart(&b, judges, "phrase_rise", "Largest rise of one phrase's share", "share");
    chart(&b, judges, "markdown", "Completions with markdown", "share");
    chart(&b, judges, "list", "Completions with a list", "share");
    chart(&b, judges, "kl", "KL to the start (training batch; needs grpo.beta > 0)", "KL");
    jr_strbuf_addf(&b, "</div>\n<h2>Drift per run</h2>\n");
    drift_tables(&b, judges);
    probes(&b, judges);
    jr_strbuf_addf(&b, "<p class=\"note\">Written by <code>judgerl study</code>; the figures are in study.json.</p>\n</body></html>\n");
    jr_status st = b.oom ? jr_fail(JR_ENOMEM, "%s: out of memory", path) : jr_write_atomic(path, b.p, b.n);
    free(b.p);
    return st;
}

void jr_study_table(FILE *out, const json_t *s) {
    fprintf(out, "%-16s %-17s %-17s %-10s %-15s %s\n", "judge", "proxy start->end", "gold start->end", "divergence", "length", "alarms (first step)");
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(s, "judges"), i, j) {
        const json_t *f = json_object_get(j, "final");
        double v[7];
        const char *k[7] = {"proxy_start", "proxy_end", "gold_start", "gold_end", "divergence_end", "length_start", "length_end"};
        for (int x = 0; x < 7; x++) v[x] = jr_report_num(f, k[x]);
        fprintf(out, "%-16s %.3f -> %.3f    %.3f -> %.3f    %+.3f     %5.1f -> %5.1f  ", json_string_value(json_object_get(j, "name")),
               v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
        const char *a;
        json_t *st;
        int any = 0;
        json_object_foreach(json_object_get(j, "alarm_first_step"), a, st)
            if (json_is_integer(st)) { fprintf(out, "%s%s@%lld", any++ ? ", " : "", a, (long long)json_integer_value(st)); }
        fprintf(out, "%s\n", any ? "" : "none");
    }
}
