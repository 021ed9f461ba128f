/* model.c - transformer weights in one allocation with HF-named views; random init, load, save */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/model.h"
#include "judgerl/config.h"
#include "judgerl/cpu.h"
#include "judgerl/nn.h"
#include "judgerl/rng.h"

void jr_model_views(const jr_model *m, float *base, jr_weights *v) {
    int L = m->cfg.num_hidden_layers;
    memset(v->layers, 0, sizeof(jr_layer_w) * (size_t)L);
    v->embed = v->final_norm = v->lm_head = NULL;
    if (!base) return;
    for (int i = 0; i < m->n_tensors; i++) {
        const jr_model_tensor *t = &m->tensors[i];
        float *p = m->w16 && jr_model_tensor_is_bf16(t) ? NULL : base + m->offset[i]; /* not held in fp32 */
        jr_layer_w *lw = t->layer >= 0 ? &v->layers[t->layer] : NULL;
        switch (t->role) {
        case JR_T_EMBED: v->embed = p; break;
        case JR_T_ATTN_NORM: lw->attn_norm = p; break;
        case JR_T_Q: lw->wq = p; break;
        case JR_T_K: lw->wk = p; break;
        case JR_T_V: lw->wv = p; break;
        case JR_T_O: lw->wo = p; break;
        case JR_T_Q_BIAS: lw->bq = p; break;
        case JR_T_K_BIAS: lw->bk = p; break;
        case JR_T_V_BIAS: lw->bv = p; break;
        case JR_T_O_BIAS: lw->bo = p; break;
        case JR_T_Q_NORM: lw->q_norm = p; break;
        case JR_T_K_NORM: lw->k_norm = p; break;
        case JR_T_MLP_NORM: lw->mlp_norm = p; break;
        case JR_T_GATE: lw->wgate = p; break;
        case JR_T_UP: lw->wup = p; break;
        case JR_T_DOWN: lw->wdown = p; break;
        case JR_T_FINAL_NORM: v->final_norm = p; break;
        case JR_T_LM_HEAD: v->lm_head = p; break;
        default: break;
        }
    }
    if (m->cfg.tie_word_embeddings) v->lm_head = v->embed;
}

int jr_model_tensor_is_bf16(const jr_model_tensor *t) {
    switch (t->role) {
    case JR_T_Q: case JR_T_K: case JR_T_V: case JR_T_O: case JR_T_GATE: case JR_T_UP: case JR_T_DOWN: case JR_T_LM_HEAD: return 1;
    default: return 0;
    }
}

/* Sets up everything but the values: config copy, tensor list, offsets, params buffer, views; with
 * bf16, the tensors jr_model_tensor_is_bf16 says go to m->w16 instead. */
static jr_status model_layout(jr_model *m, const jr_model_config *cfg, int bf16) {
    memset(m, 0, sizeof *m);
    jr_status st = jr_model_config_validate(cfg, "config");
    if (st) return st;
    m->cfg = *cfg;
    if (m->cfg.json) json_incref(m->cfg.json);
    st = jr_model_tensors(&m->cfg, &m->tensors, &m->n_tensors);
    if (st) { jr_model_config_free(&m->cfg); memset(m, 0, sizeof *m); return st; }
    m->offset = jr_calloc((size_t)m->n_tensors, sizeof(size_t));
    m->w.layers = jr_calloc((size_t)cfg->num_hidden_layers, sizeof(jr_layer_w));
    m->g.layers = jr_calloc((size_t)cfg->num_hidden_layers, sizeof(jr_layer_w));
    if (!m->offset || !m->w.layers || !m->g.layers) { jr_model_free(m); return JR_ENOMEM; }
    size_t off = 0, off16 = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        if (bf16 && jr_model_tensor_is_bf16(&m->tensors[i])) {
            m->offset[i] = off16;
            off16 = (off16 + (size_t)m->tensors[i].numel + 31) & ~(size_t)31; /* 64-byte aligned */
            continue;
        }
        m->offset[i] = off;
        off += (size_t)m->tensors[i].numel;
        off = (off + 15) & ~(size_t)15; /* 64-byte aligned tensors */
    }
    m->n_params = off;
    m->n_w16 = off16;
    if (!(m->params = jr_malloc_weights(sizeof(float) * (off ? off : 16))) ||
        (bf16 && !(m->w16 = jr_malloc_weights(sizeof(uint16_t) * (off16 ? off16 : 32))))) {
        jr_model_free(m);
        return jr_fail(JR_ENOMEM, "model: cannot allocate %zu parameters (%.1f MiB)", off + off16, (off * 4.0 + off16 * 2.0) / 1048576);
    }
    memset(m->params, 0, sizeof(float) * off);
    jr_model_views(m, m->params, &m->w);
    return JR_OK;
}

