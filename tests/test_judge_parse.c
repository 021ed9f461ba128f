/* test_judge_parse.c - judge parsing pieces: [RESULT] parser, reasoning stripping, templates, answer
 * decoding (JSON, SSE, logprobs of chat and completions), error messages, the API key's redaction,
 * SHA-256, the cache */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "judge/cache.h"
#include "judge/redact.h"
#include "judge/response.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"

static int pr(const char *t, int lo, int hi) {
    int n = -1;
    char why[200];
    return jr_judge_parse_result(t, lo, hi, &n, why, sizeof why) ? n : -1;
}

TEST(result_parser_lenient_wrapping) {
    CHECK(pr("Feedback: good. [RESULT] 4", 1, 5) == 4);
    CHECK(pr("```\nFeedback: x\n[RESULT] 5\n```", 1, 5) == 5);
    CHECK(pr("**[RESULT]**: **3**", 1, 5) == 3);
    CHECK(pr("[RESULT] (2)", 1, 5) == 2);
    CHECK(pr("[RESULT] 4/5 because", 1, 5) == 4);
    CHECK(pr("[result] 1", 1, 5) == 1);
    CHECK(pr("first [RESULT] 2 then corrected [RESULT] 5", 1, 5) == 5);
    CHECK(pr("[RESULT] 10", 1, 10) == 10);
}

TEST(result_parser_strict_range) {
    char why[200];
    int n;
    CHECK(pr("[RESULT] 7", 1, 5) == -1);
    CHECK(pr("[RESULT] 0", 1, 5) == -1);
    CHECK(pr("[RESULT] -3", 1, 5) == -1);
    CHECK(pr("[RESULT] 4.5", 1, 5) == -1);
    CHECK(pr("[RESULT] 45", 1, 5) == -1);
    CHECK(pr("[RESULT] 11", 1, 10) == -1);
    CHECK(pr("score: 4", 1, 5) == -1);
    CHECK(pr("[RESULT] four", 1, 5) == -1);
    CHECK(!jr_judge_parse_result("[RESULT] 9", 1, 5, &n, why, sizeof why));
    CHECK(strstr(why, "out of range 1..5") != NULL);
}

TEST(strip_reasoning) {
    char *s = jr_judge_strip_reasoning("<think>[RESULT] 1</think>Feedback [RESULT] 4");
    CHECK_STR(s, "Feedback [RESULT] 4");
    free(s);
    s = jr_judge_strip_reasoning("a<think>x</think>b<think>y</think>c");
    CHECK_STR(s, "abc");
    free(s);
    s = jr_judge_strip_reasoning("ok <think>never closed [RESULT] 3");
    CHECK_STR(s, "ok ");
    free(s);
    s = jr_judge_strip_reasoning("reasoning opened by the template [RESULT] 1</think>[RESULT] 2");
    CHECK_STR(s, "[RESULT] 2");
    free(s);
}

TEST(template_render) {
    json_t *row = json_pack("{s:s,s:i,s:s,s:n}", "prompt", "Why?", "n", 5, "empty", "", "nul");
    char *out;
    CHECK_OK(jr_template_render("Q: {{prompt}} n={{ n }}{{#empty}}E{{/empty}}{{^empty}}-{{/empty}}{{#prompt}}[{{prompt}}]{{/prompt}}{{missing}}{{^nul}}N{{/nul}}", row, &out));
    CHECK_STR(out, "Q: Why? n=5-[Why?]N");
    free(out);
    CHECK(jr_template_render("{{#prompt}}open", row, &out) != JR_OK && out == NULL);
    CHECK(jr_template_render("{{prompt", row, &out) != JR_OK);
    json_decref(row);
}

