/* html.c - what every HTML page of report.h is made of: XML escaping into a jr_strbuf, the
 * palette (colour i is series i), inline SVG line and bar charts, and the pages' shared CSS */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/report.h"

/* ---- HTML text ---- */

double jr_report_num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void jr_html_escape(jr_strbuf *b, const char *t) {
    for (; t && *t; t++) {
        switch (*t) {
        case '<': jr_strbuf_addf(b, "&lt;"); break;
        case '>': jr_strbuf_addf(b, "&gt;"); break;
        case '&': jr_strbuf_addf(b, "&amp;"); break;
        case '"': jr_strbuf_addf(b, "&quot;"); break;
        case '\'': jr_strbuf_addf(b, "&#39;"); break;
        default:
            if ((unsigned char)*t >= 0x20 || *t == '\n' || *t == '\t') jr_strbuf_addc(b, *t);
        }
    }
}

/* ---- charts ---- */

/* One colour meaning throughout: colour i is the identity of series i (a run in `compare`, a judge in
 * the demo), the same in every chart and table of a page; "before" is always grey (JR_BEFORE_COLOR)
 * beside the entity's colour for "after"; a faint line is the raw curve under its smoothed one. */
static const char *const COLORS[] = {"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"};
#define NCOLORS 6
const char *jr_report_color(int i) { return COLORS[(i < 0 ? 0 : i) % NCOLORS]; }
enum { W = 560, H = 260, ML = 58, MR = 16, MT = 30, MB = 46 };

/* A "nice" tick step for a range split into about n parts. */
static double nice_step(double range, int n) {
    if (!(range > 0)) return 1;
    double raw = range / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

static void fmt_num(char *out, size_t cap, double v) {
    if (fabs(v) < 1e-12) v = 0;
    if (v != 0 && (fabs(v) >= 1e5 || fabs(v) < 1e-3)) snprintf(out, cap, "%.1e", v);
    else snprintf(out, cap, "%.4g", v);
}

static void svg_open(jr_strbuf *b, const char *title) {
    jr_strbuf_addf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\n<title>", W, H, W, H);
    jr_html_escape(b, title);
    jr_strbuf_addf(b, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n"
                     "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"bold\" fill=\"#111\">", W, H, ML);
    jr_html_escape(b, title);
    jr_strbuf_addf(b, "</text>\n");
}

/* Y axis with ticks over [lo, hi], grid lines, and the label; returns the y pixel of a value. */
static double ypix(double v, double lo, double hi) { return MT + (H - MT - MB) * (1 - (v - lo) / (hi - lo)); }

static void y_axis(jr_strbuf *b, double lo, double hi, const char *ylabel) {
    double st = nice_step(hi - lo, 5);
    for (double t = ceil(lo / st) * st; t <= hi + st * 1e-9; t += st) {
        double y = ypix(t, lo, hi);
        char s[32];
        fmt_num(s, sizeof s, t);
        jr_strbuf_addf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>\n"
                         "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#374151\">%s</text>\n",
                      ML, y, W - MR, y, ML - 6, y + 4, s);
    }
    jr_strbuf_addf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#6b7280\"/>\n", ML, MT, ML, H - MB);
    jr_strbuf_addf(b, "<text transform=\"translate(14 %d) rotate(-90)\" text-anchor=\"middle\" fill=\"#374151\">",
                  (MT + H - MB) / 2);
    jr_html_escape(b, ylabel);
    jr_strbuf_addf(b, "</text>\n");
}

static void legend(jr_strbuf *b, const char *const *names, const char *const *colors, int n) {
    int x = ML;
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue; /* an unnamed series (a raw curve under its smoothed one) */
        jr_strbuf_addf(b, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>\n"
                         "<text x=\"%d\" y=\"%d\" fill=\"#111\">", x, H - 16, colors[i], x + 14, H - 7);
        jr_html_escape(b, names[i] ? names[i] : "");
        jr_strbuf_addf(b, "</text>\n");
        x += 24 + 7 * (int)strlen(names[i] ? names[i] : "");
    }
}

