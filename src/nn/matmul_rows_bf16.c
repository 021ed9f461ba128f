/* matmul_rows_bf16.c - inference matmul over bf16 weights: out = bf16(inp) . w^T, each output summed in
 * one fixed order whatever the batch (a row's result never depends on the rows beside it)
 *
 * Generation streams every weight once per decode step, so keeping weights in bf16 halves the bytes
 * per step. The kernels (k_rows_bf16.c, one per ISA level): AVX512-BF16 where the CPU has it and the
 * chosen level is avx512, else the same bf16 operands widened to fp32 in the same 16-lane layout. */
#include <stdint.h>
#include <string.h>

#include "judgerl/cpu.h"
#include "judgerl/nn.h"
#include "nn/kernels.h"

void jr_bf16_from_f32(uint16_t *dst, const float *src, long n) {
    void (*run)(uint16_t *, const float *, long) = jr_kernels()->bf16_round;
    if (n <= JR_PAR_MIN) { run(dst, src, n); return; }
    long nb = (n + 16383) / 16384;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < nb; b++) run(dst + b * 16384, src + b * 16384, b + 1 < nb ? 16384 : n - b * 16384);
}

static int force_fallback = 0;

void jr_matmul_rows_bf16_force_fallback(int on) { force_fallback = on ? 1 : 0; }

static int use_dpbf16(void) { return !force_fallback && jr_cpu_avx512_bf16() && jr_kernels()->rows_bf16_has_dpbf16(); }

const char *jr_matmul_rows_bf16_kernel(void) { return use_dpbf16() ? "avx512_bf16" : "fp32_fallback"; }

void jr_matmul_rows_bf16(float *out, const float *inp, const uint16_t *w, const float *bias, int N, int C, int OC,
                         uint16_t *scratch) {
    if (N <= 0 || OC <= 0) return;
    jr_bf16_from_f32(scratch, inp, (long)N * C);
    const jr_kern *k = jr_kernels();
    int dp = use_dpbf16();
    /* Blocks of 16 outputs per task: enough rows of weights per thread to stream, few barriers. */
    int nb = (OC + 15) / 16;
    long work = (long)OC * C * N;
#pragma omp parallel for schedule(static) if (work >= 262144)
    for (int b = 0; b < nb; b++) {
        int o0 = b * 16, o1 = o0 + 16 < OC ? o0 + 16 : OC;
        k->rows_bf16(out, scratch, w, bias, N, C, OC, o0, o1, dp);
    }
}
