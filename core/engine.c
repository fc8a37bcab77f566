/*
** engine.c -- the transport engines of CANN SHMEM besides MTE
** (include/device/gm2gm/engine/): SDMA, RDMA (RoCE) and UDMA transfers a
** block issues from S. None of them runs on the core's MTE pipes: a
** transfer is a GM -> GM flow of its own (flow.c) through both HBMs, the
** links of its path (RDMA: the two NICs) and the issuing PE's engine; its
** bytes land the path's latency after its last byte; only that engine's
** quiet (or the end of the kernel) waits for it.
**
** A block's descriptors to an engine form one queue (sl_dmaq), as CANN
** SHMEM gives each AIV block one SDMA SQ and STARS runs an SQ in order: a
** descriptor is set up (the engine's setup) once it is one of the
** dma_queue_depth the engine holds, streams when the one before it has
** streamed and spent the engine's task time, and leaves the engine when its
** own task time is over. With a depth of 2 the next descriptor's setup runs
** under the current stream, so N queued transfers cost one setup and N
** streams and task times, not N setups.
*/
#include <string.h>

#include "sli.h"

/* name of an engine */
const char *sl_engine_name(int eng) {
  static const char *const names[SL_NENG] = { "SDMA", "RDMA", "UDMA" };
  return eng >= 0 && eng < SL_NENG ? names[eng] : "?";
}

/* the library's name of a transfer call (errors and bounds reports) */
static const char *call_name(int eng, int get, int relay, int sig) {
  static const char *const names[SL_NENG][2] = {
    { "sdma_put_nbi", "sdma_get_nbi" }, { "roce_put_nbi", "roce_get_nbi" },
    { "udma_put_nbi", "udma_get_nbi" } };
  if (sig) return "udma_put_signal_nbi";
  if (relay >= 0) return get ? "udma_relay_get_nbi" : "udma_relay_put_nbi";
  return names[eng][get != 0];
}

/* the engine exists on this SoC (UDMA: Ascend950 only; a rate of 0 = none) */
static int engine_here(sl_machine *m, int eng) {
  if (eng == SL_ENG_UDMA && !(m->p.udma_GBps > 0))
    return sli_err(m, SL_ESTATE, 0, "this SoC has no UDMA engine (Ascend950 has one; "
                   "profile field udma_GBps = 0)");
  if (eng == SL_ENG_SDMA && !(m->p.sdma_GBps > 0))
    return sli_err(m, SL_ESTATE, 0, "this SoC has no SDMA engine (profile field "
                   "sdma_GBps = 0)");
  return SL_OK;
}

/* a hop of an SDMA/UDMA transfer stays on the server's (supernode's) fabric */
static int hop_ok(sl_machine *m, int eng, int a, int b, int arg) {
  if (eng != SL_ENG_RDMA && sl_path(m, a, b) == SL_PATH_RDMA)
    return sli_err(m, SL_EARG, arg, "%s moves data over HCCS/SIO (one server or "
                   "supernode): PE %d reaches PE %d over RDMA (use roce_put_nbi / "
                   "roce_get_nbi)", sl_engine_name(eng), a, b);
  return SL_OK;
}

/* the PEs of a transfer (me, pe, relay) are legal for its engine */
static int check_pes(sl_machine *m, int eng, int me, int src_pe, int dst_pe, int pe,
                     int relay) {
  int st;
  if (pe < 0 || pe >= m->p.n_pes)
    return sli_err(m, SL_EARG, 5, "PE %d out of range 0..%d", pe, m->p.n_pes - 1);
  if (relay < 0) return hop_ok(m, eng, src_pe, dst_pe, 5);
  if (relay >= m->p.n_pes || relay == pe || relay == me || pe == me)
    return sli_err(m, SL_EARG, 6, "relay PE %d: the relay and the target (PE %d) must be "
                   "two PEs other than the caller (PE %d)", relay, pe, me);
  if ((st = hop_ok(m, eng, src_pe, relay, 6)) != SL_OK) return st;
  return hop_ok(m, eng, relay, dst_pe, 6);
}

/* the signal word of UDMA's put_signal: an integer element of GM, symmetric
** when it is on another PE */
static int check_signal(sl_machine *m, const sl_block *b, const sl_loc *sig) {
  if (sig->buf < 0) return sli_err(m, SL_EARG, 7, "signal must be in GM, not UB");
  if (sl_dtype_isfloat((sl_dtype)sig->dtype))
    return sli_err(m, SL_EARG, 7, "signal must be an integer element, got %s",
                   sl_dtype_name((sl_dtype)sig->dtype));
  if (m->bufs[sig->buf].space != SL_SPACE_SYM && sig->pe != b->pe)
    return sli_err(m, SL_EARG, 7, "a remote signal must be a symmetric address");
  int st = sli_bounds(m, sig, (int64_t)sl_dtype_size((sl_dtype)sig->dtype), 1,
                      "udma_put_signal_nbi", 7, b->pe, b->b);
  return st == SL_OK ? sli_backed(m, sig, 7, "udma_put_signal_nbi") : st;
}

