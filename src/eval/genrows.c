/* genrows.c - n completions per prompt row, as output rows (jr_genrows_run: `judgerl generate`, the demo) */
#include "judgerl/genrows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/constrain.h"
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "serve/respond.h"

void jr_genrows_opts_init(jr_genrows_opts *o) {
    *o = (jr_genrows_opts){.n = 1, .max_tokens = 256, .temperature = NAN, .top_p = NAN, .top_k = -1, .logprobs = -1, .parallel = 8};
}

jr_status jr_genrows_read(const char *path, json_t **rows_out) {
    *rows_out = NULL;
    jr_jsonl_reader *r;
    jr_status st = jr_jsonl_open(&r, path, JR_BAD_LINE_FAIL, NULL, NULL);
    if (st) return st;
    json_t *rows = json_array();
    for (;;) {
        json_t *row;
        int64_t line;
        if ((st = jr_jsonl_next(r, &row, &line, NULL)) || !row) break;
        json_object_set_new(row, "_line", json_integer(line));
        json_array_append_new(rows, row);
    }
    jr_jsonl_close(r);
    if (!st && !json_array_size(rows)) st = jr_fail(JR_EINVAL, "%s: no rows", path);
    if (st) { json_decref(rows); return st; }
    *rows_out = rows;
    return JR_OK;
}

/* Each row's prompt as token ids (ids[p], lens[p]); an error names the row's line. */
static jr_status encode_prompts(jr_textgen *t, const json_t *rows, const char *source, int32_t **ids, int *lens) {
    for (size_t p = 0; p < json_array_size(rows); p++) {
        json_t *r = json_array_get(rows, p);
        jr_status st = jr_textgen_encode_row(t, r, &ids[p], &lens[p]);
        if (st) {
            json_t *ln = json_object_get(r, "_line");
            if (ln) jr_fail_ctx(st, "%s:%d", source ? source : "row", (int)json_integer_value(ln));
            return st;
        }
    }
    return JR_OK;
}

/* o->ctx, or just what the longest prompt plus max_tokens need (at most the model's positions). */
static int context_size(const jr_genrows_opts *o, const jr_textgen *t, const int *lens, size_t np) {
    long ctx = o->ctx;
    if (ctx == 0) {
        int longest = 0;
        for (size_t p = 0; p < np; p++) longest = lens[p] > longest ? lens[p] : longest;
        ctx = (long)longest + o->max_tokens;
        if (ctx > t->m->cfg.max_position_embeddings) ctx = t->m->cfg.max_position_embeddings;
    }
    return (int)ctx;
}

/* The generation parameters, with generation_config.json supplying the defaults o leaves open; a
 * choice / regex constraint goes to *con (freed by the caller). */
static jr_status gen_params(const jr_genrows_opts *o, jr_textgen *t, jr_gen_params *gp, jr_constraint **con) {
    double temperature = o->temperature, top_p = o->top_p;
    int top_k = o->top_k;
    *gp = jr_gen_params_default();
    gp->max_tokens = o->max_tokens;
    if (isnan(temperature)) temperature = t->gen.do_sample == 0 ? 0 : !isnan(t->gen.temperature) ? t->gen.temperature : 1;
    if (isnan(top_p)) top_p = !isnan(t->gen.top_p) ? t->gen.top_p : 1;
    if (top_k < 0) top_k = t->gen.top_k > 0 ? t->gen.top_k : 0;
    gp->sample.temperature = (float)temperature;
    gp->sample.top_p = (float)top_p;
    gp->sample.top_k = top_k;
    gp->sample.min_p = (float)o->min_p;
    gp->has_seed = 1;
    gp->seed = o->seed;
    gp->stop = o->stops;
    gp->n_stop = o->n_stop;
    gp->ignore_eos = o->ignore_eos;
    gp->logprobs = o->logprobs >= 0;
    gp->top_logprobs = o->logprobs > 0 ? o->logprobs : 0;
    jr_status st = JR_OK;
    if (o->n_choice && o->regex) return jr_fail(JR_EINVAL, "give choices or a regex, not both");
    if (o->n_choice) st = jr_constraint_choice(con, &t->vocab.tb, o->choices, o->n_choice);
    else if (o->regex) st = jr_constraint_regex(con, &t->vocab.tb, o->regex);
    if (st) return st;
    gp->constraint = *con;
    return JR_OK;
}

