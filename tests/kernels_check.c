/* kernels_check.c - the hot kernels of the level chosen at start-up (src/nn/kernels.h; JR_CPU forces a
 * lower one) against plain scalar references in double, and their batch invariance: a row's result is the
 * same bits whatever rows are computed beside it (N = 1..9) or wherever an element sits in its array.
 *
 * Linked with src/nn/k_*.c (each level), src/nn/kernels.c, src/core/cpu.c and src/core/status.c only, so it
 * builds for another architecture with a cross compiler and runs under qemu (tests/test_kernels.sh). Prints
 * one line per case, "ok - NAME_LEVEL" or "FAIL - NAME_LEVEL: why"; exits 1 when a case failed.
 *
 * Tolerances, with u = 2^-24 (fp32's unit roundoff):
 *   row products (fp32 and bf16 operands)  |got - ref| <= (C + 2) u (sum |x_i w_i| + |bias|): the bound of
 *     any order of C fp32 products and sums (a bf16 product is exact in fp32)
 *     (measured: at most 0.0022 of the bound, on x86-64 at every level and on aarch64)
 *   attention   |got - ref| <= 2e-6 max|v| (measured 1.4e-7)
 *   fp32 row products also bitwise the order kernels.h documents, summed here in scalar code
 *   expf_shifted  bitwise glibc's expf((z - m) * s), as kernels.h promises
 *   swiglu      |got - ref| <= 8 u |ref| + 1e-30 (the fast exp within 4 ulp, then a divide and a multiply;
 *     measured 2.9 u)
 *   bf16_round  bitwise: nearest, ties to even, computed here from the two neighbours' distances in double;
 *     NaN stays a quiet NaN of the same sign */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/cpu.h"
#include "nn/kernels.h"

static const jr_kern *K;
static int failures;
#define U 5.9604644775390625e-8 /* 2^-24 */

static void report(const char *name, const char *why) {
    if (why) {
        printf("FAIL - %s_%s: %s\n", name, K->level, why);
        failures++;
    } else
        printf("ok - %s_%s\n", name, K->level);
}

/* splitmix64: the same numbers on every machine */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float uni(float lo, float hi) { return lo + (hi - lo) * (float)((next64() >> 40) * (1.0 / 16777216.0)); }
static void fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = uni(lo, hi);
}
static float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "kernels_check: out of memory\n");
        exit(2);
    }
    return p;
}

/* The bf16 nearest to x (ties to even), from the distances to its two neighbours in double. */
static uint16_t bf16_ref(float x) {
    uint32_t u = bits(x), mag = u & 0x7fffffffu, sign = u & 0x80000000u;
    if (mag > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN: quiet, sign and payload's top kept */
    uint32_t lo = mag >> 16, hi = lo + 1;                       /* the truncation and the next one up */
    if ((mag & 0xffff) == 0) return (uint16_t)((sign | (lo << 16)) >> 16);
    double a = fabs((double)x), vlo = (double)from_bits(lo << 16);
    double vhi = hi == 0x7f80 ? ldexp(1.0, 128) : (double)from_bits(hi << 16); /* past FLT_MAX: 2^128 */
    double dlo = a - vlo, dhi = vhi - a;
    uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo;
    return (uint16_t)((sign >> 16) | r);
}

/* out (N,OC) = inp (N,C) . w (OC,C)^T + bias in double, and each output's error bound */
static void rows_ref(double *ref, double *bound, const float *inp, const float *w, const float *bias, int N, int C,
                     int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = bias ? bias[o] : 0.0, a = bias ? fabs(bias[o]) : 0.0;
            for (int k = 0; k < C; k++) {
                double p = (double)inp[(size_t)n * C + k] * w[(size_t)o * C + k];
                s += p;
                a += fabs(p);
            }
            ref[(size_t)n * OC + o] = s;
            bound[(size_t)n * OC + o] = (C + 2) * U * a;
        }
}

/* the first output beyond its bound, as a message (NULL when none) */
static const char *over(char *buf, size_t bn, const float *got, const double *ref, const double *bound, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - ref[i]) <= bound[i])) {
            snprintf(buf, bn, "output %zu: %.9g, reference %.9g, bound %.3g", i, got[i], ref[i], bound[i]);
            return buf;
        }
    return NULL;
}

