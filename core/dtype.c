/*
** dtype.c -- element types and every element loop of shmemlab
** (conversions, reductions, vector ops, fill patterns, compare, checksum).
** Plain C11 + libm; knows nothing of Lua.  See dtype.h for the contract.
**
** Conventions shared by every loop below:
** - one switch on dtype/op outside the element loop; the loops are
**   simple, use restrict pointers, and this file is compiled at -O3 by
**   the pragma below (gcc does not vectorise them at -O2);
** - on x86 each kernel also has an AVX2 clone, and fp16 add/muls and the
**   fp16 <-> fp32 casts have F16C versions, chosen at run time with
**   __builtin_cpu_supports; results are bit-identical to the portable
**   loops (tested).  -DSL_NO_F16C builds the portable loops only;
** - integer arithmetic is done on unsigned types (wraps modulo 2^bits,
**   no signed-overflow UB); integer buffers are accessed through their
**   unsigned variant, which C allows;
** - fp16/bf16 arithmetic is done in fp32 and rounded once (nearest even)
**   to the storage type, like the Ascend MTE atomic unit and vector unit;
** - NaN: max/min return NaN when either operand is NaN (IEEE 754-2019
**   maximum/minimum, with -0 < +0); any NaN that an arithmetic op
**   (add/max/min/muls) produces on a float dtype is stored as the
**   canonical quiet NaN (fp32 0x7fc00000, fp16 0x7e00, bf16 0x7fc0), so
**   results (and checksums) do not depend on which operand's payload the
**   host FPU propagates.  Conversions (sl_cast, sl_f32_to_f16, ...) keep
**   the sign and top payload bits and set the quiet bit instead;
** - everything assumes the default floating-point environment (round to
**   nearest even, no flush-to-zero), as C programs start with.
*/

#include <math.h>
#include <string.h>

#include "dtype.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF   /* no fma: same rounding everywhere (gcc: off
                                  already under -std=c11) */
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && \
    !defined(SL_NO_F16C)
#define SL_F16C 1
#include <immintrin.h>
#else
#define SL_F16C 0
#endif

#define QNAN32  0x7fc00000u
#define QNAN16  0x7e00u
#define QNANBF  0x7fc0u

#define TWO63   9223372036854775808.0
#define TWO64   18446744073709551616.0

/* elements staged per chunk when a kernel's operands alias (4 KiB) */
#define STAGEW  512

/* staging buffer, typed for every element type the kernels read */
typedef union {
  uint64_t q[STAGEW];
  uint32_t w[STAGEW * 2];
  uint16_t h[STAGEW * 4];
  float f[STAGEW * 2];
  double d[STAGEW];
} sl_stage;


/*
** {======================================================
** Type table
** =======================================================
*/

/* 1 for the floating-point KINDs of SL_DTYPE_LIST */
#define ISFLOAT_INT   0
#define ISFLOAT_FP16  1
#define ISFLOAT_BF16  1
#define ISFLOAT_FP32  1
#define ISFLOAT_FP64  1

#define INFOROW(TAG, name, T, U, KIND)  { name, sizeof(T), ISFLOAT_##KIND },
const sl_dtype_info sl_dtypes[SL_NDTYPES] = { SL_DTYPE_LIST(INFOROW) };
#undef INFOROW

static const struct { const char *name; sl_dtype t; } dt_alias[] = {
  {"float16", SL_FP16}, {"half", SL_FP16}, {"bfloat16", SL_BF16},
  {"float32", SL_FP32}, {"float", SL_FP32}, {"float64", SL_FP64}, {"double", SL_FP64}
};


/* 1 when t is a valid dtype */
static int dt_ok (sl_dtype t) {
  return (unsigned)t < (unsigned)SL_NDTYPES;
}


/* canonical name ("?" for an invalid dtype) */
const char *sl_dtype_name (sl_dtype t) {
  return dt_ok(t) ? sl_dtypes[t].name : "?";
}


/* dtype of a name or alias, -1 when unknown (case sensitive) */
int sl_dtype_find (const char *name) {
  size_t i;
  if (name == NULL) return -1;
  for (i = 0; i < (size_t)SL_NDTYPES; i++)
    if (strcmp(name, sl_dtypes[i].name) == 0) return (int)i;
  for (i = 0; i < sizeof(dt_alias) / sizeof(dt_alias[0]); i++)
    if (strcmp(name, dt_alias[i].name) == 0) return (int)dt_alias[i].t;
  return -1;
}


/* }====================================================== */


/*
** {======================================================
** Scalar conversions (branch-free, so the loops using them vectorise)
** =======================================================
*/

/* bits of a float */
static inline uint32_t f2u (float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}


/* float of bits */
static inline float u2f (uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}


/* all ones when c is nonzero, else zero (branch-free select mask) */
static inline uint32_t msk (int c) {
  return 0u - (uint32_t)(c != 0);
}


/* fp16 -> fp32, exact; a signalling NaN comes back quiet (as F16C does).
** The w ("word") forms keep 16-bit values in 32-bit integers so that
** vectorised code stays in 32-bit lanes; compares are signed on values
** below 2^31, which SSE2 has. */
static inline float h2fw (uint32_t h) {
  uint32_t em = h & 0x7fffu;
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t nrm = (em << 13) + (112u << 23);            /* rebias 15 -> 127 */
  uint32_t inf = ((em << 13) + (224u << 23)) |         /* exponent 255 */
                 (msk((int32_t)em > 0x7c00) & 0x00400000u);   /* quiet */
  /* subnormal: 2^-14 * (1 + m/1024) - 2^-14, exact */
  uint32_t sub = f2u(u2f(nrm + (1u << 23)) - 0x1p-14f);
  uint32_t mi = msk((int32_t)em > 0x7bff), ms = msk((int32_t)em < 0x0400);
  uint32_t r = (inf & mi) | (sub & ms) | (nrm & ~(mi | ms));
  return u2f(r | sign);
}


/* fp32 -> fp16 bits, nearest even; overflow -> Inf, NaN stays NaN (quiet,
** sign and top payload bits kept, as vcvtps2ph does) */
static inline uint32_t f2hw (float f) {
  uint32_t x = f2u(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  int32_t sa = (int32_t)a;
  /* |f| >= 65536, Inf, NaN */
  uint32_t big = (msk(sa > 0x7f800000) & (QNAN16 | ((a >> 13) & 0x3ffu))) |
                 (~msk(sa > 0x7f800000) & 0x7c00u);
  /* |f| < 2^-14: adding 0.5 makes the FPU round at 2^-24, the fp16 ulp */
  uint32_t sub = f2u(u2f(a) + 0.5f) - 0x3f000000u;
  /* normal: rebias, then add half an ulp minus one plus the lsb (ties even);
     a carry into the exponent is right, up to 0x7c00 (Inf) */
  uint32_t nrm = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  uint32_t mb = msk(sa > 0x477fffff), ms = msk(sa < 0x38800000);
  uint32_t r = (big & mb) | (sub & ms) | (nrm & ~(mb | ms));
  return r | sign;
}


/* fp16 -> fp32 */
static inline float h2f (uint16_t h) {
  return h2fw(h);
}


/* fp32 -> fp16 */
static inline uint16_t f2h (float f) {
  return (uint16_t)f2hw(f);
}


/* bf16 -> fp32, exact (the top half of the fp32 bits) */
static inline float b2f (uint16_t h) {
  return u2f((uint32_t)h << 16);
}


/* fp32 -> bf16, nearest even; NaN stays NaN (quiet) */
static inline uint16_t f2b (float f) {
  uint32_t x = f2u(f);
  uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t n = (x >> 16) | 0x0040u;
  return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? n : r);
}


/* fp32 arithmetic result with a canonical NaN */
static inline float canf (float r) {
  return r != r ? u2f(QNAN32) : r;
}


/* fp32 arithmetic result -> fp16 bits with a canonical NaN (tested on
** the fp16 bits: a float test would put f2h under a branch, which gcc
** then does not vectorise) */
static inline uint32_t f2hcw (float r) {
  uint32_t h = f2hw(r);
  return (int32_t)(h & 0x7fffu) > 0x7c00 ? QNAN16 : h;
}


/* fp32 arithmetic result -> bf16 bits with a canonical NaN */
static inline uint32_t f2bcw (float r) {
  uint32_t x = f2u(r);
  uint32_t h = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return (int32_t)(x & 0x7fffffffu) > 0x7f800000 ? QNANBF : h;
}