jr_status jr_model_init_random(jr_model *m, const jr_model_config *cfg, uint64_t seed, float std) {
    jr_status st = model_layout(m, cfg, 0);
    if (st) return st;
    jr_rng r;
    jr_rng_seed(&r, seed);
    for (int i = 0; i < m->n_tensors; i++) {
        const jr_model_tensor *t = &m->tensors[i];
        float *p = m->params + m->offset[i];
        if (t->ndim == 2)
            for (int64_t j = 0; j < t->numel; j++) p[j] = (float)(jr_rng_normal(&r) * std);
        else if (t->role == JR_T_ATTN_NORM || t->role == JR_T_MLP_NORM || t->role == JR_T_FINAL_NORM ||
                 t->role == JR_T_Q_NORM || t->role == JR_T_K_NORM)
            for (int64_t j = 0; j < t->numel; j++) p[j] = 1.0f;
        /* biases stay 0 */
    }
    return JR_OK;
}

/* Tensor i of d into m->w16 in bf16: as stored, or through fp32 in blocks rounded as jr_bf16_from_f32. */
static jr_status read_bf16(const jr_hfdir *d, int i, uint16_t *out) {
    const jr_st_tensor *t = d->st[i];
    size_t n = (size_t)t->numel, esz = jr_dtype_size(t->dtype);
    if (t->dtype == JR_DT_BF16) { memcpy(out, t->data, n * sizeof(uint16_t)); return JR_OK; }
    float blk[4096];
    for (size_t at = 0; at < n; at += 4096) {
        size_t k = n - at < 4096 ? n - at : 4096;
        jr_status st = jr_convert_to_f32(blk, t->dtype, (const char *)t->data + at * esz, k);
        if (st) return jr_fail_ctx(st, "%s: tensor '%s'", jr_hfdir_file_of(d, i), t->name);
        jr_bf16_from_f32(out + at, blk, (long)k);
    }
    return JR_OK;
}

static jr_status model_load(jr_model *m, const char *dir, int bf16) {
    jr_hfdir d;
    jr_status st = jr_hfdir_open(&d, dir);
    if (st) { memset(m, 0, sizeof *m); return st; }
    st = model_layout(m, &d.cfg, bf16);
    if (st) { jr_hfdir_close(&d); return jr_fail_ctx(st, "%s", dir); }
    if (d.n_tensors != m->n_tensors) {
        jr_hfdir_close(&d); jr_model_free(m);
        return jr_fail(JR_EINTERNAL, "%s: tensor list of %d entries, expected %d", dir, d.n_tensors, m->n_tensors);
    }
    for (int i = 0; i < m->n_tensors && !st; i++) {
        if (m->w16 && jr_model_tensor_is_bf16(&m->tensors[i])) st = read_bf16(&d, i, m->w16 + m->offset[i]);
        else st = jr_hfdir_read_f32(&d, i, m->params + m->offset[i]);
        jr_hfdir_release(&d, i);
    }
    jr_hfdir_close(&d);
    if (st) jr_model_free(m);
    return st;
}

jr_status jr_model_load(jr_model *m, const char *dir) { return model_load(m, dir, 0); }

jr_status jr_model_load_bf16(jr_model *m, const char *dir) { return model_load(m, dir, 1); }

jr_status jr_model_save(const jr_model *m, const char *dir, const jr_generation_config *gen) {
    if (m->w16) return jr_fail(JR_EUNSUPPORTED, "%s: a model loaded for bf16 inference (no fp32 weights) cannot be saved", dir);
    const float **ptrs = jr_calloc((size_t)m->n_tensors, sizeof(float *));
    if (!ptrs) return JR_ENOMEM;
    for (int i = 0; i < m->n_tensors; i++) ptrs[i] = m->params + m->offset[i];
    jr_model_config c = m->cfg;
    snprintf(c.torch_dtype, sizeof c.torch_dtype, "float32");
    jr_status st = jr_hfdir_write(dir, &c, gen, ptrs, JR_DT_F32, 0);
    free(ptrs);
    return st;
}

jr_status jr_model_alloc_grads(jr_model *m) {
    if (m->grads) return JR_OK;
    if (m->w16) return jr_fail(JR_EUNSUPPORTED, "model: loaded for bf16 inference (no fp32 weights): it cannot be trained");
    if (!(m->grads = aligned_alloc(64, sizeof(float) * m->n_params)))
        return jr_fail(JR_ENOMEM, "model: cannot allocate gradients (%.1f MiB)", m->n_params * 4.0 / 1048576);
    memset(m->grads, 0, sizeof(float) * m->n_params);
    jr_model_views(m, m->grads, &m->g);
    return JR_OK;
}

