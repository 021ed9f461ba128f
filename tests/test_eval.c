/* test_eval.c - pass@k against a count over every k-subset, HumanEval and GSM8K rows, the
 * GSM8K-aware final answer, and the code_tests / final_answer reward components */
#include "harness.h"

#include <unistd.h>

#include "judgerl/eval.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"
#include "judgerl/verify.h"

/* Fraction of the k-subsets of n samples (the first c correct) holding at least one correct one. */
static double passk_by_subsets(int n, int c, int k) {
    long hit = 0, all = 0;
    for (unsigned m = 0; m < (1u << n); m++) {
        if (__builtin_popcount(m) != k) continue;
        all++;
        hit += (m & ((1u << c) - 1)) != 0;
    }
    return (double)hit / (double)all;
}

TEST(passk_equals_subset_count) {
    int cases = 0;
    for (int n = 1; n <= 12; n++)
        for (int c = 0; c <= n; c++)
            for (int k = 1; k <= n; k++) {
                double want = passk_by_subsets(n, c, k), got = jr_pass_at_k(n, c, k);
                CHECK_NEAR(got, want, 1e-12, 0);
                cases++;
            }
    CHECK(cases == 728);
}

TEST(passk_edges_and_mean) {
    CHECK(isnan(jr_pass_at_k(3, 1, 4)));
    CHECK(isnan(jr_pass_at_k(3, 4, 1)));
    CHECK(isnan(jr_pass_at_k(3, 1, 0)));
    CHECK(jr_pass_at_k(10, 5, 6) == 1.0);
    CHECK(jr_pass_at_k(10, 0, 3) == 0.0);
    CHECK_NEAR(jr_pass_at_k(200, 30, 1), 30.0 / 200, 1e-15, 0);
    /* HumanEval's own example: 6 samples, 3 pass -> its README prints 0.4999999999999999 */
    char buf[40];
    jr_fmt_double(buf, sizeof buf, jr_pass_at_k(6, 3, 1));
    CHECK_STR(buf, "0.4999999999999999");
    jr_fmt_double(buf, sizeof buf, 1.0);
    CHECK_STR(buf, "1.0");
    jr_fmt_double(buf, sizeof buf, 0.1);
    CHECK_STR(buf, "0.1");
    int n[3] = {4, 4, 2}, c[3] = {1, 4, 0};
    CHECK_NEAR(jr_pass_at_k_mean(n, c, 3, 1), (0.25 + 1 + 0) / 3, 1e-15, 0);
    CHECK(isnan(jr_pass_at_k_mean(n, c, 3, 3))); /* a problem with 2 samples has no pass@3 */
    int n2[200], c2[200];
    double sum = 0;
    for (int i = 0; i < 200; i++) { n2[i] = 10; c2[i] = i % 11; sum += jr_pass_at_k(10, i % 11, 3); }
    CHECK_NEAR(jr_pass_at_k_mean(n2, c2, 200, 3), sum / 200, 1e-14, 0);
}

static char data_path[1024];
static const char *shared(const char *rel) {
    snprintf(data_path, sizeof data_path, "%s/../shared/data/%s", jt_root(), rel);
    return data_path;
}

TEST(humaneval_rows) {
    json_t *rows;
    if (access(shared("humaneval/HumanEval.jsonl.gz"), R_OK)) SKIP("../shared/data/humaneval is missing");
    CHECK_OK(jr_rows_load("humaneval", shared("humaneval/HumanEval.jsonl.gz"), &rows));
    if (!rows) return;
    CHECK(json_array_size(rows) == 164);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *prompt = json_string_value(json_object_get(r, "prompt"));
        const char *test = json_string_value(json_object_get(r, "test"));
        CHECK(prompt && test && !strcmp(prompt, json_string_value(json_object_get(r, "problem"))));
        CHECK_STR(json_string_value(json_object_get(r, "type")), "code");
        /* the hidden tests are not in what the policy sees */
        CHECK_MSG(prompt && !strstr(prompt, "def check(candidate)"), "%s", json_string_value(json_object_get(r, "id")));
        CHECK(test && strstr(test, "def check("));
        CHECK(json_is_string(json_object_get(r, "entry_point")) && json_is_string(json_object_get(r, "answer")));
    }
    CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 0), "id")), "HumanEval/0");
    CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 0), "entry_point")), "has_close_elements");
    json_decref(rows);
    /* a problem without its test is an error naming the field */
    json_t *bad = json_pack("{s:s,s:s,s:s,s:s}", "task_id", "x", "prompt", "p", "canonical_solution", "s", "entry_point", "f");
    CHECK(jr_row_from_humaneval(bad) == NULL && strstr(jr_errmsg(), "'test'"));
    json_decref(bad);
}

