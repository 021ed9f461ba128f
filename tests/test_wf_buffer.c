/* test_wf_buffer.c - seed 2's experience buffer (threshold, per-domain cap with the lowest evicted,
 * duplicates, step tags dropped on resume, persistence, workflows that rarely win left out), TF-IDF
 * retrieval, few-shot examples reaching the rendered Layer-1 prompt, and the stratified mix hitting its
 * counts exactly every step */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/wfrl.h"

static jr_wf_buffer *open_buf_rate(const char *dir, int cap, int top_k, double min_sim, double min_win_rate) {
    static char path[600];
    snprintf(path, sizeof path, "%s/buffer.sqlite", dir);
    jr_wf_buffer_opts o = {.path = path, .threshold = 8.0, .cap = cap, .top_k = top_k, .min_similarity = min_sim,
                           .min_win_rate = min_win_rate, .min_tries = 10};
    jr_wf_buffer *b = NULL;
    if (jr_wf_buffer_open(&b, &o)) printf("  open: %s\n", jr_errmsg());
    return b;
}

static jr_wf_buffer *open_buf(const char *dir, int cap, int top_k, double min_sim) {
    return open_buf_rate(dir, cap, top_k, min_sim, 0.2);
}

static int64_t count(jr_wf_buffer *b, const char *dom) {
    int64_t n = -1;
    if (jr_wf_buffer_count(b, dom, &n)) return -1;
    return n;
}

TEST(buffer_threshold_cap_duplicates_resume) {
    char *dir = jt_tmpdir("wfbuf");
    jr_wf_buffer *b = open_buf(dir, 3, 3, 0.0);
    if (!b) { CHECK(0); free(dir); return; }
    int added = -1;
    CHECK_OK(jr_wf_buffer_add(b, "math", "p0", "w0", 7.99, 1, &added));
    CHECK(added == 0 && count(b, "math") == 0);
    CHECK_OK(jr_wf_buffer_add(b, "math", "p0", "w0", NAN, 1, &added));
    CHECK(added == 0 && count(b, "math") == 0);
    const double r[5] = {8.1, 9.0, 8.5, 9.5, 8.2};
    for (int i = 0; i < 5; i++) {
        char p[16];
        snprintf(p, sizeof p, "p%d", i + 1);
        CHECK_OK(jr_wf_buffer_add(b, "math", p, "a = answer(problem)\nreturn a\n", r[i], i + 1, &added));
        CHECK(added == 1 || i == 4); /* 8.2 arrives when 8.5, 9.0, 9.5 fill the cap: evicted at once */
    }
    CHECK(count(b, "math") == 3);
    /* the same (problem, workflow) is not stored twice */
    CHECK_OK(jr_wf_buffer_add(b, "math", "p2", "a = answer(problem)\nreturn a\n", 9.9, 6, &added));
    CHECK(added == 0 && count(b, "math") == 3);
    /* domains are separate */
    CHECK_OK(jr_wf_buffer_add(b, "qa", "p2", "a = answer(problem)\nreturn a\n", 8.0, 6, &added));
    CHECK(added == 1 && count(b, "qa") == 1 && count(b, "math") == 3 && count(b, NULL) == 4);
    jr_wf_example *ex;
    int n;
    CHECK_OK(jr_wf_buffer_retrieve(b, "math", "p", &ex, &n));
    double sum = 0;
    for (int i = 0; i < n; i++) sum += ex[i].reward;
    CHECK(n == 3 && fabs(sum - (9.0 + 8.5 + 9.5)) < 1e-9); /* the lowest were evicted */
    jr_wf_examples_free(ex, n);
    /* a resume from the checkpoint after step 3 drops what steps >= 4 added; it survives a reopen */
    CHECK_OK(jr_wf_buffer_truncate(b, 4));
    jr_wf_buffer_close(b);
    b = open_buf(dir, 3, 3, 0.0);
    if (!b) { CHECK(0); free(dir); return; }
    CHECK(count(b, "math") == 2 && count(b, "qa") == 0); /* p2 (step 2, 9.0) and p3 (step 3, 8.5) */
    jr_wf_buffer_close(b);
    free(dir);
}

