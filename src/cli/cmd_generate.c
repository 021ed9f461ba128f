/* cmd_generate.c - `judgerl generate`: batched sampling from a model directory into JSONL */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/genrows.h"

static const char *usage_text =
    "usage: judgerl generate --model DIR (--prompt TEXT | --chat FILE.json | --input PROMPTS.jsonl --output OUT.jsonl)\n"
    "         [--n N] [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S]\n"
    "         [--stop TEXT]... [--logprobs K] [--choice TEXT]... [--regex RE] [--ignore-eos]\n"
    "         [--tokenizer auto|byte|PATH] [--parallel SLOTS] [--ctx POSITIONS]\n"
    "         [--compute auto|float32|bfloat16] [--kv-cache float32|bfloat16] [--deterministic 1|0]\n"
    "  --prompt: one completions prompt; --chat: a JSON list of {role, content} messages;\n"
    "  --input: JSONL rows with \"prompt\" (text) or \"messages\" (chat). Each row gets n output rows\n"
    "  (the input fields plus id, prompt_id, sample, response, tokens, finish_reason, prompt_tokens,\n"
    "  logprobs when --logprobs is given; prompt_id is the input's id, else its 0-based row index; id is\n"
    "  prompt_id with --n 1, else \"PROMPT_ID-SAMPLE\"), so `judgerl grade` takes OUT.jsonl as it is.\n"
    "  Without --output the rows go to stdout. Sampling defaults come from the\n"
    "  model's generation_config.json, else temperature 1, top_p 1.\n" CLI_KV_USAGE;

int cmd_generate(int argc, char **argv) {
    const char *cmd = "generate";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const char *model = NULL, *prompt = NULL, *chat = NULL, *input = NULL, *regex = NULL, *stops[16], *choices[64];
    jr_generate_opts o = {.tokenizer = "auto", .out = stdout, .log = stderr, .prefix = "judgerl generate: "};
    /* NAN / -1: the model's default */
    double temperature = NAN, top_p = NAN, min_p = 0;
    long n = 1, max_tokens = 256, top_k = -1, seed = 0, logprobs = -1, parallel = 8, ctx = 0;
    int n_stop = 0, n_choice = 0, ignore_eos = 0;
    cli_kv_args kv = {0};
    const jr_arg spec[] = {
        JR_ARG_S("--model", &model), JR_ARG_S("--tokenizer", &o.tokenizer), JR_ARG_S("--prompt", &prompt),
        JR_ARG_S("--chat", &chat), JR_ARG_S("--input", &input), JR_ARG_S("--output", &o.output),
        JR_ARG_S("--regex", &regex), JR_ARG_S("--compute", &kv.compute), JR_ARG_S("--kv-cache", &kv.kv_cache),
        JR_ARG_S("--deterministic", &kv.deterministic), JR_ARG_M("--stop", stops, &n_stop, 16, 0),
        JR_ARG_M("--choice", choices, &n_choice, 64, 0), JR_ARG_L("--n", &n, 1, 256),
        JR_ARG_L("--max-tokens", &max_tokens, 1, 1 << 20), JR_ARG_D("--temperature", &temperature, 0, 100),
        JR_ARG_D("--top-p", &top_p, 1e-9, 1), JR_ARG_L("--top-k", &top_k, 0, 1 << 30), JR_ARG_D("--min-p", &min_p, 0, 1),
        JR_ARG_L("--seed", &seed, 0, 1L << 53), JR_ARG_L("--logprobs", &logprobs, 0, 20),
        JR_ARG_L("--parallel", &parallel, 1, 1024), JR_ARG_L("--ctx", &ctx, 2, 1 << 20),
        JR_ARG_B("--ignore-eos", &ignore_eos, 1), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unknown argument '%s' (see judgerl generate --help)");
    if (rc) return rc;
    if (!model) return cli_usage(cmd, "--model DIR is required (see judgerl generate --help)");
    if (!!prompt + !!chat + !!input != 1) return cli_usage(cmd, "give exactly one of --prompt, --chat, --input");
    if (n_choice && regex) return cli_usage(cmd, "give --choice or --regex, not both");
    if ((rc = cli_kv_opts(cmd, &kv, &o.kv))) return rc;
    o.model = model;
    jr_genrows_opts *g = &o.rows;
    *g = (jr_genrows_opts){.n = (int)n, .max_tokens = (int)max_tokens, .temperature = temperature, .top_p = top_p,
                           .top_k = (int)top_k, .min_p = min_p, .seed = (uint64_t)seed, .stops = stops, .n_stop = n_stop,
                           .choices = choices, .n_choice = n_choice, .regex = regex, .ignore_eos = ignore_eos,
                           .logprobs = (int)logprobs, .parallel = (int)n > (int)parallel ? (int)n : (int)parallel,
                           .ctx = (int)ctx, .source = input};
    json_t *rows = NULL;
    jr_status st = jr_genrows_prompts(prompt, chat, input, &rows);
    if (st == JR_EIO || st == JR_EINVAL) return cli_usage(cmd, "%s%s", input ? "--input " : "", jr_errmsg());
    if (st) return cli_fail(cmd, st);
    st = jr_genrows_generate(&o, rows);
    json_decref(rows);
    return st ? cli_fail(cmd, st) : CLI_OK;
}
