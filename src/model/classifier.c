/* classifier.c - seed 1's classifier: whitespace vocabulary, forward/backward on the nn kernels, Adam/AdamW, save/load */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "judgerl/attn_full.h"
#include "judgerl/classifier.h"
#include "judgerl/fsutil.h"
#include "judgerl/nn.h"
#include "judgerl/safetensors.h"

const char *const jr_clf_names[JR_CLF_NT] = {
    "embedding.weight", "attention.in_proj_weight", "attention.in_proj_bias", "attention.out_proj.weight",
    "attention.out_proj.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
};

/* ---- vocabulary ---- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static jr_status vocab_index(jr_vocab *v) {
    v->cap = 16;
    while (v->cap < 2 * v->n + 2) v->cap *= 2;
    v->slots = jr_malloc(sizeof(int) * (size_t)v->cap);
    if (!v->slots) return jr_fail(JR_ENOMEM, "vocabulary: out of memory");
    for (int i = 0; i < v->cap; i++) v->slots[i] = -1;
    for (int i = 0; i < v->n; i++) {
        size_t s = hash_str(v->words[i]) & (size_t)(v->cap - 1);
        while (v->slots[s] >= 0) s = (s + 1) & (size_t)(v->cap - 1);
        v->slots[s] = i;
    }
    return JR_OK;
}

int jr_vocab_id(const jr_vocab *v, const char *word) {
    size_t s = hash_str(word) & (size_t)(v->cap - 1);
    while (v->slots[s] >= 0) {
        if (!strcmp(v->words[v->slots[s]], word)) return v->slots[s];
        s = (s + 1) & (size_t)(v->cap - 1);
    }
    return 1;
}

/* Calls fn(word) for each lowercased whitespace word of text (Python's str.lower().split() on ASCII). */
static int next_word(const char **p, char *buf, size_t cap) {
    const char *s = *p;
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) { *p = s; return 0; }
    size_t n = 0;
    while (*s && !isspace((unsigned char)*s)) {
        if (n + 1 < cap) buf[n++] = (char)tolower((unsigned char)*s);
        s++;
    }
    buf[n] = 0;
    *p = s;
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void jr_vocab_free(jr_vocab *v) {
    if (v->words)
        for (int i = 0; i < v->n; i++) free(v->words[i]);
    free(v->words);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

jr_status jr_vocab_build(jr_vocab *v, const char *const *texts, int n) {
    memset(v, 0, sizeof *v);
    size_t cap = 64, cnt = 0;
    char **all = jr_malloc(sizeof(char *) * cap);
    char buf[256];
    if (!all) return jr_fail(JR_ENOMEM, "vocabulary: out of memory");
    for (int i = 0; i < n; i++) {
        const char *p = texts[i];
        while (next_word(&p, buf, sizeof buf)) {
            if (cnt == cap) {
                char **nw = jr_realloc(all, sizeof(char *) * (cap *= 2));
                if (!nw) goto oom;
                all = nw;
            }
            if (!(all[cnt] = jr_strdup(buf))) goto oom;
            cnt++;
        }
    }
    qsort(all, cnt, sizeof *all, cmp_str);
    v->words = jr_malloc(sizeof(char *) * (cnt + 2));
    if (!v->words) goto oom;
    v->words[0] = jr_strdup("<pad>");
    v->words[1] = jr_strdup("<unk>");
    v->n = 2;
    if (!v->words[0] || !v->words[1]) goto oom;
    for (size_t i = 0; i < cnt; i++) {
        if (v->n > 2 && !strcmp(v->words[v->n - 1], all[i])) { free(all[i]); continue; }
        v->words[v->n++] = all[i];
    }
    free(all);
    return vocab_index(v);
oom:
    for (size_t i = 0; i < cnt; i++) free(all[i]);
    free(all);
    jr_vocab_free(v);
    return jr_fail(JR_ENOMEM, "vocabulary: out of memory");
}

int jr_vocab_encode(const jr_vocab *v, const char *text, int32_t *ids, int max_len) {
    char buf[256];
    const char *p = text;
    int n = 0;
    while (n < max_len && next_word(&p, buf, sizeof buf)) ids[n++] = jr_vocab_id(v, buf);
    for (int i = n; i < max_len; i++) ids[i] = 0;
    return n;
}

jr_status jr_vocab_save(const jr_vocab *v, const char *path) {
    json_t *a = json_array();
    for (int i = 0; i < v->n; i++) json_array_append_new(a, json_string(v->words[i]));
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    if (!s) return jr_fail(JR_ENOMEM, "%s: out of memory", path);
    jr_status st = jr_write_atomic(path, s, strlen(s));
    free(s);
    return st;
}

jr_status jr_vocab_load(jr_vocab *v, const char *path) {
    memset(v, 0, sizeof *v);
    json_error_t e;
    json_t *a = json_load_file(path, 0, &e);
    if (!a) return jr_fail(JR_EFORMAT, "%s: line %d: %s (a vocabulary is a JSON array of words)", path, e.line, e.text);
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (n < 2) {
        json_decref(a);
        return jr_fail(JR_EFORMAT, "%s: a vocabulary is a JSON array of at least 2 words (<pad>, <unk>)", path);
    }
    v->words = jr_calloc(n, sizeof(char *));
    if (!v->words) { json_decref(a); return jr_fail(JR_ENOMEM, "%s: out of memory", path); }
    for (size_t i = 0; i < n; i++) {
        const char *w = json_string_value(json_array_get(a, i));
        if (!w) {
            json_decref(a);
            v->n = (int)i;
            jr_vocab_free(v);
            return jr_fail(JR_EFORMAT, "%s: entry %zu is not a string", path, i);
        }
        v->words[i] = jr_strdup(w);
        v->n = (int)i + 1;
    }
    json_decref(a);
    return vocab_index(v);
}

/* ---- model ---- */

static void drop_acts(jr_clf *c) {
    free(c->x);
    free(c->ids);
    c->x = NULL;
    c->ids = NULL;
    c->cap = 0;
}

void jr_clf_free(jr_clf *c) {
    free(c->params);
    free(c->grads);
    drop_acts(c);
    memset(c, 0, sizeof *c);
}

static float unif(jr_rng *r, float a) { return (float)((2.0 * jr_rng_double(r) - 1.0) * a); }

jr_status jr_clf_init(jr_clf *c, jr_clf_dims d, jr_rng *rng) {
    memset(c, 0, sizeof *c);
    if (d.vocab < 2 || d.embed < 1 || d.heads < 1 || d.embed % d.heads || d.hidden < 1 || d.labels < 2 ||
        d.max_len < 1)
        return jr_fail(JR_EINVAL, "classifier: bad shape (vocab %d, embed %d, heads %d, hidden %d, labels %d, "
                       "max_len %d): embed must be a multiple of heads, labels >= 2",
                       d.vocab, d.embed, d.heads, d.hidden, d.labels, d.max_len);
    c->d = d;
    size_t E = (size_t)d.embed, F = (size_t)d.hidden, L = (size_t)d.labels;
    size_t len[JR_CLF_NT] = {(size_t)d.vocab * E, 3 * E * E, 3 * E, E * E, E, F * E, F, L * F, L};
    size_t off = 0;
    for (int i = 0; i < JR_CLF_NT; i++) { c->off[i] = off; c->len[i] = len[i]; off += len[i]; }
    c->n_params = off;
    c->params = jr_calloc(off, sizeof(float));
    c->grads = jr_calloc(off, sizeof(float));
    if (!c->params || !c->grads) { jr_clf_free(c); return jr_fail(JR_ENOMEM, "classifier: out of memory"); }
    for (int i = 0; i < JR_CLF_NT; i++) { c->p[i] = c->params + c->off[i]; c->g[i] = c->grads + c->off[i]; }
    if (rng) {
        for (size_t i = 0; i < len[JR_CLF_EMB]; i++) c->p[JR_CLF_EMB][i] = (float)jr_rng_normal(rng);
        float xa = sqrtf(6.0f / (float)(E + 3 * E)); /* xavier_uniform_ on (3E, E) */
        for (size_t i = 0; i < len[JR_CLF_INW]; i++) c->p[JR_CLF_INW][i] = unif(rng, xa);
        float a = 1.0f / sqrtf((float)E);
        for (size_t i = 0; i < len[JR_CLF_OUTW]; i++) c->p[JR_CLF_OUTW][i] = unif(rng, a);
        for (size_t i = 0; i < len[JR_CLF_FC1W]; i++) c->p[JR_CLF_FC1W][i] = unif(rng, a);
        for (size_t i = 0; i < len[JR_CLF_FC1B]; i++) c->p[JR_CLF_FC1B][i] = unif(rng, a);
        a = 1.0f / sqrtf((float)F);
        for (size_t i = 0; i < len[JR_CLF_FC2W]; i++) c->p[JR_CLF_FC2W][i] = unif(rng, a);
        for (size_t i = 0; i < len[JR_CLF_FC2B]; i++) c->p[JR_CLF_FC2B][i] = unif(rng, a);
    }
    return JR_OK;
}

/* Activation layout for B rows: x, qkv, q, k, v, att, ao, ax, pooled, h1, logits, then the gradient
 * scratch (dx, dqkv, dq, dk, dv, dao, dax, dpooled, dh1). */
static size_t acts_floats(const jr_clf_dims *d, int B) {
    size_t N = (size_t)B * (size_t)d->max_len, E = (size_t)d->embed, T = (size_t)d->max_len;
    size_t fwd = N * E + N * 3 * E + 3 * N * E + (size_t)B * (size_t)d->heads * T * T + 2 * N * E + (size_t)B * E +
                 (size_t)B * (size_t)d->hidden + (size_t)B * (size_t)d->labels;
    size_t bwd = N * E + N * 3 * E + 3 * N * E + 2 * N * E + (size_t)B * E + (size_t)B * (size_t)d->hidden;
    return fwd + bwd;
}

static int ensure_acts(jr_clf *c, int B) {
    if (B <= c->cap) return 0;
    drop_acts(c);
    c->x = jr_malloc(sizeof(float) * acts_floats(&c->d, B));
    c->ids = jr_malloc(sizeof(int32_t) * (size_t)B * (size_t)c->d.max_len);
    if (!c->x || !c->ids) { drop_acts(c); return -1; }
    c->cap = B;
    return 0;
}

/* Pointers into the activation block for the current capacity. */
typedef struct {
    float *dx, *dqkv, *dq, *dk, *dv, *dao, *dax, *dpooled, *dh1;
} grads_scratch;

static void layout(jr_clf *c, grads_scratch *gs) {
    size_t N = (size_t)c->cap * (size_t)c->d.max_len, E = (size_t)c->d.embed, T = (size_t)c->d.max_len;
    float *p = c->x;
    p += N * E;
    c->qkv = p; p += N * 3 * E;
    c->q = p; p += N * E;
    c->k = p; p += N * E;
    c->v = p; p += N * E;
    c->att = p; p += (size_t)c->cap * (size_t)c->d.heads * T * T;
    c->ao = p; p += N * E;
    c->ax = p; p += N * E;
    c->pooled = p; p += (size_t)c->cap * E;
    c->h1 = p; p += (size_t)c->cap * (size_t)c->d.hidden;
    c->logits = p; p += (size_t)c->cap * (size_t)c->d.labels;
    if (gs) {
        gs->dx = p; p += N * E;
        gs->dqkv = p; p += N * 3 * E;
        gs->dq = p; p += N * E;
        gs->dk = p; p += N * E;
        gs->dv = p; p += N * E;
        gs->dao = p; p += N * E;
        gs->dax = p; p += N * E;
        gs->dpooled = p; p += (size_t)c->cap * E;
        gs->dh1 = p;
    }
}

const float *jr_clf_forward(jr_clf *c, const int32_t *ids, int B) {
    if (ensure_acts(c, B)) return NULL;
    layout(c, NULL);
    int T = c->d.max_len, E = c->d.embed, H = c->d.heads, D = E / H, N = B * T;
    c->B = B;
    memcpy(c->ids, ids, sizeof(int32_t) * (size_t)N);
    jr_embedding_forward(c->x, ids, c->p[JR_CLF_EMB], N, E);
    jr_matmul_forward(c->qkv, c->x, c->p[JR_CLF_INW], c->p[JR_CLF_INB], N, E, 3 * E);
    for (int n = 0; n < N; n++) {
        memcpy(c->q + (size_t)n * E, c->qkv + (size_t)n * 3 * E, sizeof(float) * (size_t)E);
        memcpy(c->k + (size_t)n * E, c->qkv + (size_t)n * 3 * E + E, sizeof(float) * (size_t)E);
        memcpy(c->v + (size_t)n * E, c->qkv + (size_t)n * 3 * E + 2 * E, sizeof(float) * (size_t)E);
    }
    jr_attn_full_forward(c->ao, c->att, c->q, c->k, c->v, B, T, H, D);
    jr_matmul_forward(c->ax, c->ao, c->p[JR_CLF_OUTW], c->p[JR_CLF_OUTB], N, E, E);
    for (int b = 0; b < B; b++) {
        float *pb = c->pooled + (size_t)b * E;
        for (int e = 0; e < E; e++) {
            float s = 0;
            for (int t = 0; t < T; t++) s += c->ax[((size_t)b * T + t) * E + e];
            pb[e] = s / (float)T;
        }
    }
    jr_matmul_forward(c->h1, c->pooled, c->p[JR_CLF_FC1W], c->p[JR_CLF_FC1B], B, E, c->d.hidden);
    for (size_t i = 0; i < (size_t)B * (size_t)c->d.hidden; i++)
        if (c->h1[i] < 0) c->h1[i] = 0;
    jr_matmul_forward(c->logits, c->h1, c->p[JR_CLF_FC2W], c->p[JR_CLF_FC2B], B, c->d.hidden, c->d.labels);
    return c->logits;
}

double jr_clf_xent(const jr_clf *c, const int32_t *labels, float *dlogits) {
    int L = c->d.labels, B = c->B;
    double loss = 0;
    for (int b = 0; b < B; b++) {
        const float *z = c->logits + (size_t)b * L;
        double mx = z[0], s = 0;
        for (int j = 1; j < L; j++) if (z[j] > mx) mx = z[j];
        for (int j = 0; j < L; j++) s += exp(z[j] - mx);
        double lse = mx + log(s);
        loss += lse - z[labels[b]];
        if (dlogits)
            for (int j = 0; j < L; j++)
                dlogits[(size_t)b * L + j] = (float)((exp(z[j] - lse) - (j == labels[b])) / B);
    }
    return loss / B;
}

void jr_clf_zero_grad(jr_clf *c) { memset(c->grads, 0, sizeof(float) * c->n_params); }

void jr_clf_backward(jr_clf *c, const float *dlogits) {
    grads_scratch g;
    layout(c, &g);
    int B = c->B, T = c->d.max_len, E = c->d.embed, H = c->d.heads, D = E / H, N = B * T, F = c->d.hidden;
    size_t NE = (size_t)N * E;
    memset(g.dx, 0, sizeof(float) * (NE * 9 + (size_t)B * E + (size_t)B * F)); /* the whole scratch */
    jr_matmul_backward(g.dh1, c->g[JR_CLF_FC2W], c->g[JR_CLF_FC2B], dlogits, c->h1, c->p[JR_CLF_FC2W], B, F,
                       c->d.labels);
    for (size_t i = 0; i < (size_t)B * F; i++)
        if (c->h1[i] <= 0) g.dh1[i] = 0;
    jr_matmul_backward(g.dpooled, c->g[JR_CLF_FC1W], c->g[JR_CLF_FC1B], g.dh1, c->pooled, c->p[JR_CLF_FC1W], B, E, F);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int e = 0; e < E; e++) g.dax[((size_t)b * T + t) * E + e] = g.dpooled[(size_t)b * E + e] / (float)T;
    jr_matmul_backward(g.dao, c->g[JR_CLF_OUTW], c->g[JR_CLF_OUTB], g.dax, c->ao, c->p[JR_CLF_OUTW], N, E, E);
    jr_attn_full_backward(g.dq, g.dk, g.dv, g.dao, c->att, c->q, c->k, c->v, B, T, H, D);
    for (int n = 0; n < N; n++) {
        memcpy(g.dqkv + (size_t)n * 3 * E, g.dq + (size_t)n * E, sizeof(float) * (size_t)E);
        memcpy(g.dqkv + (size_t)n * 3 * E + E, g.dk + (size_t)n * E, sizeof(float) * (size_t)E);
        memcpy(g.dqkv + (size_t)n * 3 * E + 2 * E, g.dv + (size_t)n * E, sizeof(float) * (size_t)E);
    }
    jr_matmul_backward(g.dx, c->g[JR_CLF_INW], c->g[JR_CLF_INB], g.dqkv, c->x, c->p[JR_CLF_INW], N, E, 3 * E);
    jr_embedding_backward(c->g[JR_CLF_EMB], g.dx, c->ids, N, E);
}

