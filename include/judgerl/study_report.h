/* study_report.h - the HTML page of `judgerl study`: the judges side by side (proxy vs gold, divergence,
 * drift, alarms, probes), inline CSS and SVG, no external URL */
#ifndef JUDGERL_STUDY_REPORT_H
#define JUDGERL_STUDY_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "judgerl/status.h"

/* Writes the page of a study.json object (jr_study_collect) to path atomically; on error nothing is
 * written. */
jr_status jr_study_html_write(const char *path, const json_t *study);

/* Prints a study.json object as a table: per judge, proxy and gold rewards start -> end, the final
 * divergence, the mean length start -> end and each alarm with the first step it fired. */
void jr_study_table(FILE *out, const json_t *study);

#endif
