/* bench_generate.c - `judgerl bench generate`: KV-cache prefill and decode throughput, and the serve case
 * (a long prompt arriving while sequences decode) */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/bench.h"
#include "judgerl/clock.h"
#include "judgerl/generate.h"
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

/* The B prompts' prefill, timed (wall and CPU seconds), after a warm-up (as llama-batched-bench's):
 * the same prefill and one decode step untimed, so the first touch of the cache and row buffers and
 * the thread team's start are not counted; the timed prefill starts the slots over from position 0. */
static jr_status prefill_timed(jr_lm *lm, int B, int *slots, const int32_t **pp, int *ns, int *starts, int32_t *toks,
                               float *logits, double *t, double *c) {
    jr_status st = JR_OK;
    double t0 = 0, c0 = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) t0 = jr_now_s(), c0 = jr_cpu_s();
        if (!st && lm->batch_prefill) st = lm->extend(lm->impl, B, slots, pp, ns, starts, logits);
        for (int b = 0; !st && !lm->batch_prefill && b < B; b++)
            st = lm->prefill(lm->impl, b, pp[b], ns[b], logits + (size_t)b * lm->n_logits);
        for (int b = 0; !st && !pass && b < B; b++) toks[b] = pp[b][0];
        if (!st && !pass) st = lm->decode(lm->impl, B, slots, toks, logits);
    }
    *t = jr_now_s() - t0;
    *c = jr_cpu_s() - c0;
    return st;
}

jr_bench_generate_opts jr_bench_generate_opts_default(void) {
    return (jr_bench_generate_opts){.batch = 8, .prompt = 64, .tokens = 64, .prefill_chunk = JR_GEN_PREFILL_CHUNK,
                                    .kv = jr_kv_opts_default()};
}

jr_status jr_bench_generate_check(const jr_bench_generate_opts *o) {
    jr_model_config c;
    if ((o->model != NULL) == (o->config != NULL)) return jr_fail(JR_EINVAL, "give one of --model DIR or --config 10m|100m|0.5b");
    if (o->batch < 1 || o->prompt < 1 || o->tokens < 1) return jr_fail(JR_EINVAL, "--batch, --prompt, --tokens must be positive");
    if (o->long_prompt < 0 || o->prefill_chunk < 0) return jr_fail(JR_EINVAL, "--long-prompt and --prefill-chunk must be >= 0");
    if (!(o->itl_target == 0 || (o->itl_target > 1 && o->itl_target <= 100)))
        return jr_fail(JR_EINVAL, "--itl-target: expected 0 (off) or a ratio in (1, 100]");
    return o->config ? jr_bench_model_config(o->config, &c) : JR_OK;
}

/* Each row's next token from its logits, in parallel over the rows as jr_gen's decode step draws them
 * (each row its own rng, each thread its own scratch). */
static jr_status draw_rows(const float *logits, int V, int B, const jr_sample_params *sp, jr_rng *rr,
                           jr_sample_scratch *w, int nt, int32_t *toks) {
    int bad = 0;
#pragma omp parallel for schedule(static) num_threads(nt) if (B > 1 && nt > 1) reduction(| : bad)
    for (int b = 0; b < B; b++) bad |= jr_sample(logits + (size_t)b * V, V, sp, NULL, &rr[b], &w[omp_get_thread_num()], &toks[b]) != JR_OK;
    return bad ? jr_fail(JR_EINTERNAL, "bench generate: a row's draw failed") : JR_OK;
}

/* Prefill then decode, timed (wall and CPU), into t[6]: prefill wall, prefill CPU, decode wall, decode CPU,
 * sampling wall. The B prompts go in one batched pass when the lm batches (jr_lm.batch_prefill), else each
 * on its own (as requests arrive); then B rows decode per step. */
