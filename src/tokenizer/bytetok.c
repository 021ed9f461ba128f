/* bytetok.c - byte-level tokenizer: bytes are ids 0..255, specials follow; HF tokenizer.json export */
#include "judgerl/bytetok.h"

#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "judgerl/fsutil.h"
#include "judgerl/utf8.h"
#include "tokenizer/tok_internal.h"

static const char *const specials[JR_BYTETOK_VOCAB - 256] = {
    "<|bos|>", "<|eos|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>",
};

const char *jr_bytetok_special_name(int32_t id) {
    if (id < 256 || id >= JR_BYTETOK_VOCAB) return NULL;
    return specials[id - 256];
}

int32_t jr_bytetok_special_id(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < JR_BYTETOK_VOCAB - 256; i++)
        if (!strcmp(name, specials[i])) return 256 + i;
    return -1;
}

/* The special whose text starts at s (n bytes left), or -1. */
static int32_t special_at(const char *s, size_t n) {
    if (n < 7 || s[0] != '<' || s[1] != '|') return -1;
    for (int i = 0; i < JR_BYTETOK_VOCAB - 256; i++) {
        size_t l = strlen(specials[i]);
        if (l <= n && !memcmp(s, specials[i], l)) return 256 + i;
    }
    return -1;
}

jr_status jr_bytetok_encode(const char *text, size_t len, int parse_specials, int32_t **ids, size_t *n_ids) {
    *ids = NULL;
    *n_ids = 0;
    int32_t *out = jr_malloc((len ? len : 1) * sizeof *out);
    if (!out) return JR_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int32_t sp = parse_specials ? special_at(text + i, len - i) : -1;
        if (sp >= 0) {
            out[n++] = sp;
            i += strlen(specials[sp - 256]);
        } else {
            out[n++] = (unsigned char)text[i++];
        }
    }
    *ids = out;
    *n_ids = n;
    return JR_OK;
}

jr_status jr_bytetok_decode(const int32_t *ids, size_t n_ids, int render_specials, char **text, size_t *len) {
    *text = NULL;
    if (len) *len = 0;
    size_t cap = 1;
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= JR_BYTETOK_VOCAB)
            return jr_fail(JR_EINVAL, "token %zu: id %d is outside the byte tokenizer's vocabulary 0..%d", i, (int)id,
                           JR_BYTETOK_VOCAB - 1);
        cap += id < 256 ? 1 : (render_specials ? strlen(specials[id - 256]) : 0);
    }
    char *out = jr_malloc(cap);
    if (!out) return JR_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 256) out[n++] = (char)id;
        else if (render_specials) {
            size_t l = strlen(specials[id - 256]);
            memcpy(out + n, specials[id - 256], l);
            n += l;
        }
    }
    out[n] = 0;
    *text = out;
    if (len) *len = n;
    return JR_OK;
}

jr_status jr_bytetok_write_hf(const char *path) {
    json_t *vocab = json_object();
    json_t *added = json_array();
    json_t *root = NULL;
    jr_status st = JR_ENOMEM;
    if (!vocab || !added) goto out;
    for (unsigned b = 0; b < 256; b++) {
        char s[4];
        s[jr_utf8_encode(tok_bytelevel_cp(b), s)] = 0;
        if (json_object_set_new(vocab, s, json_integer(b))) goto out;
    }
    for (int i = 0; i < JR_BYTETOK_VOCAB - 256; i++) {
        json_t *t = json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", 256 + i, "content", specials[i],
                              "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1);
        if (!t || json_array_append_new(added, t)) goto out;
    }
    root = json_pack("{s:s, s:n, s:n, s:O, s:n, s:{s:s, s:b, s:b, s:b}, s:n, s:{s:s, s:b, s:b, s:b},"
                     " s:{s:s, s:n, s:n, s:n, s:n, s:b, s:b, s:b, s:O, s:[]}}",
                     "version", "1.0", "truncation", "padding", "added_tokens", added, "normalizer",
                     "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 0,
                     "post_processor",
                     "decoder", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 0,
                     "model", "type", "BPE", "dropout", "unk_token", "continuing_subword_prefix",
                     "end_of_word_suffix", "fuse_unk", 0, "byte_fallback", 0, "ignore_merges", 0, "vocab", vocab,
                     "merges");
    if (!root) goto out;
    char *txt = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!txt) goto out;
    size_t n = strlen(txt);
    char *buf = jr_malloc(n + 2);
    if (!buf) { free(txt); goto out; }
    memcpy(buf, txt, n);
    buf[n] = '\n';
    free(txt);
    st = jr_write_atomic(path, buf, n + 1);
    free(buf);
    json_decref(root);
    json_decref(vocab);
    json_decref(added);
    return st;
out:
    json_decref(root);
    json_decref(vocab);
    json_decref(added);
    return st == JR_ENOMEM ? jr_fail(JR_ENOMEM, "%s: out of memory building tokenizer.json", path) : st;
}
