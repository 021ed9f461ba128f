/* textcodec.c - jr_textcodec: opens a tokenizer by spec (byte or HF tokenizer.json), adapted to one interface */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/bytetok.h"
#include "judgerl/fsutil.h"
#include "judgerl/textcodec.h"

static jr_status byte_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n) {
    (void)ctx;
    return jr_bytetok_encode(text, len, 0, ids, n);
}

static jr_status byte_decode(void *ctx, const int32_t *ids, size_t n, char **text, size_t *len) {
    (void)ctx;
    return jr_bytetok_decode(ids, n, 0, text, len);
}

/* The HF case: the tokenizer and where its files came from (for jr_textcodec_copy_files). */
typedef struct {
    jr_tokenizer *hf;
    char *json_path, *cfg_path; /* cfg_path: NULL when there is no tokenizer_config.json */
} hf_ctx;

static jr_status hf_encode(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n) {
    hf_ctx *h = ctx;
    jr_ids v = {0};
    jr_status st = jr_tok_encode(h->hf, text, len, JR_TOK_SPLIT_SPECIAL, &v);
    if (st) { jr_ids_free(&v); return st; }
    if (!v.ids && !(v.ids = malloc(sizeof *v.ids))) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
    *ids = v.ids;
    *n = v.n;
    return JR_OK;
}

static jr_status hf_decode(void *ctx, const int32_t *ids, size_t n, char **text, size_t *len) {
    hf_ctx *h = ctx;
    return jr_tok_decode(h->hf, ids, n, JR_TOK_SKIP_SPECIAL, text, len);
}

static void hf_close(void *ctx) {
    hf_ctx *h = ctx;
    if (!h) return;
    jr_tok_free(h->hf);
    free(h->json_path);
    free(h->cfg_path);
    free(h);
}

/* Sets h's file paths from spec (a tokenizer.json file or a directory holding one). */
static jr_status hf_paths(hf_ctx *h, const char *spec) {
    size_t n = strlen(spec);
    int is_file = n >= 5 && !strcmp(spec + n - 5, ".json");
    char *dir = NULL;
    if (is_file) {
        const char *slash = strrchr(spec, '/');
        dir = slash ? strndup(spec, (size_t)(slash - spec)) : strdup(".");
        h->json_path = strdup(spec);
    } else {
        dir = strdup(spec);
        h->json_path = jr_path_join(spec, "tokenizer.json");
    }
    char *cfg = dir ? jr_path_join(dir, "tokenizer_config.json") : NULL;
    free(dir);
    if (!h->json_path || !cfg) { free(cfg); return jr_fail(JR_ENOMEM, "tokenizer: out of memory"); }
    if (jr_path_exists(cfg)) h->cfg_path = cfg;
    else free(cfg);
    return JR_OK;
}

jr_status jr_textcodec_open(jr_textcodec *t, const char *spec) {
    memset(t, 0, sizeof *t);
    if (!spec || !*spec) return jr_fail(JR_EINVAL, "tokenizer: empty spec (use byte, a tokenizer.json file or a model directory)");
    if (!strcmp(spec, "byte")) {
        t->kind = "byte";
        t->n_vocab = JR_BYTETOK_VOCAB;
        t->bos_id = JR_BYTETOK_BOS;
        t->eos_id = JR_BYTETOK_EOS;
        t->pad_id = JR_BYTETOK_PAD;
        t->encode = byte_encode;
        t->decode = byte_decode;
        return JR_OK;
    }
    if (!jr_path_exists(spec))
        return jr_fail(JR_EINVAL, "tokenizer '%s': no such file or directory (use byte, a tokenizer.json file or a "
                                  "model directory holding one)", spec);
    hf_ctx *h = calloc(1, sizeof *h);
    if (!h) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
    jr_status st = jr_tok_load(&h->hf, spec);
    if (!st) st = hf_paths(h, spec);
    if (st) { hf_close(h); return st; }
    t->kind = "bpe";
    t->n_vocab = jr_tok_n_tokens(h->hf);
    t->bos_id = jr_tok_bos_id(h->hf);
    t->eos_id = jr_tok_eos_id(h->hf);
    t->pad_id = jr_tok_pad_id(h->hf);
    t->encode = hf_encode;
    t->decode = hf_decode;
    t->close = hf_close;
    t->ctx = h;
    t->hf = h->hf;
    return JR_OK;
}

