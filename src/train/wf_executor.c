/* wf_executor.c - the workflow executor model: SFT rows rendered from the executor's templates
 * (direct answers, programs, code; review/revise), a BPE tokenizer trained on them, then SFT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/model.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/rng.h"
#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"
#include "judgerl/tokenizer.h"
#include "judgerl/wf_executor.h"
#include "judgerl/workflow.h"

const jr_cfg_field jr_wf_exec_cfg[] = {
    {"executor.n_per_domain", JR_CFG_INT, "600", "synthetic task rows per domain (math, code, qa) rendered into SFT rows", NULL, NULL, 1, 1000000},
    {"executor.task_seed", JR_CFG_INT, "1", "seed of the task generators (held-out rows for the table start at index 100000)", NULL, NULL, 0, 0},
    {"executor.review_frac", JR_CFG_FLOAT, "0.1", "share of task rows that also give a review row and a revise row", NULL, NULL, 0, 1},
    {"executor.vocab_size", JR_CFG_INT, "1024", "size of the BPE tokenizer trained on the SFT rows (specials included)", NULL, NULL, 300, 65536},
    {"executor.digit_space", JR_CFG_BOOL, "true",
     "the tokenizer keeps a space before a digit in the digit's token (' 4' then '7': digits stay single tokens, and a number follows "
     "the word before it directly); false: the Qwen2 split, the space alone",
     NULL, NULL, 0, 0},
    {"executor.templates", JR_CFG_STRING, "templates/workflow", "operator templates the prompts are rendered from (the executor's workflow.templates)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

const char *const jr_wf_exec_quick[] = {"executor.n_per_domain=12",  "executor.vocab_size=512", "model.init=configs/models/wf-executor-quick.json",
                                        "trainer.steps=8", "trainer.batch_size=4", "trainer.save_every=8", "trainer.eval_every=0",
                                        "trainer.warmup_steps=2", NULL};

jr_status jr_wf_exec_opts_from_config(jr_wf_exec_opts *o, const jr_config *cfg) {
    memset(o, 0, sizeof *o);
    o->n_per_domain = (long)jr_cfg_int(cfg, "executor.n_per_domain");
    o->task_seed = (uint64_t)jr_cfg_int(cfg, "executor.task_seed");
    o->review_frac = jr_cfg_float(cfg, "executor.review_frac");
    o->vocab_size = (int)jr_cfg_int(cfg, "executor.vocab_size");
    o->digit_space = jr_cfg_bool(cfg, "executor.digit_space");
    o->templates = jr_cfg_str(cfg, "executor.templates");
    o->out_dir = jr_cfg_str(cfg, "run.out_dir");
    jr_status st = jr_cfg_check(cfg);
    if (!st && !o->out_dir) st = jr_fail(JR_EINVAL, "%s: run.out_dir must be set (the executor's data, tokenizer and model go there)", cfg->source);
    return st;
}

/* ---- reference replies ---- */

/* The worked steps of a maths row from its reference program ("n = 12", "n = n + 4 * 5", "n = n + 30",
 * ...; comment lines skipped): "12 + 4 * 5 = 32. 32 + 30 = 62." */
static char *math_thought(const char *program) {
    jr_strbuf b = {0};
    long n = 0, a, c;
    for (const char *p = program; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[128];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        char step[160] = "";
        int got = sscanf(line, " n = n + %ld * %ld", &a, &c);
        if (got == 2) { snprintf(step, sizeof step, "%ld + %ld * %ld = %ld. ", n, a, c, n + a * c); n += a * c; }
        else if (got == 1) { snprintf(step, sizeof step, "%ld + %ld = %ld. ", n, a, n + a); n += a; }
        else if (sscanf(line, " n = n - %ld", &a) == 1) { snprintf(step, sizeof step, "%ld - %ld = %ld. ", n, a, n - a); n -= a; }
        else if (sscanf(line, " n = n * %ld", &a) == 1) { snprintf(step, sizeof step, "%ld * %ld = %ld. ", n, a, n * a); n *= a; }
        else if (sscanf(line, " n = n // %ld", &a) == 1 && a) { snprintf(step, sizeof step, "%ld / %ld = %ld. ", n, a, n / a); n /= a; }
        else if (sscanf(line, " n = %ld", &a) == 1) n = a;
        jr_strbuf_add(&b, step);
        p += len + (nl ? 1 : 0);
    }
    if (b.n && b.p[b.n - 1] == ' ') b.p[--b.n] = 0;
    return jr_strbuf_take(&b);
}

