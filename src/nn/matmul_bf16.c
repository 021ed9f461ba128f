/* matmul_bf16.c - fully connected layer in bf16 with fp32 accumulation through oneDNN's matmul primitive
 *
 * The operands are rounded to bf16 (round to nearest even) on the way in, products are accumulated
 * in fp32 and the results land in the caller's fp32 buffers (accumulating, like jr_matmul_backward).
 * Master weights, gradients and optimizer state stay fp32: only the products are bf16.
 * oneDNN picks its kernel at run time (AMX on Intel Sapphire Rapids and later, AVX512-BF16 on Zen 4/5
 * and Cooper Lake, emulation elsewhere). Primitives are cached per shape (GRPO's shapes vary). */
#include <dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "judgerl/clock.h"
#include "judgerl/cpu.h"
#include "judgerl/nn.h"

int jr_nn_bf16_native(void) { return jr_cpu_bf16_units(); }

/* A kernel level forced below avx512 (JR_CPU) caps oneDNN's ISA too, before its first primitive, so that
 * the forced level holds for the bf16 products as well. */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static void cap_isa(void) {
    jr_cpu_level l = jr_cpu_level_get();
    if (l == jr_cpu_level_max() || l >= JR_CPU_AVX512) return;
#if defined(__x86_64__)
    dnnl_set_max_cpu_isa(l == JR_CPU_AVX2 ? dnnl_cpu_isa_avx2 : dnnl_cpu_isa_sse41);
#endif
}

const char *jr_nn_isa(void) {
    pthread_once(&isa_once, cap_isa);
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

/* fp32 -> bf16, round to nearest even (NaN kept quiet): jr_bf16_from_f32's rounding, one value (the
 * transposed tiles of dout). */
static inline uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* One cached primitive: dst (M,N) f32 [+]= src (M,K) bf16 . wei (K,N) bf16, with wei given as
 * row-major (K,N) (wt = 0) or as the transpose of a row-major (N,K) (wt = 1), optional f32 bias. */
typedef struct {
    int M, K, N, wt, bias, acc;
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, dst, bia;
    char impl[48];
} entry;

enum { CACHE = 128 };
static struct {
    pthread_mutex_t mu;
    int ready, failed, n, next;
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    entry e[CACHE];
    uint16_t *a, *w; /* bf16 operand buffers, grown on demand */
    size_t na, nw;
    char err[256];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void drop(entry *e) {
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->src) dnnl_memory_destroy(e->src);
    if (e->wei) dnnl_memory_destroy(e->wei);
    if (e->dst) dnnl_memory_destroy(e->dst);
    if (e->bia) dnnl_memory_destroy(e->bia);
    memset(e, 0, sizeof *e);
}

static int init_engine(void) {
    if (S.ready) return !S.failed;
    S.ready = 1;
    pthread_once(&isa_once, cap_isa);
    if (dnnl_engine_create(&S.eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&S.strm, S.eng, dnnl_stream_default_flags) != dnnl_success) {
        S.failed = 1;
        snprintf(S.err, sizeof S.err, "oneDNN: cannot create a CPU engine");
    }
    return !S.failed;
}

static entry *get(int M, int K, int N, int wt, int bias, int acc) {
    for (int i = 0; i < S.n; i++) {
        entry *e = &S.e[i];
        if (e->M == M && e->K == K && e->N == N && e->wt == wt && e->bias == bias && e->acc == acc) return e;
    }
    entry *e = S.n < CACHE ? &S.e[S.n++] : &S.e[S.next++ % CACHE]; /* full: replace round-robin */
    drop(e);
    dnnl_memory_desc_t src_md, wei_md, dst_md, bia_md;
    dnnl_dims_t sd = {M, K}, ss = {K, 1}, wd = {K, N}, ws_plain = {N, 1}, ws_t = {1, K}, dd = {M, N}, ds = {N, 1};
    dnnl_dims_t bd = {1, N}, bs = {N, 1};
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int ok = dnnl_memory_desc_init_by_strides(&src_md, 2, sd, dnnl_bf16, ss) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&wei_md, 2, wd, dnnl_bf16, wt ? ws_t : ws_plain) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&dst_md, 2, dd, dnnl_f32, ds) == dnnl_success &&
             dnnl_memory_desc_init_by_strides(&bia_md, 2, bd, dnnl_f32, bs) == dnnl_success &&
             dnnl_matmul_desc_init(&md, &src_md, &wei_md, bias ? &bia_md : NULL, &dst_md) == dnnl_success &&
             dnnl_primitive_attr_create(&attr) == dnnl_success;
    if (ok && acc)
        ok = dnnl_post_ops_create(&po) == dnnl_success && dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    ok = ok && dnnl_primitive_desc_create(&pd, &md, attr, S.eng, NULL) == dnnl_success &&
         dnnl_primitive_create(&e->prim, pd) == dnnl_success &&
         dnnl_memory_create(&e->src, &src_md, S.eng, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&e->wei, &wei_md, S.eng, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&e->dst, &dst_md, S.eng, DNNL_MEMORY_NONE) == dnnl_success &&
         (!bias || dnnl_memory_create(&e->bia, &bia_md, S.eng, DNNL_MEMORY_NONE) == dnnl_success);
    if (ok) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(e->impl, sizeof e->impl, "%s", impl ? impl : "?");
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) {
        drop(e);
        snprintf(S.err, sizeof S.err, "oneDNN: no bf16 matmul for %d x %d x %d (transposed weights %d)", M, K, N, wt);
        return NULL;
    }
    e->M = M; e->K = K; e->N = N; e->wt = wt; e->bias = bias; e->acc = acc;
    return e;
}

