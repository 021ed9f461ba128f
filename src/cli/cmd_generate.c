/* cmd_generate.c - `judgerl generate`: batched sampling from a model directory into JSONL */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/genrows.h"
#include "judgerl/textgen.h"

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

static int parse_num(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || !(d >= lo && d <= hi)) {
        cli_usage(cmd, "%s: expected a number in [%g, %g], got '%s'", flag, lo, hi, v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

/* The command line, as given (NAN / -1: take the model's default). */
typedef struct {
    const char *model, *prompt, *chat, *input, *output, *tokenizer, *regex;
    const char *stops[16], *choices[64];
    int n_stop, n_choice, ignore_eos;
    double n, max_tokens, temperature, top_p, top_k, min_p, seed, logprobs, parallel, ctx;
    cli_kv_args kv;
} gen_args;

/* Fills a from argv; CLI_OK, or the exit code after a usage message. */
static int parse_gen_args(const char *cmd, int argc, char **argv, gen_args *a) {
    *a = (gen_args){.tokenizer = "auto", .n = 1, .max_tokens = 256, .temperature = NAN, .top_p = NAN, .top_k = -1,
                    .min_p = 0, .seed = 0, .logprobs = -1, .parallel = 8, .ctx = 0};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1, bad = 0;
        if (!strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "--tokenizer")) a->tokenizer = v;
        else if (!strcmp(f, "--prompt")) a->prompt = v;
        else if (!strcmp(f, "--chat")) a->chat = v;
        else if (!strcmp(f, "--input")) a->input = v;
        else if (!strcmp(f, "--output")) a->output = v;
        else if (!strcmp(f, "--regex")) a->regex = v;
        else if (!strcmp(f, "--compute")) a->kv.compute = v;
        else if (!strcmp(f, "--kv-cache")) a->kv.kv_cache = v;
        else if (!strcmp(f, "--deterministic")) a->kv.deterministic = v;
        else if (!strcmp(f, "--stop")) { if (a->n_stop == 16) return cli_usage(cmd, "--stop: at most 16"); if (v) a->stops[a->n_stop++] = v; }
        else if (!strcmp(f, "--choice")) { if (a->n_choice == 64) return cli_usage(cmd, "--choice: at most 64"); if (v) a->choices[a->n_choice++] = v; }
        else if (!strcmp(f, "--n")) bad = parse_num(cmd, f, v, 1, 256, &a->n);
        else if (!strcmp(f, "--max-tokens")) bad = parse_num(cmd, f, v, 1, 1 << 20, &a->max_tokens);
        else if (!strcmp(f, "--temperature")) bad = parse_num(cmd, f, v, 0, 100, &a->temperature);
        else if (!strcmp(f, "--top-p")) bad = parse_num(cmd, f, v, 1e-9, 1, &a->top_p);
        else if (!strcmp(f, "--top-k")) bad = parse_num(cmd, f, v, 0, 1 << 30, &a->top_k);
        else if (!strcmp(f, "--min-p")) bad = parse_num(cmd, f, v, 0, 1, &a->min_p);
        else if (!strcmp(f, "--seed")) bad = parse_num(cmd, f, v, 0, 9007199254740992.0, &a->seed);
        else if (!strcmp(f, "--logprobs")) bad = parse_num(cmd, f, v, 0, 20, &a->logprobs);
        else if (!strcmp(f, "--parallel")) bad = parse_num(cmd, f, v, 1, 1024, &a->parallel);
        else if (!strcmp(f, "--ctx")) bad = parse_num(cmd, f, v, 2, 1 << 20, &a->ctx);
        else if (!strcmp(f, "--ignore-eos")) { a->ignore_eos = 1; takes = 0; }
        else return cli_usage(cmd, "unknown argument '%s' (see judgerl generate --help)", f);
        if (bad) return CLI_USAGE;
        if (takes && !v) return cli_usage(cmd, "%s needs a value", f);
        i += takes;
    }
    if (!a->model) return cli_usage(cmd, "--model DIR is required (see judgerl generate --help)");
    if (!!a->prompt + !!a->chat + !!a->input != 1) return cli_usage(cmd, "give exactly one of --prompt, --chat, --input");
    if (a->n_choice && a->regex) return cli_usage(cmd, "give --choice or --regex, not both");
    if ((int)a->n > (int)a->parallel) a->parallel = a->n;
    return CLI_OK;
}

