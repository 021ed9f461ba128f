/* study_report.h - the HTML page of `judgerl study`: the judges side by side (proxy vs gold, divergence,
 * drift, alarms, probes), inline CSS and SVG, no external URL */
#ifndef JUDGERL_STUDY_REPORT_H
#define JUDGERL_STUDY_REPORT_H

#include <jansson.h>

#include "judgerl/status.h"

/* Writes the page of a study.json object (jr_study_collect) to path atomically; on error nothing is
 * written. */
jr_status jr_study_html_write(const char *path, const json_t *study);

#endif
