/* probe_report.c - judge probe results (probe.json objects) as a terminal table and an HTML page,
 * one column per judge so biased and unbiased judges read side by side */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/report.h"

/* The union of the keys of results[i]->probes (or of a probe's figures), in first-seen order. */
static json_t *union_keys(const json_t *const *objs, int n) {
    json_t *keys = json_array(), *seen = json_object();
    for (int i = 0; i < n; i++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)objs[i], k, v) {
            (void)v;
            if (json_object_get(seen, k)) continue;
            json_object_set_new(seen, k, json_true());
            json_array_append_new(keys, json_string(k));
        }
    }
    json_decref(seen);
    return keys;
}

static const json_t *probe_of(const json_t *res, const char *name) {
    return json_object_get(json_object_get(res, "probes"), name);
}

/* "0.51 [0.47,0.55] n=470" (probe.json keeps every digit), or "-" when absent. */
static void fmt_fig(char *buf, size_t cap, const json_t *f) {
    json_t *v = json_object_get(f, "value"), *ci = json_object_get(f, "ci95");
    if (!f) { snprintf(buf, cap, "-"); return; }
    long long n = (long long)json_integer_value(json_object_get(f, "n"));
    if (!json_is_number(v)) { snprintf(buf, cap, "n/a n=%lld", n); return; }
    if (json_is_array(ci))
        snprintf(buf, cap, "%.2f [%.2f,%.2f] n=%lld", json_number_value(v), json_number_value(json_array_get(ci, 0)),
                 json_number_value(json_array_get(ci, 1)), n);
    else snprintf(buf, cap, "%.2f n=%lld", json_number_value(v), n);
}

static const char *threshold_of(const json_t *const *results, int n, const char *probe, const char *fig) {
    for (int i = 0; i < n; i++) {
        json_t *t = json_object_get(probe_of(results[i], probe), "thresholds");
        const char *s = json_string_value(json_object_get(t, fig));
        if (!s && !strncmp(fig, "false_positive_rate/", 20)) s = json_string_value(json_object_get(t, "false_positive_rate/*"));
        if (s) return s;
    }
    return "";
}

/* A probe's status for one judge: FLAG, ok, skipped, or - (not run). */
static const char *status_of(const json_t *p) {
    if (!p) return "-";
    if (json_is_string(json_object_get(p, "skipped"))) return "skipped";
    return json_is_true(json_object_get(p, "flag")) ? "FLAG" : "ok";
}

void jr_probe_table(FILE *out, const char *const *names, const json_t *const *results, int n) {
    const json_t *pv[16] = {0};
    if (n > 16) n = 16;
    for (int i = 0; i < n; i++) pv[i] = json_object_get(results[i], "probes");
    json_t *probes = union_keys(pv, n);
    fprintf(out, "%-12s %-30s", "probe", "figure");
    for (int i = 0; i < n; i++) fprintf(out, " %-24s", names[i]);
    fprintf(out, " threshold\n");
    for (size_t p = 0; p < json_array_size(probes); p++) {
        const char *pn = json_string_value(json_array_get(probes, p));
        fprintf(out, "%-12s %-30s", pn, "");
        for (int i = 0; i < n; i++) {
            const json_t *pr = probe_of(results[i], pn);
            char st[160];
            const char *sk = json_string_value(json_object_get(pr, "skipped"));
            long long un = (long long)json_integer_value(json_object_get(pr, "unscored"));
            if (sk) snprintf(st, sizeof st, "skipped");
            else if (un) snprintf(st, sizeof st, "%s (%lld unscored)", status_of(pr), un);
            else snprintf(st, sizeof st, "%s", status_of(pr));
            fprintf(out, " %-24s", st);
        }
        fprintf(out, "\n");
        const char *first = NULL;
        int same = 1;
        for (int i = 0; i < n; i++) {
            const char *sk = json_string_value(json_object_get(probe_of(results[i], pn), "skipped"));
            if (sk && first && strcmp(sk, first)) same = 0;
            if (sk && !first) first = sk;
        }
        for (int i = 0; first && i < n; i++) {
            const char *sk = json_string_value(json_object_get(probe_of(results[i], pn), "skipped"));
            if (!sk) continue;
            if (same) { fprintf(out, "%-12s   skipped: %s\n", "", sk); break; }
            fprintf(out, "%-12s   %s: %s\n", "", names[i], sk);
        }
        const json_t *fv[16];
        for (int i = 0; i < n; i++) fv[i] = json_object_get(probe_of(results[i], pn), "figures");
        json_t *figs = union_keys(fv, n);
        for (size_t f = 0; f < json_array_size(figs); f++) {
            const char *fn = json_string_value(json_array_get(figs, f));
            fprintf(out, "%-12s %-30s", "", fn);
            for (int i = 0; i < n; i++) {
                char b[96];
                fmt_fig(b, sizeof b, json_object_get(fv[i], fn));
                fprintf(out, " %-24s", b);
            }
            fprintf(out, " %s\n", threshold_of(results, n, pn, fn));
        }
        json_decref(figs);
    }
    json_decref(probes);
}

