/*
** lshmemlab_scalar.c -- scalar passes over a block's UB as one primitive each
** (lsl_ prefix): the GetValue / SetValue loops of kernels such as DeepEP's
** layout and notify kernels (ops/deepep/, shmemlab.deepep), whose every
** element a Lua loop would read or write by one k:get_value / k:set_value.
**
** Each primitive makes the same sl_get_value / sl_set_value calls, in the
** same order, that the Lua loop would (each moves the S clock by the profile's
** scalar cost), so the block ends at the same clock with the same UB. It runs
** only while none of the block's V, MTE2 or MTE3 work is pending
** (sl_scalar_ahead): then none of those calls would yield (a scalar access
** runs ahead of other blocks' wake-ups), and the events due before the
** block's clock that they would handle between them are handled after the
** last, in the same order, touching nothing the accesses read or write (no
** other block, PE or flow reaches this UB). With work pending it does nothing
** and returns false: the caller runs its Lua loop, whose accesses may yield
** one by one as they would. The passes' loops are the core's (scalar.c) where
** the DeepEP layout makes millions of accesses.
**
** k:scalar_layout_count is a loop of primitives, not one: get_dispatch_layout's
** per-token SyncFunc<S_V>, Duplicate, SyncFunc<V_S> and count pass, each made
** as its own call would make it (counted, its error raised, its yield made
** and resumed), so a block's events and times are those of the Lua loop.
*/
#include "lshmemlab.h"

/* the block and machine of a scalar pass, or NULL when work is pending (the
** caller's loop runs instead): lsl_kcheck_q, which never catches up */
static lmach *pass_check(lua_State *L, int *blk) {
  lmach *lm = lsl_kcheck_q(L, blk);
  return sl_scalar_ahead(lm->m, *blk) ? lm : NULL;
}

/* an integer UB tensor argument */
static sl_loc int_ub(lua_State *L, lmach *lm, int i) {
  sl_loc u = lsl_kloc(L, lm, i);
  if (u.buf >= 0) luaL_argerror(L, i, "UB tensor expected, got GM");
  if (sl_dtype_isfloat((sl_dtype)u.dtype)) luaL_argerror(L, i, "integer UB tensor expected");
  return u;
}

/* an integer argument: a UB index, count, stride or bound, within +-(2^31 - 1)
** (no UB holds more elements), so that no index product overflows */
static int64_t iarg(lua_State *L, int i) {
  lua_Integer v = luaL_checkinteger(L, i);
  luaL_argcheck(L, v >= -INT32_MAX && v <= INT32_MAX, i, "out of range");
  return (int64_t)v;
}

/* a + b wrapping as the hardware's int64 would, without C's signed overflow */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* one GetValue of an integer element (0 when a checked run skipped it) */
static int get(sl_machine *m, int blk, const sl_loc *u, int64_t i, int64_t *v) {
  double num = 0;
  int st;
  *v = 0;
  st = sl_get_value(m, blk, u, i, &num, v);
  return st == SL_ESKIP ? SL_OK : st;
}

/* one SetValue of an integer element */
static int set(sl_machine *m, int blk, const sl_loc *u, int64_t i, int64_t v) {
  int st = sl_set_value(m, blk, u, i, 0, v, 1);
  return st == SL_ESKIP ? SL_OK : st;
}

/* the end of a pass: an error as the engine's, else true (and nret - 1 more
** values pushed by the caller) after the yield check of its last access */
static int pass_done(lua_State *L, lmach *lm, int blk, int st, int nret) {
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  lua_pushboolean(L, 1);
  if (nret > 1) lua_insert(L, -nret);
  return lsl_kdone(L, lm, blk, SL_OK, nret);
}

#define TRY(x) do { if ((st = (x)) != SL_OK) goto out; } while (0)

