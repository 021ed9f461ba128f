/* evalrun.c - `judgerl eval`: N samples per prompt from a model (or given samples), scored by the reward
 * registry and/or IFEval, tabulated per data source (pass@k through jr_pass_at_k_mean) */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/eval.h"
#include "judgerl/evalrun.h"
#include "judgerl/fsutil.h"
#include "judgerl/ifeval.h"
#include "judgerl/lora.h"
#include "judgerl/textgen.h"
#include "serve/respond.h"

const jr_cfg_field jr_eval_cfg[] = {
    {"eval.n", JR_CFG_INT, "1", "samples per prompt", NULL, NULL, 1, 1024},
    {"eval.max_tokens", JR_CFG_INT, "256", "tokens per sample at most", NULL, NULL, 1, 1 << 20},
    {"eval.temperature", JR_CFG_FLOAT, "-1", "sampling temperature; < 0: the model's generation_config.json, else 1", NULL, NULL, 0, 0},
    {"eval.top_p", JR_CFG_FLOAT, "-1", "nucleus sampling; < 0: generation_config.json, else 1", NULL, NULL, -1, 1},
    {"eval.top_k", JR_CFG_INT, "-1", "top-k sampling; < 0: generation_config.json, else off", NULL, NULL, -1, 1 << 30},
    {"eval.min_p", JR_CFG_FLOAT, "0", "min-p sampling", NULL, NULL, 0, 1},
    {"eval.seed", JR_CFG_INT, "0", "sampling seed (sample i of prompt p: stream (seed + p, i))", NULL, NULL, 0, 0},
    {"eval.parallel", JR_CFG_INT, "8", "sequences generated at once (raised to eval.n)", NULL, NULL, 1, 1024},
    {"eval.tokenizer", JR_CFG_STRING, "auto", "auto (MODEL/tokenizer.json, else byte) | byte | PATH", NULL, NULL, 0, 0},
    {"eval.pass_threshold", JR_CFG_FLOAT, "1", "pass@k: a sample passes a component when its value is >= this", NULL, NULL, 0, 0},
    {"eval.k", JR_CFG_STRING, "1,10,100", "pass@k for these k (each k that every prompt has k scored samples for)", NULL, NULL, 0, 0},
    {"eval.ifeval", JR_CFG_BOOL, "false", "score IFEval (rows with instruction_id_list and kwargs)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

int jr_eval_parse_ks(const char *s, int *ks, int cap) {
    int n = 0;
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1000000 || n >= cap || (*end && *end != ',')) return -1;
        ks[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

jr_status jr_eval_opts_from_config(jr_eval_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->n = (int)jr_cfg_int(c, "eval.n");
    o->max_tokens = (int)jr_cfg_int(c, "eval.max_tokens");
    o->temperature = jr_cfg_float(c, "eval.temperature");
    o->top_p = jr_cfg_float(c, "eval.top_p");
    o->top_k = (int)jr_cfg_int(c, "eval.top_k");
    o->min_p = jr_cfg_float(c, "eval.min_p");
    o->seed = (uint64_t)jr_cfg_int(c, "eval.seed");
    o->parallel = (int)jr_cfg_int(c, "eval.parallel");
    o->tokenizer = jr_cfg_str(c, "eval.tokenizer");
    o->pass_threshold = jr_cfg_float(c, "eval.pass_threshold");
    o->ifeval = jr_cfg_bool(c, "eval.ifeval");
    const char *k = jr_cfg_str(c, "eval.k");
    jr_status st = jr_cfg_check(c);
    if (st) return st;
    if ((o->n_ks = jr_eval_parse_ks(k, o->ks, JR_EVAL_MAX_K)) < 1)
        return jr_fail(JR_EINVAL, "%s: eval.k '%s': give up to %d positive integers separated by commas", c->source,
                       k ? k : "", JR_EVAL_MAX_K);
    if (jr_cfg_has(c, "reward.components")) {
        if ((st = jr_reward_opts_from_config(&o->reward, c))) return st;
        o->use_reward = o->reward.n_components > 0;
    }
    return JR_OK;
}

/* ---- tabulation ---- */

typedef struct {
    double sum;
    long scored, unscored;
    double *csum;   /* per component */
    long *cscored;
} tally;

typedef struct {
    int source;     /* index into sources */
    int *n, *c;     /* per component: scored samples, passing samples */
} group;

struct jr_eval_acc {
    int K;
    char **names;
    double thr;
    int ks[JR_EVAL_MAX_K], n_ks;
    long samples;
    tally all;
    json_t *source_ix, *group_ix, *reasons; /* name -> index; reason -> count */
    tally *src;
    char **src_names;
    int n_src;
    group *groups;
    size_t n_groups;
    long if_rows, if_unscored, if_p[2], if_i[2], if_tot;
};

static int tally_init(tally *t, int K) {
    memset(t, 0, sizeof *t);
    t->csum = calloc((size_t)K + 1, sizeof *t->csum);
    t->cscored = calloc((size_t)K + 1, sizeof *t->cscored);
    return t->csum && t->cscored;
}

static void tally_free(tally *t) { free(t->csum); free(t->cscored); }

jr_eval_acc *jr_eval_acc_new(int n_parts, const char *const *part_names, double pass_threshold, const int *ks, int n_ks) {
    jr_eval_acc *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->K = n_parts;
    a->thr = pass_threshold;
    a->n_ks = n_ks > JR_EVAL_MAX_K ? JR_EVAL_MAX_K : n_ks;
    memcpy(a->ks, ks, (size_t)a->n_ks * sizeof *ks);
    a->names = calloc((size_t)n_parts + 1, sizeof *a->names);
    a->source_ix = json_object();
    a->group_ix = json_object();
    a->reasons = json_object();
    int ok = a->names && a->source_ix && a->group_ix && a->reasons && tally_init(&a->all, n_parts);
    for (int k = 0; ok && k < n_parts; k++) ok = (a->names[k] = strdup(part_names[k])) != NULL;
    if (!ok) { jr_eval_acc_free(a); return NULL; }
    return a;
}

void jr_eval_acc_free(jr_eval_acc *a) {
    if (!a) return;
    for (int k = 0; a->names && k < a->K; k++) free(a->names[k]);
    free(a->names);
    tally_free(&a->all);
    for (int s = 0; s < a->n_src; s++) { tally_free(&a->src[s]); free(a->src_names[s]); }
    free(a->src);
    free(a->src_names);
    for (size_t g = 0; g < a->n_groups; g++) { free(a->groups[g].n); free(a->groups[g].c); }
    free(a->groups);
    json_decref(a->source_ix);
    json_decref(a->group_ix);
    json_decref(a->reasons);
    free(a);
}

static void count_reason(jr_eval_acc *a, const char *what, const char *reason) {
    char key[512];
    snprintf(key, sizeof key, "%s: %s", what, reason && *reason ? reason : "unscored");
    json_t *v = json_object_get(a->reasons, key);
    json_object_set_new(a->reasons, key, json_integer(v ? json_integer_value(v) + 1 : 1));
}

static int source_of(jr_eval_acc *a, const char *name) {
    json_t *v = json_object_get(a->source_ix, name);
    if (v) return (int)json_integer_value(v);
    tally *t = realloc(a->src, (size_t)(a->n_src + 1) * sizeof *t);
    if (!t) return -1;
    a->src = t;
    char **nm = realloc(a->src_names, (size_t)(a->n_src + 1) * sizeof *nm);
    if (!nm) return -1;
    a->src_names = nm;
    if (!tally_init(&a->src[a->n_src], a->K) || !(nm[a->n_src] = strdup(name))) { tally_free(&a->src[a->n_src]); return -1; }
    json_object_set_new(a->source_ix, name, json_integer(a->n_src));
    return a->n_src++;
}

static long group_of(jr_eval_acc *a, int src, const char *name) {
    char key[1024];
    snprintf(key, sizeof key, "%d\x1f%s", src, name);
    json_t *v = json_object_get(a->group_ix, key);
    if (v) return (long)json_integer_value(v);
    group *g = realloc(a->groups, (a->n_groups + 1) * sizeof *g);
    if (!g) return -1;
    a->groups = g;
    g = &a->groups[a->n_groups];
    g->source = src;
    g->n = calloc((size_t)a->K + 1, sizeof *g->n);
    g->c = calloc((size_t)a->K + 1, sizeof *g->c);
    if (!g->n || !g->c) { free(g->n); free(g->c); return -1; }
    json_object_set_new(a->group_ix, key, json_integer((json_int_t)a->n_groups));
    return (long)a->n_groups++;
}

static void tally_add(tally *t, int K, const jr_eval_score *s) {
    if (!s->reward_scored) { t->unscored++; }
    else { t->sum += s->reward; t->scored++; }
    for (int k = 0; k < K; k++)
        if (s->vscored && s->vscored[k]) { t->csum[k] += s->vals[k]; t->cscored[k]++; }
}

jr_status jr_eval_acc_add(jr_eval_acc *a, const jr_eval_score *s) {
    a->samples++;
    int src = source_of(a, s->source ? s->source : "all");
    long g = src < 0 ? -1 : group_of(a, src, s->group ? s->group : "");
    if (g < 0) return jr_fail(JR_ENOMEM, "eval: out of memory");
    if (s->has_reward) {
        tally_add(&a->all, a->K, s);
        tally_add(&a->src[src], a->K, s);
        if (!s->reward_scored) count_reason(a, "reward", s->reason);
        for (int k = 0; k < a->K; k++)
            if (s->vscored && s->vscored[k]) {
                a->groups[g].n[k]++;
                a->groups[g].c[k] += s->vals[k] >= a->thr;
            }
    }
    if (s->has_ifeval) {
        if (!s->ifeval_scored) {
            a->if_unscored++;
            count_reason(a, "ifeval", s->ifeval_reason);
        } else {
            a->if_rows++;
            a->if_p[0] += s->strict_all;
            a->if_p[1] += s->loose_all;
            a->if_i[0] += s->strict_ok;
            a->if_i[1] += s->loose_ok;
            a->if_tot += s->n_instr;
        }
    }
    return JR_OK;
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* The reward block of one source (src < 0: every source). */
static json_t *reward_block(const jr_eval_acc *a, int src) {
    const tally *t = src < 0 ? &a->all : &a->src[src];
    json_t *b = json_object(), *comps = json_object();
    json_object_set_new(b, "mean", num_or_null(t->scored ? t->sum / (double)t->scored : NAN));
    json_object_set_new(b, "scored", json_integer(t->scored));
    json_object_set_new(b, "unscored", json_integer(t->unscored));
    int *n = calloc(a->n_groups + 1, sizeof *n), *c = calloc(a->n_groups + 1, sizeof *c);
    for (int k = 0; k < a->K; k++) {
        json_t *cb = json_object();
        json_object_set_new(cb, "mean", num_or_null(t->cscored[k] ? t->csum[k] / (double)t->cscored[k] : NAN));
        json_object_set_new(cb, "scored", json_integer(t->cscored[k]));
        size_t m = 0;
        for (size_t g = 0; n && c && g < a->n_groups; g++)
            if ((src < 0 || a->groups[g].source == src) && a->groups[g].n[k] > 0) { /* a prompt with no scored sample is in the unscored counts */
                n[m] = a->groups[g].n[k];
                c[m] = a->groups[g].c[k];
                m++;
            }
        json_object_set_new(cb, "prompts", json_integer((json_int_t)m));
        for (int i = 0; i < a->n_ks && m; i++) {
            double v = jr_pass_at_k_mean(n, c, m, a->ks[i]); /* NAN when some prompt has fewer than k scored samples */
            char key[32];
            snprintf(key, sizeof key, "pass@%d", a->ks[i]);
            if (isfinite(v)) json_object_set_new(cb, key, json_real(v));
        }
        json_object_set_new(comps, a->names[k], cb);
    }
    free(n);
    free(c);
    json_object_set_new(b, "components", comps);
    return b;
}

json_t *jr_eval_acc_summary(const jr_eval_acc *a) {
    json_t *o = json_object();
    json_object_set_new(o, "samples", json_integer(a->samples));
    json_object_set_new(o, "prompts", json_integer((json_int_t)a->n_groups));
    char thr[40];
    jr_fmt_double(thr, sizeof thr, a->thr);
    json_object_set_new(o, "pass", json_sprintf("a component's value >= %s", thr));
    if (a->if_rows || a->if_unscored) {
        json_t *f = json_object();
        double r = (double)a->if_rows, it = (double)a->if_tot;
        json_object_set_new(f, "prompt_strict", num_or_null(a->if_rows ? (double)a->if_p[0] / r : NAN));
        json_object_set_new(f, "inst_strict", json_real(a->if_tot ? (double)a->if_i[0] / it : 0.0));
        json_object_set_new(f, "prompt_loose", num_or_null(a->if_rows ? (double)a->if_p[1] / r : NAN));
        json_object_set_new(f, "inst_loose", json_real(a->if_tot ? (double)a->if_i[1] / it : 0.0));
        json_object_set_new(f, "rows", json_integer(a->if_rows));
        json_object_set_new(f, "instructions", json_integer(a->if_tot));
        json_object_set_new(f, "unscored", json_integer(a->if_unscored));
        json_object_set_new(o, "ifeval", f);
    }
    if (a->all.scored || a->all.unscored) {
        json_object_set_new(o, "reward", reward_block(a, -1));
        json_t *by = json_object();
        for (int s = 0; s < a->n_src; s++) json_object_set_new(by, a->src_names[s], reward_block(a, s));
        json_object_set_new(o, "by_source", by);
    }
    json_object_set(o, "unscored_reasons", a->reasons);
    return o;
}

static void put_block(const json_t *b, const char *pre, int skip_reward, void (*put)(void *, const char *, double), void *ud) {
    char key[512];
    json_t *m = json_object_get(b, "mean");
    if (!skip_reward && json_is_number(m)) { snprintf(key, sizeof key, "%sreward", pre); put(ud, key, json_number_value(m)); }
    snprintf(key, sizeof key, "%sunscored", pre);
    put(ud, key, (double)json_integer_value(json_object_get(b, "unscored")));
    const char *cn, *f;
    json_t *cb, *v;
    json_object_foreach((json_t *)json_object_get(b, "components"), cn, cb) {
        json_object_foreach(cb, f, v) {
            if (strcmp(f, "mean") && strncmp(f, "pass@", 5)) continue;
            if (!json_is_number(v)) continue;
            snprintf(key, sizeof key, "%s%s/%s", pre, cn, f);
            put(ud, key, json_number_value(v));
        }
    }
}

void jr_eval_summary_flat(const json_t *summary, const char *prefix, int skip_reward,
                          void (*put)(void *ud, const char *key, double value), void *ud) {
    char key[512];
    json_t *f = json_object_get(summary, "ifeval");
    const char *k;
    json_t *v;
    if (f) json_object_foreach(f, k, v) {
            if (!json_is_real(v)) continue;
            snprintf(key, sizeof key, "%sifeval/%s", prefix, k);
            put(ud, key, json_real_value(v));
        }
    json_t *r = json_object_get(summary, "reward");
    if (r) put_block(r, prefix, skip_reward, put, ud);
    json_t *by = json_object_get(summary, "by_source");
    if (json_object_size(by) > 1) json_object_foreach(by, k, v) {
            snprintf(key, sizeof key, "%s%s/", prefix, k);
            put_block(v, key, 0, put, ud);
        }
}

static void print_block(FILE *f, const char *name, const json_t *b) {
    json_t *m = json_object_get(b, "mean");
    fprintf(f, "%-16s reward %s%.4f (%lld scored, %lld unscored)\n", name, json_is_number(m) ? "" : "n/a ",
            json_is_number(m) ? json_number_value(m) : 0.0, (long long)json_integer_value(json_object_get(b, "scored")),
            (long long)json_integer_value(json_object_get(b, "unscored")));
    const char *cn, *k;
    json_t *cb, *v;
    json_object_foreach((json_t *)json_object_get(b, "components"), cn, cb) {
        fprintf(f, "  %-14s", cn);
        json_object_foreach(cb, k, v) {
            if (json_is_real(v)) fprintf(f, " %s %.4f", k, json_real_value(v));
            else if (json_is_null(v)) fprintf(f, " %s n/a", k);
        }
        fprintf(f, " (%lld scored)\n", (long long)json_integer_value(json_object_get(cb, "scored")));
    }
}

void jr_eval_summary_print(const json_t *summary, FILE *f) {
    json_t *fe = json_object_get(summary, "ifeval");
    fprintf(f, "%lld samples of %lld prompts\n", (long long)json_integer_value(json_object_get(summary, "samples")),
            (long long)json_integer_value(json_object_get(summary, "prompts")));
    if (fe) {
        const char *names[4] = {"prompt_strict", "inst_strict", "prompt_loose", "inst_loose"};
        const char *labels[4] = {"Pr(S)", "Ins(S)", "Pr(L)", "Ins(L)"};
        fprintf(f, "IFEval");
        for (int i = 0; i < 4; i++) {
            json_t *v = json_object_get(fe, names[i]);
            if (json_is_number(v)) fprintf(f, "  %s %.4f", labels[i], json_number_value(v));
            else fprintf(f, "  %s n/a", labels[i]);
        }
        fprintf(f, "  (%lld rows, %lld unscored)\n", (long long)json_integer_value(json_object_get(fe, "rows")),
                (long long)json_integer_value(json_object_get(fe, "unscored")));
    }
    json_t *r = json_object_get(summary, "reward");
    if (r) {
        print_block(f, "all", r);
        json_t *by = json_object_get(summary, "by_source");
        const char *k;
        json_t *v;
        if (json_object_size(by) > 1) json_object_foreach(by, k, v) print_block(f, k, v);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(summary, "unscored_reasons"), k, v)
        fprintf(f, "unscored %lld: %s\n", (long long)json_integer_value(v), k);
}

/* ---- the whole evaluation ---- */

const char *jr_eval_row_source(const json_t *row) {
    const char *s = json_string_value(json_object_get(row, "data_source"));
    if (!s) s = json_string_value(json_object_get(row, "type"));
    return s ? s : "all";
}

/* Generates o->n samples of every row: out gets rows * n sample rows (row + sample, response, finish_reason). */
static jr_status generate_samples(const jr_eval_opts *o, json_t *rows, json_t *out) {
    char *cj = jr_path_join(o->model, "config.json"), *aj = jr_path_join(o->model, "adapter_config.json");
    int lora_only = cj && aj && !jr_path_exists(cj) && jr_path_exists(aj);
    free(cj);
    free(aj);
    if (lora_only) return jr_fail(JR_EINVAL, "%s holds a LoRA adapter, not a model: give --model BASE --adapter DIR (a LoRA run directory works there too)", o->model);
    jr_textgen t;
    jr_status st = jr_textgen_open(&t, o->model, o->tokenizer, 1, 2);
    if (st) return st;
    if (o->adapter && (st = jr_lora_merge_into(&t.model, o->adapter))) { jr_textgen_close(&t); return st; }
    size_t np = json_array_size(rows);
    int n = o->n;
    int32_t **ids = calloc(np, sizeof *ids);
    int *lens = calloc(np, sizeof *lens);
    jr_gen_seq *outs = calloc(np * (size_t)n, sizeof *outs);
    if (!ids || !lens || !outs) { st = jr_fail(JR_ENOMEM, "eval: out of memory for %zu prompts", np); goto done; }
    int longest = 0;
    for (size_t p = 0; p < np && !st; p++) {
        if ((st = jr_textgen_encode_row(&t, json_array_get(rows, p), &ids[p], &lens[p])))
            jr_fail_ctx(st, "%s: row %zu", o->data, p + 1);
        else if (lens[p] > longest) longest = lens[p];
    }
    if (st) goto done;
    int ctx = longest + o->max_tokens;
    if (ctx > t.m->cfg.max_position_embeddings) ctx = t.m->cfg.max_position_embeddings;
    if (longest + 1 > ctx) { st = jr_fail(JR_EINVAL, "%s: a prompt of %d tokens does not fit the model's %d positions", o->data, longest, ctx); goto done; }
    if ((st = jr_textgen_reserve(&t, o->parallel > n ? o->parallel : n, ctx))) goto done;
    jr_gen_params gp = jr_gen_params_default();
    gp.max_tokens = o->max_tokens;
    gp.sample.temperature = (float)(o->temperature >= 0 ? o->temperature : t.gen.do_sample == 0 ? 0 : !isnan(t.gen.temperature) ? t.gen.temperature : 1);
    gp.sample.top_p = (float)(o->top_p > 0 ? o->top_p : !isnan(t.gen.top_p) ? t.gen.top_p : 1);
    gp.sample.top_k = o->top_k >= 0 ? o->top_k : t.gen.top_k > 0 ? t.gen.top_k : 0;
    gp.sample.min_p = (float)o->min_p;
    gp.has_seed = 1;
    gp.seed = o->seed;
    if ((st = jr_generate(&t.lm, &t.vocab, (int)np, (const int32_t *const *)ids, lens, n, &gp, outs))) goto done;
    for (size_t p = 0; p < np; p++)
        for (int i = 0; i < n; i++) {
            const jr_gen_seq *s = &outs[p * (size_t)n + (size_t)i];
            json_t *r = json_deep_copy(json_array_get(rows, p)), *resp = jr_json_text(s->text, s->text_len);
            json_object_set_new(r, "sample", json_integer(i));
            json_object_set_new(r, "response", resp ? resp : json_string(""));
            json_object_set_new(r, "finish_reason", json_string(s->finish_reason));
            json_object_set_new(r, "_group", json_sprintf("row %zu", p + 1));
            json_array_append_new(out, r);
        }
done:
    for (size_t p = 0; ids && p < np; p++) free(ids[p]);
    for (size_t k = 0; outs && k < np * (size_t)n; k++) jr_gen_seq_free(&outs[k]);
    free(ids);
    free(lens);
    free(outs);
    jr_textgen_close(&t);
    return st;
}

/* Given samples: each row needs a "response"; its prompt is "id", "task_id", "key" or the prompt text. */
static jr_status take_samples(const jr_eval_opts *o, json_t *rows, json_t *out) {
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        if (!json_is_object(r) || !json_is_string(json_object_get(r, "response")))
            return jr_fail(JR_EINVAL, "%s: row %zu has no \"response\" string", o->samples, i + 1);
        const char *keys[] = {"id", "task_id", "key", "prompt"};
        json_t *g = NULL;
        for (int k = 0; k < 4 && !g; k++) g = json_object_get(r, keys[k]);
        json_t *c = json_deep_copy(r);
        if (json_is_string(g)) json_object_set_new(c, "_group", json_string(json_string_value(g)));
        else if (json_is_integer(g)) json_object_set_new(c, "_group", json_sprintf("%lld", (long long)json_integer_value(g)));
        else json_object_set_new(c, "_group", json_sprintf("row %zu", i + 1));
        json_array_append_new(out, c);
    }
    return JR_OK;
}

/* IFEval of one sample row into s (and the row's "ifeval" field). */
static void ifeval_sample(json_t *row, jr_eval_score *s, char *why, size_t why_len) {
    s->has_ifeval = 1;
    json_t *ids = json_object_get(row, "instruction_id_list"), *kw = json_object_get(row, "kwargs");
    const char *prompt = json_string_value(json_object_get(row, "prompt")), *resp = json_string_value(json_object_get(row, "response"));
    if (!json_is_array(ids) || !kw || !prompt) {
        snprintf(why, why_len, "the row lacks %s", !json_is_array(ids) ? "instruction_id_list" : !kw ? "kwargs" : "a prompt string");
        s->ifeval_reason = why;
        json_object_set_new(row, "ifeval", json_pack("{s:s}", "reason", why));
        return;
    }
    if (json_string_length(json_object_get(row, "response")) != strlen(resp)) {
        /* the checkers read NUL-terminated text (and `judgerl ifeval` rejects such rows) */
        snprintf(why, why_len, "the response contains a NUL byte");
        s->ifeval_reason = why;
        json_object_set_new(row, "ifeval", json_pack("{s:s}", "reason", why));
        return;
    }
    size_t n = json_array_size(ids);
    bool *res[2] = {calloc(n + 1, sizeof(bool)), calloc(n + 1, sizeof(bool))};
    jr_status st = res[0] && res[1] ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    for (int m = 0; m < 2 && !st; m++) st = jr_ifeval_check_row(ids, kw, prompt, resp, m ? JR_IFEVAL_LOOSE : JR_IFEVAL_STRICT, res[m]);
    if (st) {
        snprintf(why, why_len, "%s", jr_errmsg());
        s->ifeval_reason = why;
        json_object_set_new(row, "ifeval", json_pack("{s:s}", "reason", why));
    } else {
        s->ifeval_scored = 1;
        s->n_instr = (int)n;
        json_t *js[2] = {json_array(), json_array()};
        for (size_t i = 0; i < n; i++) {
            s->strict_ok += res[0][i];
            s->loose_ok += res[1][i];
            json_array_append_new(js[0], json_boolean(res[0][i]));
            json_array_append_new(js[1], json_boolean(res[1][i]));
        }
        /* as `judgerl ifeval`: a row without instructions counts as followed at the prompt level */
        s->strict_all = jr_ifeval_all_pass(res[0], n) || n == 0;
        s->loose_all = jr_ifeval_all_pass(res[1], n) || n == 0;
        json_object_set_new(row, "ifeval", json_pack("{s:o,s:o}", "strict", js[0], "loose", js[1]));
    }
    free(res[0]);
    free(res[1]);
}

static jr_status write_jsonl(const char *path, json_t *rows) {
    jr_afile af = {0};
    jr_status st = jr_afile_open(&af, path);
    if (st) return st;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        char *line = json_dumps(json_array_get(rows, i), JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (!line) { jr_afile_abort(&af); return jr_fail(JR_ENOMEM, "%s: out of memory", path); }
        fprintf(af.f, "%s\n", line);
        free(line);
    }
    if ((st = jr_afile_commit(&af))) jr_fail_ctx(st, "%s", path);
    return st;
}

jr_status jr_eval_run(const jr_eval_opts *o, json_t **summary) {
    *summary = NULL;
    if (!o->samples == !o->model) return jr_fail(JR_EINVAL, "eval: give a model or samples (exactly one)");
    if (o->model && !o->data) return jr_fail(JR_EINVAL, "eval: a model needs data rows");
    if (!o->use_reward && !o->ifeval) return jr_fail(JR_EINVAL, "eval: nothing to score: give a reward config listing reward.components and/or IFEval");
    if (o->n < 1 || o->n_ks < 1) return jr_fail(JR_EINVAL, "eval: n and k must be >= 1");
    json_t *rows = NULL, *samples = json_array();
    jr_reward *rw = NULL;
    jr_reward_result *res = NULL;
    jr_eval_acc *acc = NULL;
    jr_status st = jr_jsonl_read_all(o->samples ? o->samples : o->data, &rows);
    if (!st && !json_array_size(rows)) st = jr_fail(JR_EINVAL, "%s: no rows", o->samples ? o->samples : o->data);
    if (!st) st = o->samples ? take_samples(o, rows, samples) : generate_samples(o, rows, samples);
    if (st) goto done;
    size_t ns = json_array_size(samples);
    int K = 0;
    const char *names[JR_REWARD_MAX_COMPONENTS] = {0};
    if (o->use_reward) {
        if ((st = jr_reward_open_opts(&rw, &o->reward))) goto done;
        K = jr_reward_n_parts(rw);
        for (int k = 0; k < K; k++) names[k] = jr_reward_part_name(rw, k);
        res = calloc(ns, sizeof *res);
        if (!res) { st = jr_fail(JR_ENOMEM, "eval: out of memory"); goto done; }
        for (size_t i = 0; i < ns; i++)
            if (!json_object_get(json_array_get(samples, i), "id"))
                json_object_set_new(json_array_get(samples, i), "id", json_sprintf("%s#%zu", json_string_value(json_object_get(json_array_get(samples, i), "_group")), i));
        const json_t **ptrs = malloc(ns * sizeof *ptrs);
        if (!ptrs) { st = jr_fail(JR_ENOMEM, "eval: out of memory"); goto done; }
        for (size_t i = 0; i < ns; i++) ptrs[i] = json_array_get(samples, i);
        st = jr_reward_score(rw, ptrs, ns, res);
        free(ptrs);
        if (st) goto done;
    }
    if (!(acc = jr_eval_acc_new(K, names, o->pass_threshold, o->ks, o->n_ks))) { st = jr_fail(JR_ENOMEM, "eval: out of memory"); goto done; }
    for (size_t i = 0; i < ns && !st; i++) {
        json_t *row = json_array_get(samples, i);
        jr_eval_score s = {0};
        double vals[JR_REWARD_MAX_COMPONENTS];
        uint8_t vsc[JR_REWARD_MAX_COMPONENTS];
        char why[512];
        s.source = jr_eval_row_source(row);
        s.group = json_string_value(json_object_get(row, "_group"));
        if (rw) {
            s.has_reward = 1;
            s.reward_scored = res[i].scored;
            s.reward = res[i].reward;
            s.reason = res[i].reason;
            for (int k = 0; k < K; k++) { vals[k] = res[i].parts[k].value; vsc[k] = (uint8_t)res[i].parts[k].scored; }
            s.vals = vals;
            s.vscored = vsc;
            json_t *rj = jr_reward_result_json(rw, &res[i]);
            json_object_set(row, "reward", json_object_get(rj, "reward"));
            json_object_set(row, "reward_components", json_object_get(rj, "components"));
            if (res[i].reason) json_object_set_new(row, "reward_reason", json_string(res[i].reason));
            json_decref(rj);
        }
        if (o->ifeval) ifeval_sample(row, &s, why, sizeof why);
        st = jr_eval_acc_add(acc, &s);
        json_object_del(row, "_group");
    }
    if (st) goto done;
    *summary = jr_eval_acc_summary(acc);
    json_object_set_new(*summary, "model", o->model ? json_string(o->model) : json_null());
    if (o->adapter) json_object_set_new(*summary, "adapter", json_string(o->adapter));
    json_object_set_new(*summary, "data", json_string(o->samples ? o->samples : o->data));
    json_object_set_new(*summary, "n", json_integer(o->samples ? 0 : o->n));
    if (o->out_dir) {
        char *sp = jr_path_join(o->out_dir, "samples.jsonl"), *mp = jr_path_join(o->out_dir, "summary.json");
        char *text = json_dumps(*summary, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (!sp || !mp || !text) st = jr_fail(JR_ENOMEM, "eval: out of memory");
        if (!st) st = jr_mkdirs(o->out_dir);
        if (!st) st = write_jsonl(sp, samples);
        if (!st) st = jr_write_atomic(mp, text, strlen(text));
        free(sp);
        free(mp);
        free(text);
        if (st) { json_decref(*summary); *summary = NULL; }
    }
done:
    for (size_t i = 0; res && i < json_array_size(samples); i++) jr_reward_result_free(&res[i]);
    free(res);
    jr_reward_close(rw);
    jr_eval_acc_free(acc);
    json_decref(rows);
    json_decref(samples);
    return st;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

jr_status jr_eval_checkpoints(const char *run_dir, char ***dirs, int *n) {
    *dirs = NULL;
    *n = 0;
    char *cd = jr_path_join(run_dir, "checkpoints");
    DIR *d = cd ? opendir(cd) : NULL;
    if (!d) {
        jr_status st = jr_fail(JR_EIO, "%s: not a model directory (no config.json) nor a run directory (no checkpoints/)", run_dir);
        free(cd);
        return st;
    }
    struct dirent *e;
    char **v = NULL;
    int k = 0;
    jr_status st = JR_OK;
    while (!st && (e = readdir(d))) {
        if (strncmp(e->d_name, "step-", 5) || strspn(e->d_name + 5, "0123456789") != strlen(e->d_name + 5) || !e->d_name[5]) continue;
        char **nv = realloc(v, (size_t)(k + 1) * sizeof *v);
        if (!nv) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
        v = nv;
        if (!(v[k] = jr_path_join(cd, e->d_name))) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
        k++;
    }
    closedir(d);
    free(cd);
    if (!st && !k) st = jr_fail(JR_EINVAL, "%s/checkpoints: no step-* checkpoint", run_dir);
    if (st) {
        for (int i = 0; i < k; i++) free(v[i]);
        free(v);
        return st;
    }
    qsort(v, (size_t)k, sizeof *v, cmp_str); /* step-NNNNNNNN: fixed width, so text order is step order */
    *dirs = v;
    *n = k;
    return JR_OK;
}
