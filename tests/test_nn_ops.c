/* test_nn_ops.c - finite-difference checks of every kernel's backward against its forward */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "judgerl/nn.h"
#include "judgerl/rng.h"

/* Tolerance of every check below: central differences with step 1e-3 in fp32 kernels, summed in
 * double; |analytic - numeric| <= 2e-3 + 2e-2 * |numeric|. A wrong sign, factor or index breaks it
 * by orders of magnitude. */
#define FD_H 1e-3f
#define FD_ATOL 2e-3
#define FD_RTOL 2e-2

static jr_rng rng;
static void randn(float *x, long n, float s) { for (long i = 0; i < n; i++) x[i] = (float)jr_rng_normal(&rng) * s; }
static float *fresh(long n, float s) { float *x = malloc(sizeof(float) * (size_t)n); randn(x, n, s); return x; }
static double wsum(const float *out, const float *w, long n) { double s = 0; for (long i = 0; i < n; i++) s += (double)out[i] * w[i]; return s; }

/* Checks analytic gradient g (n) of loss() wrt x (n) by central differences. */
typedef double (*loss_fn)(void *ctx);
static void fd_check(const char *what, float *x, const float *g, long n, loss_fn f, void *ctx) {
    int bad = 0;
    for (long i = 0; i < n; i++) {
        float keep = x[i];
        x[i] = keep + FD_H; double lp = f(ctx);
        x[i] = keep - FD_H; double lm = f(ctx);
        x[i] = keep;
        double num = (lp - lm) / (2.0 * FD_H);
        if (!(fabs(g[i] - num) <= FD_ATOL + FD_RTOL * fabs(num))) {
            if (bad++ < 3) printf("  %s[%ld]: analytic %.6g numeric %.6g\n", what, i, g[i], num);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of %ld gradients off", what, bad, n);
}

/* ---- matmul ---- */
typedef struct { float *out, *inp, *w, *b, *r; int N, C, OC; } mm_ctx;
static double mm_loss(void *p) { mm_ctx *c = p; jr_matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC); return wsum(c->out, c->r, (long)c->N * c->OC); }
TEST(matmul_fd) {
    mm_ctx c = {0}; c.N = 5; c.C = 7; c.OC = 3;
    c.out = fresh(c.N * c.OC, 0); c.inp = fresh(c.N * c.C, 1); c.w = fresh(c.OC * c.C, 1); c.b = fresh(c.OC, 1); c.r = fresh(c.N * c.OC, 1);
    float *di = calloc(c.N * c.C, 4), *dw = calloc(c.OC * c.C, 4), *db = calloc(c.OC, 4);
    mm_loss(&c);
    jr_matmul_backward(di, dw, db, c.r, c.inp, c.w, c.N, c.C, c.OC);
    fd_check("dinp", c.inp, di, c.N * c.C, mm_loss, &c);
    fd_check("dweight", c.w, dw, c.OC * c.C, mm_loss, &c);
    fd_check("dbias", c.b, db, c.OC, mm_loss, &c);
    /* accumulation: a second backward doubles the gradient */
    float keep = dw[4];
    jr_matmul_backward(di, dw, db, c.r, c.inp, c.w, c.N, c.C, c.OC);
    CHECK_NEAR(dw[4], 2 * keep, 1e-6, 1e-6);
    free(c.out); free(c.inp); free(c.w); free(c.b); free(c.r); free(di); free(dw); free(db);
}

/* ---- rmsnorm ---- */
typedef struct { float *out, *rstd, *inp, *w, *r; int N, C; } rn_ctx;
static double rn_loss(void *p) { rn_ctx *c = p; jr_rmsnorm_forward(c->out, c->rstd, c->inp, c->w, c->N, c->C, 1e-5f); return wsum(c->out, c->r, (long)c->N * c->C); }
TEST(rmsnorm_fd) {
    rn_ctx c = {0}; c.N = 4; c.C = 9;
    c.out = fresh(c.N * c.C, 0); c.rstd = fresh(c.N, 0); c.inp = fresh(c.N * c.C, 1); c.w = fresh(c.C, 1); c.r = fresh(c.N * c.C, 1);
    float *di = calloc(c.N * c.C, 4), *dw = calloc(c.C, 4);
    rn_loss(&c);
    /* forward against the definition */
    double ss = 0; for (int i = 0; i < c.C; i++) ss += (double)c.inp[i] * c.inp[i];
    CHECK_NEAR(c.out[2], c.inp[2] / sqrt(ss / c.C + 1e-5) * c.w[2], 1e-6, 1e-5);
    jr_rmsnorm_backward(di, dw, c.r, c.inp, c.w, c.rstd, c.N, c.C);
    fd_check("dinp", c.inp, di, c.N * c.C, rn_loss, &c);
    fd_check("dweight", c.w, dw, c.C, rn_loss, &c);
    free(c.out); free(c.rstd); free(c.inp); free(c.w); free(c.r); free(di); free(dw);
}

/* ---- rope ---- */
typedef struct { float *out, *inp, *r, *cs, *sn; int32_t *pos; int N, H, D; } rp_ctx;
static double rp_loss(void *p) { rp_ctx *c = p; jr_rope_forward(c->out, c->inp, c->pos, c->cs, c->sn, c->N, c->H, c->D); return wsum(c->out, c->r, (long)c->N * c->H * c->D); }
TEST(rope_fd) {
    rp_ctx c = {0}; c.N = 4; c.H = 2; c.D = 6;
    long n = (long)c.N * c.H * c.D;
    c.out = fresh(n, 0); c.inp = fresh(n, 1); c.r = fresh(n, 1);
    c.cs = fresh(8 * 3, 0); c.sn = fresh(8 * 3, 0);
    double inv[3] = {1.0, 0.1, 0.01};
    jr_rope_table(c.cs, c.sn, inv, 8, c.D);
    int32_t pos[4] = {0, 3, 7, 5}; c.pos = pos;
    float *di = calloc(n, 4);
    rp_loss(&c);
    /* position 0 is the identity; the rotation keeps each pair's norm */
    for (int i = 0; i < c.H * c.D; i++) CHECK_NEAR(c.out[i], c.inp[i], 1e-7, 0);
    const float *x = c.inp + 2 * c.H * c.D, *o = c.out + 2 * c.H * c.D;
    CHECK_NEAR(o[1] * o[1] + o[4] * o[4], x[1] * x[1] + x[4] * x[4], 1e-5, 1e-5);
    CHECK_NEAR(o[0], x[0] * cos(7.0) - x[3] * sin(7.0), 1e-5, 1e-5);
    jr_rope_backward(di, c.r, c.pos, c.cs, c.sn, c.N, c.H, c.D);
    fd_check("dinp", c.inp, di, n, rp_loss, &c);
    free(c.out); free(c.inp); free(c.r); free(c.cs); free(c.sn); free(di);
}

/* ---- attention ---- */
typedef struct { float *out, *att, *q, *k, *v, *r; int B, T, Hq, Hkv, D; } at_ctx;
static double at_loss(void *p) { at_ctx *c = p; jr_attention_forward(c->out, c->att, c->q, c->k, c->v, c->B, c->T, c->Hq, c->Hkv, c->D); return wsum(c->out, c->r, (long)c->B * c->T * c->Hq * c->D); }
TEST(attention_fd) {
    at_ctx c = {0}; c.B = 2; c.T = 5; c.Hq = 4; c.Hkv = 2; c.D = 3;
    long nq = (long)c.B * c.T * c.Hq * c.D, nk = (long)c.B * c.T * c.Hkv * c.D;
    c.out = fresh(nq, 0); c.att = fresh((long)c.B * c.Hq * c.T * c.T, 0); c.q = fresh(nq, 1); c.k = fresh(nk, 1); c.v = fresh(nk, 1); c.r = fresh(nq, 1);
    float *dq = calloc(nq, 4), *dk = calloc(nk, 4), *dv = calloc(nk, 4);
    at_loss(&c);
    /* first token attends only to itself: output = v[0] of its kv head (head 3 -> kv head 1) */
    for (int i = 0; i < c.D; i++) CHECK_NEAR(c.out[3 * c.D + i], c.v[1 * c.D + i], 1e-6, 1e-6);
    /* causal: changing a later key leaves earlier outputs unchanged */
    float keep0 = c.out[(1 * c.Hq + 2) * c.D];
    c.k[(4 * c.Hkv + 1) * c.D] += 1.0f; at_loss(&c); c.k[(4 * c.Hkv + 1) * c.D] -= 1.0f;
    CHECK(c.out[(1 * c.Hq + 2) * c.D] == keep0);
    at_loss(&c);
    jr_attention_backward(dq, dk, dv, c.r, c.att, c.q, c.k, c.v, c.B, c.T, c.Hq, c.Hkv, c.D);
    fd_check("dq", c.q, dq, nq, at_loss, &c);
    fd_check("dk", c.k, dk, nk, at_loss, &c);
    fd_check("dv", c.v, dv, nk, at_loss, &c);
    free(c.out); free(c.att); free(c.q); free(c.k); free(c.v); free(c.r); free(dq); free(dk); free(dv);
}

/* Long rows span several row blocks of the sgemm-based kernel (64 rows each): the forward against
 * a naive double-precision causal attention, the backward by differences on every 11th element. */
static void fd_check_some(const char *what, float *x, const float *g, long n, long stride, loss_fn f, void *ctx) {
    int bad = 0;
    for (long i = 0; i < n; i += stride) {
        float keep = x[i];
        x[i] = keep + FD_H; double lp = f(ctx);
        x[i] = keep - FD_H; double lm = f(ctx);
        x[i] = keep;
        double num = (lp - lm) / (2.0 * FD_H);
        if (!(fabs(g[i] - num) <= FD_ATOL + FD_RTOL * fabs(num)) && bad++ < 3)
            printf("  %s[%ld]: analytic %.6g numeric %.6g\n", what, i, g[i], num);
    }
    CHECK_MSG(bad == 0, "%s: %d gradients off", what, bad);
}

TEST(attention_long_fd) {
    at_ctx c = {0}; c.B = 1; c.T = 150; c.Hq = 2; c.Hkv = 1; c.D = 4;
    long nq = (long)c.B * c.T * c.Hq * c.D, nk = (long)c.B * c.T * c.Hkv * c.D;
    c.out = fresh(nq, 0); c.att = fresh((long)c.B * c.Hq * c.T * c.T, 0); c.q = fresh(nq, 1); c.k = fresh(nk, 1);
    c.v = fresh(nk, 1); c.r = fresh(nq, 1);
    at_loss(&c);
    double worst = 0;
    for (int h = 0; h < c.Hq; h++)
        for (int t = 0; t < c.T; t++) {
            double s[150], mx = -1e300, z = 0;
            for (int j = 0; j <= t; j++) {
                s[j] = 0;
                for (int i = 0; i < c.D; i++) s[j] += (double)c.q[(t * c.Hq + h) * c.D + i] * c.k[j * c.D + i];
                s[j] /= 2.0; /* sqrt(D) */
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j <= t; j++) z += exp(s[j] - mx);
            for (int i = 0; i < c.D; i++) {
                double o = 0;
                for (int j = 0; j <= t; j++) o += exp(s[j] - mx) / z * c.v[j * c.D + i];
                double e = fabs(o - c.out[(t * c.Hq + h) * c.D + i]);
                if (e > worst) worst = e;
            }
        }
    CHECK_MSG(worst < 1e-5, "forward differs from the naive reference by %.3g", worst);
    float *dq = calloc(nq, 4), *dk = calloc(nk, 4), *dv = calloc(nk, 4);
    jr_attention_backward(dq, dk, dv, c.r, c.att, c.q, c.k, c.v, c.B, c.T, c.Hq, c.Hkv, c.D);
    fd_check_some("dq", c.q, dq, nq, 11, at_loss, &c);
    fd_check_some("dk", c.k, dk, nk, 11, at_loss, &c);
    fd_check_some("dv", c.v, dv, nk, 11, at_loss, &c);
    free(c.out); free(c.att); free(c.q); free(c.k); free(c.v); free(c.r); free(dq); free(dk); free(dv);
}

/* ---- swiglu ---- */
typedef struct { float *out, *g, *u, *r; int N, I; } sw_ctx;
static double sw_loss(void *p) { sw_ctx *c = p; jr_swiglu_forward(c->out, c->g, c->u, c->N, c->I); return wsum(c->out, c->r, (long)c->N * c->I); }
TEST(swiglu_fd) {
    sw_ctx c = {0}; c.N = 3; c.I = 7;
    long n = (long)c.N * c.I;
    c.out = fresh(n, 0); c.g = fresh(n, 2); c.u = fresh(n, 1); c.r = fresh(n, 1);
    float *dg = calloc(n, 4), *du = calloc(n, 4);
    sw_loss(&c);
    CHECK_NEAR(c.out[5], c.g[5] / (1 + exp(-c.g[5])) * c.u[5], 1e-6, 1e-5);
    jr_swiglu_backward(dg, du, c.r, c.g, c.u, c.N, c.I);
    fd_check("dgate", c.g, dg, n, sw_loss, &c);
    fd_check("dup", c.u, du, n, sw_loss, &c);
    free(c.out); free(c.g); free(c.u); free(c.r); free(dg); free(du);
}

/* ---- embedding ---- */
typedef struct { float *out, *wte, *r; int32_t *ids; int N, C; } em_ctx;
static double em_loss(void *p) { em_ctx *c = p; jr_embedding_forward(c->out, c->ids, c->wte, c->N, c->C); return wsum(c->out, c->r, (long)c->N * c->C); }
TEST(embedding_fd) {
    em_ctx c = {0}; c.N = 5; c.C = 4;
    int32_t ids[5] = {2, 0, 2, 3, 2}; c.ids = ids; /* repeated ids accumulate */
    c.out = fresh(c.N * c.C, 0); c.wte = fresh(5 * c.C, 1); c.r = fresh(c.N * c.C, 1);
    float *dw = calloc(5 * c.C, 4);
    em_loss(&c);
    jr_embedding_backward(dw, c.r, c.ids, c.N, c.C);
    fd_check("dwte", c.wte, dw, 5 * c.C, em_loss, &c);
    CHECK(dw[1 * c.C] == 0.0f && dw[4 * c.C + 2] == 0.0f);
    free(c.out); free(c.wte); free(c.r); free(dw);
}

/* ---- log-probs with temperature ---- */
typedef struct { float *lp, *z, *r; int32_t *t; int N, V; float it; } lp_ctx;
static double lp_loss(void *p) { lp_ctx *c = p; jr_logprob_forward(c->lp, c->z, c->t, c->N, c->V, c->it); return wsum(c->lp, c->r, c->N); }
TEST(logprob_fd) {
    lp_ctx c = {0}; c.N = 4; c.V = 11; c.it = 1.0f / 0.7f;
    int32_t t[4] = {3, -1, 10, 0}; c.t = t;
    c.lp = fresh(c.N, 0); c.z = fresh(c.N * c.V, 2); c.r = fresh(c.N, 1);
    lp_loss(&c);
    double s = 0; for (int i = 0; i < c.V; i++) s += exp(c.z[i] * c.it);
    CHECK_NEAR(c.lp[0], c.z[3] * c.it - log(s), 1e-5, 1e-5);
    CHECK(c.lp[1] == 0.0f);
    float *dz = malloc(sizeof(float) * c.N * c.V);
    memcpy(dz, c.z, sizeof(float) * c.N * c.V);
    jr_logprob_backward_inplace(dz, c.r, c.t, c.N, c.V, c.it);
    fd_check("dlogits", c.z, dz, c.N * c.V, lp_loss, &c);
    free(c.lp); free(c.z); free(c.r); free(dz);
}

/* Fused attention (no T x T buffer) against the kept-probabilities op: the same outputs and
 * gradients to fp32 rounding (|a - b| <= 1e-5 max|b| + 1e-5 |b|), for T within one row block, T
 * splitting into uneven blocks (100 = 64 + 36) and T long enough for smaller blocks (1500 -> 43
 * rows), with grouped queries. */
static void fused_vs_plain(int B, int T, int Hq, int Hkv, int D) {
    long nq = (long)B * T * Hq * D, nk = (long)B * T * Hkv * D;
    float *q = fresh(nq, 1), *k = fresh(nk, 1), *v = fresh(nk, 1), *go = fresh(nq, 1);
    float *att = malloc(sizeof(float) * (size_t)B * Hq * T * T), *lse = malloc(sizeof(float) * (size_t)B * Hq * T);
    float *o1 = calloc((size_t)nq, 4), *o2 = calloc((size_t)nq, 4);
    float *g1[3] = {calloc((size_t)nq, 4), calloc((size_t)nk, 4), calloc((size_t)nk, 4)};
    float *g2[3] = {calloc((size_t)nq, 4), calloc((size_t)nk, 4), calloc((size_t)nk, 4)};
    jr_attention_forward(o1, att, q, k, v, B, T, Hq, Hkv, D);
    CHECK(jr_attention_fused_forward(o2, lse, q, k, v, B, T, Hq, Hkv, D) == 0);
    jr_attention_backward(g1[0], g1[1], g1[2], go, att, q, k, v, B, T, Hq, Hkv, D);
    CHECK(jr_attention_fused_backward(g2[0], g2[1], g2[2], go, lse, q, k, v, B, T, Hq, Hkv, D) == 0);
    const float *a[4] = {o1, g1[0], g1[1], g1[2]}, *b[4] = {o2, g2[0], g2[1], g2[2]};
    long n[4] = {nq, nq, nk, nk};
    const char *name[4] = {"out", "dq", "dk", "dv"};
    for (int i = 0; i < 4; i++) {
        double mx = 0, worst = 0;
        int bad = 0;
        for (long j = 0; j < n[i]; j++) if (fabs(a[i][j]) > mx) mx = fabs(a[i][j]);
        for (long j = 0; j < n[i]; j++) {
            double e = fabs(a[i][j] - b[i][j]);
            if (e > worst) worst = e;
            bad += !(e <= 1e-5 * mx + 1e-5 * fabs(a[i][j]));
        }
        CHECK_MSG(bad == 0 && mx > 0, "T=%d %s: %d off, worst %.3g of max %.3g", T, name[i], bad, worst, mx);
    }
    free(q); free(k); free(v); free(go); free(att); free(lse); free(o1); free(o2);
    for (int i = 0; i < 3; i++) { free(g1[i]); free(g2[i]); }
}
TEST(attention_fused_equals_plain) {
    fused_vs_plain(2, 7, 4, 2, 8);
    fused_vs_plain(2, 100, 6, 2, 16);
    fused_vs_plain(1, 1500, 2, 1, 8);
}

/* jr_swiglu_forward_fast against silu(g) * u in double: within 4 ulp (relative 5e-7) from g = -110 to 95,
 * plus 1e-36 absolute: below g = -88.7 e^-g overflows fp32 (as expf's does in jr_swiglu_forward) and
 * silu gives -0 for |exact| < 1.2e-37; and the same bits for an element wherever it falls (offsets 0..16
 * in arrays of 1..40: the 16-lane steps and the masked tail). */
TEST(swiglu_fast_near_exact_and_position_free) {
    enum { M = 4096 };
    float *g = malloc(sizeof(float) * M), *u = malloc(sizeof(float) * M), *o = malloc(sizeof(float) * M);
    for (int i = 0; i < M; i++) { g[i] = -110.0f + 205.0f * (float)i / (M - 1); u[i] = i % 3 ? 1.0f : -0.75f; }
    g[7] = 0.0f; g[8] = 1e-30f; g[9] = -1e-30f; g[10] = 0.5f; g[11] = -0.5f;
    jr_swiglu_forward_fast(o, g, u, 2, M / 2);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < M; i++) {
        double ref = (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i], e = fabs(o[i] - ref);
        if (fabs(ref) > 1e-30 && e / fabs(ref) > worst) worst = e / fabs(ref);
        if (!(e <= 5e-7 * fabs(ref) + 1e-36) && bad++ < 5) printf("  g %.9g: %.9g, exact %.9g\n", g[i], o[i], ref);
    }
    printf("  worst relative error %.3g where the exact value is over 1e-30 (tolerance 5e-7)\n", worst);
    CHECK_MSG(bad == 0, "%d of %d outputs off", bad, M);
    float one[48], g48[48], u48[48];
    for (int n = 1; n <= 40; n++)
        for (int at = 0; at < n && at <= 16; at++) {
            for (int i = 0; i < n; i++) { g48[i] = g[(i * 37 + 11) % M]; u48[i] = u[i]; }
            g48[at] = g[1234]; u48[at] = 0.5f;
            jr_swiglu_forward_fast(one, g48, u48, 1, n);
            float ref;
            jr_swiglu_forward_fast(&ref, &g48[at], &u48[at], 1, 1);
            CHECK_MSG(!memcmp(&one[at], &ref, sizeof ref), "element %d of %d differs from alone", at, n);
        }
    free(g); free(u); free(o);
}