/* The fact line "- <subject><verb>X." of a QA problem: X (new string), NULL when none. */
static char *fact(const char *problem, const char *subject, const char *verb) {
    char *key = jr_strfmt("- %s%s", subject, verb);
    const char *p = key ? strstr(problem, key) : NULL;
    char *out = NULL;
    if (p) {
        p += strlen(key);
        const char *end = strstr(p, ".\n");
        if (end) out = strndup(p, (size_t)(end - p));
    }
    free(key);
    return out;
}

/* The person a QA question asks about (new string). */
static char *qa_person(const char *problem) {
    static const char *const forms[][2] = {{"Which company does ", " work for?"}, {"In which town was ", " born?"},
                                           {"the company that ", " works for?"}};
    for (size_t k = 0; k < sizeof forms / sizeof *forms; k++) {
        const char *p = strstr(problem, forms[k][0]);
        if (!p) continue;
        p += strlen(forms[k][0]);
        const char *end = strstr(p, forms[k][1]);
        if (end) return strndup(p, (size_t)(end - p));
    }
    return NULL;
}

/* The chain of facts that answers a QA row: "A works for B. B has its headquarters in C." */
static char *qa_thought(const char *problem) {
    char *who = qa_person(problem), *out = NULL;
    if (!who) return NULL;
    if (strstr(problem, "Which company")) {
        char *c = fact(problem, who, " works for ");
        if (c) out = jr_strfmt("%s works for %s.", who, c);
        free(c);
    } else if (strstr(problem, "was") && strstr(problem, " born?")) {
        char *t = fact(problem, who, " was born in ");
        if (t) out = jr_strfmt("%s was born in %s.", who, t);
        free(t);
    } else {
        char *c = fact(problem, who, " works for "), *t = c ? fact(problem, c, " has its headquarters in ") : NULL;
        if (t) out = jr_strfmt("%s works for %s. %s has its headquarters in %s.", who, c, c, t);
        free(c);
        free(t);
    }
    free(who);
    return out;
}

/* A wrong answer of the row's kind: maths a nearby number, QA another name of the same kind from
 * the facts, code the reference with its last constant changed. NULL when none can be made. */
static char *corrupt(jr_rng *r, const char *type, const char *problem, const char *answer) {
    if (!strcmp(type, "math")) {
        long v = strtol(answer, NULL, 10), d = 1 + (long)jr_rng_below(r, 40);
        return jr_strfmt("%ld", jr_rng_below(r, 2) ? v + d : v - d);
    }
    if (!strcmp(type, "qa")) {
        /* the other names that end a fact the same way as the answer's does */
        const char *verb = strstr(answer, " Works") ? " works for " : " in ";
        const char *cand[16];
        size_t lens[16];
        int n = 0;
        for (const char *p = problem; (p = strstr(p, verb)) && n < 16;) {
            p += strlen(verb);
            const char *end = strstr(p, ".\n");
            if (!end) break;
            if ((size_t)(end - p) != strlen(answer) || strncmp(p, answer, strlen(answer))) { cand[n] = p; lens[n++] = (size_t)(end - p); }
            p = end;
        }
        if (!n) return NULL;
        int k = (int)jr_rng_below(r, (uint64_t)n);
        return strndup(cand[k], lens[k]);
    }
    /* code: bump the last digit of the reference's body */
    char *c = strdup(answer);
    if (!c) return NULL;
    for (char *p = c + strlen(c); p > c; p--)
        if (p[-1] >= '0' && p[-1] <= '9') { p[-1] = p[-1] == '9' ? '8' : (char)(p[-1] + 1); return c; }
    free(c);
    return NULL;
}

