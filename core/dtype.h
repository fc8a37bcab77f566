/*
** dtype.h -- element types and every element loop of shmemlab
** (conversions, reductions, vector ops, fill patterns, compare, checksum).
** Plain C11; knows nothing of Lua.
*/
#ifndef SL_DTYPE_H
#define SL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Only luaopen_shmemlab_core leaves core.so (nm -D): what the headers declare is hidden. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* every element type, one row each: X(TAG, name, T, U, KIND) with T the C
** type of an element (its signedness orders max/min), U the type its add
** wraps in, and KIND the element operators dtype.c uses (INT for every
** integer; FP16, BF16, FP32 each their own). The order is the enum's; a new
** type is a new row (a new KIND also needs its ADD_/MAX_/MIN_ operators) */
#define SL_DTYPE_LIST(X) \
  X(INT8,  "int8",  int8_t,   uint8_t,  INT) \
  X(INT16, "int16", int16_t,  uint16_t, INT) \
  X(INT32, "int32", int32_t,  uint32_t, INT) \
  X(INT64, "int64", int64_t,  uint64_t, INT) \
  X(UINT8, "uint8", uint8_t,  uint8_t,  INT) \
  X(FP16,  "fp16",  uint16_t, uint16_t, FP16) \
  X(BF16,  "bf16",  uint16_t, uint16_t, BF16) \
  X(FP32,  "fp32",  float,    float,    FP32) \
  X(UINT16, "uint16", uint16_t, uint16_t, INT) \
  X(UINT32, "uint32", uint32_t, uint32_t, INT) \
  X(UINT64, "uint64", uint64_t, uint64_t, INT) \
  X(FP64,  "fp64",  double,   double,   FP64)

#define SL_DTYPE_ENUM(TAG, name, T, U, KIND)  SL_##TAG,
typedef enum { SL_DTYPE_LIST(SL_DTYPE_ENUM) SL_NDTYPES } sl_dtype;
#undef SL_DTYPE_ENUM

/* reduction / elementwise operators (atomic modes and vector ops) */
typedef enum { SL_OP_NONE, SL_OP_ADD, SL_OP_MAX, SL_OP_MIN } sl_op;

/* host-side fill patterns */
typedef enum {
  SL_FILL_CONST,   /* v[i] = a, saturated to an integer dtype's range (NaN: 0) */
  SL_FILL_IOTA,    /* v[i] = a + (base + i) * b */
  SL_FILL_RANDOM   /* integer-exact pseudo random in [a, b], seeded */
} sl_fill;

/* one row of the type table (dtype.c): the engine's hot paths read it inline */
typedef struct sl_dtype_info { const char *name; unsigned char size, isfloat; } sl_dtype_info;
extern const sl_dtype_info sl_dtypes[SL_NDTYPES];

/* bytes of an element (0 for an invalid dtype) */
static inline size_t sl_dtype_size(sl_dtype t) {
  return (unsigned)t < (unsigned)SL_NDTYPES ? sl_dtypes[t].size : 0;
}

/* 1 for a floating-point dtype (0 for an invalid one) */
static inline int sl_dtype_isfloat(sl_dtype t) {
  return (unsigned)t < (unsigned)SL_NDTYPES ? sl_dtypes[t].isfloat : 0;
}

const char *sl_dtype_name(sl_dtype t);
int sl_dtype_find(const char *name);            /* -1 when unknown */

/* scalar conversions, round to nearest even (hardware behaviour) */
float sl_f16_to_f32(uint16_t h);
uint16_t sl_f32_to_f16(float f);
float sl_bf16_to_f32(uint16_t h);
uint16_t sl_f32_to_bf16(float f);

/* one element as a double / int64 (ints exact), and back (saturating-free:
** integer stores wrap modulo 2^bits, float stores round to nearest even) */
double sl_get_num(sl_dtype t, const void *base, size_t i);
void sl_set_num(sl_dtype t, void *base, size_t i, double v);
int64_t sl_get_int_fp(sl_dtype t, const void *base, size_t i);
void sl_set_int_fp(sl_dtype t, void *base, size_t i, int64_t v);

