/* test_matmul_bf16.c - the oneDNN bf16 matmul (jr_matmul_bf16_*) against a float64 reference on the
 * bf16-rounded operands (tight: only fp32 accumulation differs) and against the fp32 matmul (within
 * the bf16 rounding bound), accumulation semantics, bias, odd and many shapes (primitive cache). */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "judgerl/nn.h"
#include "judgerl/rng.h"

/* round to nearest even bf16, back to float (the reference rounding, written independently) */
static float rb(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t lsb = (u >> 16) & 1;
    u = (u + 0x7fff + lsb) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

static float *randv(jr_rng *r, long n) {
    float *p = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++) p[i] = (float)jr_rng_normal(r);
    return p;
}

/* Checks out (M,N) against sum_k A(m,k) B(k,n) given by accessors, both with bf16-rounded operands
 * (|diff| <= 1e-5 * sum|ab| + 1e-6: fp32 accumulation) and exact operands (<= 2^-7 sum|ab|). */
typedef float (*acc_fn)(const float *p, int i, int j, int ld);
static float rowmaj(const float *p, int i, int j, int ld) { return p[(long)i * ld + j]; }
static float colmaj(const float *p, int i, int j, int ld) { return p[(long)j * ld + i]; }

static int check_prod(const float *out, const float *init, int M, int N, int K, const float *A, acc_fn fa, int lda,
                      const float *B, acc_fn fb, int ldb, const char *what) {
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = init ? init[(long)i * N + j] : 0, s_exact = s, mag = 0;
            for (int k = 0; k < K; k++) {
                float a = fa(A, i, k, lda), b = fb(B, k, j, ldb);
                s += (double)rb(a) * rb(b);
                s_exact += (double)a * b;
                mag += fabs((double)a * b);
            }
            double o = out[(long)i * N + j], e = fabs(o - s);
            if (e / (mag + 1e-30) > worst) worst = e / (mag + 1e-30);
            if (!(e <= 1e-5 * mag + 1e-6) || !(fabs(o - s_exact) <= mag / 128 + 1e-6)) bad++;
        }
    CHECK_MSG(bad == 0, "%s: %d of %d entries off (worst gap / sum|ab| %.3g)", what, bad, M * N, worst);
    return bad;
}

static int bf16_available(void) {
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1}, o[4];
    return jr_matmul_bf16_forward(o, x, w, NULL, 2, 2, 2) == 0 && o[0] == 1 && o[1] == 2 && o[3] == 4;
}

static void one_shape(int N, int C, int OC, uint64_t seed) {
    jr_rng r;
    jr_rng_seed(&r, seed);
    float *x = randv(&r, (long)N * C), *w = randv(&r, (long)OC * C), *b = randv(&r, OC), *dout = randv(&r, (long)N * OC);
    float *out = randv(&r, (long)N * OC), *dx = randv(&r, (long)N * C), *dw = randv(&r, (long)OC * C);
    float *dx0 = malloc(sizeof(float) * (size_t)N * C), *dw0 = malloc(sizeof(float) * (size_t)OC * C);
    float *db = calloc((size_t)OC, sizeof(float));
    memcpy(dx0, dx, sizeof(float) * (size_t)N * C);
    memcpy(dw0, dw, sizeof(float) * (size_t)OC * C);
    char what[96];
    /* forward, overwriting out (whatever it held), without and with bias */
    CHECK(jr_matmul_bf16_forward(out, x, w, NULL, N, C, OC) == 0);
    snprintf(what, sizeof what, "forward %dx%dx%d", N, C, OC);
    check_prod(out, NULL, N, OC, C, x, rowmaj, C, w, colmaj, C, what);
    CHECK(jr_matmul_bf16_forward(out, x, w, b, N, C, OC) == 0);
    int bad = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = b[o];
            for (int c = 0; c < C; c++) s += (double)rb(x[(long)n * C + c]) * rb(w[(long)o * C + c]);
            bad += !(fabs(out[(long)n * OC + o] - s) <= 1e-4 * (1 + fabs(s)) + 1e-5 * C);
        }
    CHECK_MSG(bad == 0, "forward+bias %dx%dx%d: %d off", N, C, OC, bad);
    /* backward accumulates into dx and dw, dbias is the fp32 column sum */
    CHECK(jr_matmul_bf16_backward(dx, dw, db, dout, x, w, N, C, OC) == 0);
    snprintf(what, sizeof what, "dinp %dx%dx%d", N, C, OC);
    check_prod(dx, dx0, N, C, OC, dout, rowmaj, OC, w, rowmaj, C, what);
    snprintf(what, sizeof what, "dweight %dx%dx%d", N, C, OC);
    check_prod(dw, dw0, OC, C, N, dout, colmaj, OC, x, rowmaj, C, what);
    for (int o = 0; o < OC; o++) {
        double s = 0;
        for (int n = 0; n < N; n++) s += dout[(long)n * OC + o];
        CHECK_NEAR(db[o], s, 1e-5, 1e-5);
    }
    free(x); free(w); free(b); free(dout); free(out); free(dx); free(dw); free(dx0); free(dw0); free(db);
}