/* double -> fp32 rounded to odd, so one more rounding to fp16/bf16
** (at least two bits narrower) gives the correctly rounded double */
static float d2fodd (double d) {
  float f = (float)d;
  if ((double)f != d && d == d) {
    uint32_t u = f2u(f);
    if (fabs((double)f) > fabs(d)) u--;   /* rounded away: truncate */
    f = u2f(u | 1u);                      /* sticky bit */
  }
  return f;
}


/* double -> fp16, nearest even, single rounding */
static uint16_t d2h (double d) {
  return f2h(d2fodd(d));
}


/* double -> bf16, nearest even, single rounding */
static uint16_t d2b (double d) {
  return f2b(d2fodd(d));
}


/* int64 -> double rounded to odd (exact below 2^53) */
static double i2dodd (int64_t v) {
  uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
  int sh = 0;
  double d;
  while ((u >> sh) >= (UINT64_C(1) << 53)) sh++;
  if (sh > 0) {
    uint64_t lost = u & ((UINT64_C(1) << sh) - 1u);
    u = (u >> sh) | (lost != 0u);
  }
  d = ldexp((double)u, sh);
  return v < 0 ? -d : d;
}


/* uint64 -> double rounded to odd (as i2dodd), for the values beyond int64 */
static double u2dodd (uint64_t u) {
  if (u < (UINT64_C(1) << 63)) return i2dodd((int64_t)u);
  return 2.0 * i2dodd((int64_t)((u >> 1) | (u & 1u)));
}


/* int64 -> bf16, nearest even, single rounding */
static uint16_t i2b (int64_t v) {
  return d2b(i2dodd(v));
}


/* int64 -> fp16: fp32 is exact below 2^24 and anything above is Inf */
static inline uint16_t i2h (int64_t v) {
  return f2h((float)v);
}


/* double -> int64: truncate toward zero, clamp to the int64 range, NaN -> 0 */
static inline int64_t d2i (double v) {
  if (v != v) return 0;
  if (v >= TWO63) return INT64_MAX;
  if (v <= -TWO63) return INT64_MIN;
  return (int64_t)v;
}


/* double -> uint64: as d2i below 2^63 (so negatives wrap as before), the
** value itself up to 2^64 - 1 beyond */
static inline uint64_t d2u (double v) {
  if (v >= TWO63) return v >= TWO64 ? UINT64_MAX : (uint64_t)v;
  return (uint64_t)d2i(v);
}


/* fp32 -> int64, as d2i */
static inline int64_t f2i (float v) {
  return d2i((double)v);
}


/* uint64 bits -> int64 value (two's complement), without
** implementation-defined conversion */
static inline int64_t u2i (uint64_t u) {
  return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}


/* fp16 -> fp32 (public, portable path) */
float sl_f16_to_f32 (uint16_t h) {
  return h2f(h);
}


/* fp32 -> fp16 (public, portable path) */
uint16_t sl_f32_to_f16 (float f) {
  return f2h(f);
}


/* bf16 -> fp32 (public) */
float sl_bf16_to_f32 (uint16_t h) {
  return b2f(h);
}


/* fp32 -> bf16 (public) */
uint16_t sl_f32_to_bf16 (float f) {
  return f2b(f);
}

/* }====================================================== */


/*
** {======================================================
** Element operators: x = first operand (dst for sl_reduce), y = second.
** Float max/min compare total-order keys of the bits (-0 < +0), which
** is exact, so fp16/bf16 need no trip through fp32; NaN wins (canonical).
** =======================================================
*/

#define OADD(x,y)  ((x) + (y))
#define OMAX(x,y)  ((x) > (y) ? (x) : (y))
#define OMIN(x,y)  ((x) < (y) ? (x) : (y))

/* total-order key of fp32 bits: flip all bits of negatives, the sign of
** positives; then unsigned order is value order */
static inline uint32_t key32 (uint32_t u) {
  return u ^ ((0u - (u >> 31)) | 0x80000000u);
}


/* total-order key of fp16/bf16 bits */
static inline uint16_t key16 (uint16_t u) {
  return (uint16_t)(u ^ (((0u - ((unsigned)u >> 15)) & 0xffffu) | 0x8000u));
}


/* fp32 add, canonical NaN */
static inline float addf (float x, float y) {
  return canf(x + y);
}


/* fp32 max: NaN if either is NaN, else the larger (+0 > -0) */
static inline float maxf (float x, float y) {
  uint32_t ux = f2u(x), uy = f2u(y);
  uint32_t r = key32(ux) >= key32(uy) ? ux : uy;
  int isn = ((ux & 0x7fffffffu) > 0x7f800000u) | ((uy & 0x7fffffffu) > 0x7f800000u);
  return u2f(isn ? QNAN32 : r);
}


/* fp32 min: NaN if either is NaN, else the smaller (-0 < +0) */
static inline float minf (float x, float y) {
  uint32_t ux = f2u(x), uy = f2u(y);
  uint32_t r = key32(ux) <= key32(uy) ? ux : uy;
  int isn = ((ux & 0x7fffffffu) > 0x7f800000u) | ((uy & 0x7fffffffu) > 0x7f800000u);
  return u2f(isn ? QNAN32 : r);
}


/* fp64 max / min by the fp32 rules: NaN if either is, else the larger
** (smaller), +0 above -0 */
static inline uint64_t key64 (uint64_t u) {
  return u ^ ((UINT64_C(0) - (u >> 63)) | (UINT64_C(1) << 63));
}
static inline double maxd (double x, double y) {
  uint64_t ux, uy;
  memcpy(&ux, &x, 8);
  memcpy(&uy, &y, 8);
  if (x != x || y != y) return x + y;
  return key64(ux) >= key64(uy) ? x : y;
}
static inline double mind (double x, double y) {
  uint64_t ux, uy;
  memcpy(&ux, &x, 8);
  memcpy(&uy, &y, 8);
  if (x != x || y != y) return x + y;
  return key64(ux) <= key64(uy) ? x : y;
}
#define addd(x, y)  ((x) + (y))


/* fp16 add in fp32, rounded once (word form, see h2fw) */
static inline uint32_t addhw (uint32_t x, uint32_t y) {
  return f2hcw(h2fw(x) + h2fw(y));
}


/* fp16 add in fp32, rounded once */
static inline uint16_t addh (uint16_t x, uint16_t y) {
  return (uint16_t)addhw(x, y);
}


/* max (want_max) or min of two 16-bit floats by exact selection, where the
** format's infinity is inf (magnitude bits) and a NaN gives qnan */
static inline uint16_t sel16 (uint16_t x, uint16_t y, int want_max, uint32_t inf,
                              uint16_t qnan) {
  uint16_t r = (want_max ? key16(x) >= key16(y) : key16(x) <= key16(y)) ? x : y;
  int isn = ((x & 0x7fffu) > inf) | ((y & 0x7fffu) > inf);
  return isn ? qnan : r;
}


/* fp16 max (exact selection) */
static inline uint16_t maxh (uint16_t x, uint16_t y) {
  return sel16(x, y, 1, 0x7c00u, (uint16_t)QNAN16);
}


/* fp16 min (exact selection) */
static inline uint16_t minh (uint16_t x, uint16_t y) {
  return sel16(x, y, 0, 0x7c00u, (uint16_t)QNAN16);
}


/* bf16 add in fp32, rounded once (word form) */
static inline uint32_t addbw (uint32_t x, uint32_t y) {
  return f2bcw(u2f(x << 16) + u2f(y << 16));
}


/* bf16 add in fp32, rounded once */
static inline uint16_t addb (uint16_t x, uint16_t y) {
  return (uint16_t)addbw(x, y);
}


/* bf16 max (exact selection) */
static inline uint16_t maxb (uint16_t x, uint16_t y) {
  return sel16(x, y, 1, 0x7f80u, (uint16_t)QNANBF);
}


/* bf16 min (exact selection) */
static inline uint16_t minb (uint16_t x, uint16_t y) {
  return sel16(x, y, 0, 0x7f80u, (uint16_t)QNANBF);
}

/* }====================================================== */


/*
** {======================================================
** Kernels.  Each one is defined twice from the same source: plainly
** (baseline ISA) and, on x86, as an AVX2 clone "x..." that gcc vectorises
** with 256-bit vectors; the dispatcher picks the clone at run time when
** the CPU has AVX2 (and F16C).  Both compute the same bits.
** =======================================================
*/

