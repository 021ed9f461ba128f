/* grade_io.c - jr_grade_file's files: the input row by row (jr_jsonl reader), the ids an earlier run
 * finished, the output appended through jr_jsonl_writer and put back in the input's order at the end */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"
#include "reward/grade_internal.h"

int jr_grade_id_text(const json_t *v, char *out, size_t n) {
    if (json_is_string(v)) { snprintf(out, n, "%s", json_string_value(v)); return 1; }
    if (json_is_integer(v)) { snprintf(out, n, "%lld", (long long)json_integer_value(v)); return 1; }
    return 0;
}

int jr_grade_unreliable(const json_t *detail) {
    const char *r = json_string_value(json_object_get(detail, "reason"));
    return r && !strcmp(r, "logprobs_unreliable");
}

void jr_grade_log_unscored(const jr_grade_opts *o, const char *id, const char *why) {
    if (!o->log) return;
    if (o->progress) fputc('\n', o->progress);
    fprintf(o->log, "%s: unscored id=%s: %s\n", o->log_prefix, id, why ? why : "?");
}

const char *jr_grade_stop_config(char *buf, size_t n, const char *why) {
    snprintf(buf, n, "configuration error: %.1200s (check judge.endpoints, judge.api_key_env and the judge's context); "
             "no row was written for it", why);
    return buf;
}

const char *jr_grade_stop_unscored(char *buf, size_t n, double max_frac, long n_unscored, long total, const char *reasons) {
    snprintf(buf, n, "judge.max_unscored_frac=%g exceeded: %ld of %ld rows unscored (%.1500s)", max_frac, n_unscored, total,
             reasons ? reasons : "unscored in an earlier run: see their error fields");
    return buf;
}

/* Lines in path (a last line without a newline counts). */
static jr_status count_lines(const char *path, long *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return jr_fail(JR_EIO, "%s: cannot open: %s", path, strerror(errno));
    char buf[1 << 16];
    size_t got, last = 0;
    int last_nl = 1;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < got; i++) *n += buf[i] == '\n';
        last = got;
        last_nl = buf[got - 1] == '\n';
    }
    if (last && !last_nl) (*n)++;
    fclose(f);
    return JR_OK;
}

/* Reads the rows of an existing output (its torn last line already cut): records finished ids;
 * unscored rows are counted, or with retry_unscored dropped from the file (rewritten atomically). */
static jr_status read_done(jr_grade_io *g) {
    jr_jsonl_reader *r;
    jr_status st = jr_jsonl_open(&r, g->out_path, JR_BAD_LINE_FAIL, NULL, NULL);
    if (st) return st;
    jr_jsonl_set_allow_nul(r, 1);
    jr_strbuf kept = {0};
    int dropped = 0;
    for (;;) {
        json_t *o;
        char id[1024];
        st = jr_jsonl_next(r, &o, NULL, NULL);
        if (st == JR_EFORMAT || (o && !jr_grade_id_text(json_object_get(o, "id"), id, sizeof id))) {
            json_decref(o);
            st = jr_fail(JR_EFORMAT, "%s: line %lld is not an output row (JSON with an id): move the file aside or fix it",
                         g->out_path, (long long)jr_jsonl_lines(r));
        }
        if (st || !o) break;
        int unscored = !json_is_number(json_object_get(o, "reward"));
        if (unscored && g->o->retry_unscored) dropped = 1;
        else {
            g->n_prev_unscored += unscored;
            json_object_set_new(g->done, id, json_true());
            jr_strbuf_addn(&kept, jr_jsonl_last_text(r), (size_t)jr_jsonl_last_len(r));
            jr_strbuf_addc(&kept, '\n');
        }
        json_decref(o);
    }
    jr_jsonl_close(r);
    size_t n = kept.n;
    char *text = jr_strbuf_take(&kept);
    if (!st && !text) st = jr_fail(JR_ENOMEM, "%s: out of memory", g->out_path);
    if (!st && dropped) st = jr_write_atomic(g->out_path, text, n);
    free(text);
    return st;
}

jr_status jr_grade_io_open(jr_grade_io *g, const jr_grade_opts *o, const char *in_path, const char *out_path) {
    *g = (jr_grade_io){.o = o, .in_path = in_path, .out_path = out_path, .done = json_object(), .seen = json_object()};
    if (!g->done || !g->seen) return jr_fail(JR_ENOMEM, "out of memory");
    jr_status st = jr_jsonl_open(&g->in, in_path, JR_BAD_LINE_FAIL, NULL, NULL);
    if (st) return st;
    jr_jsonl_set_allow_nul(g->in, 1); /* a byte-level model's response may hold "\u0000" */
    if ((st = count_lines(in_path, &g->total))) return st;
    if (!jr_path_exists(out_path)) return JR_OK;
    jr_jsonl_writer *w;
    if ((st = jr_jsonl_writer_open(&w, out_path, 0))) return st; /* cuts a torn last line */
    g->n_dropped = jr_jsonl_writer_torn_bytes(w) > 0;
    if ((st = jr_jsonl_writer_close(w))) return st;
    return read_done(g);
}

jr_status jr_grade_io_open_output(jr_grade_io *g) { return jr_jsonl_writer_open(&g->out, g->out_path, 0); }

/* The reader's message without its "PATH:LINE: " start. */
static const char *reader_why(const jr_grade_io *g) {
    const char *m = jr_errmsg();
    size_t pl = strlen(g->in_path);
    if (!strncmp(m, g->in_path, pl) && m[pl] == ':') {
        const char *c = strstr(m + pl + 1, ": ");
        if (c) return c + 2;
    }
    return m;
}