/* dot(a, b) in the order kernels.h documents for the fp32 row products: two 8-lane accumulators over blocks
 * of 16 (a fused multiply-add per lane when fused, else a multiply then an add), the lanes folded pairwise,
 * then the tail in order (a multiply then an add: this file is ISO C, no contraction) */
static float dot_order(const float *a, const float *b, int n, int fused) {
    float s0[8] = {0}, s1[8] = {0}, s[8];
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 8; l++) {
            s0[l] = fused ? fmaf(a[i + l], b[i + l], s0[l]) : s0[l] + a[i + l] * b[i + l];
            s1[l] = fused ? fmaf(a[i + 8 + l], b[i + 8 + l], s1[l]) : s1[l] + a[i + 8 + l] * b[i + 8 + l];
        }
    for (int l = 0; l < 8; l++) s[l] = s0[l] + s1[l];
    float r = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

/* fp32 row products: three products of one input (q, k, v-like; np = 3) against the reference; each row
 * of a batch of N = 1..9 equal to that row alone, bit for bit; the product alone (np = 1) equal to its part
 * of the np = 3 call; every output the bits of the documented order (dot_order; fused multiply-adds at every
 * level but x86-64's baseline). C = 520 crosses a k chunk and ends in a tail; at N >= 8 the work takes a
 * thread team. */
static void check_rows_f32(void) {
    enum { C = 520, NMAX = 9, NP = 3 };
    const int OCs[NP] = {70, 16, 33};
    char buf[300];
    const char *why = NULL, *inv = NULL, *npw = NULL, *ord = NULL;
#if defined(__x86_64__)
    int fused = strcmp(K->level, "baseline") != 0;
#else
    int fused = 1;
#endif
    float *inp = xmalloc(sizeof(float) * NMAX * C), *w[NP], *b[NP], *out[NP], *alone = xmalloc(sizeof(float) * 70);
    for (int i = 0; i < NP; i++) {
        w[i] = xmalloc(sizeof(float) * (size_t)OCs[i] * C);
        b[i] = xmalloc(sizeof(float) * OCs[i]);
        out[i] = xmalloc(sizeof(float) * NMAX * OCs[i]);
        fill(w[i], (size_t)OCs[i] * C, -1, 1);
        fill(b[i], OCs[i], -1, 1);
    }
    fill(inp, (size_t)NMAX * C, -1, 1);
    double *ref = xmalloc(sizeof(double) * NMAX * 70), *bound = xmalloc(sizeof(double) * NMAX * 70);
    for (int N = 1; N <= NMAX; N++) {
        jr_rows_mm p[NP];
        for (int i = 0; i < NP; i++) p[i] = (jr_rows_mm){out[i], w[i], i == 1 ? NULL : b[i], OCs[i]};
        K->rows_f32(p, NP, inp, N, C);
        for (int i = 0; i < NP && !why; i++) {
            rows_ref(ref, bound, inp, w[i], p[i].bias, N, C, OCs[i]);
            if (over(buf, sizeof buf, out[i], ref, bound, (size_t)N * OCs[i])) {
                static char m[400];
                snprintf(m, sizeof m, "N=%d product %d: %s", N, i, buf);
                why = m;
            }
        }
        for (int n = 0; n < N && !inv; n++) { /* row n alone */
            jr_rows_mm q = {alone, w[0], b[0], OCs[0]};
            K->rows_f32(&q, 1, inp + (size_t)n * C, 1, C);
            if (memcmp(alone, out[0] + (size_t)n * OCs[0], sizeof(float) * OCs[0])) {
                static char m[100];
                snprintf(m, sizeof m, "row %d of a batch of %d differs from the row alone", n, N);
                inv = m;
            }
        }
        for (int i = 0; i < NP && !ord; i++)
            for (int n = 0; n < N && !ord; n++)
                for (int o = 0; o < OCs[i] && !ord; o++) {
                    float e = dot_order(inp + (size_t)n * C, w[i] + (size_t)o * C, C, fused) + (p[i].bias ? p[i].bias[o] : 0.0f);
                    if (bits(e) != bits(out[i][(size_t)n * OCs[i] + o])) {
                        static char m[200];
                        snprintf(m, sizeof m, "N=%d product %d output (%d, %d): %.9g, in the documented order %.9g", N, i, n, o,
                                 out[i][(size_t)n * OCs[i] + o], e);
                        ord = m;
                    }
                }
        if (!npw) { /* product 2 alone equals its part of the three */
            float *o2 = xmalloc(sizeof(float) * NMAX * OCs[2]);
            jr_rows_mm q = {o2, w[2], b[2], OCs[2]};
            K->rows_f32(&q, 1, inp, N, C);
            if (memcmp(o2, out[2], sizeof(float) * N * OCs[2])) npw = "a product alone differs from the same in a call of three";
            free(o2);
        }
    }
    report("rows_f32_reference", why);
    report("rows_f32_batch_invariant", inv);
    report("rows_f32_products_independent", npw);
    report("rows_f32_documented_order", ord);
    for (int i = 0; i < NP; i++) free(w[i]), free(b[i]), free(out[i]);
    free(inp), free(alone), free(ref), free(bound);
}