#if SL_F16C

#define X86FN  __attribute__((target("avx2,f16c")))

/* 1 when this CPU has AVX2 and F16C (clang 14 cannot test "f16c": there
** AVX2 stands for both, as every AVX2 CPU has F16C, which came first);
** asked once, when the library is loaded */
static int x_ok (void) {
  static int ok = -1;
  if (ok < 0) {
#if defined(__clang__)
    ok = __builtin_cpu_supports("avx2") != 0;
#else
    ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#endif
  }
  return ok;
}

/* the choice made when the library is loaded, not at the first call */
__attribute__((constructor)) static void x_init (void) { (void)x_ok(); }

/* define a kernel plainly and as its AVX2 clone */
#define TWICE(K, ...)  K(, , __VA_ARGS__) K(x, X86FN, __VA_ARGS__)

#else

#define TWICE(K, ...)  K(, , __VA_ARGS__)

#endif


/* the element operators of each KIND of SL_DTYPE_LIST (dtype.h): integers
** add wrapping in their unsigned type, max/min in their own type */
#define ADD_INT   OADD
#define MAX_INT   OMAX
#define MIN_INT   OMIN
#define ADD_FP16  addh
#define MAX_FP16  maxh
#define MIN_FP16  minh
#define ADD_BF16  addb
#define MAX_BF16  maxb
#define MIN_BF16  minb
#define ADD_FP32  addf
#define MAX_FP32  maxf
#define MIN_FP32  minf
#define ADD_FP64  addd
#define MAX_FP64  maxd
#define MIN_FP64  mind

typedef void (*sl_rfn) (void *restrict d, const void *restrict s, size_t n);
typedef void (*sl_bfn) (void *restrict d, const void *restrict a,
                        const void *restrict b, size_t n);

/* PFX##r_NAME: d[i] = OP(d[i], s[i]);  PFX##b_NAME: d[i] = OP(a[i], b[i]) */
#define KERNELS(PFX, ATTR, name, T, OP) \
  ATTR static void PFX##r_##name (void *restrict dv, const void *restrict sv, \
                                  size_t n) { \
    T *restrict d = dv; \
    const T *restrict s = sv; \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = (T)OP(d[i], s[i]); \
  } \
  ATTR static void PFX##b_##name (void *restrict dv, const void *restrict av, \
                                  const void *restrict bv, size_t n) { \
    T *restrict d = dv; \
    const T *restrict a = av, *restrict b = bv; \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = (T)OP(a[i], b[i]); \
  }

/* add, max and min of one row of SL_DTYPE_LIST */
#define ROWKERNELS(PFX, ATTR, TAG, T, U, KIND) \
  KERNELS(PFX, ATTR, add_##TAG, U, ADD_##KIND) \
  KERNELS(PFX, ATTR, max_##TAG, T, MAX_##KIND) \
  KERNELS(PFX, ATTR, min_##TAG, T, MIN_##KIND)

#define GENROW(TAG, name, T, U, KIND)  TWICE(ROWKERNELS, TAG, T, U, KIND)
SL_DTYPE_LIST(GENROW)
#undef GENROW


/* PFX##m_NAME: d[i] = a[i] * k, wrapping (integer scalar; W is the
** unsigned type the product is computed in, at least unsigned int) */
#define MULSINT(PFX, ATTR, name, T, W) \
  ATTR static void PFX##m_##name (T *restrict d, const T *restrict a, W k, \
                                  size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = (T)((W)a[i] * k); \
  }

TWICE(MULSINT, 8, uint8_t, uint32_t)
TWICE(MULSINT, 16, uint16_t, uint32_t)
TWICE(MULSINT, 32, uint32_t, uint32_t)
TWICE(MULSINT, 64, uint64_t, uint64_t)


/* q_NAME: d[i] = trunc(a[i] * s) wrapped (non-integral scalar, via double;
** not a hot path) */
#define MULSDBL(name, U, S) \
  static void q_##name (U *restrict d, const S *restrict a, double s, \
                        size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = (U)d2i((double)a[i] * s); \
  }

MULSDBL(i8, uint8_t, int8_t)
MULSDBL(i16, uint16_t, int16_t)
MULSDBL(i32, uint32_t, int32_t)
MULSDBL(i64, uint64_t, int64_t)
MULSDBL(u8, uint8_t, uint8_t)
MULSDBL(u16, uint16_t, uint16_t)
MULSDBL(u32, uint32_t, uint32_t)

/* uint64 * a non-integral s, truncated (beyond 2^63 too) */
static void q_u64 (uint64_t *restrict d, const uint64_t *restrict a, double s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) d[i] = d2u((double)a[i] * s);
}

/* fp64 d[i] = a[i] * s */
static void m_d (double *restrict d, const double *restrict a, double s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) d[i] = a[i] * s;
}


/* fp32 x * s, canonical NaN */
static inline float mulf (float x, float s) {
  return canf(x * s);
}


/* fp16 x * s in fp32, rounded once (word form) */
static inline uint32_t mulhw (uint32_t x, float s) {
  return f2hcw(h2fw(x) * s);
}


/* bf16 x * s in fp32, rounded once (word form) */
static inline uint32_t mulbw (uint32_t x, float s) {
  return f2bcw(u2f(x << 16) * s);
}


/* PFX##m_f: fp32 d[i] = a[i] * s */
#define MULSF(PFX, ATTR, name) \
  ATTR static void PFX##m_##name (float *restrict d, const float *restrict a, \
                                  float s, size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = mulf(a[i], s); \
  }

TWICE(MULSF, f)


/* PFX##m_NAME: fp16/bf16 d[i] = a[i] * s, in pairs as PAIRKERNELS */
#define PAIRMULS(PFX, ATTR, name, OP) \
  ATTR static void PFX##m_##name (uint16_t *restrict d, \
                                  const uint16_t *restrict a, float s, \
                                  size_t n) { \
    size_t i, m = n / 2; \
    for (i = 0; i < m; i++) { \
      uint32_t x; \
      memcpy(&x, a + 2 * i, 4); \
      x = OP(x & 0xffffu, s) | OP(x >> 16, s) << 16; \
      memcpy(d + 2 * i, &x, 4); \
    } \
    if (n & 1) d[n - 1] = (uint16_t)OP(a[n - 1], s); \
  }

PAIRMULS(, , h, mulhw)
TWICE(PAIRMULS, b, mulbw)

/* }====================================================== */


/*
** {======================================================
** x86-64 F16C paths for fp16 (bit-identical to the portable ones: same
** fp32 operations, same canonical NaN; vcvtps2ph rounds to nearest even
** and keeps NaN payloads as f2h does, vcvtph2ps quiets as h2f does).
** Each does a multiple of 8 elements and returns how many; the caller
** finishes with the portable kernel.
** =======================================================
*/
#if SL_F16C

#define XLDH(p)  _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define XSTH(p,v)  _mm_storeu_si128((__m128i *)(p), \
                     _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT))

/* canonical NaN for every NaN lane */
X86FN static inline __m256 x_can (__m256 r) {
  __m256 q = _mm256_castsi256_ps(_mm256_set1_epi32((int)QNAN32));
  return _mm256_blendv_ps(r, q, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
}


/* fp16 add, F16C: d[i] = fp16(a[i] + b[i]) (d may be a), 8 at a time */
X86FN static size_t x_addh (uint16_t *d, const uint16_t *a,
                            const uint16_t *restrict b, size_t n) {
  size_t i;
  for (i = 0; i + 8 <= n; i += 8)
    XSTH(d + i, x_can(_mm256_add_ps(XLDH(a + i), XLDH(b + i))));
  return i;
}


/* fp32 sums of bf16 x lanes -> bf16 bits with a canonical NaN, in the low
** half of each 32-bit lane (f2bcw, 8 at a time) */
X86FN static inline __m256i x_f2b (__m256 r) {
  __m256i x = _mm256_castps_si256(r);
  __m256i one = _mm256_set1_epi32(1), abs = _mm256_set1_epi32(0x7fffffff);
  __m256i h = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x,
      _mm256_set1_epi32(0x7fff)), _mm256_and_si256(_mm256_srli_epi32(x, 16), one)), 16);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs),
                                   _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(h, _mm256_set1_epi32((int)QNANBF), nan);
}


