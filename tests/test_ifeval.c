/* test_ifeval.c - unit tests of the IFEval checkers: each instruction at its thresholds, empty and
 * unicode responses, markdown variants, loose mode, kwargs validation, the row API */
#include <jansson.h>
#include <stdbool.h>

#include "harness.h"
#include "judgerl/ifeval.h"

/* One case: instruction, kwargs (JSON), response, expected strict and loose verdicts. Every
 * expectation was checked against the official Python scorer (tools/ifeval_official_diff.py
 * --cases tests/test_ifeval.c). */
typedef struct {
    const char *id, *kwargs, *response;
    int strict, loose;
} tcase;

static const tcase cases[] = {
    /* keywords:existence - regex search, case-insensitive, Unicode case folding */
    {"keywords:existence", "{\"keywords\": [\"apple\", \"Banana\"]}", "I like APPLE and banana.", 1, 1},
    {"keywords:existence", "{\"keywords\": [\"apple\", \"Banana\"]}", "I like apples.", 0, 0},
    {"keywords:existence", "{\"keywords\": [\"apple\"]}", "", 0, 0},
    {"keywords:existence", "{\"keywords\": [\"apple\"]}", "   \n\t ", 0, 0},
    {"keywords:existence", "{\"keywords\": [\"café\"]}", "Un CAFÉ noir", 1, 1},
    /* keywords:frequency - occurrences (substrings too) against the threshold */
    {"keywords:frequency", "{\"keyword\": \"cat\", \"frequency\": 2, \"relation\": \"at least\"}", "cat Cat dog", 1, 1},
    {"keywords:frequency", "{\"keyword\": \"cat\", \"frequency\": 2, \"relation\": \"at least\"}", "cat dog", 0, 0},
    {"keywords:frequency", "{\"keyword\": \"cat\", \"frequency\": 2, \"relation\": \"at least\"}", "concatenate cat", 1, 1},
    {"keywords:frequency", "{\"keyword\": \"cat\", \"frequency\": 2, \"relation\": \"less than\"}", "cat cat", 0, 0},
    {"keywords:frequency", "{\"keyword\": \"cat\", \"frequency\": 2, \"relation\": \"less than\"}", "one cat", 1, 1},
    {"keywords:frequency", "{\"keyword\": \" cat \", \"frequency\": 1, \"relation\": \"at least\"}", "CAT", 1, 1},
    /* keywords:forbidden_words - whole words only */
    {"keywords:forbidden_words", "{\"forbidden_words\": [\"cat\", \"dog\"]}", "concatenate hotdogs", 1, 1},
    {"keywords:forbidden_words", "{\"forbidden_words\": [\"cat\", \"dog\"]}", "The Cat sat.", 0, 0},
    {"keywords:forbidden_words", "{\"forbidden_words\": [\"cat\"]}", "", 0, 0},
    {"keywords:forbidden_words", "{\"forbidden_words\": [\"naïve\"]}", "So NAÏVE!", 0, 0},
    /* keywords:letter_frequency - case-insensitive letter count */
    {"keywords:letter_frequency", "{\"letter\": \"a\", \"let_frequency\": 3, \"let_relation\": \"at least\"}", "AaA", 1, 1},
    {"keywords:letter_frequency", "{\"letter\": \"a\", \"let_frequency\": 3, \"let_relation\": \"at least\"}", "Aa á", 0, 0},
    {"keywords:letter_frequency", "{\"letter\": \"A\", \"let_frequency\": 3, \"let_relation\": \"less than\"}", "banana", 0, 0},
    {"keywords:letter_frequency", "{\"letter\": \"z\", \"let_frequency\": 1, \"let_relation\": \"less than\"}", "no such letter", 1, 1},
    /* language:response_language */
    {"language:response_language", "{\"language\": \"en\"}",
     "The quick brown fox jumps over the lazy dog while the farmer watches from the porch.", 1, 1},
    {"language:response_language", "{\"language\": \"fr\"}",
     "The quick brown fox jumps over the lazy dog while the farmer watches from the porch.", 0, 0},
    {"language:response_language", "{\"language\": \"fr\"}",
     "Le renard brun rapide saute par-dessus le chien paresseux pendant que le fermier regarde depuis le porche.", 1, 1},
    {"language:response_language", "{\"language\": \"fr\"}", "12345 !!! 678", 1, 1},
    {"language:response_language", "{\"language\": \"fr\"}", "", 0, 0},
    /* length_constraints:number_sentences */
    {"length_constraints:number_sentences", "{\"num_sentences\": 3, \"relation\": \"at least\"}", "One. Two. Three.", 1, 1},
    {"length_constraints:number_sentences", "{\"num_sentences\": 3, \"relation\": \"at least\"}", "One. Two.", 0, 0},
    {"length_constraints:number_sentences", "{\"num_sentences\": 3, \"relation\": \"less than\"}", "One. Two. Three.", 0, 0},
    {"length_constraints:number_sentences", "{\"num_sentences\": 3, \"relation\": \"less than\"}",
     "Mr. Smith went to Washington. He slept.", 1, 1},
    {"length_constraints:number_sentences", "{\"num_sentences\": 3, \"relation\": \"at least\"}",
     "1. First item\n2. Second item", 1, 1},
    {"length_constraints:number_sentences", "{\"num_sentences\": 2, \"relation\": \"at least\"}",
     "* no periods here\n* nor here", 0, 0},
    /* length_constraints:number_paragraphs - split at ***, empty first/last pieces dropped */
    {"length_constraints:number_paragraphs", "{\"num_paragraphs\": 2}", "a\n***\nb", 1, 1},
    {"length_constraints:number_paragraphs", "{\"num_paragraphs\": 2}", "a\n***\n\n***\nb", 0, 0},
    {"length_constraints:number_paragraphs", "{\"num_paragraphs\": 2}", "***\na\n***\nb\n***", 1, 1},
    {"length_constraints:number_paragraphs", "{\"num_paragraphs\": 1}", "a *** b", 0, 1},
    {"length_constraints:number_paragraphs", "{\"num_paragraphs\": 1}", "only one", 1, 1},
    /* length_constraints:number_words - \w+ runs */
    {"length_constraints:number_words", "{\"num_words\": 3, \"relation\": \"less than\"}", "one two", 1, 1},
    {"length_constraints:number_words", "{\"num_words\": 3, \"relation\": \"less than\"}", "one, two... three!", 0, 0},
    {"length_constraints:number_words", "{\"num_words\": 3, \"relation\": \"at least\"}", "don't stop", 1, 1},
    {"length_constraints:number_words", "{\"num_words\": 2, \"relation\": \"at least\"}", "naïve café", 1, 1},
    {"length_constraints:number_words", "{\"num_words\": 2, \"relation\": \"at least\"}", "日本語です", 0, 0},
    /* length_constraints:nth_paragraph_first_word */
    {"length_constraints:nth_paragraph_first_word",
     "{\"num_paragraphs\": 2, \"nth_paragraph\": 2, \"first_word\": \"Second\"}", "First one.\n\n\"Second, para\"", 1, 1},
    {"length_constraints:nth_paragraph_first_word",
     "{\"num_paragraphs\": 3, \"nth_paragraph\": 2, \"first_word\": \"second\"}", "First one.\n\nSecond para", 0, 0},
    {"length_constraints:nth_paragraph_first_word",
     "{\"num_paragraphs\": 2, \"nth_paragraph\": 2, \"first_word\": \"second\"}", "first\n\n\n\nsecond", 0, 0},
    {"length_constraints:nth_paragraph_first_word",
     "{\"num_paragraphs\": 1, \"nth_paragraph\": 1, \"first_word\": \"élan\"}", "ÉLAN! vital", 1, 1},
    /* detectable_content:number_placeholders */
    {"detectable_content:number_placeholders", "{\"num_placeholders\": 2}", "[name] lives at [address]", 1, 1},
    {"detectable_content:number_placeholders", "{\"num_placeholders\": 2}", "[name] lives at [addr\ness]", 0, 0},
    {"detectable_content:number_placeholders", "{\"num_placeholders\": 1}", "[[x]]", 1, 1},
    /* detectable_content:postscript */
    {"detectable_content:postscript", "{\"postscript_marker\": \"P.S.\"}", "Hi\np.s. bye", 1, 1},
    {"detectable_content:postscript", "{\"postscript_marker\": \"P.S.\"}", "Hi\nPS bye", 0, 0},
    {"detectable_content:postscript", "{\"postscript_marker\": \"P.P.S\"}", "Hi\nP. P. S note", 1, 1},
    {"detectable_content:postscript", "{\"postscript_marker\": \"Note:\"}", "Text\nNOTE: more", 1, 1},
    /* detectable_format:number_bullet_lists - exactly n lines starting with * or - */
    {"detectable_format:number_bullet_lists", "{\"num_bullets\": 2}", "* a\n* b", 1, 1},
    {"detectable_format:number_bullet_lists", "{\"num_bullets\": 2}", "* a\n- b\n- c", 0, 1},
    {"detectable_format:number_bullet_lists", "{\"num_bullets\": 2}", "**Bold title**\n* a\n* b", 1, 1},
    {"detectable_format:number_bullet_lists", "{\"num_bullets\": 2}", "Intro:\n  * indented\n- x", 1, 1},
    {"detectable_format:number_bullet_lists", "{\"num_bullets\": 1}", "", 0, 0},
    /* detectable_format:constrained_response */
    {"detectable_format:constrained_response", "{}", "My answer is yes.", 1, 1},
    {"detectable_format:constrained_response", "{}", "my answer is yes.", 0, 0},
    {"detectable_format:constrained_response", "{}", "**My answer is maybe.** Because.", 1, 1},
    /* detectable_format:number_highlighted_sections */
    {"detectable_format:number_highlighted_sections", "{\"num_highlights\": 2}", "*a* and **b**", 1, 1},
    {"detectable_format:number_highlighted_sections", "{\"num_highlights\": 1}", "* * and ** **", 0, 0},
    {"detectable_format:number_highlighted_sections", "{\"num_highlights\": 2}", "*one*\n*two\nthree*", 0, 0},
    /* detectable_format:multiple_sections */
    {"detectable_format:multiple_sections", "{\"section_spliter\": \"Section\", \"num_sections\": 2}",
     "Section 1\nx\nSection 2\ny", 1, 1},
    {"detectable_format:multiple_sections", "{\"section_spliter\": \"Section\", \"num_sections\": 2}",
     "section 1\nx\nsection 2\ny", 0, 0},
    {"detectable_format:multiple_sections", "{\"section_spliter\": \" SECTION \", \"num_sections\": 1}",
     "SECTION 7: intro", 1, 1},
    /* detectable_format:json_format - Python json.loads after stripping markdown fences */
    {"detectable_format:json_format", "{}", "```json\n{\"a\": [1, 2.5e3, null, NaN, -Infinity]}\n```", 1, 1},
    {"detectable_format:json_format", "{}", "{'a': 1}", 0, 0},
    {"detectable_format:json_format", "{}", "{\"a\": 1} extra", 0, 0},
    {"detectable_format:json_format", "{}", "\"just a string\"", 1, 1},
    {"detectable_format:json_format", "{}", "```\n[1, 2,]\n```", 0, 0},
    {"detectable_format:json_format", "{}", "Here it is:\n{\"a\": 1}", 0, 1},
    /* detectable_format:title */
    {"detectable_format:title", "{}", "<<My Title>>\nText", 1, 1},
    {"detectable_format:title", "{}", "<< >>\n<<>>", 0, 0},
    {"detectable_format:title", "{}", "<< >> and <<>>", 1, 1}, /* greedy: ">> and <<" is the title */
    {"detectable_format:title", "{}", "<<a\nb>>", 0, 0},
    {"detectable_format:title", "{}", "<<Ünïcødé>>", 1, 1},
    /* combination:two_responses */
    {"combination:two_responses", "{}", "A\n******\nB", 1, 1},
    {"combination:two_responses", "{}", "A\n******\nA", 0, 0},
    {"combination:two_responses", "{}", "A******B******C", 0, 0},
    {"combination:two_responses", "{}", "******A******B", 1, 1},
    {"combination:two_responses", "{}", "A******\n******B", 0, 0},
    /* combination:repeat_prompt */
    {"combination:repeat_prompt", "{\"prompt_to_repeat\": \"Say hi.\"}", "  say HI. Hi!", 1, 1},
    {"combination:repeat_prompt", "{\"prompt_to_repeat\": \"Say hi.\"}", "Hi. Say hi.", 0, 0},
    {"combination:repeat_prompt", "{\"prompt_to_repeat\": \"Say hi.\"}", "Sure:\nSay hi. Hi!", 0, 1},
    /* startend:end_checker */
    {"startend:end_checker", "{\"end_phrase\": \"Any other questions?\"}", "Text. any other questions?\"", 1, 1},
    {"startend:end_checker", "{\"end_phrase\": \"Any other questions?\"}", "Any other questions? Yes", 0, 0},
    {"startend:end_checker", "{\"end_phrase\": \"Any other questions?\"}", "Text. Any other questions?\n(note)", 0, 1},
    /* startend:quotation */
    {"startend:quotation", "{}", "\"quoted\"", 1, 1},
    {"startend:quotation", "{}", "\"", 0, 0},
    {"startend:quotation", "{}", " \"a\" ", 1, 1},
    {"startend:quotation", "{}", "Sure!\n\"quoted\"", 0, 1},
    {"startend:quotation", "{}", "“curly”", 0, 0},
    {"startend:quotation", "{}", "\u3000\"wide space\"\u3000\u00a0\n", 1, 1},
    {"startend:quotation", "{}", "\"zero-width space is not whitespace\"\u200b", 0, 0},
    /* change_case:capital_word_frequency */
    {"change_case:capital_word_frequency", "{\"capital_frequency\": 2, \"capital_relation\": \"at least\"}",
     "HELLO WORLD and more", 1, 1},
    {"change_case:capital_word_frequency", "{\"capital_frequency\": 2, \"capital_relation\": \"at least\"}",
     "HELLO world", 0, 0},
    {"change_case:capital_word_frequency", "{\"capital_frequency\": 2, \"capital_relation\": \"at least\"}",
     "DON'T", 1, 1},
    {"change_case:capital_word_frequency", "{\"capital_frequency\": 2, \"capital_relation\": \"less than\"}", "I AM", 0, 0},
    {"change_case:capital_word_frequency", "{\"capital_frequency\": 3, \"capital_relation\": \"at least\"}",
     "**NASA**, (ESA) and JAXA-2", 1, 1},
    /* change_case:english_capital / english_lowercase */
    {"change_case:english_capital", "{}", "THIS IS AN ENGLISH SENTENCE WRITTEN ENTIRELY IN CAPITAL LETTERS.", 1, 1},
    {"change_case:english_capital", "{}", "This is an English sentence written in mixed case letters.", 0, 0},
    {"change_case:english_capital", "{}", "1234 5678", 0, 0},
    {"change_case:english_lowercase", "{}", "this is an english sentence written entirely in lower case letters.", 1, 1},
    {"change_case:english_lowercase", "{}", "ceci est une phrase française écrite entièrement en minuscules.", 0, 0},
    {"change_case:english_lowercase", "{}", "Hello there\nthis is an english sentence written in lower case letters.", 0, 1},
    /* punctuation:no_comma */
    {"punctuation:no_comma", "{}", "no commas here", 1, 1},
    {"punctuation:no_comma", "{}", "a, b", 0, 0},
    {"punctuation:no_comma", "{}", "a，b", 1, 1},
};

