/* probe_internal.h - what the probe engine's files share: the response rewrites */
#ifndef JUDGERL_PROBE_INTERNAL_H
#define JUDGERL_PROBE_INTERNAL_H

/* The master keys, NULL-terminated (docs/PROBES.md). */
extern const char *const jr_probe_master_keys[];
/* The paddings' names, index = kind of jr_probe_pad. */
extern const char *const jr_probe_paddings[3];

/* New malloc'ed strings (NULL when memory ran out). */
char *jr_probe_pad(const char *resp, int kind); /* 0 repeated content, 1 filler sentences, 2 restated list */
char *jr_probe_inject(const char *resp);
char *jr_probe_plain(const char *resp);
char *jr_probe_markdown(const char *resp);

#endif
