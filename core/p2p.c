/*
** p2p.c -- point-to-point synchronisation over sets of elements, CANN
** SHMEM's p2p_sync family (include/device/gm2gm/shmem_device_p2p_sync.h):
** wait_until_all / _any / _some and their _vector forms, test, test_all,
** test_any, test_some and theirs. A wait that does not hold parks on the
** whole set; every write landing in it re-evaluates the set (sli_ws_eval).
*/
#include <stdio.h>
#include <string.h>

#include "sli.h"

/* 1 when dtype t can be waited on: the library's ACLSHMEM_P2P_SYNC_TYPE_FUNC
** (float, int8..int64, uint8..uint64; char is int8 here) */
int sl_p2p_dtype(int t) {
  if (t < 0 || t >= SL_NDTYPES) return 0;
  return !sl_dtype_isfloat((sl_dtype)t) || t == SL_FP32;
}

/* the bytes of element i of a located array */
static uint8_t *elem(sl_machine *m, const sl_loc *l, int64_t i) {
  sl_addr a;
  sli_addr(l, &a);
  a.off += i * (int64_t)sl_dtype_size((sl_dtype)l->dtype);
  return sli_ptr(m, &a);
}

/* v cmp x, for integers and doubles alike (a NaN holds only CMP_NE, as in C) */
#define CMP_HOLDS(cmp, v, x) \
  ((cmp) == SL_CMP_EQ ? (v) == (x) : (cmp) == SL_CMP_NE ? (v) != (x) : \
   (cmp) == SL_CMP_GT ? (v) > (x) : (cmp) == SL_CMP_GE ? (v) >= (x) : \
   (cmp) == SL_CMP_LT ? (v) < (x) : (v) <= (x))

/* is v cmp x? (doubles) */
static int cmp_num(int cmp, double v, double x) { return CMP_HOLDS(cmp, v, x); }

/* is v cmp x? (integers, exact; also signal waits, sync.c) */
int sli_cmp_int(int cmp, int64_t v, int64_t x) { return CMP_HOLDS(cmp, v, x); }

/* is element i in the set (status[i] == 0, or no status)? */
static int ws_in(sl_machine *m, const sl_wset *w, int64_t i) {
  if (!w->has_status) return 1;
  return sl_get_int((sl_dtype)w->status.dtype, elem(m, &w->status, i), 0) == 0;
}

/* does element i hold its comparison? */
static int ws_holds(sl_machine *m, const sl_wset *w, int64_t i) {
  sl_dtype dt = (sl_dtype)w->ivars.dtype;
  const uint8_t *p = elem(m, &w->ivars, i);
  if (sl_dtype_isfloat(dt)) {
    double x = w->has_vals ? sl_get_num(dt, elem(m, &w->vals, i), 0) : w->fval;
    return cmp_num(w->cmp, sl_get_num(dt, p, 0), x);
  }
  return sli_cmp_int(w->cmp, sl_get_int(dt, p, 0),
                 w->has_vals ? sl_get_int(dt, elem(m, &w->vals, i), 0) : w->ival);
}

/* S of blk observed element i (racecheck: it acquires its writers) */
static void ws_observe(sl_machine *m, int blk, const sl_wset *w, int64_t i) {
  sl_addr a;
  if (m->race == NULL) return;
  sli_addr(&w->ivars, &a);
  a.off += i * (int64_t)sl_dtype_size((sl_dtype)a.dtype);
  sli_race_observe(m, blk, &a);
}

/* write the k-th index of a SOME set (a scalar store of blk's S pipe) */
static void ws_index(sl_machine *m, int blk, const sl_wset *w, int64_t k, int64_t i) {
  sl_loc l = w->idx;
  int64_t esz = (int64_t)sl_dtype_size((sl_dtype)l.dtype);
  sl_addr a;
  l.off += k * esz;
  sli_addr(&l, &a);
  sli_lazy_touch(m, &a, esz);             /* a staged copy may read these bytes */
  sl_set_int((sl_dtype)l.dtype, sli_ptr(m, &a), 0, i);
  sli_gm_written(m, &a);
  sli_init_write(m, &a, esz);
  sli_race_access(m, blk, SL_PIPE_S, &l, esz, 1);
}

