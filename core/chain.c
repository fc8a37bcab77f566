/*
** chain.c -- a pipelined transfer as one flow (timing-only machines; chain_flow,
** doc/chain.md).
**
** op.get_pipelined / put_pipelined issue a double-buffered chain (sl_pipe_xfer):
** chunk c is read GM -> UB on MTE2 into buffer c % 2, written UB -> GM on
** MTE3 once it landed, and the read of chunk c + 2 waits for the write of
** chunk c to land. When one leg is slow enough that the other never holds it
** up (the steady leg: a whole chunk of it at its cap takes at least the other
** leg's chunk and both latencies), the chunked chain streams the steady leg's
** chunks back to back, each starting where the one before ended, in one flow
** that settles may re-rate, and the other leg's chunks fit in its gaps.
**
** The one-flow form issues the chain's whole chunks but the last that way: the
** steady leg as one transfer whose flow ends where the chunked flow's chunk
** would (each chunk's end rounded up to a picosecond as the chunked flow
** rounds it, through every re-rate: flow.c's end_at and catch_up ask
** sli_chain_rest and sli_chain_pass); the other leg's chunks but its edge
** ones as ghosts, flows of their own in the solver with no instruction,
** landing or flag behind them; the edge chunks as the chunked calls issue them
** (a get's write of the chunk before the last; a put's reads of the first two);
** the flags as the chunked calls leave them, so the last chunk and the final
** waits follow as the chunked calls, and the last chunk goes on in the steady
** flow as it would. The S clock advances by the issue costs of the calls it
** stands for.
**
** A ghost starts where the chunked chain's chunk would: glat (the steady
** chunk's landing) after the end of the steady chunk it follows (a get's write
** g after read g, a put's read g after write g - 2 lands), or when the ghost
** before it ends if later, and crosses the local HBM at its pipe's rate, so a
** full HBM shares as it would with the chunks. No event marks a steady chunk's
** end: the chain flow's end-heap key is its next ghost's start (sli_chain_rest),
** flow.c hands that key to sli_chain_due, and a put's last read waits for a
** flag fired at its key (the write of chunk n - 3 landing), a get's for a flag
** fired where its last ghost (the write of chunk n - 3) lands, as the chunked
** chain's read of chunk n - 1 waits for them. Any other ghost that ends later
** than the chunked chain's next chunk would wait for it is counted
** (m:ghosts().late; none on any run measured).
**
** With a settle window (settle_ns > 0) a chain whose other leg's HBM has room
** for it at its cap at the chain's start has no ghosts (bare): its other leg's
** chunks stay out of the solver (their L2 touched at once, a put's last read
** still gated by its flag at its one key), timed as the chunked chain's while
** that HBM stays short of full; a chain that finds it fuller has its ghosts.
**
** Taken only when every condition holds at the chain's start, from the
** model's state, else the chunked calls issue it: a timing-only machine with
** no checks or tracing; two buffers, three chunks or more; no atomic mode;
** every location in bounds, none backed; MTE3 free for the chain (idle, or its
** last instruction a flag MTE2 waits for before the chain), the chain's
** flags unset; the steady leg at its cap as above; the other leg local.
**
** The queues are not a condition: where the chunked calls would fill a queue
** past queue_depth and park S until a chunk lands, S goes on here (its
** instructions queue behind the chain's, which the pipes reach only after the
** chain's chunks, so no pipe moves; S's own clock does). A block may so queue
** several chains before its pipe starts the first: each steady leg waits in
** its pipe's queue of armed legs (a pipe starts its instructions in order).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

/* a chain's steady-leg transfer, waiting for its pipe to start it, and where
** its ghosts go: a get's writes of its chunks but the last to local GM, a
** put's reads of its chunks from the third on from local GM */
typedef struct sl_chain_arm {
  int32_t op;               /* the instruction */
  int32_t gpe, gbuf;        /* the ghosts' GM: PE, buffer (gbuf -1: no ghosts) */
  int32_t gpipe;            /* their pipe */
  int32_t shift;            /* the ghost keyed at chunk j's end is chunk j + shift's */
  int32_t tok;              /* a put's: the flag its last chunk's read waits for, fired
                               at the key of the chain's chunk n - 2 (-1: none) */
  int32_t ltok;             /* a get's: the flag its last chunk's read waits for, fired
                               where the ghost of chunk n - 2 lands (-1: none) */
  int64_t n;                /* chunks */
  int64_t goff;             /* the ghost of chunk 0's offset in gbuf */
  double size;              /* bytes of each */
  sl_time glat, gland;      /* a chunk's end to its ghost's start; a ghost's end to its
                               landing */
  double last;              /* bytes of the last chunk (0: size; a whole bare get's) */
} sl_chain_arm;