/* Runs dst [+]= src . wei (+ bias). Returns 0 on success. */
static int run(float *dst, const uint16_t *src, const uint16_t *wei, const float *bias, int M, int K, int N, int wt,
               int acc) {
    entry *e = get(M, K, N, wt, bias != NULL, acc);
    if (!e) return -1;
    dnnl_memory_set_data_handle(e->src, (void *)src);
    dnnl_memory_set_data_handle(e->wei, (void *)wei);
    dnnl_memory_set_data_handle(e->dst, dst);
    if (bias) dnnl_memory_set_data_handle(e->bia, (void *)bias);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, e->wei}, {DNNL_ARG_DST, e->dst},
                               {DNNL_ARG_BIAS, e->bia}};
    if (dnnl_primitive_execute(e->prim, S.strm, bias ? 4 : 3, args) != dnnl_success ||
        dnnl_stream_wait(S.strm) != dnnl_success) {
        snprintf(S.err, sizeof S.err, "oneDNN: bf16 matmul %d x %d x %d failed to run", M, K, N);
        return -1;
    }
    return 0;
}

static int grow(uint16_t **p, size_t *have, size_t n) {
    if (*have >= n) return 0;
    free(*p);
    *have = 0;
    if (!(*p = aligned_alloc(64, ((n * 2 + 63) / 64) * 64))) return -1;
    *have = n;
    return 0;
}

/* a (n) as bf16: a_b when the caller has it, else converted into the operand buffer *buf. */
static const uint16_t *as_bf16(const float *a, const uint16_t *a_b, long n, uint16_t **buf, size_t *have) {
    if (a_b) return a_b;
    if (grow(buf, have, (size_t)n)) {
        snprintf(S.err, sizeof S.err, "bf16 matmul: out of memory for %ld operands", n);
        return NULL;
    }
    jr_bf16_from_f32(*buf, a, n);
    return *buf;
}

