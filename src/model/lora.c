/* lora.c - LoRA adapters merged into the effective weights (W + alpha/r B A), their gradients, PEFT export/import */
#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/lora.h"
#include "judgerl/nn.h"
#include "judgerl/rng.h"
#include "judgerl/safetensors.h"

static const struct {
    const char *name;  /* PEFT module name */
    const char *alias; /* short form */
    unsigned bit;
    jr_tensor_role role;
} MODULES[] = {
    {"q_proj", "q", JR_LORA_Q, JR_T_Q},          {"k_proj", "k", JR_LORA_K, JR_T_K},
    {"v_proj", "v", JR_LORA_V, JR_T_V},          {"o_proj", "o", JR_LORA_O, JR_T_O},
    {"gate_proj", "gate", JR_LORA_GATE, JR_T_GATE}, {"up_proj", "up", JR_LORA_UP, JR_T_UP},
    {"down_proj", "down", JR_LORA_DOWN, JR_T_DOWN},
};
enum { N_MODULES = 7 };

static int module_bit(const char *s, size_t n) {
    for (int i = 0; i < N_MODULES; i++)
        if ((strlen(MODULES[i].name) == n && !strncmp(s, MODULES[i].name, n)) ||
            (strlen(MODULES[i].alias) == n && !strncmp(s, MODULES[i].alias, n)))
            return (int)MODULES[i].bit;
    return -1;
}

int jr_lora_parse_targets(const char *list, unsigned *bits) {
    *bits = 0;
    if (!list) return -1;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        size_t n = strcspn(p, ", ");
        if ((n == 3 && !strncmp(p, "all", 3)) || (n == 10 && !strncmp(p, "all-linear", 10))) {
            *bits |= JR_LORA_ALL;
        } else {
            int b = module_bit(p, n);
            if (b < 0) {
                jr_fail(JR_EINVAL, "unknown LoRA target module '%.*s' (known: q, k, v, o, gate, up, down or q_proj ... "
                                   "down_proj, all)", (int)n, p);
                return -1;
            }
            *bits |= (unsigned)b;
        }
        p += n;
    }
    if (!*bits) { jr_fail(JR_EINVAL, "the LoRA target module list '%s' is empty", list); return -1; }
    return 0;
}

void jr_lora_free(jr_lora *l) {
    if (!l) return;
    for (int i = 0; i < l->n_t; i++) free(l->t[i].base);
    free(l->t);
    free(l->ad.tensors);
    free(l->ad.offset);
    free(l->ad.params);
    free(l->ad.grads);
    free(l->xa); free(l->db);
    if (l->direct && l->m) l->m->dw_hook = (jr_dweight_hook){NULL, NULL};
    memset(l, 0, sizeof *l);
}

/* PEFT's tensor name for base tensor `hf` ("model.layers.0.self_attn.q_proj.weight") and part A/B. */
static void peft_name(char *out, size_t cap, const char *hf, char part) {
    size_t n = strlen(hf);
    if (n > 7 && !strcmp(hf + n - 7, ".weight")) n -= 7;
    snprintf(out, cap, "base_model.model.%.*s.lora_%c.weight", (int)n, hf, part);
}

