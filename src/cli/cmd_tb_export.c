/* cmd_tb_export.c - `judgerl tb-export`: argument handling for jr_tb_export (src/report/tb_export.c) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/tensorboard.h"

int cmd_tb_export(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl tb-export METRICS.jsonl [--out DIR]\n"
               "Writes every row of a metrics.jsonl ({\"step\": N, \"wall_time\": T, name: number, ...}) as one\n"
               "TensorBoard event with a scalar per numeric field, into a new events.out.tfevents.* file in\n"
               "DIR (default: the directory of METRICS.jsonl). Prints the event file's path.\n");
        return CLI_OK;
    }
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
    char *path;
    long long events;
    jr_status st = jr_tb_export(in, out_dir, &path, &events);
    if (st) return cli_fail("tb-export", st);
    printf("%s: %lld events\n", path, events);
    free(path);
    return CLI_OK;
}
