/* cmd_report.c - `judgerl report RUN_DIR`: writes RUN_DIR/report.html (inline SVG) and prints the demo summary */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/report.h"

int cmd_report(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl report RUN_DIR\n"
               "Reads RUN_DIR/summary.json (written by judgerl demo) and the metrics.jsonl files it names,\n"
               "writes RUN_DIR/report.html (one self-contained file: inline CSS and SVG plots, no external\n"
               "URL) and prints the same summary here.\n");
        return CLI_OK;
    }
    if (argc != 2) return cli_usage("report", "expected one RUN_DIR (got %d arguments); usage: judgerl report RUN_DIR", argc - 1);
    if (argv[1][0] == '-') return cli_usage("report", "unknown option '%s'; usage: judgerl report RUN_DIR", argv[1]);
    json_t *sum;
    jr_status st = jr_report_write(argv[1], &sum);
    if (st) return cli_fail("report", st);
    jr_report_text(stdout, sum);
    json_decref(sum);
    return CLI_OK;
}