void jr_textcodec_close(jr_textcodec *t) {
    if (t && t->close) t->close(t->ctx);
    if (t) memset(t, 0, sizeof *t);
}

static jr_status copy_file(const char *from, const char *dir, const char *name) {
    char *text = NULL, *to = jr_path_join(dir, name);
    size_t len = 0;
    if (!to) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
    jr_status st = jr_read_file(from, &text, &len);
    if (!st) st = jr_write_atomic(to, text, len);
    free(text);
    free(to);
    return st;
}

/* The files of an HF tokenizer, in the order they are copied and hashed. */
static const char *const tok_files[] = {"tokenizer.json",   "tokenizer_config.json", "special_tokens_map.json",
                                        "chat_template.jinja", "chat_template.json", "added_tokens.json",
                                        "vocab.json",       "merges.txt",            "tokenizer.model",
                                        NULL};

/* The directory of h's tokenizer.json (malloc'ed). */
static char *src_dir(const hf_ctx *h) {
    const char *slash = strrchr(h->json_path, '/');
    return slash ? strndup(h->json_path, (size_t)(slash - h->json_path)) : strdup(".");
}

/* Copies the tokenizer files present in `from` other than the first `skip` of tok_files. */
static jr_status copy_present(const char *from, const char *to, int skip, int *n_copied) {
    jr_status st = JR_OK;
    for (int i = skip; tok_files[i] && !st; i++) {
        char *p = jr_path_join(from, tok_files[i]);
        if (!p) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
        if (jr_path_exists(p)) {
            st = copy_file(p, to, tok_files[i]);
            if (!st && n_copied) (*n_copied)++;
        }
        free(p);
    }
    return st;
}

jr_status jr_textcodec_copy_files(const jr_textcodec *t, const char *dir) {
    if (!t || !t->hf) return JR_OK;
    const hf_ctx *h = t->ctx;
    jr_status st = copy_file(h->json_path, dir, "tokenizer.json");
    if (!st && h->cfg_path) st = copy_file(h->cfg_path, dir, "tokenizer_config.json");
    char *from = src_dir(h);
    if (!from) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
    if (!st) st = copy_present(from, dir, 2, NULL);
    free(from);
    return st;
}

jr_status jr_textcodec_copy_dir_files(const char *model_dir, const char *dir, int *n_copied) {
    if (n_copied) *n_copied = 0;
    return copy_present(model_dir, dir, 0, n_copied);
}

void jr_textcodec_hash(const jr_textcodec *t, jr_sha256 *h) {
    jr_sha256_update(h, t->kind, strlen(t->kind) + 1);
    if (!t->hf) return;
    const hf_ctx *x = t->ctx;
    char *from = src_dir(x);
    for (int i = 0; tok_files[i]; i++) {
        char *p = i == 0 ? strdup(x->json_path) : from ? jr_path_join(from, tok_files[i]) : NULL;
        char *text = NULL;
        size_t len = 0;
        if (p && jr_path_exists(p) && !jr_read_file(p, &text, &len)) {
            jr_sha256_update(h, tok_files[i], strlen(tok_files[i]) + 1);
            jr_sha256_update(h, text, len);
        }
        free(text);
        free(p);
    }
    free(from);
}

