/* cmd_merge.c - `judgerl merge`: fold a PEFT LoRA adapter into a full Hugging Face model directory */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/tok.h"

int cmd_merge(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl merge --model DIR --adapter ADAPTER_DIR -o OUT\n"
               "Loads the base model DIR (an HF directory), adds alpha / r * B A of every adapted projection of\n"
               "the PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors, as `judgerl train` with\n"
               "lora.enabled writes to run.out_dir/adapter) and writes the merged model to OUT (float32), built\n"
               "beside OUT and swapped in atomically (an existing OUT must be empty or a model directory).\n");
        return CLI_OK;
    }
    const char *model = NULL, *adapter = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = !strcmp(a, "--model") ? &model : !strcmp(a, "--adapter") ? &adapter
                         : (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &out : NULL;
        if (!dst) return cli_usage("merge", "unknown argument '%s'", a);
        if (i + 1 >= argc) return cli_usage("merge", "%s needs a value", a);
        *dst = argv[++i];
    }
    if (!model || !adapter || !out) return cli_usage("merge", "give --model DIR, --adapter DIR and -o OUT");
    jr_model m;
    jr_status st = jr_model_load(&m, model);
    if (st) return cli_fail("merge", st);
    /* OUT is built beside itself and swapped in whole: a kill leaves the old OUT or the new one */
    jr_adir ad = {0};
    int n_tok = 0;
    if (!(st = jr_lora_merge_into(&m, adapter)) && !(st = jr_adir_open(&ad, out, "config.json")) && !(st = jr_model_save(&m, ad.tmp, NULL)) &&
        !(st = jr_tok_copy_dir_files(model, ad.tmp, &n_tok))) /* the merged model keeps the base's tokenizer */
        st = jr_adir_commit(&ad);
    else jr_adir_abort(&ad);
    jr_model_free(&m);
    if (st) return cli_fail("merge", st);
    printf("%s: %s merged into %s (tokenizer: %s)\n", out, adapter, model, n_tok ? "the base model's files" : "byte, the base has none");
    return CLI_OK;
}
