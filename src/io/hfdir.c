/* hfdir.c - Hugging Face model directories: weights in model.safetensors or shards + index, read and written */
#include "judgerl/hfdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "judgerl/fsutil.h"

#define SINGLE_NAME "model.safetensors"
#define INDEX_NAME "model.safetensors.index.json"

void jr_hfdir_close(jr_hfdir *d) {
    if (!d) return;
    for (int i = 0; i < d->n_files; i++) jr_st_close(&d->files[i]);
    free(d->files);
    free(d->tensors);
    free(d->st);
    free(d->file_of);
    free(d->dir);
    jr_model_config_free(&d->cfg);
    jr_generation_config_free(&d->gen);
    memset(d, 0, sizeof *d);
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t p = 0;
    buf[0] = 0;
    for (int i = 0; i < ndim && p + 24 < cap; i++)
        p += (size_t)snprintf(buf + p, cap - p, "%s%lld", i ? "," : "", (long long)shape[i]);
}

/* Index of the expected tensor called `name` (d->tensors sorted view `order`), or -1. */
static int find_expected(const jr_hfdir *d, const int *order, const char *name) {
    int lo = 0, hi = d->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(name, d->tensors[order[mid]].name);
        if (!c) return order[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return -1;
}

static int cmp_tensor_name(const void *a, const void *b, void *ctx) {
    const jr_model_tensor *t = ctx;
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Tensors that are not parameters but that some exporters write: ignored. */
static int ignorable(const jr_hfdir *d, const char *name) {
    /* A tied lm_head is the embedding; some exporters write a copy anyway: the embedding wins. */
    if (d->cfg.tie_word_embeddings && !strcmp(name, "lm_head.weight")) return 1;
    /* Older Llama checkpoints stored the rotary inverse frequencies (recomputed from config). */
    size_t n = strlen(name), k = strlen("rotary_emb.inv_freq");
    return n >= k && !strcmp(name + n - k, "rotary_emb.inv_freq");
}

/* Reads model.safetensors.index.json: the list of shard files (sorted, unique) and the weight map. */
static jr_status read_index(const char *path, json_t **map_out, char ***files_out, int *n_out) {
    *map_out = NULL;
    *files_out = NULL;
    *n_out = 0;
    char *text;
    size_t len;
    jr_status rc = jr_read_file(path, &text, &len);
    if (rc) return rc;
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!j) return jr_fail(JR_EFORMAT, "%s: not valid JSON: %s (line %d)", path, jerr.text, jerr.line);
    json_t *wm = json_object_get(j, "weight_map");
    if (!json_is_object(j) || !json_is_object(wm)) {
        json_decref(j);
        return jr_fail(JR_EFORMAT, "%s: no weight_map object", path);
    }
    size_t n = json_object_size(wm), k = 0;
    char **files = jr_calloc(n + 1, sizeof *files);
    if (!files) { json_decref(j); return JR_ENOMEM; }
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        const char *f = json_string_value(v);
        if (!f || !*f || strchr(f, '/') || !strcmp(f, ".") || !strcmp(f, "..")) {
            rc = jr_fail(JR_EFORMAT, "%s: weight_map['%s'] must be a file name in the same directory", path, key);
            break;
        }
        files[k++] = (char *)f;
    }
    if (rc) { free(files); json_decref(j); return rc; }
    qsort(files, k, sizeof *files, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || strcmp(files[i], files[u - 1])) files[u++] = files[i];
    /* the strings belong to j: copy them so j can be kept only as the map */
    for (size_t i = 0; i < u; i++) {
        if (!(files[i] = jr_strdup(files[i]))) {
            for (size_t m = 0; m < i; m++) free(files[m]);
            free(files);
            json_decref(j);
            return JR_ENOMEM;
        }
    }
    json_incref(wm);
    json_decref(j);
    *map_out = wm;
    *files_out = files;
    *n_out = (int)u;
    return JR_OK;
}

