/* test_dist_nompi.c - the rank layer as a build without MPI has it (dist.c compiled here without JR_MPI, whatever
 * the library was built with): one rank, sums are the identity, and a multi-rank launch is refused clearly.
 * The MPI side is tests/test_mpi_train.sh (mpirun). */
#undef JR_MPI
#include "../src/core/dist.c"

#include "harness.h"

TEST(no_launcher_is_one_rank) {
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("SLURM_STEP_NUM_TASKS");
    g_init = 0;
    CHECK_OK(jr_dist_init());
    CHECK(!jr_dist_compiled());
    CHECK(jr_dist_rank() == 0 && jr_dist_size() == 1);
    float f[3] = {1.5f, -2, 3};
    double d = 0.25;
    CHECK_OK(jr_dist_sum_f32(f, 3, "x"));
    CHECK_OK(jr_dist_sum_f64(&d, 1, "y"));
    CHECK(f[0] == 1.5f && f[1] == -2 && f[2] == 3 && d == 0.25);
}

TEST(one_rank_launch_is_fine) {
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    g_init = 0;
    CHECK_OK(jr_dist_init());
    CHECK(jr_dist_size() == 1);
    unsetenv("OMPI_COMM_WORLD_SIZE");
}

TEST(multi_rank_launch_refused) {
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    g_init = 0;
    CHECK(jr_dist_launcher_size() == 4);
    jr_status st = jr_dist_init();
    CHECK(st == JR_EUNSUPPORTED);
    CHECK_MSG(strstr(jr_errmsg(), "launched as 4 ranks (OMPI_COMM_WORLD_SIZE=4)") &&
              strstr(jr_errmsg(), "built without MPI"), "%s", jr_errmsg());
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("PMIX_RANK", "0", 1);
    g_init = 0;
    CHECK(jr_dist_launcher_size() == -1);
    CHECK(jr_dist_init() == JR_EUNSUPPORTED && strstr(jr_errmsg(), "PMIX_RANK is set"));
    setenv("SLURM_STEP_NUM_TASKS", "1", 1); /* srun -n 1 --mpi=pmix: one rank, fine */
    g_init = 0;
    CHECK(jr_dist_launcher_size() == 1);
    CHECK_OK(jr_dist_init());
    setenv("SLURM_STEP_NUM_TASKS", "3", 1);
    g_init = 0;
    CHECK(jr_dist_init() == JR_EUNSUPPORTED && strstr(jr_errmsg(), "launched as 3 ranks (SLURM_STEP_NUM_TASKS=3)"));
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("PMIX_RANK");
}

int main(void) {
    RUN(no_launcher_is_one_rank);
    RUN(one_rank_launch_is_fine);
    RUN(multi_rank_launch_refused);
    return jt_done();
}
