/* textgen.c - a model ready to generate text: weights, KV cache, tokenizer, eos ids, prompt rendering */
#include <jansson.h>
#include "judgerl/textgen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "judgerl/bytetok.h"
#include "judgerl/fsutil.h"
#include "judgerl/lora.h"

static void add_eos(jr_textgen *t, int id) {
    if (id < 0 || id >= t->vocab.tb.n) return;
    for (int i = 0; i < t->vocab.n_eos; i++)
        if (t->eos[i] == id) return;
    if (t->vocab.n_eos < JR_MAX_EOS + 1) t->eos[t->vocab.n_eos++] = id;
}

/* Fills the token table and eos list from the tokenizer and the model's configs. */
static jr_status vocab_build(jr_textgen *t) {
    int n = t->bpe ? jr_tok_n_tokens(t->bpe) : t->tok.n_vocab;
    if (n > t->m->cfg.vocab_size)
        return jr_fail(JR_EINVAL, "model vocab_size=%d is smaller than the %s tokenizer's %d ids", t->m->cfg.vocab_size,
                       t->bpe ? "tokenizer.json" : t->tok.kind, n);
    t->pieces = calloc((size_t)n, sizeof *t->pieces);
    t->piece_len = calloc((size_t)n, sizeof *t->piece_len);
    if (!t->pieces || !t->piece_len) return jr_fail(JR_ENOMEM, "tokenizer: out of memory for %d pieces", n);
    for (int32_t id = 0; t->bpe && id < n; id++) {
        size_t len = 0;
        const char *b = jr_tok_id_bytes(t->bpe, id, &len);
        if (!b || !len || jr_tok_is_special(t->bpe, id)) continue; /* holes and specials: no text */
        if (!(t->pieces[id] = malloc(len + 1))) return jr_fail(JR_ENOMEM, "tokenizer: out of memory");
        memcpy(t->pieces[id], b, len);
        t->pieces[id][len] = 0;
        t->piece_len[id] = (int32_t)len;
    }
    for (int32_t id = 0; !t->bpe && id < n; id++) {
        if (!strcmp(t->tok.kind, "byte") && id >= 256) continue; /* specials: no text */
        char *text = NULL;
        size_t len = 0;
        jr_status st = t->tok.decode(t->tok.ctx, &id, 1, &text, &len);
        if (st) return st;
        if (len == 0) { free(text); continue; }
        t->pieces[id] = text;
        t->piece_len[id] = (int32_t)len;
    }
    t->vocab.tb.n = n;
    t->vocab.tb.bytes = (const char *const *)t->pieces;
    t->vocab.tb.len = t->piece_len;
    t->vocab.eos = t->eos;
    add_eos(t, t->bpe ? jr_tok_eos_id(t->bpe) : t->tok.eos_id);
    for (int32_t id = 0; t->bpe && id < n; id++)
        if (jr_tok_is_eos(t->bpe, id)) add_eos(t, id);
    for (int i = 0; i < t->m->cfg.n_eos; i++) add_eos(t, t->m->cfg.eos_token_ids[i]);
    for (int i = 0; i < t->gen.n_eos; i++) add_eos(t, t->gen.eos_token_ids[i]);
    return JR_OK;
}

static jr_status finish_open(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx) {
    jr_status st = jr_tok_open_for_model(&t->tok, dir, tok_spec, t->m->cfg.vocab_size, t->tok_desc, sizeof t->tok_desc);
    if (st) return st;
    t->bpe = t->tok.hf; /* owned by t->tok */
    if ((st = vocab_build(t))) return st;
    return jr_textgen_reserve(t, n_slots, max_ctx);
}

jr_status jr_textgen_reserve(jr_textgen *t, int n_slots, int max_ctx) {
    int maxpos = t->m->cfg.max_position_embeddings;
    if (max_ctx <= 0) max_ctx = maxpos < 4096 ? maxpos : 4096;
    if (max_ctx > maxpos) max_ctx = maxpos;
    if (t->lm.impl && t->lm.n_slots == n_slots && t->lm.max_ctx == max_ctx) return JR_OK;
    if (t->lm.impl) jr_kv_lm_close(&t->lm);
    return jr_kv_lm_open_opts(&t->lm, t->m, n_slots, max_ctx, &t->kvo);
}

