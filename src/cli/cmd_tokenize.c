/* cmd_tokenize.c - `judgerl tokenize` (text <-> ids, chat rendering) and `judgerl tokenizer train` */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/clock.h"
#include "judgerl/fsutil.h"
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

static int do_bench(const char *cmd, const char *path, const char *file) {
    double t0 = jr_cpu_s(); /* CPU time: the machine may be shared */
    jr_tokenizer *t;
    jr_status st = jr_tok_load(&t, path);
    double load = jr_cpu_s() - t0;
    if (st) return cli_fail(cmd, st);
    char *text;
    size_t len;
    if ((st = jr_read_file(file, &text, &len))) { jr_tok_free(t); return cli_fail(cmd, st); }
    jr_ids ids = {0};
    double best = 1e30, cold = 0;
    size_t ntok = 0;
    for (int rep = 0; rep < 3 && !st; rep++) {
        ids.n = 0;
        double a = jr_cpu_s();
        size_t pos = 0;
        while (pos < len && !st) {
            size_t end = pos + 65536 < len ? pos + 65536 : len;
            while (end < len && text[end - 1] != '\n') end++;
            st = jr_tok_encode(t, text + pos, end - pos, 0, &ids);
            pos = end;
        }
        double el = jr_cpu_s() - a;
        if (rep == 0) cold = el;
        else if (el < best) best = el;
        ntok = ids.n;
    }
    free(text);
    jr_ids_free(&ids);
    jr_tok_free(t);
    if (st) return cli_fail(cmd, jr_fail_ctx(st, "%s", file));
    printf("{\"load_cpu_s\": %.3f, \"bytes\": %zu, \"tokens\": %zu, \"cold_encode_cpu_s\": %.3f, \"cold_encode_mb_s\": %.2f, "
           "\"warm_encode_cpu_s\": %.3f, \"warm_encode_mb_s\": %.2f}\n", load, len, ntok, cold, (double)len / 1e6 / cold, best,
           (double)len / 1e6 / best);
    return CLI_OK;
}

static int do_line_encode(const char *cmd, jr_tokenizer *t, const char *text, size_t len, int flags) {
    jr_ids ids = {0};
    jr_status st = jr_tok_encode(t, text, len, flags, &ids);
    if (st) return cli_fail(cmd, st);
    for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", (int)ids.ids[i]);
    putchar('\n');
    jr_ids_free(&ids);
    return CLI_OK;
}

static int do_line_decode(const char *cmd, jr_tokenizer *t, const char *line, int flags, int jsonl, size_t lineno) {
    jr_ids ids = {0};
    const char *p = line;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ' ' && *end != '\t' && *end != '\r')) {
            jr_ids_free(&ids);
            return cli_fail(cmd, jr_fail(JR_EINVAL, "stdin line %zu: \"%.20s\" is not a token id", lineno, p));
        }
        if (jr_ids_push(&ids, (int32_t)v)) { jr_ids_free(&ids); return cli_fail(cmd, JR_ENOMEM); }
        p = end;
    }
    char *txt;
    size_t len;
    jr_status st = jr_tok_decode(t, ids.ids, ids.n, flags, &txt, &len);
    jr_ids_free(&ids);
    if (st) return cli_fail(cmd, jr_fail_ctx(st, "stdin line %zu", lineno));
    if (jsonl) {
        json_t *o = json_pack("{s:s%}", "text", txt, len);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(o);
        if (!s) { free(txt); return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); }
        puts(s);
        free(s);
    } else {
        fwrite(txt, 1, len, stdout);
        putchar('\n');
    }
    free(txt);
    return CLI_OK;
}

static int do_chat(const char *cmd, jr_tokenizer *t, json_t *row, size_t lineno) {
    json_t *msgs = json_object_get(row, "messages");
    if (!json_is_array(msgs))
        return cli_fail(cmd, jr_fail(JR_EINVAL, "stdin line %zu: \"messages\" must be a list", lineno));
    size_t n = json_array_size(msgs);
    jr_chat_msg *m = calloc(n ? n : 1, sizeof *m);
    if (!m) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(msgs, i);
        m[i].role = json_string_value(json_object_get(e, "role"));
        m[i].content = json_string_value(json_object_get(e, "content"));
        if (!m[i].role) {
            free(m);
            return cli_fail(cmd, jr_fail(JR_EINVAL, "stdin line %zu: messages[%zu].role must be a string", lineno, i));
        }
    }
    jr_chat_opts o = {json_is_true(json_object_get(row, "add_generation_prompt")), -1};
    json_t *et = json_object_get(row, "enable_thinking");
    if (json_is_boolean(et)) o.enable_thinking = json_is_true(et);
    char *out;
    size_t len;
    jr_status st = jr_chat_render(t, m, n, &o, &out, &len, NULL, NULL);
    free(m);
    if (st) return cli_fail(cmd, jr_fail_ctx(st, "stdin line %zu", lineno));
    json_t *s = json_stringn(out, len);
    char *js = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    json_decref(s);
    free(out);
    if (!js) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    puts(js);
    free(js);
    return CLI_OK;
}