static jr_status prefill_decode(jr_lm *lm, int vocab, int B, int P, int N, double *t) {
    int V = lm->n_logits;
    float *logits = malloc(sizeof(float) * (size_t)V * (size_t)B);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)P), *toks = malloc(sizeof(int32_t) * (size_t)B);
    int32_t *prompts = malloc(sizeof(int32_t) * (size_t)P * (size_t)B);
    const int32_t **pp = malloc(sizeof *pp * (size_t)B);
    int *slots = malloc(sizeof(int) * (size_t)B), *ns = malloc(sizeof(int) * (size_t)B), *starts = calloc((size_t)B, sizeof(int));
    int nt = omp_get_max_threads();
    jr_sample_scratch *w = calloc((size_t)nt, sizeof *w);
    jr_sample_params sp = jr_sample_params_default();
    jr_rng r, *rr = malloc(sizeof(jr_rng) * (size_t)B); /* a row's own rng, as a sequence's in jr_gen */
    jr_rng_seed(&r, 3);
    jr_status st = JR_OK;
    if (!logits || !prompt || !toks || !slots || !prompts || !pp || !ns || !starts || !w || !rr) st = jr_fail(JR_ENOMEM, "out of memory");
    for (int b = 0; !st && b < B; b++) jr_rng_seed2(&rr[b], 3, (uint64_t)b);
    for (int i = 0; !st && i < P; i++) prompt[i] = (int32_t)jr_rng_below(&r, (uint64_t)vocab);
    for (int b = 0; !st && b < B; b++) {
        memcpy(prompts + (size_t)b * P, prompt, sizeof(int32_t) * (size_t)P);
        prompts[(size_t)b * P] = b;
        pp[b] = prompts + (size_t)b * P;
        ns[b] = P;
        slots[b] = b;
    }
    double t0, c0;
    t[0] = t[1] = t[4] = 0;
    if (!st) st = prefill_timed(lm, B, slots, pp, ns, starts, toks, logits, &t[0], &t[1]);
    if (!st) st = draw_rows(logits, V, B, &sp, rr, w, nt, toks);
    t0 = jr_now_s();
    c0 = jr_cpu_s();
    for (int s = 0; !st && s < N; s++) {
        st = lm->decode(lm->impl, B, slots, toks, logits);
        double ts = jr_now_s();
        if (!st) st = draw_rows(logits, V, B, &sp, rr, w, nt, toks);
        t[4] += jr_now_s() - ts;
    }
    t[2] = jr_now_s() - t0;
    t[3] = jr_cpu_s() - c0;
    free(logits); free(prompt); free(toks); free(slots); free(prompts); free(pp); free(ns); free(starts);
    for (int i = 0; w && i < nt; i++) jr_sample_scratch_free(&w[i]);
    free(w);
    free(rr);
    return st;
}

static jr_status load_model(jr_model *m, const jr_bench_generate_opts *o) {
    jr_model_config c;
    jr_status st;
    if (o->model) /* as serve */
        st = o->kv.weights == JR_COMPUTE_BF16 ? jr_model_load_bf16(m, o->model) : jr_model_load(m, o->model);
    else if (!(st = jr_bench_model_config(o->config, &c))) st = jr_model_init_random(m, &c, 1, 0.02f);
    if (st) return st;
    if (o->save && (st = jr_model_save(m, o->save, NULL))) jr_model_free(m); /* e.g. for bench/serve_load.py */
    return st;
}

jr_status jr_bench_generate(const jr_bench_generate_opts *o, json_t **out) {
    *out = NULL;
    jr_model m;
    jr_status st = jr_bench_generate_check(o);
    if (st || (st = load_model(&m, o))) return st;
    int B = o->batch, P = o->prompt, N = o->tokens;
    jr_lm lm;
    if ((st = jr_kv_lm_open_opts(&lm, &m, B, P + N + 1, &o->kv))) { jr_model_free(&m); return st; }
    double t[5];
    st = prefill_decode(&lm, m.cfg.vocab_size, B, P, N, t);
    if (!st) {
        const char *ct = getenv("OPENBLAS_CORETYPE"), *l2 = getenv("OPENBLAS_L2_SIZE");
        char kdesc[160];
        json_t *j = json_pack("{s:s,s:s,s:b,s:I,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:s}", "model",
                              o->model ? o->model : o->config, "compute", jr_kv_lm_describe(&lm, kdesc, sizeof kdesc),
                              "batched_prefill", lm.batch_prefill, "params", (json_int_t)jr_model_param_count(&m.cfg), "batch", B,
                              "prompt", P, "tokens", N, "omp_threads", omp_get_max_threads(), "blas_threads",
                              openblas_get_num_threads(), "prefill_tokens_per_s", (double)B * P / t[0], "decode_tokens_per_s",
                              (double)B * N / t[2], "decode_step_ms", 1e3 * t[2] / N, "prefill_cpu_tokens_per_s",
                              (double)B * P / t[1], "decode_cpu_tokens_per_s", (double)B * N / t[3], "decode_cpu_step_ms",
                              1e3 * t[3] / N, "sample_share", t[4] / t[2], "openblas_coretype", ct ? ct : "",
                              "openblas_l2_size", l2 ? l2 : "");
        if (!j) st = jr_fail(JR_EINTERNAL, "cannot format the result");
        if (!st && o->long_prompt > 0)
            st = interference(&m, &o->kv, B, P, o->long_prompt, o->prefill_chunk, o->itl_target, j);
        if (st) json_decref(j);
        else *out = j;
    }
    jr_kv_lm_close(&lm);
    jr_model_free(&m);
    return st;
}
