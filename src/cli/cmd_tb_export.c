/* cmd_tb_export.c - `judgerl tb-export`: writes a metrics.jsonl as a TensorBoard event file */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/dataset.h"
#include "judgerl/metrics.h"
#include "judgerl/tensorboard.h"

static void usage(void) {
    printf("usage: judgerl tb-export METRICS.jsonl [--out DIR]\n"
           "Writes every row of a metrics.jsonl ({\"step\": N, \"wall_time\": T, name: number, ...}) as one\n"
           "TensorBoard event with a scalar per numeric field, into a new events.out.tfevents.* file in\n"
           "DIR (default: the directory of METRICS.jsonl). Prints the event file's path.\n");
}

int cmd_tb_export(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) { usage(); return CLI_OK; }
    const char *in = NULL, *out_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) return cli_usage("tb-export", "--out needs a directory");
            out_dir = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) return cli_usage("tb-export", "unknown option '%s'", argv[i]);
        else if (!in) in = argv[i];
        else return cli_usage("tb-export", "unexpected argument '%s'", argv[i]);
    }
    if (!in) return cli_usage("tb-export", "give the metrics.jsonl file");
    char *dir = NULL;
    if (!out_dir) {
        dir = strdup(in);
        if (!dir) return cli_fail("tb-export", jr_fail(JR_ENOMEM, "out of memory"));
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        else strcpy(dir, ".");
        out_dir = dir;
    }
    jr_jsonl_reader *r = NULL;
    jr_tb_writer *tb = NULL;
    const char **tags = NULL;
    double *vals = NULL;
    long long events = 0;
    jr_status st = jr_jsonl_open(&r, in, JR_BAD_LINE_FAIL, NULL, NULL);
    if (!st) st = jr_tb_open(&tb, out_dir);
    while (!st) {
        json_t *row;
        int64_t line;
        st = jr_jsonl_next(r, &row, &line, NULL);
        if (st || !row) break;
        json_t *step = json_object_get(row, "step"), *wt = json_object_get(row, "wall_time");
        if (!json_is_integer(step)) {
            st = jr_fail(JR_EFORMAT, "%s:%lld: missing integer field \"step\"", in, (long long)line);
            json_decref(row);
            break;
        }
        size_t n = json_object_size(row), k = 0;
        free(tags);
        free(vals);
        tags = calloc(n + 1, sizeof *tags);
        vals = calloc(n + 1, sizeof *vals);
        if (!tags || !vals) { st = jr_fail(JR_ENOMEM, "out of memory"); json_decref(row); break; }
        const char *key;
        json_t *v;
        json_object_foreach(row, key, v) {
            if (!strcmp(key, "step") || !strcmp(key, "wall_time") || !json_is_number(v)) continue;
            tags[k] = key;
            vals[k++] = json_number_value(v);
        }
        st = jr_tb_scalars(tb, json_integer_value(step), json_is_number(wt) ? json_number_value(wt) : jr_wall_time(), k,
                           tags, vals);
        json_decref(row);
        events++;
    }
    free(tags);
    free(vals);
    jr_jsonl_close(r);
    if (tb && !st) printf("%s: %lld events\n", jr_tb_path(tb), events);
    jr_status st2 = jr_tb_close(tb);
    free(dir);
    if (!st) st = st2;
    return st ? cli_fail("tb-export", st) : CLI_OK;
}