/* bf16 add, AVX2: d[i] = bf16(a[i] + b[i]) (d may be a), 16 at a time; the
** unpack to fp32 and the pack back interleave lanes alike, so order holds */
X86FN static size_t x_addb (uint16_t *d, const uint16_t *a,
                            const uint16_t *restrict b, size_t n) {
  size_t i;
  __m256i z = _mm256_setzero_si256();
  for (i = 0; i + 16 <= n; i += 16) {
    __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)(a + i));
    __m256i vb = _mm256_loadu_si256((const __m256i *)(const void *)(b + i));
    __m256 lo = _mm256_add_ps(_mm256_castsi256_ps(_mm256_unpacklo_epi16(z, va)),
                              _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, vb)));
    __m256 hi = _mm256_add_ps(_mm256_castsi256_ps(_mm256_unpackhi_epi16(z, va)),
                              _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, vb)));
    _mm256_storeu_si256((__m256i *)(void *)(d + i),
                        _mm256_packus_epi32(x_f2b(lo), x_f2b(hi)));
  }
  return i;
}


/* xr_add_NAME / xb_add_NAME of the AVX2 table: the vector kernel X, then
** the AVX2 clone of the portable kernel of row TAG for the tail */
#define VECADD(NAME, X, TAG) \
  X86FN static void xr_add_##NAME (void *restrict d, const void *restrict s, size_t n) { \
    size_t k = X(d, d, s, n); \
    xr_add_##TAG((uint16_t *)d + k, (const uint16_t *)s + k, n - k); \
  } \
  X86FN static void xb_add_##NAME (void *restrict d, const void *restrict a, \
                                   const void *restrict b, size_t n) { \
    size_t k = X(d, a, b, n); \
    xb_add_##TAG((uint16_t *)d + k, (const uint16_t *)a + k, (const uint16_t *)b + k, \
                 n - k); \
  }

VECADD(fp16, x_addh, FP16)
VECADD(bf16, x_addb, BF16)


/* d[i] = fp16(a[i] * s) */
X86FN static size_t x_mulsh (uint16_t *restrict d, const uint16_t *restrict a,
                             float s, size_t n) {
  size_t i;
  __m256 k = _mm256_set1_ps(s);
  for (i = 0; i + 8 <= n; i += 8)
    XSTH(d + i, x_can(_mm256_mul_ps(XLDH(a + i), k)));
  return i;
}


/* fp16 -> fp32 */
X86FN static size_t x_h2f (float *restrict d, const uint16_t *restrict s,
                           size_t n) {
  size_t i;
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, XLDH(s + i));
  return i;
}


/* fp32 -> fp16 */
X86FN static size_t x_f2h (uint16_t *restrict d, const float *restrict s,
                           size_t n) {
  size_t i;
  for (i = 0; i + 8 <= n; i += 8) XSTH(d + i, _mm256_loadu_ps(s + i));
  return i;
}

/* VX: nonzero to use the clones; K(name): the kernel to call */
#define VXDECL  int vx = x_ok();
#define K(name)  (vx ? x##name : name)
#define F16C(call)  (vx ? (call) : 0)

#else

#define VXDECL
#define K(name)  name
#define F16C(call)  0

#endif
/* }====================================================== */


/*
** {======================================================
** Reductions and vector ops
** =======================================================
*/

/* the kernels of every dtype x op (ADD, MAX, MIN), portable and AVX2 */
#define RROW(TAG, name, T, U, KIND)  { r_add_##TAG, r_max_##TAG, r_min_##TAG },
#define BROW(TAG, name, T, U, KIND)  { b_add_##TAG, b_max_##TAG, b_min_##TAG },
static const sl_rfn rtab[SL_NDTYPES][3] = { SL_DTYPE_LIST(RROW) };
static const sl_bfn btab[SL_NDTYPES][3] = { SL_DTYPE_LIST(BROW) };
#undef RROW
#undef BROW

#if SL_F16C
/* the AVX2 clones; fp16 and bf16 add have their own F16C / AVX2 kernels */
#define XADD_INT(P, TAG)   P##_add_##TAG
#define XADD_FP32(P, TAG)  P##_add_##TAG
#define XADD_FP64(P, TAG)  P##_add_##TAG
#define XADD_FP16(P, TAG)  P##_add_fp16
#define XADD_BF16(P, TAG)  P##_add_bf16
#define RROW(TAG, name, T, U, KIND)  { XADD_##KIND(xr, TAG), xr_max_##TAG, xr_min_##TAG },
#define BROW(TAG, name, T, U, KIND)  { XADD_##KIND(xb, TAG), xb_max_##TAG, xb_min_##TAG },
static const sl_rfn xrtab[SL_NDTYPES][3] = { SL_DTYPE_LIST(RROW) };
static const sl_bfn xbtab[SL_NDTYPES][3] = { SL_DTYPE_LIST(BROW) };
#undef RROW
#undef BROW
#define RTAB  (x_ok() ? xrtab : rtab)
#define BTAB  (x_ok() ? xbtab : btab)
#else
#define RTAB  rtab
#define BTAB  btab
#endif


/* sl_reduce for valid t/op and non-aliasing dst/src */
static void reduce (sl_dtype t, sl_op op, void *restrict dst,
                    const void *restrict src, size_t n) {
  if (op == SL_OP_NONE) memcpy(dst, src, n * sl_dtypes[t].size);
  else RTAB[t][op - 1](dst, src, n);
}


/* dst[i] = op(dst[i], src[i]); dst == src is staged through a local
** buffer so that the kernels can keep their restrict pointers */
void sl_reduce (sl_dtype t, sl_op op, void *dst, const void *src, size_t n) {
  if (!dt_ok(t) || (unsigned)op > (unsigned)SL_OP_MIN || n == 0) return;
  if (dst != src)
    reduce(t, op, dst, src, n);
  else if (op != SL_OP_NONE) {
    sl_stage tmp;
    size_t sz = sl_dtypes[t].size, m = sizeof tmp / sz, k;
    char *d = dst;
    for (k = 0; k < n; k += m) {
      size_t c = n - k < m ? n - k : m;
      memcpy(&tmp, d + k * sz, c * sz);
      reduce(t, op, d + k * sz, &tmp, c);
    }
  }
}


/* sl_binary for valid t/op and dst aliasing neither a nor b */
static void binary (sl_dtype t, sl_op op, void *restrict dst,
                    const void *a, const void *b, size_t n) {
  if (op == SL_OP_NONE) memmove(dst, b, n * sl_dtypes[t].size);
  else BTAB[t][op - 1](dst, a, b, n);
}


/* dst[i] = op(a[i], b[i]) (SL_OP_NONE copies b, as op(dst, src) copies src
** in sl_reduce); dst may equal a and/or b (staged), else must not overlap */
void sl_binary (sl_dtype t, sl_op op, void *dst, const void *a,
                const void *b, size_t n) {
  if (!dt_ok(t) || (unsigned)op > (unsigned)SL_OP_MIN || n == 0) return;
  if (dst != a && dst != b)
    binary(t, op, dst, a, b, n);
  else {
    sl_stage ta, tb;
    size_t sz = sl_dtypes[t].size, m = sizeof ta / sz, k;
    char *d = dst;
    const char *pa = a, *pb = b;
    for (k = 0; k < n; k += m) {
      size_t c = n - k < m ? n - k : m;
      const void *xa = pa + k * sz, *xb = pb + k * sz;
      if (xa == d + k * sz) { memcpy(&ta, xa, c * sz); xa = &ta; }
      if (xb == d + k * sz) { memcpy(&tb, xb, c * sz); xb = &tb; }
      binary(t, op, d + k * sz, xa, xb, c);
    }
  }
}