/* Matches every file's tensors to the expected list. `index` (may be NULL) is the weight map. */
static jr_status match_tensors(jr_hfdir *d, json_t *wmap, const char *index_path) {
    int *order = jr_calloc((size_t)d->n_tensors + 1, sizeof *order);
    if (!order) return JR_ENOMEM;
    for (int i = 0; i < d->n_tensors; i++) order[i] = i;
    qsort_r(order, (size_t)d->n_tensors, sizeof *order, cmp_tensor_name, d->tensors);
    jr_status rc = JR_OK;
    char a[160], b[160];
    for (int f = 0; f < d->n_files && !rc; f++) {
        const jr_safetensors *st = &d->files[f];
        const char *base = strrchr(st->path, '/') ? strrchr(st->path, '/') + 1 : st->path;
        for (int k = 0; k < st->n && !rc; k++) {
            const jr_st_tensor *t = &st->tensors[k];
            if (wmap) {
                const char *mapped = json_string_value(json_object_get(wmap, t->name));
                if (!mapped) {
                    rc = jr_fail(JR_EFORMAT, "%s: tensor '%s' is not in the weight_map of %s", st->path, t->name, index_path);
                    break;
                }
                if (strcmp(mapped, base)) {
                    rc = jr_fail(JR_EFORMAT, "%s: tensor '%s' is here but %s maps it to %s", st->path, t->name,
                                 index_path, mapped);
                    break;
                }
            }
            int i = find_expected(d, order, t->name);
            if (i < 0) {
                if (ignorable(d, t->name)) continue;
                rc = jr_fail(JR_EFORMAT, "%s: unknown tensor '%s' (not a parameter of this %s config: check config.json)",
                             st->path, t->name, jr_arch_name(d->cfg.arch));
                break;
            }
            const jr_model_tensor *e = &d->tensors[i];
            if (d->st[i]) {
                rc = jr_fail(JR_EFORMAT, "%s: tensor '%s' is also in %s", st->path, t->name, jr_hfdir_file_of(d, i));
                break;
            }
            int same = t->ndim == e->ndim;
            for (int x = 0; same && x < e->ndim; x++) same = t->shape[x] == e->shape[x];
            if (!same) {
                shape_str(a, sizeof a, t->ndim, t->shape);
                shape_str(b, sizeof b, e->ndim, e->shape);
                rc = jr_fail(JR_EFORMAT, "%s: tensor '%s': shape [%s] but config.json implies [%s]", st->path, t->name, a, b);
                break;
            }
            if (t->dtype != JR_DT_F32 && t->dtype != JR_DT_F16 && t->dtype != JR_DT_BF16) {
                rc = jr_fail(JR_EUNSUPPORTED, "%s: tensor '%s': dtype %s (weights must be F32, F16 or BF16)", st->path,
                             t->name, jr_dtype_name(t->dtype));
                break;
            }
            d->st[i] = t;
            d->file_of[i] = f;
        }
    }
    if (!rc && wmap) { /* every weight_map entry must be in the file it names */
        const char *key;
        json_t *v;
        json_object_foreach(wmap, key, v) {
            int i = find_expected(d, order, key);
            if (i >= 0 && d->st[i]) continue;
            int found = 0;
            for (int f = 0; f < d->n_files && !found; f++) {
                const char *p = d->files[f].path, *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
                if (!strcmp(base, json_string_value(v))) found = jr_st_find(&d->files[f], key) != NULL;
            }
            if (!found) {
                rc = jr_fail(JR_EFORMAT, "%s: weight_map lists tensor '%s' but %s does not contain it", index_path, key,
                             json_string_value(v));
                break;
            }
        }
    }
    for (int i = 0; i < d->n_tensors && !rc; i++) {
        if (!d->st[i]) {
            shape_str(a, sizeof a, d->tensors[i].ndim, d->tensors[i].shape);
            rc = jr_fail(JR_ENOTFOUND, "%s: missing tensor '%s' (shape [%s], implied by config.json)",
                         wmap ? index_path : d->files[0].path, d->tensors[i].name, a);
        }
    }
    free(order);
    return rc;
}

