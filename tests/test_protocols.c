/* test_protocols.c - the protocols' pure parts: verdict parsers on good, wrapped and broken
 * verdicts; HealthBench scoring worked examples; label confidence renormalisation; pairwise swap
 * ties; VerIF reward; rubric and constraint reading */
#include "harness.h"

#include "judgerl/protocols.h"

TEST(verdict_json_finds_objects) {
    json_t *j = jr_verdict_json("{\"a\": 1}");
    CHECK(j && json_integer_value(json_object_get(j, "a")) == 1);
    json_decref(j);
    j = jr_verdict_json("Sure!\n```json\n{\"a\": 2}\n```\nDone.");
    CHECK(j && json_integer_value(json_object_get(j, "a")) == 2);
    json_decref(j);
    j = jr_verdict_json("prose {not json} then {\"a\": \"}\", \"b\": 3} tail");
    CHECK(j && json_integer_value(json_object_get(j, "b")) == 3);
    json_decref(j);
    CHECK(jr_verdict_json("no object here") == NULL);
    CHECK(jr_verdict_json("[1, 2]") == NULL);
    CHECK(jr_verdict_json("{\"unterminated\": ") == NULL);
}

TEST(reference_parser) {
    static const struct { const char *text; int st, v; } cases[] = {
        {"VERDICT: CORRECT", 0, 1},
        {"The response gives 1/2, which equals 0.5.\nVERDICT: INCORRECT", 0, 0},
        {"**Verdict:** Correct", 0, 1},
        {"```json\n{\"verdict\": \"incorrect\"}\n```", 0, 0},
        {"{\"equivalent\": true}", 0, 1},
        {"Reasoning first, it is not correct.\nFinal verdict: [INCORRECT]", 0, 0},
        {"CORRECT", 0, 1},
        {"  **incorrect.**  ", 0, 0},
        {"Verdict: NOT_EQUIVALENT", 0, 0},
        {"Verdict: correct\nwait, verdict: incorrect", 0, 0},
        {"I think maybe", JR_EFORMAT, 0},
        {"", JR_EFORMAT, 0},
        {"The answer is correct but incomplete", JR_EFORMAT, 0},
        {"{\"verdict\": \"unsure\"}", JR_EFORMAT, 0},
        {"Verdict: pending", JR_EFORMAT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int v = -1;
        jr_status st = jr_reference_parse(cases[i].text, &v);
        CHECK_MSG((int)st == cases[i].st, "case %zu '%s': status %d", i, cases[i].text, st);
        if (!st) CHECK_MSG(v == cases[i].v, "case %zu '%s': verdict %d", i, cases[i].text, v);
    }
}

TEST(rubric_parse_one) {
    int met = -1;
    CHECK_OK(jr_rubric_parse_one("{\"explanation\": \"ok\", \"criteria_met\": true}", &met));
    CHECK(met == 1);
    CHECK_OK(jr_rubric_parse_one("```json\n{\"explanation\": \"no\", \"criteria_met\": false}\n```", &met));
    CHECK(met == 0);
    CHECK_OK(jr_rubric_parse_one("Here is my grade: {\"explanation\": \"x\", \"criteria_met\": true} hope it helps", &met));
    CHECK(met == 1);
    /* Unescaped quotes inside the explanation break the JSON; the field is still found. */
    CHECK_OK(jr_rubric_parse_one("{\"explanation\": \"it says \"hi\" twice\", \"criteria_met\": false}", &met));
    CHECK(met == 0);
    CHECK(jr_rubric_parse_one("{\"explanation\": \"x\"}", &met) == JR_EFORMAT);
    CHECK(jr_rubric_parse_one("{\"explanation\": \"x\", \"criteria_met\": \"true\"}", &met) == JR_EFORMAT);
    CHECK(jr_rubric_parse_one("yes", &met) == JR_EFORMAT);
    CHECK(jr_rubric_parse_one("", &met) == JR_EFORMAT);
}

TEST(rubric_parse_batch) {
    int met[3];
    CHECK_OK(jr_rubric_parse_batch("```json\n{\"1\": \"PRESENT\", \"2\": \"NOT_PRESENT\", \"3\": \"present\"}\n```", 3, met));
    CHECK(met[0] == 1 && met[1] == 0 && met[2] == 1);
    /* Extra and out-of-range keys are ignored; a missing one fails and stays -1. */
    CHECK(jr_rubric_parse_batch("{\"1\": \"PRESENT\", \"3\": \"NOT_PRESENT\", \"4\": \"PRESENT\", \"x\": 1}", 3, met) == JR_EFORMAT);
    CHECK(met[0] == 1 && met[1] == -1 && met[2] == 0);
    CHECK(strstr(jr_errmsg(), "first: 2") != NULL);
    CHECK(jr_rubric_parse_batch("{\"1\": \"MAYBE\", \"2\": \"PRESENT\", \"3\": \"PRESENT\"}", 3, met) == JR_EFORMAT);
    CHECK(met[0] == -1);
    CHECK(jr_rubric_parse_batch("I cannot grade this.", 3, met) == JR_EFORMAT);
}

static jr_criterion crit(double points) {
    jr_criterion c = {NULL, points, NULL, NULL};
    return c;
}

TEST(healthbench_worked_examples) {
    double s = 0;
    /* +5 met, +3 not met, -2 met (the pitfall is present): (5 - 2) / (5 + 3) = 0.375 */
    jr_criterion a[] = {crit(5), crit(3), crit(-2)};
    int ma[] = {1, 0, 1};
    CHECK(jr_rubric_score(a, 3, ma, 0, &s) == 1);
    CHECK_NEAR(s, 0.375, 1e-12, 0);
    /* The pitfall avoided: 5 / 8 */
    int ma2[] = {1, 0, 0};
    CHECK(jr_rubric_score(a, 3, ma2, 0, &s) == 1);
    CHECK_NEAR(s, 0.625, 1e-12, 0);
    /* Only negative criteria: no positive points, HealthBench's None. */
    jr_criterion b[] = {crit(-5), crit(-2)};
    int mb[] = {1, 0};
    s = 42;
    CHECK(jr_rubric_score(b, 2, mb, 0, &s) == 0);
    CHECK(s == 42);
    /* A sample below zero: (4 - 10) / 4 = -1.5; clipped per sample only when asked. */
    jr_criterion c[] = {crit(4), crit(-10)};
    int mc[] = {1, 1};
    CHECK(jr_rubric_score(c, 2, mc, 0, &s) == 1);
    CHECK_NEAR(s, -1.5, 1e-12, 0);
    CHECK(jr_rubric_score(c, 2, mc, 1, &s) == 1);
    CHECK_NEAR(s, 0, 0, 0);
    /* A criterion that could not be graded: unscored, never "not met". */
    int md[] = {1, -1};
    CHECK(jr_rubric_score(c, 2, md, 0, &s) == -1);
    /* Aggregates are clipped to [0, 1]; unscored samples are left out. */
    double scores[] = {-1.5, 1.0, 0.375, 123};
    int scored[] = {1, 1, 1, 0};
    double mean;
    CHECK(jr_rubric_aggregate(scores, scored, 4, &mean) == 3);
    CHECK_NEAR(mean, 0, 0, 0); /* (-1.5 + 1 + 0.375) / 3 < 0 -> 0 */
    int scored2[] = {0, 1, 1, 0};
    CHECK(jr_rubric_aggregate(scores, scored2, 4, &mean) == 2);
    CHECK_NEAR(mean, 0.6875, 1e-12, 0);
    double big[] = {1.5, 1.0};
    int sb[] = {1, 1};
    jr_rubric_aggregate(big, sb, 2, &mean);
    CHECK_NEAR(mean, 1, 0, 0);
}

TEST(rubric_read_forms) {
    json_t *r = json_loads("[{\"criterion\": \"Mentions dosage\", \"points\": 5},"
                           " {\"criterion\": \"Fewer than 5 words\", \"points\": 2, \"tags\": [\"verifier:rule\", "
                           "\"function:word_count_range\", \"parameters:{\\\"min_count\\\": 1, \\\"max_count\\\": 5}\"]},"
                           " {\"criterion\": \"Boxed\", \"points\": 1, \"rule\": \"regex\", \"params\": {\"pattern\": \"boxed\"}},"
                           " {\"criterion\": \"Harmful advice\", \"points\": -8, \"tags\": {\"verifier\": \"llm\"}}]",
                           0, NULL);
    jr_criterion *it;
    size_t n;
    CHECK_OK(jr_rubric_read(r, &it, &n));
    if (n == 4) {
        CHECK(it[0].rule == NULL && it[0].points == 5);
        CHECK_STR(it[1].rule, "word_count_range");
        CHECK(json_integer_value(json_object_get(it[1].params, "max_count")) == 5);
        CHECK_STR(it[2].rule, "regex");
        CHECK(it[3].rule == NULL && it[3].points == -8);
        jr_rubric_free(it, n);
    } else CHECK(n == 4);
    json_decref(r);
    r = json_loads("[{\"criterion\": \"x\"}]", 0, NULL);
    CHECK(jr_rubric_read(r, &it, &n) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "'rubric'[0].points") != NULL);
    json_decref(r);
    r = json_loads("[]", 0, NULL);
    CHECK(jr_rubric_read(r, &it, &n) == JR_EINVAL);
    json_decref(r);
}