/* sl_muls for valid t and dst not aliasing a */
static void muls (sl_dtype t, void *restrict dst, const void *restrict a,
                  double s, size_t n) {
  int integral = s > -TWO63 && s < TWO63 && (double)(int64_t)s == s;
  uint64_t k = integral ? (uint64_t)(int64_t)s : 0u;
  size_t j;
  VXDECL
  switch (t) {
    case SL_INT8: case SL_UINT8: case SL_INT16: case SL_INT32: case SL_INT64:
    case SL_UINT16: case SL_UINT32: case SL_UINT64:
      if (integral) {
        switch (sl_dtypes[t].size) {
          case 2: K(m_16)(dst, a, (uint32_t)(uint16_t)k, n); return;
          case 4: K(m_32)(dst, a, (uint32_t)k, n); return;
          case 8: K(m_64)(dst, a, k, n); return;
          default: K(m_8)(dst, a, (uint32_t)(uint8_t)k, n); return;
        }
      }
      switch (t) {
        case SL_INT8: q_i8(dst, a, s, n); return;
        case SL_INT16: q_i16(dst, a, s, n); return;
        case SL_INT32: q_i32(dst, a, s, n); return;
        case SL_INT64: q_i64(dst, a, s, n); return;
        case SL_UINT16: q_u16(dst, a, s, n); return;
        case SL_UINT32: q_u32(dst, a, s, n); return;
        case SL_UINT64: q_u64(dst, a, s, n); return;
        default: q_u8(dst, a, s, n); return;
      }
    case SL_FP64: m_d(dst, a, s, n); return;
    case SL_FP16:
      j = F16C(x_mulsh(dst, a, (float)s, n));
      m_h((uint16_t *)dst + j, (const uint16_t *)a + j, (float)s, n - j);
      return;
    case SL_BF16: K(m_b)(dst, a, (float)s, n); return;
    case SL_FP32: K(m_f)(dst, a, (float)s, n); return;
    default: return;
  }
}


/* dst[i] = a[i] * s.  Integer dtypes: an integral s multiplies modulo
** 2^bits; another s gives trunc(a[i] * s) in double, wrapped as sl_cast
** does.  Float dtypes: s is rounded to fp32, the product is done in fp32
** and rounded once to the element type.  dst may equal a. */
void sl_muls (sl_dtype t, void *dst, const void *a, double s, size_t n) {
  if (!dt_ok(t) || n == 0) return;
  if (dst != a)
    muls(t, dst, a, s, n);
  else {
    sl_stage tmp;
    size_t sz = sl_dtypes[t].size, m = sizeof tmp / sz, k;
    char *d = dst;
    for (k = 0; k < n; k += m) {
      size_t c = n - k < m ? n - k : m;
      memcpy(&tmp, d + k * sz, c * sz);
      muls(t, d + k * sz, &tmp, s, c);
    }
  }
}

/* }====================================================== */


/*
** {======================================================
** Casts
** =======================================================
*/

/* d[i] = CONV(x) with x = s[i] of type ST; d is of type DT */
#define CASTLOOP(DT, ST, CONV) { \
    DT *restrict d_ = dst; const ST *restrict s_ = src; size_t i_; \
    for (i_ = 0; i_ < n; i_++) { ST x = s_[i_]; d_[i_] = CONV; } \
    return; }

/* every source dtype into DT: CI converts an integer x, CU a uint64 x, CF
** the exact fp32 value of a float x, CD a double x */
#define CASTFROM(DT, CI, CU, CF, CD) \
  switch (st) { \
    case SL_INT8:  CASTLOOP(DT, int8_t, CI) \
    case SL_INT16: CASTLOOP(DT, int16_t, CI) \
    case SL_INT32: CASTLOOP(DT, int32_t, CI) \
    case SL_INT64: CASTLOOP(DT, int64_t, CI) \
    case SL_UINT8: CASTLOOP(DT, uint8_t, CI) \
    case SL_UINT16: CASTLOOP(DT, uint16_t, CI) \
    case SL_UINT32: CASTLOOP(DT, uint32_t, CI) \
    case SL_UINT64: CASTLOOP(DT, uint64_t, CU) \
    case SL_FP16:  CASTLOOP(DT, uint16_t, CF(h2f(x))) \
    case SL_BF16:  CASTLOOP(DT, uint16_t, CF(b2f(x))) \
    case SL_FP32:  CASTLOOP(DT, float, CF(x)) \
    case SL_FP64:  CASTLOOP(DT, double, CD(x)) \
    default: return; \
  }

/* float (exact fp32 value) to each destination */
#define TOU8(v)   ((uint8_t)f2i(v))
#define TOU16(v)  ((uint16_t)f2i(v))
#define TOU32(v)  ((uint32_t)f2i(v))
#define TOU64(v)  ((uint64_t)f2i(v))
#define TOF(v)    (v)
#define TOD(v)    ((double)(v))
#define TOFD(v)   ((float)(v))
/* a double into each destination (ints truncate through int64, wrap) */
#define DTOI(T)   (T)d2i

/* sl_cast for valid, different dtypes and non-overlapping buffers */
static void cast (sl_dtype dt, void *restrict dst, sl_dtype st,
                  const void *restrict src, size_t n) {
  switch (dt) {
    case SL_INT8: case SL_UINT8: CASTFROM(uint8_t, (uint8_t)x, (uint8_t)x, TOU8, DTOI(uint8_t))
    case SL_INT16: case SL_UINT16:
      CASTFROM(uint16_t, (uint16_t)x, (uint16_t)x, TOU16, DTOI(uint16_t))
    case SL_INT32: case SL_UINT32:
      CASTFROM(uint32_t, (uint32_t)x, (uint32_t)x, TOU32, DTOI(uint32_t))
    case SL_INT64: CASTFROM(uint64_t, (uint64_t)x, x, TOU64, DTOI(uint64_t))
    case SL_UINT64: CASTFROM(uint64_t, (uint64_t)x, x, TOU64, d2u)
    case SL_FP16: CASTFROM(uint16_t, i2h(x), d2h(u2dodd(x)), f2h, d2h)
    case SL_BF16: CASTFROM(uint16_t, i2b(x), d2b(u2dodd(x)), f2b, d2b)
    case SL_FP32: CASTFROM(float, (float)x, (float)x, TOF, TOFD)
    case SL_FP64: CASTFROM(double, (double)x, (double)x, TOD, TOD)
    default: return;
  }
}


/* dst[i] = (dt) src[i]: float -> int truncates toward zero through int64
** (clamped, NaN -> 0) then wraps; int -> float and float -> narrower float
** round to nearest even once; fp32 -> fp16/bf16 keeps NaN payload tops */
void sl_cast (sl_dtype dt, void *dst, sl_dtype st, const void *src,
              size_t n) {
  size_t k = 0;
  VXDECL
  if (!dt_ok(dt) || !dt_ok(st) || n == 0) return;
  if (dt == st) { memmove(dst, src, n * sl_dtypes[dt].size); return; }
  if (dt == SL_FP16 && st == SL_FP32) k = F16C(x_f2h(dst, src, n));
  else if (dt == SL_FP32 && st == SL_FP16) k = F16C(x_h2f(dst, src, n));
  cast(dt, (char *)dst + k * sl_dtypes[dt].size, st,
       (const char *)src + k * sl_dtypes[st].size, n - k);
}

/* }====================================================== */


/*
** {======================================================
** Abs, ReduceMax, Cast with CAST_RINT, and the INT8 token quantisation
** (the V-pipe steps of MoE INT8 dispatch and their host reference)
** =======================================================
*/

/* PFX d[i] = |a[i]| for a signed integer type U (two's complement: the
** minimum stays itself, as the hardware's wrap gives) */
#define ABSINT(PFX, U, S) \
  static void PFX (U *d, const U *a, size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = (S)a[i] < 0 ? (U)(0u - a[i]) : a[i]; \
  }

ABSINT(abs_8, uint8_t, int8_t)
ABSINT(abs_16, uint16_t, int16_t)
ABSINT(abs_32, uint32_t, int32_t)
ABSINT(abs_64, uint64_t, int64_t)


/* d[i] = a[i] with the sign bit (mask) cleared: fp16/bf16/fp32 Abs */
#define ABSBITS(PFX, U, MASK) \
  static void PFX (U *d, const U *a, size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = (U)(a[i] & (MASK)); \
  }

ABSBITS(abs_h, uint16_t, 0x7fffu)
ABSBITS(abs_f, uint32_t, 0x7fffffffu)
ABSBITS(abs_d, uint64_t, UINT64_C(0x7fffffffffffffff))


