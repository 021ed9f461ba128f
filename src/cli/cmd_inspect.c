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
    const jr_arg spec[] = {JR_ARG_S("--model", &model), JR_ARGS_END};
    jr_args args;
    int rc = cli_args("inspect", &args, spec, argc, argv, 1, 0, "unexpected argument '%s'");
    file = args.n_pos ? args.pos[0] : NULL;
    jr_args_free(&args);
    if (rc) return rc;
    if (model && file) return cli_usage("inspect", "give either --model DIR or a file, not both");
    if (!model && !file) return cli_usage("inspect", "nothing to inspect: give --model DIR or FILE.safetensors");
    struct stat sb;
    if (file && stat(file, &sb) == 0 && S_ISDIR(sb.st_mode)) model = file; /* a directory: a model */
    jr_status st = model ? jr_model_dir_describe(model, stdout) : jr_st_file_describe(file, stdout);
    return st ? cli_fail("inspect", st) : CLI_OK;
}
