/*
** scalar.c -- the scalar passes of a block's UB as one call each (sl_scalar_
** prefix): the GetValue / SetValue loops of DeepEP's layout kernel
** (shmemlab.deepep's layout_count and layout_index), whose binding is
** lshmemlab_scalar.c. A pass makes the accesses sl_get_value / sl_set_value
** would, in the same order, with the same clock, UB, runaway-guard and
** queue-only effects; the caller runs it only while none of the block's V,
** MTE2 or MTE3 work is pending (sl_scalar_ahead), so no event comes between
** the accesses.
**
** Each UB tensor a pass reads or writes is opened once (sview): when no check
** (initcheck, racecheck) and no staging record sees its accesses, the owner,
** bounds and pending-work tests of sl_get_value and sl_set_value hold for the
** whole pass and are made there; an access then moves the S clock, reads or
** writes its element and marks progress as they do. Any other access (an
** index past the view, an element that holds no data, a checked run) goes
** through sl_get_value / sl_set_value themselves, and so errs as they do.
*/
#include "sli.h"

/* a UB tensor of a scalar pass: its location, address, element size and
** dtype; fast when its accesses at indices [0, hi] may skip the per-access
** tests (sview_open) */
typedef struct sview {
  sl_loc l;
  sl_addr a;
  int64_t hi, esz;
  sl_dtype dt;
  int fast;
  uint8_t *p;               /* the bytes of element 0 when [0, hi] are contiguous */
} sview;

/* open ub for a pass of block blk: fast when nothing checks or stages its
** accesses, it is the block's own, its dtype an integer one, and no pending
** work of the block is in the block's UB table (none is: sl_scalar_ahead) */
static void sview_open(sl_machine *m, int blk, const sl_loc *ub, sview *v) {
  const sl_block *b = &m->blocks[blk];
  v->l = *ub;
  v->dt = (sl_dtype)ub->dtype;
  v->esz = (int64_t)sl_dtype_size(v->dt);
  sli_addr(ub, &v->a);
  v->fast = (m->p.check & SL_CHECK_INIT) == 0 && m->race == NULL && m->nlzb == 0
            && b->pubset == 0 && b->pover == 0 && ub->buf < 0 && ub->pe == b->pe
            && ub->core == b->b && v->esz > 0 && !sl_dtype_isfloat(v->dt)
            && ub->off >= 0 && ub->cap >= ub->off;
  v->hi = v->fast ? (ub->cap - ub->off - v->esz) / v->esz : -1;
  if (ub->cap - ub->off < v->esz) v->hi = -1;
  v->p = v->hi >= 0 ? sli_ub_run(m, &v->a, (v->hi + 1) * v->esz) : NULL;
}

/* the bytes of element i of a fast view, NULL when the access must take the
** full path (not fast, past the view, or no data there) */
static inline uint8_t *sview_at(sl_machine *m, const sview *v, int64_t i) {
  sl_addr a;
  if (i < 0 || i > v->hi) return NULL;
  if (v->p != NULL) return v->p + i * v->esz;
  a = v->a;
  a.off += i * v->esz;
  return sli_ptr(m, &a);
}

/* GetValue of element i (sl_get_value: 0 when a checked run skipped it) */
static int sget(sl_machine *m, int blk, const sview *v, int64_t i, int64_t *val) {
  uint8_t *p = sview_at(m, v, i);
  double num = 0;
  int st;
  if (p != NULL) {
    m->blocks[blk].t += m->ps.scalar;
    *val = sl_get_int(v->dt, p, 0);
    sli_guard_read(m, blk, &v->l, i);
    sli_queue_only(m, blk);
    return SL_OK;
  }
  *val = 0;
  st = sl_get_value(m, blk, &v->l, i, &num, val);
  return st == SL_ESKIP ? SL_OK : st;
}

/* SetValue of element i (sl_set_value); a changed element is progress */
static int sset(sl_machine *m, int blk, const sview *v, int64_t i, int64_t val) {
  uint8_t *p = sview_at(m, v, i);
  int st;
  if (p != NULL) {                      /* an integer's bytes change iff its value does */
    int64_t old = sl_get_int(v->dt, p, 0);
    m->blocks[blk].t += m->ps.scalar;
    sli_queue_only(m, blk);
    sl_set_int(v->dt, p, 0, val);
    if (sl_get_int(v->dt, p, 0) != old) sli_progress(m);
    return SL_OK;
  }
  st = sl_set_value(m, blk, &v->l, i, 0, val, 1);
  return st == SL_ESKIP ? SL_OK : st;
}

