/*
** flow.c -- sharing of the machine's shared resources (each PE's HBM, the
** directed HCCS links or switch ports, SIO, the NICs) by the transfers that
** stream through them.
**
** A transfer is a flow: bytes to move, the resources it crosses (the GM
** side's HBM and the links of its path) with the capacity each of its bytes
** takes on them (1 / efficiency on HCCS), and a cap (the core's MTE rate, or
** what one resource it crosses carries alone where that is less).
** Rates are max-min fair to within SL_FAIR_TOL, found by progressive filling,
** and recomputed when a flow starts or ends, at that instant: a resource that
** cannot bind (its flows' caps fit in it) or is not full changes nobody's
** rate, a new flow with room at its cap everywhere starts at its cap, and a
** transfer that a pipe starts as its last one ends, over the same resources
** with the same cap (the chunks of a double-buffered get or put), goes on in
** that flow at its rate (max-min rates depend on the flows' resources and
** caps alone).
** Otherwise the new flows and the flows that the full resources which
** changed hold back are filled again, every other flow keeping its use of
** the resources they share; then every flow outside whose bottleneck no longer
** holds, or that tops a flow inside, joins them and they are filled again,
** until none does. A change costs what it moves, not what it is connected
** to. Between changes every rate is constant, so each flow's end is known;
** the earliest is one EV_FLOW event.
** With a settle window (settle_ns > 0, doc/scale.md) a change after a quiet
** window is settled at its instant, and the changes within settle_ns after a
** settle together at the window's end: till then every flow keeps its rate
** and a new flow that must share moves nothing, so each change takes effect
** at most a window late and no resource carries more than it has.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

#define EPS 1e-12
#define DRIFT 1e-6      /* a resource's kept use is this close to exact (relative) */
#define BATCH 16        /* flows a settle finds, then takes in together (their records
                           asked for first) */
/* slot entries a settle lists before its fills start their lists again: a
** build with SL_SMALL_SLOT_ROOM (make test-asan) starts again often, so the
** specs run that path too (the scratch itself always has the full room) */
#ifdef SL_SMALL_SLOT_ROOM
#define SLOT_ROOM(m) ((m)->nflows / 4 + 8)
#else
#define SLOT_ROOM(m) ((m)->nflows * SL_FLOW_RES)
#endif

static void rs_free(sl_rset *s);

/* SLI_HOT_INLINE (sli.h) on the functions of the solver's inner loops
** (freeze, fill_top, rs_remove in a fill; set_rate, end_at in rate_all): gcc -O2
** left them calls, whose register saves and reloads were about a fifth of a
** freeze's instructions (callgrind, alltoall 1 KiB a pair x 48 blocks: all
** five inlined take 3.6% fewer instructions at 128 PEs and 5.8% at 256);
** SLI_SLOW_PATH on the growth of a pool, kept out of an inlined path */

/* capacity in bytes per picosecond of GBps */
static double bpps(double GBps) { return GBps / 1000.0; }

/* m->rs_tree: a fill of more resources keeps them in a tree (callgrind, DeepEP's
** dispatch at EP128 x 64 tokens, against a walk up to 256 and a heap above: 64
** -2.8%, 128 -3.1%, 256 -1.6% of all instructions; EP16 x 256 the same at 128) */
#define RS_TREE 128
#define RS_GONE INT64_MAX       /* the key of a tree's leaf taken out: after every level's */

/* set every resource's capacity (and the solver's choice of a tree) */
void sli_res_init(sl_machine *m) {
  const sl_params *p = &m->p;
  size_t i, n = (size_t)p->n_pes;
  m->rs_tree = RS_TREE;
  for (i = 0; i < n; i++) {
    m->hbm[i].C = bpps(p->hbm_GBps);
    m->sio[i].C = bpps(p->sio_GBps);
    m->nic[2 * i].C = m->nic[2 * i + 1].C = bpps(p->rdma_GBps);
    m->dma[2 * i].C = bpps(p->sdma_GBps);
    m->dma[2 * i + 1].C = bpps(p->udma_GBps);
  }
  for (i = 0; i < (size_t)m->nhccs; i++) m->hccs[i].C = bpps(p->hccs_GBps);
}

/* forget every flow (release: also free the lists) */
void sli_res_clear(sl_machine *m, int release) {
  size_t i;
  for (i = 0; i < m->nres; i++) {
    sl_res *r = &m->allres[i];
    r->nfl = 0;
    r->capsum = r->use = 0;
    r->bind = 0;
    r->dirty = 0;
    r->mark = r->scan = 0;
    if (release) { free(r->fl); r->fl = NULL; r->capfl = 0; }
  }
  m->nflows = m->fh.n = m->rs.n = m->ndirty = 0;
  m->free_flow = -1;
  m->ended = -1;
  m->stamp = 0;
  m->flow_ev_t = INT64_MAX;
  m->settle_t = 0;
  m->settled_t = INT64_MIN / 2;
  if (release) {
    free(m->flows); free(m->fh.h); free(m->fh.pos); free(m->dirty); free(m->scr);
    rs_free(&m->rs);
    m->flows = NULL; m->fh.h = NULL; m->fh.pos = NULL;
    m->dirty = NULL; m->scr = NULL;
    m->capflows = m->capdirty = m->capscr = 0;
  }
}

/* ---------------------------------------------------------- the end heap */

/* the solver's indexed binary heap (sl_heap) of flows by predicted end
** (m->fh): an entry keeps its key with a tie break (sequence), so the order
** is total and a comparison touches no flow */

/* does entry a come before entry b? */
static int h_less(const sl_hent *a, const sl_hent *b) {
  return a->k < b->k || (a->k == b->k && a->tie < b->tie);
}

/* move entry i of heap hp down into place */
static void heap_down(sl_heap *hp, int32_t i) {
  sl_hent *h = hp->h, x = h[i];
  int32_t n = hp->n;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && h_less(&h[c + 1], &h[c])) c++;
    if (!h_less(&h[c], &x)) break;
    h[i] = h[c];
    hp->pos[h[i].id] = i;
    i = c;
  }
  h[i] = x;
  hp->pos[x.id] = i;
}

