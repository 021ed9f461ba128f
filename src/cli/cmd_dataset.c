/* cmd_dataset.c - `judgerl dataset`: check a JSONL dataset (rows, fields, bad lines, split, order) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/dataset.h"

#define MAX_WARN 10

static const jr_cfg_field *const dataset_tables[] = {jr_run_cfg, jr_data_cfg, NULL};

static void usage(void) {
    printf("usage: judgerl dataset [CONFIG.yaml] [key=value ...] [--print-config]\n"
           "       judgerl dataset --input FILE.jsonl [--validation FILE.jsonl | --validation-frac F] [--seed N]\n"
           "                       [--on-bad-line skip|fail] [--max-rows N] [--show N] [--json]\n"
           "       judgerl dataset convert --from humaneval|gsm8k --input FILE [--output OUT.jsonl]   (see its --help)\n"
           "Reads a JSONL dataset the way training does (data.* options, run.seed) and prints its row\n"
           "count, the fields seen, bad lines, the train/validation split and the first rows of the\n"
           "epoch-0 training order. Skipped bad lines are warned on stderr as FILE:LINE: problem; with\n"
           "--on-bad-line fail (data.on_bad_line=fail) the first one is the error.\n");
}

typedef struct {
    int n;
} warn_state;

static void on_bad(void *ud, const char *msg) {
    warn_state *w = ud;
    if (w->n++ < MAX_WARN) fprintf(stderr, "judgerl dataset: warning: %s (skipped)\n", msg);
}

/* "key='value'" with the value quoted for YAML, so any path or text survives the override parser. */
static char *quoted_override(const char *key, const char *value) {
    size_t n = strlen(key) + 2 * strlen(value) + 4;
    char *s = malloc(n);
    if (!s) return NULL;
    char *p = s + sprintf(s, "%s='", key);
    for (const char *v = value; *v; v++) {
        if (*v == '\'') *p++ = '\'';
        *p++ = *v;
    }
    *p++ = '\'';
    *p = 0;
    return s;
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

/* The command line turned into config arguments: flags become overrides, positional arguments and
 * overrides stay as they are. */
typedef struct {
    char **args, **owned; /* args[0..n_args) for cli_load_config; owned: the strings made here */
    int n_args, n_owned, as_json;
    long show;
} dataset_args;

static void dataset_args_free(dataset_args *da) {
    for (int i = 0; i < da->n_owned; i++) free(da->owned[i]);
    free(da->owned);
    free(da->args);
}

/* "key=value" for a mapped flag; paths are quoted (taken literally), numbers and words are read as YAML. */
static char *flag_override(const char *key, const char *v) {
    char *o = !strcmp(key, "data.train") || !strcmp(key, "data.validation") ? quoted_override(key, v) : NULL;
    if (!o) {
        o = malloc(strlen(key) + strlen(v) + 2);
        if (o) sprintf(o, "%s=%s", key, v);
    }
    return o;
}

/* Fills da from argv (da->args allocated even on failure: free with dataset_args_free); CLI_OK, or
 * the exit code after the message. */
static int parse_dataset_args(int argc, char **argv, dataset_args *da) {
    static const struct { const char *flag, *key; } map[] = {
        {"--input", "data.train"}, {"--validation", "data.validation"}, {"--validation-frac", "data.validation_frac"},
        {"--seed", "run.seed"}, {"--on-bad-line", "data.on_bad_line"}, {"--max-rows", "data.max_rows"},
    };
    da->args[da->n_args++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int mapped = 0;
        for (size_t m = 0; m < sizeof map / sizeof *map; m++) {
            if (strcmp(a, map[m].flag)) continue;
            mapped = 1;
            if (i + 1 >= argc) return cli_usage("dataset", "%s needs a value", a);
            char *o = flag_override(map[m].key, argv[++i]);
            if (!o) return cli_fail("dataset", jr_fail(JR_ENOMEM, "out of memory"));
            da->owned[da->n_owned++] = o;
            da->args[da->n_args++] = o;
        }
        if (mapped) continue;
        if (!strcmp(a, "--json")) da->as_json = 1;
        else if (!strcmp(a, "--show")) {
            char *end;
            if (i + 1 >= argc || (da->show = strtol(argv[i + 1], &end, 10)) < 0 || *end || !*argv[i + 1])
                return cli_usage("dataset", "--show needs a count >= 0");
            i++;
        } else da->args[da->n_args++] = argv[i];
    }
    return CLI_OK;
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
static void print_summary(const json_t *out, json_t *fields, json_t *first, jr_data *d, const jr_data_opts *o) {
    json_t *files[2] = {json_object_get(out, "train_file"), json_object_get(out, "validation_file")};
    for (int k = 0; k < 2; k++) {
        if (!json_is_object(files[k])) continue;
        printf("%s: %s: %lld lines, %lld rows, %lld bad lines skipped\n", k ? "validation" : "train",
               json_string_value(json_object_get(files[k], "path")),
               (long long)json_integer_value(json_object_get(files[k], "lines")),
               (long long)json_integer_value(json_object_get(files[k], "rows")),
               (long long)json_integer_value(json_object_get(files[k], "bad_lines")));
    }
    printf("fields:");
    const char *k;
    json_t *f;
    json_object_foreach(fields, k, f) {
        printf(" %s %lld (", k, (long long)json_integer_value(json_object_get(f, "count")));
        const char *t;
        json_t *c;
        int sep = 0;
        json_object_foreach(json_object_get(f, "types"), t, c) printf("%s%s", sep++ ? ", " : "", t);
        printf(");");
    }
    printf("\nsplit: %zu train, %zu validation (", jr_data_n_train(d), jr_data_n_val(d));
    if (o->validation) printf("separate file");
    else printf("validation_frac %g", o->validation_frac);
    printf(", seed %llu, shuffle %s)\n", (unsigned long long)o->seed, o->shuffle ? "on" : "off");
    if (json_array_size(first)) {
        printf("training order (epoch 0, first %zu rows): lines", json_array_size(first));
        size_t i;
        json_t *v;
        json_array_foreach(first, i, v) printf(" %lld", (long long)json_integer_value(v));
        printf("\n");
    }
}

/* The summary as a JSON object, printed with --json, else as text. */
static jr_status report(jr_data *d, const jr_data_opts *o, json_t *fields, json_t *first, int as_json) {
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
        if (txt) puts(txt);
        free(txt);
    } else {
        print_summary(out, fields, first, d, o);
    }
    json_decref(out);
    return JR_OK;
}

int cmd_dataset(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "convert")) return cmd_dataset_convert(argc - 1, argv + 1);
    if (cli_wants_help(argc, argv)) { usage(); return CLI_OK; }
    dataset_args da = {.args = calloc((size_t)argc + 1, sizeof *da.args), .owned = calloc((size_t)argc + 1, sizeof *da.owned),
                       .show = 10};
    if (!da.args || !da.owned) { dataset_args_free(&da); return cli_fail("dataset", jr_fail(JR_ENOMEM, "out of memory")); }
    int rc = parse_dataset_args(argc, argv, &da);
    if (rc) goto out;
    jr_config cfg;
    int print_only;
    rc = cli_load_config("dataset", da.n_args, da.args, 1, dataset_tables, &cfg, &print_only);
    if (rc || print_only) goto out;

    warn_state warned = {0};
    jr_data_opts o;
    jr_data_opts_from_config(&o, &cfg);
    o.on_bad = on_bad;
    o.ud = &warned;
    jr_data *d = NULL;
    json_t *fields = json_object(), *first = json_array();
    jr_status st = jr_data_open(&d, &o);
    if (!st) st = read_rows(d, da.show, fields, first);
    if (!st && warned.n > MAX_WARN)
        fprintf(stderr, "judgerl dataset: warning: %d more bad lines skipped (not shown)\n", warned.n - MAX_WARN);
    if (!st) st = report(d, &o, fields, first, da.as_json);
    if (st) rc = cli_fail("dataset", st);
    json_decref(fields);
    json_decref(first);
    jr_data_close(d);
    jr_config_free(&cfg);
out:
    dataset_args_free(&da);
    return rc;
}