int jr_matmul_bf16_fwd(float *out, const float *inp, const uint16_t *inp_b, const float *weight,
                       const uint16_t *weight_b, const float *bias, int N, int C, int OC) {
    double t0 = jr_nn_profile.enabled ? jr_now_s() : 0;
    pthread_mutex_lock(&S.mu);
    /* out (N,OC) = inp (N,C) . weight^T: weights seen as (C,OC) with strides (1, C) */
    const uint16_t *x = NULL, *w = NULL;
    int rc = !init_engine() || !(x = as_bf16(inp, inp_b, (long)N * C, &S.a, &S.na)) ||
             !(w = as_bf16(weight, weight_b, (long)OC * C, &S.w, &S.nw)) || run(out, x, w, bias, N, C, OC, 1, 0);
    pthread_mutex_unlock(&S.mu);
    if (jr_nn_profile.enabled) {
        jr_nn_profile.matmul_s += jr_now_s() - t0;
        jr_nn_profile.matmul_flops += 2.0 * N * C * OC;
    }
    return rc ? -1 : 0;
}

int jr_matmul_bf16_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
    return jr_matmul_bf16_fwd(out, inp, NULL, weight, NULL, bias, N, C, OC);
}

int jr_matmul_bf16w_forward(float *out, const float *inp, const uint16_t *weight, const float *bias, int N, int C,
                            int OC) {
    return jr_matmul_bf16_fwd(out, inp, NULL, NULL, weight, bias, N, C, OC);
}

int jr_matmul_bf16_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                       const uint16_t *inp_b, const float *weight, const uint16_t *weight_b, int N, int C, int OC) {
    double t0 = jr_nn_profile.enabled ? jr_now_s() : 0;
    pthread_mutex_lock(&S.mu);
    int rc = !init_engine();
    const uint16_t *d = NULL, *w = NULL, *x = NULL;
    if (!rc && dinp) /* dinp (N,C) += dout (N,OC) . weight (OC,C) */
        rc = !(d = as_bf16(dout, NULL, (long)N * OC, &S.a, &S.na)) ||
             !(w = as_bf16(weight, weight_b, (long)OC * C, &S.w, &S.nw)) || run(dinp, d, w, NULL, N, OC, C, 0, 1);
    if (!rc && dweight) {
        /* dweight (OC,C) += dout^T (OC,N) . inp (N,C): dout^T is converted transposed, in tiles */
        if (grow(&S.a, &S.na, (size_t)N * OC)) {
            snprintf(S.err, sizeof S.err, "bf16 matmul: out of memory for the weight gradient");
            rc = -1;
        } else {
            uint16_t *dt = S.a;
            enum { TB = 32 };
#pragma omp parallel for collapse(2) schedule(static) if((long)N * OC > JR_PAR_MIN)
            for (int o0 = 0; o0 < OC; o0 += TB)
                for (int n0 = 0; n0 < N; n0 += TB)
                    for (int o = o0; o < o0 + TB && o < OC; o++)
                        for (int n = n0; n < n0 + TB && n < N; n++) dt[(long)o * N + n] = to_bf16(dout[(long)n * OC + o]);
            rc = !(x = as_bf16(inp, inp_b, (long)N * C, &S.w, &S.nw)) || run(dweight, dt, x, NULL, OC, N, C, 0, 1);
        }
    }
    pthread_mutex_unlock(&S.mu);
    if (jr_nn_profile.enabled) {
        jr_nn_profile.matmul_s += jr_now_s() - t0;
        jr_nn_profile.matmul_flops += 2.0 * N * C * OC * ((dinp != NULL) + (dweight != NULL));
    }
    if (!rc && dbias) jr_matmul_backward(NULL, NULL, dbias, dout, inp, weight, N, C, OC); /* fp32 column sums */
    return rc ? -1 : 0;
}

int jr_matmul_bf16_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC) {
    return jr_matmul_bf16_bwd(dinp, dweight, dbias, dout, inp, NULL, weight, NULL, N, C, OC);
}

const char *jr_matmul_bf16_error(void) { return S.err; }

void jr_matmul_bf16_impl(char *buf, size_t n, int N, int C, int OC) {
    pthread_mutex_lock(&S.mu);
    entry *e = init_engine() ? get(N, C, OC, 1, 0, 0) : NULL;
    snprintf(buf, n, "%s", e ? e->impl : "none");
    pthread_mutex_unlock(&S.mu);
}
