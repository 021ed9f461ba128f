/* checkpoint.c - atomic training checkpoints (model dir + optimizer moments + trainer state) and resume */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judgerl/checkpoint.h"
#include "judgerl/cpu.h"
#include "judgerl/fsutil.h"
#include "judgerl/textcodec.h"
#include "judgerl/fsutil.h"
#include "judgerl/safetensors.h"

#define STATE_FORMAT "judgerl-trainer-state"
#define STATE_VERSION 1

/* Removes a flat directory we wrote (files only) and the directory itself. */
static jr_status write_moments(const char *path, const jr_model *m, const jr_adamw *o) {
    int n = m->n_tensors;
    jr_st_entry *e = jr_calloc((size_t)(2 * n), sizeof *e);
    char (*names)[112] = jr_calloc((size_t)(2 * n), sizeof *names);
    if (!e || !names) { free(e); free(names); return JR_ENOMEM; }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            jr_st_entry *x = &e[k * n + i];
            snprintf(names[k * n + i], sizeof names[0], "%s.%s", k ? "exp_avg_sq" : "exp_avg", m->tensors[i].name);
            x->name = names[k * n + i];
            x->ndim = m->tensors[i].ndim;
            x->shape[0] = m->tensors[i].shape[0];
            x->shape[1] = m->tensors[i].shape[1];
            x->data = o->state + (size_t)k * o->n + m->offset[i];
        }
    jr_status st = jr_st_write(path, e, 2 * n, JR_DT_F32);
    free(e); free(names);
    return st;
}

static jr_status write_state(const char *path, const jr_adamw *o, const jr_train_state *s) {
    json_t *j = json_object(), *rng = json_array();
    char hex[32];
    for (int i = 0; i < 4; i++) {
        snprintf(hex, sizeof hex, "%016" PRIx64, s->rng.s[i]);
        json_array_append_new(rng, json_string(hex));
    }
    json_object_set_new(j, "format", json_string(STATE_FORMAT));
    json_object_set_new(j, "version", json_integer(STATE_VERSION));
    json_object_set_new(j, "step", json_integer(s->step));
    json_object_set_new(j, "data_epoch", json_integer(s->data.epoch));
    json_object_set_new(j, "data_index", json_integer(s->data.index));
    json_object_set_new(j, "tokens", json_integer(s->tokens));
    json_object_set_new(j, "adam_t", json_integer(o->t));
    json_object_set_new(j, "rng", rng);
    /* where the run was: a resume on another level is exact only up to that level's rounding */
    json_object_set_new(j, "kernel_level", json_string(jr_cpu_level_name(jr_cpu_level_get())));
    json_object_set_new(j, "arch", json_string(jr_cpu_arch()));
    char *text = json_dumps(j, JSON_INDENT(2));
    json_decref(j);
    if (!text) return jr_fail(JR_ENOMEM, "%s: cannot serialise the trainer state", path);
    jr_status st = jr_write_atomic(path, text, strlen(text));
    free(text);
    return st;
}

static int is_step_dir(const char *name, int64_t *step) {
    if (strncmp(name, "step-", 5)) return 0;
    char *end;
    long long v = strtoll(name + 5, &end, 10);
    if (*end || end == name + 5 || v < 0) return 0;
    *step = v;
    return 1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void prune(const char *cdir, int keep, int64_t latest) {
    if (keep <= 0) return;
    DIR *d = opendir(cdir);
    if (!d) return;
    int64_t *steps = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t s;
        if (!is_step_dir(e->d_name, &s)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int64_t *ns = realloc(steps, cap * sizeof *ns);
            if (!ns) break;
            steps = ns;
        }
        steps[n++] = s;
    }
    closedir(d);
    if (n > (size_t)keep) {
        qsort(steps, n, sizeof *steps, cmp_i64);
        for (size_t i = 0; i + (size_t)keep < n; i++) {
            if (steps[i] == latest) continue;
            char name[64];
            snprintf(name, sizeof name, "step-%08" PRId64, steps[i]);
            char *p = jr_path_join(cdir, name);
            if (p) { (void)jr_rmtree(p); free(p); } /* a failed prune leaves an old step: never wrong, only bigger */
        }
    }
    free(steps);
}