/* the arguments of a transfer: GM views of one dtype, the remote one
** symmetric (resolved onto PE pe in rdst/rsrc), a UB workspace of the block */
static int check_views(sl_machine *m, const sl_block *b, int get, const sl_loc *dst,
                       const sl_loc *src, const sl_loc *ub, int64_t elems, int pe,
                       sl_loc *rdst, sl_loc *rsrc) {
  int st;
  if (elems <= 0) return sli_err(m, SL_EARG, 4, "element count must be positive");
  if (dst->buf < 0 || src->buf < 0)
    return sli_err(m, SL_EARG, dst->buf < 0 ? 1 : 2, "GM address expected, got UB");
  if (dst->dtype != src->dtype)
    return sli_err(m, SL_EARG, 2, "dtype mismatch (dst %s, src %s)",
                   sl_dtype_name((sl_dtype)dst->dtype), sl_dtype_name((sl_dtype)src->dtype));
  if (m->bufs[get ? src->buf : dst->buf].space != SL_SPACE_SYM)
    return sli_err(m, SL_EARG, get ? 2 : 1, get ? "source must be a symmetric address"
                                              : "destination must be a symmetric address");
  if (ub != NULL && (st = sli_own_ub(m, b, ub, 3)) != SL_OK) return st;
  *rdst = *dst;
  *rsrc = *src;
  if (get) rsrc->pe = pe; else rdst->pe = pe;
  return SL_OK;
}

/* the latency from a transfer's last byte to its landing: each hop's alpha
** (RDMA: the NIC path, whatever the PEs); the engine's setup comes before
** the stream (the queue) */
static sl_time latency(sl_machine *m, int eng, int src_pe, int dst_pe, int relay) {
  if (eng == SL_ENG_RDMA) return m->ps.alpha[SL_PATH_RDMA];
  if (relay < 0) return m->ps.alpha[sl_path(m, src_pe, dst_pe)];
  return m->ps.alpha[sl_path(m, src_pe, relay)] + m->ps.alpha[sl_path(m, relay, dst_pe)];
}

/* the bytes of a transfer on each kind of path it crosses */
static void count_paths(sl_machine *m, int eng, int src_pe, int dst_pe, int relay,
                        int64_t bytes) {
  if (eng == SL_ENG_RDMA) m->path_bytes[SL_PATH_RDMA] += bytes;
  else if (relay < 0) m->path_bytes[sl_path(m, src_pe, dst_pe)] += bytes;
  else {
    m->path_bytes[sl_path(m, src_pe, relay)] += bytes;
    m->path_bytes[sl_path(m, relay, dst_pe)] += bytes;
  }
}

/* queue the transfer's landing (and signal) events and its start on the
** engine at the block's S time; racecheck sees it on the block's DMA thread */
static int issue(sl_machine *m, int blk, int eng, int get, const sl_loc *rdst,
                 const sl_loc *rsrc, int64_t bytes, int relay, const sl_loc *sig,
                 int64_t value, int op) {
  sl_block *b = &m->blocks[blk];
  sl_event d;
  int32_t ev, sid = -1;
  if (m->p.check & SL_CHECK_RACE) {
    sli_race_issue(m, blk, SL_PIPE_DMA);
    sli_race_access(m, blk, SL_PIPE_DMA, rsrc, bytes, 0);
    sli_race_access(m, blk, SL_PIPE_DMA, rdst, bytes, op != SL_OP_NONE ? 2 : 1);
  }
  if (sli_copy_event(m, blk, SL_PIPE_DMA, rdst, rsrc, bytes, op, bytes, &ev) != SL_OK)
    return SL_ENOMEM;
  m->evs[ev].vop = eng;                  /* EV_COPY of a DMA engine: which one */
  if (sig != NULL) {                     /* lands after the data, in the engine's order */
    sl_event *s = sli_event_new(m, EV_SIGNAL, blk, &sid);
    if (s == NULL) goto nomem;
    s->op = SL_SIGNAL_SET;
    s->val = value;
    s->snap = sli_race_release_pipe(m, blk, SL_PIPE_DMA);
    sli_addr(sig, &s->dst);
  }
  b->t += m->ps.issue + m->ps.signal;    /* the descriptor and its doorbell, from S */
  memset(&d, 0, sizeof(d));
  d.kind = EV_DMA;
  d.blk = blk;
  d.vop = eng;
  d.snap = get;                          /* EV_DMA: the direction (link efficiency) */
  d.pipe = relay;                        /* EV_DMA: the relay PE, -1 none */
  d.n = bytes;
  d.val = ev;
  d.op = sid;
  d.s = (double)latency(m, eng, rsrc->pe, rdst->pe, relay);
  sli_addr(rdst, &d.dst);
  sli_addr(rsrc, &d.src);
  if (sli_push(m, b->t, &d) != SL_OK) goto nomem;
  b->dma_pending[eng]++;
  count_paths(m, eng, rsrc->pe, rdst->pe, relay, bytes);
  return SL_OK;
nomem:
  return sli_err(m, SL_ENOMEM, 0, "not enough memory for an event");
}

