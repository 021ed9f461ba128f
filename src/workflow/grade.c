/* grade.c - gold grading of a workflow's answer by a verifier (never a judge): the reference
 * answer for maths and QA, the hidden tests in the sandbox for code */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/reward.h"
#include "judgerl/sha256.h"
#include "judgerl/verify.h"
#include "judgerl/workflow.h"

/* ---- the hidden tests' verdicts, remembered ----
 * The workflow environment grades a code answer twice: gold accuracy in its worker threads, then the reward's
 * correctness (workflow_correctness) in the registry's thread, one sandbox start (~25 ms) after another. The
 * second is the first's verdict: the same answer, tests and sandbox options give the same key. A sandbox
 * that could not start is not remembered. */
#define MEMO_SLOTS 1024
typedef struct {
    char key[65];
    int correct;
    char why[256];
} memo_entry;
static memo_entry g_memo[MEMO_SLOTS];
static pthread_mutex_t g_memo_mu = PTHREAD_MUTEX_INITIALIZER;

static void hash_str(jr_sha256 *h, const char *s) { jr_sha256_update(h, s ? s : "", s ? strlen(s) + 1 : 1); }

static void memo_key(const jr_sandbox_opts *sb, const char *ep, const char *tests, const char *answer, char key[65]) {
    jr_sha256 h;
    jr_sha256_init(&h);
    char lim[256];
    snprintf(lim, sizeof lim, "%.17g %.17g %ld %ld %ld %ld %ld %ld %ld %d", sb->timeout_s, sb->cpu_s, sb->memory_mb, sb->max_procs,
             sb->file_mb, sb->max_files, sb->tmp_mb, sb->output_bytes, sb->uid, sb->unsafe);
    hash_str(&h, lim);
    hash_str(&h, sb->bwrap);
    hash_str(&h, sb->python);
    hash_str(&h, ep);
    hash_str(&h, tests);
    hash_str(&h, answer);
    jr_sha256_final_hex(&h, key);
}

static memo_entry *memo_slot(const char *key) {
    unsigned long i = 0;
    for (int k = 0; k < 6; k++) i = i * 16 + (unsigned long)(key[k] <= '9' ? key[k] - '0' : key[k] - 'a' + 10);
    return &g_memo[i % MEMO_SLOTS];
}

static int memo_get(const char *key, int *correct, char *why, size_t why_len) {
    pthread_mutex_lock(&g_memo_mu);
    memo_entry *m = memo_slot(key);
    int hit = !strcmp(m->key, key);
    if (hit) {
        *correct = m->correct;
        snprintf(why, why_len, "%s", m->why);
    }
    pthread_mutex_unlock(&g_memo_mu);
    return hit;
}

static void memo_put(const char *key, int correct, const char *why) {
    pthread_mutex_lock(&g_memo_mu);
    memo_entry *m = memo_slot(key);
    snprintf(m->key, sizeof m->key, "%s", key);
    m->correct = correct;
    snprintf(m->why, sizeof m->why, "%s", why);
    pthread_mutex_unlock(&g_memo_mu);
}

jr_status jr_wf_grade(const json_t *row, const char *answer, const jr_sandbox_opts *sb, int *correct, char *why, size_t why_len) {
    *correct = 0;
    if (why_len) why[0] = 0;
    const char *type = json_string_value(json_object_get(row, "type"));
    if (!type) return jr_fail(JR_EINVAL, "row: field 'type' must be a string");
    if (!strcmp(type, "code")) {
        const char *tests = json_string_value(json_object_get(row, "hidden_tests"));
        const char *ep = json_string_value(json_object_get(row, "entry_point"));
        if (!tests || !ep) return jr_fail(JR_EINVAL, "row: a code row needs 'hidden_tests' and 'entry_point' to be graded");
        char key[65], w[256];
        memo_key(sb, ep, tests, answer, key);
        if (memo_get(key, correct, why, why_len)) return JR_OK;
        char *suite = malloc(strlen(tests) + 64);
        if (!suite) return jr_fail(JR_ENOMEM, "grade: out of memory");
        sprintf(suite, "%s\n\ndef check(candidate):\n    pass\n", tests); /* the driver calls check(entry_point) */
        jr_py_job job = {answer, suite, ep, 1, NULL};
        jr_py_result pr;
        jr_status st = jr_sandbox_python(sb, &job, &pr);
        free(suite);
        if (st) return st;
        *correct = pr.outcome == JR_SB_PASSED;
        snprintf(w, sizeof w, "%s (%d of %d hidden asserts)", pr.result ? pr.result : "", pr.asserts_passed, pr.asserts_total);
        snprintf(why, why_len, "%s", w);
        jr_py_result_free(&pr);
        memo_put(key, *correct, w);
        return JR_OK;
    }
    char nb[64];
    const char *ref = jr_row_text_or_number(row, "answer", nb, sizeof nb);
    if (!ref) return jr_fail(JR_EINVAL, "row: field 'answer' (the reference) must be a string or a number to be graded");
    *correct = jr_answer_equiv(answer, ref);
    snprintf(why, why_len, "%s the reference", *correct ? "equivalent to" : "differs from");
    return JR_OK;
}
