/* test_verify.c - answer normalisation and equivalence (equal and unequal pairs), extraction, and the
 * rule verifiers: exact, regex, repetition, length, efficiency, simplicity, named rule checks */
#include "harness.h"

#include "judgerl/verify.h"

typedef struct {
    const char *a, *b;
    int equal;
} pair;

static const pair pairs[] = {
    /* equal */
    {"\\boxed{\\frac{1}{2}}", "1/2", 1},
    {"$\\dfrac{3}{4}$", "\\frac{3}{4}", 1},
    {"\\tfrac{3}{4}", "0.75", 1},
    {"\\frac12", "\\frac{1}{2}", 1},
    {"\\frac12", "0.5", 1},
    {"0.5", ".5", 1},
    {"1,000", "1000", 1},
    {"1,234,567", "1234567", 1},
    {"\\$1,234.50", "1234.5", 1},
    {"50\\%", "50%", 1},
    {"50%", "0.5", 1},
    {"50%", "50", 1},
    {"12 cm", "12", 1},
    {"\\text{12 cm}", "12", 1},
    {"12\\text{ cm}", "12", 1},
    {"30^\\circ", "30", 1},
    {"30^{\\circ}", "30 degrees", 1},
    {"Paris.", "paris", 1},
    {"  42 ", "42", 1},
    {"42.", "42", 1},
    {"x = 5", "5", 1},
    {"\\left( 1, 2 \\right)", "(1,2)", 1},
    {"(1, 2)", "(1.0, 2)", 1},
    {"\\{1,2,3\\}", "\\{1, 2, 3\\}", 1},
    {"\\sqrt2", "\\sqrt{2}", 1},
    {"\\frac{\\sqrt{3}}{2}", "\\dfrac{\\sqrt3}{2}", 1},
    {"-\\frac{1}{4}", "-0.25", 1},
    {"\\frac{-1}{4}", "-1/4", 1},
    {"The answer is \\boxed{17}.", "17", 1},
    {"so we get \\boxed{7} and then \\boxed{8}", "8", 1},
    {"\\textbf{Yes}", "yes", 1},
    {"\\mathrm{B}", "b", 1},
    {"0.333333", "\\frac{1}{3}", 1},
    {"2\\,000", "2000", 1},
    {"\\(\\frac{2}{4}\\)", "0.5", 1},
    {"3.0", "3", 1},
    {"+3", "3", 1},
    {"1e3", "1e3", 1},
    {"[0, 1)", "[0,1)", 1},
    {"5 apples", "5", 1},
    /* not equal */
    {"1/2", "1/3", 0},
    {"0.33", "\\frac{1}{3}", 0},
    {"\\frac{1}{2}", "2", 0},
    {"1,2", "12", 0},
    {"(1,2)", "[1,2]", 0},
    {"(1,2)", "(2,1)", 0},
    {"[0, 1)", "[0, 1]", 0},
    {"12 cm", "13", 0},
    {"2x", "2", 0},
    {"Paris", "London", 0},
    {"-3", "3", 0},
    {"50%", "0.05", 0},
    {"\\sqrt{2}", "\\sqrt{3}", 0},
    {"", "", 0},
    {"\\boxed{}", "0", 0},
    {"yes", "no", 0},
    {"1,000", "1", 0},
    {"x+1", "x-1", 0},
    {"1/0", "0", 0},
    {"\\frac{1}{0}", "1/0", 0},
};

TEST(answer_pairs) {
    int n = (int)(sizeof pairs / sizeof *pairs), n_eq = 0, n_ne = 0;
    for (int i = 0; i < n; i++) {
        int got = jr_answer_equiv(pairs[i].a, pairs[i].b);
        int rev = jr_answer_equiv(pairs[i].b, pairs[i].a);
        CHECK_MSG(got == pairs[i].equal, "pair %d: '%s' vs '%s' gave %d", i, pairs[i].a, pairs[i].b, got);
        CHECK_MSG(rev == got, "pair %d not symmetric", i);
        if (pairs[i].equal) n_eq++;
        else n_ne++;
    }
    CHECK(n_eq >= 20 && n_ne >= 20);
    CHECK(n >= 40);
}

