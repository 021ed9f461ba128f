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
    "  --prompt: one completions prompt; --chat: a JSON list of {role, content} messages;\n"
    "  --input: JSONL rows with \"prompt\" (text) or \"messages\" (chat). Each row gets n output rows\n"
    "  (the input fields plus sample, response, tokens, finish_reason, prompt_tokens, logprobs when\n"
    "  --logprobs is given). Without --output the rows go to stdout. Sampling defaults come from the\n"
    "  model's generation_config.json, else temperature 1, top_p 1.\n";

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

/* Turns one input row (or --prompt / --chat) into prompt ids. */
static jr_status row_prompt(jr_textgen *t, json_t *row, int32_t **ids, int *n) {
    json_t *p = json_object_get(row, "prompt"), *m = json_object_get(row, "messages");
    if (json_is_string(p)) return jr_textgen_encode(t, json_string_value(p), json_string_length(p), ids, n);
    if (!json_is_array(m) || !json_array_size(m)) return jr_fail(JR_EINVAL, "the row has neither a \"prompt\" string nor a \"messages\" list");
    size_t k = json_array_size(m);
    const char **roles = calloc(k, sizeof *roles), **contents = calloc(k, sizeof *contents);
    if (!roles || !contents) { free(roles); free(contents); return jr_fail(JR_ENOMEM, "out of memory"); }
    jr_status st = JR_OK;
    for (size_t i = 0; i < k && !st; i++) {
        json_t *msg = json_array_get(m, i);
        roles[i] = json_string_value(json_object_get(msg, "role"));
        contents[i] = json_string_value(json_object_get(msg, "content"));
        if (!roles[i] || !contents[i]) st = jr_fail(JR_EINVAL, "messages[%zu]: needs \"role\" and \"content\" strings", i);
    }
    if (!st) st = jr_textgen_encode_chat(t, (int)k, roles, contents, ids, n);
    free(roles);
    free(contents);
    return st;
}