/* code in a python fence (new string, NULL when out of memory). */
static char *fence(const char *code) {
    size_t l = strlen(code);
    return jr_strfmt("```python\n%s%s```", code, l && code[l - 1] == '\n' ? "" : "\n");
}

/* Appends {"messages": [user prompt, assistant reply], op, domain, id} when the prompt renders. */
static jr_status add_row(json_t *rows, const jr_wf_templates *t, jr_wf_op op, const json_t *task, json_t *fields, const char *reply) {
    char *prompt = NULL;
    jr_status st = jr_wf_render(t, op, task, fields, &prompt);
    json_decref(fields);
    if (st) return jr_fail_ctx(st, "executor SFT rows: %s", jr_wf_op_name(op));
    json_t *row = json_pack("{s:[{s:s, s:s}, {s:s, s:s}], s:s, s:O, s:O}", "messages", "role", "user", "content", prompt, "role",
                            "assistant", "content", reply, "op", jr_wf_op_name(op), "domain", json_object_get(task, "domain"), "id",
                            json_object_get(task, "id"));
    free(prompt);
    if (!row || json_array_append_new(rows, row)) return jr_fail(JR_ENOMEM, "executor SFT rows: out of memory");
    return JR_OK;
}

/* The rows of one task: answer, program (maths) or codegen (code), and maybe review + revise. */
static jr_status task_rows(json_t *rows, const jr_wf_templates *t, const json_t *task, jr_rng *r, double review_frac) {
    const char *type = json_string_value(json_object_get(task, "type"));
    const char *problem = json_string_value(json_object_get(task, "problem"));
    const char *answer = json_string_value(json_object_get(task, "answer"));
    if (!type || !problem || !answer) return jr_fail(JR_EINVAL, "executor SFT rows: a task row lacks type, problem or answer");
    int code = !strcmp(type, "code");
    char *reply = NULL, *thought = NULL;
    if (!strcmp(type, "math")) thought = math_thought(json_string_value(json_object_get(task, "program")));
    else if (!code) thought = qa_thought(problem);
    else thought = jr_strfmt("Define %s as the docstring says.", json_string_value(json_object_get(task, "entry_point")));
    jr_status st = thought ? JR_OK : jr_fail(JR_EINVAL, "executor SFT rows: %s: cannot derive the worked steps", json_string_value(json_object_get(task, "id")));
    /* the direct answer */
    if (!st && (reply = jr_strfmt("<thought>%s</thought>\n<answer>%s%s</answer>", thought, code ? "\n" : "", answer)))
        st = add_row(rows, t, JR_WF_ANSWER, task, json_pack("{s:s}", "input", problem), reply);
    free(reply);
    /* the program (maths) or the code (code) */
    const char *prog = !strcmp(type, "math") ? json_string_value(json_object_get(task, "program")) : code ? answer : NULL;
    if (!st && prog) {
        char *f = fence(prog);
        st = f ? add_row(rows, t, code ? JR_WF_CODEGEN : JR_WF_PROGRAM, task, json_pack("{s:s}", "input", problem), f)
               : jr_fail(JR_ENOMEM, "out of memory");
        free(f);
    }
    /* review of the reference or of a wrong answer, and the revision to the reference */
    if (!st && jr_rng_double(r) < review_frac) {
        int wrong = (int)jr_rng_below(r, 2);
        char *bad = wrong ? corrupt(r, type, problem, answer) : NULL;
        if (wrong && !bad) wrong = 0;
        const char *sol = wrong ? bad : answer;
        const char *fb = !wrong ? "The solution is correct." : code ? "The function returns wrong values for some inputs; check its constants." : !strcmp(type, "math") ? "The final number is wrong; redo the arithmetic step by step." : "The answer does not follow from the facts; follow them again.";
        reply = jr_strfmt("<review_result>%s</review_result>\n<feedback>%s</feedback>", wrong ? "false" : "true", fb);
        st = reply ? add_row(rows, t, JR_WF_REVIEW, task, json_pack("{s:s}", "solution", sol), reply) : jr_fail(JR_ENOMEM, "out of memory");
        free(reply);
        char *f = code ? fence(answer) : NULL;
        reply = code ? (f ? jr_strfmt("<solution>\n%s\n</solution>", f) : NULL) : jr_strfmt("<solution>%s</solution>", answer);
        free(f);
        if (!st) st = reply ? add_row(rows, t, JR_WF_REVISE, task, json_pack("{s:s, s:s}", "solution", sol, "feedback", fb), reply) : jr_fail(JR_ENOMEM, "out of memory");
        free(reply);
        free(bad);
    }
    free(thought);
    return st;
}