jr_status jr_ckpt_save(const char *run_dir, const jr_model *m, const jr_adamw *o, const jr_train_state *s, int keep) {
    return jr_ckpt_save_with(run_dir, m, o, s, keep, NULL, NULL);
}

jr_status jr_ckpt_save_with(const char *run_dir, const jr_model *m, const jr_adamw *o, const jr_train_state *s,
                            int keep, jr_status (*write)(void *ud, const char *dir), void *ud) {
    char name[64], tmpname[64];
    snprintf(name, sizeof name, "step-%08" PRId64, s->step);
    snprintf(tmpname, sizeof tmpname, ".tmp-step-%08" PRId64, s->step);
    char *cdir = jr_path_join(run_dir, "checkpoints");
    char *tmp = cdir ? jr_path_join(cdir, tmpname) : NULL;
    char *fin = cdir ? jr_path_join(cdir, name) : NULL;
    char *opt = tmp ? jr_path_join(tmp, "optimizer.safetensors") : NULL;
    char *stp = tmp ? jr_path_join(tmp, "trainer_state.json") : NULL;
    char *latest = cdir ? jr_path_join(cdir, "latest") : NULL;
    jr_status st = JR_OK;
    if (!cdir || !tmp || !fin || !opt || !stp || !latest) { st = JR_ENOMEM; goto done; }
    if ((st = jr_mkdirs(cdir))) goto done;
    if ((st = jr_rmtree(tmp))) goto done; /* a leftover of a run killed mid-save */
    if ((st = jr_mkdirs(tmp))) goto done;
    if ((st = write ? write(ud, tmp) : jr_model_save(m, tmp, NULL))) goto done;
    if ((st = write_moments(opt, m, o))) goto done;
    if ((st = write_state(stp, o, s))) goto done;
    if ((st = jr_fsync_dir(tmp))) goto done;
    if ((st = jr_rmtree(fin))) goto done; /* the same step saved again after a resume */
    if (rename(tmp, fin)) {
        st = jr_fail(JR_EIO, "%s: cannot rename to %s: %s", tmp, fin, strerror(errno));
        goto done;
    }
    if ((st = jr_fsync_dir(cdir))) goto done;
    char text[80];
    int len = snprintf(text, sizeof text, "%s\n", name);
    if ((st = jr_write_atomic(latest, text, (size_t)len))) goto done;
    prune(cdir, keep, s->step);
done:
    if (st && tmp) (void)jr_rmtree(tmp); /* the error reported is the first one */
    if (st) jr_fail_ctx(st, "checkpoint %s", name);
    free(cdir); free(tmp); free(fin); free(opt); free(stp); free(latest);
    return st;
}

jr_status jr_ckpt_latest(const char *run_dir, char **path) {
    *path = NULL;
    char *cdir = jr_path_join(run_dir, "checkpoints");
    char *latest = cdir ? jr_path_join(cdir, "latest") : NULL;
    jr_status st = JR_OK;
    if (!cdir || !latest) { st = JR_ENOMEM; goto done; }
    if (!jr_path_exists(latest)) goto done;
    char *text = NULL;
    if ((st = jr_read_file(latest, &text, NULL))) goto done;
    text[strcspn(text, "\r\n")] = 0;
    int64_t step;
    if (!is_step_dir(text, &step)) {
        st = jr_fail(JR_EFORMAT, "%s: expected a line 'step-N', found '%.40s' (delete the file to start over)", latest, text);
    } else if (!(*path = jr_path_join(cdir, text))) {
        st = JR_ENOMEM;
    } else if (!jr_path_exists(*path)) {
        st = jr_fail(JR_ENOTFOUND, "%s names %s, which is missing", latest, *path);
        free(*path); *path = NULL;
    }
    free(text);
done:
    free(cdir); free(latest);
    return st;
}