static int check_one(const tcase *c, jr_ifeval_mode mode) {
    json_error_t err;
    json_t *kw = json_loads(c->kwargs, 0, &err);
    jr_ifeval_instr *ins = NULL;
    jr_status st = jr_ifeval_instr_new(c->id, kw, NULL, &ins);
    json_decref(kw);
    if (st) {
        printf("  %s: %s\n", c->id, jr_errmsg());
        return -1;
    }
    int r = jr_ifeval_instr_check(ins, c->response, strlen(c->response), mode);
    jr_ifeval_instr_free(ins);
    return r;
}

TEST(every_instruction_has_cases) {
    for (int i = 0; i < JR_IFEVAL_N_INSTRUCTIONS; i++) {
        int n = 0;
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
            if (!strcmp(cases[k].id, jr_ifeval_instruction_name(i))) n++;
        CHECK_MSG(n >= 3, "%s has %d cases", jr_ifeval_instruction_name(i), n);
    }
    CHECK(jr_ifeval_instruction_name(JR_IFEVAL_N_INSTRUCTIONS) == NULL);
    CHECK(jr_ifeval_instruction_known("punctuation:no_comma"));
    CHECK(!jr_ifeval_instruction_known("punctuation:no_commas"));
}

TEST(checker_cases_strict_and_loose) {
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const tcase *c = &cases[k];
        int s = check_one(c, JR_IFEVAL_STRICT), l = check_one(c, JR_IFEVAL_LOOSE);
        CHECK_MSG(s == c->strict, "%s %s on \"%s\": strict %d, expected %d", c->id, c->kwargs, c->response, s, c->strict);
        CHECK_MSG(l == c->loose, "%s %s on \"%s\": loose %d, expected %d", c->id, c->kwargs, c->response, l, c->loose);
    }
}