/* k:scalar_topk_count(topk, first, K, E, per, per_expert, seen, per_rank,
** marks, at): one token's K expert ids topk[first ..] counted: per valid id e
** (0 <= e < E) per_expert[e] += 1, and for its group r = e // per seen the
** first time (seen[r] == 0) marks[at + r] = 1, seen[r] = 1, per_rank[r] += 1.
** The accesses of get_dispatch_layout's count loop, in its order
** (sl_scalar_topk_count) */
static int k_scalar_topk_count(lua_State *L) {
  int blk;
  lmach *lm = pass_check(L, &blk);
  sl_loc tk, u[4];
  const sl_loc *const ub[4] = { &u[0], &u[1], &u[2], &u[3] };
  int64_t first = iarg(L, 3), K = iarg(L, 4), E = iarg(L, 5), per = iarg(L, 6), at = iarg(L, 11);
  if (lm == NULL) { lua_pushboolean(L, 0); return 1; }
  if (per <= 0) return luaL_argerror(L, 6, "group size must be positive");
  tk = int_ub(L, lm, 2); u[0] = int_ub(L, lm, 7); u[1] = int_ub(L, lm, 8);
  u[2] = int_ub(L, lm, 9); u[3] = int_ub(L, lm, 10);
  return pass_done(L, lm, blk, sl_scalar_topk_count(lm->m, blk, &tk, first, K, E, per, ub, at),
                   1);
}

/* k:scalar_layout_count's steps of one token, each one primitive as the Lua
** loop calls them: k:sync_func("S_V", 0) (its set_flag, then its wait_flag),
** k:duplicate(seen, 0, n), k:sync_func("V_S", 0), k:scalar_topk_count */
enum { LC_SET_SV, LC_WAIT_SV, LC_DUP, LC_SET_VS, LC_WAIT_VS, LC_COUNT, LC_STEPS };
#define LC_NARGS 12                     /* k and its 11 arguments */

/* k:scalar_layout_count's arguments, read once each time it runs on */
typedef struct lcargs {
  sl_loc tk, u[4];          /* topk; per_expert, seen, per_rank, marks */
  int64_t tt, K, E, per, n;
} lcargs;

/* step of token i on block blk; 1 when made, 0 when the count's pass
** refused (work pending) */
static int layout_step(lmach *lm, int blk, const lcargs *a, int step, int64_t i, int *st) {
  static int sv = -1, vs = -1;
  sl_machine *m = lm->m;
  const sl_loc *const ub[4] = { &a->u[0], &a->u[1], &a->u[2], &a->u[3] };
  if (sv < 0) { sv = sl_event_find("S_V"); vs = sl_event_find("V_S"); }
  switch (step) {
    case LC_SET_SV: *st = sl_set_flag(m, blk, sv, 0); return 1;
    case LC_WAIT_SV: *st = sl_wait_flag(m, blk, sv, 0); return 1;
    case LC_DUP: *st = sl_vec(m, blk, SL_VEC_DUP, &a->u[1], &a->u[1], NULL, 0.0, a->n); return 1;
    case LC_SET_VS: *st = sl_set_flag(m, blk, vs, 0); return 1;
    case LC_WAIT_VS: *st = sl_wait_flag(m, blk, vs, 0); return 1;
    default: break;
  }
  if (!sl_scalar_ahead(m, blk)) return 0;
  *st = sl_scalar_topk_count(m, blk, &a->tk, i * a->K, a->K, a->E, a->per, ub, i * a->n);
  return 1;
}

static int layout_count_cont(lua_State *L, int status, lua_KContext ctx);

/* k:scalar_layout_count from token i's step on (its primitive counted
** already): each step made, its error raised and its yield made as lsl_kdone
** would (resuming in layout_count_cont), the next one counted (lsl_kcheck_q) */
static int layout_count_run(lua_State *L, lmach *lm, int blk, const lcargs *a, int64_t i,
                            int step) {
  int counted = 1;
  for (; i < a->tt; i++, step = 0) {
    for (; step < LC_STEPS; step++) {
      int st = SL_OK;
      if (!counted) lm = lsl_kcheck_q(L, &blk);
      counted = 0;
      if (!layout_step(lm, blk, a, step, i, &st)) {
        lua_pushinteger(L, (lua_Integer)i);
        return 1;
      }
      if (st != SL_OK && st != SL_ESKIP) return lsl_kdone(L, lm, blk, st, 0);   /* raises */
      if (sl_must_yield(lm->m, blk))
        return lua_yieldk(L, 0, (lua_KContext)(i * LC_STEPS + step + 1), layout_count_cont);
    }
  }
  lua_pushinteger(L, (lua_Integer)a->tt);
  return 1;
}