TEST(shipped_templates_render) {
    char *path = jr_path_join(jt_root(), "templates/prometheus_absolute.txt"), *t, *out;
    CHECK_OK(jr_template_load(path, NULL, &t));
    json_t *row = json_pack("{s:s,s:s,s:i}", "prompt", "PROMPT", "response", "RESPONSE", "scale", 5);
    CHECK_OK(jr_template_render(t, row, &out));
    CHECK(strstr(out, "PROMPT") && strstr(out, "RESPONSE") && strstr(out, "Score 5:") && !strstr(out, "{{"));
    CHECK(!strstr(out, "Reference Answer"));
    free(out);
    json_object_set_new(row, "reference", json_string("REF"));
    CHECK_OK(jr_template_render(t, row, &out));
    CHECK(strstr(out, "###Reference Answer (Score 5):\nREF") != NULL);
    free(out);
    free(t);
    free(path);
    json_decref(row);
}

static int decode(const char *body, jr_answer *a, char *why) { return jr_answer_decode(body, strlen(body), a, why, 300); }

TEST(decode_json_chat_and_completions) {
    jr_answer a;
    char why[300];
    CHECK(decode("{\"choices\":[{\"message\":{\"content\":\"hi [RESULT] 3\",\"reasoning_content\":\"hmm\"},\"finish_reason\":\"stop\"}],"
                 "\"usage\":{\"total_tokens\":42}}", &a, why) == 0);
    CHECK_STR(a.content, "hi [RESULT] 3");
    CHECK_STR(a.reasoning, "hmm");
    CHECK_STR(a.finish, "stop");
    CHECK(a.total_tokens == 42 && a.logprobs == NULL);
    jr_answer_free(&a);
    CHECK(decode("{\"choices\":[{\"text\":\"yes\",\"finish_reason\":\"length\",\"logprobs\":{\"tokens\":[\"yes\"],\"token_logprobs\":[-0.5],"
                 "\"top_logprobs\":[{\"yes\":-0.5,\"no\":-1.5}]}}]}", &a, why) == 0);
    CHECK_STR(a.content, "yes");
    CHECK_STR(a.finish, "length");
    json_t *e = json_array_get(a.logprobs, 0);
    CHECK_STR(json_string_value(json_object_get(e, "token")), "yes");
    CHECK_NEAR(json_real_value(json_object_get(e, "logprob")), -0.5, 0, 0);
    CHECK(json_array_size(json_object_get(e, "top_logprobs")) == 2);
    jr_answer_free(&a);
    CHECK(decode("{\"choices\":[{\"message\":{\"content\":\"5\"},\"logprobs\":{\"content\":[{\"token\":\"5\",\"logprob\":-0.1,"
                 "\"top_logprobs\":[{\"token\":\"5\",\"logprob\":-0.1},{\"token\":\"4\",\"logprob\":-2.5}]}]}}]}", &a, why) == 0);
    e = json_array_get(json_object_get(json_array_get(a.logprobs, 0), "top_logprobs"), 1);
    CHECK_STR(json_string_value(json_object_get(e, "token")), "4");
    CHECK_NEAR(json_real_value(json_object_get(e, "logprob")), -2.5, 0, 0);
    jr_answer_free(&a);
}

TEST(decode_rejects_unusable_bodies) {
    jr_answer a;
    char why[300];
    CHECK(decode("{\"choices\":[{\"message\":{\"content\":\"trunc", &a, why) == -1);
    CHECK(strstr(why, "unparsable JSON") != NULL);
    CHECK(decode("<html>oops</html>", &a, why) == -1);
    CHECK(decode("", &a, why) == -1);
    CHECK(decode("{\"object\":\"list\"}", &a, why) == -1);
    CHECK(decode("{\"error\":{\"message\":\"overloaded\"}}", &a, why) == -1);
    CHECK(strstr(why, "overloaded") != NULL);
}