TEST(normalize_forms) {
    static const char *const io[][2] = {
        {"\\boxed{\\dfrac{1}{2}}", "\\frac{1}{2}"},
        {"$\\left(3, 4\\right)$", "(3,4)"},
        {"\\text{ Paris }.", "paris"},
        {"1,234", "1234"},
        {"10 \\%", "10%"},
        {"\\frac 1 2", "\\frac{1}{2}"},
        {"\\leftarrow", "\\leftarrow"},
        {"y = 2x + 1", "2x+1"},
        {"a + b = c", "a+b=c"},
    };
    for (size_t i = 0; i < sizeof io / sizeof *io; i++) {
        char *s = jr_answer_normalize(io[i][0]);
        CHECK_STR(s, io[i][1]);
        free(s);
    }
}

TEST(extract_answer) {
    static const char *const io[][2] = {
        {"We compute... \\boxed{\\frac{3}{5}}.", "\\frac{3}{5}"},
        {"nested \\boxed{\\frac{1}{\\sqrt{2}}} end", "\\frac{1}{\\sqrt{2}}"},
        {"Thus the answer is 42\nbye", "42"},
        {"Answer: B", "B"},
        {"\\fbox{7}", "7"},
        {"\\boxed 9$", "9"},
        {"plain", "plain"},
    };
    for (size_t i = 0; i < sizeof io / sizeof *io; i++) {
        char *s = jr_answer_extract(io[i][0]);
        CHECK_STR(s, io[i][1]);
        free(s);
    }
}

TEST(answer_number) {
    double v;
    int pct;
    CHECK(jr_answer_number("\\frac{3}{4}", &v, &pct) && fabs(v - 0.75) < 1e-12 && !pct);
    CHECK(jr_answer_number("-\\frac{3}{4}", &v, &pct) && fabs(v + 0.75) < 1e-12);
    CHECK(jr_answer_number("12.5%", &v, &pct) && fabs(v - 12.5) < 1e-12 && pct);
    CHECK(!jr_answer_number("12.5.3", &v, &pct));
    CHECK(!jr_answer_number("inf", &v, &pct));
    CHECK(!jr_answer_number("0x10", &v, &pct));
    CHECK(!jr_answer_number("", &v, &pct));
}

TEST(exact_and_regex) {
    CHECK(jr_verify_exact("  Yes\n", "Yes", 0));
    CHECK(!jr_verify_exact("yes", "Yes", 0));
    CHECK(jr_verify_exact("yes", "Yes", 1));
    CHECK(!jr_verify_exact("Yes!", "Yes", 1));
    int m;
    CHECK_OK(jr_verify_regex("The result: \\boxed{4}", "\\\\boxed\\{[^}]+\\}", &m));
    CHECK(m == 1);
    CHECK_OK(jr_verify_regex("no box here", "\\\\boxed\\{", &m));
    CHECK(m == 0);
    CHECK_OK(jr_verify_regex("caf\xc3\xa9", "^caf.$", &m));
    CHECK(m == 1);
    CHECK(jr_verify_regex("x", "(unclosed", &m) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "(unclosed") != NULL);
}

TEST(repetition) {
    CHECK_NEAR(jr_repetition_rate("a b c d e f", 2), 0, 0, 0);
    /* "a b a b a b": bigrams ab ba ab ba ab -> 2 distinct of 5 -> 1 - 2/5 */
    CHECK_NEAR(jr_repetition_rate("a b a b a b", 2), 0.6, 1e-12, 0);
    CHECK_NEAR(jr_repetition_rate("The cat THE cat", 2), 1 - 2.0 / 3, 1e-12, 0);
    CHECK_NEAR(jr_repetition_rate("one two", 3), 0, 0, 0);
    CHECK_NEAR(jr_repetition_rate("x x x x x", 1), 0.8, 1e-12, 0);
    CHECK(jr_count_words("  a  b\tc\n") == 3);
}