/* The prompts as JSON rows (from --prompt, --chat or --input); CLI_OK, or the exit code after the message. */
static int read_prompt_rows(const char *cmd, const gen_args *a, json_t **rows_out) {
    json_t *rows = NULL;
    if (a->prompt) rows = json_pack("[{s:s}]", "prompt", a->prompt);
    else if (a->chat) {
        json_error_t e;
        json_t *c = json_load_file(a->chat, 0, &e);
        json_t *msgs = json_is_object(c) ? json_object_get(c, "messages") : c;
        if (!json_is_array(msgs)) {
            json_decref(c);
            return cli_usage(cmd, "--chat %s: expected a JSON list of {role, content} messages%s%s", a->chat, c ? "" : ": ", c ? "" : e.text);
        }
        rows = json_pack("[{s:O}]", "messages", msgs);
        json_decref(c);
    } else {
        jr_status st = jr_genrows_read(a->input, &rows);
        if (st == JR_EIO || st == JR_EINVAL) return cli_usage(cmd, "--input %s", jr_errmsg());
        if (st) return cli_fail(cmd, st);
    }
    *rows_out = rows;
    return CLI_OK;
}

/* The sampling options from the flags. */
static void genrows_opts(const gen_args *a, jr_genrows_opts *o) {
    jr_genrows_opts_init(o);
    o->n = (int)a->n;
    o->max_tokens = (int)a->max_tokens;
    o->temperature = a->temperature;
    o->top_p = a->top_p;
    o->top_k = (int)a->top_k;
    o->min_p = a->min_p;
    o->seed = (uint64_t)a->seed;
    o->stops = a->stops;
    o->n_stop = a->n_stop;
    o->choices = a->choices;
    o->n_choice = a->n_choice;
    o->regex = a->regex;
    o->ignore_eos = a->ignore_eos;
    o->logprobs = (int)a->logprobs;
    o->parallel = (int)a->parallel;
    o->ctx = (int)a->ctx;
    o->source = a->input;
}

int cmd_generate(int argc, char **argv) {
    const char *cmd = "generate";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    gen_args a;
    int rc = parse_gen_args(cmd, argc, argv, &a);
    if (rc) return rc;
    jr_kv_opts kvo;
    if ((rc = cli_kv_opts(cmd, &a.kv, &kvo))) return rc;
    json_t *rows = NULL;
    if ((rc = read_prompt_rows(cmd, &a, &rows))) return rc;

    jr_textgen t;
    char mdesc[1024];
    jr_status st = jr_textgen_open_dir_kv(&t, a.model, a.tokenizer, 1, 2, &kvo, mdesc, sizeof mdesc); /* the cache is sized once the prompts are known */
    if (st) { json_decref(rows); return cli_fail(cmd, st); }
    jr_genrows_opts go;
    genrows_opts(&a, &go);
    json_t *out = NULL;
    if (!(st = jr_genrows_run(&t, rows, &go, &out))) {
        st = jr_genrows_write(out, a.output, stdout);
        if (st && a.output) jr_fail_ctx(st, "--output %s", a.output);
    }
    if (!st && strcmp(mdesc, a.model)) fprintf(stderr, "judgerl generate: model: %s\n", mdesc);
    if (!st) fprintf(stderr, "judgerl generate: tokenizer: %s\n", t.tok_desc); /* after the output: an error stays one line */
    char kdesc[160];
    if (!st) fprintf(stderr, "judgerl generate: compute: %s\n", jr_kv_lm_describe(&t.lm, kdesc, sizeof kdesc));
    json_decref(out);
    jr_textgen_close(&t);
    json_decref(rows);
    return st ? cli_fail(cmd, st) : CLI_OK;
}
