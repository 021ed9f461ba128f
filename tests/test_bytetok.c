/* test_bytetok.c - byte tokenizer: round trips, specials, id range errors, tokenizer.json export */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "harness.h"
#include "judgerl/bytetok.h"

TEST(every_byte_round_trips) {
    char text[512];
    for (int i = 0; i < 512; i++) text[i] = (char)(i * 7 + 3); /* every byte value, NULs and invalid UTF-8 included */
    int32_t *ids;
    size_t n;
    CHECK_OK(jr_bytetok_encode(text, sizeof text, 1, &ids, &n));
    CHECK(n == sizeof text);
    for (size_t i = 0; i < n; i++) CHECK(ids[i] == (unsigned char)text[i]);
    char *back;
    size_t len;
    CHECK_OK(jr_bytetok_decode(ids, n, 1, &back, &len));
    CHECK(len == sizeof text && !memcmp(back, text, len) && back[len] == 0);
    free(ids);
    free(back);
    CHECK_OK(jr_bytetok_encode("", 0, 1, &ids, &n));
    CHECK(n == 0 && ids != NULL);
    free(ids);
}

TEST(specials) {
    const char *t = "<|user|>hi<|eos|><|assistant|><|eo";
    int32_t *ids;
    size_t n;
    CHECK_OK(jr_bytetok_encode(t, strlen(t), 1, &ids, &n));
    int32_t want[] = {JR_BYTETOK_USER, 'h', 'i', JR_BYTETOK_EOS, JR_BYTETOK_ASSISTANT, '<', '|', 'e', 'o'};
    CHECK(n == sizeof want / sizeof *want);
    if (n == sizeof want / sizeof *want) CHECK(!memcmp(ids, want, sizeof want));
    char *back;
    CHECK_OK(jr_bytetok_decode(ids, n, 1, &back, NULL));
    CHECK_STR(back, t);
    free(back);
    CHECK_OK(jr_bytetok_decode(ids, n, 0, &back, NULL));
    CHECK_STR(back, "hi<|eo");
    free(back);
    free(ids);
    /* without parse_specials the marker text stays bytes */
    CHECK_OK(jr_bytetok_encode(t, strlen(t), 0, &ids, &n));
    CHECK(n == strlen(t) && ids[0] == '<');
    free(ids);
    CHECK(jr_bytetok_special_id("<|pad|>") == JR_BYTETOK_PAD);
    CHECK(jr_bytetok_special_id("<|nope|>") == -1);
    CHECK_STR(jr_bytetok_special_name(JR_BYTETOK_BOS), "<|bos|>");
    CHECK_STR(jr_bytetok_special_name(JR_BYTETOK_SYSTEM), "<|system|>");
    CHECK(jr_bytetok_special_name('a') == NULL && jr_bytetok_special_name(JR_BYTETOK_VOCAB) == NULL);
}

TEST(decode_rejects_bad_ids) {
    int32_t ids[] = {'a', 'b', JR_BYTETOK_VOCAB};
    char *t = (char *)1;
    CHECK(jr_bytetok_decode(ids, 3, 1, &t, NULL) == JR_EINVAL);
    CHECK(t == NULL);
    CHECK_MSG(strstr(jr_errmsg(), "token 2: id 262 is outside"), "%s", jr_errmsg());
    int32_t neg[] = {-1};
    CHECK(jr_bytetok_decode(neg, 1, 1, &t, NULL) == JR_EINVAL);
}

/* Decodes one UTF-8 code point; returns its length in bytes, 0 if s is not exactly one code point. */
static int one_cp(const char *s, unsigned *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80 && u[1] == 0) { *cp = u[0]; return 1; }
    if ((u[0] & 0xe0) == 0xc0 && (u[1] & 0xc0) == 0x80 && u[2] == 0) { *cp = (u[0] & 0x1fu) << 6 | (u[1] & 0x3fu); return 2; }
    return 0;
}