/* the steady legs a block's pipe (MTE2 or MTE3) has queued, in issue order:
** S may issue several chains before the pipe starts the first, and a pipe
** starts its instructions in order, so the oldest is the next to start */
typedef struct sl_chain_fifo {
  sl_chain_arm *a;
  int32_t head, len, cap;   /* a ring */
} sl_chain_fifo;

/* a block's chain streaming now and its ghosts: the chunks of the other leg
** but the edge one, each a flow of its own in the solver (sli_flow_ghost) that
** starts where the chunked chain's would (glat after its chunk's end, or when
** the ghost before it ends, if later) and leaves at its end: the HBM they
** cross carries them as it would carry the chunked chain's */
typedef struct sl_chain_run {
  int32_t f;                /* the chain's flow (-1: none) */
  uint64_t seq;             /* its sequence number while it is the chain's */
  int32_t ghost;            /* the ghost streaming (-1: none) */
  int32_t waits;            /* 1: the next ghost waits for it to end */
  int64_t gidx;             /* the chunk of the ghost streaming */
  int64_t next;             /* the next ghost's chunk (0-based) */
  int64_t k;                /* the chain flow's chunks */
  sl_chain_arm a;           /* where the ghosts go */
} sl_chain_run;

struct sl_chains {
  sl_chain_fifo *q;         /* per block: [2 * blk] MTE2's, [2 * blk + 1] MTE3's */
  int32_t *front;           /* as q: the instruction of its oldest leg (-1: none), read at
                               every transfer's start (a small array, mostly cached) */
  sl_chain_run *run;        /* per block */
  int32_t nblk;             /* blocks the table holds */
  int64_t one, chunked;     /* chains issued as one flow, and chunked */
  int64_t ghosts, late;     /* ghosts started; ghosts that ended later than the chunked
                               chain's next chunk would have waited for (not exact) */
};

/* capacity in bytes per ps of GBps (flow.c's) */
static double bpps(double GBps) { return GBps / 1000.0; }

/* picoseconds a chunk of bytes takes at rate, as flow.c's end_at rounds it */
static sl_time chunk_ps(double bytes, double rate) {
  double d = ceil(bytes / rate - 1e-9);
  return d > 0 ? (sl_time)d : 0;
}

/* the cap of an MTE transfer (get: MTE2's read, else MTE3's write) over
** path, as flow.c's tighten_cap finds it: the core's rate, or what the HBM or
** one link carries alone where that is less */
static double leg_cap(const sl_machine *m, int get, int path) {
  const sl_params *p = &m->p;
  double cap = bpps((get ? p->mte2_bytes_per_cycle : p->mte3_bytes_per_cycle) * p->core_ghz);
  double link = cap, hbm = bpps(p->hbm_GBps);
  if (path == SL_PATH_HCCS)
    link = bpps(p->hccs_GBps) / (1.0 / (get ? p->hccs_read_eff : p->hccs_write_eff));
  else if (path == SL_PATH_SIO) link = bpps(p->sio_GBps);
  else if (path == SL_PATH_RDMA) link = bpps(p->rdma_GBps);
  if (hbm < cap) cap = hbm;
  return link < cap ? link : cap;
}

/* 1 when l (a GM location when gm) holds bytes [off, off + bytes) and no data */
static int quiet_loc(sl_machine *m, const sl_loc *l, int64_t bytes, int gm) {
  sl_addr a;
  if (gm != (l->buf >= 0)) return 0;
  if (gm && (l->buf >= m->nbufs || m->bufs[l->buf].freed || l->pe < 0 || l->pe >= m->p.n_pes))
    return 0;
  if (bytes < 0 || l->off < 0 || l->off > l->cap || bytes > l->cap - l->off) return 0;
  sli_addr(l, &a);
  return sli_ptr(m, &a) == NULL;
}

/* is the MTE3 pipe free before the chain's first read can start? Empty and
** idle, or its last instruction a set_flag that a wait_flag queued on MTE2
** waits for (the drain of the chain before): a set of MTE3_MTE2 (the one event
** from MTE3 to MTE2) whose wait S has issued, so the flag is no longer set
** (the wait cannot have run: the set has not). That set is the latest of its
** flag, so the flag's token is its own */
static int mte3_clear(const sl_machine *m, const sl_block *b) {
  int32_t op = b->qtail[QI(SL_PIPE_MTE3)];
  int flag, id;
  if (op < 0) return !b->busy[QI(SL_PIPE_MTE3)];
  if (m->ops[op].kind != OP_SET) return 0;
  flag = m->ops[op].path;
  id = flag % SL_NEVENT_IDS;
  return flag / SL_NEVENT_IDS == SL_EV_MTE3_MTE2 && !(b->flagset[SL_EV_MTE3_MTE2] >> id & 1) &&
         b->tok[SL_EV_MTE3_MTE2][id] == m->ops[op].tok;
}