jr_status jr_lora_init(jr_lora *l, jr_model *m, int rank, double alpha, unsigned targets, uint64_t seed) {
    memset(l, 0, sizeof *l);
    if (rank < 1) return jr_fail(JR_EINVAL, "LoRA rank must be >= 1 (got %d)", rank);
    l->rank = rank;
    l->alpha = alpha;
    l->scale = alpha / rank;
    l->targets = targets;
    l->m = m;
    int cnt = 0;
    for (int i = 0; i < m->n_tensors; i++)
        for (int k = 0; k < N_MODULES; k++)
            if ((targets & MODULES[k].bit) && m->tensors[i].role == MODULES[k].role) cnt++;
    if (!cnt) return jr_fail(JR_EINVAL, "LoRA: the model has none of the target modules");
    l->t = jr_calloc((size_t)cnt, sizeof *l->t);
    l->ad.tensors = jr_calloc((size_t)(2 * cnt), sizeof *l->ad.tensors);
    l->ad.offset = jr_calloc((size_t)(2 * cnt), sizeof *l->ad.offset);
    if (!l->t || !l->ad.tensors || !l->ad.offset) { jr_lora_free(l); return JR_ENOMEM; }
    size_t total = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        int hit = 0;
        for (int k = 0; k < N_MODULES; k++)
            if ((targets & MODULES[k].bit) && m->tensors[i].role == MODULES[k].role) hit = 1;
        if (!hit) continue;
        jr_lora_target *t = &l->t[l->n_t];
        t->tensor = i;
        t->out = (int)m->tensors[i].shape[0];
        t->in = (int)m->tensors[i].shape[1];
        for (int p = 0; p < 2; p++) {
            jr_model_tensor *x = &l->ad.tensors[2 * l->n_t + p];
            peft_name(x->name, sizeof x->name, m->tensors[i].name, p ? 'B' : 'A');
            x->role = m->tensors[i].role;
            x->layer = m->tensors[i].layer;
            x->ndim = 2;
            x->shape[0] = p ? t->out : rank;
            x->shape[1] = p ? rank : t->in;
            x->numel = x->shape[0] * x->shape[1];
            l->ad.offset[2 * l->n_t + p] = total;
            total += (size_t)x->numel;
        }
        t->base = jr_malloc(sizeof(float) * (size_t)m->tensors[i].numel);
        if (!t->base) { l->n_t++; jr_lora_free(l); return JR_ENOMEM; }
        memcpy(t->base, m->params + m->offset[i], sizeof(float) * (size_t)m->tensors[i].numel);
        l->n_t++;
    }
    l->ad.n_tensors = 2 * l->n_t;
    l->ad.n_params = total;
    l->ad.params = jr_calloc(total, sizeof(float));
    l->ad.grads = jr_calloc(total, sizeof(float));
    if (!l->ad.params || !l->ad.grads) { jr_lora_free(l); return JR_ENOMEM; }
    jr_rng rng;
    jr_rng_seed2(&rng, seed, 0x6c6f7261ULL);
    for (int i = 0; i < l->n_t; i++) {
        jr_lora_target *t = &l->t[i];
        t->A = l->ad.params + l->ad.offset[2 * i];
        t->B = l->ad.params + l->ad.offset[2 * i + 1];
        t->gA = l->ad.grads + l->ad.offset[2 * i];
        t->gB = l->ad.grads + l->ad.offset[2 * i + 1];
        double bound = 1.0 / sqrt((double)t->in);
        for (long j = 0; j < (long)rank * t->in; j++) t->A[j] = (float)((2.0 * jr_rng_double(&rng) - 1.0) * bound);
    }
    jr_lora_on(l);
    return JR_OK;
}

