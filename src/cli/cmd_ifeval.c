/* cmd_ifeval.c - `judgerl ifeval`: scores IFEval responses strict and loose, like the official tool */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/ifeval.h"

static const char *usage_text =
    "usage: judgerl ifeval --input RESPONSES.jsonl [--prompts input_data.jsonl] [--output-dir DIR] [--breakdown]\n"
    "\n"
    "Scores IFEval responses with the 25 instruction checkers, strict and loose, and prints the\n"
    "prompt-level and instruction-level accuracies of both modes.\n"
    "  --input FILE       JSONL rows with prompt, response, instruction_id_list, kwargs; with\n"
    "                     --prompts, rows with prompt and response only (joined by prompt text)\n"
    "  --prompts FILE     the benchmark's input_data.jsonl (key, prompt, instruction_id_list, kwargs)\n"
    "  --output-dir DIR   write DIR/eval_results_strict.jsonl and DIR/eval_results_loose.jsonl\n"
    "  --breakdown        also print the accuracy per instruction group and per instruction\n"
    "A malformed row is reported on stderr with its line number and skipped; the exit status is 0\n"
    "when at least one row was scored.\n";

typedef struct {
    json_t *ids, *kwargs;   /* borrowed from the row objects */
    const char *prompt, *response;
    bool *res[2];           /* strict, loose */
    size_t n;
} scored;

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
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        unsigned c = u[i];
        uint32_t cp;
        int extra = 0;
        if (c < 0x80) cp = c;
        else if (c >= 0xF0) { cp = c & 0x07; extra = 3; }
        else if (c >= 0xE0) { cp = c & 0x0F; extra = 2; }
        else { cp = c & 0x1F; extra = 1; }
        i++;
        for (int k = 0; k < extra && i < n; k++, i++) cp = (cp << 6) | (u[i] & 0x3F);
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

static jr_status write_results(const char *dir, const char *name, const scored *rows, size_t n, int mode) {
    char *path = jr_path_join(dir, name);
    if (!path) return JR_ENOMEM;
    jr_afile af = {0};
    jr_status st = jr_afile_open(&af, path);
    free(path);
    if (st) return st;
    for (size_t r = 0; r < n; r++) {
        const scored *s = &rows[r];
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

/* Accuracy per instruction group and per instruction id, each sorted by name (as the official
 * report prints them). */
static void print_breakdown(const scored *rows, size_t n, int mode) {
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
            if (tot) printf("%s %s %.4f (%zu/%zu)\n", tag, sorted[g], (double)ok / tot, ok, tot);
        }
    }
}