/* the chain's own state lets the one-flow form in: machine, block, places */
static int chain_quiet(sl_machine *m, int blk, const sl_pipe_xfer *x, int64_t esz, int64_t n) {
  const sl_block *b = &m->blocks[blk];
  const sl_loc *rem = x->get ? &x->src : &x->dst;
  uint16_t bits = 3;
  if (!m->p.timing_only || m->p.check != 0 || m->race != NULL || SLI_TRACING(m) ||
      x->bufs != 2 || n < 2 || b->atomic != SL_OP_NONE || x->pe < 0 || x->pe >= m->p.n_pes)
    return 0;
  if (!mte3_clear(m, b) ||        /* MTE3 is free for the chunks */
      (b->flagset[SL_EV_MTE2_MTE3] & bits) || (b->flagset[SL_EV_MTE3_MTE2] & bits))
    return 0;
  if (x->dst.dtype != x->src.dtype || x->ub.dtype != x->src.dtype || rem->buf < 0 ||
      rem->buf >= m->nbufs || m->bufs[rem->buf].space != SL_SPACE_SYM ||
      x->ub.pe != b->pe || x->ub.core != b->b)
    return 0;
  {
    sl_loc r = *rem;
    r.pe = x->pe;
    return quiet_loc(m, &r, x->count * esz, 1) &&
           quiet_loc(m, x->get ? &x->dst : &x->src, x->count * esz, 1) &&
           quiet_loc(m, &x->ub, 2 * x->half * esz, 0);
  }
}

/* offset view of a location, bytes further (in bounds: checked) */
static sl_loc at(const sl_loc *l, int64_t bytes) {
  sl_loc r = *l;
  r.off += bytes;
  return r;
}

/* queue a steady leg (arm: its instruction's field is set here) of block
** blk's pipe; 0 when out of memory */
static int arm_push(sl_machine *m, int blk, int pipe, int32_t op, const sl_chain_arm *arm) {
  sl_chain_fifo *f = &m->chains->q[2 * blk + (pipe == SL_PIPE_MTE3)];
  if (f->len == f->cap) {
    int32_t nc = f->cap ? 2 * f->cap : 4, i;
    sl_chain_arm *na = malloc((size_t)nc * sizeof(*na));
    if (na == NULL) return 0;
    for (i = 0; i < f->len; i++) na[i] = f->a[(f->head + i) % f->cap];
    free(f->a);
    f->a = na;
    f->head = 0;
    f->cap = nc;
  }
  f->a[(f->head + f->len) % f->cap] = *arm;
  f->a[(f->head + f->len++) % f->cap].op = op;
  if (f->len == 1) m->chains->front[f - m->chains->q] = op;
  return 1;
}

/* queue one transfer on pipe (as mte.c's transfer): its flow moves flow bytes,
** its landing lands ev_bytes of src on dst; a chain's steady leg when arm is
** not NULL (queued to start as one before the pipe may start it: an idle pipe
** starts it at once) */
static int xfer(sl_machine *m, int blk, int pipe, int gm_pe, const sl_loc *dst,
                const sl_loc *src, int64_t ev_bytes, int64_t flow_bytes,
                const sl_chain_arm *arm) {
  sl_ins *o;
  int32_t ev, op;
  int st = sli_copy_event(m, blk, pipe, dst, src, ev_bytes, SL_OP_NONE,
                          pipe == SL_PIPE_MTE2 ? -ev_bytes : ev_bytes, &ev);
  if (st != SL_OK) return st;
  if ((op = sli_op_new(m, OP_XFER, &o)) < 0)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for an instruction");
  o->ev = ev;
  o->gm_pe = gm_pe;
  o->path = sl_path(m, m->blocks[blk].pe, gm_pe);
  o->bytes = flow_bytes;
  m->path_bytes[o->path] += flow_bytes;
  if (arm != NULL && !arm_push(m, blk, pipe, op, arm))
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for a chain");
  return sli_enqueue(m, blk, pipe, op);
}

/* the chain table, as large as this launch's blocks; 0 when out of memory */
static int chains(sl_machine *m) {
  int32_t n = m->p.n_pes * m->block_dim, i;
  sl_chain_fifo *nq;
  sl_chain_run *nr;
  int32_t *nf;
  if (m->chains == NULL && (m->chains = calloc(1, sizeof(*m->chains))) == NULL) return 0;
  if (m->chains->nblk >= n) return 1;
  if ((nq = realloc(m->chains->q, (size_t)n * 2 * sizeof(*nq))) == NULL) return 0;
  memset(nq + 2 * m->chains->nblk, 0, (size_t)(n - m->chains->nblk) * 2 * sizeof(*nq));
  m->chains->q = nq;
  if ((nf = realloc(m->chains->front, (size_t)n * 2 * sizeof(*nf))) == NULL) return 0;
  for (i = 2 * m->chains->nblk; i < 2 * n; i++) nf[i] = -1;
  m->chains->front = nf;
  if ((nr = realloc(m->chains->run, (size_t)n * sizeof(*nr))) == NULL) return 0;
  for (i = m->chains->nblk; i < n; i++) nr[i].f = nr[i].ghost = -1;
  m->chains->run = nr;
  m->chains->nblk = n;
  return 1;
}

