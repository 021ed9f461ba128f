/* jinja.h - a Jinja2 subset interpreter for chat templates (trim_blocks + lstrip_blocks, as HF renders them) */
#ifndef JUDGERL_JINJA_H
#define JUDGERL_JINJA_H

#include <stddef.h>
#include <jansson.h>

#include "judgerl/status.h"

struct jinja_tpl;

/* Parses a template; `name` is used in messages. Constructs outside the supported subset are an
 * error naming the construct and the line. On failure *out is NULL. */
jr_status jinja_parse(const char *src, const char *name, struct jinja_tpl **out);

/* Renders with the variables of `ctx` (a JSON object; borrowed). *out is owned by the caller. */
jr_status jinja_render(const struct jinja_tpl *t, json_t *ctx, char **out, size_t *len);

void jinja_free(struct jinja_tpl *t);

#endif