TEST(length_efficiency_simplicity) {
    CHECK_NEAR(jr_length_score(50, 10, 100, 20), 1, 0, 0);
    CHECK_NEAR(jr_length_score(110, 10, 100, 20), 0.5, 1e-12, 0);
    CHECK_NEAR(jr_length_score(0, 10, 100, 20), 0.5, 1e-12, 0);
    CHECK_NEAR(jr_length_score(200, 10, 0, 20), 1, 0, 0);
    CHECK_NEAR(jr_length_score(5, 10, 100, 0), 0, 0, 0);
    CHECK_NEAR(jr_efficiency_score(0.005, 0.01, 30, 60, 0.5), 0.5, 1e-12, 0);
    CHECK_NEAR(jr_efficiency_score(0.0, 0.01, 90, 60, 0.5), 0.5, 1e-12, 0);
    CHECK_NEAR(jr_efficiency_score(-1, 0.01, 15, 60, 0.5), 0.75, 1e-12, 0);
    CHECK_NEAR(jr_efficiency_score(-1, 0.01, -1, 60, 0.5), -1, 0, 0);
    CHECK_NEAR(jr_simplicity_score(1, 1, 8), 1, 0, 0);
    CHECK_NEAR(jr_simplicity_score(3, 1, 8), 5.0 / 7, 1e-12, 0);
    CHECK_NEAR(jr_simplicity_score(9, 1, 8), 0, 0, 0);
}

TEST(named_rules) {
    int pass;
    json_t *p = json_pack("{s:s}", "answer", "\\frac{1}{2}");
    CHECK_OK(jr_rule_check("math_verify", p, "so \\boxed{0.5}", &pass));
    CHECK(pass == 1);
    CHECK_OK(jr_rule_check("math_verify", p, "so \\boxed{0.6}", &pass));
    CHECK(pass == 0);
    json_decref(p);
    p = json_pack("{s:i,s:s}", "min_count", 2, "max_count", "3");
    CHECK_OK(jr_rule_check("word_count_range", p, "one two three", &pass));
    CHECK(pass == 1);
    CHECK_OK(jr_rule_check("word_count_range", p, "one two three four", &pass));
    CHECK(pass == 0);
    json_decref(p);
    p = json_pack("{s:i,s:i}", "min_count", 5, "max_count", 3);
    CHECK(jr_rule_check("word_count_range", p, "x", &pass) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "min_count=5") != NULL);
    json_decref(p);
    p = json_pack("{s:[s,s],s:b}", "texts", "Apple", "pear", "casefold", 1);
    CHECK_OK(jr_rule_check("contains", p, "an apple and a PEAR", &pass));
    CHECK(pass == 1);
    CHECK_OK(jr_rule_check("contains", p, "an apple", &pass));
    CHECK(pass == 0);
    json_decref(p);
    p = json_string("^\\d+$");
    CHECK_OK(jr_rule_check("regex", p, "123", &pass));
    CHECK(pass == 1);
    json_decref(p);
    p = json_pack("{s:i,s:f}", "n", 1, "max_rate", 0.5);
    CHECK_OK(jr_rule_check("max_repetition", p, "a a a a", &pass));
    CHECK(pass == 0);
    json_decref(p);
    /* IFEval instructions as rules. */
    p = json_pack("{s:[s]}", "keywords", "apple");
    CHECK_OK(jr_rule_check("ifeval:keywords:existence", p, "I ate an apple today.", &pass));
    CHECK(pass == 1);
    CHECK_OK(jr_rule_check("ifeval:keywords:existence", p, "I ate a pear today.", &pass));
    CHECK(pass == 0);
    json_decref(p);
    CHECK_OK(jr_rule_check("ifeval:punctuation:no_comma", NULL, "No commas here.", &pass));
    CHECK(pass == 1);
    p = json_pack("{s:s,s:n}", "instruction_id", "punctuation:no_comma", "kwargs");
    CHECK_OK(jr_rule_check("ifeval", p, "One, two.", &pass));
    CHECK(pass == 0);
    json_decref(p);
    CHECK(jr_rule_known("ifeval:keywords:existence") && !jr_rule_known("ifeval:keywords:nope"));
    CHECK(jr_rule_check("ifeval:keywords:nope", NULL, "x", &pass) != JR_OK);
    CHECK(strstr(jr_errmsg(), "keywords:nope") != NULL);
    CHECK(jr_rule_check("no_such_rule", NULL, "x", &pass) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "no_such_rule") != NULL);
    CHECK(jr_rule_known("regex") && !jr_rule_known("bogus"));
}

int main(void) {
    RUN(answer_pairs);
    RUN(normalize_forms);
    RUN(extract_answer);
    RUN(answer_number);
    RUN(exact_and_regex);
    RUN(repetition);
    RUN(length_efficiency_simplicity);
    RUN(named_rules);
    return jt_done();
}
