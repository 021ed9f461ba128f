/* dataset.c - indexed JSONL files, train/validation splits and a seeded, resumable training order */
#include "judgerl/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/crc32c.h"
#include "judgerl/rng.h"

const jr_cfg_field jr_data_cfg[] = {
    {"data.train", JR_CFG_STRING, "null", "training JSONL file (one JSON object per line)", NULL, NULL, 0, 0},
    {"data.validation", JR_CFG_STRING, "null", "separate validation JSONL file (else data.validation_frac)", NULL,
     NULL, 0, 0},
    {"data.validation_frac", JR_CFG_FLOAT, "0.0", "share of data.train held out for validation, chosen by run.seed",
     NULL, NULL, 0, 0.99},
    {"data.shuffle", JR_CFG_BOOL, "true", "shuffle the training order each epoch (by run.seed and epoch)", NULL, NULL,
     0, 0},
    {"data.on_bad_line", JR_CFG_ENUM, "skip", "a line that is not a JSON object: skip it (warned, counted) or fail",
     "skip|fail", NULL, 0, 0},
    {"data.max_rows", JR_CFG_INT, "0", "use only the first N good rows of each file (0 = all)", NULL, NULL, 0, 1e15},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

/* ---- one indexed file ---- */

struct jr_dataset {
    char *path;
    int fd;            /* kept open for jr_dataset_get (-1: none) */
    int64_t *offset;   /* per row: byte offset of its text */
    int64_t *len;      /* per row: length of its text */
    int64_t *line;     /* per row: line number */
    uint32_t *crc;     /* per row: CRC-32C of its text */
    size_t n, cap;
    int64_t lines, bad;
    char *buf;
    size_t buf_cap;
};

jr_status jr_dataset_open(jr_dataset **out, const char *path, jr_bad_line_policy policy, int64_t max_rows,
                          jr_bad_line_fn on_bad, void *ud) {
    *out = NULL;
    jr_jsonl_reader *r;
    jr_status st = jr_jsonl_open(&r, path, policy, on_bad, ud);
    if (st) return st;
    jr_dataset *ds = jr_calloc(1, sizeof *ds);
    if (ds) ds->fd = -1;
    if (!ds || !(ds->path = jr_strdup(path))) { st = JR_ENOMEM; goto fail; }
    for (;;) {
        if (max_rows > 0 && (int64_t)ds->n >= max_rows) break;
        json_t *row;
        int64_t line, off;
        st = jr_jsonl_next(r, &row, &line, &off);
        if (st) goto fail;
        if (!row) break;
        json_decref(row);
        if (ds->n == ds->cap) {
            size_t nc = ds->cap ? ds->cap * 2 : 256;
            int64_t *o = jr_realloc(ds->offset, nc * sizeof *o);
            if (!o) { st = JR_ENOMEM; goto fail; }
            ds->offset = o;
            int64_t *l = jr_realloc(ds->line, nc * sizeof *l);
            if (!l) { st = JR_ENOMEM; goto fail; }
            ds->line = l;
            int64_t *ln = jr_realloc(ds->len, nc * sizeof *ln);
            if (!ln) { st = JR_ENOMEM; goto fail; }
            ds->len = ln;
            uint32_t *cr = jr_realloc(ds->crc, nc * sizeof *cr);
            if (!cr) { st = JR_ENOMEM; goto fail; }
            ds->crc = cr;
            ds->cap = nc;
        }
        if (ds->n >= UINT32_MAX) { st = jr_fail(JR_EUNSUPPORTED, "%s: more than 2^32-1 rows", path); goto fail; }
        ds->offset[ds->n] = off;
        ds->line[ds->n] = line;
        ds->len[ds->n] = jr_jsonl_last_len(r);
        ds->crc[ds->n] = jr_crc32c(0, jr_jsonl_last_text(r), (size_t)ds->len[ds->n]);
        ds->n++;
    }
    ds->lines = jr_jsonl_lines(r);
    ds->bad = jr_jsonl_bad_lines(r);
    jr_jsonl_close(r);
    r = NULL;
    if (ds->n == 0) {
        st = ds->bad ? jr_fail(JR_EINVAL, "%s: no valid rows (%lld bad lines skipped)", path, (long long)ds->bad)
                     : jr_fail(JR_EINVAL, "%s: no rows (the file is empty)", path);
        goto fail;
    }
    ds->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (ds->fd < 0) { st = jr_fail(JR_EIO, "%s: cannot reopen: %s", path, strerror(errno)); goto fail; }
    *out = ds;
    return JR_OK;
fail:
    jr_jsonl_close(r);
    jr_dataset_close(ds);
    return st;
}

size_t jr_dataset_size(const jr_dataset *ds) { return ds->n; }
int64_t jr_dataset_lines(const jr_dataset *ds) { return ds->lines; }
int64_t jr_dataset_bad_lines(const jr_dataset *ds) { return ds->bad; }
const char *jr_dataset_path(const jr_dataset *ds) { return ds->path; }

jr_status jr_dataset_get(jr_dataset *ds, size_t i, json_t **row, int64_t *line_no) {
    *row = NULL;
    if (i >= ds->n) return jr_fail(JR_EINTERNAL, "%s: row %zu out of range (%zu rows)", ds->path, i, ds->n);
    long long ln = (long long)ds->line[i];
    size_t n = (size_t)ds->len[i];
    if (n + 1 > ds->buf_cap) {
        char *b = jr_realloc(ds->buf, n + 1);
        if (!b) return JR_ENOMEM;
        ds->buf = b;
        ds->buf_cap = n + 1;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(ds->fd, ds->buf + got, n - got, (off_t)(ds->offset[i] + (int64_t)got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return jr_fail(JR_EIO, "%s:%lld: read failed: %s", ds->path, ln, strerror(errno));
        if (r == 0)
            return jr_fail(JR_EIO, "%s:%lld: cannot read the row again: the file changed since it was indexed",
                           ds->path, ln);
        got += (size_t)r;
    }
    if (jr_crc32c(0, ds->buf, n) != ds->crc[i])
        return jr_fail(JR_EIO, "%s:%lld: the row changed since the file was indexed (do not edit a dataset during a run)",
                       ds->path, ln);
    char where[4200];
    snprintf(where, sizeof where, "%s:%lld", ds->path, ln);
    jr_status st = jr_jsonl_parse_line(ds->buf, n, where, row);
    if (st) return st;
    if (line_no) *line_no = ds->line[i];
    return JR_OK;
}

void jr_dataset_close(jr_dataset *ds) {
    if (!ds) return;
    if (ds->fd >= 0) close(ds->fd);
    free(ds->offset);
    free(ds->len);
    free(ds->crc);
    free(ds->line);
    free(ds->buf);
    free(ds->path);
    free(ds);
}

/* ---- training data ---- */

/* rng streams of jr_rng_seed2: one for the split, one per epoch's order */
#define SPLIT_STREAM 0x73706c6974ULL            /* "split" */
#define EPOCH_STREAM(e) (0x65706f6368ULL << 24 ^ (uint64_t)(e)) /* "epoch" */

struct jr_data {
    jr_dataset *train;       /* owned */
    jr_dataset *val;         /* owned when a separate file, else == train */
    uint32_t *train_rows;    /* file rows used for training, in file order */
    size_t n_train;
    uint32_t *val_rows;      /* file rows of val used for validation */
    size_t n_val;
    int shuffle;
    uint64_t seed;
    uint32_t *order;         /* current epoch's order: positions into train_rows */
    int64_t order_epoch;     /* epoch `order` belongs to (-1: none) */
    jr_data_pos pos;
};

jr_status jr_data_opts_from_config(jr_data_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->train = jr_cfg_str(c, "data.train");
    o->validation = jr_cfg_str(c, "data.validation");
    o->validation_frac = jr_cfg_float(c, "data.validation_frac");
    o->shuffle = jr_cfg_bool(c, "data.shuffle");
    const char *p = jr_cfg_str(c, "data.on_bad_line");
    o->on_bad_line = p && !strcmp(p, "fail") ? JR_BAD_LINE_FAIL : JR_BAD_LINE_SKIP;
    o->max_rows = jr_cfg_int(c, "data.max_rows");
    o->seed = (uint64_t)jr_cfg_int(c, "run.seed");
    return jr_cfg_check(c);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t *iota(size_t n) {
    uint32_t *v = jr_malloc((n ? n : 1) * sizeof *v);
    if (v)
        for (size_t i = 0; i < n; i++) v[i] = (uint32_t)i;
    return v;
}

jr_status jr_data_open(jr_data **out, const jr_data_opts *o) {
    *out = NULL;
    if (!o->train || !*o->train) return jr_fail(JR_EINVAL, "data.train is not set: give the training JSONL file");
    if (o->validation && o->validation_frac > 0)
        return jr_fail(JR_EINVAL, "data.validation (%s) and data.validation_frac=%g are both set: use one",
                       o->validation, o->validation_frac);
    if (!(o->validation_frac >= 0 && o->validation_frac < 1))
        return jr_fail(JR_EINVAL, "data.validation_frac=%g must be in [0, 1)", o->validation_frac);
    jr_data *d = jr_calloc(1, sizeof *d);
    if (!d) return JR_ENOMEM;
    d->shuffle = o->shuffle;
    d->seed = o->seed;
    d->order_epoch = -1;
    jr_status st = jr_dataset_open(&d->train, o->train, o->on_bad_line, o->max_rows, o->on_bad, o->ud);
    if (st) goto fail;
    size_t n = jr_dataset_size(d->train);
    if (o->validation) {
        st = jr_dataset_open(&d->val, o->validation, o->on_bad_line, o->max_rows, o->on_bad, o->ud);
        if (st) goto fail;
        d->n_train = n;
        d->n_val = jr_dataset_size(d->val);
        if (!(d->train_rows = iota(n)) || !(d->val_rows = iota(d->n_val))) { st = JR_ENOMEM; goto fail; }
    } else {
        d->val = d->train;
        size_t n_val = 0;
        if (o->validation_frac > 0) {
            n_val = (size_t)llround(o->validation_frac * (double)n);
            if (n_val == 0) n_val = 1;
        }
        if (n_val >= n) {
            st = jr_fail(JR_EINVAL, "%s: data.validation_frac=%g holds out %zu of %zu rows, leaving none to train on",
                         o->train, o->validation_frac, n_val, n);
            goto fail;
        }
        uint32_t *perm = iota(n);
        if (!perm) { st = JR_ENOMEM; goto fail; }
        jr_rng r;
        jr_rng_seed2(&r, o->seed, SPLIT_STREAM);
        jr_rng_shuffle_idx(&r, perm, (uint32_t)n);
        d->n_val = n_val;
        d->n_train = n - n_val;
        d->val_rows = jr_malloc((n_val ? n_val : 1) * sizeof *d->val_rows);
        d->train_rows = jr_malloc(d->n_train * sizeof *d->train_rows);
        if (!d->val_rows || !d->train_rows) { free(perm); st = JR_ENOMEM; goto fail; }
        memcpy(d->val_rows, perm, n_val * sizeof *perm);
        memcpy(d->train_rows, perm + n_val, d->n_train * sizeof *perm);
        free(perm);
        qsort(d->val_rows, d->n_val, sizeof *d->val_rows, cmp_u32);
        qsort(d->train_rows, d->n_train, sizeof *d->train_rows, cmp_u32);
    }
    if (!(d->order = jr_malloc(d->n_train * sizeof *d->order))) { st = JR_ENOMEM; goto fail; }
    *out = d;
    return JR_OK;
fail:
    jr_data_close(d);
    return st;
}

size_t jr_data_n_train(const jr_data *d) { return d->n_train; }
size_t jr_data_n_val(const jr_data *d) { return d->n_val; }

int64_t jr_data_bad_lines(const jr_data *d) {
    return jr_dataset_bad_lines(d->train) + (d->val != d->train ? jr_dataset_bad_lines(d->val) : 0);
}

/* Fills order (n_train positions) with epoch's order. */
static void epoch_order(const jr_data *d, int64_t epoch, uint32_t *order) {
    for (size_t i = 0; i < d->n_train; i++) order[i] = (uint32_t)i;
    if (d->shuffle) {
        jr_rng r;
        jr_rng_seed2(&r, d->seed, EPOCH_STREAM(epoch));
        jr_rng_shuffle_idx(&r, order, (uint32_t)d->n_train);
    }
}

jr_status jr_data_train_get(jr_data *d, int64_t epoch, size_t index, json_t **row, jr_data_row_info *info) {
    *row = NULL;
    if (epoch < 0 || index >= d->n_train)
        return jr_fail(JR_EINVAL, "training position (epoch %lld, index %zu) out of range (%zu rows per epoch)",
                       (long long)epoch, index, d->n_train);
    if (d->order_epoch != epoch) {
        epoch_order(d, epoch, d->order);
        d->order_epoch = epoch;
    }
    size_t frow = d->train_rows[d->order[index]];
    int64_t line;
    jr_status st = jr_dataset_get(d->train, frow, row, &line);
    if (st) return st;
    if (info) {
        info->path = jr_dataset_path(d->train);
        info->line_no = line;
        info->row = frow;
        info->pos.epoch = epoch;
        info->pos.index = (int64_t)index;
    }
    return JR_OK;
}

jr_status jr_data_next(jr_data *d, json_t **row, jr_data_row_info *info) {
    jr_data_pos p = d->pos;
    if ((size_t)p.index >= d->n_train) { p.epoch++; p.index = 0; }
    jr_status st = jr_data_train_get(d, p.epoch, (size_t)p.index, row, info);
    if (st) return st;
    p.index++;
    d->pos = p;
    return JR_OK;
}

jr_data_pos jr_data_tell(const jr_data *d) {
    jr_data_pos p = d->pos;
    if ((size_t)p.index >= d->n_train) { p.epoch++; p.index = 0; }
    return p;
}

jr_status jr_data_seek(jr_data *d, jr_data_pos pos) {
    if (pos.epoch < 0 || pos.index < 0 || (size_t)pos.index > d->n_train)
        return jr_fail(JR_EINVAL, "data position (epoch %lld, index %lld) out of range: the training split has %zu rows "
                       "(was the checkpoint made with another dataset, seed or validation split?)",
                       (long long)pos.epoch, (long long)pos.index, d->n_train);
    d->pos = pos;
    return JR_OK;
}

jr_status jr_data_val_get(jr_data *d, size_t i, json_t **row, jr_data_row_info *info) {
    *row = NULL;
    if (i >= d->n_val) return jr_fail(JR_EINVAL, "validation row %zu out of range (%zu rows)", i, d->n_val);
    size_t frow = d->val_rows[i];
    int64_t line;
    jr_status st = jr_dataset_get(d->val, frow, row, &line);
    if (st) return st;
    if (info) {
        info->path = jr_dataset_path(d->val);
        info->line_no = line;
        info->row = frow;
        info->pos.epoch = 0;
        info->pos.index = (int64_t)i;
    }
    return JR_OK;
}

jr_dataset *jr_data_train_file(const jr_data *d) { return d->train; }
jr_dataset *jr_data_val_file(const jr_data *d) { return d->val != d->train ? d->val : NULL; }

void jr_data_close(jr_data *d) {
    if (!d) return;
    if (d->val != d->train) jr_dataset_close(d->val);
    jr_dataset_close(d->train);
    free(d->train_rows);
    free(d->val_rows);
    free(d->order);
    free(d);
}