TEST(decode_sse) {
    jr_answer a;
    char why[300];
    const char *s =
        ": comment\r\n\r\n"
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"th\"}}]}\n\n"
        "event: message\ndata: {\"choices\":[{\"delta\":{\"content\":\"Feed\"}}]}\r\n\r\n"
        ":keep-alive\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"back [RESULT] 4\"},\n"
        "data: \"finish_reason\":null}]}\r\r"
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"total_tokens\":9}}\n\n"
        "data: [DONE]\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"after done\"}}]}\n\n";
    CHECK(decode(s, &a, why) == 0);
    CHECK_STR(a.content, "Feedback [RESULT] 4");
    CHECK_STR(a.reasoning, "th");
    CHECK_STR(a.finish, "stop");
    CHECK(a.total_tokens == 9);
    jr_answer_free(&a);
    /* no trailing blank line, finish_reason given: accepted */
    CHECK(decode("data: {\"choices\":[{\"text\":\"x\",\"finish_reason\":\"stop\"}]}", &a, why) == 0);
    CHECK_STR(a.content, "x");
    jr_answer_free(&a);
    /* cut before [DONE] and without finish_reason: unusable */
    CHECK(decode("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", &a, why) == -1);
    CHECK(strstr(why, "[DONE]") != NULL);
    CHECK(decode("data: {\"choices\":[{\"delta\":{\"con", &a, why) == -1);
    CHECK(decode("data: {\"error\":{\"message\":\"boom\"}}\n\n", &a, why) == -1);
}

static void em(const char *b, char *m, size_t n) { jr_answer_error_message(b, strlen(b), m, n); }

TEST(error_messages) {
    char m[200];
    em("{\"error\":{\"message\":\"bad key\"}}", m, sizeof m);
    CHECK_STR(m, "bad key");
    em("{\"error\":\"plain\"}", m, sizeof m);
    CHECK_STR(m, "plain");
    em("{\"detail\":\"Not Found\"}", m, sizeof m);
    CHECK_STR(m, "Not Found");
    em("Bad\nGateway", m, sizeof m);
    CHECK_STR(m, "Bad Gateway");
}

/* The tokens' texts of normalised log-probs, joined with '|'. */
static char *token_list(const json_t *lps) {
    static char buf[512];
    size_t n = 0, i;
    json_t *e;
    buf[0] = 0;
    json_array_foreach(lps, i, e) n +=
        (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "|" : "", json_string_value(json_object_get(e, "token")));
    return buf;
}

TEST(redact_key_from_logprobs_and_bodies) {
    const char *key = "KEY-0123456789";
    /* the key split over three sampled tokens, text on both sides; a token holding it twice; an empty token */
    json_t *lps =
        json_pack("[{s:s, s:f, s:[{s:s, s:f}, {s:s, s:f}]}, {s:s, s:f, s:[]}, {s:s, s:f, s:[]}, {s:s, s:f, s:[]},"
                  " {s:s, s:f, s:[]}]",
                  "token", "a KEY-01", "logprob", -0.1, "top_logprobs", "token", "a KEY-01", "logprob", -0.1, "token",
                  "KEY-0123456789", "logprob", -2.0, "token", "", "logprob", -0.1, "top_logprobs", "token", "2345",
                  "logprob", -0.1, "top_logprobs", "token", "6789 b", "logprob", -0.1, "top_logprobs", "token",
                  "KEY-0123456789KEY-0123456789!", "logprob", -0.1, "top_logprobs");
    CHECK(lps != NULL);
    jr_redact_logprobs(lps, key);
    CHECK(!strcmp(token_list(lps), "a [redacted]||| b|[redacted][redacted]!"));
    json_t *alts = json_object_get(json_array_get(lps, 0), "top_logprobs");
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(alts, 0), "token")), "a [redacted]"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(alts, 1), "token")), "[redacted]"));
    char *dump = json_dumps(lps, 0);
    CHECK(dump && !strstr(dump, "KEY-") && !strstr(dump, "2345") && !strstr(dump, "6789"));
    free(dump);
    json_decref(lps);
    /* error bodies: an escaped key (JSON), raw bytes otherwise */
    size_t n = 0;
    const char *esc = "{\"error\": {\"message\": \"bad \\u004bEY-0123456789\"}}";
    char *b = jr_redacted_body(esc, strlen(esc), key, &n);
    char m[300];
    CHECK(b != NULL);
    jr_answer_error_message(b, n, m, sizeof m);
    CHECK(!strcmp(m, "bad [redacted]"));
    free(b);
    b = jr_redacted_body("oops KEY-0123456789 x", 21, key, &n);
    CHECK(b && n == 21 && !strcmp(b, "oops ************** x"));
    free(b);
    CHECK(jr_redact_json(NULL, key) == 0);
}

