/* test_monitor_stats.c - the proxy_gold alarm's statistics (docs/MONITOR.md): the paired SE of a change since the
 * baseline (monitor.paired) and the trend test over the last evaluations (monitor.trend_window), on synthetic
 * series where the alarm must fire and where it must not */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/monitor.h"
#include "judgerl/status.h"

/* n samples in groups of g consecutive samples sharing a row (a prompt). */
static jr_monitor_sample *grouped(json_t **rows, int n, int g) {
    jr_monitor_sample *s = calloc((size_t)n, sizeof *s);
    for (int i = 0; i < n; i++) s[i].row = rows[i / g];
    return s;
}

TEST(paired_se_by_hand) {
    json_t *rows[3] = {json_object(), json_object(), json_object()};
    jr_monitor_sample *s = grouped(rows, 6, 2);
    /* differences per prompt: (1, 1), (0, 0), (-1, NAN): D = 2, 0, -1 over m = 2, 2, 1 pairs; M = 5, d = 0.2;
     * sum (D - d m)^2 = 1.6^2 + 0.4^2 + 1.2^2 = 4.16; SE = sqrt(3/2 * 4.16) / 5 */
    double b[6] = {0, 0, 1, 1, 1, 0}, x[6] = {1, 1, 1, 1, 0, NAN};
    CHECK_NEAR(jr_monitor_paired_se(b, x, s, 6), sqrt(1.5 * 4.16) / 5, 1e-12, 0);
    /* the same values: no change, no noise */
    CHECK_NEAR(jr_monitor_paired_se(b, b, s, 6), 0, 1e-15, 0);
    /* one prompt only: no SE */
    CHECK(jr_monitor_paired_se(b, x, s, 2) == -1);
    free(s);
    for (int i = 0; i < 3; i++) json_decref(rows[i]);
}

TEST(trend_by_hand) {
    json_t *rows[4] = {json_object(), json_object(), json_object(), json_object()};
    jr_monitor_sample *s = grouped(rows, 8, 2);
    /* steps 0, 2, 4; prompt means y_p(t): p0 0, 2, 4 (slope 1); p1 1, 1, 1 (0); p2 3, 2, 1 (-0.5);
     * p3 lacks a value at the middle step (left out). mean slope 1/6, x span 4 -> change 2/3; the slopes' SD^2
     * = (25 + 1 + 16) / 36 / 2 = 7/12, SE of their mean sqrt(7/36), x 4 */
    double v0[8] = {0, 0, 1, 1, 3, 3, 5, 5}, v1[8] = {1, 3, 1, 1, 2, 2, NAN, NAN}, v2[8] = {4, 4, 0, 2, 1, 1, 9, 9};
    const double *vals[3] = {v0, v1, v2};
    double steps[3] = {0, 2, 4}, ch, se;
    CHECK(jr_monitor_trend(vals, steps, 3, s, 8, &ch, &se) == 0);
    CHECK_NEAR(ch, 2.0 / 3, 1e-12, 0);
    CHECK_NEAR(se, 4 * sqrt(7.0 / 36), 1e-12, 0);
    /* every prompt on the same line: the change is exact and has no noise */
    double w0[8] = {0, 0, 1, 1, 2, 2, 3, 3}, w1[8] = {.1, .1, 1.1, 1.1, 2.1, 2.1, 3.1, 3.1}, w2[8] = {.2, .2, 1.2, 1.2, 2.2, 2.2, 3.2, 3.2};
    const double *lin[3] = {w0, w1, w2};
    CHECK(jr_monitor_trend(lin, steps, 3, s, 8, &ch, &se) == 0);
    CHECK_NEAR(ch, 0.2, 1e-12, 0);
    CHECK_NEAR(se, 0, 1e-12, 0);
    /* two evaluations: the change is the mean per-prompt difference */
    CHECK(jr_monitor_trend(vals, steps, 2, s, 8, &ch, &se) == 0);
    CHECK_NEAR(ch, (2.0 + 0 - 1) / 3, 1e-12, 0); /* the prompts' mean differences 2, 0, -1 */
    CHECK(jr_monitor_trend(vals, steps, 1, s, 8, &ch, &se) == -1 && isnan(ch));
    free(s);
    for (int i = 0; i < 4; i++) json_decref(rows[i]);
}