int jr_grade_io_next(jr_grade_io *g, json_t **row, int *skipped_done) {
    *row = NULL;
    *skipped_done = 0;
    json_t *r;
    int64_t ln = 0;
    jr_status st = jr_jsonl_next(g->in, &r, &ln, NULL);
    if (st) {
        g->lineno = (long)jr_jsonl_lines(g->in);
        if (st == JR_EFORMAT) {
            char why[1024];
            snprintf(why, sizeof why, "%s", reader_why(g));
            jr_fail(JR_EFORMAT, "%s: line %ld: not a JSON object (%s)", g->in_path, g->lineno, why);
        }
        return -1;
    }
    if (!r) { g->eof = 1; return 0; }
    g->lineno = (long)ln;
    char id[1024];
    if (!jr_grade_id_text(json_object_get(r, "id"), id, sizeof id)) {
        json_decref(r);
        jr_fail(JR_EINVAL, "%s: line %ld: field 'id': expected a string or an integer", g->in_path, g->lineno);
        return -1;
    }
    if (json_object_get(g->seen, id)) {
        json_decref(r);
        jr_fail(JR_EINVAL, "%s: line %ld: duplicate id '%s' (ids must be unique)", g->in_path, g->lineno, id);
        return -1;
    }
    json_object_set_new(g->seen, id, json_true());
    if (json_object_get(g->done, id)) { json_decref(r); *skipped_done = 1; return 0; }
    *row = r;
    return 1;
}

jr_status jr_grade_io_append(jr_grade_io *g, const char *line) {
    return jr_jsonl_writer_append_line(g->out, line, strlen(line));
}

/* The id text of a JSONL line (0 when it has none). */
static int line_id(const char *line, size_t len, char *id, size_t n) {
    json_t *o = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
    int got = json_is_object(o) && jr_grade_id_text(json_object_get(o, "id"), id, n);
    json_decref(o);
    return got;
}

/* Start and length of each line of text (n_lines of them). */
static jr_status split_lines(const char *text, size_t len, size_t **starts, size_t **lens, size_t *n_lines) {
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        const char *nl = memchr(text + i, '\n', len - i);
        i = nl ? (size_t)(nl - text) + 1 : len;
    }
    *starts = calloc(n + 1, sizeof **starts);
    *lens = calloc(n + 1, sizeof **lens);
    if (!*starts || !*lens) return jr_fail(JR_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < len; k++) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        (*starts)[k] = i;
        (*lens)[k] = e - i;
        i = e + 1;
    }
    *n_lines = n;
    return JR_OK;
}

/* Rewrites out_path atomically with its rows in in_path's order, then rows of ids no longer in the
 * input as they were (nothing is written when the order is already right). */
static jr_status input_order(const char *in_path, const char *out_path) {
    char *in = NULL, *out = NULL;
    size_t in_len, out_len, n_lines = 0, *starts = NULL, *lens = NULL;
    jr_strbuf buf = {0};
    jr_status st = jr_read_file(in_path, &in, &in_len);
    if (!st) st = jr_read_file(out_path, &out, &out_len);
    if (!st) st = split_lines(out, out_len, &starts, &lens, &n_lines);
    json_t *where = json_object(); /* id text -> index of its output line */
    char *used = calloc(n_lines + 1, 1);
    if (!st && (!where || !used)) st = jr_fail(JR_ENOMEM, "out of memory");
    char id[1024];
    for (size_t k = 0; !st && k < n_lines; k++)
        if (line_id(out + starts[k], lens[k], id, sizeof id) && !json_object_get(where, id))
            json_object_set_new(where, id, json_integer((json_int_t)k));
    for (size_t i = 0; !st && i < in_len;) { /* the input's order first */
        const char *nl = memchr(in + i, '\n', in_len - i);
        size_t e = nl ? (size_t)(nl - in) : in_len;
        json_t *at = line_id(in + i, e - i, id, sizeof id) ? json_object_get(where, id) : NULL;
        if (at && !used[json_integer_value(at)]) {
            size_t j = (size_t)json_integer_value(at);
            used[j] = 1;
            jr_strbuf_addn(&buf, out + starts[j], lens[j]);
            jr_strbuf_addc(&buf, '\n');
        }
        i = e + 1;
    }
    for (size_t j = 0; !st && j < n_lines; j++) /* then rows of ids no longer in the input, as they were */
        if (!used[j] && lens[j]) {
            jr_strbuf_addn(&buf, out + starts[j], lens[j]);
            jr_strbuf_addc(&buf, '\n');
        }
    if (!st && buf.oom) st = jr_fail(JR_ENOMEM, "out of memory");
    if (!st && (buf.n != out_len || (buf.n && memcmp(buf.p, out, buf.n)))) st = jr_write_atomic(out_path, buf.p, buf.n);
    jr_strbuf_free(&buf);
    json_decref(where);
    free(in); free(out); free(starts); free(lens); free(used);
    return st;
}

jr_status jr_grade_io_finish(jr_grade_io *g) {
    jr_status st = jr_jsonl_writer_close(g->out);
    g->out = NULL;
    return st ? st : input_order(g->in_path, g->out_path);
}

void jr_grade_io_close(jr_grade_io *g) {
    jr_jsonl_close(g->in);
    jr_jsonl_writer_close(g->out);
    json_decref(g->done);
    json_decref(g->seen);
    *g = (jr_grade_io){0};
}
