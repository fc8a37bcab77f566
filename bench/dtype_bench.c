/*
** dtype_bench.c -- throughput of sl_reduce(ADD) against plain loops, memcpy
** and the vectorised yardstick (sl_yardstick_add: the plain loop built -O3
** for x86-64-v3), the last measured side by side, trial by trial.
** build: gcc -std=c11 -O2 -Icore bench/dtype_bench.c core/dtype.c -lm
** GB/s counts the bytes of one buffer per call (dst += src touches three
** times that: read dst, read src, write dst; memcpy touches twice that).
** The plain loops are compiled here, at the flags of this file.
*/

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L   /* clock_gettime */
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

typedef void (*bench_fn) (void *dst, const void *src, size_t bytes);


/* seconds of this process's CPU time (the machine is shared: wall time
** counts the other processes too) */
static double now (void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


/* the loop anyone would write: int32 */
NOINLINE static void plain_i32 (int32_t *d, const int32_t *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) d[i] = (int32_t)((uint32_t)d[i] + (uint32_t)s[i]);
}


/* the loop anyone would write: fp32 */
NOINLINE static void plain_f32 (float *d, const float *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) d[i] += s[i];
}


static void b_plain_i32 (void *d, const void *s, size_t b) {
  plain_i32(d, s, b / 4);
}

static void b_plain_f32 (void *d, const void *s, size_t b) {
  plain_f32(d, s, b / 4);
}

static void b_memcpy (void *d, const void *s, size_t b) {
  memcpy(d, s, b);
}

static void b_red_i32 (void *d, const void *s, size_t b) {
  sl_reduce(SL_INT32, SL_OP_ADD, d, s, b / 4);
}

static void b_red_f32 (void *d, const void *s, size_t b) {
  sl_reduce(SL_FP32, SL_OP_ADD, d, s, b / 4);
}

static void b_red_f16 (void *d, const void *s, size_t b) {
  sl_reduce(SL_FP16, SL_OP_ADD, d, s, b / 2);
}

static void b_red_bf16 (void *d, const void *s, size_t b) {
  sl_reduce(SL_BF16, SL_OP_ADD, d, s, b / 2);
}

static void b_yard_i32 (void *d, const void *s, size_t b) {
  sl_yardstick_add(SL_INT32, d, s, b / 4);
}

static void b_yard_f32 (void *d, const void *s, size_t b) {
  sl_yardstick_add(SL_FP32, d, s, b / 4);
}

static void b_yard_f16 (void *d, const void *s, size_t b) {
  sl_yardstick_add(SL_FP16, d, s, b / 2);
}

static void b_yard_bf16 (void *d, const void *s, size_t b) {
  sl_yardstick_add(SL_BF16, d, s, b / 2);
}

static void b_red_f16max (void *d, const void *s, size_t b) {
  sl_reduce(SL_FP16, SL_OP_MAX, d, s, b / 2);
}

static void b_cast_f16 (void *d, const void *s, size_t b) {
  sl_cast(SL_FP16, d, SL_FP32, s, b / 4);   /* b bytes of fp32 read */
}

static void b_checksum (void *d, const void *s, size_t b) {
  *(volatile uint64_t *)d = sl_checksum(s, b, 0);
}


/* best GB/s over a few trials of about 0.15 s each */
static double measure (bench_fn fn, void *d, const void *s, size_t bytes) {
  double best = 0.0;
  int trial;
  size_t reps = 1;
  double t0, t;
  /* warm up and size the repeat count */
  for (;;) {
    size_t r;
    t0 = now();
    for (r = 0; r < reps; r++) fn(d, s, bytes);
    t = now() - t0;
    if (t > 0.05) break;
    reps *= 2;
  }
  reps = (size_t)((double)reps * 0.15 / t) + 1;
  for (trial = 0; trial < 5; trial++) {
    size_t r;
    double gbs;
    t0 = now();
    for (r = 0; r < reps; r++) fn(d, s, bytes);
    t = now() - t0;
    gbs = (double)bytes * (double)reps / t * 1e-9;
    if (gbs > best) best = gbs;
  }
  return best;
}


/* two buffers of bytes of dtype t, random in [-100, 100] and [-lim, lim] */
static int two_buffers (sl_dtype t, size_t bytes, double lim, void **d, void **s) {
  size_t n = bytes / sl_dtype_size(t);
  *d = aligned_alloc(64, bytes);
  *s = aligned_alloc(64, bytes);
  if (*d == NULL || *s == NULL) return 0;
  sl_fill_pattern(t, *d, n, SL_FILL_RANDOM, -100, 100, 1, 0);
  sl_fill_pattern(t, *s, n, SL_FILL_RANDOM, -lim, lim, 2, 0);
  return 1;
}