/* Expected counts from NLTK 3.8's PunktSentenceTokenizer loaded with judgerl's English parameters
 * (punkt_params() in tools/ifeval_official_diff.py). */
TEST(sentence_counts) {
    static const struct {
        const char *text;
        size_t n;
    } s[] = {
        {"", 0},
        {"Hello world", 1},
        {"Hello world. This is it.", 2},
        {"Hello world.This is it.", 1},
        {"What? Really! Yes.", 3},
        {"Really?! Next one.", 2},
        {"Wait... What happened?", 2},
        {"He said \"stop.\" Then he left.", 2},
        {"(Sent one.) Sent two.", 2},
        {"Mr. Smith and Dr. Jones met at 5 p.m. on Tuesday.", 1},
        {"It costs 3.50 dollars. Cheap.", 2},
        {"1. Apples\n2. Pears\n3. Plums", 4},
        {"see item 2. the next one", 1},
        {"Plan A. The next plan.", 2},
        {"J. K. Rowling wrote it.", 1},
        {"e.g. this one. And that.", 3},
        {"I. Introduction\nII. Main part", 3},
        {"Franklin D. Roosevelt said so.", 1},
        {"See part C. Overview follows.", 1},
        {"Line one\nLine two\n\nLine three", 1},
        {"Ends with space.   ", 1},
        {"Unicode: café. Naïve idea! Done", 3},
        {"## Title\n\nFirst sentence. Second sentence.", 2},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        size_t got = jr_ifeval_count_sentences(s[i].text, strlen(s[i].text));
        CHECK_MSG(got == s[i].n, "\"%s\": %zu sentences, expected %zu", s[i].text, got, s[i].n);
    }
}