jr_status jr_textgen_set_kv(jr_textgen *t, const jr_kv_opts *o) {
    if (!memcmp(&t->kvo, o, sizeof *o)) return JR_OK;
    t->kvo = *o;
    if (!t->lm.impl) return JR_OK;
    int n_slots = t->lm.n_slots, max_ctx = t->lm.max_ctx;
    jr_kv_lm_close(&t->lm);
    return jr_kv_lm_open_opts(&t->lm, t->m, n_slots, max_ctx, &t->kvo);
}

jr_status jr_textgen_sync(jr_textgen *t) { return t->lm.impl ? jr_kv_lm_sync(&t->lm) : JR_OK; }

jr_status jr_textgen_open(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx) {
    jr_kv_opts o = jr_kv_opts_default();
    return jr_textgen_open_kv(t, dir, tok_spec, n_slots, max_ctx, &o);
}

jr_status jr_textgen_open_kv(jr_textgen *t, const char *dir, const char *tok_spec, int n_slots, int max_ctx,
                             const jr_kv_opts *kvo) {
    memset(t, 0, sizeof *t);
    t->kvo = *kvo;
    jr_generation_config_init(&t->gen);
    jr_status st = kvo->weights == JR_COMPUTE_BF16 ? jr_model_load_bf16(&t->model, dir) : jr_model_load(&t->model, dir);
    if (st) { memset(t, 0, sizeof *t); return st; }
    t->m = &t->model;
    t->owns_model = 1;
    char *gp = jr_path_join(dir, "generation_config.json");
    struct stat sb;
    if (gp && stat(gp, &sb) == 0) st = jr_generation_config_load(&t->gen, gp);
    free(gp);
    if (!st) st = finish_open(t, dir, tok_spec, n_slots, max_ctx);
    if (st) jr_textgen_close(t);
    return st;
}

jr_status jr_textgen_open_model(jr_textgen *t, const jr_model *m, const char *tok_spec, int n_slots, int max_ctx) {
    memset(t, 0, sizeof *t);
    t->kvo = jr_kv_opts_default();
    t->kvo.weights = m->compute; /* generation computes as the trainer does (model.compute) */
    jr_generation_config_init(&t->gen);
    t->m = m;
    jr_status st = finish_open(t, NULL, tok_spec, n_slots, max_ctx);
    if (st) jr_textgen_close(t);
    return st;
}

void jr_textgen_fingerprint(const jr_textgen *t, char out[65]) {
    jr_sha256 h;
    jr_sha256_init(&h);
    const jr_model_config *c = &t->m->cfg;
    int dims[] = {c->vocab_size, c->hidden_size, c->num_hidden_layers, c->num_attention_heads, c->num_key_value_heads,
                  c->intermediate_size, c->max_position_embeddings};
    jr_sha256_update(&h, "judgerl-fingerprint-1", 22);
    jr_sha256_update(&h, dims, sizeof dims);
    jr_sha256_update(&h, t->m->params, t->m->n_params * sizeof *t->m->params);
    if (t->m->w16) jr_sha256_update(&h, t->m->w16, t->m->n_w16 * sizeof *t->m->w16); /* loaded in bf16 */
    jr_kv_opts d = jr_kv_opts_default();
    if (memcmp(&t->kvo, &d, sizeof d)) { /* bf16 weights or cache give other answers than fp32 */
        int k[3] = {(int)t->kvo.weights, t->kvo.kv_bf16, t->kvo.deterministic};
        jr_sha256_update(&h, k, sizeof k);
    }
    jr_tok_hash(&t->tok, &h);
    jr_sha256_final_hex(&h, out);
}