/* One output row: the input fields plus id, prompt_id, sample, response, tokens, finish_reason, prompt_tokens, logprobs. */
static json_t *output_row(const json_t *row, size_t p, int n, const jr_gen_seq *s, int sample, int prompt_tokens,
                          int logprobs) {
    json_t *o = json_deep_copy(row);
    json_object_del(o, "_line");
    /* an id per output row, so `judgerl grade` takes the rows as they are: the input's id (else the
     * row's 0-based index) as prompt_id; id = prompt_id with one sample, "PROMPT_ID-SAMPLE" with several */
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

jr_status jr_genrows_run(jr_textgen *t, const json_t *rows, const jr_genrows_opts *o, json_t **out) {
    *out = NULL;
    if (o->n < 1) return jr_fail(JR_EINVAL, "samples per prompt: %d, expected >= 1", o->n);
    size_t np = json_array_size(rows), n = (size_t)o->n;
    int parallel = o->parallel > o->n ? o->parallel : o->n;
    int32_t **ids = calloc(np ? np : 1, sizeof *ids);
    int *lens = calloc(np ? np : 1, sizeof *lens);
    jr_gen_seq *outs = calloc(np * n > 0 ? np * n : 1, sizeof *outs);
    jr_constraint *con = NULL;
    jr_gen_params gp;
    jr_status st = JR_OK;
    if (!ids || !lens || !outs) { st = jr_fail(JR_ENOMEM, "out of memory for %zu prompts", np); goto done; }
    if ((st = encode_prompts(t, rows, o->source, ids, lens))) goto done;
    if ((st = jr_textgen_reserve(t, parallel, context_size(o, t, lens, np)))) goto done;
    if ((st = gen_params(o, t, &gp, &con))) goto done;
    if ((st = jr_generate(&t->lm, &t->vocab, (int)np, (const int32_t *const *)ids, lens, o->n, &gp, outs))) goto done;
    json_t *res = json_array();
    for (size_t p = 0; p < np; p++)
        for (int i = 0; i < o->n; i++)
            json_array_append_new(res, output_row(json_array_get(rows, p), p, o->n, &outs[p * n + (size_t)i], i, lens[p], gp.logprobs));
    *out = res;
done:
    for (size_t p = 0; ids && p < np; p++) free(ids[p]);
    for (size_t k = 0; outs && k < np * n; k++) jr_gen_seq_free(&outs[k]);
    free(ids);
    free(lens);
    free(outs);
    jr_constraint_free(con);
    return st;
}

jr_status jr_genrows_write(const json_t *rows, const char *path, FILE *f) {
    jr_status st = JR_OK;
    jr_afile af = {0};
    if (path) {
        if ((st = jr_afile_open(&af, path))) return st;
        f = af.f;
    }
    for (size_t i = 0; i < json_array_size(rows); i++) {
        char *line = json_dumps(json_array_get(rows, i), JSON_COMPACT);
        if (!line) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
        fprintf(f, "%s\n", line);
        free(line);
    }
    if (path) {
        if (st) jr_afile_abort(&af);
        else st = jr_afile_commit(&af);
    } else {
        fflush(f);
    }
    return st;
}

jr_status jr_genrows_prompts(const char *prompt, const char *chat, const char *input, json_t **rows) {
    *rows = NULL;
    if (prompt) *rows = json_pack("[{s:s}]", "prompt", prompt);
    else if (chat) {
        json_error_t e;
        json_t *c = json_load_file(chat, 0, &e);
        json_t *msgs = json_is_object(c) ? json_object_get(c, "messages") : c;
        if (!json_is_array(msgs)) {
            json_decref(c);
            return jr_fail(JR_EINVAL, "--chat %s: expected a JSON list of {role, content} messages%s%s", chat, c ? "" : ": ",
                           c ? "" : e.text);
        }
        *rows = json_pack("[{s:O}]", "messages", msgs);
        json_decref(c);
    } else {
        return jr_genrows_read(input, rows);
    }
    return *rows ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
}

jr_status jr_genrows_generate(const jr_generate_opts *o, const json_t *rows) {
    jr_textgen t;
    char mdesc[1024];
    /* the cache is sized once the prompts are known */
    jr_status st = jr_textgen_open_dir_kv(&t, o->model, o->tokenizer, 1, 2, &o->kv, mdesc, sizeof mdesc);
    if (st) return st;
    json_t *out = NULL;
    if (!(st = jr_genrows_run(&t, rows, &o->rows, &out))) {
        st = jr_genrows_write(out, o->output, o->out);
        if (st && o->output) jr_fail_ctx(st, "--output %s", o->output);
    }
    FILE *log = st ? NULL : o->log; /* after the output: an error stays one line */
    if (log && strcmp(mdesc, o->model)) fprintf(log, "%smodel: %s\n", o->prefix, mdesc);
    if (log) fprintf(log, "%stokenizer: %s\n", o->prefix, t.tok_desc);
    char kdesc[160];
    if (log) fprintf(log, "%scompute: %s\n", o->prefix, jr_kv_lm_describe(&t.lm, kdesc, sizeof kdesc));
    json_decref(out);
    jr_textgen_close(&t);
    return st;
}
