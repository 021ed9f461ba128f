/* harness.h - a minimal test harness: one line per case ("ok - ", "FAIL - ", "skip - ") read by tests/run.sh */
#ifndef JUDGERL_TEST_HARNESS_H
#define JUDGERL_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int jt_failed_case;   /* the current case has failed */
static int jt_skipped_case;  /* the current case asked to be skipped */
static int jt_n_ok, jt_n_fail, jt_n_skip;
static char jt_skip_reason[256];

#define CHECK(cond) do { if (!(cond)) { \
    printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); jt_failed_case = 1; } } while (0)

#define CHECK_MSG(cond, ...) do { if (!(cond)) { \
    printf("  %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); printf(__VA_ARGS__); printf("\n"); \
    jt_failed_case = 1; } } while (0)

/* |a - b| <= atol + rtol * |b| */
#define CHECK_NEAR(a, b, atol, rtol) do { double jt_a = (double)(a), jt_b = (double)(b); \
    if (!(fabs(jt_a - jt_b) <= (atol) + (rtol) * fabs(jt_b))) { \
    printf("  %s:%d: %s = %.9g, expected %s = %.9g (atol %g, rtol %g)\n", __FILE__, __LINE__, #a, jt_a, #b, jt_b, \
           (double)(atol), (double)(rtol)); jt_failed_case = 1; } } while (0)

#define CHECK_STR(a, b) do { const char *jt_x = (a), *jt_y = (b); \
    if (!jt_x || !jt_y || strcmp(jt_x, jt_y)) { \
    printf("  %s:%d: %s = \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, jt_x ? jt_x : "(null)", \
           jt_y ? jt_y : "(null)"); jt_failed_case = 1; } } while (0)

/* Checks that a jr_status expression is JR_OK, printing the library's message when not. */
#define CHECK_OK(expr) do { int jt_st = (int)(expr); if (jt_st != 0) { \
    printf("  %s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #expr, jt_st, jr_errmsg()); jt_failed_case = 1; } } while (0)

/* Marks the current case skipped (with a reason) and returns from it. */
#define SKIP(...) do { snprintf(jt_skip_reason, sizeof jt_skip_reason, __VA_ARGS__); jt_skipped_case = 1; return; } while (0)

/* Skips the current case when oneDNN's bf16 matmul does not run here (a 2 x 2 probe; the test includes
 * judgerl/nn.h). */
#define SKIP_WITHOUT_ONEDNN_BF16() do { float jt_px[4] = {1, 2, 3, 4}, jt_pw[4] = {1, 0, 0, 1}, jt_po[4]; \
    if (jr_matmul_bf16_forward(jt_po, jt_px, jt_pw, NULL, 2, 2, 2)) \
        SKIP("no oneDNN bf16 matmul here: %s", jr_matmul_bf16_error()); } while (0)

#define TEST(name) static void name(void)

static void jt_run(const char *name, void (*fn)(void)) {
    jt_failed_case = 0;
    jt_skipped_case = 0;
    fflush(stdout);
    fn();
    if (jt_failed_case) { printf("FAIL - %s\n", name); jt_n_fail++; }
    else if (jt_skipped_case) { printf("skip - %s: %s\n", name, jt_skip_reason); jt_n_skip++; }
    else { printf("ok - %s\n", name); jt_n_ok++; }
    fflush(stdout);
}

#define RUN(name) jt_run(#name, name)

/* Returns the process exit code: 0 when no case failed. */
static inline int jt_done(void) { return jt_n_fail ? 1 : 0; }

/* The repository root (JR_ROOT from tests/run.sh, else "."). */
static inline const char *jt_root(void) { const char *r = getenv("JR_ROOT"); return r && *r ? r : "."; }

/* A fresh scratch directory for this test program (under JR_TMP or /tmp). Caller frees. */
static inline char *jt_tmpdir(const char *tag) {
    const char *base = getenv("JR_TMP");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/jr-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

#endif