void jr_probe_html(jr_strbuf *b, const char *const *names, const json_t *const *results, int n) {
    const json_t *pv[16] = {0};
    if (n > 16) n = 16;
    for (int i = 0; i < n; i++) pv[i] = json_object_get(results[i], "probes");
    json_t *probes = union_keys(pv, n);
    jr_strbuf_addf(b, "<p class=\"note\">A probe is flagged when the 95%% interval of one of its figures lies wholly "
                     "past the threshold fixed in docs/PROBES.md. Intervals: Wilson for shares, percentile bootstrap "
                     "for means and statistics.</p>\n<table><tr><th>probe</th><th>figure</th>");
    for (int i = 0; i < n; i++) {
        jr_strbuf_addf(b, "<th>");
        jr_html_escape(b, names[i]);
        jr_strbuf_addf(b, "</th>");
    }
    jr_strbuf_addf(b, "<th>threshold</th></tr>\n");
    for (size_t p = 0; p < json_array_size(probes); p++) {
        const char *pn = json_string_value(json_array_get(probes, p));
        jr_strbuf_addf(b, "<tr><th>");
        jr_html_escape(b, pn);
        jr_strbuf_addf(b, "</th><th></th>");
        for (int i = 0; i < n; i++) {
            const json_t *pr = probe_of(results[i], pn);
            const char *sk = json_string_value(json_object_get(pr, "skipped"));
            const char *st = status_of(pr);
            jr_strbuf_addf(b, "<th%s>", !strcmp(st, "FLAG") ? " style=\"background:#fde68a\"" : "");
            jr_html_escape(b, sk ? "skipped: " : st);
            if (sk) jr_html_escape(b, sk);
            long long un = (long long)json_integer_value(json_object_get(pr, "unscored"));
            if (un) jr_strbuf_addf(b, " (%lld unscored)", un);
            jr_strbuf_addf(b, "</th>");
        }
        jr_strbuf_addf(b, "<th></th></tr>\n");
        const json_t *fv[16];
        for (int i = 0; i < n; i++) fv[i] = json_object_get(probe_of(results[i], pn), "figures");
        json_t *figs = union_keys(fv, n);
        for (size_t f = 0; f < json_array_size(figs); f++) {
            const char *fn = json_string_value(json_array_get(figs, f));
            jr_strbuf_addf(b, "<tr><td></td><td>");
            jr_html_escape(b, fn);
            jr_strbuf_addf(b, "</td>");
            for (int i = 0; i < n; i++) {
                char t[96];
                fmt_fig(t, sizeof t, json_object_get(fv[i], fn));
                json_t *by = json_object_get(probe_of(results[i], pn), "flagged_by");
                int hit = 0;
                for (size_t k = 0; k < json_array_size(by); k++) hit |= !strcmp(json_string_value(json_array_get(by, k)), fn);
                jr_strbuf_addf(b, "<td%s>", hit ? " style=\"background:#fde68a;font-weight:bold\"" : "");
                jr_html_escape(b, t);
                jr_strbuf_addf(b, "</td>");
            }
            jr_strbuf_addf(b, "<td>");
            jr_html_escape(b, threshold_of(results, n, pn, fn));
            jr_strbuf_addf(b, "</td></tr>\n");
        }
        json_decref(figs);
    }
    jr_strbuf_addf(b, "</table>\n<div class=\"charts\">\n");
    /* one chart per probe: its thresholded figures (the ones that can flag), a bar per judge */
    for (size_t p = 0; p < json_array_size(probes); p++) {
        const char *pn = json_string_value(json_array_get(probes, p));
        const json_t *fv[16];
        for (int i = 0; i < n; i++) fv[i] = json_object_get(probe_of(results[i], pn), "figures");
        json_t *figs = union_keys(fv, n);
        const char *groups[8];
        double vals[16][8];
        const double *rows[16];
        int ng = 0;
        for (size_t f = 0; f < json_array_size(figs) && ng < 8; f++) {
            const char *fn = json_string_value(json_array_get(figs, f));
            if (strchr(fn, '/') || !*threshold_of(results, n, pn, fn)) continue;
            groups[ng] = fn;
            for (int i = 0; i < n; i++) {
                json_t *v = json_object_get(json_object_get(fv[i], fn), "value");
                vals[i][ng] = json_is_number(v) ? json_number_value(v) : NAN;
            }
            ng++;
        }
        if (ng > 0) {
            for (int i = 0; i < n; i++) rows[i] = vals[i];
            char title[96];
            snprintf(title, sizeof title, "probe %s", pn);
            jr_svg_bars(b, title, "value", groups, ng, names, n, rows);
        }
        json_decref(figs);
    }
    jr_strbuf_addf(b, "</div>\n");
    json_decref(probes);
}

jr_status jr_probe_html_write(const char *path, const char *title, const char *const *names,
                              const json_t *const *results, int n) {
    jr_strbuf b = {0};
    jr_strbuf_addf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    jr_html_escape(&b, title);
    jr_strbuf_addf(&b, "</title><style>%s</style></head><body>\n<h1>", jr_report_css);
    jr_html_escape(&b, title);
    jr_strbuf_addf(&b, "</h1>\n");
    jr_probe_html(&b, names, results, n);
    jr_strbuf_addf(&b, "<p class=\"note\">Written by <code>judgerl probe</code> from probe.json.</p>\n</body></html>\n");
    jr_status st = b.oom ? jr_fail(JR_ENOMEM, "%s: out of memory", path) : jr_write_atomic(path, b.p, b.n);
    free(b.p);
    return st;
}