/* does the steady leg set the pace? Chunks of size bytes: the get's reads
** (the put's writes) at their cap take at least the other leg's chunk and
** both latencies, and room for S to issue a chunk ahead; the other leg local
** (its ghosts cross the local HBM alone) */
static int steady(sl_machine *m, int blk, const sl_pipe_xfer *x, double size) {
  int me = m->blocks[blk].pe, far = sl_path(m, me, x->pe);
  int rpath = x->get ? far : sl_path(m, me, x->src.pe);
  int wpath = x->get ? sl_path(m, me, x->dst.pe) : far;
  double rcap = leg_cap(m, 1, rpath), wcap = leg_cap(m, 0, wpath);
  sl_time dr = chunk_ps(size, rcap), dw = chunk_ps(size, wcap);
  sl_time lr = m->ps.mte_setup + sli_alpha(m, rpath), lw = m->ps.mte_setup + sli_alpha(m, wpath);
  if ((x->get ? wpath : rpath) != SL_PATH_LOCAL) return 0;
  return x->get ? dr >= lr + dw + lw + 8 * m->ps.issue
                : dw >= lw + dr + lr + 8 * m->ps.issue;
}

/* with a settle window, does the other leg need no ghosts? Its HBM has room for
** it at its cap now (the chain's start): its chunks then stay out of the flow
** solver, timed as the chunked chain's while that HBM stays short of full */
static int bare(sl_machine *m, int blk, const sl_pipe_xfer *x) {
  int me = m->blocks[blk].pe;
  int pe = x->get ? x->dst.pe : x->src.pe, path = sl_path(m, me, pe);
  const sl_res *h = &m->hbm[pe];
  if (m->ps.settle <= 0) return 0;      /* exact: always ghosts */
  return h->use + leg_cap(m, !x->get, path) <= h->C * (1 - 1e-6);
}

/* a put's one-flow form (issue): the reads of chunks 0 and 1 as the chunked
** calls issue them, the writes of chunks 0..k-1 as one flow; the reads of
** chunks 2..k-1 are its ghosts, and the flag the read of chunk k waits for
** (the landing of the write of chunk k - 2) fires at that chunk's key */
static int issue_put(sl_machine *m, sl_block *b, int blk, const sl_pipe_xfer *x,
                     sl_chain_arm *arm, sl_loc rsrc, sl_loc rdst, int nog) {
  int64_t size = (int64_t)arm->size, k = arm->n, all = k * size;
  int ha = (int)((k - 1) % 2), hb = 1 - ha, st;
  uint16_t bit = (uint16_t)(1u << hb);
  sl_loc u1 = at(&x->ub, size), s1 = at(&rsrc, size), ua = at(&x->ub, ha * size);
  arm->gpe = rsrc.pe;
  arm->gbuf = rsrc.buf;
  arm->goff = rsrc.off;
  arm->gpipe = SL_PIPE_MTE2;
  arm->shift = 2;
  if ((st = xfer(m, blk, SL_PIPE_MTE2, rsrc.pe, &x->ub, &rsrc, size, size, NULL)) ||
      (st = sli_flag_set(m, b, SL_EV_MTE2_MTE3, 0)) ||
      (st = xfer(m, blk, SL_PIPE_MTE2, rsrc.pe, &u1, &s1, size, size, NULL)) ||
      (st = sli_flag_set(m, b, SL_EV_MTE2_MTE3, 1)))
    return st;
  if (sli_tok_new(m, &b->tok[SL_EV_MTE3_MTE2][hb]) != SL_OK)   /* set, fired by the chain */
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for a flag");
  b->flagset[SL_EV_MTE3_MTE2] |= bit;
  arm->tok = b->tok[SL_EV_MTE3_MTE2][hb];
  m->path_bytes[sl_path(m, b->pe, rsrc.pe)] += all - 2 * size;   /* the ghosts' */
  if (nog) {                            /* none: the reads' L2 at once */
    arm->gbuf = -1;
    sli_l2_touch(m, rsrc.pe, rsrc.buf, rsrc.off + 2 * size, all - 2 * size);
  }
  if ((st = sli_flag_wait(m, b, SL_EV_MTE2_MTE3, 0)) ||      /* lands the whole range: */
      (st = xfer(m, blk, SL_PIPE_MTE3, rdst.pe, &rdst, &ua, all, all, arm)) ||   /* its L2 */
      (st = sli_flag_wait(m, b, SL_EV_MTE2_MTE3, 1)))
    return st;
  return sli_flag_set(m, b, SL_EV_MTE3_MTE2, ha);
}

