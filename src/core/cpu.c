/* cpu.c - CPU feature detection (cpuid and xgetbv on x86-64, the auxiliary vector on aarch64) and the
 * kernel level chosen once per process (JR_CPU may force a lower one) */
#include "judgerl/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define JR_X86 1
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

typedef struct {
    int sse42, popcnt, avx, avx2, fma, f16c, bmi1, bmi2, lzcnt, movbe, os_ymm;
    int avx512f, avx512bw, avx512dq, avx512vl, avx512cd, os_zmm, avx512_bf16, amx_bf16, amx_tile;
    int asimd, asimddp, sve, arm_bf16;
} features;

static features F;
static jr_cpu_level level_max_, level_;
static jr_status init_st = JR_OK;
static char init_msg[400];
static pthread_once_t once = PTHREAD_ONCE_INIT;

#ifdef JR_X86
static void detect(features *f) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    f->sse42 = (c >> 20) & 1; f->popcnt = (c >> 23) & 1; f->fma = (c >> 12) & 1; f->movbe = (c >> 22) & 1;
    f->f16c = (c >> 29) & 1;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    unsigned long long xcr0 = 0;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    f->os_ymm = (xcr0 & 6) == 6;                 /* the OS saves xmm and ymm state */
    f->os_zmm = f->os_ymm && (xcr0 & 0xe0) == 0xe0; /* opmask, zmm0-15 upper halves, zmm16-31 */
    f->avx = avx && f->os_ymm;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f->bmi1 = (b >> 3) & 1; f->avx2 = (b >> 5) & 1; f->bmi2 = (b >> 8) & 1;
        f->avx512f = (b >> 16) & 1; f->avx512dq = (b >> 17) & 1; f->avx512cd = (b >> 28) & 1;
        f->avx512bw = (b >> 30) & 1; f->avx512vl = (b >> 31) & 1;
        f->amx_bf16 = (d >> 22) & 1; f->amx_tile = (d >> 24) & 1;
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f->avx512_bf16 = (a >> 5) & 1;
    }
    if (__get_cpuid(0x80000001, &a, &b, &c, &d)) f->lzcnt = (c >> 5) & 1;
}

/* What a level needs that this CPU lacks, as a list of names ("" when nothing). */
static const char *missing(jr_cpu_level l, char *buf, size_t n) {
    buf[0] = 0;
    struct { int have; const char *name; jr_cpu_level from; } need[] = {
        {F.sse42, "sse4.2", JR_CPU_BASELINE}, {F.popcnt, "popcnt", JR_CPU_BASELINE},
        {F.avx, "avx", JR_CPU_AVX2}, {F.avx2, "avx2", JR_CPU_AVX2}, {F.fma, "fma", JR_CPU_AVX2},
        {F.f16c, "f16c", JR_CPU_AVX2}, {F.bmi1, "bmi1", JR_CPU_AVX2}, {F.bmi2, "bmi2", JR_CPU_AVX2},
        {F.lzcnt, "lzcnt", JR_CPU_AVX2}, {F.movbe, "movbe", JR_CPU_AVX2}, {F.os_ymm, "OS support for ymm", JR_CPU_AVX2},
        {F.avx512f, "avx512f", JR_CPU_AVX512}, {F.avx512bw, "avx512bw", JR_CPU_AVX512},
        {F.avx512dq, "avx512dq", JR_CPU_AVX512}, {F.avx512vl, "avx512vl", JR_CPU_AVX512},
        {F.avx512cd, "avx512cd", JR_CPU_AVX512}, {F.os_zmm, "OS support for zmm", JR_CPU_AVX512},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].from <= l && !need[i].have) {
            size_t at = strlen(buf);
            snprintf(buf + at, n - at, "%s%s", at ? ", " : "", need[i].name);
        }
    return buf;
}
#else
static void detect(features *f) {
#ifdef __aarch64__
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->asimd = (hw >> 1) & 1;    /* HWCAP_ASIMD */
    f->asimddp = (hw >> 20) & 1; /* HWCAP_ASIMDDP */
    f->sve = (hw >> 22) & 1;     /* HWCAP_SVE */
    f->arm_bf16 = (hw2 >> 14) & 1; /* HWCAP2_BF16 */
#else
    (void)f;
#endif
}

static const char *missing(jr_cpu_level l, char *buf, size_t n) {
    snprintf(buf, n, "%s", l == JR_CPU_BASELINE ? "" : "an x86-64 CPU");
    return buf;
}
#endif

const char *jr_cpu_arch(void) {
#if defined(__x86_64__)
    return "x86-64";
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "other";
#endif
}