TEST(sha256_vectors) {
    char h[65];
    jr_sha256_hex("", 0, h);
    CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    jr_sha256_hex("abc", 3, h);
    CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    jr_sha256_hex(m, strlen(m), h);
    CHECK_STR(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(cache_roundtrip_and_foreign_file) {
    char *dir = jt_tmpdir("cache");
    char *path = jr_path_join(dir, "sub/c.sqlite");
    jr_cache *c;
    CHECK_OK(jr_cache_open(&c, path));
    char k1[65], k2[65];
    jr_cache_key("m", "{\"a\":1}", k1);
    jr_cache_key("m2", "{\"a\":1}", k2);
    CHECK(strcmp(k1, k2) != 0);
    CHECK(jr_cache_put(c, k1, "m", "text [RESULT] 3", "stop", "[1]") == 0);
    char *t, *f, *l;
    CHECK(jr_cache_get(c, k2, &t, &f, &l) == 0);
    CHECK(jr_cache_get(c, k1, &t, &f, &l) == 1);
    CHECK_STR(t, "text [RESULT] 3");
    CHECK_STR(f, "stop");
    CHECK_STR(l, "[1]");
    free(t); free(f); free(l);
    jr_cache_close(c);
    CHECK_OK(jr_cache_open(&c, path)); /* reopen: persisted */
    CHECK(jr_cache_get(c, k1, &t, &f, &l) == 1);
    free(t); free(f); free(l);
    jr_cache_close(c);
    char *other = jr_path_join(dir, "other.txt");
    const char *junk = "hello, not a database at all, just some text padding it out to be long enough";
    CHECK_OK(jr_write_atomic(other, junk, strlen(junk)));
    CHECK(jr_cache_open(&c, other) != JR_OK);
    free(other);
    free(path);
    free(dir);
}

TEST(config_table_defaults_load) {
    const jr_cfg_field *tabs[] = {jr_judge_cfg, NULL};
    jr_config cfg;
    CHECK_OK(jr_config_load_string(&cfg, "judge:\n  endpoints: [{url: 'http://127.0.0.1:9/v1', model: m}]\n", "t", 0, NULL, tabs));
    CHECK(jr_cfg_int(&cfg, "judge.max_attempts") == 5);
    CHECK_STR(jr_cfg_str(&cfg, "judge.protocol"), "pointwise");
    jr_config_free(&cfg);
    CHECK(jr_config_load_string(&cfg, "judge:\n  endpoints: [{url: x}]\n", "t", 0, NULL, tabs) != JR_OK);
    CHECK(strstr(jr_errmsg(), "model") != NULL);
    CHECK(jr_protocol_find("pointwise") == &jr_protocol_pointwise);
    CHECK(jr_protocol_find("nope") == NULL);
}

int main(void) {
    RUN(result_parser_lenient_wrapping);
    RUN(result_parser_strict_range);
    RUN(strip_reasoning);
    RUN(template_render);
    RUN(shipped_templates_render);
    RUN(decode_json_chat_and_completions);
    RUN(decode_rejects_unusable_bodies);
    RUN(decode_sse);
    RUN(error_messages);
    RUN(redact_key_from_logprobs_and_bodies);
    RUN(sha256_vectors);
    RUN(cache_roundtrip_and_foreign_file);
    RUN(config_table_defaults_load);
    return jt_done();
}