/* k:scalar_layout_count resumed after a yield (what the resume passed goes):
** on at token ctx / LC_STEPS, step ctx % LC_STEPS, with the arguments read
** at the call (the userdata above them) */
static int layout_count_cont(lua_State *L, int status, lua_KContext ctx) {
  const lcargs *a;
  int64_t i = (int64_t)(ctx / LC_STEPS);
  int step = (int)(ctx % LC_STEPS), blk;
  lmach *lm;
  (void)status;
  lua_settop(L, LC_NARGS + 1);
  a = (const lcargs *)lua_touserdata(L, LC_NARGS + 1);
  if (step == LC_STEPS) { i++; step = 0; }
  if (i >= a->tt) {                     /* no step left: none counted */
    lua_pushinteger(L, (lua_Integer)a->tt);
    return 1;
  }
  lm = lsl_kcheck_q(L, &blk);
  return layout_count_run(L, lm, blk, a, i, step);
}

/* k:scalar_layout_count(topk, first, tokens, K, E, per, per_expert, seen,
** per_rank, marks, n): get_dispatch_layout's count loop over tokens [first,
** tokens), each token's steps the primitives the Lua loop calls, in its
** order, with its yields: SyncFunc<S_V>, Duplicate(seen, 0, n), SyncFunc<V_S>,
** then k:scalar_topk_count(topk, i * K, K, E, per, per_expert, seen,
** per_rank, marks, i * n). Returns tokens, or the token i whose count the
** pass refused (pipe work pending: its syncs made, its accesses the caller's
** to make one by one); nothing in a checked run, where it makes none (the
** caller's calls name their own sites in its findings) */
static int k_scalar_layout_count(lua_State *L) {
  int64_t first = iarg(L, 3), tt = iarg(L, 4), K = iarg(L, 5), n = iarg(L, 12);
  int blk;
  lmach *lm;
  lcargs *a;
  if (iarg(L, 7) <= 0) return luaL_argerror(L, 7, "group size must be positive");
  if (K < 0 || n <= 0) return luaL_argerror(L, K < 0 ? 5 : 12, "out of range");
  if (first < 0) return luaL_argerror(L, 3, "out of range");
  lua_settop(L, LC_NARGS);
  lm = lsl_here.lm;                     /* a checked run: none made, nil (each call */
  if (lm != NULL && lm->cur_co == L && lm->check) return 0;   /* names its own site) */
  if (first >= tt) { lua_pushinteger(L, (lua_Integer)tt); return 1; }
  lm = lsl_kcheck_q(L, &blk);           /* the first step's count */
  a = (lcargs *)lua_newuserdatauv(L, sizeof(*a), 0);
  a->tk = int_ub(L, lm, 2); a->tt = tt; a->K = K; a->E = iarg(L, 6); a->per = iarg(L, 7);
  a->n = n;
  a->u[0] = int_ub(L, lm, 8); a->u[1] = int_ub(L, lm, 9);
  a->u[2] = int_ub(L, lm, 10); a->u[3] = int_ub(L, lm, 11);
  return layout_count_run(L, lm, blk, a, first, 0);
}

/* k:scalar_histogram(src, first, count, lo, hi, counts, idx): for i in
** [first, first + count) with lo <= e = src[i] < hi: idx[i] = counts[e],
** counts[e] += 1 (each row numbered among the rows of its bin so far;
** sl_scalar_histogram) */
static int k_scalar_histogram(lua_State *L) {
  int blk;
  lmach *lm = pass_check(L, &blk);
  sl_loc src, cnt, idx;
  int64_t first = iarg(L, 3), count = iarg(L, 4), lo = iarg(L, 5), hi = iarg(L, 6);
  if (lm == NULL) { lua_pushboolean(L, 0); return 1; }
  src = int_ub(L, lm, 2); cnt = int_ub(L, lm, 7); idx = int_ub(L, lm, 8);
  return pass_done(L, lm, blk, sl_scalar_histogram(lm->m, blk, &src, first, count, lo, hi,
                                                   &cnt, &idx), 1);
}