/* ---- optimizer ---- */

jr_status jr_clf_adam_init(jr_clf_adam *o, const jr_clf *c, int adamw, double weight_decay) {
    memset(o, 0, sizeof *o);
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->adamw = adamw;
    o->weight_decay = weight_decay;
    o->m = jr_calloc(c->n_params, sizeof(float));
    o->v = jr_calloc(c->n_params, sizeof(float));
    if (!o->m || !o->v) { jr_clf_adam_free(o); return jr_fail(JR_ENOMEM, "optimizer: out of memory"); }
    return JR_OK;
}

void jr_clf_adam_free(jr_clf_adam *o) {
    free(o->m);
    free(o->v);
    memset(o, 0, sizeof *o);
}

void jr_clf_adam_step(jr_clf_adam *o, jr_clf *c, double lr) {
    o->t++;
    double bc1 = 1 - pow(o->beta1, (double)o->t), bc2 = 1 - pow(o->beta2, (double)o->t);
    double step = lr / bc1, sbc2 = sqrt(bc2);
    for (size_t i = 0; i < c->n_params; i++) {
        double p = c->params[i], g = c->grads[i];
        if (o->adamw) p *= 1 - lr * o->weight_decay;
        else g += o->weight_decay * p;
        o->m[i] = (float)(o->beta1 * o->m[i] + (1 - o->beta1) * g);
        o->v[i] = (float)(o->beta2 * o->v[i] + (1 - o->beta2) * g * g);
        p -= step * o->m[i] / (sqrt((double)o->v[i]) / sbc2 + o->eps);
        c->params[i] = (float)p;
    }
}