/* n tries of `wf` in `dom` at `step`, `wins` of them at the threshold or above */
static void tries(jr_wf_buffer *b, const char *dom, const char *wf, int n, int wins, int64_t step) {
    const char *d[16], *w[16];
    double r[16];
    for (int i = 0; i < n; i++) d[i] = dom, w[i] = wf, r[i] = i < wins ? 9.5 : -0.3;
    CHECK_OK(jr_wf_buffer_record(b, (size_t)n, d, w, r, step));
}

static int retrieved(jr_wf_buffer *b, const char *dom, const char *wf_prefix) {
    jr_wf_example *ex;
    int n = 0, hits = 0;
    if (jr_wf_buffer_retrieve(b, dom, "Ava has 26 stamps", &ex, &n)) return -1;
    for (int i = 0; i < n; i++) hits += !strncmp(ex[i].workflow, wf_prefix, strlen(wf_prefix));
    jr_wf_examples_free(ex, n);
    return hits;
}

/* The demo's maths buffer began with two lucky `answer` entries (an operator right on 2% of maths rows) and one
 * `program` entry; the policy, which copies its examples, went to `answer` on every maths row. A workflow whose
 * record of tries says it rarely works is no longer retrieved. */
TEST(buffer_leaves_out_workflows_that_rarely_win) {
    char *dir = jt_tmpdir("wfbufrate");
    jr_wf_buffer *b = open_buf(dir, 10, 5, 0.0);
    if (!b) { CHECK(0); free(dir); return; }
    const char *ans = "a = answer(problem)\nreturn a\n", *prog = "a = program(problem)\nreturn a";
    CHECK_OK(jr_wf_buffer_add(b, "math", "Ava has 26 stamps. She buys 3.", ans, 9.48, 0, NULL));
    CHECK_OK(jr_wf_buffer_add(b, "math", "Ava has 55 stamps. She buys 4.", ans, 9.48, 0, NULL));
    CHECK_OK(jr_wf_buffer_add(b, "math", "Ava has 12 stamps. She buys 2.", prog, 9.48, 0, NULL));
    /* fewer than min_tries tries: every entry is retrieved, however they went */
    tries(b, "math", "a = answer(problem)\nreturn a", 6, 2, 0); /* the key ignores trailing white space */
    tries(b, "math", prog, 3, 1, 0);
    CHECK(retrieved(b, "math", "a = answer") == 2 && retrieved(b, "math", "a = program") == 1);
    /* 2 wins in 12 tries (< 0.2): `answer` is left out; `program` (1 in 3) still has too few tries to judge */
    tries(b, "math", ans, 6, 0, 1);
    CHECK(retrieved(b, "math", "a = answer") == 0 && retrieved(b, "math", "a = program") == 1);
    /* the record is per domain: `answer` wins on code */
    CHECK_OK(jr_wf_buffer_add(b, "code", "Ava has 26 stamps. Write f.", ans, 9.5, 1, NULL));
    tries(b, "code", ans, 12, 8, 1);
    CHECK(retrieved(b, "code", "a = answer") == 1);
    /* a domain where every workflow rarely wins keeps its best one (qa: `answer` 2 of 12, `program` 1 of 12) */
    CHECK_OK(jr_wf_buffer_add(b, "qa", "Ava has 26 stamps. Who?", ans, 9.5, 1, NULL));
    CHECK_OK(jr_wf_buffer_add(b, "qa", "Ava has 27 stamps. Who?", prog, 9.5, 1, NULL));
    tries(b, "qa", ans, 12, 2, 1);
    tries(b, "qa", prog, 12, 1, 1);
    CHECK(retrieved(b, "qa", "a = answer") == 1 && retrieved(b, "qa", "a = program") == 0);
    /* min_win_rate 0 turns it off */
    jr_wf_buffer_close(b);
    b = open_buf_rate(dir, 10, 5, 0.0, 0.0);
    if (!b) { CHECK(0); free(dir); return; }
    CHECK(retrieved(b, "math", "a = answer") == 2);
    jr_wf_buffer_close(b);
    /* a resume from the checkpoint after step 0 drops step 1's tries with its entries: 2 wins in 6 again */
    b = open_buf(dir, 10, 5, 0.0);
    if (!b) { CHECK(0); free(dir); return; }
    CHECK_OK(jr_wf_buffer_truncate(b, 1));
    CHECK(retrieved(b, "math", "a = answer") == 2 && retrieved(b, "code", "a = answer") == 0);
    /* an unscored sample (NAN) is no try */
    const char *d[10], *w[10];
    double r[10];
    for (int i = 0; i < 10; i++) d[i] = "math", w[i] = ans, r[i] = NAN;
    CHECK_OK(jr_wf_buffer_record(b, 10, d, w, r, 1));
    CHECK(retrieved(b, "math", "a = answer") == 2);
    jr_wf_buffer_close(b);
    free(dir);
}

