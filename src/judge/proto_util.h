/* proto_util.h - small helpers private to the protocols in src/judge/ (templates, messages, text) */
#ifndef JUDGERL_PROTO_UTIL_H
#define JUDGERL_PROTO_UTIL_H

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "judgerl/protocols.h"

/* Loads the template file `path` (the option `key`, named in messages), or the shipped `def`
 * when path is NULL. */
static inline jr_status proto_template(const char *path, const char *cfg_dir, const char *key, const char *def,
                                       char **out) {
    jr_status st = jr_template_load(path ? path : def, cfg_dir, out);
    if (st) return jr_fail_ctx(st, "%s", key);
    return JR_OK;
}

/* A copy of a non-empty string option, else NULL (*oom set when the copy failed). */
static inline char *proto_opt_str(const char *s, int *oom) {
    if (!s || !*s) return NULL;
    char *r = jr_strdup(s);
    if (!r) *oom = 1;
    return r;
}

/* [{"role":"system",...}?, {"role":"user","content":user}] (NULL on ENOMEM). */
static inline json_t *proto_messages(const char *system, const char *user) {
    json_t *m = json_array();
    if (!m) return NULL;
    if (system && *system) json_array_append_new(m, json_pack("{s:s,s:s}", "role", "system", "content", system));
    json_array_append_new(m, json_pack("{s:s,s:s}", "role", "user", "content", user));
    if (json_array_size(m) != (system && *system ? 2u : 1u)) { json_decref(m); return NULL; }
    return m;
}

/* Renders tmpl with `view` and appends the call. Consumes params (may be NULL). */
static inline jr_status proto_add(jr_judge_calls *calls, const char *tmpl, const char *system, json_t *view,
                                  json_t *params, const char *tag) {
    char *text = NULL;
    jr_status st = jr_template_render(tmpl, view, &text);
    if (st) { json_decref(params); return st; }
    json_t *msgs = proto_messages(system, text);
    free(text);
    if (!msgs) { json_decref(params); return jr_fail(JR_ENOMEM, "out of memory"); }
    return jr_judge_calls_add(calls, msgs, params, tag, NULL);
}

/* Case-insensitive ASCII prefix test. */
static inline int proto_prefix_ci(const char *s, const char *p) {
    for (; *p; s++, p++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*p)) return 0;
    return 1;
}

/* An UNSCORED outcome with a formatted reason. */
#define PROTO_UNSCORED(out, ...) do { char proto_buf_[1200]; snprintf(proto_buf_, sizeof proto_buf_, __VA_ARGS__); \
    (out)->reason = jr_strdup(proto_buf_); } while (0)

#endif