/* ---- save / load ---- */

jr_status jr_clf_save(const jr_clf *c, const jr_vocab *v, const char *dir) {
    jr_status st = jr_mkdirs(dir);
    if (st) return st;
    jr_st_entry ents[JR_CLF_NT];
    memset(ents, 0, sizeof ents);
    int64_t E = c->d.embed, F = c->d.hidden, L = c->d.labels;
    int64_t shapes[JR_CLF_NT][2] = {{c->d.vocab, E}, {3 * E, E}, {3 * E, 0}, {E, E}, {E, 0}, {F, E}, {F, 0}, {L, F}, {L, 0}};
    for (int i = 0; i < JR_CLF_NT; i++) {
        ents[i].name = jr_clf_names[i];
        ents[i].ndim = shapes[i][1] ? 2 : 1;
        ents[i].shape[0] = shapes[i][0];
        ents[i].shape[1] = shapes[i][1];
        ents[i].data = c->p[i];
    }
    char *p = jr_path_join(dir, "model.safetensors");
    if (!p) return jr_fail(JR_ENOMEM, "out of memory");
    st = jr_st_write(p, ents, JR_CLF_NT, JR_DT_F32);
    free(p);
    if (st) return st;
    if (v) {
        p = jr_path_join(dir, "vocab.json");
        if (!p) return jr_fail(JR_ENOMEM, "out of memory");
        st = jr_vocab_save(v, p);
        free(p);
        if (st) return st;
    }
    char buf[256];
    int n = snprintf(buf, sizeof buf,
                     "{\"model_type\": \"judgerl_classifier\", \"vocab_size\": %d, \"embed_dim\": %d, \"num_heads\": %d, "
                     "\"hidden_dim\": %d, \"num_labels\": %d, \"max_length\": %d}\n",
                     c->d.vocab, c->d.embed, c->d.heads, c->d.hidden, c->d.labels, c->d.max_len);
    p = jr_path_join(dir, "classifier.json");
    if (!p) return jr_fail(JR_ENOMEM, "out of memory");
    st = jr_write_atomic(p, buf, (size_t)n);
    free(p);
    return st;
}

