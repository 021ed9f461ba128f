/* cmd_bench.c - `judgerl bench grade|train|generate|memory`: argument handling for the benchmarks
 * (src/bench/, bench.h); each prints one JSON object of figures */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/bench.h"

/* Prints a benchmark's figures *j (dump flags fl) or its error: the exit code. */
static int print_figures(const char *cmd, jr_status st, json_t **j, size_t fl) {
    if (st) return cli_fail(cmd, st);
    char *txt = json_dumps(*j, fl);
    json_decref(*j);
    if (!txt) return cli_fail(cmd, jr_fail(JR_EINTERNAL, "cannot format the result"));
    printf("%s\n", txt);
    free(txt);
    return CLI_OK;
}

static int bench_generate(int argc, char **argv) {
    const char *cmd = "bench generate";
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench generate (--model DIR | --config 10m|100m|0.5b) [--batch B] [--prompt P] [--tokens N] [--save DIR]\n"
               "         [--compute auto|float32|bfloat16] [--kv-cache float32|bfloat16] [--deterministic 1|0]\n"
               "         [--long-prompt L [--prefill-chunk TOKENS] [--itl-target R]]\n"
               "Prefills B random prompts of P tokens into a KV cache, then decodes N tokens for all B at once\n"
               "(sampling at temperature 1); prints prefill/decode tokens per second (wall clock and per CPU\n"
               "second), decode_step_ms and the sampler's share. --save DIR also writes the (random) model as an\n"
               "HF directory. Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS. With bf16 weights, fp32 on\n"
               "AVX-512 or --deterministic 0 the B prompts are prefilled in one batched pass, else one at a\n"
               "time; the same prefill and one decode step run once untimed first (a warm-up).\n"
               "--long-prompt L: then B sequences decode while one L-token prompt arrives (the serve case): the\n"
               "step time (inter-token latency) before it and while it is prefilled, --prefill-chunk prompt\n"
               "tokens per step (default 256; 0 = whole prompts), --itl-target R (default 0: off) takes fewer\n"
               "per step, as many as keep a step within R x the decode-only step time (as judgerl serve).\n" CLI_KV_USAGE);
        return CLI_OK;
    }
    jr_bench_generate_opts o = jr_bench_generate_opts_default();
    cli_kv_args kva = {0};
    long batch = o.batch, prompt = o.prompt, tokens = o.tokens, long_prompt = o.long_prompt, chunk = o.prefill_chunk;
    const jr_arg spec[] = {
        JR_ARG_S("--model", &o.model), JR_ARG_S("--config", &o.config), JR_ARG_S("--save", &o.save),
        JR_ARG_L("--batch", &batch, 1, 1 << 20), JR_ARG_L("--prompt", &prompt, 1, 1 << 20),
        JR_ARG_L("--tokens", &tokens, 1, 1 << 20), JR_ARG_L("--long-prompt", &long_prompt, 0, 1 << 20),
        JR_ARG_L("--prefill-chunk", &chunk, 0, 1 << 20), JR_ARG_D("--itl-target", &o.itl_target, 0, 100),
        JR_ARG_S("--compute", &kva.compute), JR_ARG_S("--kv-cache", &kva.kv_cache),
        JR_ARG_S("--deterministic", &kva.deterministic), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unknown option '%s' (see judgerl bench generate --help)");
    if (rc) return rc;
    o.batch = (int)batch, o.prompt = (int)prompt, o.tokens = (int)tokens, o.long_prompt = (int)long_prompt;
    o.prefill_chunk = (int)chunk;
    if ((rc = cli_kv_opts(cmd, &kva, &o.kv))) return rc;
    if (jr_bench_generate_check(&o)) return cli_usage(cmd, "%s", jr_errmsg());
    json_t *j;
    return print_figures(cmd, jr_bench_generate(&o, &j), &j, JSON_COMPACT | JSON_REAL_PRECISION(6));
}

