/* wf_report.c - the demo's workflow stage (seed 2) in the terminal summary and the HTML report: held-out
 * gold accuracy per domain (random workflows, the fixed workflows and the best of them, the policy before
 * and after RL per run), valid-workflow rate, operators chosen per domain, buffer sizes, reward components
 * over steps, the learning criteria. Reads summary["workflow"] (examples/eightball/stage_workflow.c). */
#include <stdio.h>
#include <string.h>

#include "judgerl/report.h"

static const char *const kDoms[4] = {"math", "code", "qa", "overall"};

static const char *wstr(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Every accuracy row in table order: random, the fixed ones, then per run before / after (and greedy before /
 * after where the run evaluated greedily too). */
static int acc_rows(const json_t *wf, const json_t **rows, int cap) {
    int n = 0;
    if (json_is_object(json_object_get(wf, "random")) && n < cap) rows[n++] = json_object_get(wf, "random");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(wf, "fixed"), i, r) if (n < cap) rows[n++] = r;
    static const char *const keys[4] = {"before", "after", "before_greedy", "after_greedy"};
    json_array_foreach(json_object_get(wf, "runs"), i, r) {
        for (int k = 0; k < 4; k++)
            if (json_is_object(json_object_get(r, keys[k])) && n < cap) rows[n++] = json_object_get(r, keys[k]);
    }
    return n;
}

/* "answer 0.50, format 0.25" (shares above 0, largest first is not needed: the order of the object). */
static void ops_str(char *buf, size_t cap, const json_t *ops) {
    size_t n = 0;
    buf[0] = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ops, k, v) if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "%s%s %.2f", n ? ", " : "", k, json_number_value(v));
    if (!n) snprintf(buf, cap, "-");
}

void jr_report_workflow_text(FILE *out, const json_t *wf) {
    if (!json_is_object(wf)) return;
    const json_t *rows[64];
    int n = acc_rows(wf, rows, 64);
    fprintf(out, "workflows (seed 2): held-out gold accuracy (a verifier's) per domain\n  %-34s %6s %6s %6s %8s\n", "workflow",
            "math", "code", "qa", "overall");
    for (int i = 0; i < n; i++) {
        fprintf(out, "  %-34.34s", wstr(rows[i], "name"));
        for (int d = 0; d < 4; d++) fprintf(out, " %*.2f", d == 3 ? 8 : 6, jr_report_num(rows[i], kDoms[d]));
        fprintf(out, "\n");
    }
    const json_t *best = json_object_get(wf, "best_fixed");
    if (json_is_object(best))
        fprintf(out, "  best fixed (%lld runs a row, paired with the policy's samples): math %s (%.2f), code %s (%.2f), qa %s (%.2f)\n",
                (long long)json_integer_value(json_object_get(wf, "fixed_samples")), wstr(json_object_get(best, "math"), "workflow"),
                jr_report_num(json_object_get(best, "math"), "acc"), wstr(json_object_get(best, "code"), "workflow"),
                jr_report_num(json_object_get(best, "code"), "acc"), wstr(json_object_get(best, "qa"), "workflow"),
                jr_report_num(json_object_get(best, "qa"), "acc"));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(wf, "runs"), i, r) {
        const json_t *b = json_object_get(r, "buffer");
        fprintf(out, "  %s: valid workflows %.2f -> %.2f; buffer math %lld, code %lld, qa %lld\n", wstr(r, "name"), jr_report_num(r, "valid_before"),
                jr_report_num(r, "valid_after"), (long long)json_integer_value(json_object_get(b, "math")),
                (long long)json_integer_value(json_object_get(b, "code")), (long long)json_integer_value(json_object_get(b, "qa")));
        for (int d = 0; d < 3; d++) {
            char ob[512], oa[512], rb[512], ra[512];
            ops_str(ob, sizeof ob, json_object_get(json_object_get(r, "ops_before"), kDoms[d]));
            ops_str(oa, sizeof oa, json_object_get(json_object_get(r, "ops_after"), kDoms[d]));
            ops_str(rb, sizeof rb, json_object_get(json_object_get(r, "returned_before"), kDoms[d]));
            ops_str(ra, sizeof ra, json_object_get(json_object_get(r, "returned_after"), kDoms[d]));
            fprintf(out, "    operators %-4s used before: %s\n    %19s after:  %s\n    %14s returned before: %s\n    %23s after:  %s\n",
                    kDoms[d], ob, "", oa, "", rb, "", ra);
        }
    }
    const json_t *c = json_object_get(wf, "criteria");
    if (json_is_object(c)) {
        fprintf(out, "  criteria (issue 17):");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)c, k, v) fprintf(out, " %s=%s", k, json_is_true(v) ? "yes" : "NO");
        fprintf(out, "\n");
    }
}