/* a + b wrapping as the hardware's int64 would, without C's signed overflow */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

#define TRY(x) do { if ((st = (x)) != SL_OK) return st; } while (0)

/* the bytes of element i of a view whose elements are contiguous (v->p),
** NULL when they are not or i lies past the view */
static inline const uint8_t *sview_peek(const sview *v, int64_t i) {
  return v->p != NULL && i >= 0 && i <= v->hi ? v->p + i * v->esz : NULL;
}

/* the elements the count of ids topk[first .. first + K) will touch asked of
** the memory at once (the blocks take turns token by token, so a block's UB
** is rarely in cache, and one access after another would wait for each in
** turn); no access is made, nothing is moved */
static void count_prefetch(const sview *tk, int64_t first, int64_t K, int64_t E, int64_t per,
                           const sview *u, int64_t at) {
  int64_t j, e;
  for (j = 0; j < K; j++) {
    const uint8_t *p = sview_peek(tk, first + j);
    if (p == NULL) return;
    e = sl_get_int(tk->dt, p, 0);
    if (e < 0 || e >= E) continue;
    SLI_PREFETCH(sview_peek(&u[0], e));
    SLI_PREFETCH(sview_peek(&u[1], e / per));
    SLI_PREFETCH(sview_peek(&u[2], e / per));
    SLI_PREFETCH(sview_peek(&u[3], at + e / per));
  }
}

/* one token's K expert ids topk[first ..] counted: per valid id e (0 <= e <
** E) per_expert[e] += 1, and for its group r = e / per seen the first time
** (seen[r] == 0) marks[at + r] = 1, seen[r] = 1, per_rank[r] += 1: the
** accesses of get_dispatch_layout's count loop, in its order */
int sl_scalar_topk_count(sl_machine *m, int blk, const sl_loc *topk, int64_t first, int64_t K,
                         int64_t E, int64_t per, const sl_loc *const ub[4], int64_t at) {
  sview tk, u[4];
  int64_t j, e, v, s, c;
  int st;
  sview_open(m, blk, topk, &tk);
  for (j = 0; j < 4; j++) sview_open(m, blk, ub[j], &u[j]);
  count_prefetch(&tk, first, K, E, per, u, at);
  for (j = 0; j < K; j++) {
    TRY(sget(m, blk, &tk, first + j, &e));
    if (e < 0 || e >= E) continue;
    TRY(sget(m, blk, &u[0], e, &v));
    TRY(sset(m, blk, &u[0], e, wrap_add(v, 1)));
    TRY(sget(m, blk, &u[1], e / per, &s));
    if (s != 0) continue;
    TRY(sget(m, blk, &u[2], e / per, &c));
    TRY(sset(m, blk, &u[3], at + e / per, 1));
    TRY(sset(m, blk, &u[1], e / per, 1));
    TRY(sset(m, blk, &u[2], e / per, wrap_add(c, 1)));
  }
  return SL_OK;
}

/* for i in [first, first + count) with lo <= e = src[i] < hi: idx[i] =
** counts[e - lo], counts[e - lo] += 1 (each row numbered among the rows of
** its bin so far) */
int sl_scalar_histogram(sl_machine *m, int blk, const sl_loc *src, int64_t first,
                        int64_t count, int64_t lo, int64_t hi, const sl_loc *cnt,
                        const sl_loc *idx) {
  sview s, c, x;
  int64_t i, e, v;
  int st;
  sview_open(m, blk, src, &s); sview_open(m, blk, cnt, &c); sview_open(m, blk, idx, &x);
  for (i = first; i < first + count; i++) {
    TRY(sget(m, blk, &s, i, &e));
    if (e < lo || e >= hi) continue;
    TRY(sget(m, blk, &c, e - lo, &v));
    TRY(sset(m, blk, &x, i, v));
    TRY(sset(m, blk, &c, e - lo, wrap_add(v, 1)));
  }
  return SL_OK;
}
