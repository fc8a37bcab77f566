/*
** amo.c -- one element at a time: p / g (shmem_device_rma.h) and the
** atomics of shmem_device_amo.h and of the engines' headers. An untyped or
** typed atomic takes the first engine the target's topo_list entry holds
** (sl_reach: MTE, then RoCE, then UDMA; the bitwise ones RoCE, then UDMA);
** an engine's own call (mte_, roce_, udma_) names its engine. atomic_add
** of int8, int16, bf16, fp16, int32 and fp32 over MTE takes the library's
** UB + MTE3 atomic-add path (a set_value into the scratch UB, S_MTE3, an
** MTE3 copy with SetAtomicAdd); every other atomic is a read-modify-write
** that lands at the target after the path's latency (Ascend950's scalar
** atomics over MTE, its RDMA or UDMA engine's), and a fetching one parks its
** block until the reply is back.
*/
#include <string.h>

#include "sli.h"

#define T(x) (1u << (x))
#define T_MTE_ADD (T(SL_INT8) | T(SL_INT16) | T(SL_BF16) | T(SL_FP16) | T(SL_INT32) | T(SL_FP32))
#define T_950 (T(SL_INT32) | T(SL_INT64) | T(SL_UINT32) | T(SL_UINT64))
#define T_950_ADD (T(SL_INT64) | T(SL_UINT32) | T(SL_UINT64))

/* every atomic the library declares: name, operation, fetch, the dtypes its
** untyped and typed calls take (the ACLSHMEM_TYPE_FUNC_ATOMIC_* lists of
** shmem_device_amo.h), the dtypes of each engine's own call (its header:
** shmem_device_mte.h, _rdma.h, _udma.h), the engines that declare one */
#define E_MTE (1u << SL_ENGINE_MTE)
#define E_ROCE (1u << SL_ENGINE_ROCE)
#define E_UDMA (1u << SL_ENGINE_UDMA)
#define E_ALL (E_MTE | E_ROCE | E_UDMA)
#define F32 T(SL_FP32)
#define T_ADD (T_MTE_ADD | T_950_ADD)
const sl_amo_form sl_amo_forms[] = {
  {"atomic_add", SL_AMO_ADD, 0, T_ADD, {0, T_ADD, T_950, T_950 | F32}, E_ALL},
  {"atomic_fetch_add", SL_AMO_ADD, 1, T_950, {0, T_950 | F32, T_950, T_950}, E_ALL},
  {"atomic_inc", SL_AMO_INC, 0, T_950, {0, T_950 | F32, T_950, T_950 | F32}, E_ALL},
  {"atomic_fetch_inc", SL_AMO_INC, 1, T_950, {0, T_950 | F32, T_950, T_950}, E_ALL},
  {"atomic_fetch", SL_AMO_FETCH, 1, T_950, {0, T_950 | F32, T_950, T_950}, E_ALL},
  {"atomic_set", SL_AMO_SET, 0, T_950 | F32, {0, T_950 | F32, T_950 | F32, T_950}, E_ALL},
  {"atomic_swap", SL_AMO_SET, 1, T_950 | F32, {0, T_950 | F32, T_950 | F32, T_950}, E_ALL},
  {"atomic_compare_swap", SL_AMO_CAS, 1, T_950, {0, T_950, T_950, T_950}, E_ALL},
  {"atomic_and", SL_AMO_AND, 0, T_950, {0, 0, T_950, T_950}, E_ROCE | E_UDMA},
  {"atomic_or", SL_AMO_OR, 0, T_950, {0, 0, T_950, T_950}, E_ROCE | E_UDMA},
  {"atomic_xor", SL_AMO_XOR, 0, T_950, {0, 0, T_950, T_950}, E_ROCE | E_UDMA},
  {"atomic_fetch_and", SL_AMO_AND, 1, T_950, {0, 0, T_950, T_950}, E_ROCE | E_UDMA},
  {"atomic_fetch_or", SL_AMO_OR, 1, T_950, {0, 0, T_950, T_950}, E_ROCE | E_UDMA},
  {"atomic_fetch_xor", SL_AMO_XOR, 1, T_950, {0, 0, T_950, T_950}, E_ROCE | E_UDMA},
  {NULL, 0, 0, 0, {0, 0, 0, 0}, 0}
};

/* the library's name of dtype t in its typed calls (half, bfloat16, float) */
const char *sl_dtype_cann(int t) {
  switch (t) {
    case SL_FP16: return "half";
    case SL_BF16: return "bfloat16";
    case SL_FP32: return "float";
    case SL_FP64: return "double";
    default: return sl_dtype_name((sl_dtype)t);
  }
}

