/* test_judge_dialect.c - judge.constraint per server kind: GBNF from choices and regexes (checked
 * against PCRE2 on sample strings by tests/test_judge_peers.py's grammar reader too), each kind's
 * request fields with vLLM's version switch, refusals, and the answer check */
#include <string.h>

#include "harness.h"
#include "judge/dialect.h"
#include "judgerl/status.h"

static jr_judge_constraint parse(const char *json) {
    jr_judge_constraint c;
    json_t *v = json_loads(json, 0, NULL);
    CHECK_OK(jr_judge_constraint_parse(v, "judge.constraint", &c));
    json_decref(v);
    return c;
}

static char *fields(const jr_judge_constraint *c, jr_server_kind k, const char *version, int *wrapped) {
    jr_server_info s = {.kind = k};
    if (version) sscanf(version, "%d.%d.%d", &s.ver[0], &s.ver[1], &s.ver[2]);
    json_t *f = NULL;
    if (jr_judge_constraint_fields(c, &s, &f, wrapped)) return NULL;
    char *txt = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(f);
    return txt;
}

TEST(gbnf_from_choices_and_regexes) {
    json_t *ch = json_pack("[s,s,s]", "Yes", "No", "say \"maybe\"\\");
    char *g = jr_gbnf_from_choices(ch);
    CHECK_STR(g, "root ::= \"Yes\" | \"No\" | \"say \\x22maybe\\x22\\x5C\"");
    free(g);
    json_decref(ch);
    static const struct { const char *re, *gbnf; } ok[] = {
        {"Yes|No|Maybe", "root ::= \"Y\" \"e\" \"s\" | \"N\" \"o\" | \"M\" \"a\" \"y\" \"b\" \"e\""},
        {"^[1-9]/10$", "root ::= [1-9] \"/\" \"1\" \"0\""},
        {"\\d+(\\.\\d{1,2})?", "root ::= [0-9]+ (\".\" [0-9]{1,2})?"},
        {"(?:A|B)*?x", "root ::= (\"A\" | \"B\")* \"x\""},
        {"[^\\s\"]{2,}", "root ::= [^ \\x09\\x0A\\x0B\\x0C\\x0D\\x22]{2,}"},
        {"a.\\W", "root ::= \"a\" [^\\x0A] [^0-9A-Za-z_]"},
        {"[-a-z_]", "root ::= [\\x2Da-z\\x5F]"},
        {"\xc3\xa9t\xc3\xa9|x", "root ::= \"\xc3\xa9\" \"t\" \"\xc3\xa9\" | \"x\""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char err[200] = "";
        g = jr_gbnf_from_regex(ok[i].re, err, sizeof err);
        CHECK_MSG(g && !strcmp(g, ok[i].gbnf), "%s -> %s (%s), expected %s", ok[i].re, g ? g : "NULL", err, ok[i].gbnf);
        free(g);
    }
    static const struct { const char *re, *why; } bad[] = {
        {"(?=a)b", "(?"}, {"(a)\\1", "escape"}, {"a^b", "anchor"}, {"a++", "possessive"}, {"[[:alpha:]]", "POSIX"},
        {"*a", "nothing to repeat"}, {"(ab", "unclosed ("}, {"ab)", "unbalanced"}, {"\\bword", "escape"}, {"[\\D]", "negated"},
        {"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))", "deeper"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[200] = "";
        g = jr_gbnf_from_regex(bad[i].re, err, sizeof err);
        CHECK_MSG(!g && strstr(err, bad[i].why) && strstr(err, "offset"), "%s -> %s / '%s'", bad[i].re, g ? g : "NULL", err);
        free(g);
    }
}

TEST(fields_per_server_kind) {
    jr_judge_constraint c = parse("{\"choice\": [\"Yes\", \"No\"]}");
    int w = -1;
    char *f = fields(&c, JR_KIND_VLLM, "0.11.0", &w);
    CHECK_STR(f, "{\"structured_outputs\":{\"choice\":[\"Yes\",\"No\"]}}");
    CHECK(w == 0);
    free(f);
    f = fields(&c, JR_KIND_VLLM, NULL, &w); /* version unknown: the current form */
    CHECK_STR(f, "{\"structured_outputs\":{\"choice\":[\"Yes\",\"No\"]}}");
    free(f);
    f = fields(&c, JR_KIND_VLLM, "0.10.1", &w); /* before 0.10.2: guided_* */
    CHECK_STR(f, "{\"guided_choice\":[\"Yes\",\"No\"]}");
    free(f);
    f = fields(&c, JR_KIND_VLLM, "0.8.5", &w);
    CHECK_STR(f, "{\"guided_choice\":[\"Yes\",\"No\"]}");
    free(f);
    f = fields(&c, JR_KIND_LLAMACPP, NULL, &w);
    CHECK_STR(f, "{\"grammar\":\"root ::= \\\"Yes\\\" | \\\"No\\\"\"}");
    free(f);
    f = fields(&c, JR_KIND_SGLANG, NULL, &w);
    CHECK_STR(f, "{\"regex\":\"(?:Yes|No)\"}");
    free(f);
    f = fields(&c, JR_KIND_JUDGERL, NULL, &w);
    CHECK_STR(f, "{\"structured_outputs\":{\"choice\":[\"Yes\",\"No\"]}}");
    free(f);
    f = fields(&c, JR_KIND_OPENAI, NULL, &w);
    CHECK(w == 1);
    CHECK_STR(f, "{\"response_format\":{\"json_schema\":{\"name\":\"judgerl_constraint\",\"schema\":{\"additionalProperties\":false,"
                 "\"properties\":{\"answer\":{\"enum\":[\"Yes\",\"No\"],\"type\":\"string\"}},\"required\":[\"answer\"],"
                 "\"type\":\"object\"},\"strict\":true},\"type\":\"json_schema\"}}");
    free(f);
    f = fields(&c, JR_KIND_OLLAMA, NULL, &w);
    CHECK(w == 1 && f && strstr(f, "\"enum\":[\"Yes\",\"No\"]") && !strstr(f, "strict"));
    free(f);
    CHECK(fields(&c, JR_KIND_UNKNOWN, NULL, &w) == NULL);
    CHECK(strstr(jr_errmsg(), "judge.endpoints[].kind") != NULL);
    jr_judge_constraint_free(&c);

    c = parse("{\"regex\": \"[1-9]/10\"}");
    f = fields(&c, JR_KIND_VLLM, "0.12.0", &w);
    CHECK_STR(f, "{\"structured_outputs\":{\"regex\":\"[1-9]/10\"}}");
    free(f);
    f = fields(&c, JR_KIND_LLAMACPP, NULL, &w);
    CHECK_STR(f, "{\"grammar\":\"root ::= [1-9] \\\"/\\\" \\\"1\\\" \\\"0\\\"\"}");
    free(f);
    CHECK(fields(&c, JR_KIND_OPENAI, NULL, &w) == NULL);
    CHECK(strstr(jr_errmsg(), "judge.constraint.regex") && strstr(jr_errmsg(), "openai"));
    jr_judge_constraint_free(&c);
    c = parse("{\"regex\": \"(?=x)x\"}");
    CHECK(fields(&c, JR_KIND_LLAMACPP, NULL, &w) == NULL);
    CHECK(strstr(jr_errmsg(), "llama.cpp grammar") != NULL);
    jr_judge_constraint_free(&c);

    c = parse("{\"json_schema\": {\"type\": \"object\"}}");
    f = fields(&c, JR_KIND_VLLM, "0.10.0", &w);
    CHECK_STR(f, "{\"guided_json\":{\"type\":\"object\"}}");
    free(f);
    f = fields(&c, JR_KIND_LLAMACPP, NULL, &w);
    CHECK_STR(f, "{\"json_schema\":{\"type\":\"object\"}}");
    free(f);
    f = fields(&c, JR_KIND_OPENAI, NULL, &w);
    CHECK(w == 0 && f && strstr(f, "\"schema\":{\"type\":\"object\"}"));
    free(f);
    f = fields(&c, JR_KIND_JUDGERL, NULL, &w);
    CHECK_STR(f, "{\"structured_outputs\":{\"json\":{\"type\":\"object\"}}}");
    free(f);
    jr_judge_constraint_free(&c);
}

TEST(constraint_config_errors_and_answer_check) {
    static const char *bad[] = {"[1]", "{\"choice\": []}", "{\"choice\": [\"a\", 2]}", "{\"regex\": \"(\"}",
                                "{\"json_schema\": 3}", "{\"grammar\": \"x\"}", "{\"choice\": [\"a\"], \"regex\": \"a\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        jr_judge_constraint c;
        json_t *v = json_loads(bad[i], 0, NULL);
        CHECK_MSG(jr_judge_constraint_parse(v, "judge.constraint", &c) == JR_EINVAL && strstr(jr_errmsg(), "judge.constraint"),
                  "%s: %s", bad[i], jr_errmsg());
        json_decref(v);
    }
    char why[128];
    jr_judge_constraint c = parse("{\"choice\": [\"Yes\", \"No\"]}");
    CHECK(jr_judge_constraint_check(&c, " Yes\n", why, sizeof why));
    CHECK(!jr_judge_constraint_check(&c, "Great question! Yes.", why, sizeof why));
    CHECK(!jr_judge_constraint_check(&c, "yes", why, sizeof why));
    jr_judge_constraint_free(&c);
    c = parse("{\"regex\": \"[1-9]/10\"}");
    CHECK(jr_judge_constraint_check(&c, "7/10", why, sizeof why));
    CHECK(!jr_judge_constraint_check(&c, "7/10 because", why, sizeof why));
    CHECK(!jr_judge_constraint_check(&c, "x7/10", why, sizeof why));
    jr_judge_constraint_free(&c);
    c = parse("{\"json_schema\": {\"type\": \"object\"}}");
    CHECK(jr_judge_constraint_check(&c, "{\"a\": 1}", why, sizeof why));
    CHECK(!jr_judge_constraint_check(&c, "{\"a\": ", why, sizeof why));
    jr_judge_constraint_free(&c);
    jr_judge_constraint none;
    CHECK_OK(jr_judge_constraint_parse(NULL, "x", &none));
    CHECK(none.type == JR_CONSTRAINT_NONE && jr_judge_constraint_check(&none, "anything", why, sizeof why));
}

int main(void) {
    RUN(gbnf_from_choices_and_regexes);
    RUN(fields_per_server_kind);
    RUN(constraint_config_errors_and_answer_check);
    return jt_done();
}