/* move entry i of heap hp up into place (inlined: a new flow's end and a
** removal's refill call it once each, and mostly it moves one level or none) */
static SLI_HOT_INLINE void heap_up(sl_heap *hp, int32_t i) {
  sl_hent *h = hp->h, x = h[i];
  while (i > 0 && h_less(&x, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    hp->pos[h[i].id] = i;
    i = (i - 1) / 2;
  }
  h[i] = x;
  hp->pos[x.id] = i;
}

/* put entry i of heap hp in place, moving it up or down */
static void heap_fix(sl_heap *hp, int32_t i) {
  if (i > 0 && h_less(&hp->h[i], &hp->h[(i - 1) / 2])) heap_up(hp, i);
  else heap_down(hp, i);
}

/* take id x out of heap hp (nothing when it is not in it). The hole it
** leaves goes down to a leaf, the lesser child moving up (one compare a
** level), and the last entry fills it from there up: that entry, from the
** bottom, mostly stays near the bottom, so this costs about half of putting
** it at the hole and moving it down (two compares a level). The order the
** heap gives is the same: its keys with ties are all distinct */
static void heap_remove(sl_heap *hp, int32_t x) {
  sl_hent *h = hp->h;
  int32_t i = hp->pos[x], n, c;
  if (i < 0) return;
  hp->pos[x] = -1;
  n = --hp->n;
  if (i == n) return;
  while ((c = 2 * i + 1) < n) {
    if (c + 1 < n && h_less(&h[c + 1], &h[c])) c++;
    h[i] = h[c];
    hp->pos[h[i].id] = i;
    i = c;
  }
  h[i] = h[n];
  heap_up(hp, i);
}

/* add id to heap hp (room for it assumed) as its last entry, key k and tie
** break tie: in place only when nothing comes after it (heap_up otherwise) */
static void heap_append(sl_heap *hp, int32_t id, int64_t k, uint64_t tie) {
  hp->pos[id] = hp->n++;
  hp->h[hp->pos[id]].k = k;
  hp->h[hp->pos[id]].tie = tie;
  hp->h[hp->pos[id]].id = id;
}

/* ---------------------------------------------------------- flows */

/* can resource r limit its flows (their caps add up to more than it has)? */
static int binds(const sl_res *r) { return r->bind; }

/* bring r->bind up to date after its flows changed */
static void set_binds(sl_res *r) { r->bind = r->capsum > r->C * (1 + 1e-9); }

static void flow_event(sl_machine *m);

/* flow fl runs at rate, held back by resource bneck (-1: its cap) */
static SLI_HOT_INLINE void set_rate(sl_machine *m, sl_flow *fl, double rate, int32_t bneck) {
  int k;
  fl->rate = rate;
  fl->bneck = bneck;
  for (k = 0; k < fl->nres; k++) {
    sl_res *r = &m->allres[fl->at[k].res];
    sl_slot *sl = &r->fl[fl->at[k].pos];
    r->use += sl->w * (rate - sl->rate);
    sl->rate = rate;
    sl->fb = (sl->fb & ~SL_SLOT_BN) | (fl->at[k].res == bneck ? SL_SLOT_BN : 0);
  }
}

/* could resource r be full? Its use is kept up to date by sums that drift
** by rounding, so only a resource DRIFT below its capacity is surely not:
** none of its flows is held back by it, and a flow joining or leaving it
** changes no other flow's rate through it */
static int may_be_full(const sl_res *r) { return r->use >= r->C * (1 - DRIFT); }

/* a flow slot past the pool's end (grown when full), -1 when out of memory */
static SLI_SLOW_PATH int32_t flow_append(sl_machine *m) {
  if (m->nflows == m->capflows) {
    int32_t cap = m->capflows ? 2 * m->capflows : 256;
    sl_flow *nf = sli_realloc(m->flows, (size_t)cap * sizeof(*nf));
    sl_hent *nh = sli_realloc(m->fh.h, (size_t)cap * sizeof(*nh));
    int32_t *np = sli_realloc(m->fh.pos, (size_t)cap * sizeof(*np));
    if (nf != NULL) m->flows = nf;
    if (nh != NULL) m->fh.h = nh;
    if (np != NULL) m->fh.pos = np;
    if (nf == NULL || nh == NULL || np == NULL) return -1;
    m->capflows = cap;
  }
  return m->nflows++;
}

/* a free flow slot, -1 when out of memory (inline: a small put opens two
** flows, and the call's frame cost about as much as taking the slot) */
static SLI_HOT_INLINE int32_t flow_new(sl_machine *m) {
  int32_t f = m->free_flow;
  if (f < 0) return flow_append(m);
  m->free_flow = m->flows[f].next_free;
  return f;
}

/* note a change for the next settle: resource x's flows (x >= 0) or the
** new flow -x - 1 are to be re-rated; 0 when out of memory */
static int dirty_push(sl_machine *m, int32_t x) {
  if (m->ndirty == m->capdirty) {
    int32_t cap = m->capdirty ? 2 * m->capdirty : 64;
    int32_t *nd = sli_realloc(m->dirty, (size_t)cap * sizeof(*nd));
    if (nd == NULL) return 0;
    m->dirty = nd;
    m->capdirty = cap;
  }
  m->dirty[m->ndirty++] = x;
  return 1;
}

/* note that resource r's flows changed */
static int res_dirty(sl_machine *m, int32_t r) {
  if (m->allres[r].dirty) return 1;
  m->allres[r].dirty = 1;
  return dirty_push(m, r);
}

/* room for one more flow on resource r; 0 when out of memory */
static SLI_SLOW_PATH int res_grow(sl_res *r) {
  int32_t cap = r->capfl ? 2 * r->capfl : 8;
  sl_slot *n = realloc(r->fl, (size_t)cap * sizeof(*n));
  if (n == NULL) return 0;
  r->fl = n;
  r->capfl = cap;
  return 1;
}

/* join flow f to resource r with weight w; 0 when out of memory (inline, its
** growth out of line: a small put's flow joins its HBM, and the call cost a
** third of the join) */
static SLI_HOT_INLINE int res_join(sl_machine *m, int32_t f, sl_res *r, double w) {
  sl_flow *fl = &m->flows[f];
  if (r->nfl == r->capfl && !res_grow(r)) return 0;
  fl->at[fl->nres].res = (int32_t)(r - m->allres);
  fl->at[fl->nres].w = w;
  fl->at[fl->nres++].pos = r->nfl;
  r->fl[r->nfl].fb = (uint32_t)f;
  r->fl[r->nfl].w = w;
  r->fl[r->nfl].rate = 0;
  r->fl[r->nfl].mark = 0;
  r->nfl++;
  return 1;                   /* its cap counts on r once it is known (flow_commit) */
}

/* take flow f off its resources */
static void res_leave(sl_machine *m, int32_t f) {
  sl_flow *fl = &m->flows[f];
  int j, k;
  for (j = 0; j < fl->nres; j++) {
    sl_res *r = &m->allres[fl->at[j].res];
    int32_t pos = fl->at[j].pos, last = sl_slot_f(&r->fl[--r->nfl]);
    int bound = binds(r) && may_be_full(r);   /* it may hold others back */
    r->capsum -= fl->at[j].w * fl->cap;
    r->use -= fl->at[j].w * fl->rate;
    if (r->nfl == 0 || r->capsum < 0) r->capsum = 0;
    if (r->nfl == 0 || r->use < 0) r->use = 0;
    set_binds(r);
    if (last != f) {
      sl_flow *o = &m->flows[last];
      r->fl[pos] = r->fl[r->nfl];
      for (k = 0; k < o->nres; k++) if (o->at[k].res == fl->at[j].res) o->at[k].pos = pos;
    }
    if (bound && !res_dirty(m, fl->at[j].res)) m->oom = 1;
  }
  fl->nres = 0;
}

/* the links a transfer from PE a to PE b crosses, with their weight */
static int join_path(sl_machine *m, int32_t f, int path, int a, int b, double w) {
  const sl_params *p = &m->p;
  switch (path) {
    case SL_PATH_HCCS:
      if (p->hccs_switch)
        return res_join(m, f, &m->hccs[2 * a], w) && res_join(m, f, &m->hccs[2 * b + 1], w);
      return res_join(m, f, &m->hccs[(size_t)a * (size_t)p->pes_per_server +
                                     (size_t)(b % p->pes_per_server)], w);
    case SL_PATH_SIO:
      return res_join(m, f, &m->sio[a], 1.0);
    case SL_PATH_RDMA:
      return res_join(m, f, &m->nic[2 * a], 1.0) && res_join(m, f, &m->nic[2 * b + 1], 1.0);
    default:
      return 1;
  }
}

/* flow f, off its resources, back to the pool */
static void flow_free(sl_machine *m, int32_t f) {
  m->flows[f].next_free = m->free_flow;
  m->free_flow = f;
}

/* the flow that ended (m->ended >= 0) leaves its resources now */
static void flow_gone(sl_machine *m) {
  int32_t f = m->ended;
  m->ended = -1;
  if (m->flows[f].nres > 0) res_leave(m, f);   /* (an L2 read may cross nothing) */
  flow_free(m, f);
}

/* when the changes since settle_t are settled: at settle_t (exact), or with
** a window (settle_ns) no sooner than a window after the last settle: a
** change after a quiet window is settled at its instant, the changes that
** follow it within the window together at the window's end */
static sl_time settle_at(const sl_machine *m) {
  sl_time w = m->settled_t + m->ps.settle;
  return w > m->settle_t ? w : m->settle_t;
}

/* a new flow of bytes of block blk (pipe, or a DMA engine when eng >= 0)
** capped at cap bytes per ps, from now; -1 when out of memory. Inlined in its
** three callers, as flow_commit is: a small put starts two flows, and the
** calls' saves and reloads were about 65 instructions each (callgrind) */
static SLI_HOT_INLINE int32_t flow_open(sl_machine *m, int blk, int pipe, int eng, int64_t bytes,
                                    double cap, sl_time now) {
  int32_t f;
  sl_flow *fl;
  if (m->ended >= 0) flow_gone(m);
  if ((f = flow_new(m)) < 0) return -1;
  if (m->ndirty > 0 && settle_at(m) < now) sli_flow_settle(m, settle_at(m));
  if (m->ndirty == 0) m->settle_t = now;   /* else a window since an earlier change is open */
  m->fstats.starts++;
  fl = &m->flows[f];                  /* all fields but at[], which nres counts */
  fl->rate = 0;
  fl->mark = fl->frozen = fl->nres = 0;
  fl->lat = 0;
  fl->hitshare = 0;
  fl->csize = 0;
  fl->cn = fl->gn = 0;
  fl->glat = 0;
  fl->gdue = -1;
  fl->rem = (double)bytes;
  fl->cap = cap;
  fl->t = now;
  fl->end = INT64_MAX;
  fl->seq = m->flow_seq++;
  fl->blk = blk;
  fl->pipe = pipe;
  fl->eng = eng;
  fl->ev = fl->sig = -1;
  fl->gm_pe = -1;
  fl->bneck = -1;
  m->fh.pos[f] = -1;
  fl->next_free = -1;
  return f;
}

/* the end of a flow too slow for int64 picoseconds: past any time limit,
** with room left for the latencies after */
#define FLOW_NEVER (INT64_MAX / 8 * 7)

/* ceil(x), inline: without SSE4.1 gcc calls libm's, once per flow end
** computed (about 12 instructions a small put). Below 2^52 in magnitude the
** truncation to int64 is exact and one step up rounds it up; the rest (whole
** already, infinite or NaN) goes to libm. Only the sign of a zero differs
** (-0.5 gives +0, not -0), and end_at treats both alike */
static SLI_HOT_INLINE double ceil_exact(double x) {
  double t;
  if (!(x > -4503599627370496.0 && x < 4503599627370496.0)) return ceil(x);
  t = (double)(int64_t)x;
  return t < x ? t + 1 : t;
}

/* when flow fl, at its rate from now, moves its last byte (FLOW_NEVER when
** that is past int64 picoseconds: converting a larger double is undefined) */
static SLI_HOT_INLINE sl_time end_at(const sl_flow *fl, sl_time now) {
  double d = fl->rate > 0 ? ceil_exact(fl->rem / fl->rate - 1e-9) : 0;
  if (fl->csize > 0) d = sli_chain_rest(fl, d > 0 ? d : 0);   /* a chain's chunks, ghosts */
  if (!(d < (double)FLOW_NEVER - (double)now)) return now < FLOW_NEVER ? FLOW_NEVER : now;
  return now + (d > 0 ? (sl_time)d : 0);
}

/* flow fl's cap: the core's rate, or less where one resource it crosses
** could not carry that even alone. No fair share ever exceeds it, so a
** resource whose flows' caps add up to no more than it has can never hold
** one back: it stays out of the solver (a flow that shares nothing that can
** bind runs at its cap, and its start and end re-rate no other flow) */
static void tighten_cap(sl_machine *m, sl_flow *fl) {
  int k;
  for (k = 0; k < fl->nres; k++) {
    double alone = m->allres[fl->at[k].res].C / fl->at[k].w;
    if (alone < fl->cap) fl->cap = alone;
  }
}

/* does resource r, which can bind, leave room for more use at a flow's cap
** (what a fill would find: the flow reaches its cap before r is full), by
** more than the drift of r->use? Then the flow runs at its cap and changes no other flow's rate,
** no settle needed (a later change that fills r brings it in by widening) */
static int fits(const sl_res *r, double more) {
  return more < (r->C - r->use) * (1 - DRIFT);
}

/* flow f has joined its resources (ok) or ran out of memory doing so: its
** cap counts on them; into the end heap, at once at its cap when it has room
** there everywhere, else to be rated at the next settle */
static SLI_HOT_INLINE int flow_commit(sl_machine *m, int32_t f, int ok) {
  sl_flow *fl = &m->flows[f];
  int j, room = 1;
  if (!ok) {
    fl->cap = 0;                      /* counted nowhere yet: leaves nothing */
    res_leave(m, f);
    flow_free(m, f);
    return SL_ENOMEM;
  }
  heap_append(&m->fh, f, INT64_MAX, fl->seq);   /* last of all until it is rated
                                                   (room: the heap is as large as the pool) */
  tighten_cap(m, fl);
  for (j = 0; j < fl->nres; j++) {   /* one that cannot bind changes no rate; */
    sl_res *r = &m->allres[fl->at[j].res];   /* one not full changes no other's */
    r->capsum += fl->at[j].w * fl->cap;
    set_binds(r);
    if (!binds(r)) continue;
    if (may_be_full(r) && !res_dirty(m, fl->at[j].res)) m->oom = 1;
    if (!fits(r, fl->at[j].w * fl->cap)) room = 0;
  }
  if (!room) {                        /* to be rated at the settle */
    if (!dirty_push(m, -f - 1)) m->oom = 1;
    return SL_OK;
  }
  set_rate(m, fl, fl->cap, -1);      /* room everywhere: its own cap */
  fl->end = end_at(fl, fl->t);
  m->fh.h[m->fh.pos[f]].k = fl->end;   /* from last of all: it can only rise */
  heap_up(&m->fh, m->fh.pos[f]);
  flow_event(m);
  return SL_OK;
}

/* flow f, its bytes (rem) set, goes on from now at its rate: a start that
** continues a flow (no settle), keyed in the end heap as a new flow */
static void flow_resume(sl_machine *m, int32_t f, sl_time now) {
  sl_flow *fl = &m->flows[f];
  m->fstats.starts++;
  m->fstats.continued++;
  fl->t = now;
  fl->seq = m->flow_seq++;
  fl->end = end_at(fl, now);
  heap_append(&m->fh, f, fl->end, fl->seq);
  heap_up(&m->fh, m->fh.pos[f]);
  flow_event(m);
}

/* the transfer that block blk's pipe starts now to or from GM of gm_pe
** crosses what the flow that just ended there crossed, with the same cap: it
** goes on in that flow, at its rate. Every flow keeps its rate, as a settle
** would find (max-min rates depend on the flows' resources and caps alone),
** and none is re-rated: a pipe's chunks back to back cost no settle. The end
** heap orders it as a new flow. 1 when it did */
static int flow_again(sl_machine *m, int blk, int pipe, int gm_pe, int64_t bytes,
                      double hitshare, sl_time now) {
  int32_t f = m->ended;
  sl_flow *fl = &m->flows[f];
  if (fl->blk != blk || fl->pipe != pipe || fl->gm_pe != gm_pe || fl->hitshare != hitshare)
    return 0;
  m->ended = -1;
  fl->rem = (double)bytes;
  sli_chain_take(m, fl);
  flow_resume(m, f, now);
  return 1;
}

/* a transfer of bytes on block blk's MTE pipe to or from GM of gm_pe starts
** streaming now, hit of them (an MTE2 read) from the L2: those at the L2
** read rate and off HBM, the rest at the pipe's rate; SL_OK or SL_ENOMEM */
int sli_flow_start(sl_machine *m, int blk, int pipe, int gm_pe, int path, int64_t hit,
                   int64_t bytes, sl_time now) {
  const sl_params *p = &m->p;
  const sl_block *b = &m->blocks[blk];
  int get = pipe == SL_PIPE_MTE2, ok = 1;
  double per_cycle = get ? p->mte2_bytes_per_cycle : p->mte3_bytes_per_cycle;
  double share = (double)hit / (double)bytes;
  int32_t f;
  if (hit > 0)                          /* cycles: hit at the L2 rate, the rest at HBM's */
    per_cycle = (double)bytes / ((double)hit / p->l2_read_bytes_per_cycle +
                                 (double)(bytes - hit) / p->mte2_bytes_per_cycle);
  if (m->ended >= 0 && flow_again(m, blk, pipe, gm_pe, bytes, share, now)) return SL_OK;
  f = flow_open(m, blk, pipe, -1, bytes, bpps(per_cycle * p->core_ghz), now);
  if (f < 0) return SL_ENOMEM;
  m->flows[f].gm_pe = gm_pe;
  m->flows[f].hitshare = share;
  sli_chain_take(m, &m->flows[f]);
  if (hit < bytes) ok = res_join(m, f, &m->hbm[gm_pe], (double)(bytes - hit) / (double)bytes);
  if (ok && path != SL_PATH_LOCAL)   /* a get reads over gm_pe -> b; a put writes */
    ok = get ? join_path(m, f, path, gm_pe, b->pe, 1.0 / p->hccs_read_eff)
             : join_path(m, f, path, b->pe, gm_pe, 1.0 / p->hccs_write_eff);
  return flow_commit(m, f, ok);
}

/* a DMA engine's transfer of bytes from GM of src_pe to GM of dst_pe starts
** streaming now (through relay's links, -1: none): it reads one HBM and
** writes the other, crosses the path's links (RDMA: the NICs, whatever the
** path), the issuing PE's engine (SDMA, UDMA), at most the engine's rate;
** at its end ev lands lat later, then sig */
int sli_flow_start_dma(sl_machine *m, int blk, int eng, int get, int src_pe, int dst_pe,
                       int relay, int64_t bytes, sl_time now, int32_t ev, int32_t sig,
                       sl_time lat) {
  const sl_params *p = &m->p;
  int me = m->blocks[blk].pe, ok;
  double eff = 1.0 / (get ? p->hccs_read_eff : p->hccs_write_eff);
  double GBps = eng == SL_ENG_SDMA ? p->sdma_GBps : eng == SL_ENG_UDMA ? p->udma_GBps
              : p->rdma_GBps;
  int32_t f = flow_open(m, blk, SL_PIPE_DMA, eng, bytes, bpps(GBps), now);
  if (f < 0) return SL_ENOMEM;
  m->flows[f].ev = ev;
  m->flows[f].sig = sig;
  m->flows[f].lat = lat;
  if (src_pe == dst_pe) ok = res_join(m, f, &m->hbm[src_pe], 2.0);
  else ok = res_join(m, f, &m->hbm[src_pe], 1.0) && res_join(m, f, &m->hbm[dst_pe], 1.0);
  if (ok && eng == SL_ENG_RDMA)
    ok = join_path(m, f, SL_PATH_RDMA, src_pe, dst_pe, 1.0);
  else if (ok && relay >= 0)
    ok = join_path(m, f, sl_path(m, src_pe, relay), src_pe, relay, eff) &&
         join_path(m, f, sl_path(m, relay, dst_pe), relay, dst_pe, eff);
  else if (ok)
    ok = join_path(m, f, sl_path(m, src_pe, dst_pe), src_pe, dst_pe, eff);
  if (ok && eng != SL_ENG_RDMA)
    ok = res_join(m, f, &m->dma[2 * me + (eng == SL_ENG_UDMA)], 1.0);
  return flow_commit(m, f, ok);
}

/* ---------------------------------------------------------- the solver */

/* scratch room for n entries; 0 when out of memory */
static int scratch(sl_machine *m, int32_t n) {
  if (n <= m->capscr) return 1;
  {
    int32_t cap = m->capscr ? m->capscr : 256, *ns;
    while (cap < n) cap *= 2;
    ns = sli_realloc(m->scr, (size_t)cap * sizeof(*ns));
    if (ns == NULL) return 0;
    m->scr = ns;
    m->capscr = cap;
  }
  return 1;
}

/* flow f joins the flows to recompute F = scr[0..*qf) unless it is there;
** the resources it crosses that can bind, R = rq[0..*nres) */
static void to_rerate(sl_machine *m, int32_t f, int32_t *qf, int32_t *rq, int32_t *nres) {
  sl_flow *fl = &m->flows[f];
  int32_t stamp = m->stamp;
  int k;
  if (fl->mark == stamp) return;
  fl->mark = stamp;
  fl->fillk = 0;
  m->scr[(*qf)++] = f;
  for (k = 0; k < fl->nres; k++) {   /* slots are read only where it can bind */
    sl_res *o = &m->allres[fl->at[k].res];
    if (!binds(o)) continue;
    fl->fillk |= 1 << k;
    o->fl[fl->at[k].pos].mark = stamp;
    if (o->mark != stamp) { o->mark = stamp; rq[(*nres)++] = fl->at[k].res; }
  }
}

/* start loading flow f's record: its first line and its second (at[]) */
static void ask_flow(const sl_machine *m, int32_t f) {
  SLI_PREFETCH(&m->flows[f]);
  SLI_PREFETCH((const char *)&m->flows[f] + 64);
}

/* flow f is to be re-rated (to_rerate), after those found before it: into
** ids[0..*nb), its record asked for; a full batch is taken in, in order
** (one found twice is taken once: to_rerate passes over a marked flow) */
static void take_in(sl_machine *m, int32_t *ids, int *nb, int32_t f, int32_t *qf, int32_t *rq,
                    int32_t *nres) {
  int i;
  ask_flow(m, f);
  ids[(*nb)++] = f;
  if (*nb < BATCH) return;
  for (i = 0; i < *nb; i++) to_rerate(m, ids[i], qf, rq, nres);
  *nb = 0;
}

/* the flows to recompute -- the new ones and those the changed (dirty)
** resources held back -- into F = scr[0..*nf), the resources that can bind
** among those they cross into R = scr + nflows, [0..*nr); every other flow
** keeps its rate (its use of those resources counts as fixed) unless widening
** brings it in; 0 on no memory */
static int component(sl_machine *m, int32_t *nf, int32_t *nr) {
  int32_t i, j, k, stamp = ++m->stamp, qf = 0, nres = 0, ndirty = m->ndirty, ids[BATCH];
  int32_t *rq;
  int nb = 0;
  /* every flow and resource appears at most once, a flow's slots after them
  ** (and one more slot: scan_res stores an id one past its last) */
  if (!scratch(m, m->nflows * (SL_FLOW_RES + 1) + (int32_t)m->nres + 2)) return 0;
  rq = m->scr + m->nflows;
  for (i = 0; i < ndirty; i++) {
    sl_res *r;
    if (m->dirty[i] < 0) continue;
    r = &m->allres[m->dirty[i]];
    r->dirty = 0;
    r->mark = stamp;
    rq[nres++] = m->dirty[i];
  }
  for (i = 0; i < ndirty; i++) {      /* the new flows, those the changed resources held back */
    int32_t x = m->dirty[i];
    if (x < 0) { take_in(m, ids, &nb, -x - 1, &qf, rq, &nres); continue; }
    for (j = 0; j < m->allres[x].nfl; j++) {   /* those it holds back: widening finds the rest */
      const sl_slot *sl = &m->allres[x].fl[j];
      if (sl_slot_bn(sl)) take_in(m, ids, &nb, sl_slot_f(sl), &qf, rq, &nres);
    }
  }
  for (i = 0; i < nb; i++) to_rerate(m, ids[i], &qf, rq, &nres);
  m->ndirty = 0;
  for (i = 0, k = 0; i < nres; i++)   /* keep only the resources that can bind */
    if (binds(&m->allres[rq[i]])) rq[k++] = rq[i];
  *nf = qf;
  *nr = k;
  return 1;
}

#define NCAPS 8                 /* distinct flow caps handled without sorting */

/* the distinct caps (ascending) of caps[0..n) and of the flows F[i0..nf):
** their number, -1 once there are more than NCAPS (next_cap then scans) */
static int caps_add(const sl_machine *m, const int32_t *F, int32_t i0, int32_t nf,
                    double *caps, int n) {
  int32_t i;
  int j, k;
  for (i = i0; i < nf && n >= 0; i++) {
    double c = m->flows[F[i]].cap;
    for (j = 0; j < n && caps[j] < c; j++) {}
    if (j < n && caps[j] == c) continue;
    if (n == NCAPS) return -1;
    for (k = n++; k > j; k--) caps[k] = caps[k - 1];
    caps[j] = c;
  }
  return n;
}

/* the smallest cap above level among the unfrozen flows (HUGE_VAL if none) */
static double next_cap(const sl_machine *m, const int32_t *F, int32_t nf,
                       const double *caps, int ncaps, double level) {
  int32_t i;
  int j;
  double best = HUGE_VAL;
  for (j = 0; j < ncaps; j++) if (caps[j] > level * (1 + 1e-12)) return caps[j];
  if (ncaps > 0) return HUGE_VAL;
  for (i = 0; i < nf; i++) {            /* many distinct caps: scan */
    const sl_flow *fl = &m->flows[F[i]];
    if (!fl->frozen && fl->cap < best) best = fl->cap;
  }
  return best;
}

/* ------------------------------------------- resources by the level they fill at */

/* the key of a fill level (>= 0): its bits, which order as the doubles do */
static int64_t level_key(double level) {
  int64_t k;
  memcpy(&k, &level, sizeof(k));
  return k;
}

/* room in m->rs for every resource, as a tree's leaves and inner nodes; 0
** when out of memory */
static int rs_alloc(sl_machine *m) {
  sl_rset *s = &m->rs;
  s->k = malloc(2 * (m->nres + 1) * sizeof(*s->k));
  s->id = malloc(2 * (m->nres + 1) * sizeof(*s->id));
  s->pos = malloc((m->nres + 1) * sizeof(*s->pos));
  s->gone = malloc((m->nres + 1) * sizeof(*s->gone));
  if (s->k == NULL || s->id == NULL || s->pos == NULL || s->gone == NULL) {
    rs_free(s);
    return 0;
  }
  return 1;
}

/* release the set's arrays (none: rs_alloc makes them at the next fill) */
static void rs_free(sl_rset *s) {
  free(s->k); free(s->id); free(s->pos); free(s->gone);
  s->k = NULL;
  s->id = s->pos = s->gone = NULL;
  s->n = 0;
}

/* does key ka with id a come before key kb with id b (level, then index)? */
static int rs_before(int64_t ka, int32_t a, int64_t kb, int32_t b) {
  return ka < kb || (ka == kb && a < b);
}

/* the set s's entries 0..n become the leaves n..2n of a tournament tree,
** each node j below n holding the one of its children 2j and 2j + 1 that
** comes first: node 1 holds the least (every leaf is below it) */
static void rs_build(sl_rset *s) {
  int32_t i, n = s->n;
  s->ngone = 0;
  for (i = n - 1; i >= 0; i--) {
    s->k[n + i] = s->k[i];
    s->id[n + i] = s->id[i];
    s->pos[s->id[i]] = n + i;
  }
  for (i = n - 1; i >= 1; i--) {
    int32_t c = rs_before(s->k[2 * i + 1], s->id[2 * i + 1], s->k[2 * i], s->id[2 * i])
                ? 2 * i + 1 : 2 * i;
    s->k[i] = s->k[c];
    s->id[i] = s->id[c];
  }
}

/* node j of the set s's tree changed: the nodes above it take the child
** that comes first again, up to the first that stays as it was (the one
** that comes first below each is carried up) */
static void rs_fix(sl_rset *s, int32_t j) {
  int64_t k = s->k[j];
  int32_t id = s->id[j];
  for (; j > 1; j /= 2) {
    if (rs_before(s->k[j ^ 1], s->id[j ^ 1], k, id)) { k = s->k[j ^ 1]; id = s->id[j ^ 1]; }
    if (s->k[j / 2] == k && s->id[j / 2] == id) return;
    s->k[j / 2] = k;
    s->id[j / 2] = id;
  }
}

/* the key of leaf j of the set s's tree changed, and the top is its entry:
** every node above it changes, so each takes the child that comes first
** with no test of whether it stays as it was (rs_fix's; a fourth fewer
** instructions a level) */
static void rs_lift(sl_rset *s, int32_t j) {
  int64_t k = s->k[j];
  int32_t id = s->id[j];
  for (; j > 1; j /= 2) {
    if (rs_before(s->k[j ^ 1], s->id[j ^ 1], k, id)) { k = s->k[j ^ 1]; id = s->id[j ^ 1]; }
    s->k[j / 2] = k;
    s->id[j / 2] = id;
  }
}

/* take resource x out of the set s (it is in it): unordered, the last entry
** takes its place; in a tree its leaf's key becomes RS_GONE, and the nodes
** above it are found again before the top is next read (tree_top: freeze's
** loop, where this is inlined, makes no call) */
static SLI_HOT_INLINE void rs_remove(sl_rset *s, int32_t x) {
  int32_t i = s->pos[x], y;
  s->pos[x] = -1;
  if (s->tree) {
    s->k[i] = RS_GONE;
    s->gone[s->ngone++] = i;
    return;
  }
  if (i == --s->n) return;
  y = s->id[i] = s->id[s->n];
  s->k[i] = s->k[s->n];
  s->pos[y] = i;
}

/* flow fl freezes at rate (the level now), held there by resource bneck
** (-1: its cap): the resources it crosses lose its weight, and fill later.
** Its slots keep the rate it had until the settle ends: a fill and widening
** read the slots of the flows outside only. The fill's resources among those
** it crosses are those that can bind (fl->fillk: every one of them joined
** the fill when it did), so the others are not read */
static SLI_HOT_INLINE void freeze(sl_machine *m, sl_flow *fl, double rate, double level,
                              int32_t bneck) {
  int k;
  int64_t kk;
  fl->frozen = 1;
  fl->rate = rate;
  fl->bneck = bneck;
  for (k = 0; k < fl->nres; k++) {
    int32_t ri = fl->at[k].res;
    sl_res *r = &m->allres[ri];
    if (!(fl->fillk >> k & 1)) continue;   /* not one of the fill's */
    r->in += fl->at[k].w * rate;        /* what the re-rated flows have of it */
    if (rate > r->inmax) r->inmax = rate;
    if (bneck == ri && rate < r->inmin) r->inmin = rate;
    if (m->rs.pos[ri] < 0 || r->wfree <= EPS) continue;   /* already full, or nothing */
    r->left -= (level - r->base) * r->wfree;   /* of it left to fill: bring it to this level */
    r->base = level;
    r->wfree -= fl->at[k].w;
    if (r->wfree <= EPS) {              /* nothing of it left to fill */
      rs_remove(&m->rs, ri);
      continue;
    }
    r->key = level + (r->left > 0 ? r->left : 0) / r->wfree;
    kk = level_key(r->key);
    if (!m->rs.tree) m->rs.k[m->rs.pos[ri]] = kk;
    else if (kk < m->rs.k[m->rs.pos[ri]]) {   /* fell (rounding): into place now */
      m->rs.k[m->rs.pos[ri]] = kk;
      rs_fix(&m->rs, m->rs.pos[ri]);
    }                                   /* (in a tree, a key that rose waits for the top) */
  }
}

/* the top of the set s's tree once it is up to date (-1: none): the leaves
** taken out since the last top are taken out above too, then a top whose key
** rose since it was put in (the keys of those not read lag) is put in again
** at its key, until the top's key is its level. Every key in the tree is at
** most its resource's level, so that top is the least, as a walk finds it */
static int32_t tree_top(const sl_machine *m, sl_rset *s) {
  while (s->ngone > 0) {
    int32_t j = s->gone[--s->ngone];
    if (s->id[j] == s->id[1]) rs_lift(s, j);
    else rs_fix(s, j);
  }
  while (s->k[1] != RS_GONE) {
    const sl_res *r = &m->allres[s->id[1]];
    int32_t x = s->pos[s->id[1]];
    int64_t k;
    k = level_key(r->key);
    if (k == s->k[1]) return s->id[1];
    s->k[x] = k;
    rs_lift(s, x);
  }
  return -1;
}

/* the resource that fills first, the least index among equals (-1: none):
** a small set is walked (its compares predict well), a tree's top is kept */
static SLI_HOT_INLINE int32_t fill_top(const sl_machine *m, sl_rset *s) {
  int32_t i, n = s->n, best;
  int64_t k;
  if (s->tree) return tree_top(m, s);
  if (n == 0) return -1;
  k = s->k[0];
  best = s->id[0];
  for (i = 1; i < n; i++)
    if (s->k[i] < k || (s->k[i] == k && s->id[i] < best)) { k = s->k[i]; best = s->id[i]; }
  return best;
}

/* list r's re-rated (marked) flows, by id in slot order, at slots[*at..] and sum
** what the others use of it: their use stays theirs; widening reads the most
** any of them has there, and the least one it holds back (its bottleneck) has.
** No branch on the mark: in the large settles of an all-to-all (DeepEP's
** dispatch at EP128, a settle re-rating half the flows) whether a slot is
** marked is a coin toss, and its branch mispredicted. Every slot adds a term,
** x (1: marked) or y = 1 - x times it, so a term that is not the slot's is +0,
** and the sums and the maximum of terms >= 0 are the same to the bit (s + 0
** is s); its id is stored at slots[k] and kept by k moving on (the scratch
** has a slot of room past the last, component). Callgrind, dispatch_data
** EP64 x 64: 18% more instructions, 22% fewer mispredicted branches; CPU
** time 6-15% less (A/B pairs, EP64 x 64 and EP128 x 64) */
static void scan_res(sl_machine *m, sl_res *r, int32_t *slots, int32_t *at) {
  int32_t j, stamp = m->stamp, n = r->nfl, k = *at;
  const sl_slot *fl = r->fl;
  double wmark = 0, out = 0, outmax = 0, outmin = HUGE_VAL;   /* in registers: the */
  double pick[2] = { HUGE_VAL, 0 };     /* (outmin's term: HUGE_VAL or the rate) */
  r->fbeg = k;                          /* same sums in the same order, no store between */
  for (j = 0; j < n; j++) {
    const sl_slot *sl = &fl[j];
    int in = sl->mark == stamp;
    double rate = sl->rate, x = (double)in, y = 1 - x;
    slots[k] = sl_slot_f(sl);
    k += in;
    wmark += sl->w * x;
    out += sl->w * rate * y;
    outmax = outmax > rate * y ? outmax : rate * y;   /* (one maxsd, in place) */
    pick[1] = rate;
    rate = pick[sl_slot_bn(sl) & !in];  /* held back here, and outside */
    outmin = rate < outmin ? rate : outmin;
  }
  r->wmark = wmark;
  r->out = out;
  r->outmax = outmax;
  r->outmin = outmin;
  *at = k;
  r->fcnt = k - r->fbeg;
  r->scan = stamp;
}

/* the resources R[0..nr) in the set m->rs, keyed by the level they fill at
** less what the flows not being re-rated use of them. A resource scanned
** earlier in this settle that no flow has joined since (enlist) keeps its
** scan; the slots a settle lists go on after the last fill's, and start
** again from the first when they might not fit */
static int fill_start(sl_machine *m, const int32_t *F, int32_t nf, const int32_t *R,
                      int32_t nr) {
  int32_t i, room = SLOT_ROOM(m), *slots = m->scr + m->nflows + m->nres + 1;
  int again = 0;                        /* every resource scanned from the first slot */
  sl_rset *s = &m->rs;
  if (s->k == NULL && !rs_alloc(m)) return 0;
  for (i = 0; i < nf; i++) m->flows[F[i]].frozen = 0;
  s->n = 0;
  for (i = 0; i < nr; i++) {           /* each resource's re-rated flows, in slot order */
    sl_res *r = &m->allres[R[i]];
    if (r->scan != m->stamp) {
      if (!again && m->nslots + r->nfl > room) {   /* might not fit: all again */
        int32_t j;                      /* (they then do: a flow has at most SL_FLOW_RES) */
        for (j = 0; j < nr; j++) m->allres[R[j]].scan = 0;
        m->nslots = s->n = 0;
        again = 1;
        i = -1;
        continue;
      }
      scan_res(m, r, slots, &m->nslots);
    }
    r->wfree = r->wmark;
    r->base = 0;
    r->in = r->inmax = 0;               /* summed as the flows freeze */
    r->inmin = HUGE_VAL;
    r->left = r->out < r->C ? r->C - r->out : 0;
    s->pos[R[i]] = -1;
    if (r->wfree <= EPS) continue;      /* nothing of it to fill */
    r->key = r->left / r->wfree;
    s->k[s->n] = level_key(r->key);
    s->id[s->n] = R[i];
    s->pos[R[i]] = s->n++;
  }
  s->tree = s->n > m->rs_tree;
  if (s->tree) rs_build(s);
  return 1;
}

/* progressive filling of the flows F[0..nf) over the resources R[0..nr):
** the unfrozen flows' common rate rises to the next cap or the next resource
** to fill (the least level in m->rs), whose flows then freeze; caps[0..ncaps)
** are their distinct caps (ncaps -1: too many, next_cap scans) */
static void fill(sl_machine *m, const int32_t *F, int32_t nf, const int32_t *R, int32_t nr,
                 const double *caps, int ncaps) {
  int32_t i, j, top, nfree = nf, *slots = m->scr + m->nflows + m->nres + 1;
  double level = 0;
  if (!fill_start(m, F, nf, R, nr)) { m->oom = 1; return; }
  top = fill_top(m, &m->rs);            /* kept up to date as flows freeze */
  while (nfree > 0) {
    double cap = next_cap(m, F, nf, caps, ncaps, level);
    double full = top >= 0 ? m->allres[top].key : HUGE_VAL;
    double next = cap < full ? cap : full;
    if (next > level) level = next;
    if (cap <= level * (1 + 1e-12)) {   /* flows that reached their cap */
      for (i = 0; i < nf; i++) {
        sl_flow *fl = &m->flows[F[i]];
        if (!fl->frozen && fl->cap <= level * (1 + 1e-12)) {
          freeze(m, fl, fl->cap, level, -1);
          nfree--;
        }
      }
      top = fill_top(m, &m->rs);         /* their resources fill later */
    }
    while (top >= 0 && m->allres[top].key <= level * (1 + 1e-12)) {
      sl_res *r = &m->allres[top];      /* a full resource: its flows freeze */
      int32_t ri = top;
      const int32_t *sj = slots + r->fbeg;
      rs_remove(&m->rs, ri);
      for (j = 0; j < r->fcnt; j++)     /* loads only: its flows' records, together */
        SLI_PREFETCH(&m->flows[sj[j]]);
      for (j = 0; j < r->fcnt; j++) {
        sl_flow *fl = &m->flows[sj[j]];
        if (!fl->frozen) { freeze(m, fl, level, level, ri); nfree--; }
      }
      top = fill_top(m, &m->rs);
    }
  }
}

/* schedule the EV_FLOW of the earliest end if it is sooner than the one due */
static void flow_event(sl_machine *m) {
  sl_time t;
  if (m->fh.n == 0) return;
  t = m->fh.h[0].k;
  if (t >= m->flow_ev_t) return;
  m->flow_ev_t = t;
  if (sli_schedule_flow(m, t) != SL_OK)   /* a key alone, no record */
    m->oom = 1;                          /* a lost flow end would deadlock */
}

/* bring the bytes left of the flows F[i0..nf) up to now */
static void catch_up(sl_machine *m, const int32_t *F, int32_t i0, int32_t nf, sl_time now) {
  int32_t i;
  for (i = i0; i < nf; i++) {
    sl_flow *fl = &m->flows[F[i]];
    if (fl->t < now) {
      if (fl->cn > 0) sli_chain_pass(fl, now);   /* a chain's chunks that ended */
      fl->rem -= fl->rate * (double)(now - fl->t);
      if (fl->rem < 0) fl->rem = 0;
      fl->t = now;
    }
  }
}

/* flow f (outside) joins the flows being re-rated, unless it has: the
** resources it crosses that can bind and are not in the fill yet join it */
static void enlist(sl_machine *m, int32_t f, int32_t *nf, int32_t *nr) {
  sl_flow *fl = &m->flows[f];
  int32_t *rq = m->scr + m->nflows, stamp = m->stamp;
  int k;
  if (fl->mark == stamp) return;
  fl->mark = stamp;
  fl->fillk = 0;
  m->scr[(*nf)++] = f;
  for (k = 0; k < fl->nres; k++) {
    sl_res *o = &m->allres[fl->at[k].res];
    if (!binds(o)) continue;
    fl->fillk |= 1 << k;
    o->fl[fl->at[k].pos].mark = stamp;
    o->scan = 0;                        /* its lists change: scanned again */
    if (o->mark == stamp) continue;
    o->mark = stamp;
    rq[(*nr)++] = fl->at[k].res;
  }
}

/* the flows ids[0..n) join, in that order (enlist): their records were
** asked for as they were found; the resources they cross are asked for
** together before any is read (loads only) */
static void enlist_all(sl_machine *m, const int32_t *ids, int n, int32_t *nf, int32_t *nr) {
  int i, k;
  for (i = 0; i < n; i++) {
    const sl_flow *fl = &m->flows[ids[i]];
    for (k = 0; k < fl->nres; k++) SLI_PREFETCH(&m->allres[fl->at[k].res]);
  }
  for (i = 0; i < n; i++) enlist(m, ids[i], nf, nr);
}

/* after a fill, on each resource of it R[0..nr): the flows outside that it
** held back and no longer does (it is not full, or another flow has more),
** and those that have more of it than a flow inside that it holds back, join
** the fill (judged on the fill's result before any joins). They join in the
** order found, BATCH at a time: one found again before its batch joined
** joins once (enlist), as it would have been passed over once marked */
static void widen(sl_machine *m, int32_t *nf, int32_t *nr) {
  int32_t i, j, n = *nr, stamp = m->stamp, *R = m->scr + m->nflows, ids[BATCH];
  int nb = 0;
  for (i = 0; i < n; i++) {            /* per resource: below lo or above hi */
    sl_res *r = &m->allres[R[i]];
    double top = r->inmax > r->outmax ? r->inmax : r->outmax;
    r->lo = r->in + r->out >= r->C * (1 - SL_FAIR_TOL) ? top / (1 + SL_FAIR_TOL)
                                                      : HUGE_VAL;
    r->hi = r->inmin * (1 + SL_FAIR_TOL);
  }
  for (i = 0; i < n; i++) {
    const sl_res *r = &m->allres[R[i]];
    double lo = r->lo, hi = r->hi;
    if (!(r->outmin < lo) && !(r->outmax > hi)) continue;
    for (j = 0; j < r->nfl; j++) {     /* the flows that break the condition: */
      const sl_slot *sl = &r->fl[j];   /* one test of the whole (&, |: no branch on the
                                          mark, a coin toss at scale), mostly false */
      if ((sl->mark != stamp) & ((sl_slot_bn(sl) & (sl->rate < lo)) | (sl->rate > hi))) {
        ids[nb] = sl_slot_f(sl);
        ask_flow(m, ids[nb]);
        if (++nb == BATCH) { enlist_all(m, ids, nb, nf, nr); nb = 0; }
      }
    }
  }
  enlist_all(m, ids, nb, nf, nr);
}

#define AHEAD 4                 /* flows whose slots and heap entry are loaded ahead */

/* the flows F[0..nf) take the rates their fill found: their slots, the
** resources' use, their ends in the end heap. Each reads and writes lines
** that are misses at scale (a slot and a use per resource, a heap entry): loaded
** AHEAD flows ahead (their place in the heap 2 * AHEAD ahead), loads only */
static void rate_all(sl_machine *m, const int32_t *F, int32_t nf, sl_time now) {
  int32_t i;
  for (i = 0; i < nf && i < 2 * AHEAD; i++) SLI_PREFETCH(&m->fh.pos[F[i]]);
  for (i = 0; i < nf; i++) {
    int32_t f = F[i];
    sl_flow *fl = &m->flows[f];
    if (i + 2 * AHEAD < nf) SLI_PREFETCH(&m->fh.pos[F[i + 2 * AHEAD]]);
    if (i + AHEAD < nf) {
      const sl_flow *a = &m->flows[F[i + AHEAD]];
      int k;
      if (m->fh.pos[F[i + AHEAD]] >= 0) SLI_PREFETCH(&m->fh.h[m->fh.pos[F[i + AHEAD]]]);
      for (k = 0; k < a->nres; k++) {
        const sl_res *r = &m->allres[a->at[k].res];
        SLI_PREFETCH(&r->use);
        SLI_PREFETCH(&r->fl[a->at[k].pos]);
      }
    }
    set_rate(m, fl, fl->rate, fl->bneck);   /* its slots and the resources' use */
    fl->end = end_at(fl, now);
    if (m->fh.pos[f] >= 0 && m->fh.h[m->fh.pos[f]].k != fl->end) {
      m->fh.h[m->fh.pos[f]].k = fl->end;
      heap_fix(&m->fh, m->fh.pos[f]);
    }
  }
}

/* recompute the rates of the flows the changes since the last call touch */
void sli_flow_settle(sl_machine *m, sl_time now) {
  int32_t nf, nr, *F, *R;
  double caps[NCAPS];
  int ncaps;
  if (m->ndirty == 0) return;
  m->settled_t = now;
  if (!component(m, &nf, &nr)) { m->oom = 1; return; }   /* sl_step ends the launch */
  F = m->scr;
  R = m->scr + m->nflows;
  catch_up(m, F, 0, nf, now);
  m->fstats.settles++;
  ncaps = caps_add(m, F, 0, nf, caps, 0);
  m->nslots = 0;
  for (;;) {                             /* fill, widen, until nothing joins */
    int32_t nf0 = nf;
    m->fstats.fills++;
    m->fstats.filled += nf;
    fill(m, F, nf, R, nr, caps, ncaps);
    widen(m, &nf, &nr);
    if (nf == nf0) break;
    catch_up(m, F, nf0, nf, now);
    ncaps = caps_add(m, F, nf0, nf, caps, ncaps);
  }
  m->fstats.rerated += nf;
  rate_all(m, F, nf, now);
  flow_event(m);
}

/* settle the flows' changes before the event at next (an EV_FLOW when
** flow_next) is handled: changes at one instant are settled once */
void sli_flow_settle_due(sl_machine *m, sl_time next, int flow_next) {
  if (m->ndirty > 0 && (next > settle_at(m) ||   /* keys of chains alone: a pipe's event */
                        (flow_next && next == settle_at(m) && !sli_flow_chain_only(m, next))))
    sli_flow_settle(m, settle_at(m));
}

/* what the solver did since the machine was made */
void sl_machine_flow_stats(const sl_machine *m, sl_flow_stats *s) { *s = m->fstats; }

#define NPRE 32                 /* flow ends loaded ahead at one instant, at most */

/* the flows that end by t (the top of the end heap down to the first later
** entry, at most NPRE of them) into ids; their number */
static int ends_by(const sl_machine *m, sl_time t, int32_t *ids) {
  int32_t stack[NPRE];
  int n = 0, sp = 0, c;
  if (m->fh.n == 0 || m->fh.h[0].k > t) return 0;
  stack[sp++] = 0;
  while (sp > 0 && n < NPRE) {
    int32_t i = stack[--sp];
    ids[n++] = m->fh.h[i].id;
    for (c = 2 * i + 1; c <= 2 * i + 2; c++)
      if (c < m->fh.n && m->fh.h[c].k <= t && sp < NPRE) stack[sp++] = c;
  }
  return n;
}

/* start loading, a step of each at a time, what the ends of the flows
** ending at t read one after another: the flow, its block's queues, the
** instruction that streamed, the one after it and that one's flag token or
** landing record. Each is a miss on a record made long before; asked for
** across the flows of the instant together they overlap, where one flow's
** chain alone waits for each in turn. Loads only: nothing changes */
static SLI_HOT_INLINE void prefetch_ends(const sl_machine *m, sl_time t) {
  int32_t ids[NPRE], op[NPRE];
  int n, i;
  if ((m->fh.n < 2 || m->fh.h[1].k > t) && (m->fh.n < 3 || m->fh.h[2].k > t))
    return;   /* the top ends alone: its loads overlap nothing, so asking for them
                 ahead only costs instructions (about 270 a small put alone) */
  n = ends_by(m, t, ids);
  for (i = 0; i < n; i++) SLI_PREFETCH(&m->flows[ids[i]]);
  for (i = 0; i < n; i++) {
    const sl_flow *fl = &m->flows[ids[i]];
    op[i] = -1;
    if (fl->eng < 0) SLI_PREFETCH(&m->blocks[fl->blk].qhead);
  }
  for (i = 0; i < n; i++) {
    const sl_flow *fl = &m->flows[ids[i]];
    if (fl->eng >= 0) continue;
    op[i] = m->blocks[fl->blk].qhead[QI(fl->pipe)];
    if (op[i] >= 0) SLI_PREFETCH(&m->ops[op[i]]);
  }
  for (i = 0; i < n; i++) {
    if (op[i] < 0) continue;
    op[i] = m->ops[op[i]].next;
    if (op[i] >= 0) SLI_PREFETCH(&m->ops[op[i]]);
  }
  for (i = 0; i < n; i++) {
    const sl_ins *o;
    if (op[i] < 0) continue;
    o = &m->ops[op[i]];
    if ((o->kind == OP_SET || o->kind == OP_WAIT) && o->tok >= 0 && o->tok < m->ntoks)
      SLI_PREFETCH(&m->toks[o->tok]);
    else if ((o->kind == OP_XFER || o->kind == OP_VEC) && o->ev >= 0 && o->ev < m->nevs)
      SLI_PREFETCH((const char *)&m->evs[o->ev] + 64);
  }
}

/* EV_FLOW at t: the flows that end by t end; their pipes go on */
void sli_flow_due(sl_machine *m, sl_time t) {
  if (m->ndirty > 0 && (t > settle_at(m) || (t == settle_at(m) && !sli_flow_chain_only(m, t))))
    sli_flow_settle(m, settle_at(m));
  if (t != m->flow_ev_t) return;         /* superseded by an earlier one */
  m->flow_ev_t = INT64_MAX;
  if (m->ndirty == 0) m->settle_t = t;   /* the ends below change rates from t on: a
                                            pipe that starts its next flow at t must
                                            not settle them at an earlier change (a
                                            window open since an earlier one stays) */
  prefetch_ends(m, t);
  while (m->fh.n > 0 && m->fh.h[0].k <= t) {
    int32_t f = m->fh.h[0].id;
    sl_flow *fl = &m->flows[f];
    int blk = fl->blk, pipe = fl->pipe, eng = fl->eng;
    int32_t ev = fl->ev, sig = fl->sig;
    sl_time lat = fl->lat;
    heap_remove(&m->fh, f);
    if ((eng == SLI_ENG_GHOST || fl->gn > 0) && sli_flow_chain_due(m, f, t)) continue;
    if (eng >= 0) {                      /* a DMA engine's: it leaves now */
      res_leave(m, f);
      flow_free(m, f);
      sli_dma_done(m, blk, eng, ev, sig, lat, t);
      continue;
    }
    m->ended = f;                        /* leaves at the next flow_open, unless */
    sli_xfer_done(m, blk, pipe, t);      /* its pipe goes on in it (flow_again) */
    if (m->ended >= 0) flow_gone(m);
  }
  flow_event(m);
}

/* ---------------------------------------------------------- chains' ghosts */

/* the key of flow f at t is a chain's (chain.c: a ghost's end, or its chain
** flow's next ghost): 1 when chain.c took it. What it starts starts as a pipe's
** transfer outside this EV_FLOW would: the ends still due at t are this
** EV_FLOW's, so no second one is scheduled at t */
int sli_flow_chain_due(sl_machine *m, int32_t f, sl_time t) {
  int took;
  m->flow_ev_t = t;
  took = sli_chain_due(m, f, t);
  m->flow_ev_t = INT64_MAX;
  return took;
}

/* a ghost flow (chain.c): the chunk of a chain's other leg that block blk's pipe
** would stream now as its own transfer to or from GM of gm_pe (the local HBM;
** hit of its bytes, an MTE2 read, from the L2), as sli_flow_start would start it
** but with no instruction of the pipe behind it: it shares the HBM as that
** chunk's flow would, and its end only leaves (sli_flow_ghost_end). Its id, -1
** when out of memory */
int32_t sli_flow_ghost(sl_machine *m, int blk, int pipe, int gm_pe, int64_t hit,
                       int64_t bytes, sl_time now) {
  const sl_params *p = &m->p;
  double per_cycle = pipe == SL_PIPE_MTE2 ? p->mte2_bytes_per_cycle : p->mte3_bytes_per_cycle;
  double cap, w = hit < bytes ? (double)(bytes - hit) / (double)bytes : 0;   /* on the HBM */
  int32_t f;
  int ok = 1;
  if (hit > 0)                          /* cycles: hit at the L2 rate, the rest at HBM's */
    per_cycle = (double)bytes / ((double)hit / p->l2_read_bytes_per_cycle +
                                 (double)(bytes - hit) / p->mte2_bytes_per_cycle);
  cap = bpps(per_cycle * p->core_ghz);
  f = flow_open(m, blk, pipe, SLI_ENG_GHOST, bytes, cap, now);
  if (f < 0) return -1;
  m->flows[f].gm_pe = gm_pe;
  if (hit < bytes) ok = res_join(m, f, &m->hbm[gm_pe], w);
  return flow_commit(m, f, ok) == SL_OK ? f : -1;
}

/* ghost flow f (out of the end heap) ended: it leaves its resources */
void sli_flow_ghost_end(sl_machine *m, int32_t f) {
  res_leave(m, f);
  flow_free(m, f);
}

/* chain flow f, out of the end heap (its key was a ghost's start), goes back
** in at its next key, from the time its bytes were brought up to date */
void sli_flow_rekey(sl_machine *m, int32_t f) {
  sl_flow *fl = &m->flows[f];
  fl->end = end_at(fl, fl->t);
  heap_append(&m->fh, f, fl->end, fl->seq);
  heap_up(&m->fh, m->fh.pos[f]);
}

/* are the keys due by t some, and all chains' next ghosts? What they start the
** chunked chain starts from a pipe's event, which settles a window only after
** its end, so an EV_FLOW of them alone settles as that would. The keys due by t
** are a subtree at the top of the end heap (no key is below its parent's): only
** they are read, depth first, a pending right child per level at most (the
** stack: a heap of int32 entries is less than 32 deep) */
int sli_flow_chain_only(const sl_machine *m, sl_time t) {
  int32_t stack[64], i, c;
  int sp = 0;
  if (m->fh.n == 0 || m->fh.h[0].k > t) return 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const sl_flow *fl;
    i = stack[--sp];
    fl = &m->flows[m->fh.h[i].id];
    if (fl->gn <= 0 || fl->eng == SLI_ENG_GHOST) return 0;
    for (c = 2 * i + 2; c >= 2 * i + 1; c--)
      if (c < m->fh.n && m->fh.h[c].k <= t) stack[sp++] = c;
  }
  return 1;
}