/* dst[i] = |a[i]|: floats clear the sign (a NaN stays a NaN), signed
** integers wrap at the minimum, unsigned ones are copied; dst may equal a */
void sl_abs (sl_dtype t, void *dst, const void *a, size_t n) {
  if (!dt_ok(t) || n == 0) return;
  switch (t) {
    case SL_INT8: abs_8(dst, a, n); return;
    case SL_INT16: abs_16(dst, a, n); return;
    case SL_INT32: abs_32(dst, a, n); return;
    case SL_INT64: abs_64(dst, a, n); return;
    case SL_FP16: case SL_BF16: abs_h(dst, a, n); return;
    case SL_FP32: abs_f(dst, a, n); return;
    case SL_FP64: abs_d(dst, a, n); return;
    default: memmove(dst, a, n * sl_dtypes[t].size); return;   /* unsigned */
  }
}


/* the largest of n integers of type S (n >= 1), stored at d */
#define RMAXINT(PFX, S) \
  static void PFX (void *d, const void *a, size_t n) { \
    const S *x = a; S m = x[0]; size_t i; \
    for (i = 1; i < n; i++) m = x[i] > m ? x[i] : m; \
    memcpy(d, &m, sizeof m); \
  }

RMAXINT(rmax_i8, int8_t)
RMAXINT(rmax_i16, int16_t)
RMAXINT(rmax_i32, int32_t)
RMAXINT(rmax_i64, int64_t)
RMAXINT(rmax_u8, uint8_t)
RMAXINT(rmax_u16, uint16_t)
RMAXINT(rmax_u32, uint32_t)
RMAXINT(rmax_u64, uint64_t)


/* the largest of n 16-bit floats by the vector max's rule (NaN wins) */
static uint16_t rmax16 (const uint16_t *x, size_t n, int bf) {
  uint16_t m = x[0];
  size_t i;
  for (i = 1; i < n; i++) m = bf ? maxb(m, x[i]) : maxh(m, x[i]);
  return m;
}


/* the largest of n fp32 by the vector max's rule (NaN wins) */
static float rmaxf (const float *x, size_t n) {
  float m = x[0];
  size_t i;
  for (i = 1; i < n; i++) m = maxf(m, x[i]);
  return m;
}


/* *dst = max of a[0..n) (ReduceMax, no index): the elementwise max folded
** left to right, so a NaN gives NaN and +0 beats -0; n = 0 writes nothing */
void sl_reduce_max (sl_dtype t, void *dst, const void *a, size_t n) {
  uint16_t h;
  float f;
  if (!dt_ok(t) || n == 0) return;
  switch (t) {
    case SL_INT8: rmax_i8(dst, a, n); return;
    case SL_INT16: rmax_i16(dst, a, n); return;
    case SL_INT32: rmax_i32(dst, a, n); return;
    case SL_INT64: rmax_i64(dst, a, n); return;
    case SL_UINT8: rmax_u8(dst, a, n); return;
    case SL_UINT16: rmax_u16(dst, a, n); return;
    case SL_UINT32: rmax_u32(dst, a, n); return;
    case SL_UINT64: rmax_u64(dst, a, n); return;
    case SL_FP64: {
      const double *x = a;
      double mx = x[0];
      size_t i;
      for (i = 1; i < n; i++) mx = maxd(mx, x[i]);
      memcpy(dst, &mx, sizeof mx);
      return;
    }
    case SL_FP16: case SL_BF16:
      h = rmax16(a, n, t == SL_BF16);
      memcpy(dst, &h, sizeof h);
      return;
    default:
      f = rmaxf(a, n);
      memcpy(dst, &f, sizeof f);
      return;
  }
}


/* the exact fp32 value of element i of a float array of type t */
static float getf (sl_dtype t, const void *a, size_t i) {
  if (t == SL_FP16) return h2f(((const uint16_t *)a)[i]);
  if (t == SL_BF16) return b2f(((const uint16_t *)a)[i]);
  return ((const float *)a)[i];
}


/* the exact value of element i of a float array of type t, as a double */
static double getd (sl_dtype t, const void *a, size_t i) {
  return t == SL_FP64 ? ((const double *)a)[i] : (double)getf(t, a, i);
}


/* v rounded to the nearest integer, ties to even, saturated to [lo, hi];
** NaN -> 0 */
static int64_t rintsat (double v, double lo, double hi) {
  double r = nearbyint(v);
  if (r != r) return 0;
  return (int64_t)(r < lo ? lo : r > hi ? hi : r);
}


/* dst[i] = (dt) src[i] as Cast(CAST_RINT) with saturation: a float source
** into an integer dt rounds to nearest even and saturates to dt's range
** (NaN -> 0); every other pair converts as sl_cast (nearest even already) */
void sl_cast_rint (sl_dtype dt, void *dst, sl_dtype st, const void *src,
                   size_t n) {
  static const double lo[SL_NDTYPES] = {
    [SL_INT8] = -128.0, [SL_INT16] = -32768.0, [SL_INT32] = -2147483648.0,
    [SL_INT64] = -9223372036854775808.0 };
  static const double hi[SL_NDTYPES] = {
    [SL_INT8] = 127.0, [SL_INT16] = 32767.0, [SL_INT32] = 2147483647.0,
    [SL_INT64] = 9223372036854774784.0, [SL_UINT8] = 255.0, [SL_UINT16] = 65535.0,
    [SL_UINT32] = 4294967295.0, [SL_UINT64] = 18446744073709549568.0 };
  size_t i;
  if (!dt_ok(dt) || !dt_ok(st) || n == 0) return;
  if (sl_dtype_isfloat(dt) || !sl_dtype_isfloat(st)) {
    sl_cast(dt, dst, st, src, n);
    return;
  }
  for (i = 0; i < n; i++) {
    double v = getd(st, src, i);
    if (dt == SL_UINT64 && v >= TWO63) {       /* beyond int64: its own value */
      uint64_t u = d2u(nearbyint(v < hi[dt] ? v : hi[dt]));
      memcpy((char *)dst + i * 8, &u, 8);
    } else {
      sl_set_int(dt, dst, i, rintsat(v, lo[dt], hi[dt]));
    }
  }
}


/* the host reference of one token's INT8 quantisation, in the order and
** fp32 arithmetic of Ascend's MoeDistributeDispatch dynamic quant: absmax
** = max |x| (x in fp32, a NaN wins as in ReduceMax), inv = 127 / absmax, q[i] = rint(x[i] * inv)
** saturated to [-127, 127] (NaN -> 0), scale = 1 / inv (so an all-zero
** row gives q = 0, scale = 0). st is fp16, bf16 or fp32. */
void sl_quant_int8 (sl_dtype st, const void *src, size_t n, int8_t *q,
                    float *scale) {
  float absmax = 0.0f, inv;
  size_t i;
  for (i = 0; i < n; i++) absmax = maxf(absmax, fabsf(getf(st, src, i)));
  inv = 127.0f / absmax;
  for (i = 0; i < n; i++)
    q[i] = (int8_t)rintsat((double)(getf(st, src, i) * inv), -127.0, 127.0);
  *scale = 1.0f / inv;
}

/* }====================================================== */


/*
** {======================================================
** Element access
** =======================================================
*/

/* n doubles into dtype t (ints: truncate, clamp, wrap; floats: round) */
static void fromdbl (sl_dtype t, void *restrict dst, const double *restrict v,
                     size_t n) {
  size_t i;
  switch (t) {
    case SL_INT8: case SL_UINT8: {
      uint8_t *d = dst;
      for (i = 0; i < n; i++) d[i] = (uint8_t)d2i(v[i]);
      return;
    }
    case SL_INT16: case SL_UINT16: {
      uint16_t *d = dst;
      for (i = 0; i < n; i++) d[i] = (uint16_t)d2i(v[i]);
      return;
    }
    case SL_INT32: case SL_UINT32: {
      uint32_t *d = dst;
      for (i = 0; i < n; i++) d[i] = (uint32_t)d2i(v[i]);
      return;
    }
    case SL_INT64: {
      uint64_t *d = dst;
      for (i = 0; i < n; i++) d[i] = (uint64_t)d2i(v[i]);
      return;
    }
    case SL_FP16: {
      uint16_t *d = dst;
      for (i = 0; i < n; i++) d[i] = d2h(v[i]);
      return;
    }
    case SL_BF16: {
      uint16_t *d = dst;
      for (i = 0; i < n; i++) d[i] = d2b(v[i]);
      return;
    }
    case SL_FP32: {
      float *d = dst;
      for (i = 0; i < n; i++) d[i] = (float)v[i];
      return;
    }
    case SL_UINT64: {
      uint64_t *d = dst;
      for (i = 0; i < n; i++) d[i] = d2u(v[i]);
      return;
    }
    case SL_FP64: memcpy(dst, v, n * sizeof(double)); return;
    default: return;
  }
}


