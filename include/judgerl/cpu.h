/* cpu.h - the CPU judgerl runs on: its features, and the kernel level chosen once at start-up
 *
 * One portable build serves every CPU: the code is compiled for a baseline (x86-64-v2 on x86-64,
 * armv8-a on aarch64) and the hot kernels once more per ISA level; the highest level the CPU (and
 * the OS, for the wider registers) supports is chosen at the first call, or a lower one forced by
 * the environment variable JR_CPU. Results are bitwise reproducible within a level; two levels may
 * differ by fp32 rounding (a fused multiply-add, another exp polynomial). */
#ifndef JUDGERL_CPU_H
#define JUDGERL_CPU_H

#include <stddef.h>

#include "judgerl/status.h"

/* Kernel levels, lowest first. x86-64: baseline (SSE4.2), avx2 (AVX2 + FMA: x86-64-v3), avx512
 * (AVX-512 F/BW/DQ/VL: x86-64-v4). aarch64: baseline (armv8-a, whose Advanced SIMD is NEON). */
typedef enum { JR_CPU_BASELINE = 0, JR_CPU_AVX2 = 1, JR_CPU_AVX512 = 2 } jr_cpu_level;

/* Reads JR_CPU once (unset or empty: the highest level the CPU has) and fixes the level for the
 * process. Fails with one line (an unknown name, or a level the CPU lacks, naming the missing
 * features) and then keeps failing; the CLI calls it before anything else. Thread-safe. */
jr_status jr_cpu_init(void);

/* The chosen level (jr_cpu_init on the first call; on its failure the message goes to stderr and
 * the process aborts: a forced level the CPU cannot run is never replaced silently). */
jr_cpu_level jr_cpu_level_get(void);

/* The highest level this CPU supports, whatever JR_CPU says. */
jr_cpu_level jr_cpu_level_max(void);

/* "baseline", "avx2", "avx512". */
const char *jr_cpu_level_name(jr_cpu_level l);

/* 1 when the CPU has AVX512-BF16 (and the chosen level is avx512). */
int jr_cpu_avx512_bf16(void);

/* 1 when the CPU has bf16 matrix units judgerl's bf16 compute can use (AMX-BF16, or AVX-512 with
 * AVX512-BF16) and the chosen level lets it use them (JR_CPU below avx512 turns them off). */
int jr_cpu_bf16_units(void);

/* The CPU's model name and the features that matter to judgerl's kernels, one line
 * ("AMD EPYC 9R14: sse4.2 avx2 fma avx512f ... avx512_bf16; no amx"). */
const char *jr_cpu_describe(char *buf, size_t n);

/* The machine's architecture as judgerl was built for it: "x86-64" or "aarch64". */
const char *jr_cpu_arch(void);

#endif