/* a GM element of this call: symmetric when another PE's, in bounds */
static int check_elem(sl_machine *m, const sl_block *b, const sl_loc *l, int pe,
                      int write, const char *what) {
  if (pe < 0 || pe >= m->p.n_pes)
    return sli_err(m, SL_EARG, 3, "PE %d out of range 0..%d", pe, m->p.n_pes - 1);
  if (l->buf < 0) return sli_err(m, SL_EARG, 1, "GM address expected, got UB");
  if (m->bufs[l->buf].space != SL_SPACE_SYM && pe != b->pe)
    return sli_err(m, SL_EARG, 1, "another PE's element must be a symmetric address");
  return sli_bounds(m, l, (int64_t)sl_dtype_size((sl_dtype)l->dtype), write, what, 1,
                    b->pe, b->b);
}

/* queue the landing of a one-element write (p, an AMO) from blk's S pipe:
** it lands signal_ns + alpha later; a fetching one replies alpha after that;
** eng (SL_ENG_RDMA, SL_ENG_UDMA or -1) is the DMA engine whose quiet waits for it */
static int send_elem(sl_machine *m, int blk, const sl_loc *l, int path, int eng, int op,
                     int fetch, int64_t iv, double fv, int64_t cond, int32_t snap) {
  sl_block *b = &m->blocks[blk];
  sl_event *e;
  int32_t id;
  sl_time land;
  if ((e = sli_event_new(m, EV_SIGNAL, blk, &id)) == NULL)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for an event");
  e->op = op;
  e->vop = fetch;
  e->val = iv;
  e->val2 = cond;
  e->s = fv;
  e->snap = snap;
  e->pipe = path;                       /* the reply's path (an event of S has no pipe) */
  sli_addr(l, &e->dst);
  b->t += m->ps.signal;
  land = b->t + m->ps.alpha[path];
  if (land > b->inflight) b->inflight = land;          /* quiet waits for it */
  if (eng >= 0 && land > b->dma_done[eng]) b->dma_done[eng] = land;   /* and that engine's quiet */
  if (SLI_TRACING(m)) sli_trace(m, b->t, land, b->pe, b->b, 2, path, 4, l->pe, -1);
  if (sli_schedule(m, land, id) != SL_OK) return sli_err(m, SL_ENOMEM, 0, "not enough memory");
  if (fetch) { b->state = B_AMO; b->wsite = m->site; }
  return SL_OK;
}

/* aclshmem_NAME_p: one element to PE pe, a scalar store and the library's
** dcci_cacheline write-back: S goes on once it has landed (a plain write:
** racecheck judges it, it releases nothing) */
int sl_p(sl_machine *m, int blk, const sl_loc *dst, int64_t iv, double fv, int pe) {
  sl_block *b = &m->blocks[blk];
  sl_loc l = *dst;
  int st, path = sl_path(m, b->pe, pe);
  l.pe = pe;
  if ((st = check_elem(m, b, &l, pe, 1, "p")) != SL_OK) return st;
  sli_race_access(m, blk, SL_PIPE_S, &l, (int64_t)sl_dtype_size((sl_dtype)l.dtype), 1);
  st = send_elem(m, blk, &l, path, -1, SL_AMO_SET, 0, iv, fv, 0, -1);
  b->t += m->ps.alpha[path];
  return st;
}

/* aclshmem_NAME_g: one element from PE pe, a scalar load (a round trip) */
int sl_g(sl_machine *m, int blk, const sl_loc *src, int pe, int64_t *iv, double *fv) {
  sl_block *b = &m->blocks[blk];
  sl_loc l = *src;
  sl_addr a;
  int st;
  l.pe = pe;
  if ((st = check_elem(m, b, &l, pe, 0, "g")) != SL_OK) return st;
  sli_race_access(m, blk, SL_PIPE_S, &l, (int64_t)sl_dtype_size((sl_dtype)l.dtype), 0);
  sli_addr(&l, &a);
  sli_init_read(m, &a, (int64_t)sl_dtype_size((sl_dtype)l.dtype), blk, SL_PIPE_S, m->site);
  {                                     /* a read of a new place is progress */
    const int64_t f[] = { -2, l.buf, l.pe, l.off, l.dtype };
    sli_guard_access(m, blk, f, sizeof(f) / sizeof(f[0]));
  }
  *iv = 0;                               /* a timing-only run's unbacked bytes read 0 */
  *fv = 0;
  if (sli_ptr(m, &a) != NULL) {
    *iv = sl_get_int((sl_dtype)l.dtype, sli_ptr(m, &a), 0);
    *fv = sl_get_num((sl_dtype)l.dtype, sli_ptr(m, &a), 0);
  }
  b->t += m->ps.scalar + 2 * m->ps.alpha[sl_path(m, b->pe, pe)];
  return SL_OK;
}