TEST(word_and_capital_counts) {
    CHECK(jr_ifeval_count_words("", 0) == 0);
    CHECK(jr_ifeval_count_words("a_b c-d e'f", 11) == 5);
    const char *u = "über 3,5 ça";
    CHECK(jr_ifeval_count_words(u, strlen(u)) == 4);
    CHECK(jr_ifeval_count_capital_words("", 0) == 0);
    const char *t = "NASA CAN'T, I'M OK. GONNA Go";
    CHECK_MSG(jr_ifeval_count_capital_words(t, strlen(t)) == 8, "%zu", jr_ifeval_count_capital_words(t, strlen(t)));
    /* expected counts from nltk.word_tokenize (NLTK 3.8) */
    static const struct {
        const char *text;
        size_t n;
    } w[] = {{"I'M\tDONE", 2}, {"SHI'A MUSLIMS", 3}, {"THE DOGS' BONES", 3}, {"WE'LL SEE\nYOU'RE", 5}};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        CHECK_MSG(jr_ifeval_count_capital_words(w[i].text, strlen(w[i].text)) == w[i].n, "\"%s\": %zu, expected %zu",
                  w[i].text, jr_ifeval_count_capital_words(w[i].text, strlen(w[i].text)), w[i].n);
}

TEST(language_detection) {
    char code[16];
    const char *en = "This is plainly an English sentence about the weather and the garden.";
    CHECK(jr_ifeval_detect_language(en, strlen(en), code) == 1);
    CHECK_STR(code, "en");
    const char *he = "זהו משפט בעברית על מזג האוויר והגינה, והוא ארוך מספיק כדי לזהות את השפה.";
    CHECK(jr_ifeval_detect_language(he, strlen(he), code) == 1);
    CHECK_STR(code, "he");
    CHECK(jr_ifeval_detect_language("123 !?", 6, code) == 0);
    CHECK_STR(code, "");
}