void jr_svg_lines(jr_strbuf *b, const char *title, const char *xlabel, const char *ylabel, const jr_series *s, int ns) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < s[i].n; j++) {
            if (!isfinite(s[i].y[j]) || !isfinite(s[i].x[j])) continue;
            x0 = fmin(x0, s[i].x[j]); x1 = fmax(x1, s[i].x[j]);
            y0 = fmin(y0, s[i].y[j]); y1 = fmax(y1, s[i].y[j]);
        }
    svg_open(b, title);
    if (!isfinite(x0)) {
        jr_strbuf_addf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#6b7280\">no data</text>\n</svg>\n", W / 2, H / 2);
        return;
    }
    int nonneg = y0 >= 0;
    if (y1 - y0 < 1e-9) {
        if (nonneg && y0 < 1e-9) y1 = 1; /* all zero (e.g. no unscored samples): show [0, 1] */
        else { y0 -= 0.5; y1 += 0.5; }
    }
    double pad = (y1 - y0) * 0.05;
    y0 -= pad; y1 += pad;
    if (nonneg && y0 < 0) y0 = 0; /* shares and losses never go below zero */
    if (x1 <= x0) { x0 -= 1; x1 += 1; }
    y_axis(b, y0, y1, ylabel);
    double xs = nice_step(x1 - x0, 6);
    for (double t = ceil(x0 / xs) * xs; t <= x1 + xs * 1e-9; t += xs) {
        double x = ML + (W - ML - MR) * (t - x0) / (x1 - x0);
        char lab[32];
        fmt_num(lab, sizeof lab, t);
        jr_strbuf_addf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#6b7280\"/>\n"
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#374151\">%s</text>\n",
                      x, H - MB, x, H - MB + 4, x, H - MB + 15, lab);
    }
    jr_strbuf_addf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#6b7280\"/>\n", ML, H - MB, W - MR, H - MB);
    jr_strbuf_addf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#374151\">", W - MR, H - MB + 28);
    jr_html_escape(b, xlabel);
    jr_strbuf_addf(b, "</text>\n");
    const char *names[16], *cols[16];
    for (int i = 0; i < ns && i < 16; i++) {
        names[i] = s[i].name;
        cols[i] = s[i].color ? s[i].color : COLORS[i % NCOLORS];
        jr_strbuf_addf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", cols[i],
                      s[i].faint ? "1" : "1.8", s[i].faint ? " stroke-opacity=\"0.3\"" : "");
        int pts = 0;
        for (int j = 0; j < s[i].n; j++) {
            if (!isfinite(s[i].y[j]) || !isfinite(s[i].x[j])) continue;
            jr_strbuf_addf(b, "%s%.1f,%.1f", pts++ ? " " : "", ML + (W - ML - MR) * (s[i].x[j] - x0) / (x1 - x0),
                          ypix(s[i].y[j], y0, y1));
        }
        jr_strbuf_addf(b, "\"/>\n");
        if (pts == 1) /* a single point is invisible as a line */
            for (int j = 0; j < s[i].n; j++)
                if (isfinite(s[i].y[j]) && isfinite(s[i].x[j]))
                    jr_strbuf_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                                  ML + (W - ML - MR) * (s[i].x[j] - x0) / (x1 - x0), ypix(s[i].y[j], y0, y1),
                                  cols[i]);
    }
    legend(b, names, cols, ns < 16 ? ns : 16);
    jr_strbuf_addf(b, "</svg>\n");
}

void jr_svg_bars(jr_strbuf *b, const char *title, const char *ylabel, const char *const *groups, int ng,
                 const char *const *series, int nser, const double *const *v) {
    jr_svg_bars_colored(b, title, ylabel, groups, ng, series, nser, v, NULL);
}

void jr_svg_bars_colored(jr_strbuf *b, const char *title, const char *ylabel, const char *const *groups, int ng,
                         const char *const *series, int nser, const double *const *v, const char *const *colors) {
    const char *cols[16];
    for (int s = 0; s < nser && s < 16; s++) cols[s] = colors && colors[s] ? colors[s] : COLORS[s % NCOLORS];
    if (nser > 16) nser = 16;
    double lo = 0, hi = 0;
    for (int s = 0; s < nser; s++)
        for (int g = 0; g < ng; g++)
            if (isfinite(v[s][g])) { lo = fmin(lo, v[s][g]); hi = fmax(hi, v[s][g]); }
    if (hi - lo < 1e-9) hi = lo + 1;
    double pad = (hi - lo) * 0.08;
    if (lo < 0) lo -= pad;
    hi += pad;
    svg_open(b, title);
    y_axis(b, lo, hi, ylabel);
    double zero = ypix(0, lo, hi), gw = (double)(W - ML - MR) / (ng > 0 ? ng : 1), bw = gw * 0.75 / (nser > 0 ? nser : 1);
    for (int g = 0; g < ng; g++) {
        double gx = ML + g * gw + gw * 0.125;
        for (int s = 0; s < nser; s++) {
            double val = isfinite(v[s][g]) ? v[s][g] : 0, y = ypix(val, lo, hi);
            char num[32];
            fmt_num(num, sizeof num, val);
            jr_strbuf_addf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>", gx + s * bw,
                          fmin(y, zero), bw * 0.92, fabs(zero - y), cols[s]);
            jr_html_escape(b, series[s]);
            jr_strbuf_addf(b, " %s</title></rect>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\" fill=\"#111\">%s</text>\n",
                          num, gx + s * bw + bw * 0.46, val >= 0 ? y - 3 : y + 10, num);
        }
        jr_strbuf_addf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#111\">", ML + g * gw + gw / 2, H - MB + 15);
        jr_html_escape(b, groups[g]);
        jr_strbuf_addf(b, "</text>\n");
    }
    jr_strbuf_addf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#6b7280\"/>\n", ML, zero, W - MR, zero);
    legend(b, series, cols, nser);
    jr_strbuf_addf(b, "</svg>\n");
}

/* ---- the pages' style sheet ---- */

const char jr_report_css[] =
    "body{font-family:sans-serif;margin:24px;color:#111;max-width:1200px}h1{font-size:22px}h2{font-size:18px;margin-top:28px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d1d5db;padding:4px 8px;font-size:13px;text-align:left}"
    "th{background:#f3f4f6}.charts{display:flex;flex-wrap:wrap;gap:12px}.charts svg{border:1px solid #e5e7eb}"
    ".note{color:#6b7280}code{background:#f3f4f6;padding:1px 4px}";
