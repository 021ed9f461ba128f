/* kernels.h - the hot kernels compiled once per ISA level (src/nn/k_*.c) and the table of the level
 * chosen at start-up (kernels.c)
 *
 * The Makefile compiles each k_*.c once per level of the target architecture with -DJR_KLEVEL=<level>
 * and that level's -march (x86-64: baseline = x86-64-v2, avx2 = x86-64-v3, avx512 = x86-64-v4;
 * aarch64: baseline = armv8-a). Inside, JR_KFN(name) names a function jr_k_<name>_<level>; everything
 * else there is static. jr_kernels() returns the chosen level's table (jr_cpu_level_get: the highest the
 * CPU has, or JR_CPU), the same for every call site and row count of a process. */
#ifndef JR_NN_KERNELS_H
#define JR_NN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* One product of a batch of fp32 row products: out (N,OC) = inp (N,C) . w (OC,C)^T + bias (or NULL). */
typedef struct jr_rows_mm { float *out; const float *w, *bias; int OC; } jr_rows_mm;

/* A thread's tasks [next, end), packed next | end << 32, alone on its cache line: the owner takes from
 * the front, a thread done with its own takes from the back. */
typedef struct { _Alignas(64) uint64_t v; char pad[56]; } jr_task_range;

#define JR_ROWS_MAX_THREADS 64
/* Below ~0.1 ms of work (multiply-adds) a thread team costs more than it saves. */
#define JR_ROWS_TEAM_MIN_WORK 262144L

/* The functions of one level, declared for level L. */
#define JR_KERN_DECLS(L)                                                                                          \
    void jr_k_rows_f32_##L(const jr_rows_mm *p, int np, const float *inp, int N, int C);                          \
    void jr_k_rows_f32_share_##L(const jr_rows_mm *p, int np, const float *inp, int N, int C, int t, int n,      \
                                 jr_task_range *r, int fresh);                                                    \
    void jr_k_attend_##L(const float *qv, const char *kc, const char *vc, float *a, int P, float scale, float *o, \
                         int D, size_t stride, int kb);                                                           \
    void jr_k_expf_shifted_##L(float *z, int n, float m, float s);                                                \
    void jr_k_swiglu_##L(float *out, const float *gate, const float *up, long n);                                 \
    void jr_k_bf16_round_##L(uint16_t *dst, const float *src, long n);                                            \
    void jr_k_rows_bf16_##L(float *out, const uint16_t *a, const uint16_t *w, const float *bias, int N, int C,     \
                            int OC, int o0, int o1, int dpbf16);                                                  \
    int jr_k_rows_bf16_has_dpbf16_##L(void);

typedef struct jr_kern {
    const char *level; /* "baseline", "avx2", "avx512" */
    /* The np products of one input inp (N,C) (q, k and v; gate and up) in one thread team of their own
     * (below JR_ROWS_TEAM_MIN_WORK on the calling thread): every output summed in one fixed order (two
     * 8-lane accumulators over blocks of 16, folded pairwise, then the tail in order), so a row's result
     * never depends on the rows beside it nor on the thread that computes it. */
    void (*rows_f32)(const jr_rows_mm *p, int np, const float *inp, int N, int C);
    /* Thread t's part of the same inside a team of n with task ranges r (a barrier after each thread
     * set its own when fresh; else every range of r must be empty, all tasks done, a barrier since). */
    void (*rows_f32_share)(const jr_rows_mm *p, int np, const float *inp, int N, int C, int t, int n,
                           jr_task_range *r, int fresh);
    /* One query head over P cached positions (keys kc, values vc, position t at t * stride bytes, fp32 or
     * bf16 when kb): scores into a (P), softmax, o (D) = the weighted sum of the values in position order. */
    void (*attend)(const float *qv, const char *kc, const char *vc, float *a, int P, float scale, float *o, int D,
                   size_t stride, int kb);
    /* z[i] = expf((z[i] - m) * s) for i < n, bitwise glibc's expf. */
    void (*expf_shifted)(float *z, int n, float m, float s);
    /* out[i] = silu(gate[i]) * up[i] with a fast exp (within 4 ulp). */
    void (*swiglu)(float *out, const float *gate, const float *up, long n);
    /* dst[i] = bf16(src[i]), nearest even, a NaN kept quiet. */
    void (*bf16_round)(uint16_t *dst, const float *src, long n);
    /* Outputs [o0, o1) of out (N,OC) = a (N,C) . w (OC,C)^T + bias over bf16 operands in one fixed order;
     * dpbf16: the AVX512-BF16 instructions (only where rows_bf16_has_dpbf16 says they are compiled in). */
    void (*rows_bf16)(float *out, const uint16_t *a, const uint16_t *w, const float *bias, int N, int C, int OC, int o0,
                      int o1, int dpbf16);
    int (*rows_bf16_has_dpbf16)(void);
} jr_kern;

/* The chosen level's kernels (the first call fixes them for the process). */
const jr_kern *jr_kernels(void);

/* Inside a k_*.c: the level's name for a kernel function. */
#ifdef JR_KLEVEL
#define JR_KCAT2_(a, b) jr_k_##a##_##b
#define JR_KCAT_(a, b) JR_KCAT2_(a, b)
#define JR_KFN(name) JR_KCAT_(name, JR_KLEVEL)
#endif

#endif