static jr_status new_from(const char *id, const char *kwjson, jr_ifeval_instr **out) {
    json_t *kw = kwjson ? json_loads(kwjson, 0, NULL) : NULL;
    jr_status st = jr_ifeval_instr_new(id, kw, NULL, out);
    json_decref(kw);
    return st;
}

static void expect_kwarg_error(const char *id, const char *kw, const char *needle) {
    jr_ifeval_instr *ins = NULL;
    jr_status st = new_from(id, kw, &ins);
    CHECK_MSG(st == JR_EINVAL && ins == NULL, "%s %s was accepted", id, kw);
    CHECK_MSG(strstr(jr_errmsg(), id) != NULL || !strcmp(id, "nope:x"), "message '%s' lacks the id", jr_errmsg());
    CHECK_MSG(strstr(jr_errmsg(), needle) != NULL, "message '%s' lacks '%s'", jr_errmsg(), needle);
    jr_ifeval_instr_free(ins);
}

TEST(kwargs_validation) {
    expect_kwarg_error("length_constraints:number_words", "{\"num_words\": \"300\", \"relation\": \"at least\"}",
                       "num_words must be an integer, got a string");
    expect_kwarg_error("length_constraints:number_words", "{\"num_words\": 3.5, \"relation\": \"at least\"}",
                       "num_words must be an integer");
    expect_kwarg_error("length_constraints:number_words", "{\"num_words\": 300}", "missing kwarg relation");
    expect_kwarg_error("length_constraints:number_words", "{\"num_words\": 300, \"relation\": \"at most\"}",
                       "relation=\"at most\"");
    expect_kwarg_error("length_constraints:number_words", "{\"num_words\": -1, \"relation\": \"at least\"}",
                       "must not be negative");
    expect_kwarg_error("punctuation:no_comma", "{\"comma\": true}", "unexpected kwarg comma");
    expect_kwarg_error("keywords:existence", "{\"keywords\": \"apple\"}", "keywords must be a non-empty array");
    expect_kwarg_error("keywords:existence", "{\"keywords\": [\"ok\", 3]}", "keywords[1] must be a non-empty string");
    expect_kwarg_error("keywords:existence", "{\"keywords\": [\"(unclosed\"]}", "not a valid pattern");
    expect_kwarg_error("keywords:letter_frequency", "{\"letter\": \"ab\", \"let_frequency\": 1, \"let_relation\": \"at least\"}",
                       "single character");
    expect_kwarg_error("length_constraints:nth_paragraph_first_word",
                       "{\"num_paragraphs\": 2, \"nth_paragraph\": 3, \"first_word\": \"x\"}", "nth_paragraph=3");
    expect_kwarg_error("detectable_format:title", "[1]", "kwargs must be an object");
    expect_kwarg_error("nope:x", "{}", "unknown instruction id \"nope:x\"");
    /* the Hugging Face copy carries every kwarg key, null when unused */
    jr_ifeval_instr *ins = NULL;
    CHECK_OK(new_from("punctuation:no_comma", "{\"num_words\": null, \"relation\": null}", &ins));
    CHECK(ins && !strcmp(jr_ifeval_instr_id(ins), "punctuation:no_comma"));
    jr_ifeval_instr_free(ins);
    CHECK_OK(new_from("startend:quotation", NULL, &ins));
    jr_ifeval_instr_free(ins);
}

