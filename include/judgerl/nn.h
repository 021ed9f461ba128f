/* nn.h - transformer kernels as forward/backward pairs (fp32): matmul, embedding, RMSNorm, RoPE, attention, SwiGLU, log-probs */
#ifndef JUDGERL_NN_H
#define JUDGERL_NN_H

#include <stddef.h>
#include <stdint.h>

/* Conventions (STYLE.md, after llm.c): outputs first, then inputs, then sizes. Every backward
 * ACCUMULATES (+=) into its gradient outputs, so the caller zeroes them once per step. A NULL
 * gradient pointer means "not needed" and is skipped. None of these can fail. */

/* Loops smaller than this many elements run on one thread: an OpenMP region costs a barrier,
 * which on a loaded machine (threads descheduled) costs milliseconds (docs/PERFORMANCE.md). */
#define JR_PAR_MIN 65536L

/* out (N,OC) = inp (N,C) . weight (OC,C)^T + bias (OC, may be NULL). OpenBLAS sgemm. */
void jr_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
/* dinp (N,C) += dout . weight; dweight (OC,C) += dout^T . inp; dbias (OC) += column sums of dout. */
void jr_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, int N, int C, int OC);

/* bf16 products with fp32 accumulation (oneDNN matmul; matmul_bf16.c). Same shapes and semantics as
 * jr_matmul_forward/backward (the backward accumulates), but the operands are rounded to bf16 (nearest
 * even) before the product; dbias is summed in fp32. Return 0, or -1 with jr_matmul_bf16_error() set
 * (oneDNN has no kernel, out of memory). Calls are serialised by a lock; each runs on the OpenMP
 * threads (jr_nn_set_threads). Primitives are cached per shape. */
int jr_matmul_bf16_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
int jr_matmul_bf16_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC);
const char *jr_matmul_bf16_error(void);
/* The same with operands the caller already holds in bf16 (each *_b may be NULL: the fp32 operand
 * is converted then): the trainer converts the weights once per forward pass and an activation
 * read by several products (q, k, v; gate, up) once. The fp32 pointers may be NULL where the bf16
 * one is given, except inp when dbias is asked. */
int jr_matmul_bf16_fwd(float *out, const float *inp, const uint16_t *inp_b, const float *weight,
                       const uint16_t *weight_b, const float *bias, int N, int C, int OC);
int jr_matmul_bf16_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                       const uint16_t *inp_b, const float *weight, const uint16_t *weight_b, int N, int C, int OC);
/* The forward with weights already in bf16 (OC,C) (generation keeps them so): oneDNN, for many rows. */
int jr_matmul_bf16w_forward(float *out, const float *inp, const uint16_t *weight, const float *bias, int N, int C,
                            int OC);
/* Inference matmul over bf16 weights (matmul_rows_bf16.c): out (N,OC) = bf16(inp) (N,C) . w (OC,C)^T
 * + bias, fp32 accumulation, every output summed in one fixed order whatever N (batch-invariant).
 * scratch holds N*C bf16. AVX512-BF16 kernel when the CPU has it (and the kernel level is avx512), else
 * a portable fp32 kernel over the same bf16 operands. */
void jr_matmul_rows_bf16(float *out, const float *inp, const uint16_t *w, const float *bias, int N, int C, int OC,
                         uint16_t *scratch);
/* "avx512_bf16" or "fp32_fallback": the kernel jr_matmul_rows_bf16 runs. */
const char *jr_matmul_rows_bf16_kernel(void);
/* Tests: 1 forces the fallback kernel (to check it on a CPU that has AVX512-BF16), 0 back to the CPU's. */
void jr_matmul_rows_bf16_force_fallback(int on);
/* dst[i] = bf16(src[i]), round to nearest even (NaN kept quiet). */
void jr_bf16_from_f32(uint16_t *dst, const float *src, long n);
/* oneDNN's implementation name for a forward product of this shape (e.g. "brg:avx512_core_bf16"). */
void jr_matmul_bf16_impl(char *buf, size_t n, int N, int C, int OC);
/* 1 when the CPU has bf16 matrix units (AMX-BF16, or AVX-512 with AVX512-BF16) and the kernel level
 * (judgerl/cpu.h, JR_CPU) lets judgerl use them. */
int jr_nn_bf16_native(void);
/* The ISA oneDNN dispatches to on this CPU (e.g. "avx512_core_bf16", "avx512_core_amx"; capped at the
 * kernel level when JR_CPU forces a lower one). */
const char *jr_nn_isa(void);
/* The kernel level in use for the hot kernels (judgerl/cpu.h): "baseline", "avx2" or "avx512". */
const char *jr_kernel_level(void);
/* out (N,OC) = inp (N,C) . w (OC,C)^T + bias (or NULL) with every output summed in one fixed order
 * whatever N (generation's fp32 product, batch-invariant; the level's kernel). */
void jr_matmul_rows_f32(float *out, const float *inp, const float *w, const float *bias, int N, int C, int OC);
/* z[i] = expf((z[i] - m) * s) for i < n, bitwise glibc's expf (the level's vector kernel). */
void jr_expf_shifted(float *z, int n, float m, float s);

/* out (N,C) = wte[ids[n]] with wte (V,C); ids must be in [0,V). */
void jr_embedding_forward(float *out, const int32_t *ids, const float *wte, int N, int C);
/* dwte (V,C) += dout (N,C) scattered by ids. */
void jr_embedding_backward(float *dwte, const float *dout, const int32_t *ids, int N, int C);