int cmd_tokenize(int argc, char **argv) {
    const char *cmd = "tokenize";
    if (cli_wants_help(argc, argv)) { fputs(TOKENIZE_HELP, stdout); return CLI_OK; }
    const char *path = NULL, *tpl = NULL, *bench = NULL;
    int decode = 0, nospecial = 0, split = 0, jsonl = 0, chat = 0, info = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tokenizer") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(a, "--chat-template") && i + 1 < argc) tpl = argv[++i];
        else if (!strcmp(a, "--bench") && i + 1 < argc) bench = argv[++i];
        else if (!strcmp(a, "--decode")) decode = 1;
        else if (!strcmp(a, "--no-special")) nospecial = 1;
        else if (!strcmp(a, "--split-special")) split = 1;
        else if (!strcmp(a, "--jsonl")) jsonl = 1;
        else if (!strcmp(a, "--chat")) chat = 1;
        else if (!strcmp(a, "--info")) info = 1;
        else return cli_usage(cmd, "unknown argument '%s'", a);
    }
    if (!path) return cli_usage(cmd, "--tokenizer PATH is required");
    if (decode && chat) return cli_usage(cmd, "--decode and --chat exclude each other");
    if (bench) return do_bench(cmd, path, bench);
    jr_tokenizer *t;
    jr_status st = jr_tok_load(&t, path);
    if (st) return cli_fail(cmd, st);
    if (tpl && (st = jr_tok_set_chat_template_file(t, tpl))) { jr_tok_free(t); return cli_fail(cmd, st); }
    if (info) {
        printf("{\"n_tokens\": %d, \"vocab_size\": %d, \"bos_id\": %d, \"eos_id\": %d, \"pad_id\": %d, \"chat_template\": %s}\n",
               (int)jr_tok_n_tokens(t), (int)jr_tok_vocab_size(t), (int)jr_tok_bos_id(t), (int)jr_tok_eos_id(t),
               (int)jr_tok_pad_id(t), jr_tok_has_chat_template(t) ? "true" : "false");
        jr_tok_free(t);
        return CLI_OK;
    }
    int eflags = (nospecial ? 0 : JR_TOK_ADD_SPECIAL) | (split ? JR_TOK_SPLIT_SPECIAL : 0);
    int dflags = nospecial ? JR_TOK_SKIP_SPECIAL : 0;
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    int rc = CLI_OK;
    while (rc == CLI_OK && (n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        size_t len = (size_t)n;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (jsonl || chat) {
            if (len == 0) continue;
            json_error_t je;
            json_t *row = json_loadb(line, len, JSON_ALLOW_NUL, &je);
            if (!json_is_object(row)) {
                json_decref(row);
                rc = cli_fail(cmd, jr_fail(JR_EINVAL, "stdin line %zu: not a JSON object: %s", lineno, row ? "" : je.text));
                break;
            }
            if (chat) rc = do_chat(cmd, t, row, lineno);
            else if (decode) {
                json_t *ids = json_object_get(row, "ids");
                if (!json_is_array(ids)) rc = cli_fail(cmd, jr_fail(JR_EINVAL, "stdin line %zu: \"ids\" must be a list", lineno));
                else {
                    char buf[16];
                    size_t i;
                    json_t *e;
                    char *joined = NULL;
                    size_t jl = 0;
                    FILE *mf = open_memstream(&joined, &jl);
                    json_array_foreach(ids, i, e) {
                        snprintf(buf, sizeof buf, "%lld ", (long long)json_integer_value(e));
                        fputs(json_is_integer(e) ? buf : "x ", mf);
                    }
                    fclose(mf);
                    rc = do_line_decode(cmd, t, joined ? joined : "", dflags, 1, lineno);
                    free(joined);
                }
            } else {
                json_t *tx = json_object_get(row, "text");
                if (!json_is_string(tx)) rc = cli_fail(cmd, jr_fail(JR_EINVAL, "stdin line %zu: \"text\" must be a string", lineno));
                else rc = do_line_encode(cmd, t, json_string_value(tx), json_string_length(tx), eflags);
            }
            json_decref(row);
        } else if (decode) {
            rc = do_line_decode(cmd, t, line, dflags, 0, lineno);
        } else {
            rc = do_line_encode(cmd, t, line, len, eflags);
        }
    }
    free(line);
    jr_tok_free(t);
    if (rc == CLI_OK && fflush(stdout)) return cli_fail(cmd, jr_fail(JR_EIO, "stdout: write failed"));
    return rc;
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
    if (!nsp) {
        specials[0] = "<|endoftext|>"; specials[1] = "<|im_start|>"; specials[2] = "<|im_end|>";
        nsp = 3;
    }
    char *text;
    size_t len;
    jr_status st = jr_read_file(corpus, &text, &len);
    if (st) return cli_fail(cmd, st);
    char *json;
    st = jr_tok_train(text, len, (int32_t)vocab, specials, nsp, &json);
    free(text);
    if (st) return cli_fail(cmd, jr_fail_ctx(st, "%s", corpus));
    st = jr_write_atomic(out, json, strlen(json));
    free(json);
    if (st) return cli_fail(cmd, st);
    return CLI_OK;
}