/* k:scalar_transpose(dst, src, rows, cols, ld, scan): dst[c * rows + r] =
** src[r * ld + c] for c outer, r inner (each read, then its write); scan:
** the exclusive prefix sum of the values in that order instead of the
** values. Returns true and the sum of every value */
static int k_scalar_transpose(lua_State *L) {
  int blk, st = SL_OK;
  int64_t r, c, v, sum = 0;
  lmach *lm = pass_check(L, &blk);
  sl_machine *m;
  sl_loc dst, src;
  int64_t rows = iarg(L, 4), cols = iarg(L, 5), ld = iarg(L, 6);
  int scan = lua_toboolean(L, 7);
  if (lm == NULL) { lua_pushboolean(L, 0); return 1; }
  m = lm->m;
  dst = int_ub(L, lm, 2); src = int_ub(L, lm, 3);
  for (c = 0; c < cols; c++) {
    for (r = 0; r < rows; r++) {
      TRY(get(m, blk, &src, r * ld + c, &v));
      TRY(set(m, blk, &dst, c * rows + r, scan ? sum : v));
      sum = wrap_add(sum, v);
    }
  }
out:
  lua_pushinteger(L, (lua_Integer)sum);
  return pass_done(L, lm, blk, st, 2);
}

/* k:scalar_row_sums(dst, src, rows, cols, stride): per row r the sum of
** src[r * cols ..+ cols) (each read), then dst[r * stride] = the sum and
** dst[r * stride + 1 ..+ stride - 1] = 0 (an int64 as its two int32 words:
** stride 2) */
static int k_scalar_row_sums(lua_State *L) {
  int blk, st = SL_OK;
  int64_t r, c, v, sum;
  lmach *lm = pass_check(L, &blk);
  sl_machine *m;
  sl_loc dst, src;
  int64_t rows = iarg(L, 4), cols = iarg(L, 5), stride = iarg(L, 6);
  if (lm == NULL) { lua_pushboolean(L, 0); return 1; }
  m = lm->m;
  if (stride <= 0) return luaL_argerror(L, 6, "stride must be positive");
  dst = int_ub(L, lm, 2); src = int_ub(L, lm, 3);
  for (r = 0; r < rows; r++) {
    for (sum = 0, c = 0; c < cols; c++) {
      TRY(get(m, blk, &src, r * cols + c, &v));
      sum = wrap_add(sum, v);
    }
    TRY(set(m, blk, &dst, r * stride, sum));
    for (c = 1; c < stride; c++) TRY(set(m, blk, &dst, r * stride + c, 0));
  }
out:
  return pass_done(L, lm, blk, st, 1);
}

/* k:scalar_pair_scan(ub, first, count, stride, none): for j in [0, count)
** read ub[first + j * stride] and, when it is not none, the element after
** it (a range's start and end); returns true and the sum over the pairs
** read of end - start + 1 */
static int k_scalar_pair_scan(lua_State *L) {
  int blk, st = SL_OK;
  int64_t j, a, b, sum = 0;
  lmach *lm = pass_check(L, &blk);
  sl_machine *m;
  sl_loc u;
  int64_t first = iarg(L, 3), count = iarg(L, 4), stride = iarg(L, 5), none = iarg(L, 6);
  if (lm == NULL) { lua_pushboolean(L, 0); return 1; }
  m = lm->m;
  u = int_ub(L, lm, 2);
  for (j = 0; j < count; j++) {
    TRY(get(m, blk, &u, first + j * stride, &a));
    if (a == none) continue;
    TRY(get(m, blk, &u, first + j * stride + 1, &b));
    sum = wrap_add(sum, (int64_t)((uint64_t)b - (uint64_t)a + 1u));
  }
out:
  lua_pushinteger(L, (lua_Integer)sum);
  return pass_done(L, lm, blk, st, 2);
}

/* the scalar passes */
const luaL_Reg lsl_scalar_methods[] = {
  {"scalar_topk_count", k_scalar_topk_count}, {"scalar_histogram", k_scalar_histogram},
  {"scalar_layout_count", k_scalar_layout_count},
  {"scalar_transpose", k_scalar_transpose}, {"scalar_row_sums", k_scalar_row_sums},
  {"scalar_pair_scan", k_scalar_pair_scan},
  {NULL, NULL}
};