/* a get's one-flow form with no ghosts (bare): the reads as one flow, the
** writes but the last out of the solver (their L2 at once), so buffer hb is
** free at once; the write of chunk k - 1 and buffer ha as issue's */
static int issue_bare_get(sl_machine *m, sl_block *b, int blk, sl_chain_arm *arm, sl_loc rsrc,
                          sl_loc rdst, sl_loc ua, int ha) {
  int64_t size = (int64_t)arm->size, all = arm->n * size;
  sl_loc s = at(&rsrc, all - size), d = at(&rdst, all - size);
  int st;
  arm->gbuf = -1;
  if ((st = xfer(m, blk, SL_PIPE_MTE2, rsrc.pe, &ua, &s, size, all, arm)) ||
      (st = sli_flag_set(m, b, SL_EV_MTE2_MTE3, ha)) ||
      (st = sli_flag_set(m, b, SL_EV_MTE3_MTE2, 1 - ha)) ||
      (st = sli_flag_wait(m, b, SL_EV_MTE2_MTE3, ha)) ||
      (st = xfer(m, blk, SL_PIPE_MTE3, rdst.pe, &d, &ua, size, size, NULL)))
    return st;
  m->path_bytes[sl_path(m, b->pe, rdst.pe)] += all - size;
  sli_l2_touch(m, rdst.pe, rdst.buf, rdst.off, all - size);
  return sli_flag_set(m, b, SL_EV_MTE3_MTE2, ha);
}

/* can a bare get (bare) be issued whole (issue_whole_get)? Its last chunk of
** last bytes, read at most at its cap, takes at least a whole chunk's write at
** its cap: the chunked chain's write of chunk n - 2 ends before the last chunk
** lands, so the last write starts where it would, and no other write is seen */
static int whole(sl_machine *m, int blk, const sl_pipe_xfer *x, double size, double last) {
  int me = m->blocks[blk].pe;
  return x->get && chunk_ps(last, leg_cap(m, 1, sl_path(m, me, x->pe))) >=
                   chunk_ps(size, leg_cap(m, 0, sl_path(m, me, x->dst.pe)));
}

/* a bare get of n chunks issued whole: the reads of every chunk as one flow (its
** last chunk of last bytes), the writes but the last out of the solver (their
** L2 at once) and so both buffers free at once, then the last chunk's write and
** flags as the chunked calls issue them, S's clock stepping as theirs; x is left
** at its final waits */
static int issue_whole_get(sl_machine *m, int blk, sl_pipe_xfer *x, int64_t n, int64_t esz) {
  sl_block *b = &m->blocks[blk];
  int64_t size = x->half * esz, last = (x->count - (n - 1) * x->half) * esz;
  int64_t all = (n - 1) * size + last;
  int hl = (int)((n - 1) % 2), st;
  sl_loc rsrc = x->src, rdst = x->dst, ul = at(&x->ub, hl * size);
  sl_loc s, d;
  sl_chain_arm arm = { -1, -1, -1, SL_PIPE_MTE3, 0, -1, -1, n, 0, (double)size, 0, 0,
                       (double)last };
  rsrc.pe = x->pe;
  s = at(&rsrc, all - last);
  d = at(&rdst, all - last);
  if ((st = xfer(m, blk, SL_PIPE_MTE2, rsrc.pe, &ul, &s, last, all, &arm)) ||
      (st = sli_flag_set(m, b, SL_EV_MTE3_MTE2, 1 - hl)))   /* chunk n - 2's buffer */
    return st;
  m->path_bytes[sl_path(m, b->pe, rdst.pe)] += all - last;
  sli_l2_touch(m, rdst.pe, rdst.buf, rdst.off, all - last);
  b->t += (3 * (n - 1) - 1) * m->ps.issue;   /* the calls of chunks 0..n-2 (each one's mte
                                 and set_flag, the wait_flags of all but the first two),
                                 the last chunk's wait_flag */
  if ((st = sli_flag_set(m, b, SL_EV_MTE2_MTE3, hl)) ||   /* its mte */
      (st = sli_flag_wait(m, b, SL_EV_MTE2_MTE3, hl)) ||
      (st = xfer(m, blk, SL_PIPE_MTE3, rdst.pe, &d, &ul, last, last, NULL)))
    return st;
  b->t += m->ps.issue;
  st = sli_flag_set(m, b, SL_EV_MTE3_MTE2, hl);   /* its set_flag */
  b->t += m->ps.issue;
  x->done = x->count;
  x->c = (int32_t)n;
  x->step = PX_DRAIN;
  return st;
}