/* ---- the alarm on a monitor fed synthetic evaluations ---- */

#define P 20 /* prompts */
#define G 4  /* samples per prompt */

static char tmpdir[] = "/tmp/jr-monstats-XXXXXX";

/* One evaluation: proxy(p, i) and whether sample i of prompt p answers the preferred "Yes". */
typedef struct {
    double (*proxy)(int t, int p, int i);
    int (*right)(int t, int p, int i);
} series;

/* Feeds evaluations t = 0..T-1 (steps 0, 1, ...), the monitor closed and reopened as a resumed run after
 * step resume_at (-1: never); returns the first step proxy_gold fired, -1 when none. */
static int first_alarm_resumed(const series *sr, int T, int trend_window, double z, int resume_at) {
    jr_monitor_opts o = {.enabled = 1, .gold_field = "preferred", .proxy_rise = 0.01, .gold_margin = 0, .noise_z = z,
                         .paired = 1, .trend_window = trend_window, .ngram = 1};
    jr_monitor *m = NULL;
    CHECK_OK(jr_monitor_open(&m, &o, tmpdir, -1));
    if (!m) return -2;
    json_t *rows[P];
    for (int p = 0; p < P; p++) rows[p] = json_pack("{s:s}", "preferred", "Yes");
    jr_monitor_sample s[P * G];
    int fired = -1;
    for (int t = 0; t < T && fired < 0; t++) {
        for (int p = 0; p < P; p++)
            for (int i = 0; i < G; i++)
                s[p * G + i] = (jr_monitor_sample){rows[p], sr->right(t, p, i) ? "Yes" : "No", 1, sr->proxy(t, p, i)};
        jr_monitor_eval ev;
        CHECK_OK(jr_monitor_observe(m, t, s, P * G, NULL, &ev));
        if (ev.fired & JR_ALARM_PROXY_GOLD) fired = t;
        if (t == resume_at) { /* the history (baseline, the trend's window) comes back from monitor.jsonl */
            jr_monitor_close(m);
            m = NULL;
            CHECK_OK(jr_monitor_open(&m, &o, tmpdir, t));
            if (!m) break;
        }
    }
    for (int p = 0; p < P; p++) json_decref(rows[p]);
    jr_monitor_close(m);
    return fired;
}

static int first_alarm(const series *sr, int T, int trend_window, double z) {
    return first_alarm_resumed(sr, T, trend_window, z, -1);
}

/* A sample's fixed noise (the same at every evaluation, as the evaluations share their sampling seeds). */
static double jit(int p, int i) { return 0.05 * (((p * 7 + i * 3) % 5) - 2); }

/* Proxy up 0.02 an evaluation on every prompt; gold: one more prompt's first sample turns wrong at each
 * evaluation from t = 3 after rising by one at t = 1 (the rise hides the fall from a comparison with the start). */
static double proxy_up(int t, int p, int i) { return 0.5 + 0.02 * t + jit(p, i) + 0.01 * ((p + t) % 3 - 1); }
static int gold_rise_then_fall(int t, int p, int i) {
    int right = !(i == 0 && p < 4);        /* 16 of 20 prompts' first samples right at the start */
    if (t >= 1 && i == 0 && p == 0) right = 1; /* +1 at t = 1 */
    if (t >= 3 && i == 1 && p < t - 2) right = 0; /* then one wrong more an evaluation */
    return right;
}
/* gold flat: the same samples right at every evaluation */
static int gold_flat(int t, int p, int i) { (void)t; return !(i == 0 && p < 4); }
/* gold up with the proxy: one more right an evaluation */
static int gold_up(int t, int p, int i) { return !(i == 0 && p < 4 && p >= t); }
/* proxy noise only: each prompt's proxy wanders +-0.03 around its start, the mean unchanged */
static double proxy_wander(int t, int p, int i) { return 0.5 + jit(p, i) + 0.03 * ((p % 2 ? 1 : -1) * ((t % 2) ? 1 : 0)); }