jr_status jr_hfdir_open(jr_hfdir *d, const char *dir) {
    memset(d, 0, sizeof *d);
    jr_generation_config_init(&d->gen);
    jr_status rc = JR_OK;
    char *cfg_path = jr_path_join(dir, "config.json"), *gen_path = jr_path_join(dir, "generation_config.json");
    char *single = jr_path_join(dir, SINGLE_NAME), *index = jr_path_join(dir, INDEX_NAME);
    char **shards = NULL;
    int n_shards = 0;
    json_t *wmap = NULL;
    if (!cfg_path || !gen_path || !single || !index || !(d->dir = jr_strdup(dir))) { rc = JR_ENOMEM; goto done; }
    if (!jr_path_exists(dir)) { rc = jr_fail(JR_ENOTFOUND, "%s: no such model directory", dir); goto done; }
    if (!jr_path_exists(cfg_path)) {
        rc = jr_fail(JR_ENOTFOUND, "%s: no config.json: not a Hugging Face model directory", dir);
        goto done;
    }
    if ((rc = jr_model_config_load(&d->cfg, cfg_path))) goto done;
    if (jr_path_exists(gen_path)) {
        if ((rc = jr_generation_config_load(&d->gen, gen_path))) goto done;
        d->has_gen = 1;
    }
    if ((rc = jr_model_tensors(&d->cfg, &d->tensors, &d->n_tensors))) goto done;
    d->st = jr_calloc((size_t)d->n_tensors + 1, sizeof *d->st);
    d->file_of = jr_calloc((size_t)d->n_tensors + 1, sizeof *d->file_of);
    if (!d->st || !d->file_of) { rc = JR_ENOMEM; goto done; }
    /* transformers looks for model.safetensors first, then the sharded index: so do we */
    if (jr_path_exists(single)) {
        d->files = jr_calloc(1, sizeof *d->files);
        if (!d->files) { rc = JR_ENOMEM; goto done; }
        if ((rc = jr_st_open(&d->files[0], single))) goto done;
        d->n_files = 1;
    } else if (jr_path_exists(index)) {
        if ((rc = read_index(index, &wmap, &shards, &n_shards))) goto done;
        d->files = jr_calloc((size_t)n_shards + 1, sizeof *d->files);
        if (!d->files) { rc = JR_ENOMEM; goto done; }
        for (int i = 0; i < n_shards; i++) {
            char *p = jr_path_join(dir, shards[i]);
            if (!p) { rc = JR_ENOMEM; goto done; }
            if (!jr_path_exists(p)) {
                rc = jr_fail(JR_ENOTFOUND, "%s: shard %s listed in the weight_map is missing", index, shards[i]);
                free(p);
                goto done;
            }
            rc = jr_st_open(&d->files[i], p);
            free(p);
            if (rc) goto done;
            d->n_files++;
        }
    } else {
        rc = jr_fail(JR_ENOTFOUND, "%s: no %s or %s: the directory has no weights", dir, SINGLE_NAME, INDEX_NAME);
        goto done;
    }
    rc = match_tensors(d, wmap, index);
done:
    for (int i = 0; i < n_shards; i++) free(shards[i]);
    free(shards);
    json_decref(wmap);
    free(cfg_path); free(gen_path); free(single); free(index);
    if (rc) jr_hfdir_close(d);
    return rc;
}

jr_status jr_hfdir_read_f32(const jr_hfdir *d, int i, float *out) {
    if (i < 0 || i >= d->n_tensors || !d->st[i]) return jr_fail(JR_EINVAL, "%s: no tensor %d", d->dir, i);
    return jr_st_read_f32(&d->files[d->file_of[i]], d->st[i], out);
}