static void html_acc(jr_strbuf *b, const json_t *wf) {
    const json_t *rows[64];
    int n = acc_rows(wf, rows, 64);
    jr_strbuf_addf(b, "<table><tr><th>workflow</th><th>maths</th><th>code</th><th>QA</th><th>overall</th></tr>\n");
    for (int i = 0; i < n; i++) {
        jr_strbuf_addf(b, "<tr><td>");
        jr_html_escape(b, wstr(rows[i], "name"));
        if (*wstr(rows[i], "workflow")) {
            jr_strbuf_addf(b, " <code>");
            jr_html_escape(b, wstr(rows[i], "workflow"));
            jr_strbuf_addf(b, "</code>");
        }
        jr_strbuf_addf(b, "</td>");
        for (int d = 0; d < 4; d++) jr_strbuf_addf(b, "<td>%.2f</td>", jr_report_num(rows[i], kDoms[d]));
        jr_strbuf_addf(b, "</tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
}

static void html_run(jr_strbuf *b, const json_t *r) {
    const json_t *buf = json_object_get(r, "buffer");
    jr_strbuf_addf(b, "<h3>");
    jr_html_escape(b, wstr(r, "name"));
    jr_strbuf_addf(b, "%s</h3>\n<p>Valid workflows %.2f before RL, %.2f after; experience buffer at the end: maths %lld, code %lld, "
                     "QA %lld.</p>\n<table><tr><th>domain</th><th>operators used before RL (share of valid workflows)</th><th>after RL</th>"
                     "<th>operator returned before RL</th><th>after RL</th></tr>\n",
                  json_is_true(json_object_get(r, "control")) ? " (shuffled rewards)" : "", jr_report_num(r, "valid_before"), jr_report_num(r, "valid_after"),
                  (long long)json_integer_value(json_object_get(buf, "math")), (long long)json_integer_value(json_object_get(buf, "code")),
                  (long long)json_integer_value(json_object_get(buf, "qa")));
    static const char *const keys[4] = {"ops_before", "ops_after", "returned_before", "returned_after"};
    for (int d = 0; d < 3; d++) {
        jr_strbuf_addf(b, "<tr><td>%s</td>", kDoms[d]);
        for (int k = 0; k < 4; k++) {
            char o[512];
            ops_str(o, sizeof o, json_object_get(json_object_get(r, keys[k]), kDoms[d]));
            jr_strbuf_addf(b, "<td>");
            jr_html_escape(b, o);
            jr_strbuf_addf(b, "</td>");
        }
        jr_strbuf_addf(b, "</tr>\n");
    }
    jr_strbuf_addf(b, "</table>\n");
    const json_t *comp = json_object_get(r, "components");
    int n = (int)json_array_size(comp);
    if (n <= 0 || n > 100000) return;
    static const char *const comps[] = {"reward", "correctness", "efficiency", "simplicity", "format", "repetition"};
    double xs[6][256], ys[6][256];
    jr_series s[6];
    int m = n < 256 ? n : 256;
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < m; i++) {
            const json_t *c = json_array_get(comp, (size_t)i);
            xs[k][i] = jr_report_num(c, "step");
            ys[k][i] = jr_report_num(c, comps[k]);
        }
        s[k] = (jr_series){comps[k], xs[k], ys[k], m, NULL, 0};
    }
    jr_svg_lines(b, "reward components over steps (training samples, mean)", "step", "score (seed 2's 10-point scale)", s, 6);
}

void jr_report_workflow_html(jr_strbuf *b, const json_t *wf) {
    if (!json_is_object(wf)) return;
    jr_strbuf_addf(b, "<h2>Workflows (seed 2, docs/WORKFLOWS.md)</h2>\n<p>A tiny policy writes workflows run by the executor trained "
                     "by <code>judgerl workflow train-executor</code> and served by <code>judgerl serve</code>. Held-out gold "
                     "accuracy is a verifier's (the reference answer, or the hidden tests in the sandbox); a workflow that does not "
                     "parse or ends without an answer counts as wrong.</p>\n");
    html_acc(b, wf);
    const json_t *c = json_object_get(wf, "criteria");
    if (json_is_object(c)) {
        jr_strbuf_addf(b, "<p>Criteria (issue 17):");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)c, k, v) {
            jr_strbuf_addf(b, " <code>");
            jr_html_escape(b, k);
            jr_strbuf_addf(b, "</code> %s;", json_is_true(v) ? "yes" : "<b>no</b>");
        }
        jr_strbuf_addf(b, "</p>\n");
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(wf, "runs"), i, r) html_run(b, r);
}
