/* tok_lines.c - the work of `judgerl tokenize`: streams of text or id lines and JSONL rows through a
 * tokenizer, the encode benchmark (--bench), and `judgerl tokenizer train` from a corpus file */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "judgerl/clock.h"
#include "judgerl/fsutil.h"
#include "judgerl/tokenizer.h"

void jr_tok_print_info(const jr_tokenizer *t, FILE *out) {
    fprintf(out, "{\"n_tokens\": %d, \"vocab_size\": %d, \"bos_id\": %d, \"eos_id\": %d, \"pad_id\": %d, \"chat_template\": %s}\n",
            (int)jr_tok_n_tokens(t), (int)jr_tok_vocab_size(t), (int)jr_tok_bos_id(t), (int)jr_tok_eos_id(t), (int)jr_tok_pad_id(t),
            jr_tok_has_chat_template(t) ? "true" : "false");
}

jr_status jr_tok_bench(const char *path, const char *file, FILE *out) {
    double t0 = jr_cpu_s(); /* CPU time: the machine may be shared */
    jr_tokenizer *t;
    jr_status st = jr_tok_load(&t, path);
    double load = jr_cpu_s() - t0, best = 1e30, cold = 0;
    if (st) return st;
    char *text;
    size_t len, ntok = 0;
    if ((st = jr_read_file(file, &text, &len))) { jr_tok_free(t); return st; }
    jr_ids ids = {0};
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
    if (st) return jr_fail_ctx(st, "%s", file);
    fprintf(out, "{\"load_cpu_s\": %.3f, \"bytes\": %zu, \"tokens\": %zu, \"cold_encode_cpu_s\": %.3f, \"cold_encode_mb_s\": %.2f, "
            "\"warm_encode_cpu_s\": %.3f, \"warm_encode_mb_s\": %.2f}\n", load, len, ntok, cold, (double)len / 1e6 / cold, best,
            (double)len / 1e6 / best);
    return JR_OK;
}

jr_status jr_tok_train_file(const char *corpus, int32_t vocab_size, const char *const *specials, size_t n_specials,
                            const char *out) {
    static const char *const dflt[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (!n_specials) specials = dflt, n_specials = 3;
    char *text, *json;
    size_t len;
    jr_status st = jr_read_file(corpus, &text, &len);
    if (st) return st;
    st = jr_tok_train(text, len, vocab_size, specials, n_specials, &json);
    free(text);
    if (st) return jr_fail_ctx(st, "%s", corpus);
    st = jr_write_atomic(out, json, strlen(json));
    free(json);
    return st;
}

static jr_status encode_line(jr_tokenizer *t, const char *text, size_t len, int flags, FILE *out) {
    jr_ids ids = {0};
    jr_status st = jr_tok_encode(t, text, len, flags, &ids);
    if (st) return st;
    for (size_t i = 0; i < ids.n; i++) fprintf(out, i ? " %d" : "%d", (int)ids.ids[i]);
    putc('\n', out);
    jr_ids_free(&ids);
    return JR_OK;
}

/* Decodes ids and writes the text: raw, or as a {"text": ...} row with jsonl. */
static jr_status write_decoded(jr_tokenizer *t, const jr_ids *ids, int flags, int jsonl, const char *in, size_t lineno,
                               FILE *out) {
    char *txt;
    size_t len;
    jr_status st = jr_tok_decode(t, ids->ids, ids->n, flags, &txt, &len);
    if (st) return jr_fail_ctx(st, "%s line %zu", in, lineno);
    if (jsonl) {
        json_t *o = json_pack("{s:s%}", "text", txt, len);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(o);
        if (!s) { free(txt); return jr_fail(JR_ENOMEM, "out of memory"); }
        fprintf(out, "%s\n", s);
        free(s);
    } else {
        fwrite(txt, 1, len, out);
        putc('\n', out);
    }
    free(txt);
    return JR_OK;
}

/* A line of space-separated ids, decoded. */
static jr_status decode_line(jr_tokenizer *t, const char *line, int flags, const char *in, size_t lineno, FILE *out) {
    jr_ids ids = {0};
    const char *p = line;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ' ' && *end != '\t' && *end != '\r')) {
            jr_ids_free(&ids);
            return jr_fail(JR_EINVAL, "%s line %zu: \"%.20s\" is not a token id", in, lineno, p);
        }
        if (jr_ids_push(&ids, (int32_t)v)) { jr_ids_free(&ids); return JR_ENOMEM; }
        p = end;
    }
    jr_status st = write_decoded(t, &ids, flags, 0, in, lineno, out);
    jr_ids_free(&ids);
    return st;
}