static int bench_train(int argc, char **argv) {
    const char *cmd = "bench train";
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
    jr_bench_train_opts o = jr_bench_train_opts_default();
    long batch = o.batch, seq = o.seq, steps = o.steps, warmup = o.warmup, gemm_n = o.gemm_n;
    const jr_arg spec[] = {
        JR_ARG_S("--model", &o.model), JR_ARG_S("--config", &o.config), JR_ARG_S("--compute", &o.compute),
        JR_ARG_L("--batch", &batch, 1, 1 << 20), JR_ARG_L("--seq", &seq, 2, 1 << 20), JR_ARG_L("--steps", &steps, 1, 1 << 20),
        JR_ARG_L("--warmup", &warmup, 0, 1 << 20), JR_ARG_L("--gemm-n", &gemm_n, 16, 1 << 16),
        JR_ARG_B("--full-logits", &o.full_logits, 1), JR_ARG_B("--unfused-attention", &o.unfused_attention, 1),
        JR_ARG_B("--checkpoint-activations", &o.checkpoint_activations, 1), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unknown option '%s' (see judgerl bench train --help)");
    if (rc) return rc;
    o.batch = (int)batch, o.seq = (int)seq, o.steps = (int)steps, o.warmup = (int)warmup, o.gemm_n = (int)gemm_n;
    if (jr_bench_train_check(&o)) return cli_usage(cmd, "%s", jr_errmsg());
    json_t *j;
    return print_figures(cmd, jr_bench_train(&o, &j), &j, JSON_COMPACT | JSON_REAL_PRECISION(6));
}

static int bench_grade(int argc, char **argv) {
    const char *cmd = "bench grade";
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench grade [--latency-ms 100] [--levels 1,16,64,256] [--per-level 20] [--min 30]\n"
               "                           [--python /usr/bin/python3 | --python none] [--script bench/grade_python.py]\n"
               "Starts a loopback judge server (libmicrohttpd, every answer after the fixed latency) in a child\n"
               "process, grades max(level*per-level, min) pointwise rows at each in-flight level with judgerl's\n"
               "client, then the same with the Python ThreadPoolExecutor + urllib client, and prints one JSON\n"
               "object: requests/s, share of the ideal (in-flight / latency) and client CPU per request.\n");
        return CLI_OK;
    }
    jr_bench_grade_opts o = jr_bench_grade_opts_default();
    long latency = o.latency_ms, per_level = o.per_level, min = o.min_requests;
    const jr_arg spec[] = {
        JR_ARG_L("--latency-ms", &latency, 0, 1 << 20), JR_ARG_L("--per-level", &per_level, 1, 1 << 16),
        JR_ARG_L("--min", &min, 1, 1 << 20), JR_ARG_S("--levels", &o.levels), JR_ARG_S("--python", &o.python),
        JR_ARG_S("--script", &o.script), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unknown option '%s' (see judgerl bench grade --help)");
    if (rc) return rc;
    o.latency_ms = (int)latency, o.per_level = (int)per_level, o.min_requests = (int)min;
    if (jr_bench_grade_check(&o)) return cli_usage(cmd, "%s", jr_errmsg());
    json_t *j;
    return print_figures(cmd, jr_bench_grade(&o, &j), &j, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(5));
}

static int bench_memory(int argc, char **argv) {
    const char *cmd = "bench memory";
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench memory [--mib 512] [--reps 5]\n"
               "Reads a buffer of --mib MiB (far larger than the caches) --reps times with the OpenMP threads\n"
               "(OMP_NUM_THREADS) and prints the best and median read bandwidth in GB/s (10^9 bytes/s) of wall\n"
               "time and of CPU time (per thread, times the threads: what the reads get while they run on a\n"
               "shared machine, comparable with bench generate's decode_cpu figures with one thread): the\n"
               "bound of a decode step that streams every weight once (tokens/s <= GB/s / GB of weights).\n");
        return CLI_OK;
    }
    long mib = 512, reps = 5;
    const jr_arg spec[] = {JR_ARG_L("--mib", &mib, 1, 1 << 30), JR_ARG_L("--reps", &reps, 1, 1 << 20), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unknown option '%s' (see judgerl bench memory --help)");
    if (rc) return rc;
    json_t *j;
    return print_figures(cmd, jr_bench_memory(mib, reps, &j), &j, JSON_COMPACT | JSON_REAL_PRECISION(6));
}

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "grade")) return bench_grade(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train")) return bench_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "generate")) return bench_generate(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "memory")) return bench_memory(argc - 1, argv + 1);
    if (argc < 2 || cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench grade|train|generate|memory [...]   (judgerl bench NAME --help)\n"
               "Runs a benchmark and prints one JSON object of figures.\n");
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    return cli_usage("bench", "unknown benchmark '%s' (known: grade, train, generate, memory)", argv[1]);
}
