/*
** test_dtype.c -- standalone tests of core/dtype.c
** build: gcc -std=c11 -O2 -Icore spec/c/test_dtype.c core/dtype.c -lm
** Last line printed: "N passed, N failed"; exit status 1 on any failure.
** SL_TEST_FULL=1 in the environment also checks all 2^32 fp32 -> fp16/bf16.
*/

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

#include "check.h"


#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))


/* bits of a float */
static uint32_t fbits (float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}


/* float of bits */
static float bitsf (uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}


/* deterministic test data (xorshift64*) */
static uint64_t rnd (uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * UINT64_C(2685821657736338717);
}


/* independent fp16 -> double (by the definition of binary16) */
static double ref_h2d (uint16_t h) {
  int e = (h >> 10) & 31, m = h & 0x3ff;
  double v;
  if (e == 0) v = ldexp(m, -24);
  else if (e == 31) v = m ? (double)NAN : HUGE_VAL;
  else v = ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}


/* independent fp32 -> fp16, round to nearest even via rint */
static uint16_t ref_f2h (float f) {
  uint32_t x = fbits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  double a = fabs((double)f), m;
  int e;
  if (isnan(f)) return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u);
  if (a < 0x1p-14) return (uint16_t)(sign | (uint16_t)rint(a * 0x1p24));
  frexp(a, &e);
  e -= 1;                              /* a in [2^e, 2^(e+1)) */
  m = rint(ldexp(a, 10 - e));          /* in [1024, 2048] */
  if (m == 2048.0) { m = 1024.0; e++; }
  if (e + 15 >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | ((e + 15) << 10) | ((int)m - 1024));
}


/* independent fp32 -> bf16, round to nearest even via rint */
static uint16_t ref_f2b (float f) {
  uint32_t x = fbits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  double a = fabs((double)f), m;
  int e;
  if (isnan(f)) return (uint16_t)((x >> 16) | 0x40u);
  if (isinf(f)) return (uint16_t)(sign | 0x7f80u);
  if (a < 0x1p-126) return (uint16_t)(sign | (uint16_t)rint(a * 0x1p133));
  frexp(a, &e);
  e -= 1;
  m = rint(ldexp(a, 7 - e));           /* in [128, 256] */
  if (m == 256.0) { m = 128.0; e++; }
  if (e + 127 >= 255) return (uint16_t)(sign | 0x7f80u);
  return (uint16_t)(sign | ((e + 127) << 7) | ((int)m - 128));
}


/* what the fp16 add must give: fp32 sum, one rounding, canonical NaN */
static uint16_t ref_addh (uint16_t x, uint16_t y) {
  float r = sl_f16_to_f32(x) + sl_f16_to_f32(y);
  return isnan(r) ? 0x7e00 : sl_f32_to_f16(r);
}


/* the same for bf16 */
static uint16_t ref_addb (uint16_t x, uint16_t y) {
  float r = sl_bf16_to_f32(x) + sl_bf16_to_f32(y);
  return isnan(r) ? 0x7fc0 : sl_f32_to_bf16(r);
}


/* IEEE 754-2019 maximum/minimum on floats (NaN wins, -0 < +0), sel = +1
** for max, -1 for min; returns 0 = x, 1 = y, 2 = NaN */
static int ref_sel (float x, float y, int sel) {
  if (isnan(x) || isnan(y)) return 2;
  if (x == y) {
    if (!signbit(x) == !signbit(y)) return 0;
    return (sel > 0) == (signbit(x) != 0);
  }
  return sel > 0 ? (y > x) : (y < x);
}


/* ------------------------------------------------------------------ */

/* dtype table */
static void t_names (void) {
  static const char *const names[] = {
    "int8", "int16", "int32", "int64", "uint8", "fp16", "bf16", "fp32",
    "uint16", "uint32", "uint64", "fp64"                /* issue 13 part 9 */
  };
  static const size_t sizes[] = {1, 2, 4, 8, 1, 2, 2, 4, 2, 4, 8, 8};
  static const int isfloat[] = {0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1};
  int i;
  CHECK(SL_NDTYPES == 12, "the table has %d dtypes", (int)SL_NDTYPES);
  for (i = 0; i < SL_NDTYPES && i < 12; i++) {
    CHECK(strcmp(sl_dtype_name((sl_dtype)i), names[i]) == 0, "name %d", i);
    CHECK(sl_dtype_find(names[i]) == i, "find %s", names[i]);
    CHECK(sl_dtype_size((sl_dtype)i) == sizes[i], "size %d", i);
    CHECK(sl_dtype_isfloat((sl_dtype)i) == isfloat[i], "isfloat %d", i);
  }
  CHECK(sl_dtype_find("float16") == SL_FP16, "alias float16");
  CHECK(sl_dtype_find("half") == SL_FP16, "alias half");
  CHECK(sl_dtype_find("bfloat16") == SL_BF16, "alias bfloat16");
  CHECK(sl_dtype_find("float32") == SL_FP32, "alias float32");
  CHECK(sl_dtype_find("float") == SL_FP32, "alias float");
  CHECK(sl_dtype_find("double") == SL_FP64, "alias double");
  CHECK(sl_dtype_find("fp128") == -1, "unknown");
  CHECK(sl_dtype_find("") == -1, "empty");
  CHECK(sl_dtype_find("FP16") == -1, "case sensitive");
  CHECK(sl_dtype_find(NULL) == -1, "NULL");
  CHECK(sl_dtype_size(SL_NDTYPES) == 0, "size invalid");
  CHECK(strcmp(sl_dtype_name(SL_NDTYPES), "?") == 0, "name invalid");
}


