/* cmd_bench_train.c - `judgerl bench train`: training-step throughput of the engine, as one JSON object */
#include <cblas.h>
#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli/cli.h"
#include "judgerl/clock.h"
#include "judgerl/model.h"
#include "judgerl/nn.h"
#include "judgerl/optim.h"
#include "judgerl/rng.h"

/* The benchmark configs of issue 3: Qwen2 layout, tied embeddings. */
int cli_bench_config(const char *name, jr_model_config *c) {
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
        return -1;
    }
    c->head_dim = c->hidden_size / c->num_attention_heads;
    return 0;
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

static int bench_train(int argc, char **argv);

int cmd_bench_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench train (--model DIR | --config 10m|100m|0.5b) [--batch B] [--seq T] [--steps N] [--warmup W]\n"
               "       [--compute auto|float32|bfloat16] [--gemm-n N] [--full-logits] [--unfused-attention]\n"
               "       [--checkpoint-activations]\n"
               "Times full training steps (forward, backward, clipping, AdamW) on random tokens and prints one JSON\n"
               "object: tokens_per_s, step_ms, gflops (model FLOPs / time), matmul_gflops and matmul_share (sgemm\n"
               "phases), gemm_peak_gflops (an N^3 product, default 2048, through the engine's matmul in the same compute\n"
               "type), compute (float32 or bfloat16; auto = bfloat16 on CPUs with bf16 units), onednn_isa and\n"
               "matmul_impl (oneDNN's kernel), logit_rows (logits held at once: chunks of 64 MiB as the trainers\n"
               "use, or every row with --full-logits), fused_attention (as the trainers; off: the T x T\n"
               "probabilities kept, --unfused-attention), checkpoint_activations (each layer recomputed in the backward, as\n"
               "trainer.checkpoint_activations), peak_rss_mb, thread counts and the OPENBLAS_* settings. Threads: OMP_NUM_THREADS. bench/train_vs_torch.sh compares with PyTorch.\n");
        return CLI_OK;
    }
    return bench_train(argc, argv);
}