/* element i as a double (int64 beyond 2^53 rounds) */
double sl_get_num (sl_dtype t, const void *base, size_t i) {
  const char *p = base;
  switch (t) {
    case SL_FP16: case SL_BF16: {
      uint16_t h;
      memcpy(&h, p + i * 2, 2);
      return (double)(t == SL_FP16 ? h2f(h) : b2f(h));
    }
    case SL_FP32: {
      float f;
      memcpy(&f, p + i * 4, 4);
      return (double)f;
    }
    case SL_FP64: {
      double d;
      memcpy(&d, p + i * 8, 8);
      return d;
    }
    case SL_UINT64: {
      uint64_t u;
      memcpy(&u, p + i * 8, 8);
      return (double)u;
    }
    default: return (double)sl_get_int(t, base, i);
  }
}


/* sl_get_int of a float element (0 for an integer or invalid dtype) */
int64_t sl_get_int_fp (sl_dtype t, const void *base, size_t i) {
  return dt_ok(t) && sl_dtypes[t].isfloat ? d2i(sl_get_num(t, base, i)) : 0;
}


/* store v into element i (ints: truncate and wrap; floats: round once) */
void sl_set_num (sl_dtype t, void *base, size_t i, double v) {
  if (dt_ok(t)) fromdbl(t, (char *)base + i * sl_dtypes[t].size, &v, 1);
}


/* sl_set_int into a float element (nothing for an integer or invalid dtype) */
void sl_set_int_fp (sl_dtype t, void *base, size_t i, int64_t v) {
  if (dt_ok(t) && sl_dtypes[t].isfloat) cast(t, (char *)base + i * sl_dtypes[t].size, SL_INT64, &v, 1);
}

/* }====================================================== */


/*
** {======================================================
** Fill patterns
** =======================================================
*/

#define GAMMA  UINT64_C(0x9e3779b97f4a7c15)

/* splitmix64 finaliser */
static inline uint64_t mix64 (uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}


/* high 64 bits of a * b */
static inline uint64_t mulhi (uint64_t a, uint64_t b) {
  uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}


/* 1 when v is an integer inside the int64 range */
static int isint64 (double v) {
  return v > -TWO63 && v < TWO63 && (double)(int64_t)v == v;
}


/* v clamped to the range of integer dtype t (NaN -> 0, fractions truncate by
** the store; int64's ends are d2i's); floats unchanged (they round, and
** overflow to +-inf) */
static double saturate (sl_dtype t, double v) {
  static const double lo[SL_NDTYPES] = {
    [SL_INT8] = -128.0, [SL_INT16] = -32768.0, [SL_INT32] = -2147483648.0,
    [SL_INT64] = -TWO63 };
  static const double hi[SL_NDTYPES] = {
    [SL_INT8] = 127.0, [SL_INT16] = 32767.0, [SL_INT32] = 2147483647.0, [SL_INT64] = TWO63,
    [SL_UINT8] = 255.0, [SL_UINT16] = 65535.0, [SL_UINT32] = 4294967295.0,
    [SL_UINT64] = TWO64 };
  if (sl_dtypes[t].isfloat) return v;
  if (v != v) return 0.0;
  return v < lo[t] ? lo[t] : v > hi[t] ? hi[t] : v;
}


/* replicate the element at e (already of dtype t) into n elements */
static void fillconst (sl_dtype t, void *restrict dst, const void *e,
                       size_t n) {
  size_t i;
  switch (sl_dtypes[t].size) {
    case 1: memset(dst, *(const unsigned char *)e, n); return;
    case 2: {
      uint16_t *d = dst, v;
      memcpy(&v, e, 2);
      for (i = 0; i < n; i++) d[i] = v;
      return;
    }
    case 4: {
      if (t == SL_FP32) {
        float *d = dst, v;
        memcpy(&v, e, 4);
        for (i = 0; i < n; i++) d[i] = v;
      }
      else {
        uint32_t *d = dst, v;
        memcpy(&v, e, 4);
        for (i = 0; i < n; i++) d[i] = v;
      }
      return;
    }
    default: {
      uint64_t *d = dst, v;
      memcpy(&v, e, 8);
      for (i = 0; i < n; i++) d[i] = v;
      return;
    }
  }
}


/* fill n elements (see dtype.h).  IOTA: integer dtypes with integral a, b
** compute a + k*b exactly modulo 2^64 (so they wrap); otherwise in double,
** rounded once to the dtype (ints truncate).  RANDOM: integers uniform in
** [ceil(min(a,b)), floor(max(a,b))] (one value if that is empty) from
** splitmix64(seed, base + i), bias below 2^-32 for spans up to 2^32,
** stored as sl_set_int would (exact when the dtype holds the range) */
void sl_fill_pattern (sl_dtype t, void *dst, size_t n, sl_fill pat,
                      double a, double b, uint64_t seed, int64_t base) {
  int64_t iv[STAGEW / 2];
  double dv[STAGEW / 2];
  size_t sz, m = STAGEW / 2, k, i;
  uint64_t ub = (uint64_t)base;     /* index arithmetic modulo 2^64 */
  char *d = dst;
  if (!dt_ok(t) || n == 0) return;
  sz = sl_dtypes[t].size;
  switch (pat) {
    case SL_FILL_CONST: {
      sl_stage e;
      double v = saturate(t, a);        /* int32 inf is INT32_MAX, not -1 */
      fromdbl(t, &e, &v, 1);
      fillconst(t, dst, &e, n);
      return;
    }
    case SL_FILL_IOTA:
      if (!sl_dtypes[t].isfloat && isint64(a) && isint64(b)) {
        uint64_t ua = (uint64_t)(int64_t)a, ubb = (uint64_t)(int64_t)b;
        for (k = 0; k < n; k += m) {
          size_t c = n - k < m ? n - k : m;
          for (i = 0; i < c; i++) iv[i] = u2i(ua + (ub + k + i) * ubb);
          cast(t, d + k * sz, SL_INT64, iv, c);
        }
      }
      else {
        double db = (double)base;
        for (k = 0; k < n; k += m) {
          size_t c = n - k < m ? n - k : m;
          for (i = 0; i < c; i++) dv[i] = a + (db + (double)(k + i)) * b;
          fromdbl(t, d + k * sz, dv, c);
        }
      }
      return;
    case SL_FILL_RANDOM: {
      double lo = ceil(a < b ? a : b), hi = floor(a < b ? b : a);
      int64_t ilo = d2i(lo), ihi = d2i(hi);
      uint64_t span, s0 = mix64(seed ^ UINT64_C(0x6a09e667f3bcc909));
      if (ihi < ilo) ihi = ilo;
      span = (uint64_t)ihi - (uint64_t)ilo + 1u;   /* 0: all of 2^64 */
      for (k = 0; k < n; k += m) {
        size_t c = n - k < m ? n - k : m;
        for (i = 0; i < c; i++) {
          uint64_t r = mix64(s0 + (ub + k + i) * GAMMA);
          iv[i] = u2i((uint64_t)ilo + (span ? mulhi(r, span) : r));
        }
        if (t == SL_INT64) memcpy(d + k * sz, iv, c * sz);
        else cast(t, d + k * sz, SL_INT64, iv, c);
      }
      return;
    }
    default: return;
  }
}

/* }====================================================== */


/*
** {======================================================
** Compare
** =======================================================
*/

/* fp32 bits equal for compare: bitwise, both NaN, or both zero */
static inline int eq32 (uint32_t x, uint32_t y) {
  uint32_t ax = x & 0x7fffffffu, ay = y & 0x7fffffffu;
  return (x == y) | ((ax > 0x7f800000u) & (ay > 0x7f800000u)) | ((ax | ay) == 0);
}


/* fp16 bits equal for compare */
static inline int eq16h (uint16_t x, uint16_t y) {
  unsigned ax = x & 0x7fffu, ay = y & 0x7fffu;
  return (x == y) | ((ax > 0x7c00u) & (ay > 0x7c00u)) | ((ax | ay) == 0);
}


/* bf16 bits equal for compare */
static inline int eq16b (uint16_t x, uint16_t y) {
  unsigned ax = x & 0x7fffu, ay = y & 0x7fffu;
  return (x == y) | ((ax > 0x7f80u) & (ay > 0x7f80u)) | ((ax | ay) == 0);
}