/* all 65536 fp16 patterns: exact value, round trip, bulk == scalar */
static void t_f16_all (void) {
  static uint16_t h[65536], back[65536], back2[65536];
  static float f[65536];
  int bad_val = 0, bad_trip = 0, bad_bulk = 0, bad_bulk2 = 0;
  uint32_t i;
  for (i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  sl_cast(SL_FP32, f, SL_FP16, h, 65536);      /* F16C path when present */
  sl_cast(SL_FP16, back, SL_FP32, f, 65536);
  for (i = 0; i < 65536; i++) {
    float s = sl_f16_to_f32((uint16_t)i);
    double r = ref_h2d((uint16_t)i);
    uint16_t t = sl_f32_to_f16(s);
    if (isnan(r)) {
      uint32_t want = ((i & 0x8000u) << 16) | 0x7fc00000u | ((i & 0x3ffu) << 13);
      if (fbits(s) != want) bad_val++;
      if (t != (uint16_t)(i | 0x0200u)) bad_trip++;  /* quieted, payload kept */
    }
    else {
      if ((double)s != r || !signbit(s) != !signbit(r)) bad_val++;
      if (t != i) bad_trip++;
    }
    if (fbits(f[i]) != fbits(s)) bad_bulk++;
    if (back[i] != t) bad_bulk2++;
  }
  CHECK(bad_val == 0, "f16->f32 exact value: %d bad", bad_val);
  CHECK(bad_trip == 0, "f16->f32->f16 identity: %d bad", bad_trip);
  CHECK(bad_bulk == 0, "bulk f16->f32 == scalar: %d bad", bad_bulk);
  CHECK(bad_bulk2 == 0, "bulk f32->f16 == scalar: %d bad", bad_bulk2);
  /* odd lengths exercise the portable tail after the vector part */
  memset(back2, 0, sizeof back2);
  sl_cast(SL_FP16, back2 + 1, SL_FP32, f + 1, 13);
  CHECK(memcmp(back2 + 1, back + 1, 13 * 2) == 0 && back2[0] == 0 &&
        back2[14] == 0, "odd-length cast");
}


/* fp32 -> fp16 / bf16 against the independent references */
static void t_f32_sweep (int full) {
  enum { CH = 4096 };
  static float f[CH];
  static uint16_t h[CH], b[CH];
  uint64_t x, step = full ? 1 : 65521, count = 0;
  long bad_h = 0, bad_hb = 0, bad_b = 0, bad_bb = 0;
  size_t k = 0, i;
  for (x = 0; x <= 0xffffffffu; x += step) {
    f[k++] = bitsf((uint32_t)x);
    if (k == CH || x + step > 0xffffffffu) {
      sl_cast(SL_FP16, h, SL_FP32, f, k);
      sl_cast(SL_BF16, b, SL_FP32, f, k);
      for (i = 0; i < k; i++) {
        uint16_t sh = sl_f32_to_f16(f[i]), sb = sl_f32_to_bf16(f[i]);
        if (sh != ref_f2h(f[i])) bad_h++;
        if (h[i] != sh) bad_hb++;
        if (sb != ref_f2b(f[i])) bad_b++;
        if (b[i] != sb) bad_bb++;
      }
      count += k;
      k = 0;
    }
  }
  /* every value next to the fp16/bf16 rounding boundaries */
  for (i = 0; i < 65536; i++) {
    uint32_t u = fbits(sl_f16_to_f32((uint16_t)i)), d;
    for (d = 0; d < 8; d++) {
      uint32_t v[4];
      v[0] = u + (0x1000u - 4u + d);   /* around the half-ulp point */
      v[1] = u - d;
      v[2] = ((uint32_t)i << 16) + 0x8000u - 4u + d;   /* bf16 ties */
      v[3] = ((uint32_t)i << 16) + d;
      for (k = 0; k < 4; k++) {
        float g = bitsf(v[k]);
        uint16_t sh = sl_f32_to_f16(g), bh, sb = sl_f32_to_bf16(g), bb;
        sl_cast(SL_FP16, &bh, SL_FP32, &g, 1);
        sl_cast(SL_BF16, &bb, SL_FP32, &g, 1);
        if (sh != ref_f2h(g)) bad_h++;
        if (bh != sh) bad_hb++;
        if (sb != ref_f2b(g)) bad_b++;
        if (bb != sb) bad_bb++;
      }
      count++;
    }
  }
  CHECK(bad_h == 0, "f32->f16 vs reference: %ld bad of %llu", bad_h,
        (unsigned long long)count);
  CHECK(bad_hb == 0, "bulk f32->f16 vs scalar: %ld bad", bad_hb);
  CHECK(bad_b == 0, "f32->bf16 vs reference: %ld bad", bad_b);
  CHECK(bad_bb == 0, "bulk f32->bf16 vs scalar: %ld bad", bad_bb);
}


/* named rounding cases */
static void t_round_cases (void) {
  const struct { float f; uint16_t h; } hc[] = {
    {2048.0f, 0x6800}, {2049.0f, 0x6800}, {2050.0f, 0x6801},
    {2051.0f, 0x6802}, {2053.0f, 0x6802}, {2055.0f, 0x6804},
    {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01},
    {1.0f + 3 * 0x1p-11f, 0x3c02},
    {65504.0f, 0x7bff}, {65519.0f, 0x7bff}, {65520.0f, 0x7c00},
    {-65520.0f, 0xfc00}, {1e10f, 0x7c00}, {INFINITY, 0x7c00},
    {-INFINITY, 0xfc00}, {0.0f, 0x0000}, {-0.0f, 0x8000},
    {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {-0x1p-25f, 0x8000},
    {0x1p-25f * 1.0000001f, 0x0001}, {0x1.8p-24f, 0x0002},
    {0x1.4p-23f, 0x0002}, {0x1.cp-23f, 0x0004}, {0x1p-26f, 0x0000},
    {1023 * 0x1p-24f, 0x03ff}, {1023.5f * 0x1p-24f, 0x0400},
    {0x1p-14f, 0x0400}, {0.1f, 0x2e66}, {0.2f, 0x3266}, {0.3f, 0x34cd},
    {1e-10f, 0x0000}, {bitsf(0x7fa00000u), 0x7f00},
    {bitsf(0xffc00000u), 0xfe00}, {bitsf(0x7f800001u), 0x7e00}
  };
  const struct { float f; uint16_t b; } bc[] = {
    {1.0f + 0x1p-8f, 0x3f80}, {1.0f + 3 * 0x1p-8f, 0x3f82},
    {1.0f + 0x1p-8f + 0x1p-20f, 0x3f81}, {3.4028235e38f, 0x7f80},
    {bitsf(0x7f7f7fffu), 0x7f7f}, {bitsf(0x7f7f8000u), 0x7f80},
    {bitsf(0x00008000u), 0x0000}, {bitsf(0x00018000u), 0x0002},
    {bitsf(0x80008001u), 0x8001}, {-INFINITY, 0xff80},
    {bitsf(0x7f800001u), 0x7fc0}, {bitsf(0xffa00000u), 0xffe0}
  };
  size_t i;
  for (i = 0; i < N_ELEMS(hc); i++)
    CHECK(sl_f32_to_f16(hc[i].f) == hc[i].h, "f16(%a) = %04x, want %04x",
          (double)hc[i].f, sl_f32_to_f16(hc[i].f), hc[i].h);
  for (i = 0; i < N_ELEMS(bc); i++)
    CHECK(sl_f32_to_bf16(bc[i].f) == bc[i].b, "bf16(%a) = %04x, want %04x",
          (double)bc[i].f, sl_f32_to_bf16(bc[i].f), bc[i].b);
  CHECK(sl_f16_to_f32(0x0001) == 0x1p-24f, "smallest subnormal");
  CHECK(sl_f16_to_f32(0x03ff) == 1023 * 0x1p-24f, "largest subnormal");
  CHECK(sl_f16_to_f32(0x7bff) == 65504.0f, "fp16 max");
  CHECK(sl_f16_to_f32(0xfc00) == -INFINITY, "-inf");
  CHECK(fbits(sl_f16_to_f32(0x8000)) == 0x80000000u, "-0");
  CHECK(fbits(sl_bf16_to_f32(0x7f81)) == 0x7f810000u, "bf16 NaN bits");
  CHECK(sl_bf16_to_f32(0x0001) == 0x1p-133f, "bf16 subnormal");
}


/* element access: sl_get_num / sl_set_num / sl_get_int / sl_set_int */
static void t_access (void) {
  unsigned char buf[64];
  int8_t i8;
  uint16_t h;
  int32_t i32;
  int64_t i64;
  float f;
  sl_set_num(SL_INT8, buf, 3, 200.7);
  memcpy(&i8, buf + 3, 1);
  CHECK(i8 == -56, "set_num int8 wraps: %d", i8);
  CHECK(sl_get_int(SL_INT8, buf, 3) == -56, "get_int int8");
  sl_set_num(SL_INT32, buf, 1, -7.9);
  memcpy(&i32, buf + 4, 4);
  CHECK(i32 == -7, "set_num int32 truncates");
  sl_set_num(SL_INT32, buf, 0, (double)NAN);
  CHECK(sl_get_int(SL_INT32, buf, 0) == 0, "NaN -> 0");
  sl_set_num(SL_INT64, buf, 0, 1e300);
  CHECK(sl_get_int(SL_INT64, buf, 0) == INT64_MAX, "clamp high");
  sl_set_num(SL_INT64, buf, 0, -1e300);
  CHECK(sl_get_int(SL_INT64, buf, 0) == INT64_MIN, "clamp low");
  sl_set_int(SL_INT64, buf, 1, INT64_MIN + 5);
  memcpy(&i64, buf + 8, 8);
  CHECK(i64 == INT64_MIN + 5, "set_int int64");
  CHECK(sl_get_int(SL_INT64, buf, 1) == INT64_MIN + 5, "get_int int64");
  sl_set_int(SL_UINT8, buf, 0, -1);
  CHECK(buf[0] == 255 && sl_get_int(SL_UINT8, buf, 0) == 255, "uint8 wrap");
  sl_set_int(SL_INT16, buf, 0, 70000);
  CHECK(sl_get_int(SL_INT16, buf, 0) == 70000 - 65536, "int16 wrap");
  sl_set_num(SL_FP16, buf, 2, 2049.0);
  memcpy(&h, buf + 4, 2);
  CHECK(h == 0x6800, "set_num fp16 tie");
  sl_set_num(SL_FP16, buf, 2, 2049.0000001);
  memcpy(&h, buf + 4, 2);
  CHECK(h == 0x6801, "set_num fp16 above tie");
  /* 1 + 2^-11 + 2^-40 is a tie in fp32 (it rounds to 1 + 2^-11): a
     double -> fp32 -> fp16 path would give 1.0; the correct answer is up */
  sl_set_num(SL_FP16, buf, 0, 1.0 + 0x1p-11 + 0x1p-40);
  memcpy(&h, buf, 2);
  CHECK(h == 0x3c01, "set_num fp16 single rounding: %04x", h);
  sl_set_num(SL_BF16, buf, 0, 1.0 + 0x1p-8 + 0x1p-40);
  memcpy(&h, buf, 2);
  CHECK(h == 0x3f81, "set_num bf16 single rounding: %04x", h);
  sl_set_num(SL_FP16, buf, 0, 1e6);
  CHECK(sl_get_num(SL_FP16, buf, 0) == HUGE_VAL, "fp16 overflow");
  sl_set_num(SL_FP16, buf, 0, 1e-300);
  memcpy(&h, buf, 2);
  CHECK(h == 0x0000, "fp16 underflow");
  sl_set_num(SL_FP16, buf, 0, -1e-300);
  memcpy(&h, buf, 2);
  CHECK(h == 0x8000, "fp16 underflow keeps sign");
  sl_set_int(SL_FP16, buf, 0, 2051);
  CHECK(sl_get_num(SL_FP16, buf, 0) == 2052.0, "set_int fp16");
  sl_set_int(SL_BF16, buf, 0, 16842753);   /* 2^24 + 2^16 + 1 */
  memcpy(&h, buf, 2);
  CHECK(h == 0x4b81, "set_int bf16 single rounding: %04x", h);
  sl_set_num(SL_FP32, buf, 0, 0.1);
  memcpy(&f, buf, 4);
  CHECK(f == 0.1f, "set_num fp32");
  CHECK(sl_get_num(SL_FP32, buf, 0) == (double)0.1f, "get_num fp32");
  sl_set_num(SL_FP32, buf, 0, -2.75);
  CHECK(sl_get_int(SL_FP32, buf, 0) == -2, "get_int fp32 truncates");
  sl_set_num(SL_BF16, buf, 5, 3.0);
  CHECK(sl_get_num(SL_BF16, buf, 5) == 3.0, "bf16 get/set");
  sl_set_num(SL_FP32, buf, 0, 1e39);
  CHECK(sl_get_num(SL_FP32, buf, 0) == HUGE_VAL, "fp32 overflow");
}


/* ------------------------------------------------------------------ */

/* one hand-computed case: d op= s == want, for reduce and binary */
static void op_case (const char *what, sl_dtype t, sl_op op, const void *d0,
                     const void *s, const void *want, size_t n) {
  unsigned char d[64], c[64], a2[64];
  size_t sz = sl_dtype_size(t) * n;
  memcpy(d, d0, sz);
  sl_reduce(t, op, d, s, n);
  CHECK(memcmp(d, want, sz) == 0, "reduce %s %s op %d", what,
        sl_dtype_name(t), (int)op);
  memset(c, 0xa5, sizeof c);
  sl_binary(t, op, c, d0, s, n);
  CHECK(memcmp(c, want, sz) == 0, "binary %s %s op %d", what,
        sl_dtype_name(t), (int)op);
  memcpy(a2, d0, sz);                       /* dst == a */
  sl_binary(t, op, a2, a2, s, n);
  CHECK(memcmp(a2, want, sz) == 0, "binary dst==a %s", what);
  memcpy(a2, s, sz);                        /* dst == b */
  sl_binary(t, op, a2, d0, a2, n);
  CHECK(memcmp(a2, want, sz) == 0, "binary dst==b %s", what);
}


/* every dtype x op of sl_reduce / sl_binary on small arrays */
static void t_reduce_small (void) {
  {
    static const int8_t d[] = {127, -128, 5, -1, 0};
    static const int8_t s[] = {1, -1, -7, -1, 0};
    static const int8_t add[] = {-128, 127, -2, -2, 0};
    static const int8_t mx[] = {127, -1, 5, -1, 0};
    static const int8_t mn[] = {1, -128, -7, -1, 0};
    op_case("i8", SL_INT8, SL_OP_ADD, d, s, add, 5);
    op_case("i8", SL_INT8, SL_OP_MAX, d, s, mx, 5);
    op_case("i8", SL_INT8, SL_OP_MIN, d, s, mn, 5);
    op_case("i8", SL_INT8, SL_OP_NONE, d, s, s, 5);
  }
  {
    static const int16_t d[] = {32767, -32768, 100, 0};
    static const int16_t s[] = {1, -1, -300, -32768};
    static const int16_t add[] = {-32768, 32767, -200, -32768};
    static const int16_t mx[] = {32767, -1, 100, 0};
    static const int16_t mn[] = {1, -32768, -300, -32768};
    op_case("i16", SL_INT16, SL_OP_ADD, d, s, add, 4);
    op_case("i16", SL_INT16, SL_OP_MAX, d, s, mx, 4);
    op_case("i16", SL_INT16, SL_OP_MIN, d, s, mn, 4);
  }
  {
    static const int32_t d[] = {INT32_MAX, INT32_MIN, 7, -5, 1000000};
    static const int32_t s[] = {1, -1, -9, 5, 2000000};
    static const int32_t add[] = {INT32_MIN, INT32_MAX, -2, 0, 3000000};
    static const int32_t mx[] = {INT32_MAX, -1, 7, 5, 2000000};
    static const int32_t mn[] = {1, INT32_MIN, -9, -5, 1000000};
    op_case("i32", SL_INT32, SL_OP_ADD, d, s, add, 5);
    op_case("i32", SL_INT32, SL_OP_MAX, d, s, mx, 5);
    op_case("i32", SL_INT32, SL_OP_MIN, d, s, mn, 5);
  }
  {
    static const int64_t d[] = {INT64_MAX, INT64_MIN, 7, INT64_C(1) << 40};
    static const int64_t s[] = {1, -1, -9, INT64_C(1) << 40};
    static const int64_t add[] = {INT64_MIN, INT64_MAX, -2, INT64_C(1) << 41};
    static const int64_t mx[] = {INT64_MAX, -1, 7, INT64_C(1) << 40};
    static const int64_t mn[] = {1, INT64_MIN, -9, INT64_C(1) << 40};
    op_case("i64", SL_INT64, SL_OP_ADD, d, s, add, 4);
    op_case("i64", SL_INT64, SL_OP_MAX, d, s, mx, 4);
    op_case("i64", SL_INT64, SL_OP_MIN, d, s, mn, 4);
  }
  {
    static const uint8_t d[] = {255, 0, 100, 200};
    static const uint8_t s[] = {1, 0, 55, 100};
    static const uint8_t add[] = {0, 0, 155, 44};
    static const uint8_t mx[] = {255, 0, 100, 200};
    static const uint8_t mn[] = {1, 0, 55, 100};
    op_case("u8", SL_UINT8, SL_OP_ADD, d, s, add, 4);
    op_case("u8", SL_UINT8, SL_OP_MAX, d, s, mx, 4);
    op_case("u8", SL_UINT8, SL_OP_MIN, d, s, mn, 4);
  }
  {
    /* 0.1 + 0.2: fp16 0.0999755859375 + 0.199951171875 = 0.2999267578125,
       exactly halfway between 0x34cc and 0x34cd: ties to even 0x34cc
       (rounding 0.3 itself to fp16 gives 0x34cd) */
    static const uint16_t d[] = {0x2e66, 0x3c00, 0x7bff, 0x7c00, 0x7d01,
                                 0x0001, 0x8000, 0x0000, 0x3c00, 0xfbff};
    static const uint16_t s[] = {0x3266, 0x1000, 0x7bff, 0xfc00, 0x3c00,
                                 0x0001, 0x8000, 0x8000, 0x3c01, 0x3c00};
    static const uint16_t add[] = {0x34cc, 0x3c00, 0x7c00, 0x7e00, 0x7e00,
                                   0x0002, 0x8000, 0x0000, 0x4000, 0xfbff};
    static const uint16_t mx[] = {0x3266, 0x3c00, 0x7bff, 0x7c00, 0x7e00,
                                  0x0001, 0x8000, 0x0000, 0x3c01, 0x3c00};
    static const uint16_t mn[] = {0x2e66, 0x1000, 0x7bff, 0xfc00, 0x7e00,
                                  0x0001, 0x8000, 0x8000, 0x3c00, 0xfbff};
    uint16_t x[3] = {0x3c00, 0x3c00, 0x3c00}, e11[3] = {0x1000, 0x1000, 0x1000};
    op_case("f16", SL_FP16, SL_OP_ADD, d, s, add, 10);
    op_case("f16", SL_FP16, SL_OP_MAX, d, s, mx, 10);
    op_case("f16", SL_FP16, SL_OP_MIN, d, s, mn, 10);
    CHECK(sl_f32_to_f16(0.3f) == 0x34cd, "fp16(0.3) differs from 0.1+0.2");
    /* 1 + 2^-11 + 2^-11: each sl_reduce rounds to fp16 (1 + 2^-11 ties to
       1.0, twice), where one fp32 sum rounded once would give 0x3c01 */
    sl_reduce(SL_FP16, SL_OP_ADD, x, e11, 3);
    sl_reduce(SL_FP16, SL_OP_ADD, x, e11, 3);
    CHECK(x[0] == 0x3c00 && x[2] == 0x3c00, "fp16 rounds per reduce");
    CHECK(sl_f32_to_f16(1.0f + 0x1p-11f + 0x1p-11f) == 0x3c01,
          "fp32 sum rounded once");
  }
  {
    static const uint16_t d[] = {0x3f80, 0x3f80, 0x7f7f, 0x7f80, 0x7fa0,
                                 0x0001, 0x8000, 0x4000};
    static const uint16_t s[] = {0x3b80, 0x3c40, 0x7f7f, 0xff80, 0x3f80,
                                 0x8001, 0x0000, 0xc000};
    static const uint16_t add[] = {0x3f80, 0x3f82, 0x7f80, 0x7fc0, 0x7fc0,
                                   0x0000, 0x0000, 0x0000};
    static const uint16_t mx[] = {0x3f80, 0x3f80, 0x7f7f, 0x7f80, 0x7fc0,
                                  0x0001, 0x0000, 0x4000};
    static const uint16_t mn[] = {0x3b80, 0x3c40, 0x7f7f, 0xff80, 0x7fc0,
                                  0x8001, 0x8000, 0xc000};
    op_case("bf16", SL_BF16, SL_OP_ADD, d, s, add, 8);
    op_case("bf16", SL_BF16, SL_OP_MAX, d, s, mx, 8);
    op_case("bf16", SL_BF16, SL_OP_MIN, d, s, mn, 8);
  }
  {
    volatile float p1 = 0.1f, p2 = 0.2f;
    float d[7], s[7], add[7], mx[7], mn[7];
    uint32_t db[7] = {0x3f800000u, 0x7f7fffffu, 0x7f800000u, 0x80000000u,
                      0x7fa00001u, 0xc0000000u, 0};
    uint32_t sb[7] = {0x40000000u, 0x7f7fffffu, 0xff800000u, 0x00000000u,
                      0x3f800000u, 0xbf800000u, 0};
    uint32_t ab[7] = {0x40400000u, 0x7f800000u, 0x7fc00000u, 0x00000000u,
                      0x7fc00000u, 0xc0400000u, 0};
    uint32_t xb[7] = {0x40000000u, 0x7f7fffffu, 0x7f800000u, 0x00000000u,
                      0x7fc00000u, 0xbf800000u, 0};
    uint32_t nb[7] = {0x3f800000u, 0x7f7fffffu, 0xff800000u, 0x80000000u,
                      0x7fc00000u, 0xc0000000u, 0};
    int i;
    for (i = 0; i < 6; i++) {
      d[i] = bitsf(db[i]); s[i] = bitsf(sb[i]); add[i] = bitsf(ab[i]);
      mx[i] = bitsf(xb[i]); mn[i] = bitsf(nb[i]);
    }
    d[6] = p1; s[6] = p2; add[6] = p1 + p2;
    mx[6] = p2; mn[6] = p1;
    op_case("f32", SL_FP32, SL_OP_ADD, d, s, add, 7);
    op_case("f32", SL_FP32, SL_OP_MAX, d, s, mx, 7);
    op_case("f32", SL_FP32, SL_OP_MIN, d, s, mn, 7);
  }
}


/* long random arrays: the (vector / F16C) kernels == scalar references */
static void t_reduce_bulk (void) {
  enum { N = 5003 };
  static uint16_t ha[N], hb[N], hd[N];
  static float fa[N], fb[N], fd[N];
  static int32_t ia[N], ib[N], id[N];
  uint64_t seed = 12345;
  int bad[12] = {0};
  size_t i;
  for (i = 0; i < N; i++) {
    uint64_t r = rnd(&seed);
    ha[i] = (uint16_t)r;
    hb[i] = (uint16_t)(r >> 16);
    if (i % 3 == 0) hb[i] = (uint16_t)((ha[i] & 0x8000) | (r >> 48 & 0x0fff) |
                                       (ha[i] & 0x7000));  /* near a */
    fa[i] = bitsf((uint32_t)(r >> 32));
    fb[i] = bitsf((uint32_t)r);
    if (i % 5 == 0) fb[i] = bitsf(fbits(fa[i]) ^ 0x80000000u);  /* -a */
    ia[i] = (int32_t)(uint32_t)r;
    ib[i] = (int32_t)(uint32_t)(r >> 32);
  }
  /* fp16 add (F16C path on x86 with AVX2, else portable) */
  memcpy(hd, ha, sizeof hd);
  sl_reduce(SL_FP16, SL_OP_ADD, hd, hb, N);
  for (i = 0; i < N; i++) bad[0] += hd[i] != ref_addh(ha[i], hb[i]);
  sl_binary(SL_FP16, SL_OP_ADD, hd, ha, hb, N);
  for (i = 0; i < N; i++) bad[1] += hd[i] != ref_addh(ha[i], hb[i]);
  /* fp16 / bf16 max min */
  sl_binary(SL_FP16, SL_OP_MAX, hd, ha, hb, N);
  for (i = 0; i < N; i++) {
    int k = ref_sel(sl_f16_to_f32(ha[i]), sl_f16_to_f32(hb[i]), 1);
    bad[2] += hd[i] != (k == 2 ? 0x7e00 : k ? hb[i] : ha[i]);
  }
  sl_binary(SL_FP16, SL_OP_MIN, hd, ha, hb, N);
  for (i = 0; i < N; i++) {
    int k = ref_sel(sl_f16_to_f32(ha[i]), sl_f16_to_f32(hb[i]), -1);
    bad[2] += hd[i] != (k == 2 ? 0x7e00 : k ? hb[i] : ha[i]);
  }
  memcpy(hd, ha, sizeof hd);
  sl_reduce(SL_BF16, SL_OP_ADD, hd, hb, N);
  for (i = 0; i < N; i++) bad[3] += hd[i] != ref_addb(ha[i], hb[i]);
  sl_binary(SL_BF16, SL_OP_MAX, hd, ha, hb, N);
  for (i = 0; i < N; i++) {
    int k = ref_sel(sl_bf16_to_f32(ha[i]), sl_bf16_to_f32(hb[i]), 1);
    bad[4] += hd[i] != (k == 2 ? 0x7fc0 : k ? hb[i] : ha[i]);
  }
  sl_binary(SL_BF16, SL_OP_MIN, hd, ha, hb, N);
  for (i = 0; i < N; i++) {
    int k = ref_sel(sl_bf16_to_f32(ha[i]), sl_bf16_to_f32(hb[i]), -1);
    bad[4] += hd[i] != (k == 2 ? 0x7fc0 : k ? hb[i] : ha[i]);
  }
  /* fp32 */
  memcpy(fd, fa, sizeof fd);
  sl_reduce(SL_FP32, SL_OP_ADD, fd, fb, N);
  for (i = 0; i < N; i++) {
    float r = fa[i] + fb[i];
    bad[5] += fbits(fd[i]) != (isnan(r) ? 0x7fc00000u : fbits(r));
  }
  sl_binary(SL_FP32, SL_OP_MAX, fd, fa, fb, N);
  for (i = 0; i < N; i++) {
    int k = ref_sel(fa[i], fb[i], 1);
    bad[6] += fbits(fd[i]) != (k == 2 ? 0x7fc00000u : fbits(k ? fb[i] : fa[i]));
  }
  sl_binary(SL_FP32, SL_OP_MIN, fd, fa, fb, N);
  for (i = 0; i < N; i++) {
    int k = ref_sel(fa[i], fb[i], -1);
    bad[6] += fbits(fd[i]) != (k == 2 ? 0x7fc00000u : fbits(k ? fb[i] : fa[i]));
  }
  /* int32 */
  memcpy(id, ia, sizeof id);
  sl_reduce(SL_INT32, SL_OP_ADD, id, ib, N);
  for (i = 0; i < N; i++)
    bad[7] += (uint32_t)id[i] != (uint32_t)ia[i] + (uint32_t)ib[i];
  memcpy(id, ia, sizeof id);
  sl_reduce(SL_INT32, SL_OP_MAX, id, ib, N);
  for (i = 0; i < N; i++) bad[7] += id[i] != (ia[i] > ib[i] ? ia[i] : ib[i]);
  /* in place dst == src, across several staging chunks */
  memcpy(id, ia, sizeof id);
  sl_reduce(SL_INT32, SL_OP_ADD, id, id, N);
  for (i = 0; i < N; i++) bad[8] += (uint32_t)id[i] != 2u * (uint32_t)ia[i];
  memcpy(hd, ha, sizeof hd);
  sl_reduce(SL_FP16, SL_OP_ADD, hd, hd, N);
  for (i = 0; i < N; i++) bad[8] += hd[i] != ref_addh(ha[i], ha[i]);
  memcpy(hd, ha, sizeof hd);
  sl_binary(SL_FP16, SL_OP_ADD, hd, hd, hd, N);
  for (i = 0; i < N; i++) bad[8] += hd[i] != ref_addh(ha[i], ha[i]);
  memcpy(fd, fa, sizeof fd);
  sl_reduce(SL_FP32, SL_OP_NONE, fd, fd, N);
  bad[8] += memcmp(fd, fa, sizeof fd) != 0;
  /* odd offsets / lengths around the 8-wide F16C body */
  for (i = 0; i < 20; i++) {
    size_t j, n = i;
    memcpy(hd, ha, sizeof hd);
    sl_reduce(SL_FP16, SL_OP_ADD, hd + i, hb + i, n);
    for (j = 0; j < 40; j++)
      bad[9] += hd[j] != (j >= i && j < i + n ? ref_addh(ha[j], hb[j]) : ha[j]);
  }
  CHECK(bad[0] == 0, "fp16 reduce add bulk: %d bad", bad[0]);
  CHECK(bad[1] == 0, "fp16 binary add bulk: %d bad", bad[1]);
  CHECK(bad[2] == 0, "fp16 max/min bulk: %d bad", bad[2]);
  CHECK(bad[3] == 0, "bf16 add bulk: %d bad", bad[3]);
  CHECK(bad[4] == 0, "bf16 max/min bulk: %d bad", bad[4]);
  CHECK(bad[5] == 0, "fp32 add bulk: %d bad", bad[5]);
  CHECK(bad[6] == 0, "fp32 max/min bulk: %d bad", bad[6]);
  CHECK(bad[7] == 0, "int32 bulk: %d bad", bad[7]);
  CHECK(bad[8] == 0, "in-place bulk: %d bad", bad[8]);
  CHECK(bad[9] == 0, "fp16 offsets/lengths: %d bad", bad[9]);
}


/* sl_muls */
static void t_muls (void) {
  {
    int32_t a[] = {1, -2, 0x40000000, 7, -7}, d[5];
    int32_t w4[] = {4, -8, 0, 28, -28}, wh[] = {0, -1, 0x20000000, 3, -3};
    sl_muls(SL_INT32, d, a, 4.0, 5);
    CHECK(memcmp(d, w4, sizeof d) == 0, "int32 * 4 wraps");
    sl_muls(SL_INT32, d, a, 0.5, 5);
    CHECK(memcmp(d, wh, sizeof d) == 0, "int32 * 0.5 truncates");
    sl_muls(SL_INT32, a, a, -1.0, 5);         /* in place */
    CHECK(a[0] == -1 && a[1] == 2 && a[2] == -0x40000000, "int32 in place");
  }
  {
    int8_t a[] = {100, -100, 3}, d[3];
    uint8_t u[] = {200, 1, 0}, ud[3];
    int16_t s[] = {30000, -2}, sd[2];
    int64_t l[] = {INT64_C(1) << 62, 3}, ld[2];
    sl_muls(SL_INT8, d, a, 3.0, 3);
    CHECK(d[0] == 44 && d[1] == -44 && d[2] == 9, "int8 * 3 wraps");
    sl_muls(SL_UINT8, ud, u, -1.0, 3);
    CHECK(ud[0] == 56 && ud[1] == 255 && ud[2] == 0, "uint8 * -1 wraps");
    sl_muls(SL_INT16, sd, s, 3.0, 2);
    CHECK(sd[0] == 90000 - 65536 && sd[1] == -6, "int16 * 3 wraps");
    sl_muls(SL_INT64, ld, l, 2.0, 2);
    CHECK(ld[0] == INT64_MIN && ld[1] == 6, "int64 * 2 wraps");
    sl_muls(SL_INT8, d, a, -1.5, 3);
    CHECK(d[0] == 106 && d[1] == -106 && d[2] == -4, "int8 * -1.5: %d %d %d",
          d[0], d[1], d[2]);   /* -150 wraps to 106 */
  }
  {
    enum { N = 1001 };
    static uint16_t a[N], d[N];
    static float fa[N], fd[N];
    uint64_t seed = 99;
    int bad = 0, badb = 0, badf = 0;
    size_t i;
    const double sc[] = {0.1, -3.0, 0.0, 1e30, 65504.0};
    size_t k;
    for (i = 0; i < N; i++) {
      a[i] = (uint16_t)rnd(&seed);
      fa[i] = bitsf((uint32_t)rnd(&seed));
    }
    for (k = 0; k < N_ELEMS(sc); k++) {
      float s = (float)sc[k];
      sl_muls(SL_FP16, d, a, sc[k], N);
      for (i = 0; i < N; i++) {
        float r = sl_f16_to_f32(a[i]) * s;
        bad += d[i] != (isnan(r) ? 0x7e00 : sl_f32_to_f16(r));
      }
      sl_muls(SL_BF16, d, a, sc[k], N);
      for (i = 0; i < N; i++) {
        float r = sl_bf16_to_f32(a[i]) * s;
        badb += d[i] != (isnan(r) ? 0x7fc0 : sl_f32_to_bf16(r));
      }
      sl_muls(SL_FP32, fd, fa, sc[k], N);
      for (i = 0; i < N; i++) {
        float r = fa[i] * s;
        badf += fbits(fd[i]) != (isnan(r) ? 0x7fc00000u : fbits(r));
      }
    }
    CHECK(bad == 0, "fp16 muls bulk: %d bad", bad);
    CHECK(badb == 0, "bf16 muls bulk: %d bad", badb);
    CHECK(badf == 0, "fp32 muls bulk: %d bad", badf);
  }
  {
    uint16_t h[] = {0x3c00, 0x3e00, 0x7bff, 0x7c00, 0x0001};
    const uint16_t w[] = {0x2e66, 0x30cd};
    float f[] = {3.0f, -0.5f};
    sl_muls(SL_FP16, h, h, 0.1, 4);           /* in place; inf * 0.1 = inf */
    CHECK(h[0] == w[0] && h[1] == w[1] && h[2] == 0x6e66 &&
          h[3] == 0x7c00, "fp16 * 0.1: %04x %04x %04x %04x",
          h[0], h[1], h[2], h[3]);
    h[0] = 0x7c00; h[1] = 0x7bff;
    sl_muls(SL_FP16, h, h, 0.0, 1);
    CHECK(h[0] == 0x7e00, "inf * 0 = canonical NaN");
    sl_muls(SL_FP16, h + 1, h + 1, 2.0, 1);
    CHECK(h[1] == 0x7c00, "65504 * 2 = inf");
    sl_muls(SL_FP32, f, f, 0.5, 2);
    CHECK(f[0] == 1.5f && f[1] == -0.25f, "fp32 muls");
  }
}


/* sl_cast samples */
static void t_cast (void) {
  {
    float f[] = {3.9f, -3.9f, NAN, 1e20f, -1e20f, 2147483648.0f, -0.5f,
                 300.5f, -129.0f, -1.0f};
    int32_t i32[10];
    int8_t i8[10];
    uint8_t u8[10];
    int64_t i64[10];
    sl_cast(SL_INT32, i32, SL_FP32, f, 10);
    CHECK(i32[0] == 3 && i32[1] == -3 && i32[2] == 0, "fp32->int32 trunc");
    CHECK(i32[3] == -1 && i32[4] == 0, "fp32->int32 clamp then wrap");
    CHECK(i32[5] == INT32_MIN && i32[6] == 0, "fp32->int32 2^31 wraps");
    sl_cast(SL_INT8, i8, SL_FP32, f, 10);
    CHECK(i8[7] == 44 && i8[8] == 127 && i8[9] == -1, "fp32->int8 wraps");
    sl_cast(SL_UINT8, u8, SL_FP32, f, 10);
    CHECK(u8[9] == 255 && u8[7] == 44, "fp32->uint8 wraps");
    sl_cast(SL_INT64, i64, SL_FP32, f, 10);
    CHECK(i64[3] == INT64_MAX && i64[4] == INT64_MIN && i64[5] ==
          INT64_C(2147483648), "fp32->int64 clamps");
  }
  {
    int32_t i[] = {2049, 2051, 70000, -65504, 16842753, 0, -1, 65519};
    uint16_t h[8], b[8];
    sl_cast(SL_FP16, h, SL_INT32, i, 8);
    CHECK(h[0] == 0x6800 && h[1] == 0x6802 && h[2] == 0x7c00 &&
          h[3] == 0xfbff && h[5] == 0 && h[6] == 0xbc00 && h[7] == 0x7bff,
          "int32->fp16");
    sl_cast(SL_BF16, b, SL_INT32, i, 8);
    /* 2^24 + 2^16 + 1: via fp32 it would be a tie and round to 0x4b80 */
    CHECK(b[4] == 0x4b81, "int32->bf16 single rounding: %04x", b[4]);
  }
  {
    int64_t l[] = {(INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, 0x1ff,
                   INT64_MIN, -3};
    uint16_t b[4];
    int8_t i8[4];
    float f[4];
    int16_t s[4];
    sl_cast(SL_BF16, b, SL_INT64, l, 4);
    CHECK(b[0] == 0x5d81 && b[2] == 0xdf00 && b[3] == 0xc040,
          "int64->bf16: %04x %04x %04x", b[0], b[2], b[3]);
    sl_cast(SL_INT8, i8, SL_INT64, l, 4);
    CHECK(i8[1] == -1 && i8[2] == 0 && i8[3] == -3, "int64->int8 wraps");
    sl_cast(SL_FP32, f, SL_INT64, l, 4);
    CHECK(f[2] == -0x1p63f && f[3] == -3.0f, "int64->fp32");
    sl_cast(SL_INT16, s, SL_INT64, l, 4);
    CHECK(s[1] == 0x1ff && s[3] == -3, "int64->int16");
  }
  {
    uint8_t u[] = {200, 0, 255};
    int8_t i[] = {-1, -128, 127};
    int8_t i8[3];
    uint8_t u8[3];
    int64_t l[3];
    int32_t w[3];
    sl_cast(SL_INT8, i8, SL_UINT8, u, 3);
    CHECK(i8[0] == -56 && i8[2] == -1, "uint8->int8");
    sl_cast(SL_UINT8, u8, SL_INT8, i, 3);
    CHECK(u8[0] == 255 && u8[1] == 128, "int8->uint8");
    sl_cast(SL_INT64, l, SL_INT8, i, 3);
    CHECK(l[0] == -1 && l[1] == -128, "int8->int64 sign-extends");
    sl_cast(SL_INT32, w, SL_UINT8, u, 3);
    CHECK(w[0] == 200 && w[2] == 255, "uint8->int32 zero-extends");
  }
  {
    uint16_t h[] = {0x3c01, 0xfbff, 0x7e00, 0x0001, 0x5bd0};
    uint16_t b[] = {0x4780, 0x3f81, 0x5f00, 0xff80, 0x0001};
    uint16_t o[5];
    int32_t i[5];
    int64_t l[5];
    float f[5];
    sl_cast(SL_BF16, o, SL_FP16, h, 5);
    CHECK(o[0] == 0x3f80 && o[1] == 0xc780 && o[2] == 0x7fc0 &&
          o[3] == 0x3380, "fp16->bf16: %04x %04x %04x %04x",
          o[0], o[1], o[2], o[3]);
    sl_cast(SL_FP16, o, SL_BF16, b, 5);
    CHECK(o[0] == 0x7c00 && o[1] == 0x3c08 && o[3] == 0xfc00 && o[4] == 0,
          "bf16->fp16");
    sl_cast(SL_INT32, i, SL_FP16, h, 5);
    CHECK(i[1] == -65504 && i[2] == 0 && i[4] == 250, "fp16->int32");
    sl_cast(SL_INT64, l, SL_BF16, b, 5);
    CHECK(l[0] == 65536 && l[2] == INT64_MAX && l[3] == INT64_MIN,
          "bf16->int64 clamps");
    sl_cast(SL_FP32, f, SL_BF16, b, 5);
    CHECK(f[1] == 1.0078125f, "bf16->fp32");
    sl_cast(SL_FP16, o, SL_FP16, h, 5);
    CHECK(memcmp(o, h, sizeof o) == 0, "same dtype copies");
  }
}


/* sl_fill_pattern */
static void t_fill (void) {
  enum { N = 10000 };
  static int32_t a[N], b[N];
  static uint16_t h[N];
  size_t i;
  int ok;
  {
    int16_t s[5];
    int8_t c[3];
    uint16_t x[3];
    sl_fill_pattern(SL_INT16, s, 5, SL_FILL_CONST, -3, 0, 0, 0);
    CHECK(s[0] == -3 && s[4] == -3, "const int16");
    sl_fill_pattern(SL_INT8, c, 3, SL_FILL_CONST, 300, 0, 0, 0);
    CHECK(c[0] == 127 && c[2] == 127, "const int8 saturates");
    sl_fill_pattern(SL_INT8, c, 3, SL_FILL_CONST, -1e300, 0, 0, 0);
    CHECK(c[0] == -128 && c[2] == -128, "const int8 saturates below");
    sl_fill_pattern(SL_INT32, a, 3, SL_FILL_CONST, 1.0 / 0.0, 0, 0, 0);
    CHECK(a[0] == INT32_MAX && a[2] == INT32_MAX, "const int32 inf saturates");
    sl_fill_pattern(SL_FP16, x, 3, SL_FILL_CONST, 0.1, 0, 0, 0);
    CHECK(x[0] == 0x2e66 && x[2] == 0x2e66, "const fp16 rounds");
  }
  sl_fill_pattern(SL_INT32, a, 10, SL_FILL_IOTA, 5, 3, 0, 0);
  for (ok = 1, i = 0; i < 10; i++) ok &= a[i] == 5 + 3 * (int32_t)i;
  CHECK(ok, "iota int32");
  sl_fill_pattern(SL_INT32, b, 4, SL_FILL_IOTA, 5, 3, 0, 0);
  sl_fill_pattern(SL_INT32, b + 4, 6, SL_FILL_IOTA, 5, 3, 0, 4);
  CHECK(memcmp(a, b, 10 * 4) == 0, "iota continues with base");
  sl_fill_pattern(SL_INT32, b, 3, SL_FILL_IOTA, 0, 1, 0, -3);
  CHECK(b[0] == -3 && b[2] == -1, "iota negative base");
  {
    int8_t c[16];
    int64_t l[4];
    uint8_t u[4];
    float f[4];
    sl_fill_pattern(SL_INT8, c, 16, SL_FILL_IOTA, 120, 1, 0, 0);
    CHECK(c[7] == 127 && c[8] == -128 && c[15] == -121, "iota int8 wraps");
    sl_fill_pattern(SL_INT64, l, 4, SL_FILL_IOTA, 0x1p62, 0x1p62, 0, 0);
    CHECK(l[0] == INT64_C(1) << 62 && l[1] == INT64_MIN &&
          l[2] == -(INT64_C(1) << 62) && l[3] == 0, "iota int64 wraps");
    sl_fill_pattern(SL_INT64, l, 2, SL_FILL_IOTA, 0x1p53, 1, 0, 0);
    CHECK(l[1] == INT64_C(9007199254740993), "iota int64 exact past 2^53");
    sl_fill_pattern(SL_UINT8, u, 4, SL_FILL_IOTA, 250, 3, 0, 1);
    CHECK(u[0] == 253 && u[1] == 0 && u[3] == 6, "iota uint8 wraps");
    sl_fill_pattern(SL_FP32, f, 4, SL_FILL_IOTA, 0.5, 0.25, 0, 2);
    CHECK(f[0] == 1.0f && f[3] == 1.75f, "iota fp32");
    sl_fill_pattern(SL_INT32, a, 4, SL_FILL_IOTA, 0.5, 0.5, 0, 0);
    CHECK(a[0] == 0 && a[1] == 1 && a[2] == 1 && a[3] == 2,
          "iota int32 non-integral truncates");
  }
  sl_fill_pattern(SL_FP16, h, 3000, SL_FILL_IOTA, 0, 1, 0, 0);
  for (ok = 1, i = 0; i <= 2048; i++) ok &= sl_f16_to_f32(h[i]) == (float)i;
  CHECK(ok, "iota fp16 exact to 2048");
  CHECK(h[2049] == 0x6800 && h[2050] == 0x6801 && h[2051] == 0x6802,
        "iota fp16 rounds to even");
  /* random */
  sl_fill_pattern(SL_INT32, a, N, SL_FILL_RANDOM, -5, 5, 42, 0);
  {
    int cnt[11] = {0}, inr = 1, uni = 1;
    for (i = 0; i < N; i++) {
      if (a[i] < -5 || a[i] > 5) inr = 0;
      else cnt[a[i] + 5]++;
    }
    for (i = 0; i < 11; i++) uni &= cnt[i] > 800 && cnt[i] < 1020;
    CHECK(inr, "random within [a, b]");
    CHECK(uni, "random roughly uniform (%d .. %d)", cnt[0], cnt[10]);
  }
  sl_fill_pattern(SL_INT32, b, N, SL_FILL_RANDOM, -5, 5, 42, 0);
  CHECK(memcmp(a, b, sizeof a) == 0, "random reproducible");
  sl_fill_pattern(SL_INT32, b, 100, SL_FILL_RANDOM, -5, 5, 42, 1234);
  CHECK(memcmp(a + 1234, b, 100 * 4) == 0, "random sub-range reproduces");
  sl_fill_pattern(SL_INT32, b, 100, SL_FILL_RANDOM, 5, -5, 42, 1234);
  CHECK(memcmp(a + 1234, b, 100 * 4) == 0, "random a > b swaps");
  sl_fill_pattern(SL_INT32, b, N, SL_FILL_RANDOM, -5, 5, 43, 0);
  CHECK(memcmp(a, b, sizeof a) != 0, "random depends on seed");
  sl_fill_pattern(SL_FP16, h, N, SL_FILL_RANDOM, -2048, 2048, 7, 0);
  {
    int exact = 1, lo = 0, hi = 0;
    for (i = 0; i < N; i++) {
      float v = sl_f16_to_f32(h[i]);
      exact &= v == floorf(v) && v >= -2048.0f && v <= 2048.0f;
      lo |= v < -1500.0f;
      hi |= v > 1500.0f;
    }
    CHECK(exact && lo && hi, "random fp16 integers in [-2048, 2048]");
  }
  {
    int64_t l[64];
    int8_t c[64];
    int any_neg = 0, all_one = 1;
    sl_fill_pattern(SL_INT64, l, 64, SL_FILL_RANDOM, -0x1p63, 0x1p63, 1, 0);
    for (i = 0; i < 64; i++) any_neg |= l[i] < 0;
    CHECK(any_neg, "random full int64 range");
    sl_fill_pattern(SL_INT8, c, 64, SL_FILL_RANDOM, 0.2, 0.7, 1, 0);
    for (i = 0; i < 64; i++) all_one &= c[i] == 1;
    CHECK(all_one, "random empty integer range -> ceil(min)");
    sl_fill_pattern(SL_INT8, c, 64, SL_FILL_RANDOM, 3, 3, 1, 0);
    for (all_one = 1, i = 0; i < 64; i++) all_one &= c[i] == 3;
    CHECK(all_one, "random a == b");
  }
}


/* sl_compare */
static void t_compare (void) {
  enum { N = 10000 };
  static int32_t a[N], b[N];
  size_t first = 777, n;
  {
    float e[] = {1.0f, NAN, 0.0f, 3.0f, INFINITY, 5.0f};
    float x[6];
    memcpy(x, e, sizeof x);
    x[1] = bitsf(0xffc00001u);              /* another NaN */
    x[2] = -0.0f;
    n = sl_compare(SL_FP32, e, x, 6, &first);
    CHECK(n == 0 && first == 777, "NaN == NaN, +0 == -0, first unchanged");
    x[3] = 4.0f;
    x[4] = NAN;
    n = sl_compare(SL_FP32, e, x, 6, &first);
    CHECK(n == 2 && first == 3, "fp32 differ: n=%zu first=%zu", n, first);
  }
  {
    uint16_t e[] = {0x7e00, 0x0000, 0x3c00, 0x7c00, 0x7f80, 0x0001};
    uint16_t x[] = {0x7c01, 0x8000, 0x3c00, 0x7e00, 0x7f81, 0x8001};
    first = 777;
    n = sl_compare(SL_FP16, e, x, 6, &first);
    CHECK(n == 2 && first == 3, "fp16 compare: n=%zu first=%zu", n, first);
    first = 777;
    n = sl_compare(SL_BF16, e, x, 6, &first);
    /* bf16: 0x7e00/0x7c01 are finite and differ; 0x7c00 vs 0x7e00 too */
    CHECK(n == 4 && first == 0, "bf16 compare: n=%zu first=%zu", n, first);
    first = 777;
    n = sl_compare(SL_INT16, e, x, 6, &first);
    CHECK(n == 5 && first == 0, "int16 compares bits");
  }
  {
    int8_t e[] = {1, 2, 3, -4}, x[] = {1, 2, 3, 4};
    first = 0;
    n = sl_compare(SL_INT8, e, x, 4, &first);
    CHECK(n == 1 && first == 3, "int8 compare");
    n = sl_compare(SL_INT8, e, x, 3, NULL);
    CHECK(n == 0, "NULL first");
  }
  sl_fill_pattern(SL_INT32, a, N, SL_FILL_RANDOM, -1000, 1000, 5, 0);
  memcpy(b, a, sizeof b);
  b[9000]++;
  b[5000]--;
  b[9999]++;
  n = sl_compare(SL_INT32, a, b, N, &first);
  CHECK(n == 3 && first == 5000, "long compare: n=%zu first=%zu", n, first);
  n = sl_compare(SL_INT64, a, b, N / 2, &first);
  CHECK(n == 3 && first == 2500, "int64 view: n=%zu first=%zu", n, first);
}


/* sl_checksum: XXH64 vectors, bit flips, chaining */
static void t_checksum (void) {
  static const struct { const char *s; uint64_t seed, h; } v[] = {
    {"", 0, UINT64_C(0xef46db3751d8e999)},
    {"", 1, UINT64_C(0xd5afba1336a3be4b)},
    {"a", 0, UINT64_C(0xd24ec4f1a98c6e5b)},
    {"abc", 0, UINT64_C(0x44bc2cf5ad770999)},
    {"asdf", 0, UINT64_C(0x415872f599cea71e)},
    {"Call me Ishmael.", 0, UINT64_C(0x6d04390fc9d61a90)},
    {"Nobody inspects the spammish repetition", 0,
     UINT64_C(0xfbcea83c8a378bf1)}
  };
  unsigned char buf[200];
  uint64_t seed = 3, base, h1, h2;
  size_t i, len, bit;
  int differ = 1;
  for (i = 0; i < N_ELEMS(v); i++)
    CHECK(sl_checksum(v[i].s, strlen(v[i].s), v[i].seed) == v[i].h,
          "xxh64 vector %zu: %016llx", i,
          (unsigned long long)sl_checksum(v[i].s, strlen(v[i].s), v[i].seed));
  CHECK(sl_checksum(NULL, 0, 0) == UINT64_C(0xef46db3751d8e999), "NULL, 0");
  for (i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)rnd(&seed);
  for (len = 1; len <= 100; len += (len < 40 ? 1 : 13)) {
    base = sl_checksum(buf, len, 0);
    for (bit = 0; bit < len * 8; bit++) {
      buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
      differ &= sl_checksum(buf, len, 0) != base;
      buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    differ &= sl_checksum(buf, len, 0) == base;
    differ &= sl_checksum(buf, len - 1, 0) != base;
  }
  CHECK(differ, "every one-bit change changes the digest");
  h1 = sl_checksum(buf, 100, 0);
  h2 = sl_checksum(buf + 100, 100, h1);
  CHECK(h2 == sl_checksum(buf + 100, 100, sl_checksum(buf, 100, 0)),
        "chaining deterministic");
  CHECK(h2 != sl_checksum(buf + 100, 100, 0), "chaining uses the seed");
  buf[3] ^= 1;
  CHECK(sl_checksum(buf + 100, 100, sl_checksum(buf, 100, 0)) != h2,
        "chain sees a change in the first part");
}


/* invalid arguments are ignored */
static void t_invalid (void) {
  int32_t a[2] = {1, 2}, b[2] = {3, 4};
  sl_reduce(SL_NDTYPES, SL_OP_ADD, a, b, 2);
  sl_reduce(SL_INT32, (sl_op)9, a, b, 2);
  sl_binary(SL_NDTYPES, SL_OP_ADD, a, a, b, 2);
  sl_muls(SL_NDTYPES, a, a, 2.0, 2);
  sl_cast(SL_NDTYPES, a, SL_INT32, b, 2);
  sl_fill_pattern(SL_NDTYPES, a, 2, SL_FILL_CONST, 0, 0, 0, 0);
  sl_fill_pattern(SL_INT32, a, 2, (sl_fill)9, 0, 0, 0, 0);
  sl_reduce(SL_INT32, SL_OP_ADD, NULL, NULL, 0);
  CHECK(a[0] == 1 && a[1] == 2, "invalid arguments ignored");
  CHECK(sl_compare(SL_NDTYPES, a, b, 2, NULL) == 0, "compare invalid");
}


/* Abs, ReduceMax, Cast(CAST_RINT) and the INT8 token quantisation */
static void t_quant (void) {
  int8_t i8[4] = { -128, -127, 3, 0 }, q8[11];
  float f[11] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 126.6f, 300.0f, -300.0f, 0, 0, -2.5f };
  float r = 7, fa[3];
  uint16_t h[3] = { 0x7800u, 0xf800u, 0x4100u };            /* 32768, -32768, 2.5 */
  int16_t o16[3];
  uint32_t u;
  unsigned seed = 12345u;
  int k, bad = 0;
  f[8] = bitsf(0xffc00000u);                                 /* a negative NaN */
  f[9] = INFINITY;
  sl_abs(SL_INT8, i8, i8, 4);
  CHECK(i8[0] == -128 && i8[1] == 127 && i8[2] == 3, "abs int8 wraps at the minimum");
  sl_abs(SL_FP32, fa, f + 7, 3);
  CHECK(fa[0] == 300.0f && fbits(fa[1]) == 0x7fc00000u && fa[2] == INFINITY, "abs fp32");
  sl_cast_rint(SL_INT8, q8, SL_FP32, f, 11);
  CHECK(q8[0] == 0 && q8[1] == 2 && q8[2] == 2 && q8[3] == 0 && q8[4] == -2, "rint ties even");
  CHECK(q8[5] == 127 && q8[6] == 127 && q8[7] == -128 && q8[8] == 0 && q8[9] == 127 &&
        q8[10] == -2, "rint saturates, NaN -> 0");
  sl_cast_rint(SL_INT16, o16, SL_FP16, h, 3);
  CHECK(o16[0] == 32767 && o16[1] == -32768 && o16[2] == 2, "rint fp16 -> int16");
  sl_reduce_max(SL_FP32, &r, f, 8);
  CHECK(r == 300.0f, "reduce_max fp32");
  sl_reduce_max(SL_FP32, &r, f, 9);
  CHECK(r != r, "reduce_max: a NaN wins");
  r = 7;
  sl_reduce_max(SL_FP32, &r, f, 0);
  sl_reduce_max(SL_NDTYPES, &r, f, 2);
  CHECK(r == 7, "reduce_max of nothing writes nothing");
  for (k = 0; k < 2000; k++) {                               /* random rows of bf16 */
    uint16_t x[67];
    int8_t q[67];
    float scale, amax = 0;
    int j;
    for (j = 0; j < 67; j++) {
      seed = seed * 1103515245u + 12345u;
      u = seed >> 8;                          /* sign, exponent 2^-15..2^16, mantissa */
      x[j] = (uint16_t)((u & 0x8000u) | ((0x70u + (u >> 16) % 32u) << 7) | (u & 0x7fu));
      if (fabsf(sl_bf16_to_f32(x[j])) > amax) amax = fabsf(sl_bf16_to_f32(x[j]));
    }
    sl_quant_int8(SL_BF16, x, 67, q, &scale);
    /* half a step, plus the fp32 roundings of x * inv and inv * scale != 1 */
    for (j = 0; j < 67; j++) {
      double v = (double)sl_bf16_to_f32(x[j]);
      if (q[j] < -127 ||
          fabs((double)q[j] * (double)scale - v) > (0.5 + 0x1p-15) * (double)scale)
        bad++;
    }
    if (fabs((double)scale - (double)amax / 127) > (double)amax / 127 * 0x1p-22) bad++;
  }
  CHECK(bad == 0, "quant_int8: %d rows off by more than half a step", bad);
}


int main (void) {
  const char *full = getenv("SL_TEST_FULL");
  t_names();
  t_f16_all();
  t_f32_sweep(full != NULL && full[0] == '1');
  t_round_cases();
  t_access();
  t_reduce_small();
  t_reduce_bulk();
  t_muls();
  t_cast();
  t_fill();
  t_compare();
  t_checksum();
  t_invalid();
  t_quant();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail != 0;
}