TEST(row_api_and_rewards) {
    json_t *ids = json_pack("[sss]", "punctuation:no_comma", "startend:quotation", "length_constraints:number_words");
    json_t *kws = json_pack("[{}n{s:i,s:s}]", "num_words", 3, "relation", "at least");
    bool res[3];
    CHECK_OK(jr_ifeval_check_row(ids, kws, "p", "\"one two three\"", JR_IFEVAL_STRICT, res));
    CHECK(res[0] && res[1] && res[2]);
    CHECK_NEAR(jr_ifeval_pass_rate(res, 3), 1.0, 0, 0);
    CHECK(jr_ifeval_all_pass(res, 3) == 1);
    CHECK_OK(jr_ifeval_check_row(ids, kws, "p", "one, two", JR_IFEVAL_STRICT, res));
    CHECK(!res[0] && !res[1] && !res[2]);
    CHECK_NEAR(jr_ifeval_pass_rate(res, 3), 0.0, 0, 0);
    CHECK_OK(jr_ifeval_check_row(ids, kws, "p", "\"one two\"", JR_IFEVAL_STRICT, res));
    CHECK_NEAR(jr_ifeval_pass_rate(res, 3), 2.0 / 3.0, 1e-12, 0);
    CHECK(jr_ifeval_all_pass(res, 3) == 0);
    CHECK(jr_ifeval_all_pass(res, 0) == 0);
    CHECK_NEAR(jr_ifeval_pass_rate(res, 0), 0.0, 0, 0);
    /* an empty response follows nothing */
    CHECK_OK(jr_ifeval_check_row(ids, kws, "p", " \n ", JR_IFEVAL_LOOSE, res));
    CHECK(!res[0] && !res[1] && !res[2]);
    /* errors name the instruction index, id and kwarg */
    json_t *bad = json_pack("[{}n{s:s,s:s}]", "num_words", "3", "relation", "at least");
    CHECK(jr_ifeval_check_row(ids, bad, "p", "x", JR_IFEVAL_STRICT, res) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "instruction 2") && strstr(jr_errmsg(), "length_constraints:number_words") &&
                  strstr(jr_errmsg(), "num_words"),
              "%s", jr_errmsg());
    json_t *short_kw = json_pack("[{}]");
    CHECK(jr_ifeval_check_row(ids, short_kw, "p", "x", JR_IFEVAL_STRICT, res) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "kwargs has 1 entries") != NULL);
    json_t *notstr = json_pack("[i]", 3);
    CHECK(jr_ifeval_check_row(notstr, NULL, "p", "x", JR_IFEVAL_STRICT, res) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "instruction_id_list[0] must be a string") != NULL);
    json_decref(ids);
    json_decref(kws);
    json_decref(bad);
    json_decref(short_kw);
    json_decref(notstr);
}

