/* cmd_convert.c - `judgerl convert`: rewrite a model directory in another dtype or shard size */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/modeltools.h"

int cmd_convert(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl convert --model DIR -o OUT [--dtype float32|float16|bfloat16] [--max-shard-size 5GB]\n"
               "Reads a Hugging Face model directory (validated as by `judgerl inspect`) and writes it to OUT with\n"
               "its config kept, weights stored as --dtype (default: float32), split into shards past\n"
               "--max-shard-size (default 5GB; 0 = one file). OUT is written as a whole beside itself and swapped\n"
               "in atomically (an existing OUT must be empty or a model directory): a kill leaves the old or the new.\n");
        return CLI_OK;
    }
    const char *model = NULL, *out = NULL, *dtype_s = "float32", *shard_s = "5GB";
    const jr_arg spec[] = {JR_ARG_S("--model", &model), JR_ARG_S("-o|--output", &out), JR_ARG_S("--dtype", &dtype_s),
                           JR_ARG_S("--max-shard-size", &shard_s), JR_ARGS_END};
    int arc = cli_flags("convert", spec, argc, argv, "unknown argument '%s'");
    if (arc) return arc;
    if (!model || !out) return cli_usage("convert", "give --model DIR and -o OUT");
    jr_dtype dt;
    jr_status rc = jr_dtype_parse(dtype_s, &dt);
    if (rc || (dt != JR_DT_F32 && dt != JR_DT_F16 && dt != JR_DT_BF16))
        return cli_usage("convert", "--dtype '%s': use float32, float16 or bfloat16", dtype_s);
    size_t max_shard;
    if (!jr_shard_size_parse(shard_s, &max_shard)) return cli_usage("convert", "--max-shard-size '%s': use e.g. 5GB, 500MB or bytes", shard_s);
    jr_convert_opts o = {.model = model, .out = out, .dtype = dt, .max_shard = max_shard};
    int n = 0, n_tok = 0;
    if ((rc = jr_model_dir_convert(&o, &n, &n_tok))) return cli_fail("convert", rc);
    printf("%s: %d tensors written as %s, %d tokenizer file%s\n", out, n, jr_dtype_name(dt), n_tok, n_tok == 1 ? "" : "s");
    return CLI_OK;
}