/* bf16 row products: against the reference over the widened operands; row and output-range invariance
 * (rows 1..9; outputs [0, OC) in one call or in two); with AVX512-BF16 (when compiled in and the CPU has it)
 * and without. */
static void check_rows_bf16(void) {
    enum { C = 200, OC = 37, NMAX = 9 };
    char buf[300];
    uint16_t *a = xmalloc(2 * NMAX * C), *w = xmalloc(2 * OC * C);
    float *bias = xmalloc(sizeof(float) * OC), *tmp = xmalloc(sizeof(float) * OC * C), *wf = xmalloc(sizeof(float) * OC * C);
    float *out = xmalloc(sizeof(float) * NMAX * OC), *out2 = xmalloc(sizeof(float) * NMAX * OC), *af = xmalloc(sizeof(float) * NMAX * C);
    double *ref = xmalloc(sizeof(double) * NMAX * OC), *bound = xmalloc(sizeof(double) * NMAX * OC);
    fill(tmp, (size_t)NMAX * C, -2, 2);
    K->bf16_round(a, tmp, (long)NMAX * C);
    fill(tmp, (size_t)OC * C, -2, 2);
    K->bf16_round(w, tmp, (long)OC * C);
    fill(bias, OC, -1, 1);
    for (int i = 0; i < NMAX * C; i++) af[i] = widen(a[i]);
    for (int i = 0; i < OC * C; i++) wf[i] = widen(w[i]);
    int modes = K->rows_bf16_has_dpbf16() && jr_cpu_avx512_bf16() ? 2 : 1;
    for (int dp = 0; dp < modes; dp++) {
        const char *why = NULL, *inv = NULL;
        static char m[400], mi[120];
        for (int N = 1; N <= NMAX; N++) {
            K->rows_bf16(out, a, w, bias, N, C, OC, 0, OC, dp);
            rows_ref(ref, bound, af, wf, bias, N, C, OC);
            if (!why && over(buf, sizeof buf, out, ref, bound, (size_t)N * OC)) snprintf(m, sizeof m, "N=%d: %s", N, buf), why = m;
            for (int n = 0; n < N && !inv; n++) {
                K->rows_bf16(out2, a + (size_t)n * C, w, bias, 1, C, OC, 0, 13, dp); /* two ranges of outputs */
                K->rows_bf16(out2, a + (size_t)n * C, w, bias, 1, C, OC, 13, OC, dp);
                if (memcmp(out2, out + (size_t)n * OC, sizeof(float) * OC))
                    snprintf(mi, sizeof mi, "row %d of a batch of %d differs from the row alone", n, N), inv = mi;
            }
        }
        report(dp ? "rows_bf16_dpbf16_reference" : "rows_bf16_reference", why);
        report(dp ? "rows_bf16_dpbf16_batch_invariant" : "rows_bf16_batch_invariant", inv);
    }
    free(a), free(w), free(bias), free(tmp), free(wf), free(out), free(out2), free(af), free(ref), free(bound);
}

/* one query head over P cached positions, fp32 and bf16 caches, head sizes with and without the AVX-512
 * special cases (64, 128) and with a tail (20, 72); the cache rows strided as in a KV cache */
