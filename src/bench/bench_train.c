/* bench_train.c - `judgerl bench train`: training-step throughput of the engine, and the benchmark model
 * shapes bench generate shares */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "judgerl/bench.h"
#include "judgerl/clock.h"
#include "judgerl/nn.h"
#include "judgerl/optim.h"
#include "judgerl/rng.h"

jr_status jr_bench_model_config(const char *name, jr_model_config *c) {
    jr_model_config_init(c, JR_ARCH_QWEN2);
    c->tie_word_embeddings = 1;
    c->max_position_embeddings = 4096;
    if (!strcmp(name, "10m")) {
        c->hidden_size = 256; c->num_hidden_layers = 6; c->num_attention_heads = 8; c->num_key_value_heads = 4;
        c->intermediate_size = 768; c->vocab_size = 8192;
    } else if (!strcmp(name, "100m")) {
        c->hidden_size = 768; c->num_hidden_layers = 12; c->num_attention_heads = 12; c->num_key_value_heads = 4;
        c->intermediate_size = 2048; c->vocab_size = 32000;
    } else if (!strcmp(name, "0.5b")) { /* Qwen2.5-0.5B's shapes */
        c->hidden_size = 896; c->num_hidden_layers = 24; c->num_attention_heads = 14; c->num_key_value_heads = 2;
        c->intermediate_size = 4864; c->vocab_size = 151936;
    } else {
        return jr_fail(JR_EINVAL, "--config: unknown '%s' (10m, 100m or 0.5b)", name);
    }
    c->head_dim = c->hidden_size / c->num_attention_heads;
    return JR_OK;
}

jr_bench_train_opts jr_bench_train_opts_default(void) {
    return (jr_bench_train_opts){.compute = "auto", .batch = 8, .seq = 256, .steps = 5, .warmup = 1, .gemm_n = 2048};
}

jr_status jr_bench_train_check(const jr_bench_train_opts *o) {
    jr_model_config c;
    if ((o->model != NULL) == (o->config != NULL)) return jr_fail(JR_EINVAL, "give one of --model DIR or --config 10m|100m|0.5b");
    if (o->batch < 1 || o->seq < 2 || o->steps < 1 || o->warmup < 0 || o->gemm_n < 16)
        return jr_fail(JR_EINVAL, "--batch, --seq, --steps must be positive, --gemm-n at least 16");
    const char *cn = o->compute;
    if (strcmp(cn, "auto") && strcmp(cn, "float32") && strcmp(cn, "bfloat16"))
        return jr_fail(JR_EINVAL, "--compute: unknown '%s' (auto, float32 or bfloat16)", cn);
    jr_status st = jr_model_compute_check(cn, "--compute");
    if (st) return st;
    return o->config ? jr_bench_model_config(o->config, &c) : JR_OK;
}

/* GEMM rate of this machine through the engine's matmul in the compute type of the run (same
 * threading, same code path), n x n x n, ~1 s. */
static double gemm_peak(jr_compute comp, int n) {
    float *a = calloc((size_t)n * n, 4), *b = calloc((size_t)n * n, 4), *c = calloc((size_t)n * n, 4);
    if (!a || !b || !c) { free(a); free(b); free(c); return 0; }
    for (long i = 0; i < (long)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; }
    if (comp == JR_COMPUTE_BF16 ? jr_matmul_bf16_forward(c, a, b, NULL, n, n, n) : (jr_matmul_forward(c, a, b, NULL, n, n, n), 0)) {
        free(a); free(b); free(c);
        return 0;
    }
    int reps = 0;
    double t0 = jr_now_s(), t;
    do {
        if (comp == JR_COMPUTE_BF16) jr_matmul_bf16_forward(c, a, b, NULL, n, n, n);
        else jr_matmul_forward(c, a, b, NULL, n, n, n);
        reps++;
    } while ((t = jr_now_s() - t0) < 1.0);
    free(a); free(b); free(c);
    return 2.0 * n * n * n * reps / t / 1e9;
}

/* The timed steps: warmup + steps full steps on ids (inputs) and ids + N (targets); the time of the
 * timed ones in *t_total, the last loss in *loss, the matmul profile of the timed ones in jr_nn_profile. */
static jr_status timed_steps(jr_model *m, jr_acts *a, jr_adamw *o, const jr_bench_train_opts *bo, const int32_t *ids,
                             float *lp, double *t_total, double *loss) {
    int B = bo->batch, T = bo->seq, N = B * T;
    jr_status st = JR_OK;
    *t_total = *loss = 0;
    for (int s = 0; s < bo->warmup + bo->steps; s++) {
        if (s == bo->warmup) { jr_nn_profile.enabled = 1; jr_nn_profile.matmul_s = jr_nn_profile.matmul_flops = 0; }
        double t0 = jr_now_s(), nll;
        long cnt;
        jr_model_zero_grads(m);
        st = jr_model_nll(m, a, ids, ids + N, B, T, 1.0f / (float)N, lp, &nll, &cnt);
        if (st) break;
        jr_clip_grad_norm(m, 1.0);
        jr_adamw_step(o, m, 1e-4);
        if (s >= bo->warmup) *t_total += jr_now_s() - t0;
        *loss = nll / cnt;
    }
    jr_nn_profile.enabled = 0;
    return st;
}