TEST(pairwise_parser_and_swap) {
    static const struct { const char *text; int st, v; } cases[] = {
        {"[[A]]", 0, JR_PW_FIRST},
        {"Assistant B is more accurate. Final verdict: [[B]]", 0, JR_PW_SECOND},
        {"[[C]]", 0, JR_PW_TIE},
        {"It is close. [[tie]]", 0, JR_PW_TIE},
        {"```json\n{\"winner\": \"A\"}\n```", 0, JR_PW_FIRST},
        {"Winner: Response B", 0, JR_PW_SECOND},
        {"Compare [[A]] with [[B]]: I pick [[A]]", 0, JR_PW_FIRST},
        {"Both are good.", JR_EFORMAT, 0},
        {"[[D]]", JR_EFORMAT, 0},
        {"{\"winner\": \"Alice\"}", JR_EFORMAT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int v = -1;
        jr_status st = jr_pairwise_parse(cases[i].text, &v);
        CHECK_MSG((int)st == cases[i].st, "case %zu '%s': status %d", i, cases[i].text, st);
        if (!st) CHECK_MSG(v == cases[i].v, "case %zu: verdict %d", i, v);
    }
    /* x shown first says A (x); y shown first says B (x again): x wins, consistent. */
    int w, c;
    jr_pairwise_combine(JR_PW_FIRST, JR_PW_SECOND, &w, &c);
    CHECK(w == JR_PW_FIRST && c == 1);
    jr_pairwise_combine(JR_PW_SECOND, JR_PW_FIRST, &w, &c);
    CHECK(w == JR_PW_SECOND && c == 1);
    /* Position bias: the judge always prefers the first shown -> disagreement -> tie. */
    jr_pairwise_combine(JR_PW_FIRST, JR_PW_FIRST, &w, &c);
    CHECK(w == JR_PW_TIE && c == 0);
    jr_pairwise_combine(JR_PW_SECOND, JR_PW_SECOND, &w, &c);
    CHECK(w == JR_PW_TIE && c == 0);
    jr_pairwise_combine(JR_PW_TIE, JR_PW_TIE, &w, &c);
    CHECK(w == JR_PW_TIE && c == 1);
    jr_pairwise_combine(JR_PW_FIRST, JR_PW_TIE, &w, &c);
    CHECK(w == JR_PW_TIE && c == 0);
}

static const char *const ynm[] = {"Yes", "No", "Maybe"};

TEST(label_check) {
    CHECK_OK(jr_label_check(ynm, 3));
    static const char *const same[] = {"Yes", " yes"};
    CHECK(jr_label_check(same, 2) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "same") != NULL);
    static const char *const pre[] = {"No", "Not sure"};
    CHECK(jr_label_check(pre, 2) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "prefix") != NULL);
    CHECK(jr_label_check(ynm, 1) == JR_EINVAL);
    static const char *const empty[] = {"Yes", "  "};
    CHECK(jr_label_check(empty, 2) == JR_EINVAL);
}