/* the one-flow form of chunks 0..k-1 (whole chunks; the last chunk of the
** chain follows as the chunked calls issue it). A get: the reads as one
** flow whose writes but the last are its ghosts, the write of chunk k - 1;
** buffer hb (the next chunk's) is flagged free where the ghost of chunk
** k - 2 lands (a flag the chain fires: the read of chunk k waits for it,
** mostly long done when the flow ends), buffer ha (chunk k - 1's) on MTE3
** after the last write. A put: issue_put */
static int issue(sl_machine *m, int blk, const sl_pipe_xfer *x, int64_t k, int64_t esz,
                 int nog) {
  sl_block *b = &m->blocks[blk];
  int64_t size = x->half * esz, all = k * size;
  int ha = (int)((k - 1) % 2), hb = 1 - ha, st, far;
  sl_loc rsrc = x->src, rdst = x->dst, ua = at(&x->ub, ha * size);
  sl_chain_arm arm = { -1, -1, -1, SL_PIPE_MTE3, 0, -1, -1, k, 0, (double)size, 0, 0, 0 };
  if (x->get) rsrc.pe = x->pe; else rdst.pe = x->pe;
  far = sl_path(m, b->pe, x->pe);
  arm.glat = m->ps.mte_setup + sli_alpha(m, far);   /* the steady chunk's landing */
  arm.gland = m->ps.mte_setup + sli_alpha(m, SL_PATH_LOCAL);
  if (x->get) {                         /* the reads as one flow, then the last write */
    sl_loc s = at(&rsrc, all - size), d = at(&rdst, all - size);
    arm.gpe = rdst.pe;                  /* the writes before it: ghosts */
    arm.gbuf = rdst.buf;
    arm.goff = rdst.off;
    if (nog) return issue_bare_get(m, b, blk, &arm, rsrc, rdst, ua, ha);
    if (sli_tok_new(m, &b->tok[SL_EV_MTE3_MTE2][hb]) != SL_OK)   /* set, fired by the chain */
      return sli_err(m, SL_ENOMEM, 0, "not enough memory for a flag");
    b->flagset[SL_EV_MTE3_MTE2] |= (uint16_t)(1u << hb);
    arm.ltok = b->tok[SL_EV_MTE3_MTE2][hb];
    if ((st = xfer(m, blk, SL_PIPE_MTE2, rsrc.pe, &ua, &s, size, all, &arm)) != SL_OK)
      return st;
    if ((st = sli_flag_set(m, b, SL_EV_MTE2_MTE3, ha)) ||
        (st = sli_flag_wait(m, b, SL_EV_MTE2_MTE3, ha)) ||
        (st = xfer(m, blk, SL_PIPE_MTE3, rdst.pe, &d, &ua, size, size, NULL)))
      return st;
    m->path_bytes[sl_path(m, b->pe, rdst.pe)] += all - size;   /* the ghosts' */
    return sli_flag_set(m, b, SL_EV_MTE3_MTE2, ha);
  }
  return issue_put(m, b, blk, x, &arm, rsrc, rdst, nog);
}

/* at a chain's start (sl_mte_pipe_step): issue it as one flow when every
** condition holds (*taken = 1; x is then at its final waits), else leave it
** to the chunked calls (*taken = 0) */
int sli_chain_issue(sl_machine *m, int blk, sl_pipe_xfer *x, int *taken) {
  int64_t esz = (int64_t)sl_dtype_size((sl_dtype)x->ub.dtype), n, size = x->half * esz;
  int st, nog;
  *taken = 0;
  if (!m->p.chain_flow || x->c != 0 || x->done != 0) return SL_OK;
  if (!chains(m)) return sli_err(m, SL_ENOMEM, 0, "not enough memory for a chain");
  n = (x->count + x->half - 1) / x->half;
  if (n < 3 || !chain_quiet(m, blk, x, esz, n) || !steady(m, blk, x, (double)size)) {
    m->chains->chunked++;
    return SL_OK;
  }
  m->chains->one++;
  *taken = 1;
  nog = bare(m, blk, x);
  if (nog && whole(m, blk, x, (double)size, (double)(x->count - (n - 1) * x->half) * esz))
    st = issue_whole_get(m, blk, x, n, esz);
  else if ((st = issue(m, blk, x, n - 1, esz, nog)) == SL_OK) {
    m->blocks[blk].t += (3 * (n - 1) - 2) * m->ps.issue;   /* S's clock as after the
                       chunked calls of those chunks: each one's mte and set_flag, the
                       wait_flags of all but the first two */
    x->done = (n - 1) * x->half;  /* the last chunk: the chunked calls */
    x->c = (int32_t)(n - 1);
    x->step = PX_WAIT;
  }
  sli_queue_park(m, blk);
  sli_queue_only(m, blk);
  return st;
}

/* the pipe of block blk starts instruction op (pipe.c): a chain's steady leg
** arms its flow, which the flow start takes (sli_chain_take) */
void sli_chain_arm(sl_machine *m, int blk, int32_t op) {
  int i;
  if (blk >= m->chains->nblk) return;
  for (i = 0; i < 2; i++)
    if (m->chains->front[2 * blk + i] == op) m->chain_armed = 2 * blk + i + 1;
}