int cmd_generate(int argc, char **argv) {
    const char *cmd = "generate";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const char *model = NULL, *prompt = NULL, *chat = NULL, *input = NULL, *output = NULL, *tokenizer = "auto", *regex = NULL;
    const char *stops[16], *choices[64];
    int n_stop = 0, n_choice = 0, ignore_eos = 0;
    double n = 1, max_tokens = 256, temperature = NAN, top_p = NAN, top_k = -1, min_p = 0, seed = 0, logprobs = -1, parallel = 8, ctx = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1, bad = 0;
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--tokenizer")) tokenizer = v;
        else if (!strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--chat")) chat = v;
        else if (!strcmp(a, "--input")) input = v;
        else if (!strcmp(a, "--output")) output = v;
        else if (!strcmp(a, "--regex")) regex = v;
        else if (!strcmp(a, "--stop")) { if (n_stop == 16) return cli_usage(cmd, "--stop: at most 16"); if (v) stops[n_stop++] = v; }
        else if (!strcmp(a, "--choice")) { if (n_choice == 64) return cli_usage(cmd, "--choice: at most 64"); if (v) choices[n_choice++] = v; }
        else if (!strcmp(a, "--n")) bad = parse_num(cmd, a, v, 1, 256, &n);
        else if (!strcmp(a, "--max-tokens")) bad = parse_num(cmd, a, v, 1, 1 << 20, &max_tokens);
        else if (!strcmp(a, "--temperature")) bad = parse_num(cmd, a, v, 0, 100, &temperature);
        else if (!strcmp(a, "--top-p")) bad = parse_num(cmd, a, v, 1e-9, 1, &top_p);
        else if (!strcmp(a, "--top-k")) bad = parse_num(cmd, a, v, 0, 1 << 30, &top_k);
        else if (!strcmp(a, "--min-p")) bad = parse_num(cmd, a, v, 0, 1, &min_p);
        else if (!strcmp(a, "--seed")) bad = parse_num(cmd, a, v, 0, 9007199254740992.0, &seed);
        else if (!strcmp(a, "--logprobs")) bad = parse_num(cmd, a, v, 0, 20, &logprobs);
        else if (!strcmp(a, "--parallel")) bad = parse_num(cmd, a, v, 1, 1024, &parallel);
        else if (!strcmp(a, "--ctx")) bad = parse_num(cmd, a, v, 2, 1 << 20, &ctx);
        else if (!strcmp(a, "--ignore-eos")) { ignore_eos = 1; takes = 0; }
        else return cli_usage(cmd, "unknown argument '%s' (see judgerl generate --help)", a);
        if (bad) return CLI_USAGE;
        if (takes && !v) return cli_usage(cmd, "%s needs a value", a);
        i += takes;
    }
    if (!model) return cli_usage(cmd, "--model DIR is required (see judgerl generate --help)");
    if (!!prompt + !!chat + !!input != 1) return cli_usage(cmd, "give exactly one of --prompt, --chat, --input");
    if (n_choice && regex) return cli_usage(cmd, "give --choice or --regex, not both");
    if ((int)n > (int)parallel) parallel = n;

    /* The prompts as JSON rows. */
    json_t *rows = json_array();
    int rc = CLI_OK;
    if (prompt) json_array_append_new(rows, json_pack("{s:s}", "prompt", prompt));
    else if (chat) {
        json_error_t e;
        json_t *c = json_load_file(chat, 0, &e);
        json_t *msgs = json_is_object(c) ? json_object_get(c, "messages") : c;
        if (!json_is_array(msgs)) {
            json_decref(c);
            json_decref(rows);
            return cli_usage(cmd, "--chat %s: expected a JSON list of {role, content} messages%s%s", chat, c ? "" : ": ", c ? "" : e.text);
        }
        json_array_append_new(rows, json_pack("{s:O}", "messages", msgs));
        json_decref(c);
    } else {
        FILE *f = fopen(input, "r");
        if (!f) { json_decref(rows); return cli_usage(cmd, "--input %s: %s", input, strerror(errno)); }
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        int lineno = 0;
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
        if (rc) { json_decref(rows); return rc; }
        if (!json_array_size(rows)) { json_decref(rows); return cli_usage(cmd, "--input %s: no rows", input); }
    }

    jr_textgen t;
    jr_status st = jr_textgen_open(&t, model, tokenizer, 1, 2); /* the cache is sized once the prompts are known */
    if (st) { json_decref(rows); return cli_fail(cmd, st); }
    size_t np = json_array_size(rows);
    int32_t **ids = calloc(np, sizeof *ids);
    int *lens = calloc(np, sizeof *lens);
    jr_gen_seq *outs = calloc(np * (size_t)n, sizeof *outs);
    jr_constraint *con = NULL;
    if (!ids || !lens || !outs) { st = jr_fail(JR_ENOMEM, "out of memory for %zu prompts", np); goto done; }
    for (size_t p = 0; p < np; p++) {
        json_t *r = json_array_get(rows, p);
        if ((st = row_prompt(&t, r, &ids[p], &lens[p]))) {
            json_t *ln = json_object_get(r, "_line");
            if (ln) jr_fail_ctx(st, "%s:%d", input, (int)json_integer_value(ln));
            goto done;
        }
    }
    if (ctx == 0) { /* just what the longest prompt plus max_tokens need */
        int longest = 0;
        for (size_t p = 0; p < np; p++) longest = lens[p] > longest ? lens[p] : longest;
        ctx = (double)longest + max_tokens;
        if (ctx > t.m->cfg.max_position_embeddings) ctx = t.m->cfg.max_position_embeddings;
    }
    if ((st = jr_textgen_reserve(&t, (int)parallel, (int)ctx))) goto done;
    jr_gen_params gp = jr_gen_params_default();
    gp.max_tokens = (int)max_tokens;
    /* generation_config.json supplies the defaults a flag does not override */
    if (isnan(temperature)) temperature = t.gen.do_sample == 0 ? 0 : !isnan(t.gen.temperature) ? t.gen.temperature : 1;
    if (isnan(top_p)) top_p = !isnan(t.gen.top_p) ? t.gen.top_p : 1;
    if (top_k < 0) top_k = t.gen.top_k > 0 ? t.gen.top_k : 0;
    gp.sample.temperature = (float)temperature;
    gp.sample.top_p = (float)top_p;
    gp.sample.top_k = (int)top_k;
    gp.sample.min_p = (float)min_p;
    gp.has_seed = 1;
    gp.seed = (uint64_t)seed;
    gp.stop = stops;
    gp.n_stop = n_stop;
    gp.ignore_eos = ignore_eos;
    gp.logprobs = logprobs >= 0;
    gp.top_logprobs = logprobs > 0 ? (int)logprobs : 0;
    if (n_choice) st = jr_constraint_choice(&con, &t.vocab.tb, choices, n_choice);
    else if (regex) st = jr_constraint_regex(&con, &t.vocab.tb, regex);
    if (st) goto done;
    gp.constraint = con;
    if ((st = jr_generate(&t.lm, &t.vocab, (int)np, (const int32_t *const *)ids, lens, (int)n, &gp, outs))) goto done;

    jr_afile af = {0};
    FILE *out = stdout;
    if (output) {
        if ((st = jr_afile_open(&af, output))) goto done;
        out = af.f;
    }
    for (size_t p = 0; p < np; p++) {
        for (int i = 0; i < (int)n; i++) {
            const jr_gen_seq *s = &outs[p * (size_t)n + (size_t)i];
            json_t *o = json_deep_copy(json_array_get(rows, p));
            json_object_del(o, "_line");
            json_t *toks = json_array(), *lps = json_array();
            for (int k = 0; k < s->n_tokens; k++) {
                json_array_append_new(toks, json_integer(s->tokens[k]));
                if (gp.logprobs) json_array_append_new(lps, json_real(isfinite(s->logprobs[k]) ? s->logprobs[k] : -9999.0));
            }
            json_t *resp = jr_json_text(s->text, s->text_len); /* invalid UTF-8 becomes U+FFFD */
            json_object_set_new(o, "sample", json_integer(i));
            json_object_set_new(o, "response", resp ? resp : json_string(""));
            json_object_set_new(o, "tokens", toks);
            json_object_set_new(o, "finish_reason", json_string(s->finish_reason));
            json_object_set_new(o, "prompt_tokens", json_integer(lens[p]));
            if (gp.logprobs) json_object_set_new(o, "logprobs", lps);
            else json_decref(lps);
            char *line = json_dumps(o, JSON_COMPACT);
            json_decref(o);
            if (!line) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
            fprintf(out, "%s\n", line);
            free(line);
        }
        if (st) break;
    }
    if (output) {
        if (st) jr_afile_abort(&af);
        else if ((st = jr_afile_commit(&af))) jr_fail_ctx(st, "--output %s", output);
    } else {
        fflush(stdout);
    }
done:
    if (!st && !rc) fprintf(stderr, "judgerl generate: tokenizer: %s\n", t.tok_desc); /* after the output: an error stays one line */
    for (size_t p = 0; ids && p < np; p++) free(ids[p]);
    for (size_t k = 0; outs && k < np * (size_t)n; k++) jr_gen_seq_free(&outs[k]);
    free(ids);
    free(lens);
    free(outs);
    jr_constraint_free(con);
    jr_textgen_close(&t);
    json_decref(rows);
    return st ? cli_fail(cmd, st) : rc;
}