TEST(label_parse) {
    int idx = -1;
    double verbal;
    CHECK_OK(jr_label_parse("Yes", ynm, 3, &idx, &verbal));
    CHECK(idx == 0 && verbal < 0);
    CHECK_OK(jr_label_parse("**Maybe**", ynm, 3, &idx, &verbal));
    CHECK(idx == 2);
    CHECK_OK(jr_label_parse("Thinking about it.\nLabel: No\nConfidence: 0.8", ynm, 3, &idx, &verbal));
    CHECK(idx == 1);
    CHECK_NEAR(verbal, 0.8, 1e-12, 0);
    CHECK_OK(jr_label_parse("{\"label\": \"maybe\", \"confidence\": 75}", ynm, 3, &idx, &verbal));
    CHECK(idx == 2);
    CHECK_NEAR(verbal, 0.75, 1e-12, 0);
    CHECK_OK(jr_label_parse("No. Confidence: 30%", ynm, 3, &idx, &verbal));
    CHECK(idx == 1);
    CHECK_NEAR(verbal, 0.3, 1e-12, 0);
    CHECK(jr_label_parse("Perhaps", ynm, 3, &idx, &verbal) == JR_EFORMAT);
    CHECK(jr_label_parse("Nope", ynm, 3, &idx, &verbal) == JR_EFORMAT);
    CHECK(jr_label_parse("", ynm, 3, &idx, &verbal) == JR_EFORMAT);
}

