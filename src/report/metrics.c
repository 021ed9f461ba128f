/* metrics.c - metrics.jsonl: one JSON object per step, appended and flushed; resumable without duplicates */
#include "judgerl/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"

struct jr_metrics {
    jr_jsonl_writer *w;
};

double jr_wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rewrites path keeping only complete lines whose "step" is <= resume_step (lines without a
 * readable step are kept). Leaves the file untouched when nothing is dropped. */
jr_status jr_jsonl_cut_after(const char *path, int64_t resume_step) {
    if (!jr_path_exists(path)) return JR_OK;
    char *text;
    size_t len;
    jr_status st = jr_read_file(path, &text, &len);
    if (st) return st;
    char *keep = jr_malloc(len + 1);
    if (!keep) { free(text); return JR_ENOMEM; }
    size_t kn = 0, dropped = 0;
    for (size_t i = 0; i < len;) {
        char *nl = memchr(text + i, '\n', len - i);
        if (!nl) { dropped++; break; } /* torn last line */
        size_t n = (size_t)(nl - (text + i));
        json_t *v = json_loadb(text + i, n, 0, NULL);
        json_t *s = v ? json_object_get(v, "step") : NULL;
        if (s && json_is_integer(s) && json_integer_value(s) > resume_step) dropped++;
        else { memcpy(keep + kn, text + i, n + 1); kn += n + 1; }
        json_decref(v);
        i += n + 1;
    }
    free(text);
    if (dropped) st = jr_write_atomic(path, keep, kn);
    free(keep);
    return st;
}

jr_status jr_metrics_open(jr_metrics **m, const char *path, int64_t resume_step) {
    *m = NULL;
    jr_status st = resume_step >= 0 ? jr_jsonl_cut_after(path, resume_step) : JR_OK;
    if (st) return st;
    jr_metrics *x = jr_calloc(1, sizeof *x);
    if (!x) return JR_ENOMEM;
    st = jr_jsonl_writer_open(&x->w, path, 0);
    if (st) { free(x); return st; }
    *m = x;
    return JR_OK;
}

/* Appends a number as JSON: shortest of %.15g / %.17g that reads back exactly; null when not finite. */
static int put_num(char *out, size_t cap, double v) {
    if (!isfinite(v)) return snprintf(out, cap, "null");
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.15g", v);
    if (strtod(tmp, NULL) != v) snprintf(tmp, sizeof tmp, "%.17g", v);
    if (!strpbrk(tmp, ".eEn")) strcat(tmp, ".0"); /* keep it a real for typed readers */
    return snprintf(out, cap, "%s", tmp);
}

jr_status jr_metrics_log(jr_metrics *m, int64_t step, size_t n, const char *const *names, const double *values) {
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !*names[i] || !strcmp(names[i], "step") || !strcmp(names[i], "wall_time"))
            return jr_fail(JR_EINVAL, "%s: metric name '%s' is reserved or empty", jr_metrics_path(m),
                           names[i] ? names[i] : "(null)");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return jr_fail(JR_EINVAL, "%s: metric '%s' given twice for step %lld", jr_metrics_path(m), names[i],
                               (long long)step);
    }
    size_t cap = 64, len = 0;
    for (size_t i = 0; i < n; i++) cap += strlen(names[i]) * 6 + 48;
    char *line = jr_malloc(cap);
    if (!line) return JR_ENOMEM;
    len += (size_t)snprintf(line, cap, "{\"step\":%lld,\"wall_time\":", (long long)step);
    len += (size_t)put_num(line + len, cap - len, jr_wall_time());
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_string(names[i]);
        char *q = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        json_decref(s);
        if (!q) { free(line); return jr_fail(JR_EINVAL, "%s: metric name is not valid UTF-8", jr_metrics_path(m)); }
        len += (size_t)snprintf(line + len, cap - len, ",%s:", q);
        free(q);
        len += (size_t)put_num(line + len, cap - len, values[i]);
    }
    len += (size_t)snprintf(line + len, cap - len, "}");
    jr_status st = jr_jsonl_writer_append_line(m->w, line, len);
    free(line);
    return st;
}

const char *jr_metrics_path(const jr_metrics *m) { return jr_jsonl_writer_path(m->w); }

jr_status jr_metrics_close(jr_metrics *m) {
    if (!m) return JR_OK;
    jr_status st = jr_jsonl_writer_close(m->w);
    free(m);
    return st;
}
