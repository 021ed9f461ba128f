/* cmd_version.c - `judgerl version`: the version, the CPU and the kernels chosen for it, and whether MPI
 * (data-parallel training) is in */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "judgerl/cpu.h"
#include "judgerl/dist.h"
#include "judgerl/nn.h"
#include "judgerl/version.h"

int cmd_version(int argc, char **argv) {
    (void)argc; (void)argv;
    char cpu[512];
    printf("judgerl %s (C API %d)\n", jr_version(), jr_api_version());
    printf("cpu: %s\n", jr_cpu_describe(cpu, sizeof cpu));
    const char *forced = getenv("JR_CPU");
    jr_cpu_level l = jr_cpu_level_get(), top = jr_cpu_level_max();
    printf("kernel level: %s (%s; the highest this CPU has: %s)\n", jr_cpu_level_name(l),
           forced && *forced ? "forced by JR_CPU" : "chosen at start-up", jr_cpu_level_name(top));
    printf("kernels: fp32 row product %s, attention %s, softmax exp %s, swiglu %s, bf16 row product %s, bf16 training "
           "products oneDNN %s%s\n",
           jr_kernel_level(), jr_kernel_level(), jr_kernel_level(), jr_kernel_level(), jr_matmul_rows_bf16_kernel(),
           jr_nn_isa(), jr_nn_bf16_native() ? "" : " (no bf16 units: model.compute bfloat16 is refused)");
    printf("mpi: %s\n", jr_dist_compiled() ? "compiled in (mpirun -np N judgerl train: docs/SCALE.md)"
                                           : "not compiled in (no libopenmpi-dev at build time: one process only)");
    return CLI_OK;
}