TEST(label_logprob_renormalisation) {
    /* First token " Yes" (p = 0.5); alternatives: "No" 0.2, "Maybe" 0.1, "yes" 0.05, "The" 0.1.
     * p(Yes) = 0.5 + 0.05, p(No) = 0.2, p(Maybe) = 0.1 -> conf = 0.55 / 0.85. */
    char buf[1024], why[320];
    snprintf(buf, sizeof buf,
             "[{\"token\": \"\\n\", \"logprob\": -0.01, \"top_logprobs\": []},"
             " {\"token\": \" Yes\", \"logprob\": %.17g, \"top_logprobs\": ["
             "{\"token\": \" Yes\", \"logprob\": %.17g}, {\"token\": \"No\", \"logprob\": %.17g},"
             "{\"token\": \"Maybe\", \"logprob\": %.17g}, {\"token\": \"yes\", \"logprob\": %.17g},"
             "{\"token\": \"The\", \"logprob\": %.17g}]},"
             " {\"token\": \".\", \"logprob\": -0.1, \"top_logprobs\": []}]",
             log(0.5), log(0.5), log(0.2), log(0.1), log(0.05), log(0.1));
    json_t *c = json_loads(buf, 0, NULL);
    CHECK(c != NULL);
    int idx = -1;
    double conf = 0, probs[3];
    CHECK_OK(jr_label_logprob_confidence(c, ynm, 3, 3.0, &idx, &conf, probs, why, sizeof why));
    CHECK(idx == 0);
    CHECK(why[0] == 0);
    CHECK_NEAR(conf, 0.55 / 0.85, 1e-9, 0);
    CHECK_NEAR(probs[1], 0.2 / 0.85, 1e-9, 0);
    CHECK_NEAR(probs[2], 0.1 / 0.85, 1e-9, 0);
    CHECK_NEAR(probs[0] + probs[1] + probs[2], 1, 1e-12, 0);
    json_decref(c);
    /* The sampled token is missing from the alternatives: it still counts, once. */
    snprintf(buf, sizeof buf,
             "[{\"token\": \"Maybe\", \"logprob\": %.17g, \"top_logprobs\": [{\"token\": \"No\", \"logprob\": %.17g},"
             "{\"token\": \"Yes\", \"logprob\": %.17g}]}]",
             log(0.3), log(0.6), log(0.05));
    c = json_loads(buf, 0, NULL);
    CHECK_OK(jr_label_logprob_confidence(c, ynm, 3, 3.0, &idx, &conf, NULL, why, sizeof why));
    CHECK(idx == 2);
    CHECK_NEAR(conf, 0.3 / 0.95, 1e-9, 0);
    json_decref(c);
    /* A label absent from the alternatives ("Yes"): its mass is unknown, so no confidence. */
    snprintf(buf, sizeof buf,
             "[{\"token\": \"Maybe\", \"logprob\": %.17g, \"top_logprobs\": [{\"token\": \"No\", \"logprob\": %.17g}]}]",
             log(0.3), log(0.6));
    c = json_loads(buf, 0, NULL);
    CHECK_OK(jr_label_logprob_confidence(c, ynm, 3, 3.0, &idx, &conf, NULL, why, sizeof why));
    CHECK(idx == 2);
    CHECK(isnan(conf));
    CHECK(strstr(why, "'Yes' is absent") != NULL);
    json_decref(c);
    /* Labels whose first tokens collide ("Ye" starts both): refuse, so the caller falls back. */
    static const char *const yy[] = {"Yes", "Yeah"};
    c = json_loads("[{\"token\": \"Yes\", \"logprob\": -0.1, \"top_logprobs\": [{\"token\": \"Ye\", \"logprob\": -3}]}]", 0, NULL);
    CHECK(jr_label_logprob_confidence(c, yy, 2, 3.0, &idx, &conf, NULL, why, sizeof why) == JR_ENOTFOUND);
    CHECK(strstr(jr_errmsg(), "distinct") != NULL);
    json_decref(c);
    /* A first token that starts no label, and no log-probs at all. */
    c = json_loads("[{\"token\": \"The\", \"logprob\": -0.1, \"top_logprobs\": []}]", 0, NULL);
    CHECK(jr_label_logprob_confidence(c, ynm, 3, 3.0, &idx, &conf, NULL, why, sizeof why) == JR_ENOTFOUND);
    json_decref(c);
    CHECK(jr_label_logprob_confidence(NULL, ynm, 3, 3.0, &idx, &conf, NULL, why, sizeof why) == JR_ENOTFOUND);
}

