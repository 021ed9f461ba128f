/* ifeval_file.c - an IFEval responses file scored strict and loose, like the official tool (`judgerl ifeval`) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "judgerl/fsutil.h"
#include "judgerl/ifeval.h"
#include "judgerl/utf8.h"

typedef struct {
    char *buf;
    size_t len;
    size_t pos;
    size_t line;
} lines;

/* next line (NUL-terminated in place); NULL at the end */
static char *next_line(lines *l, size_t *len) {
    if (l->pos >= l->len) return NULL;
    char *s = l->buf + l->pos;
    char *nl = memchr(s, '\n', l->len - l->pos);
    size_t n = nl ? (size_t)(nl - s) : l->len - l->pos;
    s[n] = 0;
    l->pos += n + 1;
    l->line++;
    *len = n;
    return s;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r", s[i])) return false;
    return true;
}

/* Python json.dumps of a string (ensure_ascii) */
static void dump_str(FILE *f, const char *s) {
    fputc('"', f);
    size_t n = strlen(s), i = 0;
    while (i < n) {
        uint32_t cp = 0xFFFD; /* jansson's strings are valid UTF-8: an invalid byte cannot come */
        size_t l = jr_utf8_decode(s + i, n - i, &cp);
        i += l ? l : 1;
        switch (cp) {
        case '"': fputs("\\\"", f); continue;
        case '\\': fputs("\\\\", f); continue;
        case '\n': fputs("\\n", f); continue;
        case '\r': fputs("\\r", f); continue;
        case '\t': fputs("\\t", f); continue;
        case '\b': fputs("\\b", f); continue;
        case '\f': fputs("\\f", f); continue;
        default: break;
        }
        if (cp < 0x20 || cp > 0x7E) {
            if (cp >= 0x10000) {
                uint32_t v = cp - 0x10000;
                fprintf(f, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                fprintf(f, "\\u%04x", cp);
            }
        } else {
            fputc((int)cp, f);
        }
    }
    fputc('"', f);
}

static jr_status write_results(const char *dir, const char *name, const jr_ifeval_row *rows, size_t n, int mode) {
    char *path = jr_path_join(dir, name);
    if (!path) return JR_ENOMEM;
    jr_afile af = {0};
    jr_status st = jr_afile_open(&af, path);
    free(path);
    if (st) return st;
    for (size_t r = 0; r < n; r++) {
        const jr_ifeval_row *s = &rows[r];
        fprintf(af.f, "{\"follow_all_instructions\": %s, \"follow_instruction_list\": [",
                jr_ifeval_all_pass(s->res[mode], s->n) || s->n == 0 ? "true" : "false");
        for (size_t i = 0; i < s->n; i++) fprintf(af.f, "%s%s", i ? ", " : "", s->res[mode][i] ? "true" : "false");
        fputs("], \"instruction_id_list\": [", af.f);
        for (size_t i = 0; i < s->n; i++) {
            if (i) fputs(", ", af.f);
            dump_str(af.f, json_string_value(json_array_get(s->ids, i)));
        }
        fputs("], \"prompt\": ", af.f);
        dump_str(af.f, s->prompt);
        fputs(", \"response\": ", af.f);
        dump_str(af.f, s->response);
        fputs("}\n", af.f);
    }
    if (ferror(af.f)) {
        int e = jr_afile_errno(&af);
        jr_afile_abort(&af);
        return jr_fail(JR_EIO, "%s/%s: write failed: %s", dir, name, strerror(e ? e : EIO));
    }
    return jr_afile_commit(&af);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

void jr_ifeval_file_breakdown(FILE *out, const jr_ifeval_file *f, int mode) {
    const jr_ifeval_row *rows = f->rows;
    size_t n = f->n_rows;
    const char *tag = mode ? "loose" : "strict";
    char names[2 * JR_IFEVAL_N_INSTRUCTIONS][96];
    const char *sorted[2 * JR_IFEVAL_N_INSTRUCTIONS];
    for (int level = 0; level < 2; level++) {
        size_t k = 0;
        for (int i = 0; i < JR_IFEVAL_N_INSTRUCTIONS; i++) {
            const char *id = jr_ifeval_instruction_name(i);
            int len = level ? (int)strlen(id) : (int)(strchr(id, ':') - id);
            snprintf(names[k], sizeof names[k], "%.*s", len, id);
            bool dup = false;
            for (size_t j = 0; j < k; j++)
                if (!strcmp(sorted[j], names[k])) dup = true;
            if (!dup) { sorted[k] = names[k]; k++; }
        }
        qsort(sorted, k, sizeof *sorted, cmp_str);
        for (size_t g = 0; g < k; g++) {
            size_t tot = 0, ok = 0, gl = strlen(sorted[g]);
            for (size_t r = 0; r < n; r++)
                for (size_t i = 0; i < rows[r].n; i++) {
                    const char *x = json_string_value(json_array_get(rows[r].ids, i));
                    if (level ? !strcmp(x, sorted[g]) : (!strncmp(x, sorted[g], gl) && x[gl] == ':')) {
                        tot++;
                        ok += rows[r].res[mode][i];
                    }
                }
            if (tot) fprintf(out, "%s %s %.4f (%zu/%zu)\n", tag, sorted[g], (double)ok / tot, ok, tot);
        }
    }
}

/* Reads a JSONL file into an array of objects (NULL for malformed lines, reported). */
static jr_status read_jsonl(const char *path, json_t ***out, size_t *nout, size_t **line_of, FILE *warn, const char *prefix) {
    char *buf;
    size_t len;
    jr_status st = jr_read_file(path, &buf, &len);
    if (st) return st;
    lines l = {buf, len, 0, 0};
    size_t cap = 64, n = 0;
    json_t **rows = malloc(cap * sizeof *rows);
    size_t *lo = malloc(cap * sizeof *lo);
    if (!rows || !lo) { free(buf); free(rows); free(lo); return jr_fail(JR_ENOMEM, "%s: out of memory", path); }
    char *s;
    size_t sl;
    while ((s = next_line(&l, &sl))) {
        if (blank(s, sl)) continue;
        json_error_t err;
        json_t *o = json_loadb(s, sl, 0, &err);
        if (o && !json_is_object(o)) {
            fprintf(warn, "%s%s:%zu: a row must be a JSON object\n", prefix, path, l.line);
            json_decref(o);
            o = NULL;
        } else if (!o) {
            fprintf(warn, "%s%s:%zu: invalid JSON: %s\n", prefix, path, l.line, err.text);
        }
        if (n == cap) {
            cap *= 2;
            json_t **nr = realloc(rows, cap * sizeof *rows);
            size_t *nl = nr ? realloc(lo, cap * sizeof *lo) : NULL;
            if (nr) rows = nr;
            if (nl) lo = nl;
            if (!nr || !nl) {
                json_decref(o);
                for (size_t i = 0; i < n; i++) json_decref(rows[i]);
                free(rows); free(lo); free(buf);
                return jr_fail(JR_ENOMEM, "%s: out of memory", path);
            }
        }
        rows[n] = o;
        lo[n] = l.line;
        n++;
    }
    free(buf);
    *out = rows;
    *nout = n;
    *line_of = lo;
    return JR_OK;
}

static const char *str_field(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* The response of --prompts row o: the input row whose prompt text matches (the last one, like the
 * official dict), or NULL. */
static const char *response_for(const jr_ifeval_file *f, const char *prompt) {
    const char *found = NULL;
    for (size_t k = 0; k < f->nin; k++) {
        const char *p = f->in[k] ? str_field(f->in[k], "prompt") : NULL;
        const char *resp = f->in[k] ? str_field(f->in[k], "response") : NULL;
        if (p && resp && !strcmp(p, prompt)) found = resp;
    }
    return found;
}

/* Scores row o (line `line` of src_path) into s: 1 scored, 0 malformed (reported), -1 out of memory. */
static int score_row(jr_ifeval_file *f, json_t *o, jr_ifeval_row *s, const char *src_path, size_t line, const char *input,
                     int joined, FILE *warn, const char *prefix) {
    s->ids = json_object_get(o, "instruction_id_list");
    s->kwargs = json_object_get(o, "kwargs");
    s->prompt = str_field(o, "prompt");
    const char *missing = !s->prompt ? "prompt" : !s->ids ? "instruction_id_list" : !s->kwargs ? "kwargs" : NULL;
    if (!missing && joined) {
        if (!(s->response = response_for(f, s->prompt))) {
            fprintf(warn, "%s%s:%zu: no response for this prompt in %s\n", prefix, src_path, line, input);
            return 0;
        }
    } else if (!missing) {
        s->response = str_field(o, "response");
        if (!s->response) missing = "response";
    }
    if (missing) {
        fprintf(warn, "%s%s:%zu: missing or non-string field \"%s\"\n", prefix, src_path, line, missing);
        return 0;
    }
    s->n = json_is_array(s->ids) ? json_array_size(s->ids) : 0;
    s->res[0] = calloc(s->n + 1, sizeof(bool));
    s->res[1] = calloc(s->n + 1, sizeof(bool));
    if (!s->res[0] || !s->res[1]) return -1;
    jr_status e1 = jr_ifeval_check_row(s->ids, s->kwargs, s->prompt, s->response, JR_IFEVAL_STRICT, s->res[0]);
    jr_status e2 = e1 ? e1 : jr_ifeval_check_row(s->ids, s->kwargs, s->prompt, s->response, JR_IFEVAL_LOOSE, s->res[1]);
    if (e1 || e2) {
        fprintf(warn, "%s%s:%zu: %s\n", prefix, src_path, line, jr_errmsg());
        free(s->res[0]);
        free(s->res[1]);
        s->res[0] = s->res[1] = NULL;
        return 0;
    }
    return 1;
}

jr_status jr_ifeval_file_score(jr_ifeval_file *f, const char *input, const char *prompts, FILE *warn, const char *prefix) {
    memset(f, 0, sizeof *f);
    size_t *in_line = NULL, *pr_line = NULL;
    jr_status st = read_jsonl(input, &f->in, &f->nin, &in_line, warn, prefix);
    if (!st && prompts) st = read_jsonl(prompts, &f->pr, &f->npr, &pr_line, warn, prefix);
    /* the rows to score: prompt rows (with prompts) or input rows */
    json_t **src = prompts ? f->pr : f->in;
    size_t nsrc = prompts ? f->npr : f->nin, *src_line = prompts ? pr_line : in_line;
    const char *src_path = prompts ? prompts : input;
    if (!st && !(f->rows = calloc(nsrc ? nsrc : 1, sizeof *f->rows))) st = jr_fail(JR_ENOMEM, "out of memory");
    if (!st) f->n_alloc = nsrc;
    for (size_t r = 0; !st && r < nsrc; r++) {
        int ok = src[r] ? score_row(f, src[r], &f->rows[f->n_rows], src_path, src_line[r], input, !!prompts, warn, prefix) : 0;
        if (ok < 0) st = jr_fail(JR_ENOMEM, "out of memory");
        else if (ok) f->n_rows++;
        else f->n_bad++;
    }
    if (!st && !f->n_rows) st = jr_fail(JR_EFORMAT, "%s: no row could be scored (%zu malformed)", src_path, f->n_bad);
    free(in_line);
    free(pr_line);
    if (st) jr_ifeval_file_free(f);
    return st;
}

void jr_ifeval_file_accuracy(const jr_ifeval_file *f, int mode, size_t *p_ok, size_t *i_ok, size_t *i_tot) {
    *p_ok = *i_ok = *i_tot = 0;
    for (size_t r = 0; r < f->n_rows; r++) {
        *p_ok += jr_ifeval_all_pass(f->rows[r].res[mode], f->rows[r].n) || f->rows[r].n == 0;
        for (size_t i = 0; i < f->rows[r].n; i++) *i_ok += f->rows[r].res[mode][i];
        *i_tot += f->rows[r].n;
    }
}

jr_status jr_ifeval_file_write(const jr_ifeval_file *f, const char *dir) {
    jr_status st = jr_mkdirs(dir);
    if (!st) st = write_results(dir, "eval_results_strict.jsonl", f->rows, f->n_rows, 0);
    if (!st) st = write_results(dir, "eval_results_loose.jsonl", f->rows, f->n_rows, 1);
    return st;
}

void jr_ifeval_file_free(jr_ifeval_file *f) {
    for (size_t r = 0; f->rows && r < f->n_alloc; r++) {
        free(f->rows[r].res[0]);
        free(f->rows[r].res[1]);
    }
    free(f->rows);
    for (size_t i = 0; i < f->nin; i++) json_decref(f->in[i]);
    for (size_t i = 0; i < f->npr; i++) json_decref(f->pr[i]);
    free(f->in);
    free(f->pr);
    memset(f, 0, sizeof *f);
}

void jr_ifeval_file_print(FILE *out, const jr_ifeval_file *f, int breakdown) {
    for (int m = 0; m < 2; m++) {
        size_t p_ok, i_ok, i_tot;
        jr_ifeval_file_accuracy(f, m, &p_ok, &i_ok, &i_tot);
        const char *tag = m ? "loose" : "strict";
        fprintf(out, "%s prompt-level: %.4f (%zu/%zu)\n", tag, (double)p_ok / f->n_rows, p_ok, f->n_rows);
        fprintf(out, "%s instruction-level: %.4f (%zu/%zu)\n", tag, i_tot ? (double)i_ok / i_tot : 0.0, i_ok, i_tot);
    }
    if (breakdown)
        for (int m = 0; m < 2; m++) jr_ifeval_file_breakdown(out, f, m);
}