/* sl_dma and sl_dma_reduce: the descriptor lands dst = dst op src (op
** SL_OP_NONE: a copy) */
static int dma(sl_machine *m, int blk, int eng, int get, const sl_loc *dst,
               const sl_loc *src, const sl_loc *ub, int64_t elems, int pe, int relay,
               const sl_loc *sig, int64_t value, int op) {
  sl_block *b = &m->blocks[blk];
  const char *fn = call_name(eng, get, relay, sig != NULL);
  sl_loc rdst, rsrc, rsig;
  int64_t bytes;
  int st;
  if ((st = engine_here(m, eng)) != SL_OK) return st;
  if ((st = check_views(m, b, get, dst, src, ub, elems, pe, &rdst, &rsrc)) != SL_OK)
    return st;
  if ((st = check_pes(m, eng, b->pe, rsrc.pe, rdst.pe, pe, relay)) != SL_OK) return st;
  bytes = sl_nbytes(elems, (int64_t)sl_dtype_size((sl_dtype)src->dtype));
  if ((st = sli_bounds(m, &rsrc, bytes, 0, fn, 2, b->pe, b->b)) != SL_OK) return st;
  if ((st = sli_bounds(m, &rdst, bytes, 1, fn, 1, b->pe, b->b)) != SL_OK) return st;
  if (sig != NULL) {
    rsig = *sig;
    rsig.pe = pe;
    if ((st = check_signal(m, b, &rsig)) != SL_OK) return st;
  }
  return issue(m, blk, eng, get, &rdst, &rsrc, bytes, relay, sig ? &rsig : NULL, value, op);
}

/* aclshmemx_{sdma,roce,udma}_{put,get}_nbi, udma_relay_*, udma_put_signal_nbi */
int sl_dma(sl_machine *m, int blk, int eng, int get, const sl_loc *dst,
           const sl_loc *src, const sl_loc *ub, int64_t elems, int pe, int relay,
           const sl_loc *sig, int64_t value) {
  return dma(m, blk, eng, get, dst, src, ub, elems, pe, relay, sig, value, SL_OP_NONE);
}

/* a put whose descriptor reduces as it lands (HCCL's SDMA inline reduce, RDMA
** write with reduce): dst on PE pe = dst op src, elementwise in dst's dtype,
** timed as the put */
int sl_dma_reduce(sl_machine *m, int blk, int eng, const sl_loc *dst, const sl_loc *src,
                  const sl_loc *ub, int64_t elems, int pe, int op) {
  if (op != SL_OP_ADD && op != SL_OP_MAX && op != SL_OP_MIN)
    return sli_err(m, SL_EARG, 0, "reduce op must be add, max or min");
  if (dst->dtype != src->dtype)
    return sli_err(m, SL_EARG, 1, "an inline reduce needs dst and src of one dtype");
  return dma(m, blk, eng, 0, dst, src, ub, elems, pe, -1, NULL, 0, op);
}

/* schedule an EV_DMAQ for the block's queue on eng at t (once per time) */
static void queue_kick(sl_machine *m, int blk, int eng, sl_time t) {
  sl_dmaq *q = &m->blocks[blk].dq[eng];
  if (q->kick == t) return;
  q->kick = t;
  if (sli_schedule_as(m, t, blk * SL_NENG + eng, EV_DMAQ, blk) != SL_OK) m->oom = 1;
}

/* the head descriptor of the queue streams from now: it leaves the list */
static void queue_stream(sl_machine *m, int blk, int eng, sl_time now) {
  sl_dmaq *q = &m->blocks[blk].dq[eng];
  int32_t id = q->head;
  sl_event e = m->evs[id];               /* a copy: starting a flow may grow m->evs */
  q->head = e.next_free;
  if (q->head < 0) q->tail = -1;
  q->nwait--, q->nadm--;
  q->cur = q->streaming = 1;
  sli_ev_release(m, id);
  if (sli_flow_start_dma(m, blk, eng, e.snap, e.src.pe, e.dst.pe, e.pipe, e.n, now,
                         (int32_t)e.val, e.op, (sl_time)e.s) != SL_OK) {
    m->oom = 1;                          /* no memory: it ends at once */
    sli_dma_done(m, blk, eng, (int32_t)e.val, e.op, (sl_time)e.s, now);
  }
}