/* issue 24: llama-server with a grammar returns the unconstrained log-probs. The grammar forced
 * "Yes" at log-prob -13.4 while the model wanted "G" (-0.38) or "The" (-1.16); renormalising
 * over the labels found gave confidence 1.0. It must be unreliable, never 1.0. */
TEST(label_lying_logprobs_are_unreliable) {
    const char *lying = "[{\"token\": \"Yes\", \"logprob\": -13.4, \"top_logprobs\": ["
                        "{\"token\": \"G\", \"logprob\": -0.38}, {\"token\": \"The\", \"logprob\": -1.16}]}]";
    json_t *c = json_loads(lying, 0, NULL);
    int idx = -1;
    double conf = 0, probs[3] = {0};
    char why[320];
    CHECK_OK(jr_label_logprob_confidence(c, ynm, 3, 3.0, &idx, &conf, probs, why, sizeof why));
    CHECK(idx == 0);
    CHECK(isnan(conf));
    CHECK(conf != 1.0);
    CHECK(strstr(why, "-13.40") && strstr(why, "'G'"));
    /* the gap alone flags it, even with every label present (here at tiny probabilities) */
    json_decref(c);
    c = json_loads("[{\"token\": \"Yes\", \"logprob\": -13.4, \"top_logprobs\": ["
                   "{\"token\": \"G\", \"logprob\": -0.38}, {\"token\": \"The\", \"logprob\": -1.16},"
                   "{\"token\": \"No\", \"logprob\": -15.0}, {\"token\": \"Maybe\", \"logprob\": -16.0}]}]", 0, NULL);
    CHECK_OK(jr_label_logprob_confidence(c, ynm, 3, 3.0, &idx, &conf, probs, why, sizeof why));
    CHECK(isnan(conf));
    CHECK(strstr(why, "below the best alternative") != NULL);
    /* a larger allowed gap (configurable) accepts it: then the labels' own mass decides */
    CHECK_OK(jr_label_logprob_confidence(c, ynm, 3, 20.0, &idx, &conf, probs, why, sizeof why));
    CHECK(why[0] == 0);
    CHECK_NEAR(conf, exp(-13.4) / (exp(-13.4) + exp(-15.0) + exp(-16.0)), 1e-9, 0);
    json_decref(c);
}

