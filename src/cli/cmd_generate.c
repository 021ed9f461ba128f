/* cmd_generate.c - `judgerl generate`: batched sampling from a model directory into JSONL */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/textgen.h"
#include "serve/respond.h"

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

/* The JSONL rows of --input into rows (each with "_line"); CLI_OK, or the exit code after the message. */
static int read_input_rows(const char *cmd, const char *input, json_t *rows) {
    FILE *f = fopen(input, "r");
    if (!f) return cli_usage(cmd, "--input %s: %s", input, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = CLI_OK;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (len == 0 || strspn(line, " \t\r\n") == (size_t)len) continue;
        json_error_t e;
        json_t *r = json_loadb(line, (size_t)len, 0, &e);
        if (!json_is_object(r)) {
            fprintf(stderr, "judgerl generate: %s:%d: not a JSON object%s%s\n", input, lineno, r ? "" : ": ", r ? "" : e.text);
            json_decref(r);
            rc = CLI_FAIL;
            break;
        }
        json_object_set_new(r, "_line", json_integer(lineno));
        json_array_append_new(rows, r);
    }
    free(line);
    fclose(f);
    if (rc) return rc;
    if (!json_array_size(rows)) return cli_usage(cmd, "--input %s: no rows", input);
    return CLI_OK;
}

/* The prompts as JSON rows (from --prompt, --chat or --input); CLI_OK, or the exit code after the message. */
static int read_prompt_rows(const char *cmd, const gen_args *a, json_t **rows_out) {
    json_t *rows = json_array();
    int rc = CLI_OK;
    if (a->prompt) json_array_append_new(rows, json_pack("{s:s}", "prompt", a->prompt));
    else if (a->chat) {
        json_error_t e;
        json_t *c = json_load_file(a->chat, 0, &e);
        json_t *msgs = json_is_object(c) ? json_object_get(c, "messages") : c;
        if (!json_is_array(msgs)) {
            json_decref(c);
            json_decref(rows);
            return cli_usage(cmd, "--chat %s: expected a JSON list of {role, content} messages%s%s", a->chat, c ? "" : ": ", c ? "" : e.text);
        }
        json_array_append_new(rows, json_pack("{s:O}", "messages", msgs));
        json_decref(c);
    } else {
        rc = read_input_rows(cmd, a->input, rows);
    }
    if (rc) { json_decref(rows); return rc; }
    *rows_out = rows;
    return CLI_OK;
}

/* Each row's prompt as token ids (ids[p], lens[p]); an error names the --input line. */
static jr_status encode_prompts(jr_textgen *t, json_t *rows, const char *input, int32_t **ids, int *lens) {
    for (size_t p = 0; p < json_array_size(rows); p++) {
        json_t *r = json_array_get(rows, p);
        jr_status st = jr_textgen_encode_row(t, r, &ids[p], &lens[p]);
        if (st) {
            json_t *ln = json_object_get(r, "_line");
            if (ln) jr_fail_ctx(st, "%s:%d", input, (int)json_integer_value(ln));
            return st;
        }
    }
    return JR_OK;
}

/* --ctx, or just what the longest prompt plus max_tokens need (at most the model's positions). */
static int context_size(const gen_args *a, const jr_textgen *t, const int *lens, size_t np) {
    double ctx = a->ctx;
    if (ctx == 0) {
        int longest = 0;
        for (size_t p = 0; p < np; p++) longest = lens[p] > longest ? lens[p] : longest;
        ctx = (double)longest + a->max_tokens;
        if (ctx > t->m->cfg.max_position_embeddings) ctx = t->m->cfg.max_position_embeddings;
    }
    return (int)ctx;
}

/* The generation parameters from the flags, with generation_config.json supplying the defaults a flag
 * does not override; a --choice / --regex constraint goes to *con (freed by the caller). */
static jr_status gen_params(const gen_args *a, jr_textgen *t, jr_gen_params *gp, jr_constraint **con) {
    double temperature = a->temperature, top_p = a->top_p, top_k = a->top_k;
    *gp = jr_gen_params_default();
    gp->max_tokens = (int)a->max_tokens;
    if (isnan(temperature)) temperature = t->gen.do_sample == 0 ? 0 : !isnan(t->gen.temperature) ? t->gen.temperature : 1;
    if (isnan(top_p)) top_p = !isnan(t->gen.top_p) ? t->gen.top_p : 1;
    if (top_k < 0) top_k = t->gen.top_k > 0 ? t->gen.top_k : 0;
    gp->sample.temperature = (float)temperature;
    gp->sample.top_p = (float)top_p;
    gp->sample.top_k = (int)top_k;
    gp->sample.min_p = (float)a->min_p;
    gp->has_seed = 1;
    gp->seed = (uint64_t)a->seed;
    gp->stop = a->stops;
    gp->n_stop = a->n_stop;
    gp->ignore_eos = a->ignore_eos;
    gp->logprobs = a->logprobs >= 0;
    gp->top_logprobs = a->logprobs > 0 ? (int)a->logprobs : 0;
    jr_status st = JR_OK;
    if (a->n_choice) st = jr_constraint_choice(con, &t->vocab.tb, a->choices, a->n_choice);
    else if (a->regex) st = jr_constraint_regex(con, &t->vocab.tb, a->regex);
    if (st) return st;
    gp->constraint = *con;
    return JR_OK;
}

