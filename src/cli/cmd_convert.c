/* cmd_convert.c - `judgerl convert`: rewrite a model directory in another dtype or shard size */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/hfmodel.h"
#include "judgerl/tok.h"

/* "5GB", "500MB", "100kB", "12345" -> bytes (decimal units, as transformers' max_shard_size). */
static int parse_size(const char *s, size_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return 0;
    double mult = 1;
    if (!strcasecmp(end, "") || !strcasecmp(end, "B")) mult = 1;
    else if (!strcasecmp(end, "KB")) mult = 1e3;
    else if (!strcasecmp(end, "MB")) mult = 1e6;
    else if (!strcasecmp(end, "GB")) mult = 1e9;
    else return 0;
    if (v * mult > 1e18) return 0;
    *out = (size_t)(v * mult);
    return 1;
}

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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = !strcmp(a, "--model") ? &model : (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &out
                         : !strcmp(a, "--dtype") ? &dtype_s : !strcmp(a, "--max-shard-size") ? &shard_s : NULL;
        if (!dst) return cli_usage("convert", "unknown argument '%s'", a);
        if (i + 1 >= argc) return cli_usage("convert", "%s needs a value", a);
        *dst = argv[++i];
    }
    if (!model || !out) return cli_usage("convert", "give --model DIR and -o OUT");
    jr_dtype dt;
    jr_status rc = jr_dtype_parse(dtype_s, &dt);
    if (rc || (dt != JR_DT_F32 && dt != JR_DT_F16 && dt != JR_DT_BF16))
        return cli_usage("convert", "--dtype '%s': use float32, float16 or bfloat16", dtype_s);
    size_t max_shard;
    if (!parse_size(shard_s, &max_shard)) return cli_usage("convert", "--max-shard-size '%s': use e.g. 5GB, 500MB or bytes", shard_s);
    jr_hfdir d;
    if ((rc = jr_hfdir_open(&d, model))) return cli_fail("convert", rc);
    float **w = calloc((size_t)d.n_tensors + 1, sizeof *w);
    if (!w) rc = jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < d.n_tensors; i++) {
        if (!(w[i] = malloc((size_t)d.tensors[i].numel * sizeof(float) + 1))) rc = jr_fail(JR_ENOMEM, "out of memory");
        else rc = jr_hfdir_read_f32(&d, i, w[i]);
    }
    /* OUT is built beside itself and swapped in whole: a kill leaves the old OUT or the new one */
    jr_adir ad = {0};
    int n_tok = 0;
    if (!rc) rc = jr_adir_open(&ad, out, "config.json");
    if (!rc) rc = jr_hfdir_write(ad.tmp, &d.cfg, d.has_gen ? &d.gen : NULL, (const float *const *)w, dt, max_shard);
    if (!rc) rc = jr_tok_copy_dir_files(model, ad.tmp, &n_tok); /* the output keeps the model's tokenizer */
    if (!rc) rc = jr_adir_commit(&ad);
    else jr_adir_abort(&ad);
    for (int i = 0; w && i < d.n_tensors; i++) free(w[i]);
    free(w);
    int n = d.n_tensors;
    jr_hfdir_close(&d);
    if (rc) return cli_fail("convert", rc);
    printf("%s: %d tensors written as %s, %d tokenizer file%s\n", out, n, jr_dtype_name(dt), n_tok, n_tok == 1 ? "" : "s");
    return CLI_OK;
}