/* a flow starts (flow.c): plain, or a chain's steady leg when one is armed:
** its first chunk is rem, then cn more; a get's ghosts follow its chunks */
void sli_chain_give(sl_machine *m, sl_flow *fl) {
  sl_chain_fifo *f = &m->chains->q[m->chain_armed - 1];
  const sl_chain_arm *a = &f->a[f->head];
  m->chain_armed = 0;
  fl->rem = a->size;
  fl->csize = a->size;
  fl->clast = a->last;
  fl->cn = a->n - 1;
  if ((a->gbuf >= 0 || a->tok >= 0) && a->n > 1) {
    sl_chain_run *r = &m->chains->run[fl->blk];
    fl->gn = a->gbuf >= 0 ? a->n - 1 : 1;   /* keys: the ghosts of chunks 0 .. n - 2, or a
                                           bare put's flag alone (at chunk n - 2's) */
    fl->glat = a->glat;
    fl->gdue = -1;
    r->f = (int32_t)(fl - m->flows);
    r->next = a->n - 1 - fl->gn;
    r->k = a->n;
    r->waits = 0;
    r->a = *a;
  }
  f->head = (f->head + 1) % f->cap;
  f->len--;
  m->chains->front[f - m->chains->q] = f->len > 0 ? f->a[f->head].op : -1;
}

/* picoseconds from fl->t to the chain flow's next key, d those to the end of
** its current chunk at its rate: the start of its next ghost (glat after the
** end of that ghost's chunk), or when none is left the end of its chunks */
double sli_chain_rest(const sl_flow *fl, double d) {
  double c;
  if (!(fl->rate > 0)) return d;
  c = (double)chunk_ps(fl->csize, fl->rate);
  if (fl->gn <= 0 && fl->cn > 0 && fl->clast > 0)   /* whole chunks, then the last */
    return d + (double)(fl->cn - 1) * c + (double)chunk_ps(fl->clast, fl->rate);
  if (fl->gn <= 0) return d + (double)fl->cn * c;
  if (fl->gdue >= 0) return fl->gdue > fl->t ? (double)(fl->gdue - fl->t) : 0;
  return d + (double)(fl->cn - fl->gn) * c + (double)fl->glat;   /* its chunk: cn - gn on */
}

/* bring a chain's flow to the chunk it streams at now: the whole chunks that
** ended before now (each where the chunked flow would have ended it, at the
** rate it has had since fl->t) are passed, fl->t and rem left at the start of
** the current one; a chunk ending at now is the current one, as a settle at
** now comes before the flow end there. The ghost of a chunk passed starts at
** gdue (its key: the flow's start of it is before the next chunk ends) */
void sli_chain_pass(sl_flow *fl, sl_time now) {
  sl_time e, d;
  int64_t j;
  if (!(fl->rate > 0) || fl->cn <= 0) return;
  e = fl->t + chunk_ps(fl->rem, fl->rate);
  if (e >= now) return;
  d = chunk_ps(fl->csize, fl->rate);
  if (d < 1) d = 1;
  j = (now - e - 1) / d;                /* chunks passed after the current one */
  if (j > fl->cn - 1) j = fl->cn - 1;
  if (fl->gn > 0 && fl->cn - fl->gn <= j)   /* the next ghost's chunk ended: its start */
    fl->gdue = e + (fl->cn - fl->gn) * d + fl->glat;
  fl->cn -= j + 1;
  fl->t = e + j * d;
  fl->rem = fl->cn == 0 && fl->clast > 0 ? fl->clast : fl->csize;
}

/* block blk's ghost of chunk g starts now */
static void ghost_start(sl_machine *m, int blk, int64_t g, sl_time now) {
  sl_chain_run *r = &m->chains->run[blk];
  int64_t size = (int64_t)r->a.size, off = r->a.goff + g * size, hit = 0;
  int pipe = r->a.gpipe;
  int32_t id;
  if (pipe == SL_PIPE_MTE2) hit = sli_l2_read(m, r->a.gpe, r->a.gbuf, off, size);
  else sli_l2_touch(m, r->a.gpe, r->a.gbuf, off, size);
  if ((id = sli_flow_ghost(m, blk, pipe, r->a.gpe, hit, size, now)) < 0) {
    m->oom = 1;
    return;
  }
  if (m->blocks[blk].busy[QI(pipe)]) m->chains->late++;   /* the pipe's own transfer
                                                 streams: the chunked one would wait */
  r->ghost = id;
  r->gidx = g;
  m->chains->ghosts++;
}

/* a chain's flag fires now, at t (now or later): its last chunk's read may start
** from t (its pipe goes on now if it waits for it already) */
static void tok_fire(sl_machine *m, int32_t tok, sl_time t, sl_time now) {
  sl_tok *k = &m->toks[tok];
  k->fired = 1;
  k->t = t;
  if (k->wblk >= 0 && k->wpipe != SL_PIPE_S) sli_pipe_kick(m, k->wblk, k->wpipe, now);
}