void jr_model_zero_grads(jr_model *m) {
    if (m->grads) memset(m->grads, 0, sizeof(float) * m->n_params);
}

int jr_model_find(const jr_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return i;
    return -1;
}

void jr_model_free(jr_model *m) {
    if (!m) return;
    jr_model_config_free(&m->cfg);
    free(m->tensors);
    free(m->offset);
    free(m->params);
    free(m->w16);
    free(m->grads);
    free(m->w.layers);
    free(m->g.layers);
    memset(m, 0, sizeof *m);
}

const jr_cfg_field jr_model_cfg[] = {
    {"model.path", JR_CFG_STRING, "null", "Hugging Face model directory to start from (config.json + safetensors)",
     NULL, NULL, 0, 0},
    {"model.init", JR_CFG_STRING, "null", "config.json of a fresh random model (instead of model.path)", NULL, NULL, 0,
     0},
    {"model.init_std", JR_CFG_FLOAT, "0.02", "std of the normal init of a fresh model (run.seed draws it)", NULL, NULL,
     0, 10},
    {"model.compute", JR_CFG_ENUM, "auto",
     "matmul precision of training forward/backward: bfloat16 (bf16 products, fp32 accumulation, weights and "
     "optimizer), float32, or auto = bfloat16 on a CPU with bf16 units (AMX or AVX512-BF16), else float32",
     "auto|float32|bfloat16", NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

jr_compute jr_model_compute_resolve(const char *name) {
    if (name && !strcmp(name, "float32")) return JR_COMPUTE_F32;
    if (name && !strcmp(name, "bfloat16")) return JR_COMPUTE_BF16;
    return jr_nn_bf16_native() ? JR_COMPUTE_BF16 : JR_COMPUTE_F32;
}

jr_status jr_model_compute_check(const char *name, const char *what) {
    if (!name || strcmp(name, "bfloat16") || jr_nn_bf16_native()) return JR_OK;
    char cpu[512];
    if (jr_cpu_level_get() < jr_cpu_level_max())
        return jr_fail(JR_EUNSUPPORTED, "%s: bfloat16 needs the bf16 units of kernel level avx512, and JR_CPU=%s forces "
                       "%s: unset JR_CPU, or use float32", what, getenv("JR_CPU"), jr_cpu_level_name(jr_cpu_level_get()));
    return jr_fail(JR_EUNSUPPORTED, "%s: bfloat16 needs bf16 units (AVX512-BF16 or AMX-BF16) and this CPU has none (%s): "
                   "use float32, or auto (float32 here)", what, jr_cpu_describe(cpu, sizeof cpu));
}

jr_status jr_model_opts_from_config(jr_model_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->path = jr_cfg_str(c, "model.path");
    o->init = jr_cfg_str(c, "model.init");
    o->init_std = (float)jr_cfg_float(c, "model.init_std");
    o->seed = (uint64_t)jr_cfg_int(c, "run.seed");
    o->compute = jr_model_compute_resolve(jr_cfg_str(c, "model.compute"));
    o->source = c->source;
    jr_status st = jr_model_compute_check(jr_cfg_str(c, "model.compute"), "model.compute");
    return st ? st : jr_cfg_check(c);
}

jr_status jr_model_from_config(jr_model *m, const jr_config *c) {
    memset(m, 0, sizeof *m);
    jr_model_opts o;
    jr_status st = jr_model_opts_from_config(&o, c);
    return st ? st : jr_model_open(m, &o);
}

jr_status jr_model_open(jr_model *m, const jr_model_opts *o) {
    memset(m, 0, sizeof *m);
    const char *path = o->path, *init = o->init;
    if ((path != NULL) == (init != NULL))
        return jr_fail(JR_EINVAL, "%s: set exactly one of model.path (an HF directory) and model.init (a config.json "
                                  "for a random model)", o->source ? o->source : "model");
    if (path) {
        jr_status st = jr_model_load(m, path);
        if (!st) m->compute = o->compute;
        return st;
    }
    jr_model_config cfg;
    jr_status st = jr_model_config_load(&cfg, init);
    if (st) return jr_fail_ctx(st, "model.init");
    st = jr_model_init_random(m, &cfg, o->seed, o->init_std);
    jr_model_config_free(&cfg);
    if (st) return jr_fail_ctx(st, "model.init %s", init);
    m->compute = o->compute;
    return JR_OK;
}