/* SL_WS_ALL from *cur: 1 when every element left holds (ret 1), or a test
** meets one that does not (ret 0); else *cur is the one to wait on */
static int eval_all(sl_machine *m, int blk, const sl_wset *w, int64_t *cur, int64_t *ret,
                    int test) {
  int64_t i;
  for (i = *cur; i < w->n; i++) {
    if (!ws_in(m, w, i) || ws_holds(m, w, i)) continue;
    *cur = i;
    *ret = 0;
    return test;
  }
  for (i = 0; i < w->n; i++) if (ws_in(m, w, i)) ws_observe(m, blk, w, i);
  *ret = 1;
  return 1;
}

/* evaluate set w for block blk now: 1 when the call is over, its result in
** *ret; 0 when a wait must go on (the library's loops, with the lowest
** satisfied index first: the first one its scan from 0 finds) */
int sli_ws_eval(sl_machine *m, int blk, const sl_wset *w, int64_t *cur, int64_t *ret,
                int test) {
  int64_t i, count = 0, included = 0;
  int32_t site = m->site;
  if (w->mode == SL_WS_ALL) return eval_all(m, blk, w, cur, ret, test);
  m->site = m->blocks[blk].wsite;       /* an index written at a wake-up: the wait's line */
  for (i = 0; i < w->n; i++) {
    if (!ws_in(m, w, i)) continue;
    included++;
    if (!ws_holds(m, w, i)) continue;
    ws_observe(m, blk, w, i);
    if (w->mode == SL_WS_ANY) { *ret = i; m->site = site; return 1; }
    ws_index(m, blk, w, count++, i);
  }
  m->site = site;
  *ret = w->mode == SL_WS_ANY ? -1 : count;
  return count > 0 || test || included == 0;
}

/* check one array argument of a set: GM, n elements, an integer dtype
** (or ivars' dtype when same) */
static int check_array(sl_machine *m, const sl_wset *w, const sl_loc *l, int arg,
                       int write, int same, const sl_block *b) {
  const char *what = w->name;
  int st;
  if (l->buf < 0) return sli_err(m, SL_EARG, arg, "must be in GM, not UB");
  if (same && l->dtype != w->ivars.dtype)
    return sli_err(m, SL_EARG, arg, "must be of the ivars' dtype %s, got %s",
                   sl_dtype_name((sl_dtype)w->ivars.dtype), sl_dtype_name((sl_dtype)l->dtype));
  if (!same && sl_dtype_isfloat((sl_dtype)l->dtype))
    return sli_err(m, SL_EARG, arg, "must be an integer array, got %s",
                   sl_dtype_name((sl_dtype)l->dtype));
  if (w->n == 0) return SL_OK;
  if ((st = sli_bounds(m, l, sl_nbytes(w->n, (int64_t)sl_dtype_size((sl_dtype)l->dtype)),
                       write, what, arg, b->pe, b->b)) != SL_OK)
    return st;
  return sli_backed(m, l, arg, what);    /* a timing-only run keeps a set's bytes */
}