TEST(similarity_is_cosine_of_words_and_bigrams) {
    CHECK_NEAR(jr_wf_text_similarity("Tom buys 3 bags", "tom BUYS 3 bags!"), 1.0, 1e-9, 0);
    CHECK_NEAR(jr_wf_text_similarity("alpha beta", "gamma delta"), 0.0, 0, 0);
    /* same words, other order: the bigrams differ, so below 1 */
    double s = jr_wf_text_similarity("red car fast", "fast car red");
    CHECK(s > 0.3 && s < 0.99);
}

static const char *kMath1 = "Tom buys 12 bags with 30 apples in each bag. He gives away 55 apples. How many apples are left?";
static const char *kMath2 = "A shop sells 14 boxes with 25 pens in each box. 40 pens are sold. How many pens remain?";
static const char *kQa = "Vorbin works for Quasco. Quasco is based in Trelm. Where is the headquarters of the employer of Vorbin?";

TEST(retrieval_and_layer1_prompt) {
    char *dir = jt_tmpdir("wfret");
    jr_wf_buffer *b = open_buf(dir, 100, 2, 0.05);
    if (!b) { CHECK(0); free(dir); return; }
    const char *wf_prog = "p = program(problem)\nreturn p\n";
    const char *wf_vote = "xs = answer(problem) x5\nb = ensemble(xs)\nreturn b\n";
    const char *wf_qa = "h = custom(problem, @\"Name the employer.\")\na = answer(h)\nreturn a\n";
    CHECK_OK(jr_wf_buffer_add(b, "math", kMath1, wf_prog, 9.4, 1, NULL));
    CHECK_OK(jr_wf_buffer_add(b, "math", kMath2, wf_vote, 9.1, 1, NULL));
    CHECK_OK(jr_wf_buffer_add(b, "math", "Completely unrelated zebra text", "a = answer(problem)\nreturn a\n", 9.9, 1, NULL));
    CHECK_OK(jr_wf_buffer_add(b, "qa", kQa, wf_qa, 9.0, 1, NULL));
    jr_wf_example *ex = NULL;
    int n = 0;
    const char *q = "Ann buys 12 bags with 30 apples in each bag. She gives away 20 apples. How many apples are left?";
    CHECK_OK(jr_wf_buffer_retrieve(b, "math", q, &ex, &n));
    CHECK(n == 2);
    if (n == 2) {
        CHECK_STR(ex[0].workflow, wf_prog); /* the nearest problem first, whatever the rewards */
        CHECK(ex[0].similarity > ex[1].similarity && ex[1].similarity >= 0.05);
        CHECK(strcmp(ex[1].problem, "Completely unrelated zebra text")); /* below: never the zebra */
    }
    /* the few-shot examples reach the rendered Layer-1 prompt (the shipped template) */
    char *tmpl = NULL;
    CHECK_OK(jr_template_load("templates/workflow_layer1.txt", jt_root(), &tmpl));
    json_t *row = json_pack("{s:s,s:s}", "problem", q, "type", "math");
    char *prompt = NULL;
    if (tmpl) CHECK_OK(jr_wf_layer1_render(tmpl, row, ex, n, &prompt));
    CHECK(prompt && strstr(prompt, wf_prog) && strstr(prompt, kMath1) && strstr(prompt, wf_vote));
    CHECK(prompt && strstr(prompt, "Workflows that scored well") && strstr(prompt, "Example 1 (reward 9.40)"));
    CHECK(prompt && strstr(prompt, q) && strstr(prompt, "Task type: maths") && !strstr(prompt, "Task type: code"));
    CHECK(prompt && strstr(prompt, "mdensemble(list)")); /* the operator documentation */
    free(prompt);
    prompt = NULL;
    jr_wf_examples_free(ex, n);
    /* a domain without similar entries: no examples, no example block */
    CHECK_OK(jr_wf_buffer_retrieve(b, "code", q, &ex, &n));
    CHECK(n == 0 && ex == NULL);
    json_decref(row);
    row = json_pack("{s:s,s:s}", "problem", "def f(x):\n    pass\n", "type", "code");
    if (tmpl) CHECK_OK(jr_wf_layer1_render(tmpl, row, NULL, 0, &prompt));
    CHECK(prompt && !strstr(prompt, "Workflows that scored well") && strstr(prompt, "Task type: code"));
    free(prompt);
    json_decref(row);
    row = json_pack("{s:s,s:s}", "problem", "x", "type", "poetry");
    CHECK(jr_wf_layer1_render(tmpl ? tmpl : "", row, NULL, 0, &prompt) != JR_OK && !prompt);
    json_decref(row);
    free(tmpl);
    jr_wf_buffer_close(b);
    free(dir);
}

