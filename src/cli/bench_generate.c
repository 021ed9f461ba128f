/* bench_generate.c - `judgerl bench generate`: KV-cache prefill and decode throughput, as one JSON object */
#include <cblas.h>
#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "judgerl/clock.h"
#include "judgerl/generate.h"
#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/rng.h"
#include "judgerl/sampler.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The serve scenario of issue 23: B sequences decode, then one request with an L-token prompt arrives.
 * Step times (= every running sequence's inter-token latency) before it (median of 8 steps) and while
 * its prompt is prefilled (mean, median and max), with `chunk` prompt tokens per step (0 = whole). */
static jr_status interference(const jr_model *m, const jr_kv_opts *kvo, int B, int P, int L, int chunk, double itl,
                               json_t *out) {
    int V = m->cfg.vocab_size;
    jr_lm lm;
    jr_status st = jr_kv_lm_open_opts(&lm, m, B + 1, L + P + 64, kvo);
    if (st) return st;
    const char **bytes = calloc((size_t)V, sizeof *bytes);
    int32_t *lens = calloc((size_t)V, sizeof *lens), *prompt = malloc(sizeof(int32_t) * (size_t)(L > P ? L : P));
    jr_gen *g = NULL;
    jr_gen_req *r = NULL;
    if (!bytes || !lens || !prompt) st = jr_fail(JR_ENOMEM, "out of memory");
    jr_gen_vocab voc = {{V, bytes, lens}, NULL, 0};
    if (!st) st = jr_gen_open(&g, &lm, &voc, 1);
    if (!st) jr_gen_set_prefill_chunk(g, chunk);
    if (!st) jr_gen_set_itl_target(g, itl);
    jr_gen_params p = jr_gen_params_default();
    p.sample.temperature = 1.0f;
    p.max_tokens = L + 60;
    p.ignore_eos = 1;
    for (int i = 0; i < (L > P ? L : P) && !st; i++) prompt[i] = (int32_t)((i * 7919 + 13) % V);
    for (int b = 0; b < B && !st; b++) {
        prompt[0] = b;
        st = jr_gen_add(g, prompt, P, 1, &p, NULL, NULL, &r);
    }
    double before[8], cbefore[8], cpu_during = 0, during_sum = 0, during_max = 0, *during = malloc(sizeof(double) * (size_t)(L + 64));
    int n_during = 0, n_side[2] = {0, 0};
    double side[2] = {0, 0}; /* wall time of the steps with / without prompt tokens while the prompt goes in */
    if (!during) st = jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; i < 4 && !st; i++) st = jr_gen_step(g); /* every short prompt in */
    for (int i = 0; i < 8 && !st; i++) {
        double t0 = jr_now_s(), c0 = jr_cpu_s();
        st = jr_gen_step(g);
        before[i] = jr_now_s() - t0;
        cbefore[i] = jr_cpu_s() - c0;
    }
    prompt[0] = B;
    if (!st) st = jr_gen_add(g, prompt, L, 1, &p, NULL, NULL, &r);
    while (!st && jr_gen_req_seq(r, 0)->n_tokens == 0) {
        double t0 = jr_now_s(), c0 = jr_cpu_s();
        st = jr_gen_step(g);
        double d = jr_now_s() - t0;
        cpu_during += jr_cpu_s() - c0;
        int idle = jr_gen_last_prefill_tokens(g) == 0; /* a decode-only step at the same contexts */
        side[idle] += d;
        n_side[idle]++;
        during_sum += d;
        if (d > during_max) during_max = d;
        if (n_during < L + 64) during[n_during] = d;
        n_during++;
    }
    if (!st) {
        qsort(before, 8, sizeof *before, cmp_d);
        qsort(cbefore, 8, sizeof *cbefore, cmp_d);
        /* CPU time per step: the work, without the waits for a core on a shared machine */
        json_object_set_new(out, "itl_cpu_ms_before", json_real(1e3 * 0.5 * (cbefore[3] + cbefore[4])));
        json_object_set_new(out, "itl_cpu_ms_during_mean", json_real(1e3 * cpu_during / n_during));
        /* The running sequences' contexts grow while the prompt goes in, and so does a decode-only
         * step: the steps that took prompt tokens against those that took none, in the same span */
        if (n_side[0] && n_side[1]) {
            json_object_set_new(out, "itl_ms_during_with_prompt", json_real(1e3 * side[0] / n_side[0]));
            json_object_set_new(out, "itl_ms_during_decode_only", json_real(1e3 * side[1] / n_side[1]));
            json_object_set_new(out, "itl_with_prompt_over_decode_only", json_real(side[0] / n_side[0] / (side[1] / n_side[1])));
        }
        double med = 0.5 * (before[3] + before[4]);
        json_object_set_new(out, "long_prompt", json_integer(L));
        json_object_set_new(out, "prefill_chunk", json_integer(chunk));
        json_object_set_new(out, "itl_target", json_real(itl));
        json_object_set_new(out, "itl_ms_before", json_real(1e3 * med));
        json_object_set_new(out, "itl_ms_during_mean", json_real(1e3 * during_sum / n_during));
        json_object_set_new(out, "itl_ms_during_max", json_real(1e3 * during_max));
        int nd = n_during < L + 64 ? n_during : L + 64;
        qsort(during, (size_t)nd, sizeof *during, cmp_d);
        json_object_set_new(out, "itl_ms_during_median", json_real(1e3 * 0.5 * (during[(nd - 1) / 2] + during[nd / 2])));
        json_object_set_new(out, "itl_during_median_over_before", json_real(0.5 * (during[(nd - 1) / 2] + during[nd / 2]) / med));
        json_object_set_new(out, "itl_during_mean_over_before", json_real(during_sum / n_during / med));
        json_object_set_new(out, "long_prompt_steps", json_integer(n_during));
        json_object_set_new(out, "long_prompt_ttft_s", json_real(during_sum));
    }
    if (g) jr_gen_close(g);
    free(during);
    free(bytes);
    free(lens);
    free(prompt);
    jr_kv_lm_close(&lm);
    return st;
}