jr_status jr_clf_load(jr_clf *c, jr_vocab *v, const char *dir) {
    memset(c, 0, sizeof *c);
    memset(v, 0, sizeof *v);
    char *p = jr_path_join(dir, "classifier.json");
    if (!p) return jr_fail(JR_ENOMEM, "out of memory");
    json_error_t e;
    json_t *j = json_load_file(p, 0, &e);
    if (!j) {
        jr_status st = jr_fail(JR_ENOTFOUND, "%s: %s (not a classifier directory written by judgerl)", p, e.text);
        free(p);
        return st;
    }
    jr_clf_dims d = {
        (int)json_integer_value(json_object_get(j, "vocab_size")), (int)json_integer_value(json_object_get(j, "embed_dim")),
        (int)json_integer_value(json_object_get(j, "num_heads")), (int)json_integer_value(json_object_get(j, "hidden_dim")),
        (int)json_integer_value(json_object_get(j, "num_labels")), (int)json_integer_value(json_object_get(j, "max_length")),
    };
    json_decref(j);
    jr_status st = jr_clf_init(c, d, NULL);
    if (st) { jr_fail_ctx(st, "%s", p); free(p); return st; }
    free(p);
    p = jr_path_join(dir, "model.safetensors");
    jr_safetensors sf;
    st = p ? jr_st_open(&sf, p) : jr_fail(JR_ENOMEM, "out of memory");
    if (st) { free(p); jr_clf_free(c); return st; }
    for (int i = 0; i < JR_CLF_NT && !st; i++) {
        const jr_st_tensor *t = jr_st_find(&sf, jr_clf_names[i]);
        if (!t) st = jr_fail(JR_ENOTFOUND, "%s: tensor %s is missing", p, jr_clf_names[i]);
        else if ((size_t)t->numel != c->len[i])
            st = jr_fail(JR_EFORMAT, "%s: tensor %s has %lld values, classifier.json implies %zu", p, jr_clf_names[i],
                         (long long)t->numel, c->len[i]);
        else st = jr_st_read_f32(&sf, t, c->p[i]);
    }
    jr_st_close(&sf);
    free(p);
    if (st) { jr_clf_free(c); return st; }
    p = jr_path_join(dir, "vocab.json");
    st = p ? jr_vocab_load(v, p) : jr_fail(JR_ENOMEM, "out of memory");
    free(p);
    if (!st && v->n != d.vocab) st = jr_fail(JR_EFORMAT, "%s: vocab.json has %d words, classifier.json says %d", dir, v->n, d.vocab);
    if (st) { jr_clf_free(c); jr_vocab_free(v); }
    return st;
}