void jr_textgen_close(jr_textgen *t) {
    if (t->lm.impl) jr_kv_lm_close(&t->lm);
    for (int i = 0; t->pieces && i < t->vocab.tb.n; i++) free(t->pieces[i]);
    free(t->pieces);
    free(t->piece_len);
    jr_tok_close(&t->tok); /* frees t->bpe too */
    jr_generation_config_free(&t->gen);
    if (t->owns_model) jr_model_free(&t->model);
    memset(t, 0, sizeof *t);
}

/* Moves a jr_ids into a malloc'ed array. */
static jr_status take_ids(jr_ids *v, int32_t **ids, int *n) {
    if (v->n == 0) { jr_ids_free(v); return jr_fail(JR_EINVAL, "the prompt encodes to no tokens"); }
    *ids = v->ids;
    *n = (int)v->n;
    return JR_OK;
}

jr_status jr_textgen_encode(jr_textgen *t, const char *text, size_t len, int32_t **ids, int *n) {
    if (t->bpe) {
        jr_ids v = {0};
        jr_status st = jr_tok_encode(t->bpe, text, len, JR_TOK_ADD_SPECIAL, &v);
        if (st) { jr_ids_free(&v); return st; }
        return take_ids(&v, ids, n);
    }
    int32_t *raw;
    size_t k;
    jr_status st = t->tok.encode(t->tok.ctx, text, len, &raw, &k);
    if (st) return st;
    int bos = t->tok.bos_id >= 0;
    int32_t *o = malloc((k + 1) * sizeof *o);
    if (!o) { free(raw); return jr_fail(JR_ENOMEM, "tokenizer: out of memory"); }
    if (bos) o[0] = t->tok.bos_id;
    memcpy(o + bos, raw, k * sizeof *o);
    free(raw);
    *ids = o;
    *n = (int)k + bos;
    return JR_OK;
}

jr_status jr_textgen_encode_chat(jr_textgen *t, int n, const char *const *roles, const char *const *contents,
                                 int32_t **ids, int *n_ids) {
    if (t->bpe) {
        if (!jr_tok_has_chat_template(t->bpe)) return jr_fail(JR_EUNSUPPORTED, "chat: the tokenizer has no chat template");
        jr_chat_msg *msgs = calloc((size_t)(n > 0 ? n : 1), sizeof *msgs);
        if (!msgs) return jr_fail(JR_ENOMEM, "chat: out of memory");
        for (int i = 0; i < n; i++) msgs[i] = (jr_chat_msg){roles[i], contents[i]};
        jr_chat_opts o = {1, -1};
        char *text = NULL;
        size_t len = 0;
        jr_status st = jr_chat_render(t->bpe, msgs, (size_t)n, &o, &text, &len, NULL, NULL);
        free(msgs);
        if (st) return st;
        jr_ids v = {0};
        st = jr_tok_encode(t->bpe, text, len, 0, &v);
        free(text);
        if (st) { jr_ids_free(&v); return st; }
        return take_ids(&v, ids, n_ids);
    }
    size_t cap = 2;
    for (int i = 0; i < n; i++) cap += strlen(contents[i]) + 2;
    int32_t *o = malloc(cap * sizeof *o);
    if (!o) return jr_fail(JR_ENOMEM, "chat: out of memory");
    size_t k = 0;
    if (t->tok.bos_id >= 0) o[k++] = t->tok.bos_id;
    for (int i = 0; i < n; i++) {
        int32_t role = !strcmp(roles[i], "system") ? JR_BYTETOK_SYSTEM : !strcmp(roles[i], "user") ? JR_BYTETOK_USER
                     : !strcmp(roles[i], "assistant") ? JR_BYTETOK_ASSISTANT : -1;
        if (role < 0) { free(o); return jr_fail(JR_EINVAL, "chat: message %d has role '%s' (use system, user or assistant)", i, roles[i]); }
        o[k++] = role;
        for (const unsigned char *p = (const unsigned char *)contents[i]; *p; p++) o[k++] = *p;
        o[k++] = JR_BYTETOK_EOS;
    }
    o[k++] = JR_BYTETOK_ASSISTANT;
    *ids = o;
    *n_ids = (int)k;
    return JR_OK;
}