TEST(gsm8k_rows) {
    json_t *rows;
    if (access(shared("gsm8k/test.jsonl"), R_OK)) SKIP("../shared/data/gsm8k is missing");
    CHECK_OK(jr_rows_load("gsm8k", shared("gsm8k/test.jsonl"), &rows));
    if (!rows) return;
    CHECK(json_array_size(rows) == 1319);
    json_t *r0 = json_array_get(rows, 0);
    CHECK_STR(json_string_value(json_object_get(r0, "answer")), "18");
    CHECK_STR(json_string_value(json_object_get(r0, "id")), "gsm8k/test/0");
    CHECK_STR(json_string_value(json_object_get(r0, "type")), "math");
    CHECK(strstr(json_string_value(json_object_get(r0, "problem")), "Janet") != NULL);
    size_t i, with_comma = 0;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *a = json_string_value(json_object_get(r, "answer"));
        const char *sol = json_string_value(json_object_get(r, "solution"));
        double v;
        int pct;
        char *norm = jr_answer_normalize(a);
        CHECK_MSG(jr_answer_number(norm, &v, &pct) && !strchr(a, ','), "%s", a);
        free(norm);
        /* the worked solution itself scores as correct against the row's answer */
        CHECK_MSG(jr_answer_final_match(sol, a, NULL), "%s", a);
        with_comma += strstr(strstr(sol, "####"), ",") != NULL;
    }
    CHECK(with_comma > 0); /* "#### 1,000"-style answers exist and lost their commas */
    json_decref(rows);
    json_t *bad = json_pack("{s:s,s:s}", "question", "q", "answer", "no final line");
    CHECK(jr_row_from_gsm8k(bad, "gsm8k/x/0") == NULL && strstr(jr_errmsg(), "####"));
    json_decref(bad);
}

TEST(final_answer_extraction) {
    struct { const char *resp, *ref; int want; } c[] = {
        {"She makes 9 * 2 = $18 every day.\n#### 18", "18", 1},
        {"So the total is \\boxed{1,250}.", "1250", 1},
        {"Thus, the answer is $18 per day.", "18", 1},
        {"First 3 eggs, then 4, leaving 9; at $2 each that is 18 dollars", "18", 1},
        {"First 3 eggs, then 4, leaving 9; at $2 each that is 18 dollars, 20 with tips", "18", 0},
        {"The answer is 17.", "18", 0},
        {"#### -3.5", "-7/2", 1},
        {"Answer: 0.5", "50%", 1},
        {"no number here", "3", 0},
        {"It costs 1,000,000 dollars", "Janet ... <<a=b>>\n#### 1,000,000", 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char *got;
        int m = jr_answer_final_match(c[i].resp, c[i].ref, &got);
        CHECK_MSG(m == c[i].want, "case %zu: '%s' vs '%s': got %d (extracted '%s')", i, c[i].resp, c[i].ref, m, got);
        free(got);
    }
    char *e = jr_answer_extract_final("2 apples and 3 pears: 5 fruit");
    CHECK_STR(e, "5");
    free(e);
}

static const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};

/* Scores rows with a one-component registry; values[i] (NAN when unscored). */
static void score(const char *yaml, json_t **rows, size_t n, double *values, char reasons[][200]) {
    jr_config cfg;
    jr_reward *r = NULL;
    CHECK_OK(jr_config_load_string(&cfg, yaml, "t.yaml", 0, NULL, tables));
    CHECK_OK(jr_reward_open(&r, &cfg));
    if (!r) { jr_config_free(&cfg); return; }
    jr_reward_result res[8];
    CHECK_OK(jr_reward_score(r, (const json_t *const *)rows, n, res));
    for (size_t i = 0; i < n; i++) {
        values[i] = res[i].scored ? res[i].reward : NAN;
        snprintf(reasons[i], 200, "%s", res[i].reason ? res[i].reason : "");
        jr_reward_result_free(&res[i]);
    }
    jr_reward_close(r);
    jr_config_free(&cfg);
}

