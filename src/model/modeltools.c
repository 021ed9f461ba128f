/* modeltools.c - whole-directory model operations: forward with a dump, LoRA merge into a new
 * directory, dtype / shard conversion, GGUF export of a directory (modeltools.h) */
#include "judgerl/modeltools.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>

#include "judgerl/fsutil.h"
#include "judgerl/hfdir.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/tok.h"

/* The forward (and, with targets, the loss and backward); *logits gets the logits to dump (a.logits
 * or, with targets, a copy kept before the backward consumes them) when want_logits. */
static jr_status forward_pass(jr_model *m, jr_acts *a, const jr_forward_opts *o, int want_logits, float **logits, FILE *out) {
    int n = o->n;
    jr_status st = jr_model_forward(m, a, o->ids, 1, n);
    if (st || !o->targets) {
        *logits = a->logits;
        return st;
    }
    size_t nl = (size_t)n * m->cfg.vocab_size;
    if (want_logits && !(*logits = jr_malloc(sizeof(float) * nl))) return JR_ENOMEM;
    if (*logits) memcpy(*logits, a->logits, sizeof(float) * nl);
    float *lp = jr_malloc(sizeof(float) * (size_t)n);
    if (!lp) return JR_ENOMEM;
    long k = 0, cnt = 0;
    double nll = 0;
    for (int i = 0; i < n; i++) k += o->targets[i] >= 0;
    st = jr_model_nll(m, a, o->ids, o->targets, 1, n, k ? 1.0f / (float)k : 0.0f, lp, &nll, &cnt);
    free(lp);
    if (!st && cnt == 0) st = jr_fail(JR_EINVAL, "--targets: every target is -1, nothing to score");
    if (!st) fprintf(out, "loss %.9g\n", nll / cnt);
    return st;
}

/* The logits and, with targets, every gradient into o->dump. */
static jr_status dump_tensors(const jr_model *m, const jr_forward_opts *o, float *logits) {
    int ne = 1 + (o->targets ? m->n_tensors : 0);
    jr_st_entry *e = jr_calloc((size_t)ne, sizeof *e);
    if (!e) return JR_ENOMEM;
    e[0].name = "logits"; e[0].ndim = 3; e[0].shape[0] = 1; e[0].shape[1] = o->n;
    e[0].shape[2] = m->cfg.vocab_size; e[0].data = logits;
    for (int i = 0; o->targets && i < m->n_tensors; i++) {
        e[1 + i].name = m->tensors[i].name;
        e[1 + i].ndim = m->tensors[i].ndim;
        e[1 + i].shape[0] = m->tensors[i].shape[0];
        e[1 + i].shape[1] = m->tensors[i].shape[1];
        e[1 + i].data = m->grads + m->offset[i];
    }
    jr_status st = jr_st_write(o->dump, e, ne, JR_DT_F32);
    free(e);
    return st;
}

jr_status jr_model_forward_file(const jr_forward_opts *o, FILE *out) {
    jr_model m;
    jr_acts a;
    memset(&a, 0, sizeof a);
    jr_status st = jr_model_load(&m, o->model);
    if (st) return st;
    const int32_t *ids = o->ids, *tg = o->targets;
    for (int i = 0; i < o->n && !st; i++)
        if (ids[i] < 0 || ids[i] >= m.cfg.vocab_size || (tg && tg[i] >= m.cfg.vocab_size))
            st = jr_fail(JR_EINVAL, "token id %d at position %d is outside the model's vocabulary [0, %d)",
                         ids[i] < 0 || ids[i] >= m.cfg.vocab_size ? ids[i] : tg[i], i, m.cfg.vocab_size);
    float *logits = NULL;
    if (!st) st = jr_acts_init(&a, &m, 1, o->n);
    if (!st) st = forward_pass(&m, &a, o, o->dump != NULL, &logits, out);
    if (!st && o->dump) st = dump_tensors(&m, o, logits);
    if (logits != a.logits) free(logits);
    jr_acts_free(&a);
    jr_model_free(&m);
    return st;
}

/* The last path component of p (trailing slashes ignored) into out. */
static void last_part(const char *p, char *out, size_t cap) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && p[b - 1] != '/') b--;
    snprintf(out, cap, "%.*s", (int)(n - b), p + b);
}

/* The adapter's base_model_name_or_path must name `model`: the same directory, or (a hub name such
 * as "Qwen/Qwen2.5-0.5B") a model directory of the same last name or whose config.json has it as
 * _name_or_path. No name (a fresh model.init) passes: the shapes are checked when loading. */