/* element i as an int64 (floats truncate toward zero, clamp, NaN -> 0; a
** uint64 gives its 64 bits; an invalid dtype 0); integers inline: every
** signal reads one */
static inline int64_t sl_get_int(sl_dtype t, const void *base, size_t i) {
  const char *p = base;
  switch (t) {
    case SL_INT8: { int8_t v; memcpy(&v, p + i, 1); return v; }
    case SL_INT16: { int16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case SL_INT32: { int32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case SL_INT64: { int64_t v; memcpy(&v, p + i * 8, 8); return v; }
    case SL_UINT8: { uint8_t v; memcpy(&v, p + i, 1); return v; }
    case SL_UINT16: { uint16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case SL_UINT32: { uint32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case SL_UINT64: { int64_t v; memcpy(&v, p + i * 8, 8); return v; }   /* its bits */
    default: return sl_get_int_fp(t, base, i);
  }
}

/* store v into element i (integers wrap: the low bits; floats round once) */
static inline void sl_set_int(sl_dtype t, void *base, size_t i, int64_t v) {
  char *p = base;
  switch (t) {
    case SL_INT8: case SL_UINT8: { uint8_t x = (uint8_t)v; memcpy(p + i, &x, 1); return; }
    case SL_INT16: case SL_UINT16: { uint16_t x = (uint16_t)v; memcpy(p + i * 2, &x, 2); return; }
    case SL_INT32: case SL_UINT32: { uint32_t x = (uint32_t)v; memcpy(p + i * 4, &x, 4); return; }
    case SL_INT64: case SL_UINT64: memcpy(p + i * 8, &v, 8); return;
    default: sl_set_int_fp(t, base, i, v);
  }
}

/* dst[i] = op(dst[i], src[i]) for i < n; SL_OP_NONE is a plain copy.
** fp16/bf16 accumulate in fp32 and round once, as the MTE atomic unit does;
** integer add wraps. dst and src may not overlap unless equal. */
void sl_reduce(sl_dtype t, sl_op op, void *dst, const void *src, size_t n);

/* dst[i] = op(a[i], b[i]) (vector add/max/min on the V pipe) */
void sl_binary(sl_dtype t, sl_op op, void *dst, const void *a,
               const void *b, size_t n);

/* dst[i] = a[i] * s */
void sl_muls(sl_dtype t, void *dst, const void *a, double s, size_t n);

/* dst[i] = (dt) src[i]; float->int truncates toward zero like Cast(CAST_TRUNC) */
void sl_cast(sl_dtype dt, void *dst, sl_dtype st, const void *src, size_t n);

/* dst[i] = |a[i]| (Abs): floats clear the sign bit, signed integers wrap
** at the minimum, uint8 copies; dst may equal a */
void sl_abs(sl_dtype t, void *dst, const void *a, size_t n);

/* dst[0] = max of a[0..n) (ReduceMax without index), the vector max folded
** left to right: a NaN gives NaN, +0 beats -0 */
void sl_reduce_max(sl_dtype t, void *dst, const void *a, size_t n);

/* Cast with CAST_RINT and saturation: float -> integer rounds to nearest
** even and saturates to dt's range (NaN -> 0); other pairs as sl_cast */
void sl_cast_rint(sl_dtype dt, void *dst, sl_dtype st, const void *src,
                  size_t n);

/* host reference of one token's INT8 dispatch quantisation (fp32, as
** Ascend's dynamic quant): inv = 127 / max|x|, q[i] = rint(x[i] * inv)
** saturated to [-127, 127], *scale = 1 / inv; st fp16, bf16 or fp32 */
void sl_quant_int8(sl_dtype st, const void *src, size_t n, int8_t *q,
                   float *scale);

/* fill n elements; base is the index of element 0 in the pattern
** (so a sub-range or a per-PE offset continues the sequence) */
void sl_fill_pattern(sl_dtype t, void *dst, size_t n, sl_fill pat,
                     double a, double b, uint64_t seed, int64_t base);

/* number of elements that differ (floats: bitwise equal, or both NaN);
** *first gets the first differing index (unchanged when none differ) */
size_t sl_compare(sl_dtype t, const void *expect, const void *actual,
                  size_t n, size_t *first);

/* 64-bit digest of bytes, chained through seed (0 for a fresh digest) */
uint64_t sl_checksum(const void *p, size_t bytes, uint64_t seed);

/* bench/'s yardstick, not used by the engine: dst[i] += src[i] as a plain
** C loop (int32 wraps; fp16, bf16 through fp32, rounded once; no NaN care)
** built for x86-64-v3 at -O3 where the compiler and the CPU allow */
void sl_yardstick_add(sl_dtype t, void *dst, const void *src, size_t n);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