TEST(code_tests_reward) {
    jr_sandbox_opts so;
    jr_sandbox_opts_default(&so);
    const char *why;
    if (!jr_sandbox_available(&so, &why)) SKIP("%s", why);
    json_t *rows;
    if (access(shared("humaneval/HumanEval.jsonl.gz"), R_OK)) SKIP("../shared/data/humaneval is missing");
    CHECK_OK(jr_rows_load("humaneval", shared("humaneval/HumanEval.jsonl.gz"), &rows));
    if (!rows) return;
    json_t *base = json_array_get(rows, 2); /* HumanEval/2 truncate_number: return number % 1.0 */
    const char *responses[] = {
        json_string_value(json_object_get(base, "answer")), /* the body, completion style */
        "Here it is:\n```python\ndef truncate_number(number: float) -> float:\n    return number - int(number)\n```\nDone.",
        "```python\ndef truncate_number(number):\n    return 0.5\n```", /* right on 1 of 3 asserts */
        "    while True:\n        pass\n",
    };
    json_t *in[5];
    for (int i = 0; i < 4; i++) {
        in[i] = json_copy(base);
        json_object_set_new(in[i], "response", json_string(responses[i]));
    }
    in[4] = json_pack("{s:s,s:s}", "response", "x", "prompt", "p"); /* no tests: unscored, not 0 */
    double v[5];
    char why5[5][200];
    score("reward:\n  components:\n    - fn: code_tests\nsandbox:\n  timeout_s: 2\n", in, 5, v, why5);
    CHECK(v[0] == 1.0 && v[1] == 1.0 && v[2] == 0.0 && v[3] == 0.0);
    CHECK_MSG(isnan(v[4]) && strstr(why5[4], "'test'"), "%g %s", v[4], why5[4]);
    score("reward:\n  components:\n    - fn: code_tests\n      params: {score: fraction}\nsandbox:\n  timeout_s: 2\n", in, 4, v, why5);
    CHECK_MSG(v[0] == 1.0 && v[1] == 1.0 && fabs(v[2] - 1.0 / 3) < 1e-12 && v[3] == 0.0, "%g %g %g %g", v[0], v[1], v[2], v[3]);
    for (int i = 0; i < 5; i++) json_decref(in[i]);
    json_decref(rows);
    /* bad params are refused when the registry opens */
    jr_config cfg;
    jr_reward *r;
    CHECK_OK(jr_config_load_string(&cfg, "reward:\n  components:\n    - fn: code_tests\n      params: {score: half}\n", "t.yaml", 0, NULL, tables));
    CHECK(jr_reward_open(&r, &cfg) != JR_OK && strstr(jr_errmsg(), "score"));
    jr_config_free(&cfg);
}

TEST(final_answer_reward) {
    json_t *in[3] = {
        json_pack("{s:s,s:s}", "response", "3 + 4 = 7 so she has 7 apples.", "answer", "7"),
        json_pack("{s:s,s:i}", "response", "The answer is \\boxed{8}", "answer", 7),
        json_pack("{s:s}", "response", "7"),
    };
    double v[3];
    char why[3][200];
    score("reward:\n  components:\n    - fn: final_answer\n", in, 3, v, why);
    CHECK(v[0] == 1.0 && v[1] == 0.0 && isnan(v[2]));
    for (int i = 0; i < 3; i++) json_decref(in[i]);
}

int main(void) {
    RUN(passk_equals_subset_count);
    RUN(passk_edges_and_mean);
    RUN(humaneval_rows);
    RUN(gsm8k_rows);
    RUN(final_answer_extraction);
    RUN(code_tests_reward);
    RUN(final_answer_reward);
    return jt_done();
}
