/* cmd_version.c - `judgerl version`: prints the version and whether MPI (data-parallel training) is in */
#include <stdio.h>

#include "cli/cli.h"
#include "judgerl/dist.h"
#include "judgerl/version.h"

int cmd_version(int argc, char **argv) {
    (void)argc; (void)argv;
    printf("judgerl %s (C API %d)\n", jr_version(), jr_api_version());
    printf("mpi: %s\n", jr_dist_compiled() ? "compiled in (mpirun -np N judgerl train: docs/SCALE.md)"
                                           : "not compiled in (no libopenmpi-dev at build time: one process only)");
    return CLI_OK;
}