/* run the block's queue on eng as far as it goes at now: the engine frees
** when a descriptor's task time is over, admits (sets up) descriptors up to
** its depth, streams the head once it is set up and the engine is free */
static void queue_pump(sl_machine *m, int blk, int eng, sl_time now) {
  sl_dmaq *q = &m->blocks[blk].dq[eng];
  for (;;) {
    int32_t id = q->head, i;
    sl_time go;
    if (q->cur && !q->streaming && now >= q->free_at) q->cur = 0;
    for (i = 0; i < q->nadm; i++) id = m->evs[id].next_free;
    while (q->nadm < q->nwait && q->nadm + q->cur < m->p.dma_queue_depth) {
      m->evs[id].whole = now + m->ps.dma_setup[eng];   /* set up by then */
      id = m->evs[id].next_free;
      q->nadm++;
    }
    if (q->cur || q->nadm == 0) break;
    go = m->evs[q->head].whole > q->free_at ? m->evs[q->head].whole : q->free_at;
    if (go > now) { queue_kick(m, blk, eng, go); return; }
    queue_stream(m, blk, eng, now);
  }
  if (q->cur && !q->streaming && q->free_at > now) queue_kick(m, blk, eng, q->free_at);
}

/* EV_DMA at t: the descriptor reaches the end of the block's queue on its
** engine (a record of its own, linked there) */
void sli_dma_start(sl_machine *m, const sl_event *e, sl_time t) {
  sl_dmaq *q = &m->blocks[e->blk].dq[e->vop];
  int32_t id;
  sl_event *ne = sli_newev(m, &id);
  if (ne == NULL) {                      /* no memory: it lands at once */
    m->oom = 1;
    sli_dma_done(m, e->blk, e->vop, (int32_t)e->val, e->op, (sl_time)e->s, t);
    return;
  }
  *ne = *e;
  ne->next_free = -1;
  if (q->tail < 0) q->head = id;
  else m->evs[q->tail].next_free = id;
  q->tail = id;
  q->nwait++;
  queue_pump(m, e->blk, e->vop, t);
}

/* EV_DMAQ at t: the block's queue on eng may go on */
void sli_dma_due(sl_machine *m, int blk, int eng, sl_time t) {
  sl_dmaq *q = &m->blocks[blk].dq[eng];
  if (q->kick == t) q->kick = -1;
  queue_pump(m, blk, eng, t);
}

/* the transfer's last byte streamed at t: it lands lat later, then its
** signal; the engine spends its task time on it, then takes the next */
void sli_dma_done(sl_machine *m, int blk, int eng, int32_t ev, int32_t sig, sl_time lat,
                  sl_time t) {
  sl_block *b = &m->blocks[blk];
  sl_dmaq *q = &b->dq[eng];
  sl_time land = t + lat;
  if (land > b->dma_done[eng]) b->dma_done[eng] = land;
  if (sli_schedule_as(m, land, ev, EV_COPY, blk) != SL_OK) m->oom = 1;
  if (sig >= 0 && sli_schedule_as(m, land, sig, EV_SIGNAL, blk) != SL_OK) m->oom = 1;
  if (q->streaming) {
    q->streaming = 0;
    q->free_at = t + m->ps.dma_task[eng];
  }
  queue_pump(m, blk, eng, t);
}

/* a transfer of the engine landed: a quiet waiting for it may go on */
void sli_dma_landed(sl_machine *m, int blk, int eng, sl_time t) {
  sl_block *b = &m->blocks[blk];
  sl_time at;
  (void)t;
  b->dma_pending[eng]--;
  if ((b->state == B_DRAIN || b->state == B_ENDING) && (b->dmask & SL_DRAIN_DMA(eng)) &&
      sli_drained(m, b, b->dmask, &at))
    sli_drain_done(m, blk, at, 1);
}

/* aclshmemx_{sdma,roce,udma}_quiet: S waits for the block's transfers on eng */
int sl_dma_quiet(sl_machine *m, int blk, int eng) {
  int st;
  if ((st = engine_here(m, eng)) != SL_OK) return st;
  m->blocks[blk].wsite = m->site;
  sli_race_dma_quiet(m, blk);
  m->blocks[blk].t += m->ps.issue;
  return sli_drain(m, blk, SL_DRAIN_DMA(eng), ACT_BARRIER);
}