jr_status jr_textgen_encode_row(jr_textgen *t, const json_t *row, int32_t **ids, int *n) {
    json_t *p = json_object_get(row, "prompt"), *m = json_object_get(row, "messages");
    if (json_is_string(p)) return jr_textgen_encode(t, json_string_value(p), json_string_length(p), ids, n);
    if (!json_is_array(m) || !json_array_size(m)) return jr_fail(JR_EINVAL, "the row has neither a \"prompt\" string nor a \"messages\" list");
    size_t k = json_array_size(m);
    const char **roles = calloc(k, sizeof *roles), **contents = calloc(k, sizeof *contents);
    if (!roles || !contents) { free(roles); free(contents); return jr_fail(JR_ENOMEM, "out of memory"); }
    jr_status st = JR_OK;
    for (size_t i = 0; i < k && !st; i++) {
        json_t *msg = json_array_get(m, i);
        roles[i] = json_string_value(json_object_get(msg, "role"));
        contents[i] = json_string_value(json_object_get(msg, "content"));
        if (!roles[i] || !contents[i]) st = jr_fail(JR_EINVAL, "messages[%zu]: needs \"role\" and \"content\" strings", i);
    }
    if (!st) st = jr_textgen_encode_chat(t, (int)k, roles, contents, ids, n);
    free(roles);
    free(contents);
    return st;
}

/* 1 when dir/name is a regular file. */
static int has_regular_file(const char *dir, const char *name) {
    char *p = jr_path_join(dir, name);
    struct stat sb;
    int ok = p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    free(p);
    return ok;
}

jr_status jr_textgen_open_dir(jr_textgen *t, const char *model, const char *tok_spec, int n_slots, int max_ctx, char *desc,
                              size_t desc_len) {
    jr_kv_opts o = jr_kv_opts_default();
    return jr_textgen_open_dir_kv(t, model, tok_spec, n_slots, max_ctx, &o, desc, desc_len);
}

jr_status jr_textgen_open_dir_kv(jr_textgen *t, const char *model, const char *tok_spec, int n_slots, int max_ctx,
                                 const jr_kv_opts *kvo, char *desc, size_t desc_len) {
    snprintf(desc, desc_len, "%s", model);
    if (has_regular_file(model, "config.json") || !has_regular_file(model, "adapter_config.json"))
        return jr_textgen_open_kv(t, model, tok_spec, n_slots, max_ctx, kvo); /* bf16: loaded in bf16 */
    /* a LoRA checkpoint (the PEFT adapter and the tokenizer files): its base model, folded in memory */
    char *ap = jr_path_join(model, "adapter_config.json");
    if (!ap) return jr_fail(JR_ENOMEM, "out of memory");
    json_error_t je;
    json_t *ac = json_load_file(ap, 0, &je);
    free(ap);
    if (!ac) return jr_fail(JR_EINVAL, "%s/adapter_config.json: %s", model, je.text);
    const char *base = json_string_value(json_object_get(ac, "base_model_name_or_path"));
    jr_status st = JR_OK;
    if (!base || !has_regular_file(base, "config.json"))
        st = jr_fail(JR_EINVAL, "%s holds a LoRA adapter whose base_model_name_or_path (%s) is not a model directory here: "
                     "fold it with `judgerl merge --model BASE --adapter %s -o OUT`", model, base ? base : "null", model);
    if (!st) {
        /* the checkpoint's own tokenizer (the one the run trained with) unless one was given */
        const char *tok = tok_spec && strcmp(tok_spec, "auto") ? tok_spec : has_regular_file(model, "tokenizer.json") ? model : tok_spec;
        snprintf(desc, desc_len, "%s + LoRA adapter %s", base, model);
        st = jr_textgen_open(t, base, tok, n_slots, max_ctx); /* fp32: the adapter folds into fp32 weights */
        if (!st && (st = jr_lora_merge_into(&t->model, model))) jr_textgen_close(t);
        if (!st && (st = jr_textgen_set_kv(t, kvo))) jr_textgen_close(t);
    }
    json_decref(ac);
    return st;
}