/* the arguments of a set (error arguments: 1 ivars, 2 n, 3 status, 4 cmp,
** 5 value or vals, 6 idx) */
static int check_set(sl_machine *m, const sl_wset *w, const sl_block *b) {
  int st;
  if (w->ivars.buf < 0) return sli_err(m, SL_EARG, 1, "ivars must be in GM, not UB");
  if (!sl_p2p_dtype(w->ivars.dtype))
    return sli_err(m, SL_EARG, 1, "%s is not a type the p2p_sync calls take (float "
                   "and the integer types)", sl_dtype_name((sl_dtype)w->ivars.dtype));
  if (w->n < 0) return sli_err(m, SL_EARG, 2, "count must not be negative");
  if (w->cmp < 0 || w->cmp >= SL_NCMP)
    return sli_err(m, SL_EARG, 4, "comparison must be one of CMP_EQ..CMP_LE (0..5), got %d",
                   w->cmp);
  if ((st = check_array(m, w, &w->ivars, 1, 0, 1, b)) != SL_OK) return st;
  if (w->has_status && (st = check_array(m, w, &w->status, 3, 0, 0, b)) != SL_OK) return st;
  if (w->has_vals && (st = check_array(m, w, &w->vals, 5, 0, 1, b)) != SL_OK) return st;
  if (w->has_idx && (st = check_array(m, w, &w->idx, 6, 1, 0, b)) != SL_OK) return st;
  return SL_OK;
}

/* a p2p_sync wait or test (see sl.h); a wait that does not hold parks */
int sl_wait_set(sl_machine *m, int blk, const sl_wset *w, int test, int64_t *ret) {
  sl_block *b = &m->blocks[blk];
  int path, st;
  int64_t cur = 0;
  *ret = w->mode == SL_WS_ANY ? -1 : 0;
  if ((st = check_set(m, w, b)) != SL_OK) return st;
  path = sl_path(m, b->pe, w->ivars.pe);
  b->t += m->ps.poll + (path == SL_PATH_LOCAL ? 0 : 2 * sli_alpha(m, path)) +
          (w->n > 1 ? (w->n - 1) * m->ps.scalar : 0);
  b->wsite = m->site;
  if (sli_ws_eval(m, blk, w, &cur, ret, test)) return SL_OK;
  b->state = B_SIGNAL;
  sli_addr(&w->ivars, &b->w);
  b->wperiod = 0;
  b->wcmp = w->cmp;
  b->wval = w->ival;
  if (sli_park(m, blk, &b->w) != SL_OK)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for a waiter");
  b->ws = *w;
  b->wcur = cur;
  b->wset = 1;
  b->wlen = w->n * (int64_t)sl_dtype_size((sl_dtype)w->ivars.dtype);
  return SL_OK;
}

/* the value of a set's element i as text */
static void elem_text(const sl_machine *m, const sl_loc *l, int64_t i, char *out,
                      size_t size) {
  sl_dtype dt = (sl_dtype)l->dtype;
  const sl_buf *bf = &m->bufs[l->buf];
  const uint8_t *p = bf->data + bf->stride * l->pe + l->off + i * (int64_t)sl_dtype_size(dt);
  if (sl_dtype_isfloat(dt)) snprintf(out, size, "%.9g", sl_get_num(dt, p, 0));
  else snprintf(out, size, "%lld", (long long)sl_get_int(dt, p, 0));
}

/* what a block parked on a set waits for, e.g. "wait_until_all(x[0..4) on
** PE 1, CMP_EQ, 5): x[2] holds 0" */
int sli_ws_what(const sl_machine *m, const sl_block *b, char *out, size_t size) {
  const sl_wset *w = &b->ws;
  const sl_buf *bf = &m->bufs[w->ivars.buf];
  int64_t esz = (int64_t)sl_dtype_size((sl_dtype)bf->dtype), first = w->ivars.off / esz;
  int64_t at = w->mode == SL_WS_ALL ? b->wcur : 0;
  char val[40], cur[40];
  if (w->has_vals) snprintf(val, sizeof(val), "vector");
  else if (sl_dtype_isfloat((sl_dtype)bf->dtype)) snprintf(val, sizeof(val), "%.9g", w->fval);
  else snprintf(val, sizeof(val), "%lld", (long long)w->ival);
  elem_text(m, &w->ivars, at, cur, sizeof(cur));
  return snprintf(out, size, "%s(%s[%lld..%lld) on PE %d, %s, %s): %s[%lld] holds %s",
                  w->name, bf->name, (long long)first, (long long)(first + w->n), (int)w->ivars.pe,
                  sl_cmp_name(w->cmp), val, bf->name, (long long)(first + at), cur);
}
