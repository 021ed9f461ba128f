/* cmd_tokenize.c - `judgerl tokenize` (text <-> ids, chat rendering) and `judgerl tokenizer train` */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/tokenizer.h"

static const char *TOKENIZE_HELP =
    "usage: judgerl tokenize --tokenizer PATH [--decode] [--no-special] [--split-special] [--jsonl]\n"
    "                        [--chat [--chat-template FILE]] [--info]\n"
    "Reads stdin line by line. PATH is a tokenizer.json file or a model directory.\n"
    "  (default)        each line of text -> one line of space-separated ids\n"
    "  --decode         each line of space-separated ids -> text\n"
    "  --jsonl          rows are {\"text\": ...} objects (so texts may hold newlines); with --decode the\n"
    "                   output rows are {\"text\": ...}\n"
    "  --no-special     encode: do not add the post-processor's tokens (e.g. BOS);\n"
    "                   decode: drop special tokens\n"
    "  --split-special  encode special-token text (\"<|im_end|>\") as plain text\n"
    "  --chat           rows are {\"messages\": [{\"role\",\"content\"}...], \"add_generation_prompt\": bool,\n"
    "                   \"enable_thinking\": bool}; prints each rendered conversation as a JSON string\n"
    "  --chat-template FILE  render with this Jinja template instead of the model's\n"
    "  --info           print token count, vocab_size and special ids as JSON, then exit\n"
    "  --bench FILE     time loading and encoding FILE (in newline-aligned chunks of about 64 KiB; CPU time of\n                   the first pass (cold word cache) and the best of two more)\n"
    "                   and print the figures as JSON\n";

int cmd_tokenize(int argc, char **argv) {
    const char *cmd = "tokenize";
    if (cli_wants_help(argc, argv)) { fputs(TOKENIZE_HELP, stdout); return CLI_OK; }
    const char *path = NULL, *tpl = NULL, *bench = NULL;
    jr_tok_lines_opts o = {.in_name = "stdin"};
    int info = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tokenizer") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(a, "--chat-template") && i + 1 < argc) tpl = argv[++i];
        else if (!strcmp(a, "--bench") && i + 1 < argc) bench = argv[++i];
        else if (!strcmp(a, "--decode")) o.decode = 1;
        else if (!strcmp(a, "--no-special")) o.no_special = 1;
        else if (!strcmp(a, "--split-special")) o.split_special = 1;
        else if (!strcmp(a, "--jsonl")) o.jsonl = 1;
        else if (!strcmp(a, "--chat")) o.chat = 1;
        else if (!strcmp(a, "--info")) info = 1;
        else return cli_usage(cmd, "unknown argument '%s'", a);
    }
    if (!path) return cli_usage(cmd, "--tokenizer PATH is required");
    if (o.decode && o.chat) return cli_usage(cmd, "--decode and --chat exclude each other");
    jr_tokenizer *t;
    jr_status st = bench ? jr_tok_bench(path, bench, stdout) : jr_tok_load(&t, path);
    if (st || bench) return st ? cli_fail(cmd, st) : CLI_OK;
    if (tpl && (st = jr_tok_set_chat_template_file(t, tpl))) { jr_tok_free(t); return cli_fail(cmd, st); }
    if (info) jr_tok_print_info(t, stdout);
    else st = jr_tok_lines(t, &o, stdin, stdout);
    jr_tok_free(t);
    if (st) return cli_fail(cmd, st);
    return fflush(stdout) ? cli_fail(cmd, jr_fail(JR_EIO, "stdout: write failed")) : CLI_OK;
}

static const char *TRAIN_HELP =
    "usage: judgerl tokenizer train --vocab N -o tokenizer.json [--special TOKEN]... CORPUS\n"
    "Trains a byte-level BPE tokenizer (Qwen-style pre-tokenizer, ByteLevel decoder) on the UTF-8\n"
    "text file CORPUS with N tokens in total (256 bytes + merges + special tokens). Default special\n"
    "tokens: <|endoftext|> <|im_start|> <|im_end|>. The output is HF tokenizer.json, written atomically.\n";

int cmd_tokenizer(int argc, char **argv) {
    const char *cmd = "tokenizer";
    if (argc < 2 || strcmp(argv[1], "train")) {
        if (cli_wants_help(argc, argv)) { fputs(TRAIN_HELP, stdout); return CLI_OK; }
        return cli_usage(cmd, "expected the subcommand 'train'");
    }
    cmd = "tokenizer train";
    if (cli_wants_help(argc, argv)) { fputs(TRAIN_HELP, stdout); return CLI_OK; }
    const char *out = NULL, *corpus = NULL;
    long vocab = 0;
    const char *specials[64];
    size_t nsp = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--vocab") && i + 1 < argc) {
            char *end;
            vocab = strtol(argv[++i], &end, 10);
            if (*end || vocab <= 0) return cli_usage(cmd, "--vocab: '%s' is not a positive integer", argv[i]);
        } else if (!strcmp(a, "-o") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(a, "--special") && i + 1 < argc) {
            if (nsp == 64) return cli_usage(cmd, "at most 64 --special tokens");
            specials[nsp++] = argv[++i];
        } else if (a[0] == '-') return cli_usage(cmd, "unknown option '%s'", a);
        else if (!corpus) corpus = a;
        else return cli_usage(cmd, "unexpected argument '%s'", a);
    }
    if (!out || !corpus || !vocab) return cli_usage(cmd, "--vocab N, -o FILE and CORPUS are required");
    jr_status st = jr_tok_train_file(corpus, (int32_t)vocab, specials, nsp, out);
    return st ? cli_fail(cmd, st) : CLI_OK;
}