static json_t *train_figures(const jr_model *m, const jr_acts *a, const jr_bench_train_opts *o, double t_total, double loss) {
    int B = o->batch, T = o->seq, N = B * T, steps = o->steps;
    double flops = jr_model_train_flops(m, B, T) * steps;
    double peak = gemm_peak(m->compute, o->gemm_n);
    char impl[64] = "openblas sgemm";
    if (m->compute == JR_COMPUTE_BF16) jr_matmul_bf16_impl(impl, sizeof impl, N, m->cfg.hidden_size, m->cfg.intermediate_size);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
    json_t *j = json_pack("{s:s, s:I, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:s, s:f}",
                          "model", o->model ? o->model : o->config, "params", (json_int_t)jr_model_param_count(&m->cfg), "batch", B,
                          "seq", T, "steps", steps, "omp_threads", omp_get_max_threads(), "blas_threads",
                          openblas_get_num_threads(), "step_ms", 1e3 * t_total / steps, "tokens_per_s",
                          (double)N * steps / t_total, "gflops", flops / t_total / 1e9, "matmul_gflops",
                          jr_nn_profile.matmul_s > 0 ? jr_nn_profile.matmul_flops / jr_nn_profile.matmul_s / 1e9 : 0.0,
                          "matmul_share", jr_nn_profile.matmul_s / t_total, "gemm_peak_gflops", peak, "peak_rss_mb",
                          ru.ru_maxrss / 1024.0, "openblas_coretype", ct ? ct : "", "openblas_l2_size", l2 ? l2 : "",
                          "loss", loss);
    if (!j) return NULL;
    json_object_set_new(j, "compute", json_string(m->compute == JR_COMPUTE_BF16 ? "bfloat16" : "float32"));
    json_object_set_new(j, "onednn_isa", json_string(jr_nn_isa()));
    json_object_set_new(j, "matmul_impl", json_string(impl));
    json_object_set_new(j, "gemm_n", json_integer(o->gemm_n));
    json_object_set_new(j, "logit_rows", json_integer(a->logit_rows));
    json_object_set_new(j, "fused_attention", json_boolean(a->fused));
    json_object_set_new(j, "checkpoint_activations", json_boolean(a->checkpoint));
    return j;
}

jr_status jr_bench_train(const jr_bench_train_opts *o, json_t **out) {
    *out = NULL;
    jr_status st = jr_bench_train_check(o);
    if (st) return st;
    jr_model m;
    jr_model_config c;
    if (o->model) st = jr_model_load(&m, o->model);
    else if (!(st = jr_bench_model_config(o->config, &c))) st = jr_model_init_random(&m, &c, 1, 0.02f);
    if (st) return st;
    m.compute = jr_model_compute_resolve(o->compute);
    jr_acts a;
    jr_adamw opt;
    memset(&a, 0, sizeof a);
    memset(&opt, 0, sizeof opt);
    int N = o->batch * o->seq;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)N * 2);
    float *lp = malloc(sizeof(float) * (size_t)N);
    if (!ids || !lp) st = jr_fail(JR_ENOMEM, "out of memory");
    if (!st) st = jr_model_alloc_grads(&m);
    jr_acts_opts ao = {o->full_logits ? 0 : JR_LOGIT_ROWS_AUTO, !o->unfused_attention, o->checkpoint_activations};
    if (!st) st = jr_acts_init_opts(&a, &m, o->batch, o->seq, &ao);
    if (!st) st = jr_adamw_init(&opt, &m, 0.9, 0.95, 1e-8, 0.1);
    jr_rng r;
    jr_rng_seed(&r, 7);
    for (int i = 0; !st && i < 2 * N; i++) ids[i] = (int32_t)jr_rng_below(&r, (uint64_t)m.cfg.vocab_size);
    double t_total, loss;
    if (!st) st = timed_steps(&m, &a, &opt, o, ids, lp, &t_total, &loss);
    if (!st && !(*out = train_figures(&m, &a, o, t_total, loss))) st = jr_fail(JR_EINTERNAL, "cannot format the result");
    free(ids);
    free(lp);
    jr_acts_free(&a);
    jr_adamw_free(&opt);
    jr_model_free(&m);
    return st;
}