static void check_attend(void) {
    const int Ds[] = {20, 64, 72, 128}, Ps[] = {1, 7, 33};
    const char *why[2] = {NULL, NULL};
    static char m[2][300];
    for (int kb = 0; kb < 2; kb++)
        for (size_t di = 0; di < sizeof Ds / sizeof *Ds; di++)
            for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++) {
                int D = Ds[di], P = Ps[pi];
                size_t stride = (size_t)(D + 8) * (kb ? 2 : 4); /* the row of another head beside */
                char *kc = xmalloc(stride * P), *vc = xmalloc(stride * P);
                float *q = xmalloc(sizeof(float) * D), *kf = xmalloc(sizeof(float) * D * P), *vf = xmalloc(sizeof(float) * D * P);
                float *a = xmalloc(sizeof(float) * P), *o = xmalloc(sizeof(float) * D);
                double *s = xmalloc(sizeof(double) * P);
                fill(q, D, -1, 1);
                fill(kf, (size_t)D * P, -1, 1);
                fill(vf, (size_t)D * P, -1, 1);
                memset(kc, 0x7f, stride * P), memset(vc, 0x7f, stride * P);
                for (int t = 0; t < P; t++) {
                    if (kb) { /* the cache holds bf16: the reference uses the same rounded values */
                        K->bf16_round((uint16_t *)(void *)(kc + t * stride), kf + (size_t)t * D, D);
                        K->bf16_round((uint16_t *)(void *)(vc + t * stride), vf + (size_t)t * D, D);
                        for (int d = 0; d < D; d++) {
                            kf[(size_t)t * D + d] = widen(((uint16_t *)(void *)(kc + t * stride))[d]);
                            vf[(size_t)t * D + d] = widen(((uint16_t *)(void *)(vc + t * stride))[d]);
                        }
                    } else {
                        memcpy(kc + t * stride, kf + (size_t)t * D, sizeof(float) * D);
                        memcpy(vc + t * stride, vf + (size_t)t * D, sizeof(float) * D);
                    }
                }
                float scale = 1.0f / sqrtf((float)D) * 3.0f; /* scores of a few units: a peaked softmax */
                K->attend(q, kc, vc, a, P, scale, o, D, stride, kb);
                double mx = -INFINITY, sum = 0, vmax = 0;
                for (int t = 0; t < P; t++) {
                    double d = 0;
                    for (int i = 0; i < D; i++) d += (double)q[i] * kf[(size_t)t * D + i];
                    s[t] = d * scale;
                    if (s[t] > mx) mx = s[t];
                }
                for (int t = 0; t < P; t++) sum += s[t] = exp(s[t] - mx);
                for (int i = 0; i < D * P; i++) vmax = fmax(vmax, fabs(vf[i]));
                for (int d = 0; d < D && !why[kb]; d++) {
                    double r = 0;
                    for (int t = 0; t < P; t++) r += s[t] / sum * vf[(size_t)t * D + d];
                    if (!(fabs(o[d] - r) <= 2e-6 * vmax))
                        snprintf(m[kb], sizeof m[kb], "D=%d P=%d: output %d %.9g, reference %.9g", D, P, d, o[d], r), why[kb] = m[kb];
                }
                free(kc), free(vc), free(q), free(kf), free(vf), free(a), free(o), free(s);
            }
    report("attend_reference", why[0]);
    report("attend_bf16_cache_reference", why[1]);
}

/* expf_shifted: bitwise glibc's expf over a sweep of the range (overflow, underflow, subnormals, NaN), in
 * arrays of every length 1..40 at every position (the vector body and the tail) */