/* block blk's chain's action keyed at the end of its chunk j, now: the ghost
** of chunk j + shift, or a put's flag at its chunk n - 2 */
static void act(sl_machine *m, int blk, int64_t j, sl_time now) {
  sl_chain_run *r = &m->chains->run[blk];
  if (r->a.tok >= 0 && j == r->k - 2) tok_fire(m, r->a.tok, now, now);
  else ghost_start(m, blk, j + r->a.shift, now);
}

/* did block blk's ghost of chunk g, ending now, land later than the chunked
** chain's chunk would wait for it: a get's read of chunk g + 2 (the end of
** chunk g + 1), a put's write of chunk g (the end of chunk g - 1)? */
static int ghost_late(const sl_machine *m, int blk, int64_t g, sl_time now) {
  const sl_chain_run *r = &m->chains->run[blk];
  int64_t need = g + 1 - r->a.shift, cur;
  sl_flow c;
  if (r->f < 0) return 1;
  c = m->flows[r->f];
  if (!(c.csize > 0) || c.blk != blk || c.eng >= 0) return 1;   /* the chain has ended */
  sli_chain_pass(&c, now);
  cur = r->k - 1 - c.cn;
  if (cur != need) return cur > need;
  return now + r->a.gland > c.t + chunk_ps(c.rem, c.rate);
}

/* a ghost flow f of block blk ends now: the action waiting for it goes on */
static void ghost_end(sl_machine *m, int32_t f, sl_time now) {
  int blk = m->flows[f].blk;
  sl_chain_run *r = &m->chains->run[blk];
  sli_flow_ghost_end(m, f);
  if (r->ghost != f) return;
  r->ghost = -1;
  if (r->a.ltok >= 0 && r->gidx == r->k - 2)   /* a get's last ghost: the read after the */
    tok_fire(m, r->a.ltok, now + r->a.gland, now);   /* chain waits for its landing */
  else if (ghost_late(m, blk, r->gidx, now)) m->chains->late++;
  if (r->waits) {
    r->waits = 0;
    act(m, blk, r->next - 1, now);
  }
}

/* the key of flow f came at t (flow.c's EV_FLOW): a ghost's end, or a chain
** flow's next action (now, or when the block's ghost streaming ends, as the
** chunked chain's pipe would reach it). 1 when it was either */
int sli_chain_due(sl_machine *m, int32_t f, sl_time t) {
  sl_flow *fl = &m->flows[f];
  int blk = fl->blk;
  sl_chain_run *r;
  if (fl->eng == SLI_ENG_GHOST) { ghost_end(m, f, t); return 1; }
  if (fl->gn <= 0 || m->chains == NULL || blk >= m->chains->nblk) return 0;
  r = &m->chains->run[blk];
  fl->gn--;
  fl->gdue = -1;
  if (r->f == f) {
    int64_t j = r->next++;
    if (r->ghost >= 0) {
      if (r->waits) m->chains->late++;  /* two waiting: not the chunked chain's */
      r->waits = 1;
    } else act(m, blk, j, t);
  }
  sli_flow_rekey(m, f);
  return 1;
}

/* forget the chains waiting to start (a launch begins or ends) */
void sli_chain_reset(sl_machine *m) {
  int32_t i;
  m->chain_armed = 0;
  if (m->chains == NULL) return;
  for (i = 0; i < 2 * m->chains->nblk; i++) {
    m->chains->q[i].head = m->chains->q[i].len = 0;
    m->chains->front[i] = -1;
  }
  for (i = 0; i < m->chains->nblk; i++) {
    m->chains->run[i].f = m->chains->run[i].ghost = -1;
    m->chains->run[i].waits = 0;
  }
}

/* free the chain table (the machine goes) */
void sli_chain_free(sl_machine *m) {
  int32_t i;
  if (m->chains == NULL) return;
  for (i = 0; i < 2 * m->chains->nblk; i++) free(m->chains->q[i].a);
  free(m->chains->q);
  free(m->chains->front);
  free(m->chains->run);
  free(m->chains);
  m->chains = NULL;
}

/* chains issued as one flow and chunked since the machine was made */
void sl_machine_chains(const sl_machine *m, int64_t *one, int64_t *chunked) {
  *one = m->chains != NULL ? m->chains->one : 0;
  *chunked = m->chains != NULL ? m->chains->chunked : 0;
}

/* the one-flow chains' ghosts started since the machine was made, and those
** that ended too late for the chunked chain's next chunk (its times are then
** not the chunked chain's; 0 on every run measured) */
void sl_machine_ghosts(const sl_machine *m, int64_t *ghosts, int64_t *late) {
  *ghosts = m->chains != NULL ? m->chains->ghosts : 0;
  *late = m->chains != NULL ? m->chains->late : 0;
}
