/* cmd_merge.c - `judgerl merge`: fold a PEFT LoRA adapter into a full Hugging Face model directory */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/lora.h"
#include "judgerl/model.h"
#include "judgerl/tok.h"

/* The last path component of p (trailing slashes ignored) into out. */
static void last_part(const char *p, char *out, size_t cap) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && p[b - 1] != '/') b--;
    snprintf(out, cap, "%.*s", (int)(n - b), p + b);
}

/* The adapter's base_model_name_or_path must name `model`: the same directory, or (a hub name such
 * as "Qwen/Qwen2.5-0.5B") a model directory of the same last name or whose config.json has it as
 * _name_or_path. No name (a fresh model.init) passes: the shapes are checked when loading. */
static jr_status check_base(const char *model, const char *adapter) {
    char *ap = jr_path_join(adapter, "adapter_config.json"), *mp = jr_path_join(model, "config.json");
    json_t *ac = ap ? json_load_file(ap, 0, NULL) : NULL, *mc = mp ? json_load_file(mp, 0, NULL) : NULL;
    const char *base = json_string_value(json_object_get(ac, "base_model_name_or_path"));
    const char *mname = json_string_value(json_object_get(mc, "_name_or_path"));
    jr_status st = JR_OK;
    if (base && *base) {
        char ra[PATH_MAX], rb[PATH_MAX], la[256], lb[256];
        int same = realpath(model, ra) && realpath(base, rb) && !strcmp(ra, rb);
        last_part(model, la, sizeof la);
        last_part(base, lb, sizeof lb);
        if (!same && !jr_path_exists(base)) same = !strcmp(la, lb) || (mname && !strcmp(mname, base));
        if (!same)
            st = jr_fail(JR_EINVAL, "%s was trained on base model '%s', not %s: merging it into another model gives "
                         "a wrong model (--force merges anyway when the shapes match)", ap, base, model);
    }
    json_decref(ac);
    json_decref(mc);
    free(ap);
    free(mp);
    return st;
}

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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--force")) { force = 1; continue; }
        const char **dst = !strcmp(a, "--model") ? &model : !strcmp(a, "--adapter") ? &adapter
                         : (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &out : NULL;
        if (!dst) return cli_usage("merge", "unknown argument '%s'", a);
        if (i + 1 >= argc) return cli_usage("merge", "%s needs a value", a);
        *dst = argv[++i];
    }
    if (!model || !adapter || !out) return cli_usage("merge", "give --model DIR, --adapter DIR and -o OUT");
    jr_status st = force ? JR_OK : check_base(model, adapter);
    if (st) return cli_fail("merge", st);
    jr_model m;
    st = jr_model_load(&m, model);
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