TEST(mix_is_exact_every_step) {
    const double w[3] = {0.4, 0.3, 0.3};
    int c[3];
    for (int step = 0; step < 200; step++) {
        CHECK_OK(jr_wf_mix_counts(w, 3, 10, 7, step, c));
        CHECK(c[0] == 4 && c[1] == 3 && c[2] == 3);
        CHECK_OK(jr_wf_mix_counts(w, 3, 7, 7, step, c)); /* 2.8, 2.1, 2.1: the one left goes to maths */
        CHECK(c[0] == 3 && c[1] == 2 && c[2] == 2);
    }
    /* 8 draws: 3.2, 2.4, 2.4; the last one goes to code or QA (a tie broken by the seed, per step),
     * every step sums to 8, and over steps both get it */
    int code_more = 0, qa_more = 0;
    for (int step = 0; step < 200; step++) {
        CHECK_OK(jr_wf_mix_counts(w, 3, 8, 7, step, c));
        CHECK(c[0] == 3 && c[1] + c[2] == 5 && (c[1] == 3 || c[2] == 3));
        code_more += c[1] == 3;
        qa_more += c[2] == 3;
        int again[3];
        CHECK_OK(jr_wf_mix_counts(w, 3, 8, 7, step, again)); /* seeded: the same step gives the same counts */
        CHECK(memcmp(c, again, sizeof c) == 0);
    }
    CHECK(code_more > 50 && qa_more > 50);
    const double bad[2] = {0, 0}, neg[2] = {1, -1};
    CHECK(jr_wf_mix_counts(bad, 2, 4, 1, 0, c) != JR_OK);
    CHECK(jr_wf_mix_counts(neg, 2, 4, 1, 0, c) != JR_OK);
}

int main(void) {
    RUN(buffer_threshold_cap_duplicates_resume);
    RUN(buffer_leaves_out_workflows_that_rarely_win);
    RUN(similarity_is_cosine_of_words_and_bigrams);
    RUN(retrieval_and_layer1_prompt);
    RUN(mix_is_exact_every_step);
    return jt_done();
}