const char *jr_textcodec_resolve(const char *model_dir, const char *spec, char *desc, size_t desc_len) {
    if (spec && *spec && strcmp(spec, "auto")) {
        snprintf(desc, desc_len, "%s (given)", spec);
        return spec;
    }
    char *p = model_dir ? jr_path_join(model_dir, "tokenizer.json") : NULL;
    int has = p && jr_path_exists(p);
    free(p);
    if (has) {
        snprintf(desc, desc_len, "%s/tokenizer.json (the model's)", model_dir);
        return model_dir;
    }
    if (model_dir) snprintf(desc, desc_len, "byte (%s has no tokenizer.json)", model_dir);
    else snprintf(desc, desc_len, "byte (no model directory to take a tokenizer from)");
    return "byte";
}

jr_status jr_textcodec_open_for_model(jr_textcodec *t, const char *model_dir, const char *spec, int32_t model_vocab,
                                      char *desc, size_t desc_len) {
    char d[1200];
    const char *use = jr_textcodec_resolve(model_dir, spec, d, sizeof d);
    jr_status st = jr_textcodec_open(t, use);
    if (st) return st;
    if (model_vocab > 0 && t->n_vocab > model_vocab) {
        int32_t n = t->n_vocab;
        jr_textcodec_close(t);
        return jr_fail(JR_EINVAL, "tokenizer %s has %d ids but the model's vocab_size is %d (%s/config.json): it belongs "
                                  "to another model; pass the model's own tokenizer", d, (int)n, (int)model_vocab,
                       model_dir ? model_dir : "the model");
    }
    if (desc) snprintf(desc, desc_len, "%s, %d ids%s", d, (int)t->n_vocab, t->hf && jr_tok_has_chat_template(t->hf) ? ", chat template" : "");
    return JR_OK;
}

/* Encodes text[a, b) with specials parsed, appending to v and marking the new tokens with flag. */
static jr_status piece(const jr_tokenizer *hf, const char *text, size_t a, size_t b, uint8_t flag, jr_ids *v,
                       uint8_t **loss, size_t *cap) {
    if (b <= a) return JR_OK;
    size_t n0 = v->n;
    jr_status st = jr_tok_encode(hf, text + a, b - a, 0, v);
    if (st) return st;
    if (v->n > *cap) {
        size_t nc = v->cap > v->n ? v->cap : v->n;
        uint8_t *nl = realloc(*loss, nc);
        if (!nl) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
        *loss = nl;
        *cap = nc;
    }
    memset(*loss + n0, flag, v->n - n0);
    return JR_OK;
}

jr_status jr_textcodec_encode_chat(const jr_textcodec *t, const jr_chat_msg *msgs, size_t n, int enable_thinking,
                                   int32_t **ids, uint8_t **loss, size_t *n_ids) {
    *ids = NULL;
    if (loss) *loss = NULL;
    *n_ids = 0;
    if (!t->hf || !jr_tok_has_chat_template(t->hf))
        return jr_fail(JR_EINVAL, "the %s tokenizer has no chat template: rows with \"messages\" need a tokenizer.json "
                                  "with one (trainer.tokenizer) or tokenizer.chat_template", t->kind ? t->kind : "(none)");
    jr_chat_opts o = {0, enable_thinking};
    char *text = NULL;
    size_t len = 0, ns = 0, cap = 0, at = 0;
    jr_span *sp = NULL;
    jr_status st = jr_chat_render(t->hf, msgs, n, &o, &text, &len, &sp, &ns);
    if (st) return st;
    jr_ids v = {0};
    uint8_t *l = NULL;
    for (size_t i = 0; i < ns && !st; i++) {
        st = piece(t->hf, text, at, sp[i].start, 0, &v, &l, &cap);
        if (!st) st = piece(t->hf, text, sp[i].start, sp[i].end, 1, &v, &l, &cap);
        if (sp[i].end > at) at = sp[i].end;
    }
    if (!st) st = piece(t->hf, text, at, len, 0, &v, &l, &cap);
    free(text);
    free(sp);
    if (!st && !v.n) st = jr_fail(JR_EINVAL, "the chat renders to no tokens");
    if (st) { jr_ids_free(&v); free(l); return st; }
    *ids = v.ids;
    *n_ids = v.n;
    if (loss) *loss = l;
    else free(l);
    return JR_OK;
}