static void check_elementwise(void) {
    enum { N = 4096 };
    char buf[300];
    float *z = xmalloc(sizeof(float) * N), *x = xmalloc(sizeof(float) * N), *g = xmalloc(sizeof(float) * N);
    float *up = xmalloc(sizeof(float) * N), *out = xmalloc(sizeof(float) * N), *one = xmalloc(sizeof(float) * 64);
    uint16_t *h = xmalloc(2 * N), *h1 = xmalloc(2 * 64);
    const char *why = NULL, *inv = NULL;
    for (int i = 0; i < N; i++) x[i] = uni(-120, 100);
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 88.72f, x[4] = 88.73f, x[5] = -103.3f, x[6] = -104.0f, x[7] = 0;
    const float m = 0.75f, s = 1.25f;
    memcpy(z, x, sizeof(float) * N);
    K->expf_shifted(z, N, m, s);
    for (int i = 0; i < N && !why; i++) {
        float r = expf((x[i] - m) * s);
        if (bits(z[i]) != bits(r) && !(isnan(z[i]) && isnan(r)))
            snprintf(buf, sizeof buf, "expf((%.9g - m) * s) = %.9g, glibc %.9g", x[i], z[i], r), why = buf;
    }
    report("expf_shifted_glibc_bitwise", why);
    for (int n = 1; n <= 40 && !inv; n++) {
        memcpy(z, x + 8, sizeof(float) * n);
        K->expf_shifted(z, n, m, s);
        for (int i = 0; i < n && !inv; i++) {
            one[0] = x[8 + i];
            K->expf_shifted(one, 1, m, s);
            if (bits(one[0]) != bits(z[i])) inv = "an element's exp depends on its place in the array";
        }
    }
    report("expf_shifted_position_invariant", inv);

    /* swiglu over gates in [-20, 20] and a few beyond */
    fill(g, N, -20, 20);
    fill(up, N, -3, 3);
    g[0] = 0, g[1] = -90, g[2] = 90, g[3] = -1e-30f;
    K->swiglu(out, g, up, N);
    why = inv = NULL;
    for (int i = 0; i < N && !why; i++) {
        double r = (double)g[i] / (1.0 + exp(-(double)g[i])) * up[i];
        if (!(fabs(out[i] - r) <= 8 * U * fabs(r) + 1e-30))
            snprintf(buf, sizeof buf, "silu(%.9g) * %.9g = %.9g, reference %.9g", g[i], up[i], out[i], r), why = buf;
    }
    report("swiglu_reference", why);
    for (int n = 1; n <= 40 && !inv; n++) {
        K->swiglu(out, g + 100, up + 100, n);
        for (int i = 0; i < n && !inv; i++) {
            K->swiglu(one, g + 100 + i, up + 100 + i, 1);
            if (bits(one[0]) != bits(out[i])) inv = "an element's result depends on its place in the array";
        }
    }
    report("swiglu_position_invariant", inv);

    /* bf16 rounding: random bit patterns (every exponent), ties, the largest floats, NaN and infinities */
    why = inv = NULL;
    for (int i = 0; i < N; i++) x[i] = from_bits((uint32_t)next64());
    x[0] = from_bits(0x3f808000u), x[1] = from_bits(0x3f818000u), x[2] = FLT_MAX, x[3] = from_bits(0x7f7f7fffu);
    x[4] = INFINITY, x[5] = -INFINITY, x[6] = from_bits(0x7f800001u), x[7] = from_bits(0xffc00001u), x[8] = -0.0f;
    x[9] = from_bits(0x00008000u), x[10] = from_bits(0x00018000u), x[11] = from_bits(0x807fffffu);
    K->bf16_round(h, x, N);
    for (int i = 0; i < N && !why; i++)
        if (h[i] != bf16_ref(x[i]))
            snprintf(buf, sizeof buf, "bf16(0x%08x) = 0x%04x, expected 0x%04x", bits(x[i]), h[i], bf16_ref(x[i])), why = buf;
    report("bf16_round_reference", why);
    for (int n = 1; n <= 40 && !inv; n++) {
        K->bf16_round(h, x, n);
        for (int i = 0; i < n && !inv; i++) {
            K->bf16_round(h1, x + i, 1);
            if (h1[0] != h[i]) inv = "an element's rounding depends on its place in the array";
        }
    }
    report("bf16_round_position_invariant", inv);
    free(z), free(x), free(g), free(up), free(out), free(one), free(h), free(h1);
}

int main(void) {
    if (jr_cpu_init() != JR_OK) { /* JR_CPU names a level this CPU lacks, or no level */
        fprintf(stderr, "kernels_check: %s\n", jr_errmsg());
        return 2;
    }
    K = jr_kernels();
    check_rows_f32();
    check_rows_bf16();
    check_attend();
    check_elementwise();
    return failures ? 1 : 0;
}
