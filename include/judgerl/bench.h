/* bench.h - the engine's benchmarks (`judgerl bench train|generate|grade|memory`): each runs on this machine
 * and returns its figures as one JSON object (the keys are documented in docs/PERFORMANCE.md and in
 * `judgerl bench NAME --help`). Options are plain structs: start from the _default() function, set fields,
 * check with the _check() function (a one-line message naming the option, as the CLI prints it). */
#ifndef JUDGERL_BENCH_H
#define JUDGERL_BENCH_H

#include <jansson.h>

#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/status.h"

/* The benchmark model shapes of issue 3 ("10m", "100m", "0.5b": Qwen2 layout, tied embeddings) into *c:
 * JR_OK, or JR_EINVAL for an unknown name. */
jr_status jr_bench_model_config(const char *name, jr_model_config *c);

/* bench train: full training steps (forward, backward, clipping, AdamW) on random tokens. */
typedef struct jr_bench_train_opts {
    const char *model;   /* an HF model directory, or NULL with `config` */
    const char *config;  /* a jr_bench_model_config name (random weights), or NULL with `model` */
    const char *compute; /* "auto", "float32" or "bfloat16" */
    int batch, seq, steps, warmup, gemm_n;
    int full_logits, unfused_attention, checkpoint_activations;
} jr_bench_train_opts;
jr_bench_train_opts jr_bench_train_opts_default(void);
jr_status jr_bench_train_check(const jr_bench_train_opts *o);
jr_status jr_bench_train(const jr_bench_train_opts *o, json_t **out);

/* bench generate: B prompts of P tokens prefilled into a KV cache, then N tokens decoded for all B;
 * with long_prompt > 0 also the serve case (one long prompt arriving while B sequences decode). */
typedef struct jr_bench_generate_opts {
    const char *model, *config; /* one of them, as jr_bench_train_opts */
    const char *save;           /* write the benchmark model here as an HF directory, or NULL */
    int batch, prompt, tokens, long_prompt, prefill_chunk;
    double itl_target; /* 0 = off, else a ratio in (1, 100] */
    jr_kv_opts kv;
} jr_bench_generate_opts;
jr_bench_generate_opts jr_bench_generate_opts_default(void);
jr_status jr_bench_generate_check(const jr_bench_generate_opts *o);
jr_status jr_bench_generate(const jr_bench_generate_opts *o, json_t **out);

/* bench grade: the judge client's throughput against a loopback server (a child process) answering after
 * a fixed latency, at several in-flight levels, beside a Python client (bench/grade_python.py). */
typedef struct jr_bench_grade_opts {
    int latency_ms, per_level, min_requests;
    const char *levels; /* "1,16,64,256" */
    const char *python; /* the interpreter, or "none" to skip the Python client */
    const char *script; /* grade_python.py, or NULL: bench/grade_python.py beside the running binary's tree */
} jr_bench_grade_opts;
jr_bench_grade_opts jr_bench_grade_opts_default(void);
jr_status jr_bench_grade_check(const jr_bench_grade_opts *o);
jr_status jr_bench_grade(const jr_bench_grade_opts *o, json_t **out);

/* bench memory: streaming-read bandwidth of a `mib` MiB buffer read `reps` times by the OpenMP threads. */
jr_status jr_bench_memory(long mib, long reps, json_t **out);

#endif