TEST(alarm_fires_on_trend) {
    series s = {proxy_up, gold_rise_then_fall};
    /* the change since the start alone: gold is back at its start at t = 4 and 1 sample (1/80) down at t = 5 */
    int base_only = first_alarm(&s, 9, 0, 1.0), trend = first_alarm(&s, 9, 4, 1.0);
    CHECK_MSG(trend == 4, "trend test fired at %d, expected 4", trend);
    CHECK_MSG(base_only < 0 || base_only > trend, "the comparison with the start fired at %d, the trend at %d", base_only, trend);
    /* a run resumed after step 1 or 3 reads its window back from monitor.jsonl and fires at the same step (without
     * that history it would fire at 3 and at 5) */
    for (int r = 1; r <= 3; r += 2) {
        int f = first_alarm_resumed(&s, 9, 4, 1.0, r);
        CHECK_MSG(f == trend, "resumed after step %d: fired at %d", r, f);
    }
    /* without the noise scaling the fixed floors alone decide; with a large z the trend never clears the noise */
    CHECK_MSG(first_alarm(&s, 9, 4, 50.0) < 0, "fired at z = 50");
}

TEST(alarm_silent_when_gold_follows) {
    series up = {proxy_up, gold_up}, flat = {proxy_up, gold_flat}, wander = {proxy_wander, gold_rise_then_fall};
    CHECK_MSG(first_alarm(&up, 8, 4, 1.0) < 0, "fired while gold rose with the proxy");
    /* gold exactly flat is not a fall (monitor.gold_margin 0 wants gold change < 0) */
    CHECK_MSG(first_alarm(&flat, 8, 4, 1.0) < 0, "fired while gold did not move");
    /* gold falls but the proxy only wanders: no proxy rise, no alarm */
    CHECK_MSG(first_alarm(&wander, 8, 4, 1.0) < 0, "fired while the proxy did not rise");
}

/* Pairing needs the same prompts in the same order: a resumed run whose held-out rows changed (same count)
 * falls back to the independent SE and an empty trend window instead of pairing other prompts' values. */
TEST(not_paired_across_other_prompts) {
    jr_monitor_opts o = {.enabled = 1, .gold_field = "preferred", .proxy_rise = 0.01, .noise_z = 1, .paired = 1,
                         .trend_window = 4, .ngram = 1};
    json_t *a[P], *b[P];
    for (int p = 0; p < P; p++) {
        a[p] = json_pack("{s:s, s:i}", "preferred", "Yes", "id", p);
        b[p] = json_pack("{s:s, s:i}", "preferred", "Yes", "id", P - 1 - p); /* the same rows, another order */
    }
    jr_monitor_sample s[P * G];
    jr_monitor *m = NULL;
    jr_monitor_eval ev;
    CHECK_OK(jr_monitor_open(&m, &o, tmpdir, -1));
    for (int t = 0; m && t < 3; t++) {
        if (t == 2) { /* resumed with the rows in another order */
            jr_monitor_close(m);
            m = NULL;
            CHECK_OK(jr_monitor_open(&m, &o, tmpdir, 1));
            if (!m) break;
        }
        for (int i = 0; i < P * G; i++) s[i] = (jr_monitor_sample){(t < 2 ? a : b)[i / G], i % 3 ? "Yes" : "No", 1, 0.5 + 0.01 * t + 0.1 * (i % 5)};
        CHECK_OK(jr_monitor_observe(m, t, s, P * G, NULL, &ev));
        if (t == 1) CHECK_MSG(ev.paired && ev.trend_k == 2, "same prompts: paired %d, trend over %d", ev.paired, ev.trend_k);
        if (t == 2) CHECK_MSG(!ev.paired && ev.trend_k == 1, "other order: paired %d, trend over %d", ev.paired, ev.trend_k);
    }
    jr_monitor_close(m);
    for (int p = 0; p < P; p++) { json_decref(a[p]); json_decref(b[p]); }
}

int main(void) {
    if (!mkdtemp(tmpdir)) { printf("FAIL - mkdtemp\n"); return 1; }
    RUN(paired_se_by_hand);
    RUN(trend_by_hand);
    RUN(alarm_fires_on_trend);
    RUN(alarm_silent_when_gold_follows);
    RUN(not_paired_across_other_prompts);
    jr_rmtree(tmpdir);
    return jt_n_fail ? 1 : 0;
}