int cmd_bench_generate(int argc, char **argv) {
    const char *cmd = "bench generate", *model = NULL, *cname = NULL, *save = NULL;
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench generate (--model DIR | --config 10m|100m|0.5b) [--batch B] [--prompt P] [--tokens N] [--save DIR]\n"
               "         [--compute auto|float32|bfloat16] [--kv-cache float32|bfloat16] [--deterministic 1|0]\n"
               "         [--long-prompt L [--prefill-chunk TOKENS] [--itl-target R]]\n"
               "Prefills B random prompts of P tokens into a KV cache, then decodes N tokens for all B at once\n"
               "(sampling at temperature 1); prints prefill/decode tokens per second (wall clock and per CPU\n"
               "second), decode_step_ms and the sampler's share. --save DIR also writes the (random) model as an\n"
               "HF directory. Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS. With bf16 weights (or\n"
               "--deterministic 0) the B prompts are prefilled in one batched pass, else one at a time.\n"
               "--long-prompt L: then B sequences decode while one L-token prompt arrives (the serve case): the\n"
               "step time (inter-token latency) before it and while it is prefilled, --prefill-chunk prompt\n"
               "tokens per step (default 256; 0 = whole prompts), --itl-target R (default 0: off) takes fewer\n"
               "per step, as many as keep a step within R x the decode-only step time (as judgerl serve).\n" CLI_KV_USAGE);
        return CLI_OK;
    }
    int B = 8, P = 64, N = 64, L = 0, chunk = JR_GEN_PREFILL_CHUNK;
    double itl = 0;
    cli_kv_args kva = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) return cli_usage(cmd, "%s needs a value (see judgerl bench --help)", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--config")) cname = v;
        else if (!strcmp(a, "--batch")) B = atoi(v);
        else if (!strcmp(a, "--prompt")) P = atoi(v);
        else if (!strcmp(a, "--tokens")) N = atoi(v);
        else if (!strcmp(a, "--save")) save = v;
        else if (!strcmp(a, "--long-prompt")) L = atoi(v);
        else if (!strcmp(a, "--prefill-chunk")) chunk = atoi(v);
        else if (!strcmp(a, "--itl-target")) itl = atof(v);
        else if (!strcmp(a, "--compute")) kva.compute = v;
        else if (!strcmp(a, "--kv-cache")) kva.kv_cache = v;
        else if (!strcmp(a, "--deterministic")) kva.deterministic = v;
        else return cli_usage(cmd, "unknown option '%s'", a);
    }
    if ((model != NULL) == (cname != NULL)) return cli_usage(cmd, "give one of --model DIR or --config 10m|100m|0.5b");
    if (B < 1 || P < 1 || N < 1) return cli_usage(cmd, "--batch, --prompt, --tokens must be positive");
    if (L < 0 || chunk < 0) return cli_usage(cmd, "--long-prompt and --prefill-chunk must be >= 0");
    if (!(itl == 0 || (itl > 1 && itl <= 100))) return cli_usage(cmd, "--itl-target: expected 0 (off) or a ratio in (1, 100]");
    jr_kv_opts kvo;
    int rc = cli_kv_opts(cmd, &kva, &kvo);
    if (rc) return rc;
    jr_model m;
    jr_status st;
    if (model) st = kvo.weights == JR_COMPUTE_BF16 ? jr_model_load_bf16(&m, model) : jr_model_load(&m, model); /* as serve */
    else {
        jr_model_config c;
        if (cli_bench_config(cname, &c)) return cli_usage(cmd, "--config: unknown '%s' (10m, 100m or 0.5b)", cname);
        st = jr_model_init_random(&m, &c, 1, 0.02f);
    }
    if (!st && save) st = jr_model_save(&m, save, NULL); /* the benchmark model, e.g. for bench/serve_load.py */
    if (st) return cli_fail(cmd, st);
    jr_lm lm;
    if ((st = jr_kv_lm_open_opts(&lm, &m, B, P + N + 1, &kvo))) { jr_model_free(&m); return cli_fail(cmd, st); }
    int V = lm.n_logits;
    float *logits = malloc(sizeof(float) * (size_t)V * (size_t)B);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)P), *toks = malloc(sizeof(int32_t) * (size_t)B);
    int *slots = malloc(sizeof(int) * (size_t)B);
    jr_sample_scratch w = {0};
    jr_sample_params sp = jr_sample_params_default();
    jr_rng r;
    jr_rng_seed(&r, 3);
    if (!logits || !prompt || !toks || !slots) st = jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; !st && i < P; i++) prompt[i] = (int32_t)jr_rng_below(&r, (uint64_t)m.cfg.vocab_size);
    /* Prefill: the B prompts in one batched pass when the lm batches (jr_lm.batch_prefill), else each
     * on its own (as requests arrive); then decode B rows per step. */
    int32_t *prompts = malloc(sizeof(int32_t) * (size_t)P * (size_t)B);
    const int32_t **pp = malloc(sizeof *pp * (size_t)B);
    int *ns = malloc(sizeof(int) * (size_t)B), *starts = calloc((size_t)B, sizeof(int));
    if (!prompts || !pp || !ns || !starts) st = jr_fail(JR_ENOMEM, "out of memory");
    for (int b = 0; !st && b < B; b++) {
        memcpy(prompts + (size_t)b * P, prompt, sizeof(int32_t) * (size_t)P);
        prompts[(size_t)b * P] = b;
        pp[b] = prompts + (size_t)b * P;
        ns[b] = P;
        slots[b] = b;
    }
    double t0 = jr_now_s(), c0 = jr_cpu_s();
    if (!st && lm.batch_prefill) st = lm.extend(lm.impl, B, slots, pp, ns, starts, logits);
    for (int b = 0; !st && !lm.batch_prefill && b < B; b++) st = lm.prefill(lm.impl, b, pp[b], P, logits + (size_t)b * V);
    double t_prefill = jr_now_s() - t0, c_prefill = jr_cpu_s() - c0, t_sample = 0;
    for (int b = 0; !st && b < B; b++) st = jr_sample(logits + (size_t)b * V, V, &sp, NULL, &r, &w, &toks[b]);
    t0 = jr_now_s();
    c0 = jr_cpu_s();
    for (int s = 0; !st && s < N; s++) {
        st = lm.decode(lm.impl, B, slots, toks, logits);
        double ts = jr_now_s();
        for (int b = 0; !st && b < B; b++) st = jr_sample(logits + (size_t)b * V, V, &sp, NULL, &r, &w, &toks[b]);
        t_sample += jr_now_s() - ts;
    }
    double t_decode = jr_now_s() - t0, c_decode = jr_cpu_s() - c0;
    if (!st) {
        const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
        char kdesc[160];
        json_t *j = json_pack("{s:s,s:s,s:b,s:I,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:s}", "model",
                              model ? model : cname, "compute", jr_kv_lm_describe(&lm, kdesc, sizeof kdesc),
                              "batched_prefill", lm.batch_prefill, "params",
                              (json_int_t)jr_model_param_count(&m.cfg), "batch", B, "prompt", P, "tokens", N, "omp_threads",
                              omp_get_max_threads(), "blas_threads", openblas_get_num_threads(), "prefill_tokens_per_s",
                              (double)B * P / t_prefill, "decode_tokens_per_s", (double)B * N / t_decode, "decode_step_ms",
                              1e3 * t_decode / N, "prefill_cpu_tokens_per_s", (double)B * P / c_prefill,
                              "decode_cpu_tokens_per_s", (double)B * N / c_decode, "decode_cpu_step_ms", 1e3 * c_decode / N,
                              "sample_share", t_sample / t_decode, "openblas_coretype", ct ? ct : "",
                              "openblas_l2_size", l2 ? l2 : "");
        if (L > 0) st = interference(&m, &kvo, B, P, L, chunk, itl, j);
        char *txt = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (!st) printf("%s\n", txt);
        free(txt);
        json_decref(j);
    }
    free(logits); free(prompt); free(toks); free(slots); free(prompts); free(pp); free(ns); free(starts);
    jr_sample_scratch_free(&w);
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
    return st ? cli_fail(cmd, st) : CLI_OK;
}