/* One output row: the input fields plus id, prompt_id, sample, response, tokens, finish_reason, prompt_tokens, logprobs. */
static json_t *output_row(const json_t *row, size_t p, int n, const jr_gen_seq *s, int sample, int prompt_tokens,
                          int logprobs) {
    json_t *o = json_deep_copy(row);
    json_object_del(o, "_line");
    /* an id per output row, so `judgerl grade` takes the file as it is: the input's id (else the row's
     * 0-based index) as prompt_id; id = prompt_id with one sample, "PROMPT_ID-SAMPLE" with several */
    json_t *pid = json_object_get(row, "id");
    pid = json_is_string(pid) || json_is_integer(pid) ? json_incref(pid) : json_integer((json_int_t)p);
    json_object_set(o, "prompt_id", pid);
    if (n == 1) json_object_set(o, "id", pid);
    else if (json_is_string(pid)) json_object_set_new(o, "id", json_sprintf("%s-%d", json_string_value(pid), sample));
    else json_object_set_new(o, "id", json_sprintf("%lld-%d", (long long)json_integer_value(pid), sample));
    json_decref(pid);
    json_t *toks = json_array(), *lps = json_array();
    for (int k = 0; k < s->n_tokens; k++) {
        json_array_append_new(toks, json_integer(s->tokens[k]));
        if (logprobs) json_array_append_new(lps, json_real(isfinite(s->logprobs[k]) ? s->logprobs[k] : -9999.0));
    }
    json_t *resp = jr_json_text(s->text, s->text_len); /* invalid UTF-8 becomes U+FFFD */
    json_object_set_new(o, "sample", json_integer(sample));
    json_object_set_new(o, "response", resp ? resp : json_string(""));
    json_object_set_new(o, "tokens", toks);
    json_object_set_new(o, "finish_reason", json_string(s->finish_reason));
    json_object_set_new(o, "prompt_tokens", json_integer(prompt_tokens));
    if (logprobs) json_object_set_new(o, "logprobs", lps);
    else json_decref(lps);
    return o;
}

/* n rows per prompt, as JSONL to --output (replaced only when all is written) or stdout. */
static jr_status write_outputs(const gen_args *a, json_t *rows, const jr_gen_seq *outs, const int *lens, int logprobs) {
    jr_status st = JR_OK;
    jr_afile af = {0};
    FILE *out = stdout;
    if (a->output) {
        if ((st = jr_afile_open(&af, a->output))) return st;
        out = af.f;
    }
    size_t np = json_array_size(rows);
    for (size_t p = 0; p < np; p++) {
        for (int i = 0; i < (int)a->n; i++) {
            json_t *o = output_row(json_array_get(rows, p), p, (int)a->n, &outs[p * (size_t)a->n + (size_t)i], i, lens[p], logprobs);
            char *line = json_dumps(o, JSON_COMPACT);
            json_decref(o);
            if (!line) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
            fprintf(out, "%s\n", line);
            free(line);
        }
        if (st) break;
    }
    if (a->output) {
        if (st) jr_afile_abort(&af);
        else if ((st = jr_afile_commit(&af))) jr_fail_ctx(st, "--output %s", a->output);
    } else {
        fflush(stdout);
    }
    return st;
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
    jr_status st = cli_textgen_open(&t, a.model, a.tokenizer, 1, 2, &kvo, mdesc, sizeof mdesc); /* the cache is sized once the prompts are known */
    if (st) { json_decref(rows); return cli_fail(cmd, st); }
    if ((st = jr_textgen_set_kv(&t, &kvo))) { json_decref(rows); jr_textgen_close(&t); return cli_fail(cmd, st); }
    size_t np = json_array_size(rows), n = (size_t)a.n;
    int32_t **ids = calloc(np, sizeof *ids);
    int *lens = calloc(np, sizeof *lens);
    jr_gen_seq *outs = calloc(np * n, sizeof *outs);
    jr_constraint *con = NULL;
    jr_gen_params gp;
    if (!ids || !lens || !outs) { st = jr_fail(JR_ENOMEM, "out of memory for %zu prompts", np); goto done; }
    if ((st = encode_prompts(&t, rows, a.input, ids, lens))) goto done;
    if ((st = jr_textgen_reserve(&t, (int)a.parallel, context_size(&a, &t, lens, np)))) goto done;
    if ((st = gen_params(&a, &t, &gp, &con))) goto done;
    if ((st = jr_generate(&t.lm, &t.vocab, (int)np, (const int32_t *const *)ids, lens, (int)n, &gp, outs))) goto done;
    st = write_outputs(&a, rows, outs, lens, gp.logprobs);
done:
    if (!st && strcmp(mdesc, a.model)) fprintf(stderr, "judgerl generate: model: %s\n", mdesc);
    if (!st) fprintf(stderr, "judgerl generate: tokenizer: %s\n", t.tok_desc); /* after the output: an error stays one line */
    char kdesc[160];
    if (!st) fprintf(stderr, "judgerl generate: compute: %s\n", jr_kv_lm_describe(&t.lm, kdesc, sizeof kdesc));
    for (size_t p = 0; ids && p < np; p++) free(ids[p]);
    for (size_t k = 0; outs && k < np * n; k++) jr_gen_seq_free(&outs[k]);
    free(ids);
    free(lens);
    free(outs);
    jr_constraint_free(con);
    jr_textgen_close(&t);
    json_decref(rows);
    return st ? cli_fail(cmd, st) : CLI_OK;
}
