/* template.c - judge prompt templates ({{field}} and sections), reasoning stripping, [RESULT] parsing */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "judgerl/strbuf.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"


/* 1 when the field is present, non-null and not "". */
static int truthy(const json_t *v) {
    if (!v || json_is_null(v) || json_is_false(v)) return 0;
    if (json_is_string(v) && json_string_length(v) == 0) return 0;
    if (json_is_array(v) && json_array_size(v) == 0) return 0;
    return 1;
}

static void add_value(jr_strbuf *b, const json_t *v) {
    if (!v || json_is_null(v)) return;
    if (json_is_string(v)) { jr_strbuf_addn(b, json_string_value(v), json_string_length(v)); return; }
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!t) { b->oom = 1; return; }
    jr_strbuf_addn(b, t, strlen(t));
    free(t);
}

/* Renders tmpl[0..len) into b. */
static jr_status render(const char *t, size_t len, const json_t *row, jr_strbuf *b) {
    size_t i = 0;
    while (i < len) {
        const char *open = NULL;
        for (size_t k = i; k + 1 < len; k++) if (t[k] == '{' && t[k + 1] == '{') { open = t + k; break; }
        if (!open) { jr_strbuf_addn(b, t + i, len - i); break; }
        jr_strbuf_addn(b, t + i, (size_t)(open - (t + i)));
        const char *close = NULL, *end = t + len;
        for (const char *q = open + 2; q + 1 < end; q++) if (q[0] == '}' && q[1] == '}') { close = q; break; }
        if (!close) return jr_fail(JR_EFORMAT, "template: unclosed '{{' at offset %zu", (size_t)(open - t));
        const char *nm = open + 2, *ne = close;
        char kind = 0;
        if (nm < ne && (*nm == '#' || *nm == '^' || *nm == '/')) kind = *nm++;
        while (nm < ne && isspace((unsigned char)*nm)) nm++;
        while (ne > nm && isspace((unsigned char)ne[-1])) ne--;
        char name[128];
        size_t nl = (size_t)(ne - nm);
        if (nl == 0 || nl >= sizeof name) return jr_fail(JR_EFORMAT, "template: bad tag at offset %zu", (size_t)(open - t));
        memcpy(name, nm, nl);
        name[nl] = 0;
        const json_t *v = json_object_get(row, name);
        size_t after = (size_t)(close + 2 - t);
        if (!kind) { add_value(b, v); i = after; continue; }
        if (kind == '/') return jr_fail(JR_EFORMAT, "template: '{{/%s}}' without an opening tag", name);
        char endtag[160];
        snprintf(endtag, sizeof endtag, "{{/%s}}", name);
        const char *body_end = NULL;
        size_t el = strlen(endtag);
        for (size_t k = after; k + el <= len; k++) if (!memcmp(t + k, endtag, el)) { body_end = t + k; break; }
        if (!body_end) return jr_fail(JR_EFORMAT, "template: section '{{%c%s}}' is not closed by '%s'", kind, name, endtag);
        int show = kind == '#' ? truthy(v) : !truthy(v);
        if (show) {
            jr_status st = render(t + after, (size_t)(body_end - (t + after)), row, b);
            if (st) return st;
        }
        i = (size_t)(body_end - t) + el;
    }
    return JR_OK;
}

jr_status jr_template_render(const char *tmpl, const json_t *row, char **out) {
    *out = NULL;
    jr_strbuf b = {0};
    jr_strbuf_addn(&b, "", 0);
    jr_status st = render(tmpl, strlen(tmpl), row, &b);
    if (!st && b.oom) st = jr_fail(JR_ENOMEM, "template: out of memory");
    if (st) { free(b.p); return st; }
    *out = b.p;
    return JR_OK;
}

jr_status jr_template_load(const char *path, const char *cfg_dir, char **out) {
    *out = NULL;
    if (!path || !*path) return jr_fail(JR_EINVAL, "judge.template: empty path");
    if (path[0] == '/' || jr_path_exists(path)) return jr_read_file(path, out, NULL);
    if (cfg_dir) {
        char *p = jr_path_join(cfg_dir, path);
        if (!p) return JR_ENOMEM;
        if (jr_path_exists(p)) { jr_status st = jr_read_file(p, out, NULL); free(p); return st; }
        free(p);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        /* installed: PREFIX/bin/judgerl -> PREFIX/share/judgerl; a build: build/rel/judgerl -> the repository */
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash) break;
            *slash = 0;
            char share[PATH_MAX + 16];
            snprintf(share, sizeof share, "%s/share/judgerl", exe);
            char *p = jr_path_join(up == 1 ? share : exe, path);
            if (!p) return JR_ENOMEM;
            if ((up == 1 || up == 2) && jr_path_exists(p)) { jr_status st = jr_read_file(p, out, NULL); free(p); return st; }
            free(p);
        }
    }
    return jr_fail(JR_ENOTFOUND, "judge.template: %s: not found (relative paths are tried from the current directory%s, PREFIX/share/judgerl and the judgerl repository)",
                   path, cfg_dir ? ", the config's directory" : "");
}

char *jr_judge_strip_reasoning(const char *text) {
    if (!text) text = "";
    const char *start = text;
    const char *first_open = strstr(text, "<think>"), *first_close = strstr(text, "</think>");
    if (first_close && (!first_open || first_close < first_open)) start = first_close + 8;
    jr_strbuf b = {0};
    jr_strbuf_addn(&b, "", 0);
    const char *p = start;
    for (;;) {
        const char *o = strstr(p, "<think>");
        if (!o) { jr_strbuf_addn(&b, p, strlen(p)); break; }
        jr_strbuf_addn(&b, p, (size_t)(o - p));
        const char *c = strstr(o + 7, "</think>");
        if (!c) break; /* unclosed: the rest is reasoning */
        p = c + 8;
    }
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}

int jr_judge_parse_result(const char *text, int lo, int hi, int *n, char *why, size_t why_len) {
    const char *last = NULL;
    for (const char *p = text; p && *p; p++)
        if (*p == '[' && !strncasecmp(p, "[RESULT]", 8)) last = p;
    if (!last) { snprintf(why, why_len, "no [RESULT] marker in the judge's answer"); return 0; }
    const char *q = last + 8;
    while (*q && (isspace((unsigned char)*q) || strchr(":*`_=([\"'", *q))) q++;
    if (*q == '-' || *q == '+') {
        if (!isdigit((unsigned char)q[1])) { snprintf(why, why_len, "no number after [RESULT]"); return 0; }
        if (*q == '-') { snprintf(why, why_len, "[RESULT] -...: negative score, expected %d..%d", lo, hi); return 0; }
        q++;
    }
    if (!isdigit((unsigned char)*q)) { snprintf(why, why_len, "no number after [RESULT]"); return 0; }
    long v = 0;
    int digits = 0;
    while (isdigit((unsigned char)*q)) { if (v < 100000000) v = v * 10 + (*q - '0'); q++; digits++; }
    if (*q == '.' && isdigit((unsigned char)q[1])) {
        snprintf(why, why_len, "[RESULT] %ld.%c...: not an integer score (expected %d..%d)", v, q[1], lo, hi);
        return 0;
    }
    if (v < lo || v > hi) { snprintf(why, why_len, "[RESULT] %ld is out of range %d..%d", v, lo, hi); return 0; }
    (void)digits;
    *n = (int)v;
    return 1;
}