const char *jr_cpu_level_name(jr_cpu_level l) {
    switch (l) {
    case JR_CPU_BASELINE: return "baseline";
    case JR_CPU_AVX2: return "avx2";
    case JR_CPU_AVX512: return "avx512";
    }
    return "?";
}

static void init_once(void) {
    detect(&F);
    char miss[200];
    level_max_ = JR_CPU_BASELINE;
#ifdef JR_X86
    if (!*missing(JR_CPU_AVX512, miss, sizeof miss)) level_max_ = JR_CPU_AVX512;
    else if (!*missing(JR_CPU_AVX2, miss, sizeof miss)) level_max_ = JR_CPU_AVX2;
#endif
    level_ = level_max_;
    const char *want = getenv("JR_CPU");
    if (!want || !*want || !strcmp(want, "native")) return;
    int found = -1;
    for (int l = JR_CPU_BASELINE; l <= JR_CPU_AVX512; l++)
        if (!strcmp(want, jr_cpu_level_name((jr_cpu_level)l))) found = l;
#ifdef __aarch64__
    if (!strcmp(want, "neon")) found = JR_CPU_BASELINE;
#endif
    if (found < 0) {
        init_st = JR_EINVAL;
#ifdef JR_X86
        snprintf(init_msg, sizeof init_msg, "JR_CPU=%s: unknown kernel level (baseline, avx2, avx512, or native for the highest this CPU has)", want);
#else
        snprintf(init_msg, sizeof init_msg, "JR_CPU=%s: unknown kernel level (this %s build has baseline only)", want, jr_cpu_arch());
#endif
        return;
    }
#ifndef JR_X86
    if (found != JR_CPU_BASELINE) {
        init_st = JR_EUNSUPPORTED;
        snprintf(init_msg, sizeof init_msg, "JR_CPU=%s: an x86-64 level; this %s build has baseline only", want, jr_cpu_arch());
        return;
    }
#endif
    if (*missing((jr_cpu_level)found, miss, sizeof miss)) {
        init_st = JR_EUNSUPPORTED;
        snprintf(init_msg, sizeof init_msg, "JR_CPU=%s: this CPU lacks %s (the highest level it has: %s)", want, miss,
                 jr_cpu_level_name(level_max_));
        return;
    }
    level_ = (jr_cpu_level)found;
}

jr_status jr_cpu_init(void) {
    pthread_once(&once, init_once);
    return init_st ? jr_fail(init_st, "%s", init_msg) : JR_OK;
}

jr_cpu_level jr_cpu_level_get(void) {
    pthread_once(&once, init_once);
    if (init_st) {
        fprintf(stderr, "judgerl: %s\n", init_msg);
        abort();
    }
    return level_;
}

jr_cpu_level jr_cpu_level_max(void) {
    pthread_once(&once, init_once);
    return level_max_;
}

int jr_cpu_avx512_bf16(void) { return jr_cpu_level_get() >= JR_CPU_AVX512 && F.avx512_bf16; }

int jr_cpu_bf16_units(void) {
    return jr_cpu_level_get() >= JR_CPU_AVX512 && ((F.avx512_bf16) || (F.amx_bf16 && F.amx_tile));
}

/* "model name" from /proc/cpuinfo, or "" */
static void model_name(char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (!c || strncmp(line, "model name", 10)) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        c[strcspn(c, "\n")] = 0;
        snprintf(out, n, "%s", c);
        break;
    }
    fclose(f);
}

const char *jr_cpu_describe(char *buf, size_t n) {
    pthread_once(&once, init_once);
    char name[200];
    model_name(name, sizeof name);
    size_t at = (size_t)snprintf(buf, n, "%s%s%s:", jr_cpu_arch(), *name ? " " : "", name);
#define FEAT(cond, s)                                                          \
    do {                                                                       \
        if ((cond) && at < n) at += (size_t)snprintf(buf + at, n - at, " %s", s); \
    } while (0)
#ifdef JR_X86
    FEAT(F.sse42, "sse4.2"); FEAT(F.avx, "avx"); FEAT(F.avx2, "avx2"); FEAT(F.fma, "fma"); FEAT(F.f16c, "f16c");
    FEAT(F.avx512f, "avx512f"); FEAT(F.avx512bw, "avx512bw"); FEAT(F.avx512dq, "avx512dq"); FEAT(F.avx512vl, "avx512vl");
    FEAT(F.avx512_bf16, "avx512_bf16"); FEAT(F.amx_bf16 && F.amx_tile, "amx_bf16");
    FEAT(F.avx512f && !F.os_zmm, "(no OS support for zmm)");
#else
    FEAT(F.asimd, "neon"); FEAT(F.asimddp, "dotprod"); FEAT(F.sve, "sve"); FEAT(F.arm_bf16, "bf16");
#endif
#undef FEAT
    return buf;
}