TEST(bf16_products) {
    if (!bf16_available()) SKIP("no oneDNN bf16 matmul on this CPU: %s", jr_matmul_bf16_error());
    printf("  path: %s, oneDNN ISA %s\n", jr_nn_bf16_native() ? "bf16 units" : "NO bf16 units (oneDNN emulates)",
           jr_nn_isa());
    one_shape(1, 1, 1, 1);
    one_shape(37, 53, 29, 2);   /* odd sizes, no multiple of any block */
    one_shape(64, 96, 160, 3);
    one_shape(300, 64, 7, 4);   /* tall and thin (a vocabulary-like head reversed) */
    one_shape(5, 200, 333, 5);  /* few rows (decode-like) */
}

TEST(bf16_many_shapes) {
    /* more shapes than the primitive cache holds (128): evicted entries are rebuilt, results stay right */
    if (!bf16_available()) SKIP("no oneDNN bf16 matmul on this CPU");
    jr_rng r;
    jr_rng_seed(&r, 9);
    int bad = 0;
    for (int it = 0; it < 300; it++) {
        int N = 1 + (int)jr_rng_below(&r, 24), C = 1 + (int)jr_rng_below(&r, 24), OC = 1 + (int)jr_rng_below(&r, 24);
        float *x = randv(&r, (long)N * C), *w = randv(&r, (long)OC * C), *o = calloc((size_t)N * OC, 4);
        CHECK(jr_matmul_bf16_forward(o, x, w, NULL, N, C, OC) == 0);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < OC; k++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += (double)rb(x[(long)n * C + c]) * rb(w[(long)k * C + c]);
                bad += !(fabs(o[(long)n * OC + k] - s) <= 1e-5 * (1 + fabs(s)) * C);
            }
        free(x); free(w); free(o);
    }
    CHECK_MSG(bad == 0, "%d entries off over 300 random shapes", bad);
}

TEST(bf16_rounding_is_real) {
    /* a value bf16 cannot hold: 1 + 2^-10 rounds to 1, so the product differs from fp32's */
    if (!bf16_available()) SKIP("no oneDNN bf16 matmul on this CPU");
    float x[1] = {1.0f + 1.0f / 1024}, w[1] = {1.0f}, o32[1], o16[1];
    jr_matmul_forward(o32, x, w, NULL, 1, 1, 1);
    CHECK(jr_matmul_bf16_forward(o16, x, w, NULL, 1, 1, 1) == 0);
    CHECK(o32[0] == x[0]);
    CHECK(o16[0] == 1.0f);
}

int main(void) {
    RUN(bf16_products);
    RUN(bf16_many_shapes);
    RUN(bf16_rounding_is_real);
    return jt_done();
}
