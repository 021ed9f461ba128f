/* cmd_version.c - `judgerl version`: prints the version */
#include <stdio.h>

#include "cli/cli.h"

#define JUDGERL_VERSION "0.1.0"

int cmd_version(int argc, char **argv) {
    (void)argc; (void)argv;
    printf("judgerl %s\n", JUDGERL_VERSION);
    return CLI_OK;
}