/* out (N,C) = inp * rstd * weight with rstd (N) = 1/sqrt(mean(inp^2) + eps), as HF's RMSNorm in fp32.
 * rstd is saved for the backward. Used per token (C = hidden) and per head (C = head_dim). */
void jr_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps);
/* dinp (N,C) += d/dinp, dweight (C) += d/dweight, from dout (N,C), the saved inp and rstd. */
void jr_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp, const float *weight,
                         const float *rstd, int N, int C);

/* Rotary embedding with HF's rotate_half pairing (i, i + D/2). inp/out (N,H,D) (may alias),
 * pos (N) position of each row, cos/sin tables (P, D/2) for positions < P (jr_rope_table). */
void jr_rope_forward(float *out, const float *inp, const int32_t *pos, const float *cos_t, const float *sin_t,
                     int N, int H, int D);
/* dinp (N,H,D) += the inverse rotation of dout (may not alias dout). */
void jr_rope_backward(float *dinp, const float *dout, const int32_t *pos, const float *cos_t, const float *sin_t,
                      int N, int H, int D);
/* Fills cos/sin (P, D/2) for positions 0..P-1 from inv_freq (D/2), computed in double. */
void jr_rope_table(float *cos_t, float *sin_t, const double *inv_freq, int P, int D);

/* Causal grouped-query attention. q (B,T,Hq,D), k and v (B,T,Hkv,D) with Hq % Hkv == 0 (query head
 * h reads kv head h / (Hq/Hkv), HF's repeat_kv). Scores scaled by 1/sqrt(D). out (B,T,Hq,D),
 * att (B,Hq,T,T) the softmax probabilities (row t uses columns 0..t, the rest left 0), saved
 * for the backward. Right padding needs no mask: a real token never sees a later pad. */
void jr_attention_forward(float *out, float *att, const float *q, const float *k, const float *v, int B, int T,
                          int Hq, int Hkv, int D);
/* dq, dk, dv += gradients from dout (B,T,Hq,D), the saved att, q, k, v. */
void jr_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *att, const float *q,
                           const float *k, const float *v, int B, int T, int Hq, int Hkv, int D);

/* Fused causal GQA attention: the same results (to fp32 rounding) without any T x T buffer. The
 * forward keeps lse (B,Hq,T), the log-sum-exp of each row's scaled scores; the backward recomputes
 * each block of probabilities from q, k and lse. Scratch: 2 x 64 x T floats per thread. Return 0,
 * or -1 when that scratch cannot be allocated (outputs then incomplete). */
int jr_attention_fused_forward(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                               int Hq, int Hkv, int D);
int jr_attention_fused_backward(float *dq, float *dk, float *dv, const float *dout, const float *lse, const float *q,
                                const float *k, const float *v, int B, int T, int Hq, int Hkv, int D);

/* out (N,F) = silu(gate) * up. */
void jr_swiglu_forward(float *out, const float *gate, const float *up, int N, int F);
/* The same with e^-gate in AVX-512 steps at kernel level avx512 (a polynomial within 2 ulp of expf, not
 * bitwise it; every element through the same steps wherever it falls, so a row's result never depends
 * on the rows beside it): generation's forward (kvcache.c), where expf was 7% of a 0.5b prefill. */
void jr_swiglu_forward_fast(float *out, const float *gate, const float *up, int N, int F);
/* dgate, dup (N,F) += from dout (N,F). */
void jr_swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up, int N, int F);

/* out (N,C) += inp (N,C): residual connections (the backward of a sum is a copy-add as well). */
void jr_add_inplace(float *out, const float *inp, long n);

/* Log-probability of target tokens: lp[n] = logits[n,t]/T - logsumexp(logits[n,:]/T) with
 * t = targets[n] and inv_temp = 1/T; rows with targets[n] < 0 get lp = 0. logits (N,V). */
void jr_logprob_forward(float *lp, const float *logits, const int32_t *targets, int N, int V, float inv_temp);
/* Entropy (nats) of softmax(logits[n,:] * inv_temp), in double; rows with targets[n] < 0 get 0. */
void jr_entropy_forward(float *ent, const float *logits, const int32_t *targets, int N, int V, float inv_temp);
/* Turns logits (N,V) IN PLACE into dlogits = dlp[n] * inv_temp * (onehot(t) - softmax(logits/T))
 * (overwrites, does not accumulate: the logits are consumed). Rows with targets < 0 or dlp = 0
 * become zero. */
void jr_logprob_backward_inplace(float *logits, const float *dlp, const int32_t *targets, int N, int V,
                                 float inv_temp);

/* Sets the OpenMP threads of every kernel (n >= 1; OpenBLAS runs single-threaded inside them);
 * returns the previous count. */
int jr_nn_set_threads(int n);
/* The OpenMP thread count loops use now. */
int jr_nn_threads(void);

/* Matmul profile for benchmarks: when enabled, every jr_matmul_forward/backward adds its wall time
 * and floating-point operations here (process-wide; call from one thread at a time). */
typedef struct jr_nn_prof {
    int enabled;
    double matmul_s, matmul_flops;
} jr_nn_prof;
extern jr_nn_prof jr_nn_profile;

#endif