/* the library's UB + MTE3 atomic add (its event id 0; ub the scratch UB) */
static int add_mte(sl_machine *m, int blk, const sl_loc *dst, const sl_loc *ub,
                   int64_t iv, double fv, int pe) {
  int dt = dst->dtype, st;
  sl_loc u = *ub;
  u.dtype = dt;
  if ((st = sl_set_value(m, blk, &u, 0, fv, iv, !sl_dtype_isfloat((sl_dtype)dt))) != SL_OK ||
      (st = sl_set_flag(m, blk, SL_EV_S_MTE3, 0)) != SL_OK ||
      (st = sl_wait_flag(m, blk, SL_EV_S_MTE3, 0)) != SL_OK ||
      (st = sl_set_atomic(m, blk, SL_OP_ADD, dt)) != SL_OK)
    return st;
  st = sl_mte_ub(m, blk, 0, dst, &u, 1, pe);
  sl_set_atomic(m, blk, SL_OP_NONE, dt);      /* SetAtomicNone, as the library does */
  return st;
}

static const char *const eng_name[] = { "", "mte", "roce", "udma" };

/* the engine the library's untyped or typed call of form f takes to PE pe:
** the first its topo_list entry holds, MTE before RoCE before UDMA (the
** bitwise ones RoCE before UDMA: they have no MTE path); an error where the
** library aborts the kernel ("only supported on ROCE and UDMA path") */
static int auto_engine(sl_machine *m, const sl_amo_form *f, int me, int pe, int *engine) {
  unsigned reach = sl_reach(m, me, pe);
  if (f->own[SL_ENGINE_MTE] && (reach & SL_DOP_MTE)) *engine = SL_ENGINE_MTE;
  else if (reach & SL_DOP_ROCE) *engine = SL_ENGINE_ROCE;
  else if (reach & SL_DOP_UDMA) *engine = SL_ENGINE_UDMA;
  else if (f->own[SL_ENGINE_MTE])
    return sli_err(m, SL_EARG, 3, "%s: PE %d reaches PE %d over RDMA only and "
                   "data_op_engine_type has no ROCE", f->name, me, pe);
  else
    return sli_err(m, SL_EARG, 3, "%s to PE %d: only the RoCE and UDMA transports carry "
                   "it and data_op_engine_type gives neither to PE %d (init with ROCE)",
                   f->name, pe, pe);
  return SL_OK;
}

/* the route an atomic of form f on dtype dt takes from engine (AUTO: the
** init's topology) and the path to its PE: *mte 1 for the UB + MTE3 add, 0
** for a read-modify-write over *path, *eng the engine that carries it; an
** error where the library aborts the kernel */
static int amo_route(sl_machine *m, const sl_amo_form *f, int engine, int dt, int me,
                     int pe, int *path, int *mte, int *eng) {
  unsigned bit = T(dt);
  int own = engine != SL_ENGINE_AUTO, st;
  if (!own && !(f->types & bit))
    return sli_err(m, SL_EARG, 1, "%s does not take %s", f->name, sl_dtype_name((sl_dtype)dt));
  if (engine == SL_ENGINE_MTE && *path == SL_PATH_RDMA)
    return sli_err(m, SL_EARG, 3, "mte_%s: the MTE transport does not reach another "
                   "server (roce_%s does)", f->name, f->name);
  if (!own && (st = auto_engine(m, f, me, pe, &engine)) != SL_OK) return st;
  *eng = engine;
  if (engine == SL_ENGINE_ROCE) *path = SL_PATH_RDMA;    /* through the NICs, whatever the PEs */
  if (!(f->own[engine] & bit)) {
    if (own) return sli_err(m, SL_EARG, 1, "%s_%s does not take %s", eng_name[engine],
                            f->name, sl_dtype_name((sl_dtype)dt));
    return sli_err(m, SL_EARG, 1, "%s of %s is not supported over %s (the library's %s_%s "
                   "does not take it)", f->name, sl_dtype_name((sl_dtype)dt),
                   sl_path_name(*path), eng_name[engine], f->name);
  }
  *mte = engine == SL_ENGINE_MTE && f->op == SL_AMO_ADD && !f->fetch && (T_MTE_ADD & bit);
  if (!*mte && !m->p.scalar_amo)
    return sli_err(m, SL_EARG, 1, "%s%s%s of %s needs Ascend950's %s atomics (the profile's "
                   "scalar_amo is off)", eng_name[own ? engine : 0], own ? "_" : "", f->name,
                   sl_dtype_name((sl_dtype)dt), *path == SL_PATH_RDMA ? "RDMA engine" : "scalar");
  return SL_OK;
}