static int bench_train(int argc, char **argv) {
    const char *model = NULL, *cname = NULL;
    const char *cn = "auto";
    int B = 8, T = 256, steps = 5, warm = 1, gemm_n = 2048, full_logits = 0, unfused = 0, ckpt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--full-logits")) { full_logits = 1; continue; }
        if (!strcmp(a, "--unfused-attention")) { unfused = 1; continue; }
        if (!strcmp(a, "--checkpoint-activations")) { ckpt = 1; continue; }
        if (i + 1 >= argc) return cli_usage("bench train", "%s needs a value (see --help)", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--config")) cname = v;
        else if (!strcmp(a, "--batch")) B = atoi(v);
        else if (!strcmp(a, "--seq")) T = atoi(v);
        else if (!strcmp(a, "--steps")) steps = atoi(v);
        else if (!strcmp(a, "--warmup")) warm = atoi(v);
        else if (!strcmp(a, "--compute")) cn = v;
        else if (!strcmp(a, "--gemm-n")) gemm_n = atoi(v);
        else return cli_usage("bench train", "unknown option '%s'", a);
    }
    if ((model != NULL) == (cname != NULL)) return cli_usage("bench train", "give one of --model DIR or --config 10m|100m|0.5b");
    if (B < 1 || T < 2 || steps < 1 || warm < 0 || gemm_n < 16)
        return cli_usage("bench train", "--batch, --seq, --steps must be positive, --gemm-n at least 16");
    if (strcmp(cn, "auto") && strcmp(cn, "float32") && strcmp(cn, "bfloat16"))
        return cli_usage("bench train", "--compute: unknown '%s' (auto, float32 or bfloat16)", cn);
    jr_model m;
    jr_status st;
    if (model) {
        st = jr_model_load(&m, model);
    } else {
        jr_model_config c;
        if (cli_bench_config(cname, &c)) return cli_usage("bench train", "--config: unknown '%s' (10m, 100m or 0.5b)", cname);
        st = jr_model_init_random(&m, &c, 1, 0.02f);
    }
    if (st) return cli_fail("bench train", st);
    m.compute = jr_model_compute_resolve(cn);
    jr_acts a;
    jr_adamw o;
    memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    int N = B * T;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)N * 2);
    float *lp = malloc(sizeof(float) * (size_t)N);
    if (!ids || !lp) st = jr_fail(JR_ENOMEM, "out of memory");
    if (!st) st = jr_model_alloc_grads(&m);
    if (!st) st = jr_acts_init_opts(&a, &m, B, T, &(jr_acts_opts){full_logits ? 0 : JR_LOGIT_ROWS_AUTO, !unfused, ckpt});
    if (!st) st = jr_adamw_init(&o, &m, 0.9, 0.95, 1e-8, 0.1);
    if (st) { free(ids); free(lp); jr_acts_free(&a); jr_model_free(&m); return cli_fail("bench train", st); }
    jr_rng r;
    jr_rng_seed(&r, 7);
    for (int i = 0; i < 2 * N; i++) ids[i] = (int32_t)jr_rng_below(&r, (uint64_t)m.cfg.vocab_size);
    double t_total = 0, loss = 0;
    for (int s = 0; s < warm + steps; s++) {
        if (s == warm) { jr_nn_profile.enabled = 1; jr_nn_profile.matmul_s = jr_nn_profile.matmul_flops = 0; }
        double t0 = jr_now_s(), nll;
        long cnt;
        jr_model_zero_grads(&m);
        st = jr_model_nll(&m, &a, ids, ids + N, B, T, 1.0f / (float)N, lp, &nll, &cnt);
        if (st) break;
        jr_clip_grad_norm(&m, 1.0);
        jr_adamw_step(&o, &m, 1e-4);
        if (s >= warm) t_total += jr_now_s() - t0;
        loss = nll / cnt;
    }
    jr_nn_profile.enabled = 0;
    if (st) { free(ids); free(lp); jr_acts_free(&a); jr_adamw_free(&o); jr_model_free(&m); return cli_fail("bench train", st); }
    double flops = jr_model_train_flops(&m, B, T) * steps;
    double peak = gemm_peak(m.compute, gemm_n);
    char impl[64] = "openblas sgemm";
    if (m.compute == JR_COMPUTE_BF16) jr_matmul_bf16_impl(impl, sizeof impl, N, m.cfg.hidden_size, m.cfg.intermediate_size);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
    json_t *j = json_pack("{s:s, s:I, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:s, s:f}",
                          "model", model ? model : cname, "params", (json_int_t)jr_model_param_count(&m.cfg), "batch", B,
                          "seq", T, "steps", steps, "omp_threads", omp_get_max_threads(), "blas_threads",
                          openblas_get_num_threads(), "step_ms", 1e3 * t_total / steps, "tokens_per_s",
                          (double)N * steps / t_total, "gflops", flops / t_total / 1e9, "matmul_gflops",
                          jr_nn_profile.matmul_s > 0 ? jr_nn_profile.matmul_flops / jr_nn_profile.matmul_s / 1e9 : 0.0,
                          "matmul_share", jr_nn_profile.matmul_s / t_total, "gemm_peak_gflops", peak, "peak_rss_mb",
                          ru.ru_maxrss / 1024.0, "openblas_coretype", ct ? ct : "", "openblas_l2_size", l2 ? l2 : "",
                          "loss", loss);
    json_object_set_new(j, "compute", json_string(m.compute == JR_COMPUTE_BF16 ? "bfloat16" : "float32"));
    json_object_set_new(j, "onednn_isa", json_string(jr_nn_isa()));
    json_object_set_new(j, "matmul_impl", json_string(impl));
    json_object_set_new(j, "gemm_n", json_integer(gemm_n));
    json_object_set_new(j, "logit_rows", json_integer(a.logit_rows));
    json_object_set_new(j, "fused_attention", json_boolean(a.fused));
    json_object_set_new(j, "checkpoint_activations", json_boolean(a.checkpoint));
    char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    if (!txt) { json_decref(j); jr_acts_free(&a); jr_adamw_free(&o); jr_model_free(&m); free(ids); free(lp); return cli_fail("bench train", jr_fail(JR_EINTERNAL, "cannot format the result")); }
    printf("%s\n", txt);
    free(txt);
    json_decref(j);
    free(ids); free(lp);
    jr_acts_free(&a); jr_adamw_free(&o); jr_model_free(&m);
    return CLI_OK;
}