void jr_lora_on(jr_lora *l) {
    for (int i = 0; i < l->n_t; i++) {
        jr_lora_target *t = &l->t[i];
        float *W = l->m->params + l->m->offset[t->tensor];
        memcpy(W, t->base, sizeof(float) * (size_t)t->out * t->in);
        /* W (out, in) += scale * B (out, r) . A (r, in) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t->out, t->in, l->rank, (float)l->scale, t->B, l->rank,
                    t->A, t->in, 1.0f, W, t->in);
    }
    l->on = 1;
}

void jr_lora_off(jr_lora *l) {
    for (int i = 0; i < l->n_t; i++) {
        jr_lora_target *t = &l->t[i];
        memcpy(l->m->params + l->m->offset[t->tensor], t->base, sizeof(float) * (size_t)t->out * t->in);
    }
    l->on = 0;
}

enum { DIRECT_ROWS = 4096 }; /* rows of the direct mode's (rows, r) scratch: longer batches go in chunks */

/* jr_dweight_hook of direct mode: the adapters' gradients of the projection w, or nothing for a
 * frozen tensor (every other one). Sums over rows, so taken DIRECT_ROWS rows at a time. */
static int take_dw(void *ud, const float *w, const float *dout, const float *inp, int N, int C, int OC) {
    jr_lora *l = ud;
    jr_lora_target *t = NULL;
    for (int i = 0; i < l->n_t && !t; i++)
        if (l->m->params + l->m->offset[l->t[i].tensor] == w) t = &l->t[i];
    if (!t) return 1; /* frozen */
    if (!dout || !inp || t->out != OC || t->in != C) return 0;
    float s = (float)l->scale;
    int r = l->rank;
    for (int n0 = 0; n0 < N; n0 += DIRECT_ROWS) {
        int rows = N - n0 < DIRECT_ROWS ? N - n0 : DIRECT_ROWS;
        const float *x = inp + (size_t)n0 * C, *d = dout + (size_t)n0 * OC;
        size_t need = (size_t)rows * r;
        /* xa (rows, r) = s x A^T; gB (out, r) += d^T xa */
        memset(l->xa, 0, sizeof(float) * need);
        jr_matmul_forward(l->xa, x, t->A, NULL, rows, C, r);
        for (size_t i = 0; i < need; i++) l->xa[i] *= s;
        jr_matmul_backward(NULL, t->gB, NULL, d, l->xa, NULL, rows, r, OC);
        /* db (rows, r) = s d B; gA (r, in) += db^T x */
        memset(l->db, 0, sizeof(float) * need);
        jr_matmul_backward(l->db, NULL, NULL, d, NULL, t->B, rows, r, OC);
        for (size_t i = 0; i < need; i++) l->db[i] *= s;
        jr_matmul_backward(NULL, t->gA, NULL, l->db, x, NULL, rows, C, r);
    }
    return 1;
}

jr_status jr_lora_direct(jr_lora *l, int on) {
    if (on && !l->xa) {
        l->xa = malloc(sizeof(float) * DIRECT_ROWS * (size_t)l->rank);
        l->db = malloc(sizeof(float) * DIRECT_ROWS * (size_t)l->rank);
        if (!l->xa || !l->db) {
            free(l->xa); free(l->db); l->xa = l->db = NULL;
            return jr_fail(JR_ENOMEM, "lora: no memory for the adapters' gradient scratch");
        }
    }
    l->direct = on != 0;
    l->m->dw_hook = on ? (jr_dweight_hook){l, take_dw} : (jr_dweight_hook){NULL, NULL};
    return JR_OK;
}

void jr_lora_zero_grads(jr_lora *l) { jr_model_zero_grads(&l->ad); }

void jr_lora_grads(jr_lora *l) {
    if (l->direct) return; /* the backward added them */
    for (int i = 0; i < l->n_t; i++) {
        jr_lora_target *t = &l->t[i];
        const float *G = l->m->grads + l->m->offset[t->tensor];
        /* gA (r, in) = scale * B^T (r, out) . G (out, in) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l->rank, t->in, t->out, (float)l->scale, t->B, l->rank, G,
                    t->in, 0.0f, t->gA, t->in);
        /* gB (out, r) = scale * G (out, in) . A^T (in, r) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t->out, l->rank, t->in, (float)l->scale, G, t->in, t->A,
                    t->in, 0.0f, t->gB, l->rank);
    }
}

jr_status jr_lora_save_peft(const jr_lora *l, const char *dir, const char *base_name, double dropout) {
    jr_status st = jr_mkdirs(dir);
    if (st) return st;
    json_t *cfg = json_object(), *mods = json_array();
    for (int k = 0; k < N_MODULES; k++)
        if (l->targets & MODULES[k].bit) json_array_append_new(mods, json_string(MODULES[k].name));
    json_object_set_new(cfg, "peft_type", json_string("LORA"));
    json_object_set_new(cfg, "task_type", json_string("CAUSAL_LM"));
    json_object_set_new(cfg, "base_model_name_or_path", base_name ? json_string(base_name) : json_null());
    json_object_set_new(cfg, "r", json_integer(l->rank));
    json_object_set_new(cfg, "lora_alpha", json_real(l->alpha));
    json_object_set_new(cfg, "lora_dropout", json_real(dropout));
    json_object_set_new(cfg, "target_modules", mods);
    json_object_set_new(cfg, "bias", json_string("none"));
    json_object_set_new(cfg, "fan_in_fan_out", json_false());
    json_object_set_new(cfg, "inference_mode", json_true());
    json_object_set_new(cfg, "init_lora_weights", json_true());
    json_object_set_new(cfg, "modules_to_save", json_null());
    json_object_set_new(cfg, "use_rslora", json_false());
    json_object_set_new(cfg, "use_dora", json_false());
    json_object_set_new(cfg, "layers_to_transform", json_null());
    json_object_set_new(cfg, "rank_pattern", json_object());
    json_object_set_new(cfg, "alpha_pattern", json_object());
    char *text = json_dumps(cfg, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(cfg);
    char *cpath = jr_path_join(dir, "adapter_config.json"), *wpath = jr_path_join(dir, "adapter_model.safetensors");
    jr_st_entry *e = jr_calloc((size_t)l->ad.n_tensors + 1, sizeof *e);
    if (!text || !cpath || !wpath || !e) st = JR_ENOMEM;
    for (int i = 0; i < l->ad.n_tensors && !st; i++) {
        e[i].name = l->ad.tensors[i].name;
        e[i].ndim = 2;
        e[i].shape[0] = l->ad.tensors[i].shape[0];
        e[i].shape[1] = l->ad.tensors[i].shape[1];
        e[i].data = l->ad.params + l->ad.offset[i];
    }
    if (!st) st = jr_st_write(wpath, e, l->ad.n_tensors, JR_DT_F32);
    if (!st) st = jr_write_atomic(cpath, text, strlen(text));
    if (!st) st = jr_fsync_dir(dir);
    free(text); free(cpath); free(wpath); free(e);
    return st;
}

jr_status jr_lora_load_peft(jr_lora *l, const char *dir) {
    char *wpath = jr_path_join(dir, "adapter_model.safetensors");
    if (!wpath) return JR_ENOMEM;
    jr_safetensors f = {0};
    jr_status st = jr_st_open(&f, wpath);
    for (int i = 0; i < l->ad.n_tensors && !st; i++) {
        const jr_model_tensor *x = &l->ad.tensors[i];
        const jr_st_tensor *t = jr_st_find(&f, x->name);
        if (!t)
            st = jr_fail(JR_EFORMAT, "%s: tensor '%s' is missing (the adapter's rank or target modules differ?)", wpath,
                         x->name);
        else if (t->numel != x->numel || t->ndim != 2 || t->shape[0] != x->shape[0])
            st = jr_fail(JR_EFORMAT, "%s: tensor '%s' has shape (%lld, %lld), expected (%lld, %lld)", wpath, x->name,
                         (long long)t->shape[0], (long long)(t->ndim > 1 ? t->shape[1] : 1), (long long)x->shape[0],
                         (long long)x->shape[1]);
        else
            st = jr_st_read_f32(&f, t, l->ad.params + l->ad.offset[i]);
    }
    /* a tensor the base model has no place for: the adapter was made for another (e.g. deeper) model */
    for (int j = 0; j < f.n && !st; j++) {
        int known = 0;
        for (int i = 0; i < l->ad.n_tensors && !known; i++) known = !strcmp(f.tensors[j].name, l->ad.tensors[i].name);
        if (!known)
            st = jr_fail(JR_EFORMAT, "%s: tensor '%s' has no place in the base model (%d layers; the adapter was made "
                         "for another model?)", wpath, f.tensors[j].name, l->m ? l->m->cfg.num_hidden_layers : -1);
    }
    jr_st_close(&f);
    free(wpath);
    if (!st) jr_lora_on(l);
    return st;
}

jr_status jr_lora_merge_into(jr_model *m, const char *adapter_dir) {
    if (m->w16) /* its matmul weights are bf16 only (m->w's views NULL): nothing to fold into */
        return jr_fail(JR_EUNSUPPORTED, "%s: a model loaded for bf16 inference (jr_model_load_bf16) cannot take a LoRA adapter; load it in fp32", adapter_dir);
    char *cpath = jr_path_join(adapter_dir, "adapter_config.json");
    if (!cpath) return JR_ENOMEM;
    json_error_t err;
    json_t *cfg = json_load_file(cpath, 0, &err);
    jr_status st = JR_OK;
    if (!cfg) st = jr_fail(JR_EFORMAT, "%s:%d: %s", cpath, err.line, err.text);
    int r = 0;
    double alpha = 0;
    unsigned bits = 0;
    if (!st) {
        const char *pt = json_string_value(json_object_get(cfg, "peft_type"));
        json_t *mods = json_object_get(cfg, "target_modules");
        r = (int)json_integer_value(json_object_get(cfg, "r"));
        alpha = json_number_value(json_object_get(cfg, "lora_alpha"));
        if (!pt || strcmp(pt, "LORA")) st = jr_fail(JR_EFORMAT, "%s: peft_type must be \"LORA\"", cpath);
        else if (r < 1) st = jr_fail(JR_EFORMAT, "%s: field r must be an integer >= 1", cpath);
        else if (!json_is_number(json_object_get(cfg, "lora_alpha")))
            st = jr_fail(JR_EFORMAT, "%s: field lora_alpha must be a number", cpath);
        else if (json_is_true(json_object_get(cfg, "use_dora")) || json_is_true(json_object_get(cfg, "use_rslora")))
            st = jr_fail(JR_EUNSUPPORTED, "%s: use_dora / use_rslora adapters are not supported", cpath);
        else if (json_is_string(mods)) {
            if (jr_lora_parse_targets(json_string_value(mods), &bits)) st = jr_fail_ctx(JR_EFORMAT, "%s", cpath);
        } else if (json_is_array(mods)) {
            size_t i;
            json_t *v;
            json_array_foreach(mods, i, v) {
                const char *s = json_string_value(v);
                int b = s ? module_bit(s, strlen(s)) : -1;
                if (b < 0) { st = jr_fail(JR_EFORMAT, "%s: target_modules[%zu] '%s' is not one of q_proj ... down_proj", cpath, i, s ? s : ""); break; }
                bits |= (unsigned)b;
            }
        } else {
            st = jr_fail(JR_EFORMAT, "%s: target_modules must be a list of module names", cpath);
        }
    }
    json_decref(cfg);
    free(cpath);
    if (st) return st;
    jr_lora l;
    if ((st = jr_lora_init(&l, m, r, alpha, bits, 0))) return st;
    st = jr_lora_load_peft(&l, adapter_dir);
    if (st) jr_lora_off(&l);
    jr_lora_free(&l);
    return st;
}
