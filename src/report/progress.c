/* progress.c - progress bar: a redrawn line on a terminal, occasional plain lines in logs */
#include "judgerl/clock.h"
#include "judgerl/progress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FIELDS 8
#define TTY_EVERY 0.1     /* seconds between redraws */
#define PLAIN_EVERY 30.0  /* seconds between plain lines at the latest */
#define PLAIN_PCT 10      /* a plain line each time this many more percent are done */

struct jr_progress {
    char label[64];
    int64_t total, done;
    FILE *out;
    jr_progress_mode mode;
    double start, last_draw;
    int last_bucket;      /* PLAIN: last percent bucket printed */
    int drawn;            /* TTY: a line is on screen */
    int n_fields;
    char key[MAX_FIELDS][24];
    char val[MAX_FIELDS][48];
};

jr_progress *jr_progress_new(const char *label, int64_t total, FILE *out, jr_progress_mode mode) {
    jr_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->total = total > 0 ? total : 0;
    p->out = out ? out : stderr;
    if (mode == JR_PROGRESS_AUTO) {
        const char *e = getenv("JR_PROGRESS");
        if (e && !strcmp(e, "tty")) mode = JR_PROGRESS_TTY;
        else if (e && !strcmp(e, "plain")) mode = JR_PROGRESS_PLAIN;
        else if (e && !strcmp(e, "off")) mode = JR_PROGRESS_OFF;
        else mode = isatty(fileno(p->out)) ? JR_PROGRESS_TTY : JR_PROGRESS_PLAIN;
    }
    p->mode = mode;
    p->start = p->last_draw = jr_now_s();
    return p;
}

static void fmt_dur(char *buf, size_t cap, double s) {
    if (!(s >= 0) || s > 99 * 3600.0) { snprintf(buf, cap, "--:--"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

char *jr_progress_format(const jr_progress *p, double now, char *buf, size_t cap) {
    double el = now - p->start;
    double rate = el > 0 ? (double)p->done / el : 0;
    char el_s[24], eta_s[24], rate_s[32];
    fmt_dur(el_s, sizeof el_s, el);
    if (rate >= 100) snprintf(rate_s, sizeof rate_s, "%.0f/s", rate);
    else if (rate >= 1) snprintf(rate_s, sizeof rate_s, "%.1f/s", rate);
    else if (rate > 0) snprintf(rate_s, sizeof rate_s, "%.1fs each", 1 / rate);
    else snprintf(rate_s, sizeof rate_s, "-/s");
    size_t n;
    if (p->total > 0) {
        double left = p->total > p->done && rate > 0 ? (double)(p->total - p->done) / rate : (p->done >= p->total ? 0 : -1);
        fmt_dur(eta_s, sizeof eta_s, left);
        int pct = (int)(100.0 * (double)p->done / (double)p->total);
        n = (size_t)snprintf(buf, cap, "%s %lld/%lld %3d%% %s elapsed %s eta %s", p->label, (long long)p->done,
                             (long long)p->total, pct, rate_s, el_s, eta_s);
    } else {
        n = (size_t)snprintf(buf, cap, "%s %lld %s elapsed %s", p->label, (long long)p->done, rate_s, el_s);
    }
    for (int i = 0; i < p->n_fields && n < cap; i++)
        if (p->val[i][0]) n += (size_t)snprintf(buf + n, cap - n, " %s=%s", p->key[i], p->val[i]);
    return buf;
}

static void draw(jr_progress *p, double now, int final) {
    char line[512];
    jr_progress_format(p, now, line, sizeof line);
    if (p->mode == JR_PROGRESS_TTY) {
        fprintf(p->out, "\r%s\033[K%s", line, final ? "\n" : "");
        p->drawn = !final;
    } else {
        fprintf(p->out, "%s%s\n", line, final ? " (done)" : "");
    }
    fflush(p->out);
    p->last_draw = now;
}

void jr_progress_set_at(jr_progress *p, int64_t done, double now) {
    if (!p) return;
    p->done = done;
    if (p->mode == JR_PROGRESS_OFF) return;
    if (p->mode == JR_PROGRESS_TTY) {
        if (now - p->last_draw >= TTY_EVERY || (p->total > 0 && done >= p->total) || !p->drawn) draw(p, now, 0);
        return;
    }
    int bucket = p->total > 0 ? (int)(100.0 * (double)done / (double)p->total) / PLAIN_PCT : 0;
    if (p->total > 0 && bucket > p->last_bucket) {
        p->last_bucket = bucket;
        draw(p, now, 0);
    } else if (now - p->last_draw >= PLAIN_EVERY) {
        draw(p, now, 0);
    }
}

void jr_progress_set(jr_progress *p, int64_t done) {
    if (p) jr_progress_set_at(p, done, jr_now_s());
}

void jr_progress_add(jr_progress *p, int64_t n) {
    if (p) jr_progress_set_at(p, p->done + n, jr_now_s());
}

void jr_progress_field(jr_progress *p, const char *key, const char *fmt, ...) {
    if (!p || !key) return;
    int i = 0;
    while (i < p->n_fields && strcmp(p->key[i], key)) i++;
    if (i == p->n_fields) {
        if (p->n_fields == MAX_FIELDS) return;
        snprintf(p->key[i], sizeof p->key[i], "%s", key);
        p->n_fields++;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->val[i], sizeof p->val[i], fmt, ap);
    va_end(ap);
}

void jr_progress_finish(jr_progress *p) {
    if (!p) return;
    if (p->mode != JR_PROGRESS_OFF) draw(p, jr_now_s(), 1);
    free(p);
}
