/* cli.h - shared helpers of the subcommands: the only place that prints errors and picks exit codes */
#ifndef JUDGERL_CLI_H
#define JUDGERL_CLI_H

#include "judgerl/config.h"
#include "judgerl/status.h"
#include "judgerl/textgen.h"

/* Exit codes: 0 ok, 1 failure (bad input, I/O, network), 2 usage error, 3 internal error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_BUG = 3 };

/* Prints "judgerl CMD: <library message>" (one line) and returns the exit code for st. */
int cli_fail(const char *cmd, jr_status st);
/* Prints "judgerl CMD: <formatted message>" (one line) and returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* jr_args_parse (args.h) with its errors printed as usage errors: CLI_OK, or the exit code. unknown:
 * the message for an argument no flag takes, with one %s for it. Free a with jr_args_free. */
#include "judgerl/args.h"
int cli_args(const char *cmd, jr_args *a, const jr_arg *spec, int argc, char **argv, int max_pos, int overrides,
             const char *unknown);
/* cli_args for a command that takes flags only (no positional argument, no key=value override). */
int cli_flags(const char *cmd, const jr_arg *spec, int argc, char **argv, const char *unknown);

/* Blocks SIGTERM and SIGINT in this thread and every thread started after (a server's main thread
 * then takes them with sigwait(set)) and ignores SIGPIPE. Call before starting any thread. */
#include <signal.h>
void cli_block_stop_signals(sigset_t *set);

/* Installs a SIGINT / SIGTERM handler that only sets the returned flag (the library's `stop`
 * argument: finish what is in flight, keep what is done, return JR_ECANCELED). */
volatile sig_atomic_t *cli_stop_on_signals(void);

/* 1 when argv has -h or --help. */
int cli_wants_help(int argc, char **argv);

/* Loads a command's configuration from its arguments: an optional first positional YAML file
 * (when `takes_file`), any number of key=value overrides, and --print-config (print every
 * effective value and set *print_only). Unknown flags are an error. Returns an exit code
 * (CLI_OK on success). */
int cli_load_config(const char *cmd, int argc, char **argv, int takes_file, const jr_cfg_field *const *tables,
                    jr_config *cfg, int *print_only);
/* Its second half: loads cfg from file (NULL: defaults) and n_over key=value overrides, prints the
 * notes and, when `print`, every effective value. Returns an exit code (CLI_OK: cfg loaded). */
int cli_config_load(const char *cmd, const char *file, int n_over, char **over, const jr_cfg_field *const *tables,
                    jr_config *cfg, int print);

/* generate's and serve's --compute auto|float32|bfloat16 (the weights: auto = bfloat16 where the CPU
 * has bf16 units, as model.compute), --kv-cache float32|bfloat16, --deterministic 1|0 (NULL = default). */
typedef struct cli_kv_args { const char *compute, *kv_cache, *deterministic; } cli_kv_args;
/* Checks and resolves them into *o: CLI_OK, or the exit code after a usage message. */
int cli_kv_opts(const char *cmd, const cli_kv_args *a, jr_kv_opts *o);
#define CLI_KV_USAGE \
    "  --compute auto|float32|bfloat16 (default auto: bfloat16 where the CPU has bf16 units, as\n" \
    "  model.compute): bfloat16 keeps the weights in bf16 (half the bytes per decode step);\n" \
    "  --kv-cache float32|bfloat16 (default float32); --deterministic 1|0 (default 1: a seeded request\n" \
    "  gives the same tokens alone or batched; 0 lets oneDNN run bf16 products of 64+ rows and, on\n" \
    "  CPUs without AVX-512, batches float32 prompts through sgemm: faster prefill, batch-dependent in\n" \
    "  the last bits). See docs/PERFORMANCE.md.\n"

/* Subcommands: each takes argv from its own name on and returns an exit code. */
int cmd_version(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_serve_reward(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_forward(int argc, char **argv);
int cmd_dataset(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_tb_export(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_ifeval(int argc, char **argv);
int cmd_grade(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_study(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_seed1(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_workflow(int argc, char **argv);

#endif