static jr_status chat_row(jr_tokenizer *t, json_t *row, const char *in, size_t lineno, FILE *out) {
    json_t *msgs = json_object_get(row, "messages");
    if (!json_is_array(msgs)) return jr_fail(JR_EINVAL, "%s line %zu: \"messages\" must be a list", in, lineno);
    size_t n = json_array_size(msgs);
    jr_chat_msg *m = calloc(n ? n : 1, sizeof *m);
    if (!m) return jr_fail(JR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(msgs, i);
        json_t *c = json_object_get(e, "content");
        m[i].role = json_string_value(json_object_get(e, "role"));
        m[i].content = json_string_value(c);
        const char *bad = !m[i].role ? "role must be a string"
                          : c && !json_is_null(c) && !m[i].content ? "content must be a string or null"
                          : m[i].content && strlen(m[i].content) != json_string_length(c) ? "content holds a NUL character"
                                                                                          : NULL;
        if (bad) {
            free(m);
            return jr_fail(JR_EINVAL, "%s line %zu: messages[%zu].%s", in, lineno, i, bad);
        }
    }
    jr_chat_opts o = {json_is_true(json_object_get(row, "add_generation_prompt")), -1};
    json_t *et = json_object_get(row, "enable_thinking");
    if (json_is_boolean(et)) o.enable_thinking = json_is_true(et);
    char *text;
    size_t len;
    jr_status st = jr_chat_render(t, m, n, &o, &text, &len, NULL, NULL);
    free(m);
    if (st) return jr_fail_ctx(st, "%s line %zu", in, lineno);
    json_t *s = json_stringn(text, len);
    char *js = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    json_decref(s);
    free(text);
    if (!js) return jr_fail(JR_ENOMEM, "out of memory");
    fprintf(out, "%s\n", js);
    free(js);
    return JR_OK;
}

static int encode_flags(const jr_tok_lines_opts *o) {
    return (o->no_special ? 0 : JR_TOK_ADD_SPECIAL) | (o->split_special ? JR_TOK_SPLIT_SPECIAL : 0);
}

/* One JSONL row: a chat, {"ids": [...]} to decode or {"text": ...} to encode. */
static jr_status json_row(jr_tokenizer *t, const jr_tok_lines_opts *o, json_t *row, size_t lineno, FILE *out) {
    const char *in = o->in_name;
    if (o->chat) return chat_row(t, row, in, lineno, out);
    if (!o->decode) {
        json_t *tx = json_object_get(row, "text");
        if (!json_is_string(tx)) return jr_fail(JR_EINVAL, "%s line %zu: \"text\" must be a string", in, lineno);
        return encode_line(t, json_string_value(tx), json_string_length(tx), encode_flags(o), out);
    }
    json_t *arr = json_object_get(row, "ids"), *e;
    if (!json_is_array(arr)) return jr_fail(JR_EINVAL, "%s line %zu: \"ids\" must be a list", in, lineno);
    jr_ids ids = {0};
    size_t i;
    jr_status st = JR_OK;
    json_array_foreach(arr, i, e) {
        json_int_t v = json_integer_value(e);
        if (!json_is_integer(e) || v < 0 || v > 0x7fffffff) {
            st = jr_fail(JR_EINVAL, "%s line %zu: \"ids\"[%zu] is not a token id", in, lineno, i);
            break;
        }
        if ((st = jr_ids_push(&ids, (int32_t)v))) break;
    }
    if (!st) st = write_decoded(t, &ids, o->no_special ? JR_TOK_SKIP_SPECIAL : 0, 1, in, lineno, out);
    jr_ids_free(&ids);
    return st;
}

jr_status jr_tok_lines(jr_tokenizer *t, const jr_tok_lines_opts *o, FILE *in, FILE *out) {
    const char *name = o->in_name ? o->in_name : "input";
    jr_tok_lines_opts so = *o;
    so.in_name = name;
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    jr_status st = JR_OK;
    while (!st && (n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        size_t len = (size_t)n;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (o->jsonl || o->chat) {
            if (len == 0) continue;
            json_error_t je;
            json_t *row = json_loadb(line, len, JSON_ALLOW_NUL, &je);
            if (!json_is_object(row)) st = jr_fail(JR_EINVAL, "%s line %zu: not a JSON object: %s", name, lineno, row ? "" : je.text);
            else st = json_row(t, &so, row, lineno, out);
            json_decref(row);
        } else if (o->decode) {
            st = decode_line(t, line, o->no_special ? JR_TOK_SKIP_SPECIAL : 0, name, lineno, out);
        } else {
            st = encode_line(t, line, len, encode_flags(o), out);
        }
    }
    free(line);
    return st;
}
