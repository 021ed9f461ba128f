/* cmd_inspect.c - `judgerl inspect`: read-only summary of a model directory or a safetensors file */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "judgerl/modeltools.h"

int cmd_inspect(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl inspect --model DIR | judgerl inspect DIR | judgerl inspect FILE.safetensors\n"
               "Reads a Hugging Face model directory (config.json, generation_config.json, model.safetensors or a\n"
               "sharded index) or one safetensors file, validates it, and prints the config summary, the parameter\n"
               "count and every tensor's name, dtype and shape. Writes nothing.\n");
        return CLI_OK;
    }
    const char *model = NULL, *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model")) {
            if (i + 1 >= argc) return cli_usage("inspect", "--model needs a directory");
            model = argv[++i];
        } else if (!strncmp(argv[i], "--model=", 8)) {
            model = argv[i] + 8;
        } else if (argv[i][0] == '-') {
            return cli_usage("inspect", "unknown option '%s'", argv[i]);
        } else if (!file && !model) {
            file = argv[i];
        } else {
            return cli_usage("inspect", "unexpected argument '%s'", argv[i]);
        }
    }
    if (model && file) return cli_usage("inspect", "give either --model DIR or a file, not both");
    if (!model && !file) return cli_usage("inspect", "nothing to inspect: give --model DIR or FILE.safetensors");
    struct stat sb;
    if (file && stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) model = file; /* a directory: a model */
    jr_status st = model ? jr_model_dir_describe(model, stdout) : jr_st_file_describe(file, stdout);
    return st ? cli_fail("inspect", st) : CLI_OK;
}