TEST(hf_tokenizer_json) {
    char *dir = jt_tmpdir("bytetok");
    char path[600];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    CHECK_OK(jr_bytetok_write_hf(path));
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    CHECK_MSG(root != NULL, "%s", e.text);
    if (!root) { free(dir); return; }
    json_t *model = json_object_get(root, "model");
    CHECK_STR(json_string_value(json_object_get(model, "type")), "BPE");
    CHECK(json_array_size(json_object_get(model, "merges")) == 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(root, "pre_tokenizer"), "type")), "ByteLevel");
    CHECK_STR(json_string_value(json_object_get(json_object_get(root, "decoder"), "type")), "ByteLevel");
    json_t *vocab = json_object_get(model, "vocab");
    CHECK(json_object_size(vocab) == 256);
    /* GPT-2's byte-to-unicode table, as HF ByteLevel uses it: printable bytes stand for themselves,
     * the rest take U+0100 upwards in byte order. Known points: space = U+0120 'Ġ', newline =
     * U+010A 'Ċ', NUL = U+0100, 0x7f = U+0121, 0xad = U+0143. */
    int seen[256] = {0};
    const char *k;
    json_t *v;
    unsigned cp_of[256] = {0};
    json_object_foreach(vocab, k, v) {
        unsigned cp = 0;
        CHECK_MSG(one_cp(k, &cp), "key '%s' is not one code point", k);
        json_int_t id = json_integer_value(v);
        CHECK(id >= 0 && id < 256);
        if (id >= 0 && id < 256) { seen[id]++; cp_of[id] = cp; }
    }
    for (int i = 0; i < 256; i++) CHECK(seen[i] == 1);
    CHECK(cp_of['A'] == 'A' && cp_of['~'] == '~' && cp_of['!'] == '!');
    CHECK(cp_of[' '] == 0x120 && cp_of['\n'] == 0x10A && cp_of[0] == 0x100 && cp_of[0x7f] == 0x121);
    CHECK(cp_of[0xad] == 0x143 && cp_of[0xa1] == 0xa1 && cp_of[0xff] == 0xff && cp_of[0x80] == 0x122);
    json_t *added = json_object_get(root, "added_tokens");
    CHECK(json_array_size(added) == JR_BYTETOK_VOCAB - 256);
    size_t i;
    json_array_foreach(added, i, v) {
        int id = (int)json_integer_value(json_object_get(v, "id"));
        CHECK(id == 256 + (int)i);
        CHECK_STR(json_string_value(json_object_get(v, "content")), jr_bytetok_special_name(id));
        CHECK(json_is_true(json_object_get(v, "special")));
    }
    json_decref(root);
    CHECK(jr_bytetok_write_hf("/nonexistent/dir/tokenizer.json") != JR_OK);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    if (system(path) != 0) printf("  could not remove %s\n", dir);
    free(dir);
}

/* --write-hf DIR: writes DIR/tokenizer.json and DIR/cases.jsonl ({"text", "ids"} per line, ids from
 * jr_bytetok_encode with specials) for tests/test_bytetok_hf.sh to check against a reference encoder. */
static int write_hf_cases(const char *d) {
    static const char *texts[] = {
        "Hello, world!\n", "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80 \xE4\xBD\xA0\xE5\xA5\xBD",
        "<|user|>Is it yes?<|eos|><|assistant|>yes<|eos|>", "  two  spaces\ttab\r\nline\x01\x7f",
        "<|bos|><|system|>be brief<|eos|><|pad|><|pad|>", "not special: <|eo <|user| |>", "",
    };
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    if (jr_bytetok_write_hf(p)) { fprintf(stderr, "%s\n", jr_errmsg()); return 1; }
    snprintf(p, sizeof p, "%s/cases.jsonl", d);
    FILE *f = fopen(p, "w");
    if (!f) return 1;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        int32_t *ids;
        size_t n;
        if (jr_bytetok_encode(texts[i], strlen(texts[i]), 1, &ids, &n)) return 1;
        json_t *a = json_array();
        for (size_t k = 0; k < n; k++) json_array_append_new(a, json_integer(ids[k]));
        json_t *row = json_pack("{s:s, s:o}", "text", texts[i], "ids", a);
        char *line = json_dumps(row, JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(row);
        free(ids);
    }
    return fclose(f) != 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-hf")) return write_hf_cases(argv[2]);
    RUN(every_byte_round_trips);
    RUN(specials);
    RUN(decode_rejects_bad_ids);
    RUN(hf_tokenizer_json);
    return jt_done();
}