/* jr_bf16_from_f32 against the definition (nearest, ties to even; NaN stays a quiet NaN of the same
 * sign and top bits; infinities, zeros and subnormals as any other number), at every tail length. */
static uint16_t bf16_ref(uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    uint32_t hi = u >> 16, lo = u & 0xffffu;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1))) hi++;
    return (uint16_t)hi;
}
TEST(bf16_rounding_exact_at_every_length) {
    enum { M = 4099 };
    uint32_t *bits = malloc(sizeof(uint32_t) * M);
    uint16_t *out = malloc(sizeof(uint16_t) * M);
    const uint32_t special[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu,
                                0x00000001u, 0x00018000u, 0x00008000u, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x3f7fffffu};
    for (int i = 0; i < M; i++) bits[i] = i < 14 ? special[i] : (uint32_t)jr_rng_u64(&rng);
    for (int i = 14; i < M; i += 5) bits[i] = (bits[i] & 0xffff0000u) | 0x8000u; /* ties */
    int bad = 0;
    for (int n = 1; n <= M; n = n < 40 ? n + 1 : n * 3 + 1) {
        memset(out, 0xAB, sizeof(uint16_t) * M);
        jr_bf16_from_f32(out, (const float *)(const void *)bits, n);
        for (int i = 0; i < n; i++) bad += out[i] != bf16_ref(bits[i]);
        bad += n < M && out[n] != 0xABAB; /* nothing past n */
    }
    CHECK_MSG(bad == 0, "%d values rounded wrong or written past the end", bad);
    free(bits); free(out);
}

int main(void) {
    jr_rng_seed(&rng, 1234);
    RUN(matmul_fd);
    RUN(rmsnorm_fd);
    RUN(rope_fd);
    RUN(attention_fd);
    RUN(attention_long_fd);
    RUN(attention_fused_equals_plain);
    RUN(swiglu_fd);
    RUN(swiglu_fast_near_exact_and_position_free);
    RUN(bf16_rounding_exact_at_every_length);
    RUN(embedding_fd);
    RUN(logprob_fd);
    return jt_done();
}