/* an atomic of form f on the element dst of PE pe (see sl.h) */
int sl_amo(sl_machine *m, int blk, const sl_amo_form *f, int engine, const sl_loc *dst,
           const sl_loc *ub, int64_t iv, double fv, int64_t cond, int pe) {
  sl_block *b = &m->blocks[blk];
  sl_loc l = *dst;
  int st, mte = 0, op = f->op, path, eng = SL_ENGINE_AUTO;
  l.pe = pe;
  if ((st = check_elem(m, b, &l, pe, op != SL_AMO_FETCH, f->name)) != SL_OK) return st;
  path = sl_path(m, b->pe, pe);
  if ((st = amo_route(m, f, engine, l.dtype, b->pe, pe, &path, &mte, &eng)) != SL_OK)
    return st;
  if (mte) {
    if (ub == NULL) return sli_err(m, SL_EARG, 0, "%s needs the scratch UB", f->name);
    return add_mte(m, blk, dst, ub, iv, fv, pe);
  }
  if ((st = sli_backed(m, &l, 1, f->name)) != SL_OK) return st;   /* its values steer */
  if (op == SL_AMO_INC) { op = SL_AMO_ADD; iv = 1; fv = 1; }
  if (l.dtype == SL_FP32) fv = (double)(float)fv;      /* the call's T value: a float */
  return send_elem(m, blk, &l, path, eng == SL_ENGINE_UDMA ? SL_ENG_UDMA
                   : path == SL_PATH_RDMA ? SL_ENG_RDMA : -1, op, f->fetch, iv, fv, cond,
                   op == SL_AMO_FETCH ? -1 : sli_race_release(m, blk));
}

/* the new value of an integer element old under op */
static int64_t int_op(int op, int64_t old, int64_t v, int64_t cond) {
  uint64_t o = (uint64_t)old, x = (uint64_t)v;
  switch (op) {
    case SL_AMO_ADD: return (int64_t)(o + x);
    case SL_AMO_CAS: return old == cond ? v : old;
    case SL_AMO_AND: return (int64_t)(o & x);
    case SL_AMO_OR: return (int64_t)(o | x);
    case SL_AMO_XOR: return (int64_t)(o ^ x);
    case SL_AMO_FETCH: return old;
    default: return v;                 /* SET, SWAP */
  }
}

/* a signal, p or atomic lands at t: apply it, wake its waiters, and send a
** fetching one's old value back to its block */
void sli_elem_land(sl_machine *m, const sl_event *e, sl_time t) {
  sl_dtype dt = (sl_dtype)e->dst.dtype;
  uint8_t *d = sli_ptr(m, &e->dst);      /* NULL: a p to unbacked bytes (timing-only) */
  int isf = sl_dtype_isfloat(dt);
  int64_t es = (int64_t)sl_dtype_size(dt);
  int64_t old = d == NULL || isf ? 0 : sl_get_int(dt, d, 0);      /* the old value, */
  double fold = d == NULL || !isf ? 0 : sl_get_num(dt, d, 0);     /* as its kind reads it */
  if (d != NULL && e->op != SL_AMO_FETCH) {
    sli_lazy_touch(m, &e->dst, es);      /* a staged copy reads it */
    sli_gm_written(m, &e->dst);
    if (!isf) {
      int64_t nv = int_op(e->op, old, e->val, e->val2);
      sl_set_int(dt, d, 0, nv);
      if (nv != old) sli_progress(m);    /* a new value: the runaway guard's progress */
    } else {
      double nf = e->op == SL_AMO_ADD ? fold + e->s : e->s;
      sl_set_num(dt, d, 0, nf);
      if (nf != fold) sli_progress(m);
    }
    sli_init_write(m, &e->dst, es);
    if (m->race && e->snap >= 0) sli_race_signal(m, &e->dst, e->snap, e->op != SL_AMO_SET);
    if (m->bufs[e->dst.buf].waiters > 0)
      sli_notify(m, &e->dst, es, t, e->blk);
  }
  if (d == NULL) sli_progress(m);        /* unbacked: counted as a change */
  if (e->vop) {                          /* the reply travels back */
    sl_block *b = &m->blocks[e->blk];
    if (isf) { b->retkind = SL_RES_NUM; memcpy(&b->ret, &fold, sizeof(fold)); }
    else { b->retkind = SL_RES_INT; b->ret = old; }
    sli_race_observe(m, e->blk, &e->dst);
    sli_wake(m, e->blk, t + m->ps.alpha[e->pipe]);
  }
}