/* reps of fn that take about sec seconds */
static size_t size_reps (bench_fn fn, void *d, const void *s, size_t bytes, double sec) {
  size_t reps = 1, r;
  for (;;) {
    double t0 = now(), t;
    for (r = 0; r < reps; r++) fn(d, s, bytes);
    t = now() - t0;
    if (t > 0.02) return (size_t)((double)reps * sec / t) + 1;
    reps *= 2;
  }
}


/* best GB/s of a and of b, trials alternating (one machine state for both) */
static void measure2 (bench_fn a, bench_fn b, void *d, const void *s, size_t bytes,
                      double *ga, double *gb) {
  size_t ra = size_reps(a, d, s, bytes, 0.05), rb = size_reps(b, d, s, bytes, 0.05);
  int trial;
  *ga = *gb = 0.0;
  for (trial = 0; trial < 7; trial++) {
    size_t r;
    double t0 = now(), g;
    for (r = 0; r < ra; r++) a(d, s, bytes);
    g = (double)bytes * (double)ra / (now() - t0) * 1e-9;
    if (g > *ga) *ga = g;
    t0 = now();
    for (r = 0; r < rb; r++) b(d, s, bytes);
    g = (double)bytes * (double)rb / (now() - t0) * 1e-9;
    if (g > *gb) *gb = g;
  }
}


/* sl_reduce ADD over the yardstick, per dtype and size */
static int yardstick_table (void) {
  static const struct { const char *name; bench_fn red, yard; sl_dtype t; } rows[] = {
    {"int32", b_red_i32, b_yard_i32, SL_INT32},
    {"fp32", b_red_f32, b_yard_f32, SL_FP32},
    {"fp16", b_red_f16, b_yard_f16, SL_FP16},
    {"bf16", b_red_bf16, b_yard_bf16, SL_BF16}
  };
  static const size_t sizes[] = {192 * 1024, 16 * 1024 * 1024};
  size_t ri, si;
  printf("\nsl_reduce ADD / yardstick (-O3, x86-64-v3 C loop), GB/s, goal >= 0.8\n");
  printf("%-8s %28s %28s\n", "", "192 KiB: reduce yard ratio", "16 MiB: reduce yard ratio");
  for (ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
    printf("%-8s", rows[ri].name);
    for (si = 0; si < 2; si++) {
      size_t bytes = sizes[si];
      void *d, *s;
      double gr, gy;
      if (!two_buffers(rows[ri].t, bytes, 1, &d, &s)) return 1;
      measure2(rows[ri].red, rows[ri].yard, d, s, bytes, &gr, &gy);
      printf(" %10.2f %8.2f %8.2f", gr, gy, gr / gy);
      fflush(stdout);
      free(d);
      free(s);
    }
    printf("\n");
  }
  return 0;
}


int main (void) {
  static const struct { const char *name; bench_fn fn; sl_dtype t; } cases[] = {
    {"memcpy", b_memcpy, SL_INT32},
    {"plain loop int32 +=", b_plain_i32, SL_INT32},
    {"plain loop fp32 +=", b_plain_f32, SL_FP32},
    {"sl_reduce ADD int32", b_red_i32, SL_INT32},
    {"sl_reduce ADD fp32", b_red_f32, SL_FP32},
    {"sl_reduce ADD fp16", b_red_f16, SL_FP16},
    {"sl_reduce ADD bf16", b_red_bf16, SL_BF16},
    {"sl_reduce MAX fp16", b_red_f16max, SL_FP16},
    {"sl_cast fp32->fp16", b_cast_f16, SL_FP32},
    {"sl_checksum", b_checksum, SL_UINT8}
  };
  static const size_t sizes[] = {192 * 1024, 16 * 1024 * 1024};
  size_t si, ci;
  printf("GB/s = bytes of one buffer per second (best of 5)\n");
  printf("%-22s %12s %12s\n", "", "192 KiB", "16 MiB");
  for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    printf("%-22s", cases[ci].name);
    for (si = 0; si < 2; si++) {
      size_t bytes = sizes[si];
      void *d, *s;
      if (!two_buffers(cases[ci].t, bytes, 100, &d, &s)) return 1;
      printf(" %12.2f", measure(cases[ci].fn, d, s, bytes));
      fflush(stdout);
      free(d);
      free(s);
    }
    printf("\n");
  }
  return yardstick_table();
}
