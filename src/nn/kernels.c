/* kernels.c - the table of hot kernels for the ISA level chosen at start-up (kernels.h, cpu.h) */
#include "nn/kernels.h"

#include "judgerl/cpu.h"
#include "judgerl/nn.h"

#define JR_KERN_TABLE(L)                                                                                        \
    {#L, jr_k_rows_f32_##L, jr_k_rows_f32_share_##L, jr_k_attend_##L, jr_k_expf_shifted_##L, jr_k_swiglu_##L, \
     jr_k_bf16_round_##L, jr_k_rows_bf16_##L, jr_k_rows_bf16_has_dpbf16_##L}

JR_KERN_DECLS(baseline)
#if defined(__x86_64__)
JR_KERN_DECLS(avx2)
JR_KERN_DECLS(avx512)
#endif

static const jr_kern tables[] = {
    JR_KERN_TABLE(baseline),
#if defined(__x86_64__)
    JR_KERN_TABLE(avx2),
    JR_KERN_TABLE(avx512),
#endif
};

const jr_kern *jr_kernels(void) {
    static const jr_kern *chosen; /* the same table whichever thread sets it first */
    const jr_kern *k = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (k) return k;
    int l = (int)jr_cpu_level_get(), n = (int)(sizeof tables / sizeof tables[0]);
    k = &tables[l < n ? l : n - 1];
    __atomic_store_n(&chosen, k, __ATOMIC_RELEASE);
    return k;
}

const char *jr_kernel_level(void) { return jr_kernels()->level; }

void jr_expf_shifted(float *z, int n, float m, float s) { jr_kernels()->expf_shifted(z, n, m, s); }

void jr_matmul_rows_f32(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC) {
    jr_rows_mm p = {out, w, bias, OC};
    jr_kernels()->rows_f32(&p, 1, inp, N, C);
}