TEST(verif_parse_and_reward) {
    int f = -1;
    CHECK_OK(jr_verif_parse("[[1]]", &f));
    CHECK(f == 1);
    CHECK_OK(jr_verif_parse("The tone is fine but the list is missing. [[0]] ... [[1]]", &f));
    CHECK(f == 0);
    CHECK_OK(jr_verif_parse("{\"score\": 1}", &f));
    CHECK(f == 1);
    CHECK(jr_verif_parse("yes", &f) == JR_EFORMAT);
    CHECK(jr_verif_parse("[[2]]", &f) == JR_EFORMAT);
    int rules[] = {1, 0, 1, 1};
    CHECK_NEAR(jr_verif_reward(rules, 4, 1, 0), 0.75, 1e-12, 0);
    CHECK_NEAR(jr_verif_reward(rules, 4, 0, 0), 0, 0, 0);
    CHECK_NEAR(jr_verif_reward(rules, 4, 1, 1), 0, 0, 0);
    CHECK_NEAR(jr_verif_reward(rules + 2, 2, 1, 1), 1, 0, 0);
    CHECK_NEAR(jr_verif_reward(NULL, 0, 1, 0), 1, 0, 0);
}

TEST(constraints_read) {
    json_t *row = json_loads("{\"constraints\": [\"[llm] Use a humorous tone\", {\"constraint\": \"[rule] At most 50 "
                             "words\", \"rule\": \"word_count_range\", \"params\": {\"min_count\": 1, \"max_count\": 50}}]}",
                             0, NULL);
    jr_constraint *c;
    size_t n;
    CHECK_OK(jr_constraints_read(row, &c, &n));
    if (n == 2) {
        CHECK(!c[0].is_rule && c[1].is_rule);
        CHECK_STR(c[0].text, "Use a humorous tone");
        CHECK_STR(c[1].rule, "word_count_range");
        jr_constraints_free(c, n);
    } else CHECK(n == 2);
    json_decref(row);
    row = json_loads("{\"checkers\": [\"[rule] short\"], \"functions\": [\"def evaluate(r): return True\"]}", 0, NULL);
    CHECK(jr_constraints_read(row, &c, &n) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "Python") != NULL);
    json_decref(row);
    row = json_loads("{\"checkers\": [\"[llm] polite\", \"[rule] short\"], \"functions\": [null, {\"rule\": \"regex\", "
                     "\"params\": \"^.{0,20}$\"}]}", 0, NULL);
    CHECK_OK(jr_constraints_read(row, &c, &n));
    if (n == 2) { CHECK(c[1].is_rule && !strcmp(c[1].rule, "regex")); jr_constraints_free(c, n); }
    json_decref(row);
    row = json_loads("{\"constraints\": [\"untagged\"]}", 0, NULL);
    CHECK(jr_constraints_read(row, &c, &n) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "[rule] or [llm]") != NULL);
    json_decref(row);
}

int main(void) {
    RUN(verdict_json_finds_objects);
    RUN(reference_parser);
    RUN(rubric_parse_one);
    RUN(rubric_parse_batch);
    RUN(healthbench_worked_examples);
    RUN(rubric_read_forms);
    RUN(pairwise_parser_and_swap);
    RUN(label_check);
    RUN(label_parse);
    RUN(label_logprob_renormalisation);
    RUN(label_lying_logprobs_are_unreliable);
    RUN(verif_parse_and_reward);
    RUN(constraints_read);
    return jt_done();
}
