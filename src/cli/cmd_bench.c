/* cmd_bench.c - `judgerl bench`: dispatches to one benchmark per part (grade, train, generate, memory) */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "grade")) return cmd_bench_grade(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_bench_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "generate")) return cmd_bench_generate(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "memory")) return cmd_bench_memory(argc - 1, argv + 1);
    if (argc < 2 || cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench grade|train|generate|memory [...]   (judgerl bench NAME --help)\n"
               "Runs a benchmark and prints one JSON object of figures.\n");
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    return cli_usage("bench", "unknown benchmark '%s' (known: grade, train, generate, memory)", argv[1]);
}
