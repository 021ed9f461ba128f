/* main.c - judgerl's entry point: dispatches to one subcommand per file in src/cli/ */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/cpu.h"
#include "judgerl/dist.h"
#include "judgerl/wfrl.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"demo", cmd_demo, "the embedded default: the magic 8-ball end to end, with a report"},
    {"train", cmd_train, "train a model from a YAML config (SFT, GRPO, RLOO, distill)"},
    {"generate", cmd_generate, "sample completions from a model directory (prompt, chat or JSONL)"},
    {"serve", cmd_serve, "OpenAI-compatible HTTP server for a model directory"},
    {"serve-reward", cmd_serve_reward, "reward service for verl / OpenRLHF / TRL / slime (remote reward protocols, batch API)"},
    {"grade", cmd_grade, "grade a JSONL file with an LLM judge (resumable, cached)"},
    {"eval", cmd_eval, "score a model, checkpoint or adapter (N samples, rewards, IFEval, pass@k); eval code: HumanEval pass@k"},
    {"workflow", cmd_workflow, "seed 2's workflows: check one, run it on problems against an executor model"},
    {"study", cmd_study, "train one GRPO config against several judges with a gold check: drift, alarms, probes side by side"},
    {"probe", cmd_probe, "measure a judge's biases (position, verbosity, master keys, ...) with intervals"},
    {"ifeval", cmd_ifeval, "score IFEval responses (strict and loose) like the official scorer"},
    {"report", cmd_report, "write a run's report.html (training, eval, grade output or demo run)"},
    {"compare", cmd_compare, "one HTML page comparing runs: overlaid curves, config diff, samples"},
    {"seed1", cmd_seed1, "seed 1 reproduced: 8-ball classifier, classifier judges, judge distillation"},
    {"tokenize", cmd_tokenize, "text -> token ids (or back), chat template rendering"},
    {"tokenizer", cmd_tokenizer, "tokenizer train: byte-level BPE from a text corpus"},
    {"forward", cmd_forward, "one forward/backward pass over token ids: loss, logits and gradients"},
    {"merge", cmd_merge, "fold a PEFT LoRA adapter into a full model directory"},
    {"export", cmd_export, "write a model directory as GGUF for llama.cpp / ollama"},
    {"inspect", cmd_inspect, "read-only summary of a model directory or safetensors file"},
    {"convert", cmd_convert, "rewrite a model directory in another dtype or shard size"},
    {"dataset", cmd_dataset, "check a JSONL dataset: rows, fields, bad lines, train/validation split"},
    {"tb-export", cmd_tb_export, "write a metrics.jsonl as a TensorBoard event file"},
    {"config", cmd_config, "check a YAML config and print every effective value"},
    {"bench", cmd_bench, "benchmarks printing one JSON object of figures (grade, train, generate)"},
    {"version", cmd_version, "print the version"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: judgerl COMMAND [args]   (judgerl COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (jr_wf_reward_register()) { fprintf(stderr, "judgerl: %s\n", jr_errmsg()); return CLI_FAIL; }
    /* the kernel level first: a JR_CPU this CPU cannot run is refused before any work */
    if (jr_cpu_init()) { fprintf(stderr, "judgerl: %s\n", jr_errmsg()); return CLI_USAGE; }
    if (argc < 2) { usage(stderr); return CLI_USAGE; }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) { usage(stdout); return CLI_OK; }
    if (!strcmp(argv[1], "--version")) return cmd_version(argc - 1, argv + 1);
    long ranks = jr_dist_launcher_size();
    if (strcmp(argv[1], "train") && ranks > 1) {
        fprintf(stderr, "judgerl: %s: launched by mpirun as several ranks, but only `judgerl train` runs over MPI "
                        "(docs/SCALE.md): run %s as one process\n", argv[1], argv[1]);
        return CLI_USAGE;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "judgerl: unknown command '%s' (run judgerl --help for the list)\n", argv[1]);
    return CLI_USAGE;
}