static jr_status check_base(const char *model, const char *adapter) {
    char *ap = jr_path_join(adapter, "adapter_config.json"), *mp = jr_path_join(model, "config.json");
    json_t *ac = ap ? json_load_file(ap, 0, NULL) : NULL, *mc = mp ? json_load_file(mp, 0, NULL) : NULL;
    const char *base = json_string_value(json_object_get(ac, "base_model_name_or_path"));
    const char *mname = json_string_value(json_object_get(mc, "_name_or_path"));
    jr_status st = JR_OK;
    if (base && *base) {
        char ra[PATH_MAX], rb[PATH_MAX], la[256], lb[256];
        int same = realpath(model, ra) && realpath(base, rb) && !strcmp(ra, rb);
        last_part(model, la, sizeof la);
        last_part(base, lb, sizeof lb);
        if (!same && !jr_path_exists(base)) same = !strcmp(la, lb) || (mname && !strcmp(mname, base));
        if (!same)
            st = jr_fail(JR_EINVAL, "%s was trained on base model '%s', not %s: merging it into another model gives "
                         "a wrong model (--force merges anyway when the shapes match)", ap, base, model);
    }
    json_decref(ac);
    json_decref(mc);
    free(ap);
    free(mp);
    return st;
}

jr_status jr_lora_merge_dir(const jr_merge_opts *o, int *n_tok) {
    jr_status st = o->force ? JR_OK : check_base(o->model, o->adapter);
    if (st) return st;
    jr_model m;
    if ((st = jr_model_load(&m, o->model))) return st;
    /* out is built beside itself and swapped in whole: a kill leaves the old out or the new one */
    jr_adir ad = {0};
    *n_tok = 0;
    if (!(st = jr_lora_merge_into(&m, o->adapter)) && !(st = jr_adir_open(&ad, o->out, "config.json")) &&
        !(st = jr_model_save(&m, ad.tmp, NULL)) &&
        !(st = jr_tok_copy_dir_files(o->model, ad.tmp, n_tok))) /* the merged model keeps the base's tokenizer */
        st = jr_adir_commit(&ad);
    else jr_adir_abort(&ad);
    jr_model_free(&m);
    return st;
}

int jr_shard_size_parse(const char *s, size_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return 0;
    double mult = 1;
    if (!strcasecmp(end, "") || !strcasecmp(end, "B")) mult = 1;
    else if (!strcasecmp(end, "KB")) mult = 1e3;
    else if (!strcasecmp(end, "MB")) mult = 1e6;
    else if (!strcasecmp(end, "GB")) mult = 1e9;
    else return 0;
    if (v * mult > 1e18) return 0;
    *out = (size_t)(v * mult);
    return 1;
}

jr_status jr_model_dir_convert(const jr_convert_opts *o, int *n_tensors, int *n_tok) {
    jr_hfdir d;
    jr_status rc = jr_hfdir_open(&d, o->model);
    if (rc) return rc;
    float **w = calloc((size_t)d.n_tensors + 1, sizeof *w);
    if (!w) rc = jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < d.n_tensors; i++) {
        if (!(w[i] = malloc((size_t)d.tensors[i].numel * sizeof(float) + 1))) rc = jr_fail(JR_ENOMEM, "out of memory");
        else rc = jr_hfdir_read_f32(&d, i, w[i]);
    }
    /* out is built beside itself and swapped in whole: a kill leaves the old out or the new one */
    jr_adir ad = {0};
    *n_tok = 0;
    if (!rc) rc = jr_adir_open(&ad, o->out, "config.json");
    if (!rc) rc = jr_hfdir_write(ad.tmp, &d.cfg, d.has_gen ? &d.gen : NULL, (const float *const *)w, o->dtype, o->max_shard);
    if (!rc) rc = jr_tok_copy_dir_files(o->model, ad.tmp, n_tok); /* the output keeps the model's tokenizer */
    if (!rc) rc = jr_adir_commit(&ad);
    else jr_adir_abort(&ad);
    for (int i = 0; w && i < d.n_tensors; i++) free(w[i]);
    free(w);
    *n_tensors = d.n_tensors;
    jr_hfdir_close(&d);
    return rc;
}

jr_status jr_gguf_export_dir(const jr_gguf_opts *o, const char *adapter, jr_gguf_report *rep) {
    jr_model m;
    jr_status st = jr_model_load(&m, o->model_dir);
    if (st) return st;
    if (!(st = adapter ? jr_lora_merge_into(&m, adapter) : JR_OK)) st = jr_gguf_export(&m, o, rep);
    jr_model_free(&m);
    return st;
}
