/* rows.c - JSONL (plain or gzip) reading and the loaders that turn HumanEval problems and GSM8K
 * items into judgerl rows {problem, answer, type[, entry_point, test]} */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "judgerl/eval.h"
#include "judgerl/strbuf.h"

jr_status jr_jsonl_read_all(const char *path, json_t **rows) {
    *rows = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f) return jr_fail(JR_EIO, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    jr_strbuf b = {0};
    char buf[65536];
    int r;
    while ((r = gzread(f, buf, sizeof buf)) > 0) jr_strbuf_addn(&b, buf, (size_t)r);
    int err;
    const char *zmsg = r < 0 ? gzerror(f, &err) : NULL;
    char msg[200];
    snprintf(msg, sizeof msg, "%s", zmsg ? zmsg : "");
    gzclose(f);
    char *text = jr_strbuf_take(&b);
    if (r < 0) { free(text); return jr_fail(JR_EFORMAT, "%s: %s (a truncated .gz?)", path, msg); }
    if (!text) return jr_fail(JR_ENOMEM, "%s: out of memory", path);
    json_t *arr = json_array();
    jr_status st = arr ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    long line = 0;
    for (char *p = text; !st && *p;) {
        char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        line++;
        size_t k = 0;
        while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r')) k++;
        if (k < n) {
            json_error_t je;
            json_t *row = json_loadb(p, n, 0, &je);
            if (!row || !json_is_object(row)) {
                st = jr_fail(JR_EFORMAT, "%s:%ld: %s", path, line, row ? "expected a JSON object" : je.text);
                json_decref(row);
            } else json_array_append_new(arr, row);
        }
        p += n + (e != NULL);
    }
    free(text);
    if (st) { json_decref(arr); return st; }
    *rows = arr;
    return JR_OK;
}

json_t *jr_row_from_humaneval(const json_t *p) {
    static const char *const need[] = {"task_id", "prompt", "canonical_solution", "test", "entry_point"};
    for (int i = 0; i < 5; i++)
        if (!json_is_string(json_object_get(p, need[i]))) {
            jr_fail(JR_EFORMAT, "HumanEval problem: field '%s' missing or not a string", need[i]);
            return NULL;
        }
    json_t *row = json_pack("{s:O,s:O,s:O,s:O,s:s,s:O,s:O}", "id", json_object_get(p, "task_id"), "problem",
                            json_object_get(p, "prompt"), "prompt", json_object_get(p, "prompt"), "answer", json_object_get(p, "canonical_solution"), "type",
                            "code", "entry_point", json_object_get(p, "entry_point"), "test", json_object_get(p, "test"));
    if (!row) jr_fail(JR_ENOMEM, "out of memory");
    return row;
}

json_t *jr_row_from_gsm8k(const json_t *item, const char *id) {
    const char *q = json_string_value(json_object_get(item, "question"));
    const char *a = json_string_value(json_object_get(item, "answer"));
    if (!q || !a) {
        jr_fail(JR_EFORMAT, "GSM8K item %s: fields 'question' and 'answer' must be strings", id);
        return NULL;
    }
    const char *h = strstr(a, "#### ");
    if (!h) {
        jr_fail(JR_EFORMAT, "GSM8K item %s: the answer has no '#### N' final line", id);
        return NULL;
    }
    char num[128];
    size_t k = 0;
    for (const char *p = h + 5; *p && *p != '\n' && k + 1 < sizeof num; p++)
        if (*p != ',' && *p != ' ' && *p != '\r') num[k++] = *p;
    num[k] = 0;
    if (!k) {
        jr_fail(JR_EFORMAT, "GSM8K item %s: empty final answer after '####'", id);
        return NULL;
    }
    json_t *row = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "id", id, "problem", q, "prompt", q, "answer", num, "type", "math",
                            "solution", a);
    if (!row) jr_fail(JR_ENOMEM, "out of memory");
    return row;
}

jr_status jr_rows_load(const char *format, const char *path, json_t **rows) {
    *rows = NULL;
    int he = !strcmp(format, "humaneval"), gsm = !strcmp(format, "gsm8k");
    if (!he && !gsm) return jr_fail(JR_EINVAL, "format '%s': use humaneval or gsm8k", format);
    json_t *in;
    jr_status st = jr_jsonl_read_all(path, &in);
    if (st) return st;
    /* GSM8K ids: gsm8k/<file stem>/<index> */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char stem[128];
    snprintf(stem, sizeof stem, "%.*s", (int)strcspn(base, "."), base);
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(in, i, item) {
        char id[200];
        snprintf(id, sizeof id, "gsm8k/%s/%zu", stem, i);
        json_t *row = he ? jr_row_from_humaneval(item) : jr_row_from_gsm8k(item, id);
        if (!row) { st = jr_fail_ctx(JR_EFORMAT, "%s: row %zu", path, i + 1); break; }
        json_array_append_new(out, row);
    }
    json_decref(in);
    if (st) { json_decref(out); return st; }
    *rows = out;
    return JR_OK;
}