static jr_status read_state(const char *path, jr_train_state *s, int64_t *adam_t) {
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) return jr_fail(JR_EFORMAT, "%s:%d: %s", path, e.line, e.text);
    jr_status st = JR_OK;
    const char *fmt = json_string_value(json_object_get(j, "format"));
    json_t *rng = json_object_get(j, "rng");
    if (!fmt || strcmp(fmt, STATE_FORMAT))
        st = jr_fail(JR_EFORMAT, "%s: not a judgerl trainer state (format '%s')", path, fmt ? fmt : "");
    else if (json_integer_value(json_object_get(j, "version")) != STATE_VERSION)
        st = jr_fail(JR_EFORMAT, "%s: trainer state version %lld, this judgerl reads version %d", path,
                     (long long)json_integer_value(json_object_get(j, "version")), STATE_VERSION);
    else if (!json_is_array(rng) || json_array_size(rng) != 4)
        st = jr_fail(JR_EFORMAT, "%s: field rng must be 4 hex strings", path);
    if (!st) {
        s->step = json_integer_value(json_object_get(j, "step"));
        s->data.epoch = json_integer_value(json_object_get(j, "data_epoch"));
        s->data.index = json_integer_value(json_object_get(j, "data_index"));
        s->tokens = json_integer_value(json_object_get(j, "tokens"));
        *adam_t = json_integer_value(json_object_get(j, "adam_t"));
        const char *lvl = json_string_value(json_object_get(j, "kernel_level"));
        snprintf(s->kernel_level, sizeof s->kernel_level, "%s", lvl ? lvl : "");
        for (int i = 0; i < 4; i++) {
            const char *h = json_string_value(json_array_get(rng, (size_t)i));
            s->rng.s[i] = h ? strtoull(h, NULL, 16) : 0;
        }
    }
    json_decref(j);
    return st;
}

jr_status jr_ckpt_load(const char *ckpt_dir, jr_model *m, jr_adamw *o, jr_train_state *s, double beta1, double beta2,
                       double eps, double weight_decay) {
    memset(o, 0, sizeof *o);
    memset(s, 0, sizeof *s);
    jr_status st = jr_model_load(m, ckpt_dir);
    if (st) return st;
    if ((st = jr_ckpt_load_state(ckpt_dir, m, o, s, beta1, beta2, eps, weight_decay))) jr_model_free(m);
    return st;
}

jr_status jr_ckpt_load_state(const char *ckpt_dir, const jr_model *m, jr_adamw *o, jr_train_state *s, double beta1,
                             double beta2, double eps, double weight_decay) {
    memset(o, 0, sizeof *o);
    memset(s, 0, sizeof *s);
    jr_status st = JR_OK;
    char *opt = jr_path_join(ckpt_dir, "optimizer.safetensors");
    char *stp = jr_path_join(ckpt_dir, "trainer_state.json");
    jr_safetensors f = {0};
    int64_t adam_t = 0;
    if (!opt || !stp) { st = JR_ENOMEM; goto done; }
    if ((st = read_state(stp, s, &adam_t))) goto done;
    if ((st = jr_adamw_init(o, m, beta1, beta2, eps, weight_decay))) goto done;
    o->t = adam_t;
    if ((st = jr_st_open(&f, opt))) goto done;
    for (int k = 0; k < 2 && !st; k++)
        for (int i = 0; i < m->n_tensors && !st; i++) {
            char name[128];
            snprintf(name, sizeof name, "%s.%s", k ? "exp_avg_sq" : "exp_avg", m->tensors[i].name);
            const jr_st_tensor *t = jr_st_find(&f, name);
            if (!t || t->numel != m->tensors[i].numel)
                st = jr_fail(JR_EFORMAT, "%s: tensor '%s' %s", opt, name, t ? "has the wrong size" : "is missing");
            else
                st = jr_st_read_f32(&f, t, o->state + (size_t)k * o->n + m->offset[i]);
        }
done:
    jr_st_close(&f);
    free(opt); free(stp);
    if (st) jr_adamw_free(o);
    return st;
}

jr_status jr_ckpt_save_final(const char *run_dir, const char *name, const jr_model *m,
                             jr_status (*write)(void *ud, const char *dir), void *ud, const struct jr_textcodec *tok) {
    char *dir = jr_path_join(run_dir, name);
    if (!dir) return JR_ENOMEM;
    jr_adir ad;
    jr_status st = jr_adir_open(&ad, dir, NULL);
    free(dir);
    if (st) return st;
    if (write) st = write(ud, ad.tmp);
    else if (!(st = jr_model_save(m, ad.tmp, NULL)) && tok) st = jr_textcodec_copy_files(tok, ad.tmp);
    if (st) { jr_adir_abort(&ad); return st; }
    return jr_adir_commit(&ad);
}
