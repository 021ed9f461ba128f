/* dataset_check.c - `judgerl dataset`'s report: a dataset read the way training reads it, its rows,
 * fields, bad lines, split and first training order (jr_data_check, dataset.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "judgerl/dataset.h"

typedef struct {
    const jr_data_check_opts *co;
    int n;
} warn_state;

static void on_bad(void *ud, const char *msg) {
    warn_state *w = ud;
    if (w->n++ < w->co->max_warn && w->co->warn) fprintf(w->co->warn, "%swarning: %s (skipped)\n", w->co->prefix, msg);
}

/* Adds each row's keys and value types to fields: {name: {"count": N, "types": {type: N}}}. */
static void count_fields(json_t *fields, json_t *row) {
    const char *k;
    json_t *v;
    json_object_foreach(row, k, v) {
        json_t *f = json_object_get(fields, k);
        if (!f) {
            f = json_pack("{s:I, s:{}}", "count", (json_int_t)0, "types");
            json_object_set_new(fields, k, f);
        }
        json_object_set_new(f, "count", json_integer(json_integer_value(json_object_get(f, "count")) + 1));
        static const char *names[] = {"object", "array", "string", "integer", "real", "bool", "bool", "null"};
        const char *t = names[json_typeof(v)];
        json_t *types = json_object_get(f, "types");
        json_object_set_new(types, t, json_integer(json_integer_value(json_object_get(types, t)) + 1));
    }
}

static json_t *file_stats(const char *path, int64_t lines, int64_t rows, int64_t bad) {
    return json_pack("{s:s, s:I, s:I, s:I}", "path", path, "lines", (json_int_t)lines, "rows", (json_int_t)rows,
                     "bad_lines", (json_int_t)bad);
}

/* Reads every training row (epoch-0 order) and validation row into fields; first gets the line
 * numbers of the first `show` training rows. */
static jr_status read_rows(jr_data *d, long show, json_t *fields, json_t *first) {
    jr_status st = JR_OK;
    for (size_t i = 0; i < jr_data_n_train(d) && !st; i++) {
        json_t *row;
        jr_data_row_info info;
        st = jr_data_train_get(d, 0, i, &row, &info);
        if (st) break;
        count_fields(fields, row);
        if ((long)i < show) json_array_append_new(first, json_integer(info.line_no));
        json_decref(row);
    }
    for (size_t i = 0; i < jr_data_n_val(d) && !st; i++) {
        json_t *row;
        st = jr_data_val_get(d, i, &row, NULL);
        if (st) break;
        count_fields(fields, row);
        json_decref(row);
    }
    return st;
}

/* The summary as text: files, fields, split, training order. */
static void print_summary(FILE *f, const json_t *out, json_t *fields, json_t *first, jr_data *d, const jr_data_opts *o) {
    json_t *files[2] = {json_object_get(out, "train_file"), json_object_get(out, "validation_file")};
    for (int k = 0; k < 2; k++) {
        if (!json_is_object(files[k])) continue;
        fprintf(f, "%s: %s: %lld lines, %lld rows, %lld bad lines skipped\n", k ? "validation" : "train",
                json_string_value(json_object_get(files[k], "path")),
                (long long)json_integer_value(json_object_get(files[k], "lines")),
                (long long)json_integer_value(json_object_get(files[k], "rows")),
                (long long)json_integer_value(json_object_get(files[k], "bad_lines")));
    }
    fprintf(f, "fields:");
    const char *k;
    json_t *fd;
    json_object_foreach(fields, k, fd) {
        fprintf(f, " %s %lld (", k, (long long)json_integer_value(json_object_get(fd, "count")));
        const char *t;
        json_t *c;
        int sep = 0;
        json_object_foreach(json_object_get(fd, "types"), t, c) fprintf(f, "%s%s", sep++ ? ", " : "", t);
        fprintf(f, ");");
    }
    fprintf(f, "\nsplit: %zu train, %zu validation (", jr_data_n_train(d), jr_data_n_val(d));
    if (o->validation) fprintf(f, "separate file");
    else fprintf(f, "validation_frac %g", o->validation_frac);
    fprintf(f, ", seed %llu, shuffle %s)\n", (unsigned long long)o->seed, o->shuffle ? "on" : "off");
    if (json_array_size(first)) {
        fprintf(f, "training order (epoch 0, first %zu rows): lines", json_array_size(first));
        size_t i;
        json_t *v;
        json_array_foreach(first, i, v) fprintf(f, " %lld", (long long)json_integer_value(v));
        fprintf(f, "\n");
    }
}

/* The summary as a JSON object, printed with --json, else as text. */
static jr_status report(FILE *f, jr_data *d, const jr_data_opts *o, json_t *fields, json_t *first, int as_json) {
    jr_dataset *tf = jr_data_train_file(d), *vf = jr_data_val_file(d);
    json_t *out = json_pack("{s:o, s:o, s:o, s:I, s:I, s:f, s:I, s:b, s:o}",
                            "train_file", file_stats(o->train, jr_dataset_lines(tf), (int64_t)jr_dataset_size(tf),
                                                     jr_dataset_bad_lines(tf)),
                            "validation_file", vf ? file_stats(o->validation, jr_dataset_lines(vf),
                                                               (int64_t)jr_dataset_size(vf), jr_dataset_bad_lines(vf))
                                                  : json_null(),
                            "fields", json_incref(fields), "n_train", (json_int_t)jr_data_n_train(d), "n_validation",
                            (json_int_t)jr_data_n_val(d), "validation_frac", o->validation_frac, "seed", (json_int_t)o->seed,
                            "shuffle", o->shuffle, "first_lines", json_incref(first));
    if (!out) return jr_fail(JR_ENOMEM, "out of memory");
    if (as_json) {
        char *txt = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (txt) fprintf(f, "%s\n", txt);
        free(txt);
    } else {
        print_summary(f, out, fields, first, d, o);
    }
    json_decref(out);
    return JR_OK;
}

jr_status jr_data_check(const jr_data_opts *opts, const jr_data_check_opts *co) {
    warn_state warned = {co, 0};
    jr_data_opts o = *opts;
    o.on_bad = on_bad;
    o.ud = &warned;
    jr_data *d = NULL;
    json_t *fields = json_object(), *first = json_array();
    jr_status st = fields && first ? jr_data_open(&d, &o) : jr_fail(JR_ENOMEM, "out of memory");
    if (!st) st = read_rows(d, co->show, fields, first);
    if (!st && warned.n > co->max_warn && co->warn)
        fprintf(co->warn, "%swarning: %d more bad lines skipped (not shown)\n", co->prefix, warned.n - co->max_warn);
    if (!st) st = report(co->out, d, &o, fields, first, co->as_json);
    json_decref(fields);
    json_decref(first);
    jr_data_close(d);
    return st;
}