jr_status jr_wf_exec_sft_rows(const jr_wf_exec_opts *o, const char *cfg_dir, json_t **rows) {
    *rows = NULL;
    jr_wf_templates *t;
    jr_status st = jr_wf_templates_open(&t, o->templates, cfg_dir);
    if (st) return st;
    json_t *out = json_array();
    static const char *const domains[] = {"math", "code", "qa"};
    jr_rng r;
    jr_rng_seed2(&r, o->task_seed, 0x5f7e);
    for (int d = 0; d < 3 && !st; d++) {
        json_t *tasks;
        if ((st = jr_wf_tasks(domains[d], o->n_per_domain, o->task_seed, 0, &tasks))) break;
        for (size_t i = 0; i < json_array_size(tasks) && !st; i++) st = task_rows(out, t, json_array_get(tasks, i), &r, o->review_frac);
        json_decref(tasks);
    }
    jr_wf_templates_close(t);
    if (!st && !out) st = jr_fail(JR_ENOMEM, "executor SFT rows: out of memory");
    if (st) { json_decref(out); return st; }
    /* a fixed shuffle, so the file itself mixes operators and domains */
    size_t n = json_array_size(out);
    uint32_t *ord = malloc(sizeof *ord * (n ? n : 1));
    json_t *mixed = json_array();
    if (!ord || !mixed) { free(ord); json_decref(mixed); json_decref(out); return jr_fail(JR_ENOMEM, "executor SFT rows: out of memory"); }
    for (size_t i = 0; i < n; i++) ord[i] = (uint32_t)i;
    jr_rng_shuffle_idx(&r, ord, (uint32_t)n);
    for (size_t i = 0; i < n; i++) json_array_append(mixed, json_array_get(out, ord[i]));
    free(ord);
    json_decref(out);
    *rows = mixed;
    return JR_OK;
}

/* The ChatML template the SFT rows are rendered with and `judgerl serve` applies. */
static const char chat_config[] =
    "{\n \"bos_token\": null,\n \"eos_token\": \"<|im_end|>\",\n \"pad_token\": \"<|endoftext|>\",\n \"unk_token\": null,\n"
    " \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n"
    " \"chat_template\": \"{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\\\n' + message['content'] + "
    "'<|im_end|>\\\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\\\n' }}{%- endif %}\"\n}\n";

static jr_status write_in(const char *dir, const char *name, const char *text, size_t len) {
    char *p = jr_path_join(dir, name);
    jr_status st = p ? jr_write_atomic(p, text, len) : jr_fail(JR_ENOMEM, "out of memory");
    free(p);
    return st;
}

/* The Qwen2 pre-tokenizer regex with " ?\p{N}" for "\p{N}": one digit per token, the first digit of a
 * number keeping the space before it, so "buys 4 bags" is "buys", " 4", " bags" (with the Qwen2 split
 * every number follows a lone space token, and copying a number takes two words of context). */
