/* cmd_export.c - `judgerl export --format gguf`: a model directory (LoRA adapter merged) as GGUF for llama.cpp / ollama */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/modeltools.h"

int cmd_export(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl export --format gguf --model DIR -o OUT.gguf [--dtype f32|f16|bf16|q8_0] [--adapter DIR]\n"
               "                      [--ollama] [--name NAME]\n"
               "Writes an HF model directory (Llama, Qwen2 or Qwen3 layout, with its tokenizer.json) as one GGUF file\n"
               "for llama.cpp (llama-server -m OUT.gguf) and ollama: llama.cpp's tensor names and hyperparameters,\n"
               "the byte-level BPE tokenizer with the matching tokenizer.ggml.pre, the chat template. --adapter merges a\n"
               "PEFT LoRA adapter first. --dtype (default f16) stores the weight matrices; norms and biases stay f32.\n"
               "--ollama also writes OUT's directory/Modelfile (ollama create NAME -f Modelfile). The file is written\n"
               "atomically. docs/FORMATS.md has the commands.\n");
        return CLI_OK;
    }
    const char *format = NULL, *model = NULL, *out = NULL, *dtype = "f16", *adapter = NULL, *name = NULL;
    int ollama = 0;
    const jr_arg spec[] = {JR_ARG_B("--ollama", &ollama, 1), JR_ARG_S("--format", &format), JR_ARG_S("--model", &model),
                           JR_ARG_S("-o|--output", &out), JR_ARG_S("--dtype", &dtype), JR_ARG_S("--adapter", &adapter),
                           JR_ARG_S("--name", &name), JR_ARGS_END};
    int rc = cli_flags("export", spec, argc, argv, "unknown argument '%s'");
    if (rc) return rc;
    if (!format || strcmp(format, "gguf")) return cli_usage("export", "--format gguf is the only format (got %s)", format ? format : "none");
    if (!model || !out) return cli_usage("export", "give --model DIR and -o OUT.gguf");
    jr_gguf_opts o = {.model_dir = model, .out_path = out, .name = name};
    jr_status st = jr_gguf_dtype_parse(dtype, &o.dtype);
    if (st) return cli_usage("export", "%s", jr_errmsg());
    char modelfile[4096];
    if (ollama) {
        const char *slash = strrchr(out, '/');
        snprintf(modelfile, sizeof modelfile, "%.*sModelfile", slash ? (int)(slash - out + 1) : 0, out);
        o.modelfile = modelfile;
    }
    jr_gguf_report rep;
    if ((st = jr_gguf_export_dir(&o, adapter, &rep))) return cli_fail("export", st);
    printf("{\"path\": \"%s\", \"arch\": \"%s\", \"pre\": \"%s\", \"dtype\": \"%s\", \"tensors\": %d, \"keys\": %d, \"bytes\": %lld, "
           "\"q8_0_fallback_f16\": %d%s%s%s}\n", out, rep.arch, rep.pre, dtype, rep.n_tensors, rep.n_kv, (long long)rep.bytes,
           rep.n_fallback_f16, ollama ? ", \"modelfile\": \"" : "", ollama ? modelfile : "", ollama ? "\"" : "");
    return CLI_OK;
}
