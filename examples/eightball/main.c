/* main.c - the 8-ball demo as its own program: `build/<b>/examples/eightball [--out DIR] [--quick] [--seed1-only]
 * [--config FILE] [--judgerl PATH]` (the same as `judgerl demo`; its judge servers are `judgerl serve` processes) */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eightball/eightball.h"
#include "judgerl/wfrl.h"

/* The judgerl binary beside this one's directory (build/<b>/examples/eightball -> build/<b>/judgerl). */
static int default_judgerl(char *out, size_t cap) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    char *s = strrchr(exe, '/');
    if (!s) return -1;
    *s = 0;
    s = strrchr(exe, '/');
    if (!s) return -1;
    *s = 0;
    if ((size_t)snprintf(out, cap, "%.*s/judgerl", (int)(cap > 16 ? cap - 16 : 0), exe) >= cap) return -1;
    return access(out, X_OK);
}

int main(int argc, char **argv) {
    char bin[PATH_MAX] = "";
    /* --judgerl PATH is this program's own flag; the rest is eb_main's */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--judgerl")) {
            snprintf(bin, sizeof bin, "%s", argv[i + 1]);
            memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 1) * sizeof *argv);
            argc -= 2;
            break;
        }
    if (!*bin && default_judgerl(bin, sizeof bin)) {
        fprintf(stderr, "eightball: no judgerl binary beside this one (%s): give --judgerl PATH\n", bin);
        return 2;
    }
    if (!strcmp(argc > 1 ? argv[1] : "", "--help")) {
        printf("usage: eightball [--out DIR] [--quick] [--seed1-only] [--config FILE] [--judgerl PATH]\n"
               "The magic 8-ball demo (judgerl demo --help says what it runs); its judges are served by\n"
               "PATH serve (default: the judgerl binary of this build).\n");
        return 0;
    }
    if (jr_wf_reward_register()) { fprintf(stderr, "eightball: %s\n", jr_errmsg()); return 1; }
    return eb_main("eightball", argc, argv, bin);
}