void jr_hfdir_release(const jr_hfdir *d, int i) {
    if (i < 0 || i >= d->n_tensors || !d->st[i] || !d->files[d->file_of[i]].path) return; /* not a mapping of ours */
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)d->st[i]->data, b = a + d->st[i]->nbytes;
    a = (a + pg - 1) & ~(pg - 1); /* whole pages inside the tensor only: its neighbours keep theirs */
    b &= ~(pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

const char *jr_hfdir_file_of(const jr_hfdir *d, int i) {
    if (i < 0 || i >= d->n_tensors || !d->st[i]) return "";
    return d->files[d->file_of[i]].path;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* 1 when `name` is a shard name "model-NNNNN-of-MMMMM.safetensors"; *k and *of get the numbers. */
static int shard_name(const char *name, int *k, int *of) {
    char tail[32];
    int used = 0;
    if (strlen(name) != strlen("model-00001-of-00001.safetensors")) return 0;
    if (sscanf(name, "model-%5d-of-%5d%n", k, of, &used) != 2 || used != 20) return 0;
    snprintf(tail, sizeof tail, "%s", name + used);
    return !strcmp(tail, ".safetensors");
}

/* Removes weight files of another layout: the single file, the index, shards not in this one. */
static jr_status remove_stale(const char *dir, int n_shards) {
    DIR *dp = opendir(dir);
    if (!dp) return jr_fail(JR_EIO, "%s: cannot list: %s", dir, strerror(errno));
    jr_status rc = JR_OK;
    struct dirent *de;
    while ((de = readdir(dp)) && !rc) {
        int k, of, stale = 0;
        if (n_shards > 0 && !strcmp(de->d_name, SINGLE_NAME)) stale = 1;
        else if (n_shards == 0 && !strcmp(de->d_name, INDEX_NAME)) stale = 1;
        else if (shard_name(de->d_name, &k, &of)) stale = of != n_shards || k < 1 || k > n_shards;
        if (!stale) continue;
        char *p = jr_path_join(dir, de->d_name);
        if (!p) rc = JR_ENOMEM;
        else if (unlink(p) != 0 && errno != ENOENT) rc = jr_fail(JR_EIO, "%s: cannot remove stale file: %s", p, strerror(errno));
        free(p);
    }
    closedir(dp);
    if (!rc) rc = jr_fsync_dir(dir);
    return rc;
}

static const char *torch_dtype_name(jr_dtype dt) {
    return dt == JR_DT_F16 ? "float16" : dt == JR_DT_BF16 ? "bfloat16" : "float32";
}

jr_status jr_hfdir_write(const char *dir, const jr_model_config *cfg, const jr_generation_config *gen,
                         const float *const *tensors, jr_dtype dtype, size_t max_shard_bytes) {
    if (dtype != JR_DT_F32 && dtype != JR_DT_F16 && dtype != JR_DT_BF16)
        return jr_fail(JR_EINVAL, "%s: weights are written as float32, float16 or bfloat16, not %s", dir, jr_dtype_name(dtype));
    jr_model_tensor *mt;
    int n;
    jr_status rc = jr_model_tensors(cfg, &mt, &n);
    if (rc) return rc;
    jr_st_entry *ents = jr_calloc((size_t)n + 1, sizeof *ents);
    int *shard_of = jr_calloc((size_t)n + 1, sizeof *shard_of);
    char *path = NULL, *text = NULL;
    json_t *index = NULL;
    if (!ents || !shard_of) { rc = JR_ENOMEM; goto done; }
    if ((rc = jr_mkdirs(dir))) goto done;
    /* shards, in list order: a new shard starts when the next tensor would pass the limit
     * (a tensor larger than the limit gets a shard of its own), as huggingface_hub splits */
    size_t es = jr_dtype_size(dtype), total = 0, cur = 0;
    int n_shards = 1;
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) { rc = jr_fail(JR_EINVAL, "%s: no data for tensor '%s'", dir, mt[i].name); goto done; }
        ents[i].name = mt[i].name;
        ents[i].ndim = mt[i].ndim;
        ents[i].shape[0] = mt[i].shape[0];
        ents[i].shape[1] = mt[i].shape[1];
        ents[i].data = tensors[i];
        size_t nb = (size_t)mt[i].numel * es;
        if (max_shard_bytes && cur > 0 && cur + nb > max_shard_bytes) { n_shards++; cur = 0; }
        shard_of[i] = n_shards - 1;
        cur += nb;
        total += nb;
    }
    if (!max_shard_bytes || total <= max_shard_bytes) {
        n_shards = 1;
        for (int i = 0; i < n; i++) shard_of[i] = 0;
    }
    if (n_shards == 1) {
        if (!(path = jr_path_join(dir, SINGLE_NAME))) { rc = JR_ENOMEM; goto done; }
        if ((rc = jr_st_write(path, ents, n, dtype))) goto done;
    } else {
        json_t *wm = json_object(), *meta = json_object();
        index = json_object();
        if (!wm || !meta || !index) { json_decref(wm); json_decref(meta); rc = jr_fail(JR_ENOMEM, "out of memory"); goto done; }
        json_object_set_new(meta, "total_size", json_integer((json_int_t)total));
        json_object_set_new(index, "metadata", meta);
        json_object_set_new(index, "weight_map", wm);
        for (int s = 0, first = 0; s < n_shards; s++) {
            int last = first;
            while (last < n && shard_of[last] == s) last++;
            char name[64];
            snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
            free(path);
            if (!(path = jr_path_join(dir, name))) { rc = JR_ENOMEM; goto done; }
            if ((rc = jr_st_write(path, ents + first, last - first, dtype))) goto done;
            for (int i = first; i < last; i++) json_object_set_new(wm, mt[i].name, json_string(name));
            first = last;
        }
        if (!(text = jr_hf_json_dumps(index))) { rc = JR_ENOMEM; goto done; }
        free(path);
        if (!(path = jr_path_join(dir, INDEX_NAME))) { rc = JR_ENOMEM; goto done; }
        if ((rc = jr_write_atomic(path, text, strlen(text)))) goto done;
    }
    /* config.json: the caller's config with torch_dtype saying what the weights are */
    jr_model_config c2 = *cfg;
    snprintf(c2.torch_dtype, sizeof c2.torch_dtype, "%s", torch_dtype_name(dtype));
    free(path);
    if (!(path = jr_path_join(dir, "config.json"))) { rc = JR_ENOMEM; goto done; }
    if ((rc = jr_model_config_save(&c2, path))) goto done;
    if (gen) {
        free(text);
        if (!(text = jr_generation_config_to_json(gen))) { rc = JR_ENOMEM; goto done; }
        free(path);
        if (!(path = jr_path_join(dir, "generation_config.json"))) { rc = JR_ENOMEM; goto done; }
        if ((rc = jr_write_atomic(path, text, strlen(text)))) goto done;
    }
    rc = remove_stale(dir, n_shards == 1 ? 0 : n_shards);
done:
    json_decref(index);
    free(text);
    free(path);
    free(shard_of);
    free(ents);
    free(mt);
    return rc;
}