/* fp64 bits equal for compare */
static inline int eq64 (uint64_t x, uint64_t y) {
  uint64_t ax = x & UINT64_C(0x7fffffffffffffff), ay = y & UINT64_C(0x7fffffffffffffff);
  uint64_t inf = UINT64_C(0x7ff0000000000000);
  return (x == y) | ((ax > inf) & (ay > inf)) | ((ax | ay) == 0);
}

#define EQI(x,y)  ((x) == (y))
#define EQF(x,y)  eq32(f2u(x), f2u(y))

/* c_NAME: how many of n differ;  f_NAME: index of the first that does */
#define COMPARER(name, T, EQ) \
  static size_t c_##name (const T *restrict x, const T *restrict y, \
                          size_t n) { \
    size_t i, c = 0; \
    for (i = 0; i < n; i++) c += !EQ(x[i], y[i]); \
    return c; \
  } \
  static size_t f_##name (const T *x, const T *y, size_t n) { \
    size_t i; \
    for (i = 0; i < n && EQ(x[i], y[i]); i++) {} \
    return i; \
  }

COMPARER(8, uint8_t, EQI)
COMPARER(16, uint16_t, EQI)
COMPARER(32, uint32_t, EQI)
COMPARER(64, uint64_t, EQI)
COMPARER(h, uint16_t, eq16h)
COMPARER(b, uint16_t, eq16b)
COMPARER(f, float, EQF)
COMPARER(d, uint64_t, eq64)


/* count over blocks; the first block with a difference is scanned for it */
#define CMPRUN(name, T) { \
    const T *x = expect, *y = actual; \
    for (k = 0; k < n; k += blk) { \
      size_t m = n - k < blk ? n - k : blk, c = c_##name(x + k, y + k, m); \
      if (c != 0 && total == 0 && first != NULL) \
        *first = k + f_##name(x + k, y + k, m); \
      total += c; \
    } \
    return total; }

/* number of differing elements; ints compare values, floats are equal when
** bitwise equal, both NaN, or both zero (+0 == -0) */
size_t sl_compare (sl_dtype t, const void *expect, const void *actual,
                   size_t n, size_t *first) {
  size_t total = 0, k, blk = 4096;
  switch (t) {
    case SL_INT8: case SL_UINT8: CMPRUN(8, uint8_t)
    case SL_INT16: case SL_UINT16: CMPRUN(16, uint16_t)
    case SL_INT32: case SL_UINT32: CMPRUN(32, uint32_t)
    case SL_INT64: case SL_UINT64: CMPRUN(64, uint64_t)
    case SL_FP64: CMPRUN(d, uint64_t)
    case SL_FP16: CMPRUN(h, uint16_t)
    case SL_BF16: CMPRUN(b, uint16_t)
    case SL_FP32: CMPRUN(f, float)
    default: return 0;
  }
}

/* }====================================================== */


/*
** {======================================================
** Checksum: XXH64 (Yann Collet's xxHash, 64-bit), bytes read little
** endian so digests match across hosts; chained through seed.
** =======================================================
*/

#define XP1  UINT64_C(0x9e3779b185ebca87)
#define XP2  UINT64_C(0xc2b2ae3d27d4eb4f)
#define XP3  UINT64_C(0x165667b19e3779f9)
#define XP4  UINT64_C(0x85ebca77c2b2ae63)
#define XP5  UINT64_C(0x27d4eb2f165667c5)

/* rotate left (0 < r < 64) */
static inline uint64_t rotl (uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}


/* little-endian 64-bit load */
static inline uint64_t rd64 (const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
#else
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
         (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
         (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
#endif
}


/* little-endian 32-bit load */
static inline uint64_t rd32 (const unsigned char *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
         (uint64_t)p[3] << 24;
}


/* one lane step: multiply, rotate, multiply */
static inline uint64_t xround (uint64_t acc, uint64_t in) {
  acc += in * XP2;
  return rotl(acc, 31) * XP1;
}


/* fold a lane into the digest */
static inline uint64_t xmerge (uint64_t h, uint64_t v) {
  h ^= xround(0, v);
  return h * XP1 + XP4;
}


/* XXH64 of bytes with seed (chaining: pass the previous digest) */
uint64_t sl_checksum (const void *p, size_t bytes, uint64_t seed) {
  const unsigned char *b = p;
  size_t i = 0;
  uint64_t h;
  if (bytes >= 32) {
    uint64_t v1 = seed + XP1 + XP2, v2 = seed + XP2, v3 = seed, v4 = seed - XP1;
    for (; bytes - i >= 32; i += 32) {
      v1 = xround(v1, rd64(b + i));
      v2 = xround(v2, rd64(b + i + 8));
      v3 = xround(v3, rd64(b + i + 16));
      v4 = xround(v4, rd64(b + i + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = xmerge(h, v1);
    h = xmerge(h, v2);
    h = xmerge(h, v3);
    h = xmerge(h, v4);
  }
  else
    h = seed + XP5;
  h += (uint64_t)bytes;
  for (; bytes - i >= 8; i += 8) {
    h ^= xround(0, rd64(b + i));
    h = rotl(h, 27) * XP1 + XP4;
  }
  if (bytes - i >= 4) {
    h ^= rd32(b + i) * XP1;
    h = rotl(h, 23) * XP2 + XP3;
    i += 4;
  }
  for (; i < bytes; i++) {
    h ^= b[i] * XP5;
    h = rotl(h, 11) * XP1;
  }
  h ^= h >> 33;
  h *= XP2;
  h ^= h >> 29;
  h *= XP3;
  h ^= h >> 32;
  return h;
}

/* }====================================================== */


/*
** {======================================================
** The bench's yardstick: the loop anyone would write, compiled as the
** project's reference for "vector speed" (-O3, x86-64-v3 on x86-64)
** =======================================================
*/

#if SL_F16C
#define YARDFN  __attribute__((target("avx2,fma,f16c,bmi,bmi2,lzcnt,movbe")))
#define YARDTWICE(K)  K(, ) K(v3, YARDFN)
#else
#define YARDTWICE(K)  K(, )
#endif

/* the yardstick loops of one target */
#define YARDLOOPS(PFX, ATTR) \
  ATTR static void PFX##yard_i32 (uint32_t *restrict d, const uint32_t *restrict s, \
                                  size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] += s[i]; \
  } \
  ATTR static void PFX##yard_f32 (float *restrict d, const float *restrict s, size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] += s[i]; \
  } \
  ATTR static void PFX##yard_f16 (uint16_t *restrict d, const uint16_t *restrict s, \
                                  size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) d[i] = YARD_F16(d[i], s[i]); \
  } \
  ATTR static void PFX##yard_bf16 (uint16_t *restrict d, const uint16_t *restrict s, \
                                   size_t n) { \
    size_t i; \
    for (i = 0; i < n; i++) { \
      uint32_t x = f2u(u2f((uint32_t)d[i] << 16) + u2f((uint32_t)s[i] << 16)); \
      d[i] = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); \
    } \
  }

#if defined(__FLT16_MAX__)
/* fp16 add with the compiler's _Float16 */
static inline uint16_t yard_h (uint16_t x, uint16_t y) {
  _Float16 a, b;
  memcpy(&a, &x, 2);
  memcpy(&b, &y, 2);
  a = (_Float16)((float)a + (float)b);
  memcpy(&x, &a, 2);
  return x;
}
#define YARD_F16  yard_h
#else
#define YARD_F16(x, y)  f2h(h2f(x) + h2f(y))
#endif

YARDTWICE(YARDLOOPS)


/* dst[i] += src[i] for int32, fp32, fp16, bf16 (other dtypes: nothing) */
void sl_yardstick_add (sl_dtype t, void *dst, const void *src, size_t n) {
#if SL_F16C
  static int v3 = -1;
  if (v3 < 0) v3 = x_ok() && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("bmi2");
#define YARD(name)  (v3 ? v3##name : name)
#else
#define YARD(name)  name
#endif
  switch (t) {
    case SL_INT32: YARD(yard_i32)(dst, src, n); return;
    case SL_FP32: YARD(yard_f32)(dst, src, n); return;
    case SL_FP16: YARD(yard_f16)(dst, src, n); return;
    case SL_BF16: YARD(yard_bf16)(dst, src, n); return;
    default: return;
  }
#undef YARD
}

/* }====================================================== */