TEST(score_dataset_row) {
    json_t *row = json_loads("{\"key\": 7, \"prompt\": \"Say it\", \"instruction_id_list\": "
                             "[\"punctuation:no_comma\", \"change_case:english_lowercase\"], \"kwargs\": [{}, {}]}",
                             0, NULL);
    double rate = -1;
    int all = -1;
    CHECK_OK(jr_ifeval_score(row, "this sentence is written in plain english without any capital letters", JR_IFEVAL_STRICT,
                             &rate, &all));
    CHECK_NEAR(rate, 1.0, 0, 0);
    CHECK(all == 1);
    CHECK_OK(jr_ifeval_score(row, "Hello, World", JR_IFEVAL_LOOSE, &rate, &all));
    CHECK_NEAR(rate, 0.0, 0, 0);
    CHECK(all == 0);
    CHECK_OK(jr_ifeval_score(row, "no commas Here", JR_IFEVAL_STRICT, &rate, NULL));
    CHECK_NEAR(rate, 0.5, 0, 0);
    json_object_del(row, "instruction_id_list");
    rate = -1;
    CHECK(jr_ifeval_score(row, "x", JR_IFEVAL_STRICT, &rate, &all) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "instruction_id_list") != NULL);
    CHECK(rate == -1);
    json_decref(row);
}

TEST(invalid_utf8_does_not_crash) {
    const char bad[] = "\xff\xfe *a* \xc3( [x] \xe2\x82";
    for (int i = 0; i < JR_IFEVAL_N_INSTRUCTIONS; i++) {
        const char *id = jr_ifeval_instruction_name(i);
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            if (strcmp(cases[k].id, id)) continue;
            json_t *kw = json_loads(cases[k].kwargs, 0, NULL);
            jr_ifeval_instr *ins = NULL;
            CHECK_OK(jr_ifeval_instr_new(id, kw, NULL, &ins));
            json_decref(kw);
            if (ins) {
                (void)jr_ifeval_instr_check(ins, bad, sizeof bad - 1, JR_IFEVAL_LOOSE);
                jr_ifeval_instr_free(ins);
            }
            break;
        }
    }
}

int main(void) {
    RUN(every_instruction_has_cases);
    RUN(checker_cases_strict_and_loose);
    RUN(sentence_counts);
    RUN(word_and_capital_counts);
    RUN(language_detection);
    RUN(kwargs_validation);
    RUN(row_api_and_rewards);
    RUN(score_dataset_row);
    RUN(invalid_utf8_does_not_crash);
    return jt_done();
}
