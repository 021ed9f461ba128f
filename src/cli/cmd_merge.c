/* cmd_merge.c - `judgerl merge`: fold a PEFT LoRA adapter into a full Hugging Face model directory */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/modeltools.h"

int cmd_merge(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl merge --model DIR --adapter ADAPTER_DIR -o OUT [--force]\n"
               "Loads the base model DIR (an HF directory), adds alpha / r * B A of every adapted projection of\n"
               "the PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors, as `judgerl train` with\n"
               "lora.enabled writes to run.out_dir/adapter) and writes the merged model to OUT (float32), built\n"
               "beside OUT and swapped in atomically (an existing OUT must be empty or a model directory).\n"
               "The adapter must fit the base: its base_model_name_or_path must name DIR (the same directory,\n"
               "or a hub name that DIR's name or config.json _name_or_path matches; --force skips this check)\n"
               "and its tensors must match DIR's layers and shapes (never skipped).\n");
        return CLI_OK;
    }
    const char *model = NULL, *adapter = NULL, *out = NULL;
    int force = 0;
    const jr_arg spec[] = {JR_ARG_B("--force", &force, 1), JR_ARG_S("--model", &model), JR_ARG_S("--adapter", &adapter),
                           JR_ARG_S("-o|--output", &out), JR_ARGS_END};
    int rc = cli_flags("merge", spec, argc, argv, "unknown argument '%s'");
    if (rc) return rc;
    if (!model || !adapter || !out) return cli_usage("merge", "give --model DIR, --adapter DIR and -o OUT");
    jr_merge_opts o = {.model = model, .adapter = adapter, .out = out, .force = force};
    int n_tok = 0;
    jr_status st = jr_lora_merge_dir(&o, &n_tok);
    if (st) return cli_fail("merge", st);
    printf("%s: %s merged into %s (tokenizer: %s)\n", out, adapter, model, n_tok ? "the base model's files" : "byte, the base has none");
    return CLI_OK;
}