/* Reads a JSONL file into an array of objects (NULL for malformed lines, reported). */
static jr_status read_jsonl(const char *path, json_t ***out, size_t *nout, size_t **line_of) {
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
            fprintf(stderr, "judgerl ifeval: %s:%zu: a row must be a JSON object\n", path, l.line);
            json_decref(o);
            o = NULL;
        } else if (!o) {
            fprintf(stderr, "judgerl ifeval: %s:%zu: invalid JSON: %s\n", path, l.line, err.text);
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

int cmd_ifeval(int argc, char **argv) {
    const char *input = NULL, *prompts = NULL, *outdir = NULL;
    int breakdown = 0;
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--input") || !strcmp(a, "--prompts") || !strcmp(a, "--output-dir")) && i + 1 >= argc)
            return cli_usage("ifeval", "%s needs a value (see judgerl ifeval --help)", a);
        if (!strcmp(a, "--input")) input = argv[++i];
        else if (!strcmp(a, "--prompts")) prompts = argv[++i];
        else if (!strcmp(a, "--output-dir")) outdir = argv[++i];
        else if (!strcmp(a, "--breakdown")) breakdown = 1;
        else return cli_usage("ifeval", "unknown argument '%s' (see judgerl ifeval --help)", a);
    }
    if (!input) return cli_usage("ifeval", "--input FILE.jsonl is required (see judgerl ifeval --help)");

    json_t **in = NULL, **pr = NULL;
    size_t nin = 0, npr = 0, *in_line = NULL, *pr_line = NULL;
    jr_status st = read_jsonl(input, &in, &nin, &in_line);
    if (st) return cli_fail("ifeval", st);
    if (prompts && (st = read_jsonl(prompts, &pr, &npr, &pr_line))) {
        for (size_t i = 0; i < nin; i++) json_decref(in[i]);
        free(in); free(in_line);
        return cli_fail("ifeval", st);
    }

    /* the rows to score: prompt rows (with --prompts) or input rows */
    json_t **src = prompts ? pr : in;
    size_t nsrc = prompts ? npr : nin, *src_line = prompts ? pr_line : in_line;
    const char *src_path = prompts ? prompts : input;
    scored *rows = calloc(nsrc ? nsrc : 1, sizeof *rows);
    size_t nrows = 0, bad = 0;
    if (!rows) { st = jr_fail(JR_ENOMEM, "out of memory"); goto done; }
    for (size_t r = 0; r < nsrc; r++) {
        json_t *o = src[r];
        if (!o) { bad++; continue; }
        scored *s = &rows[nrows];
        s->ids = json_object_get(o, "instruction_id_list");
        s->kwargs = json_object_get(o, "kwargs");
        s->prompt = str_field(o, "prompt");
        const char *missing = !s->prompt ? "prompt" : !s->ids ? "instruction_id_list" : !s->kwargs ? "kwargs" : NULL;
        if (!missing && prompts) {
            /* the response whose prompt text matches (the last one, like the official dict) */
            s->response = NULL;
            for (size_t k = 0; k < nin; k++) {
                const char *p = in[k] ? str_field(in[k], "prompt") : NULL;
                const char *resp = in[k] ? str_field(in[k], "response") : NULL;
                if (p && resp && !strcmp(p, s->prompt)) s->response = resp;
            }
            if (!s->response) {
                fprintf(stderr, "judgerl ifeval: %s:%zu: no response for this prompt in %s\n", src_path, src_line[r],
                        input);
                bad++;
                continue;
            }
        } else if (!missing) {
            s->response = str_field(o, "response");
            if (!s->response) missing = "response";
        }
        if (missing) {
            fprintf(stderr, "judgerl ifeval: %s:%zu: missing or non-string field \"%s\"\n", src_path, src_line[r],
                    missing);
            bad++;
            continue;
        }
        s->n = json_is_array(s->ids) ? json_array_size(s->ids) : 0;
        s->res[0] = calloc(s->n + 1, sizeof(bool));
        s->res[1] = calloc(s->n + 1, sizeof(bool));
        if (!s->res[0] || !s->res[1]) {
            free(s->res[0]); free(s->res[1]);
            st = jr_fail(JR_ENOMEM, "out of memory");
            goto done;
        }
        jr_status e1 = jr_ifeval_check_row(s->ids, s->kwargs, s->prompt, s->response, JR_IFEVAL_STRICT, s->res[0]);
        jr_status e2 = e1 ? e1 : jr_ifeval_check_row(s->ids, s->kwargs, s->prompt, s->response, JR_IFEVAL_LOOSE, s->res[1]);
        if (e1 || e2) {
            fprintf(stderr, "judgerl ifeval: %s:%zu: %s\n", src_path, src_line[r], jr_errmsg());
            free(s->res[0]); free(s->res[1]);
            s->res[0] = s->res[1] = NULL;
            bad++;
            continue;
        }
        nrows++;
    }
    if (!nrows) {
        st = jr_fail(JR_EFORMAT, "%s: no row could be scored (%zu malformed)", src_path, bad);
        goto done;
    }
    for (int m = 0; m < 2; m++) {
        size_t p_ok = 0, i_ok = 0, i_tot = 0;
        for (size_t r = 0; r < nrows; r++) {
            p_ok += jr_ifeval_all_pass(rows[r].res[m], rows[r].n) || rows[r].n == 0;
            for (size_t i = 0; i < rows[r].n; i++) i_ok += rows[r].res[m][i];
            i_tot += rows[r].n;
        }
        const char *tag = m ? "loose" : "strict";
        printf("%s prompt-level: %.4f (%zu/%zu)\n", tag, (double)p_ok / nrows, p_ok, nrows);
        printf("%s instruction-level: %.4f (%zu/%zu)\n", tag, i_tot ? (double)i_ok / i_tot : 0.0, i_ok, i_tot);
    }
    if (breakdown)
        for (int m = 0; m < 2; m++) print_breakdown(rows, nrows, m);
    if (outdir) {
        if ((st = jr_mkdirs(outdir))) goto done;
        if ((st = write_results(outdir, "eval_results_strict.jsonl", rows, nrows, 0))) goto done;
        if ((st = write_results(outdir, "eval_results_loose.jsonl", rows, nrows, 1))) goto done;
    }
    if (bad) fprintf(stderr, "judgerl ifeval: %zu malformed row(s) skipped, %zu scored\n", bad, nrows);
done:
    if (rows)
        for (size_t r = 0; r < nsrc; r++) { free(rows[r].res[0]); free(rows[r].res[1]); }
    free(rows);
    for (size_t i = 0; i < nin; i++) json_decref(in[i]);
    for (size_t i = 0; i < npr; i++) json_decref(pr[i]);
    free(in); free(pr); free(in_line); free(pr_line);
    return st ? cli_fail("ifeval", st) : CLI_OK;
}
