/* fuzz_tokenizer.c - libFuzzer target: the tokenizer.json loader and the encoder/decoder never crash or
 * leak; for a fixed tokenizer, decode(encode(x)) == NFC(x) and streaming decode equals decode */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "judgerl/tokenizer.h"

/* a small byte-level tokenizer with merges, added tokens of every flag, NFC and a template */
static jr_tokenizer *fixed(void) {
    static jr_tokenizer *t;
    if (t) return t;
    char buf[65536];
    size_t o = 0;
    o += (size_t)snprintf(buf + o, sizeof buf - o, "{\"model\":{\"type\":\"BPE\",\"ignore_merges\":true,\"vocab\":{");
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        int cp = keep ? b : 256 + n++;
        char c[8];
        if (cp == '"' || cp == '\\') snprintf(c, sizeof c, "\\%c", cp);
        else if (cp < 0x80) snprintf(c, sizeof c, "%c", cp);
        else snprintf(c, sizeof c, "%c%c", 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F));
        o += (size_t)snprintf(buf + o, sizeof buf - o, "\"%s\":%d,", c, b);
    }
    o += (size_t)snprintf(buf + o, sizeof buf - o,
        "\"ab\":256,\"abc\":257,\"\xc4\xa0" "a\":258,\"\xc4\xa0" "ab\":259,\"\xc3\x83\xc2\xa9\":260},"
        "\"merges\":[\"a b\",\"ab c\",[\"\xc4\xa0\",\"a\"],\"\xc4\xa0" "a b\",\"\xc3\x83 \xc2\xa9\"]},"
        "\"added_tokens\":[{\"id\":300,\"content\":\"<s>\",\"special\":true},"
        "{\"id\":301,\"content\":\"<L>\",\"special\":true,\"lstrip\":true},{\"id\":302,\"content\":\"<R>\",\"special\":true,\"rstrip\":true},"
        "{\"id\":303,\"content\":\"tok\",\"single_word\":true,\"normalized\":false},{\"id\":304,\"content\":\"\xc3\xa9t\xc3\xa9\",\"normalized\":true}],"
        "\"normalizer\":{\"type\":\"NFC\"},"
        "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
        "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
        "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]},"
        "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\"}},{\"Sequence\":{\"id\":\"A\"}}],"
        "\"special_tokens\":{\"<s>\":{\"ids\":[300]}}},\"decoder\":{\"type\":\"ByteLevel\"}}");
    if (jr_tok_load_json(&t, buf, o, "fixed.json")) {
        fprintf(stderr, "fuzz_tokenizer: fixed tokenizer does not load: %s\n", jr_errmsg());
        abort();
    }
    return t;
}

static void round_trip(const jr_tokenizer *t, const char *s, size_t n) {
    jr_ids ids = {0};
    if (jr_tok_encode(t, s, n, 0, &ids) != JR_OK) { jr_ids_free(&ids); return; } /* invalid UTF-8 */
    char *dec;
    size_t dl;
    if (jr_tok_decode(t, ids.ids, ids.n, 0, &dec, &dl)) abort();
    utf8proc_uint8_t *want = NULL;
    utf8proc_ssize_t wl = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &want, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    /* lstrip/rstrip tokens swallow whitespace that decoding cannot restore (as in HF) */
    int strips = memmem(s, n, "<L>", 3) || memmem(s, n, "<R>", 3);
    if (wl >= 0 && !strips && ((size_t)wl != dl || memcmp(want, dec, dl))) {
        /* Hugging Face splits added tokens with normalized:false ("tok" here) out of the raw text
         * before normalizing the rest, so NFC applies piece by piece: "tok" + U+0327 stays as is
         * where NFC of the whole would compose k + U+0327. Then only NFC(decoded) == NFC(x) holds. */
        utf8proc_uint8_t *dn = NULL;
        utf8proc_ssize_t dnl = memmem(s, n, "tok", 3) ? utf8proc_map((const utf8proc_uint8_t *)dec, (utf8proc_ssize_t)dl, &dn,
                                                                     UTF8PROC_STABLE | UTF8PROC_COMPOSE) : -1;
        int same = dnl == wl && !memcmp(dn, want, (size_t)wl);
        free(dn);
        if (!same) {
            fprintf(stderr, "round trip differs\n");
            abort();
        }
    }
    jr_tok_stream st;
    jr_tok_stream_init(&st, t, 0);
    size_t al = 0;
    for (size_t i = 0; i < ids.n; i++) {
        const char *p;
        size_t pl;
        if (jr_tok_stream_push(&st, ids.ids[i], &p, &pl) || al + pl > dl || memcmp(dec + al, p, pl)) abort();
        al += pl;
    }
    const char *p;
    size_t pl;
    if (jr_tok_stream_finish(&st, &p, &pl) || al + pl != dl) abort();
    jr_tok_stream_free(&st);
    free(want);
    free(dec);
    ids.n = 0;
    jr_tok_encode(t, s, n, JR_TOK_ADD_SPECIAL | JR_TOK_SPLIT_SPECIAL, &ids);
    jr_ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] & 1) {
        /* the input is a tokenizer.json: load it and, when it loads, encode and decode with it */
        jr_tokenizer *t = NULL;
        if (jr_tok_load_json(&t, s, n, "fuzz.json") == JR_OK) {
            static const char *texts[] = {"Hello world, DON'T 123456 \xc3\xa9\xf0\x9f\x91\x8d\r\n\t  x", "<s><|im_end|>", ""};
            for (int i = 0; i < 3; i++) {
                jr_ids ids = {0};
                if (jr_tok_encode(t, texts[i], strlen(texts[i]), JR_TOK_ADD_SPECIAL, &ids) == JR_OK) {
                    char *dec;
                    if (jr_tok_decode(t, ids.ids, ids.n, JR_TOK_SKIP_SPECIAL, &dec, NULL) == JR_OK) free(dec);
                }
                jr_ids_free(&ids);
            }
            jr_tok_free(t);
        }
    } else {
        round_trip(fixed(), s, n);
    }
    return 0;
}