static const char digit_space_re[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+| ?\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

jr_status jr_wf_exec_prepare(const jr_wf_exec_opts *o, const char *cfg_dir, long *n_rows) {
    json_t *rows;
    jr_status st = jr_wf_exec_sft_rows(o, cfg_dir, &rows);
    if (st) return st;
    jr_strbuf lines = {0}, corpus = {0};
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i), *m = json_object_get(row, "messages");
        char *line = json_dumps(row, JSON_COMPACT);
        if (line) jr_strbuf_add(&lines, line), jr_strbuf_addc(&lines, '\n');
        else lines.oom = 1;
        free(line);
        for (size_t k = 0; k < json_array_size(m); k++) {
            jr_strbuf_add(&corpus, json_string_value(json_object_get(json_array_get(m, k), "content")));
            jr_strbuf_addc(&corpus, '\n');
        }
    }
    if (n_rows) *n_rows = (long)json_array_size(rows);
    json_decref(rows);
    char *tok_dir = jr_path_join(o->out_dir, "tokenizer"), *tok_json = NULL;
    if (lines.oom || corpus.oom || !tok_dir) st = jr_fail(JR_ENOMEM, "executor data: out of memory");
    if (!st) st = jr_mkdirs(tok_dir);
    if (!st) st = write_in(o->out_dir, "sft.jsonl", lines.p ? lines.p : "", lines.n);
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (!st) st = jr_tok_train_re(corpus.p ? corpus.p : "", corpus.n, o->vocab_size, specials, 3, o->digit_space ? digit_space_re : NULL, &tok_json);
    if (!st) st = write_in(tok_dir, "tokenizer.json", tok_json, strlen(tok_json));
    if (!st) st = write_in(tok_dir, "tokenizer_config.json", chat_config, sizeof chat_config - 1);
    free(tok_json);
    free(tok_dir);
    jr_strbuf_free(&lines);
    jr_strbuf_free(&corpus);
    return st ? jr_fail_ctx(st, "executor data in %s", o->out_dir) : JR_OK;
}

static const jr_cfg_field *const exec_tables[] = {jr_run_cfg,  jr_data_cfg,      jr_model_cfg,  jr_trainer_cfg,   jr_grpo_cfg,
                                                  jr_distill_cfg, jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_tokenizer_cfg,
                                                  jr_sandbox_cfg, jr_wf_exec_cfg, NULL};

jr_status jr_wf_exec_train(const char *config_path, int n_over, char *const *over, FILE *progress, volatile sig_atomic_t *stop,
                           jr_train_result *res) {
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, config_path, n_over, over, exec_tables);
    if (st) return st;
    jr_wf_exec_opts o;
    st = jr_wf_exec_opts_from_config(&o, &cfg);
    char *dir = strdup(config_path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0;
    long n = 0;
    if (!st && !dir) st = jr_fail(JR_ENOMEM, "out of memory");
    /* the run-directory rule, for the whole pipeline: a used run.out_dir (a previous executor's data,
     * tokenizer or run) needs trainer.resume or run.overwrite; the training run below then finds the
     * data just written there and takes it as its own directory (overwrite: only a run's own files go) */
    jr_run_opts ro;
    jr_trainer_opts to;
    if (!st) {
        jr_run_opts_from_config(&ro, &cfg);
        jr_trainer_opts_from_config(&to, &cfg);
        st = jr_run_dir_prepare(&ro, to.resume, 1);
    }
    if (!st) st = jr_wf_exec_prepare(&o, slash ? dir : ".", &n);
    if (!st && progress) fprintf(progress, "executor data: %ld SFT rows and a %d-token BPE tokenizer in %s\n", n, o.vocab_size, o.out_dir);
    /* the same config, with the data and tokenizer just written */
    char **all = calloc((size_t)n_over + 4, sizeof *all);
    char *d_over = jr_strfmt("data.train=\"%s/sft.jsonl\"", o.out_dir), *t_over = jr_strfmt("trainer.tokenizer=\"%s/tokenizer\"", o.out_dir);
    if (!st && (!all || !d_over || !t_over)) st = jr_fail(JR_ENOMEM, "out of memory");
    jr_config train = {0};
    if (!st) {
        for (int i = 0; i < n_over; i++) all[i] = over[i];
        all[n_over] = d_over;
        all[n_over + 1] = t_over;
        int extra = 2;
        if (!to.resume) all[n_over + extra++] = "run.overwrite=true";
        st = jr_config_load(&train, config_path, n_over + extra, all, exec_tables);
    }
    if (!st) {
        st = jr_train_run(&train, progress, stop, res);
        jr_config_free(&train);
    }
    free(all), free(d_over), free(t_over), free(dir);
    jr_config_free(&cfg);
    return st;
}
