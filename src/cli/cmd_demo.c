/* cmd_demo.c - `judgerl demo [--out DIR] [--quick] [--seed1-only] [--workflow-only] [--study-only] [--config FILE]`: the 8-ball example program
 * (examples/eightball/, linked into judgerl) with this binary as its judge server */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "eightball/eightball.h"

int cmd_demo(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl demo [--out DIR] [--quick] [--seed1-only] [--workflow-only] [--study-only]\n"
               "                   [--config FILE]\n"
               "The embedded default, offline: seed 1 reproduced (configs/eightball-seed1.yaml), then the\n"
               "modern path (configs/eightball-grpo.yaml): a tiny causal LM policy, LM judges served by\n"
               "judgerl serve on a loopback port, GRPO against the unbiased and the Yes-biased judge, the\n"
               "held-out answer distributions, the judge probes, the study (GRPO against the unbiased and the\n"
               "sycophantic judges and the sycophantic one in an ensemble, gold = the preference grades, alarms:\n"
               "DIR/study/study.html) and the\n"
               "report (DIR/report.html). DIR defaults to runs/demo. Stage sizes: configs/eightball/demo.yaml\n"
               "(--quick: demo-quick.yaml; --config FILE: another file with the same keys).\n"
               "--seed1-only stops after seed 1 (then writes the report). The workflow stage (seed 2) trains the\n"
               "workflow executor, serves it, SFTs a tiny policy on random valid workflows and runs GRPO (DIR/workflow);\n"
               "--workflow-only runs that stage alone, with GRPO seeds 1-3 and a shuffled-reward control.\n"
               "--study-only runs the study and the stages it needs (policy-sft, judges, probe-judges, policy-pref).\n"
               "--quick runs fewer steps (the test suite's end-to-end check). Valid trained models in DIR are\n"
               "reused; running it again is safe. The program is examples/eightball/ (also built on its own as\n"
               "build/rel/examples/eightball).\n");
        return CLI_OK;
    }
    /* the judge servers are this binary's `serve` */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return cli_fail("demo", jr_fail(JR_EIO, "/proc/self/exe: cannot find the judgerl binary"));
    exe[n] = 0;
    return eb_main("judgerl demo", argc, argv, exe);
}
