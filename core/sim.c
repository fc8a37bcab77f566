/*
** sim.c -- the virtual clock: event pool, (time, sequence) heap, the step
** loop that hands the next block to resume, error text and the trace.
*/
#define _GNU_SOURCE             /* madvise, and Linux's mremap, beside _POSIX_C_SOURCE */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include "sli.h"

/* message of a status code */
const char *sl_strerror(int code) {
  switch (code) {
    case SL_OK: return "ok";
    case SL_EARG: return "bad argument";
    case SL_EOOB: return "out of bounds";
    case SL_EFLAG: return "flag misuse";
    case SL_EFREED: return "use of a freed buffer";
    case SL_ENOMEM: return "not enough memory";
    case SL_EHEAP: return "symmetric heap exhausted";
    case SL_ESTATE: return "wrong state";
    case SL_EDEADLOCK: return "deadlock";
    case SL_ETIME: return "virtual-time limit reached";
    case SL_EUNBACKED: return "no backing bytes (timing-only)";
    default: return "unknown error";
  }
}

/* record an error message; returns code */
int sli_err(sl_machine *m, int code, int arg, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->err, sizeof(m->err), fmt, ap);
  va_end(ap);
  m->err_arg = arg;
  if (code == SL_ENOMEM) m->oom = 1;    /* a running launch cannot be trusted */
  return code;
}

/* (at, as) before (bt, bs): time, then the tie break (sl_key_tie). Where the
** compiler has 128-bit integers, one compare of (time, tie) as a single
** unsigned number (the time's sign bit flipped keeps the order of signed
** times), without a branch: the heap's choice among children mispredicts
** less */
static inline int key_less(sl_time at, uint64_t as, sl_time bt, uint64_t bs) {
#ifdef __SIZEOF_INT128__
  const uint64_t flip = (uint64_t)1 << 63;
  unsigned __int128 x = (unsigned __int128)((uint64_t)at ^ flip) << 64 | as;
  unsigned __int128 y = (unsigned __int128)((uint64_t)bt ^ flip) << 64 | bs;
  return x < y;
#else
  return at < bt || (at == bt && as < bs);
#endif
}

/* key order */
static inline int ev_less(const sl_key *a, const sl_key *b) {
  return key_less(a->t, a->seq, b->t, b->seq);
}

/* the tie break of a new key of kind naming ev: the block it belongs to (the
** block itself for a wake-up, its pipe's or queue's block, the block of the
** event record; the flows' EV_FLOW belongs to none and comes first), then
** that block's count of keys. Equal times so run in an order that depends on
** the blocks alone, not on when each key was made: a block that runs ahead
** of others (sl_must_yield) makes its keys earlier than they would be made,
** in the same order */
/* the tie of block blk's next key */
static inline uint64_t block_tie(sl_machine *m, int32_t blk) {
  sli_merge_due(m, blk);                 /* a merged kick's count first */
  return ((uint64_t)(blk + 1) << SL_TIE_BITS) | m->blocks[blk].nkey++;
}

/* block blk's next tie (block_tie, for the other files of the core) */
uint64_t sli_block_tie(sl_machine *m, int32_t blk) { return block_tie(m, blk); }

/* the tie of a key of kind for record ev: its block's next (block_tie), the
** machine's own count for an EV_FLOW, which has no block */
static uint64_t key_tie(sl_machine *m, int kind, int32_t ev) {
  int32_t blk;
  if (kind == EV_FLOW) return m->nkey++;
  if (kind == EV_WAKE) blk = ev;
  else if (kind == EV_PIPE) blk = ev / 4;
  else if (kind == EV_DMAQ) blk = ev / SL_NENG;
  else blk = m->evs[ev].blk;
  return block_tie(m, blk);
}

/* an event is two cache lines (the pool is 64-byte aligned) */
_Static_assert(sizeof(sl_event) == 128, "sl_event is 128 bytes");

/* a pool this large or larger lives in 2 MiB pages where the system has them
** (transparent huge pages on request): the pools of a machine of thousands
** of blocks hold tens to hundreds of MiB read at random, one record an event,
** and in 4 KiB pages nearly every such read also misses the TLB; their
** first touch costs one page fault per 2 MiB instead of per 4 KiB. */
#if defined(MAP_ANONYMOUS) && defined(MREMAP_MAYMOVE) && defined(MREMAP_FIXED)
/* Where the system can move a mapping (Linux's mremap), a large pool is a
** mapping of its own that a doubling grows in place or moves whole to a new
** 2 MiB-aligned range: the kernel moves the page tables (a huge page's whole
** at a time), so no record is copied and no page is touched again. Copying
** into a new block each doubling touched every generation (at 256 ranks x
** 48 cores the pools' blocks added up to twice what they held at the end),
** and a first touch is costly. */
#define POOL_REMAP 1
#endif

/* bytes rounded up to a whole number of huge pages */
static size_t huge_round(size_t bytes) {
  return (bytes + SLI_HUGE_PAGE - 1) / SLI_HUGE_PAGE * SLI_HUGE_PAGE;
}

#ifdef POOL_REMAP
/* grow pm's block to bytes (whole huge pages), keeping its first keep bytes
** (at items); 0 when out of memory */
static int pool_remap(sl_poolmem *pm, const void *items, size_t keep, size_t bytes) {
  uint8_t *p, *to;
  if (pm->mapped == 0) {         /* from a malloc'd block under a huge page: copied once */
    if ((p = sli_huge_map(bytes, 1)) == NULL) return 0;
    if (keep > 0) memcpy(p, items, keep);
    free(pm->base);
  } else if ((p = mremap(pm->base, pm->mapped, bytes, 0)) == MAP_FAILED) {
    /* the range after it is taken: moved whole to a range reserved on a huge page */
    if ((to = sli_huge_map(bytes, 0)) == NULL) return 0;
    p = mremap(pm->base, pm->mapped, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    if (p == MAP_FAILED) { munmap(to, bytes); return 0; }
  }
  pm->base = p;
  pm->mapped = bytes;
  return 1;
}
#else
/* bytes of memory aligned to SLI_HUGE_PAGE in huge pages where there are,
** NULL when out of memory */
static void *huge_alloc(size_t bytes) {
  void *p;
  bytes = huge_round(bytes);
  if (posix_memalign(&p, SLI_HUGE_PAGE, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE);   /* a hint: without it, 4 KiB pages */
#endif
  return p;
}
#endif

/* grow a 64-byte aligned pool to cap items of size sz, keeping its first n:
** pm holds the block, *items is its aligned start. Small pools grow by
** realloc (which moves no bytes where the C library remaps the pages of a
** large block; when the start's offset in the block changed, the items move
** to the new aligned start); from SLI_HUGE_PAGE bytes on, by pool_remap
** where there is one, else into a new block of huge pages and the items
** copied (once per doubling) */
int sli_pool_grow64(sl_poolmem *pm, void **items, int32_t n, int32_t cap, size_t sz) {
  size_t old = pm->base != NULL ? (size_t)((uint8_t *)*items - (uint8_t *)pm->base) : 0, off;
  uint8_t *nm;
  if ((size_t)cap * sz >= SLI_HUGE_PAGE || pm->mapped > 0) {
#ifdef POOL_REMAP
    if (!pool_remap(pm, *items, (size_t)n * sz, huge_round((size_t)cap * sz))) return 0;
#else
    if ((nm = huge_alloc((size_t)cap * sz)) == NULL) return 0;
    if (n > 0) memcpy(nm, *items, (size_t)n * sz);
    free(pm->base);
    pm->base = nm;
#endif
    *items = pm->base;
    return 1;
  }
  nm = realloc(pm->base, (size_t)cap * sz + 63);
  if (nm == NULL) return 0;
  off = (size_t)(-(uintptr_t)nm & 63);
  if (off != old && n > 0) memmove(nm + off, nm + old, (size_t)n * sz);
  pm->base = nm;
  *items = nm + off;
  return 1;
}

/* give back a pool's block (unmapped when it is a mapping of its own) */
void sli_pool_free64(sl_poolmem *pm) {
#ifdef POOL_REMAP
  if (pm->mapped > 0) munmap(pm->base, pm->mapped);
  else
#endif
    free(pm->base);
  pm->base = NULL;
  pm->mapped = 0;
}

/* room in f for cap records (a pool grew to cap); 0 when out of memory */
int sli_free_room(sl_freelist *f, int32_t cap) {
  int32_t *ni;
  if (cap <= f->cap) return 1;
  if ((ni = sli_realloc(f->id, (size_t)cap * sizeof(*ni))) == NULL) return 0;
  f->id = ni;
  f->cap = cap;
  return 1;
}

/* grow the event pool (aligned: each event is two whole cache lines); 0
** when out of memory */
static int ev_grow(sl_machine *m) {
  int32_t cap = m->capevs ? m->capevs * 2 : 256;
  if (!sli_free_room(&m->fev, cap) ||
      !sli_pool_grow64(&m->evs_mem, (void **)&m->evs, m->nevs, cap, sizeof(*m->evs)))
    return 0;
  m->capevs = cap;
  return 1;
}

/* a free event slot past the pool's end (grown when full); NULL when out
** of memory */
static SLI_SLOW_PATH sl_event *ev_append(sl_machine *m, int32_t *id) {
  if (m->nevs == m->capevs && !ev_grow(m)) return NULL;
  *id = m->nevs++;
  return &m->evs[*id];
}

/* take a free event slot; NULL when out of memory */
sl_event *sli_newev(sl_machine *m, int32_t *id) {
  if ((*id = sli_free_take(&m->fev)) < 0) return ev_append(m, id);
  if (sli_prefetching(m)) {
    sli_free_prefetch(&m->fev, m->evs, sizeof(*m->evs));
    sli_free_prefetch(&m->fev, (const char *)m->evs + 64, sizeof(*m->evs));
  }
  return &m->evs[*id];
}

/* a new zeroed event of kind for block blk at the running primitive's Lua
** line, not yet scheduled; NULL when out of memory. Zeroed by a copy of a
** zero record: GCC makes memset of 128 bytes a rep stos, whose start-up costs
** more than the eight vector stores of the copy (every copy, signal and
** vector op makes one) */
sl_event *sli_event_new(sl_machine *m, int kind, int blk, int32_t *id) {
  static const sl_event zero;
  sl_event *e = sli_newev(m, id);
  if (e == NULL) return NULL;
  *e = zero;
  e->kind = kind;
  e->blk = blk;
  e->site = m->site;
  e->next_free = -1;
  return e;
}

/* give an event record back */
static void ev_release(sl_machine *m, int32_t id) { sli_free_give(&m->fev, id); }

/* give back an event record that no key names (a DMA queue's) */
void sli_ev_release(sl_machine *m, int32_t id) { ev_release(m, id); }

/* room at the end of a full in-order queue, by compacting or growing */
static int fifo_room(sl_key **q, int32_t *head, int32_t *n, int32_t *cap) {
  if (*head > 0 && *n <= *cap / 2) {    /* compact when it halves the queue */
    memmove(*q, *q + *head, (size_t)*n * sizeof(**q));
    *head = 0;
  } else {
    int32_t nc = *cap ? *cap * 2 : 256;
    sl_key *nq = sli_realloc(*q, (size_t)nc * sizeof(*nq));
    if (nq == NULL) return SL_ENOMEM;
    *q = nq;
    *cap = nc;
  }
  return SL_OK;
}

/* room lost: a key that names an event record gives the record back */
static int push_failed(sl_machine *m, const sl_key *k) {
  if (k->kind != EV_WAKE && k->kind != EV_PIPE && k->kind != EV_DMAQ && k->ev >= 0)
    ev_release(m, k->ev);
  return SL_ENOMEM;
}

/* append k to a full in-order queue (room made by compacting or growing) */
static int fifo_push_slow(sl_machine *m, sl_key **q, int32_t *head, int32_t *n,
                          int32_t *cap, const sl_key *k) {
  if (fifo_room(q, head, n, cap) != SL_OK) return push_failed(m, k);
  (*q)[*head + (*n)++] = *k;
  return SL_OK;
}

/* the heap is 4-ary: a pop goes down half the levels of a binary heap, and
** at thousands of blocks each level is a miss (a node's four children lie
** together, in two or three cache lines) */
#define HEAP_D 4

/* the earliest of the two heaps' tops and the lanes' (lmin), after one of
** them changed */
static inline void heap_min(sl_machine *m) {
  const sl_key *h = m->heap.n > 0 ? m->heap.h : NULL;
  const sl_key *f = m->fheap.n > 0 ? m->fheap.h : NULL;
  h = f == NULL || (h != NULL && ev_less(h, f)) ? h : f;
  m->hmin = m->lmin == NULL || (h != NULL && ev_less(h, m->lmin)) ? h : m->lmin;
}

/* lane_min when more than one lane holds keys, or none */
static void lanes_min(sl_machine *m) {
  const sl_key *best = NULL;
  int32_t mask = m->lmask;
  int p;
  for (p = 0; (mask >> p) != 0; p++) {
    const sl_kfifo *q = &m->lq[p];
    if (((mask >> p) & 1) && (best == NULL || ev_less(&q->k[q->head], best))) {
      best = &q->k[q->head];
      m->lminq = p;
    }
  }
  m->lmin = best;
}

/* the earliest head of the lanes (lmin, lminq), after one changed; most of
** the time one lane alone holds keys (inline: take asks after each landing) */
static inline void lane_min(sl_machine *m) {
  if (m->lmask == (1 << m->lminq)) m->lmin = &m->lq[m->lminq].k[m->lq[m->lminq].head];
  else lanes_min(m);
}

/* append k to lane p when it comes after the lane's last key: 1 done, 0 out
** of the lane's order (not taken), -1 out of memory */
static int lane_push(sl_machine *m, int p, const sl_key *k) {
  sl_kfifo *q = &m->lq[p];
  if (q->n > 0 && !ev_less(&q->k[q->head + q->n - 1], k)) return 0;
  if (q->head + q->n == q->cap) {
    if (fifo_room(&q->k, &q->head, &q->n, &q->cap) != SL_OK) return -1;
    if (q->n > 0) {                     /* its keys moved */
      lane_min(m);
      heap_min(m);
    }
  }
  q->k[q->head + q->n++] = *k;
  if (q->n == 1) {
    m->lmask |= 1 << p;
    if (m->lmin == NULL || ev_less(k, m->lmin)) {
      m->lmin = &q->k[q->head];
      m->lminq = p;
      heap_min(m);
    }
  }
  return 1;
}

/* give back what heap hp holds */
void sli_kheap_free(sl_kheap *hp) {
  free(hp->h);
  hp->h = NULL;
  hp->n = hp->cap = 0;
}

/* put k on heap hp (n > 0, or no room yet): k rises from the bottom */
static int heap_rise(sl_machine *m, sl_kheap *hp, const sl_key *k) {
  int32_t i;
  if (hp->n == hp->cap) {
    int32_t cap = hp->cap ? hp->cap * 2 : 256;
    sl_key *nh = sli_realloc(hp->h, (size_t)cap * sizeof(*nh));
    if (nh == NULL) return push_failed(m, k);
    hp->h = nh;
    hp->cap = cap;
    heap_min(m);
  }
  i = hp->n++;
  while (i > 0) {
    int32_t parent = (i - 1) / HEAP_D;
    if (!ev_less(k, &hp->h[parent])) break;
    hp->h[i] = hp->h[parent];
    i = parent;
  }
  hp->h[i] = *k;
  if (i == 0) heap_min(m);
  return SL_OK;
}

/* put k on heap hp; an empty heap with room takes it as its top in place
** (inline: the flows' heap holds none or one key most of the time, and a
** flow's end is pushed and taken once a transfer) */
static inline int heap_push(sl_machine *m, sl_kheap *hp, const sl_key *k) {
  if (hp->n > 0 || hp->cap == 0) return heap_rise(m, hp, k);
  hp->h[hp->n++] = *k;
  heap_min(m);
  return SL_OK;
}

/* a key at the end of an in-order queue that has room */
static inline void fifo_put(sl_key *q, const sl_key *k) { *q = *k; }


/* a key at time t for a full in-order queue, or the heap (heap: 1) */
static SLI_SLOW_PATH int push_slow(sl_machine *m, const sl_key *k, int which) {
  if (which == 0) return fifo_push_slow(m, &m->fifo, &m->fhead, &m->fn, &m->fcap, k);
  if (which == 1) return heap_push(m, &m->heap, k);
  return fifo_push_slow(m, &m->wfifo, &m->wfhead, &m->wfn, &m->wfcap, k);
}

/* schedule a key of kind (not a wake-up) naming ev at time t: keys that come
** in (time, tie) order queue up (most do: one pipe, one signal stream), the
** others go on the heap; wake-ups have their own queue (push_wake: blocks
** yield in clock order). Order is (time, tie) whichever holds a key. Out of
** memory, the record a key names is given back */
static inline int push_made(sl_machine *m, const sl_key *k) {
  if (m->fn == 0 || ev_less(&m->fifo[m->fhead + m->fn - 1], k)) {
    if (m->fhead + m->fn == m->fcap) return push_slow(m, k, 0);
    fifo_put(&m->fifo[m->fhead + m->fn++], k);
    return SL_OK;
  }
  return push_slow(m, k, 1);
}

/* push_made for a new key of kind naming ev at t */
static inline int push_key(sl_machine *m, sl_time t, int kind, int32_t ev) {
  sl_key k;
  k.t = t; k.seq = key_tie(m, kind, ev); k.ev = ev; k.kind = kind;
  return push_made(m, &k);
}

/* schedule wake-up k (push_made for wake-ups) */
static inline int push_wake_key(sl_machine *m, const sl_key *kp) {
  sl_key k = *kp;
  if (m->wfn == 0 || ev_less(&m->wfifo[m->wfhead + m->wfn - 1], &k)) {
    if (m->wfhead + m->wfn == m->wfcap) return push_slow(m, &k, 2);
    fifo_put(&m->wfifo[m->wfhead + m->wfn++], &k);
    return SL_OK;
  }
  return push_made(m, &k);
}

/* schedule block blk's wake-up at time t (push_key for wake-ups) */
static inline int push_wake(sl_machine *m, sl_time t, int32_t blk) {
  sl_key k;
  k.t = t; k.seq = key_tie(m, EV_WAKE, blk); k.ev = blk; k.kind = EV_WAKE;
  return push_wake_key(m, &k);
}

/* schedule event record id, of kind, at time t (given back when out of
** memory), for a caller that knows the kind and the block the record belongs
** to: it saves reading the record, which may have been made long ago (a
** copy's landing) */
int sli_schedule_as(sl_machine *m, sl_time t, int32_t id, int kind, int blk) {
  sl_key k;
  k.t = t; k.seq = block_tie(m, blk); k.ev = id; k.kind = kind;
  return push_made(m, &k);
}

/* schedule the landing (EV_COPY) of record id, a transfer of block blk's
** pipe over path, at t. Each landing is its flow's end plus a fixed latency
** of its path, and flows end in order, so the landings of one path come in
** (time, tie) order nearly always (all but 372 of 697,616 in DeepEP's
** dispatch at EP16 x 1024; with the fifo's other keys, 272,815 went to the
** heap): each path has a lane, and a landing out of its lane's order goes
** where push_made puts it. Keys are unique, so whichever queue holds one,
** they are taken in the same order */
int sli_schedule_land(sl_machine *m, sl_time t, int32_t id, int blk, int path) {
  sl_key k;
  int st;
  k.t = t; k.seq = block_tie(m, blk); k.ev = id; k.kind = EV_COPY;
  if ((st = lane_push(m, path, &k)) == 0) return push_made(m, &k);
  return st > 0 ? SL_OK : push_failed(m, &k);
}

/* schedule event record id at time t, of the kind its record says */
int sli_schedule(sl_machine *m, sl_time t, int32_t id) {
  return push_key(m, t, m->evs[id].kind, id);
}

/* schedule an EV_FLOW: the flows' next end is due at t (a key alone). They
** have a heap of their own: few are pending at once (the live one and those
** it superseded), and on the heap of all keys each would go most of its depth */
int sli_schedule_flow(sl_machine *m, sl_time t) {
  sl_key k;
  k.t = t; k.seq = key_tie(m, EV_FLOW, -1); k.ev = -1; k.kind = EV_FLOW;
  return heap_push(m, &m->fheap, &k);
}

/* schedule an EV_PIPE: block blk's pipe takes its next instruction at t; a
** block that runs ahead makes it on the heap (at the end of the in-order
** queue it would send the keys of the blocks behind it to the heap) */
int sli_schedule_pipe(sl_machine *m, sl_time t, int blk, int pipe) {
  sl_key k;
  k.t = t; k.seq = block_tie(m, blk); k.ev = (int32_t)blk * 4 + pipe; k.kind = EV_PIPE;
  return m->blocks[blk].ahead ? push_slow(m, &k, 1) : push_made(m, &k);
}

/* schedule an EV_PIPE of block blk's pipe at t with a tie of its own (a
** merged or held kick's: pipe.c merge), on the heap */
int sli_schedule_pipe_tie(sl_machine *m, sl_time t, uint64_t tie, int blk, int pipe) {
  sl_key k;
  k.t = t; k.seq = tie; k.ev = (int32_t)blk * 4 + pipe; k.kind = EV_PIPE;
  return push_slow(m, &k, 1);
}

/* the EV_PIPE held back (pipe.c hold) goes on the heap, as it would have
** when made: its time and tie place it */
void sli_hold_flush(sl_machine *m) {
  int32_t h = m->hold - 1;
  m->hold = 0;
  if (sli_schedule_pipe_tie(m, m->ht, m->htie, h / 4, h % 4) != SL_OK) m->oom = 1;
}

/* copy e into a new event at time t */
int sli_push(sl_machine *m, sl_time t, const sl_event *e) {
  int32_t id;
  sl_event *ne = sli_newev(m, &id);
  if (ne == NULL) return SL_ENOMEM;
  *ne = *e;
  ne->next_free = -1;
  return sli_schedule(m, t, id);
}

/* the least of the children c .. c + nc - 1 of a heap node (nc >= 1): four
** as two independent pairs, then their winners */
static inline int32_t least_child(const sl_key *h, int32_t c, int32_t nc) {
  int32_t j, best = c;
  if (nc == HEAP_D) {
    int32_t a = c + ev_less(&h[c + 1], &h[c]);
    int32_t b = c + 2 + ev_less(&h[c + 3], &h[c + 2]);
    return ev_less(&h[b], &h[a]) ? b : a;
  }
  for (j = 1; j < nc; j++)
    if (ev_less(&h[c + j], &h[best])) best = c + j;
  return best;
}

/* remove the earliest key of heap hp (n > 0): the hole at the top goes down
** along the earliest child to the bottom, then the last key, which came from
** the bottom, rises from there (seldom far). Keys are unique (their ties),
** so any heap of them pops in the same order */
static sl_key heap_sift(sl_kheap *hp) {
  sl_key *h = hp->h;
  sl_key top = h[0];
  sl_key last = h[--hp->n];
  int32_t i = 0, n = hp->n, c;
  while ((c = HEAP_D * i + 1) < n) {
    int32_t nc = n - c < HEAP_D ? n - c : HEAP_D;
    c = least_child(h, c, nc);
    h[i] = h[c];
    i = c;
  }
  while (i > 0) {
    int32_t parent = (i - 1) / HEAP_D;
    if (!ev_less(&last, &h[parent])) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = last;
  return top;
}

/* remove the earliest key of heap hp (n > 0); a lone key leaves in place
** (inline, as heap_push: the flows' heap) */
static inline sl_key heap_pop(sl_kheap *hp) {
  if (hp->n > 1) return heap_sift(hp);
  hp->n = 0;
  return hp->h[0];
}

/* the earliest pending key, or NULL (without settling flows) */
static inline const sl_key *peek_raw(const sl_machine *m) {
  const sl_key *f = m->fn > 0 ? &m->fifo[m->fhead] : NULL;
  const sl_key *w = m->wfn > 0 ? &m->wfifo[m->wfhead] : NULL;
  const sl_key *h = m->hmin;
  if (w != NULL && (f == NULL || ev_less(w, f))) f = w;
  if (f == NULL) return h;
  if (h == NULL) return f;
  return ev_less(h, f) ? h : f;
}

/* peek with flows changed: they are settled up to the earliest key first */
static SLI_SLOW_PATH const sl_key *peek_settle(sl_machine *m) {
  const sl_key *k = peek_raw(m);
  m->kseq = 0;                          /* flow ends come first */
  sli_flow_settle_due(m, k ? k->t : INT64_MAX, k ? k->kind == EV_FLOW : 1);
  return peek_raw(m);
}

/* the earliest pending key, or NULL, once the flows' changes due before it
** are settled (settling may schedule the next EV_FLOW); inline, the settle
** out of line: the step loops ask before every key */
static inline const sl_key *peek(sl_machine *m) {
  if (m->hold) sli_hold_flush(m);
  return m->ndirty == 0 ? peek_raw(m) : peek_settle(m);
}

/* inlined into its callers before GCC's analysis of side effects: a function
** of loads and prefetches alone counts as having none, and its calls are
** deleted (the prefetch of take was, until it was inlined so) */
#if defined(__GNUC__)
#define PREFETCH_FN inline __attribute__((always_inline))
#else
#define PREFETCH_FN inline
#endif

/* start loading what the event of key k reads first (its record, its block's
** queues, the flow that ends first): records were made long before and are
** out of cache, and the loads run while the key before it is handled */
static PREFETCH_FN void prefetch_key(const sl_machine *m, const sl_key *k) {
  switch (k->kind) {
    case EV_WAKE: SLI_PREFETCH(&m->blocks[k->ev]); return;
    case EV_PIPE: SLI_PREFETCH(&m->blocks[k->ev / 4].qhead); return;
    case EV_FLOW: if (m->fh.n > 0) SLI_PREFETCH(&m->flows[m->fh.h[0].id]); return;
    case EV_DMAQ: SLI_PREFETCH(&m->blocks[k->ev / SL_NENG].dq); return;
    default:
      SLI_PREFETCH(&m->evs[k->ev]);
      SLI_PREFETCH((const char *)&m->evs[k->ev] + 64);
  }
}

/* remove key k, the earliest pending one (peek_raw's answer); what the key
** after it reads starts loading. Inlined into the step loops (PREFETCH_FN
** forces it): it runs once a key, and the call's frame was a tenth of it */
static PREFETCH_FN sl_key take(sl_machine *m, const sl_key *k) {
  sl_key x;
  const sl_key *next;
  m->nevents++;
  m->nkind[k->kind]++;
  if (m->fn > 0 && k == &m->fifo[m->fhead]) {
    m->fn--;
    x = m->fifo[m->fhead++];
  } else if (m->wfn > 0 && k == &m->wfifo[m->wfhead]) {
    m->wfn--;
    x = m->wfifo[m->wfhead++];
  } else if (k == m->lmin) {           /* a lane's */
    sl_kfifo *q = &m->lq[m->lminq];
    x = q->k[q->head++];
    if (--q->n == 0) {
      q->head = 0;
      m->lmask &= ~(1 << m->lminq);
    }
    lane_min(m);
    heap_min(m);
  } else {
    x = heap_pop(m->fheap.n > 0 && k == m->fheap.h ? &m->fheap : &m->heap);
    heap_min(m);
  }
  m->kt = x.t;
  m->kseq = x.seq;
  if (key_less(m->mt, m->mseq, x.t, x.seq)) { m->mt = x.t; m->mseq = x.seq; }
  if (sli_prefetching(m) && (next = peek_raw(m)) != NULL) prefetch_key(m, next);
  return x;
}

/* the earliest pending key, or NULL (peek_raw, for pipe.c) */
const sl_key *sli_next_key(sl_machine *m) {
  if (m->hold) sli_hold_flush(m);
  return peek_raw(m);
}

/* events handled since the machine was made */
int64_t sl_machine_events(const sl_machine *m) { return m->nevents; }

/* events of kind k handled since the machine was made */
int64_t sl_machine_events_of(const sl_machine *m, int k) {
  return k >= 0 && k < SL_NEVKINDS ? m->nkind[k] : 0;
}

/* time of the earliest pending event (INT64_MAX when none) */
sl_time sli_top(sl_machine *m) {
  const sl_key *k;
  if (m->hold) sli_hold_flush(m);
  k = peek_raw(m);
  return k ? k->t : INT64_MAX;
}

/* drop every pending event */
void sli_clear_events(sl_machine *m) {
  int p;
  m->heap.n = 0;
  m->fheap.n = 0;
  m->hmin = NULL;
  for (p = 0; p < SL_NLANES; p++) m->lq[p].n = m->lq[p].head = 0;
  m->lmin = NULL;
  m->lmask = 0;
  m->fn = m->fhead = 0;
  m->wfn = m->wfhead = 0;
  m->nevs = 0;
  m->fev.n = 0;
  m->hold = 0;
}

/* schedule block blk to resume at t, never before its own clock: it must
** not run ahead of events its clock has passed (a queue slot that freed
** before S got there) */
void sli_wake(sl_machine *m, int blk, sl_time t) {
  sl_block *b = &m->blocks[blk];
  b->state = B_READY;
  if (b->t < t) b->t = t;
  if (m->self == blk + 1 && !m->self_pending) {   /* it waits inline: its key is held */
    sl_key *k = &m->self_key;
    k->t = b->t; k->seq = key_tie(m, EV_WAKE, blk); k->ev = blk; k->kind = EV_WAKE;
    m->self_pending = 1;
    return;
  }
  if (push_wake(m, b->t, blk) != SL_OK) { b->state = B_IDLE; m->oom = 1; }
}

/* wake block blk with its key at (t, tie) and its clock at clock (>= t):
** a wait_flag of S made while ahead resumes where its catch-up would have
** (sl_must_yield's wake-up), with what the wait found then */
void sli_wake_key(sl_machine *m, int blk, sl_time t, uint64_t tie, sl_time clock) {
  sl_block *b = &m->blocks[blk];
  sl_key k;
  b->state = B_READY;
  if (b->t < clock) b->t = clock;
  k.t = t; k.seq = tie; k.ev = blk; k.kind = EV_WAKE;
  if (m->self == blk + 1 && !m->self_pending) {   /* it waits inline: its key is held */
    m->self_key = k;
    m->self_pending = 1;
    return;
  }
  if (push_wake_key(m, &k) != SL_OK) { b->state = B_IDLE; m->oom = 1; }
}

/* 1 when the key being handled, of time now, comes before (t, tie): flow
** ends settled before a key (and those settled for a time before the key's)
** come before any key of their time */
int sli_handling_before(const sl_machine *m, sl_time now, sl_time t, uint64_t tie) {
  if (now != t) return now < t;
  return (now < m->kt ? 0 : m->kseq) < tie;
}

/* handle the event of key k (not a wake-up) */
static inline void apply_key(sl_machine *m, const sl_key *k) {
  if (k->kind == EV_FLOW) sli_flow_due(m, k->t);
  else if (k->kind == EV_PIPE) sli_pipe_key(m, k->ev / 4, k->ev % 4, k->t, k->seq);
  else if (k->kind == EV_DMAQ) sli_dma_due(m, k->ev / SL_NENG, k->ev % SL_NENG, k->t);
  else {
    sli_apply(m, &m->evs[k->ev], k->t);
    ev_release(m, k->ev);
  }
}

/* the virtual-time limit of a launch that starts at t0 (kept in m->tlimit:
** sl_must_yield reads it after every primitive) */
sl_time sli_time_limit(const sl_machine *m, sl_time t0) {
  int64_t us = m->p.time_limit_us, ps;
  if (us <= 0 || us > INT64_MAX / 1000000) return INT64_MAX;   /* none, or past int64 ps */
  ps = us * (int64_t)1000000;
  return ps > INT64_MAX - t0 ? INT64_MAX : t0 + ps;
}

/* the virtual-time limit of the running launch */
static sl_time time_limit(const sl_machine *m) { return m->tlimit; }

/* 1 when the held-back wake-up of the block waiting inline is the key the
** step loop takes next: no key comes before it, once peek has settled the
** flows as it would with the wake-up on top, and it is within the limit */
static int self_next(sl_machine *m, sl_time limit) {
  const sl_key *w = &m->self_key, *o;
  if (m->oom) return 0;
  if (m->hold) sli_hold_flush(m);
  o = peek_raw(m);
  if (o != NULL && ev_less(o, w)) return 0;
  if (m->ndirty > 0) {
    m->kseq = 0;
    sli_flow_settle_due(m, w->t, 0);
    o = peek_raw(m);
    if (o != NULL && ev_less(o, w)) return 0;
  }
  return w->t <= limit;
}

/* the held-back wake-up goes to the queue with the key it was made with:
** the wake-ups' queue when it still comes after that queue's last key (keys
** made after it may be there), else the heap */
static void self_push(sl_machine *m) {
  const sl_key *w = &m->self_key;
  m->self_pending = 0;
  if (m->wfn == 0) m->wfhead = 0;        /* empty: room from its start */
  if ((m->wfn == 0 || ev_less(&m->wfifo[m->wfhead + m->wfn - 1], w)) &&
      m->wfhead + m->wfn < m->wfcap) {
    m->wfifo[m->wfhead + m->wfn++] = *w;
    return;
  }
  if (heap_push(m, &m->heap, w) != SL_OK) {
    m->blocks[m->self_key.ev].state = B_IDLE;
    m->oom = 1;
  }
}

/* a parked running block: handle the events due before anything else runs
** (up to the launch's time limit), in the order sl_step would; 1 when it is
** woken here (no yield needed). Its own wake-up, made by an event handled
** here, is held back from the queue while it is the next key anyway (most
** are: a landing that frees its queue slot wakes it at once) */
static int wait_inline(sl_machine *m, int blk, sl_time limit) {
  sl_block *b = &m->blocks[blk];
  const sl_key *top;
  sl_key k;
  int woke = 0;
  m->self = blk + 1;
  while (!m->oom && (top = peek(m)) != NULL && top->t <= limit) {
    if (b->wahead && b->wtie == 0) {     /* parked ahead by a wait_flag of S */
      int other = top->kind == EV_WAKE && top->ev != blk;
      m->self = other ? 0 : m->self;     /* a wake-up made now goes to the queue */
      if (sli_flag_ahead_step(m, blk, top->t, other)) {
        k.t = b->wat;                    /* it goes on where its catch-up ended */
        woke = 1;
        break;
      }
    }
    if (top->kind == EV_WAKE && top->ev != blk) break;
    k = take(m, top);
    if (k.t > m->now) m->now = k.t;
    if (k.kind == EV_WAKE) { woke = 1; break; }   /* its own wake-up: it goes on */
    apply_key(m, &k);
    if (!m->self_pending) continue;
    if (self_next(m, limit)) {           /* taken as the step loop would */
      k = m->self_key;
      if (key_less(m->mt, m->mseq, k.t, k.seq)) { m->mt = k.t; m->mseq = k.seq; }
      m->self_pending = 0;
      m->nevents++;
      m->nkind[EV_WAKE]++;
      if (k.t > m->now) m->now = k.t;
      woke = 1;
      break;
    }
    self_push(m);
  }
  if (!woke && b->wahead && b->wtie == 0) {   /* the catch-up would have yielded */
    m->self = 0;
    sli_flag_ahead_step(m, blk, b->wat, 1);
  }
  m->self = 0;
  if (!woke) return 0;
  b->state = B_RUN;
  if (b->t < k.t) b->t = k.t;
  b->ahead = b->t > k.t;                 /* nothing of another block came before its key */
  return 1;
}

/* 1 when the running block must yield: it is parked, or another block is due
** before its clock. Copies and signals due before it land here without a
** yield: the order is the one a yield and a wake-up at its clock would give.
** After a primitive that only queued work to the block's own pipes (qonly:
** nbi copies, flags between pipes, vector ops) it runs ahead of another
** block's wake-up instead (ahead): what such a primitive does is stamped with
** the block's own clock and made into keys of its own (sli_enqueue defers a
** pipe's start to an EV_PIPE), and what it reads of its pipes only moves one
** way (a full queue or a flag not yet fired parks it, and it resumes at its
** clock or later). A primitive that reads or writes what other blocks see
** first catches up (sl_block_ahead: the binding yields before it runs) */
static SLI_SLOW_PATH int must_yield(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  const sl_key *top;
  sl_time limit;
  int qonly = b->qonly && m->p.run_ahead && m->p.check == 0;
  b->qonly = 0;
  if (m->oom) return 1;                  /* out of memory: sl_step says so */
  limit = time_limit(m);                 /* no event moves it */
  if (b->state != B_RUN && (!wait_inline(m, blk, limit) || m->oom)) return 1;
  if (b->t > limit) {                    /* S alone ran past the limit: sl_step stops it */
    sli_wake(m, blk, b->t);
    return 1;
  }
  if (qonly && b->ahead) return 0;       /* the same wake-up is due before it */
  while ((top = peek(m)) != NULL && top->t <= b->t) {
    sl_key k;
    if (top->kind == EV_WAKE || top->t > limit) {
      if (qonly && top->kind == EV_WAKE) { b->ahead = 1; return 0; }
      sli_wake(m, blk, b->t);
      return 1;
    }
    k = take(m, top);                    /* top is peek_raw's: nothing ran since */
    if (k.t > m->now) m->now = k.t;
    apply_key(m, &k);
    if (m->oom) return 1;
  }
  b->ahead = 0;
  return 0;
}

/* sl_must_yield (must_yield): most calls come after a primitive that only
** queued to the block's pipes of a block already ahead of another's wake-up,
** and go on at once without the frame of the whole */
int sl_must_yield(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  if (b->qonly && b->ahead && b->state == B_RUN && !m->oom && m->p.run_ahead &&
      m->p.check == 0 && b->t <= time_limit(m)) {
    b->qonly = 0;
    return 0;
  }
  return must_yield(m, blk);
}

/* 1 when block blk ran ahead of a wake-up of another block (sl_must_yield):
** a primitive other than one that only queues to its pipes yields first */
int sl_block_ahead(const sl_machine *m, int blk) { return m->blocks[blk].ahead; }

/* the primitive block blk just ran only queued work to its own pipes */
void sli_queue_only(sl_machine *m, int blk) { m->blocks[blk].qonly = 1; }

/* handle events until a block is to be resumed, or the launch ends; out of
** memory anywhere in the launch (a flow, an event, an instruction) ends it:
** its timing would be wrong */
int sl_step(sl_machine *m, int *blk) {
  sl_time limit = time_limit(m);
  const sl_key *top;
  if (m->oom) return SL_STEP_NOMEM;
  while ((top = peek(m)) != NULL) {
    sl_key k = take(m, top);
    if (k.t > limit) {
      m->now = limit;
      push_made(m, &k);                  /* keep it for the report */
      return SL_STEP_TIMEOUT;
    }
    if (k.t > m->now) m->now = k.t;
    if (k.kind == EV_WAKE) {
      sl_block *b = &m->blocks[k.ev];
      *blk = k.ev;
      m->cur = *blk;
      b->state = B_RUN;
      if (b->t < k.t) b->t = k.t;
      b->ahead = b->t > k.t;             /* sli_wake_key's clock may be past its key */
      return SL_STEP_RESUME;
    }
    apply_key(m, &k);
    if (m->oom) return SL_STEP_NOMEM;
  }
  return m->ndone == m->nb ? SL_STEP_DONE : SL_STEP_DEADLOCK;
}

/* append one trace record when tracing is on */
void sli_trace(sl_machine *m, sl_time start, sl_time end, int pe, int block,
               int kind, int path, int64_t bytes, int ppe, int pblock) {
  sl_trace_rec *r;
  if (m->maxtrace == 0 || m->ntrace >= m->maxtrace) return;
  if (m->ntrace == m->captrace) {
    size_t cap = m->captrace ? m->captrace * 2 : 1024;
    sl_trace_rec *nt;
    if (cap > m->maxtrace) cap = m->maxtrace;
    nt = realloc(m->trace, cap * sizeof(*nt));
    if (nt == NULL) { m->oom = 1; return; }   /* a hole in the trace: the launch fails */
    m->trace = nt;
    m->captrace = cap;
  }
  r = &m->trace[m->ntrace++];
  r->start = start; r->end = end; r->pe = pe; r->block = block;
  r->kind = kind; r->path = path; r->bytes = bytes;
  r->peer_pe = ppe; r->peer_block = pblock;
}

/* start recording up to max records (0 = off) */
void sl_trace_enable(sl_machine *m, int64_t max_records) {
  m->maxtrace = max_records > 0 ? (size_t)max_records : 0;
}

/* number of trace records */
size_t sl_trace_count(const sl_machine *m) { return m->ntrace; }

/* trace record i */
const sl_trace_rec *sl_trace_get(const sl_machine *m, size_t i) {
  return i < m->ntrace ? &m->trace[i] : NULL;
}

/* forget the recorded trace */
void sl_trace_clear(sl_machine *m) { m->ntrace = 0; }

/* name of a comparison */
const char *sl_cmp_name(int cmp) {
  static const char *const names[] = {
    "CMP_EQ", "CMP_NE", "CMP_GT", "CMP_GE", "CMP_LT", "CMP_LE"
  };
  return (cmp >= 0 && cmp < SL_NCMP) ? names[cmp] : "CMP_?";
}

/* what a parked block waits for */
int sli_wait_what(const sl_machine *m, int blk, char *out, size_t size) {
  const sl_block *b = &m->blocks[blk];
  switch (b->state) {
    case B_SIGNAL: {
      const sl_buf *bf = &m->bufs[b->w.buf];
      if (b->wset) return sli_ws_what(m, b, out, size);
      const uint8_t *p = bf->data + bf->stride * b->w.pe + b->w.off;
      int64_t cur = sl_get_int((sl_dtype)bf->dtype, p, 0);
      return snprintf(out, size,
          "%s(%s[%lld] on PE %d, %s, %lld): current value %lld",
          b->wperiod > 0 ? "wait_signal_value" : "signal_wait_until", bf->name, (long long)(b->w.off / (int64_t)sl_dtype_size(bf->dtype)),
          (int)b->w.pe, sl_cmp_name(b->wcmp), (long long)b->wval,
          (long long)cur);
    }
    case B_BARRIER:
      return snprintf(out, size,
          "barrier_all (%d of %d blocks arrived)", (int)m->bar_count, m->nb);
    case B_SYNC:
      return snprintf(out, size,
          "sync_all (%d of %d blocks of PE %d arrived)",
          (int)m->sync_count[b->pe], m->block_dim, (int)b->pe);
    case B_READY:
      return snprintf(out, size, "ready, beyond the time limit");
    case B_AMO:
      return snprintf(out, size, "the reply of its fetching atomic");
    case B_TEAM:
      return sli_team_what(m, b, out, size);
    case B_FLAG:
      return snprintf(out, size, "wait_flag(%s, %d): its pipe has not reached the "
                      "set_flag yet (%s)", sl_event_name(b->wflag / SL_NEVENT_IDS),
                      (int)(b->wflag % SL_NEVENT_IDS), sli_queues_text(m, b).s);
    case B_DRAIN: case B_ENDING:
      return snprintf(out, size, "%s: its pipes to drain (%s)", sli_act_name(b),
                      sli_queues_text(m, b).s);
    case B_QUEUE:
      return snprintf(out, size, "a free slot in a pipe queue over queue_depth %d (%s)",
                      m->p.queue_depth, sli_queues_text(m, b).s);
    default:
      return snprintf(out, size, "not finished");
  }
}

/* one line about what block blk waits for */
static int wait_line(const sl_machine *m, int blk, char *out, size_t size) {
  const sl_block *b = &m->blocks[blk];
  int n = snprintf(out, size, "  PE %d block %d (at %.3f us): ", (int)b->pe,
                   (int)b->b, (double)(b->t - m->t0) / SL_PS_PER_US);
  if (n < 0 || (size_t)n >= size) return n;
  return n + sli_wait_what(m, blk, out + n, size - (size_t)n);
}

/* describe every unfinished block; returns the number of such blocks */
int sl_describe_waits(const sl_machine *m, char *out, size_t size) {
  int i, count = 0, shown = 0;
  size_t used = 0;
  if (size > 0) out[0] = '\0';
  for (i = 0; i < m->nb; i++) {
    char line[256];
    if (m->blocks[i].state == B_DONE) continue;
    count++;
    if (wait_line(m, i, line, sizeof(line)) < 0) continue;
    if (used + strlen(line) + 64 < size) {
      used += (size_t)snprintf(out + used, size - used, "%s\n", line);
      shown++;
    }
  }
  if (shown < count && used < size)
    snprintf(out + used, size - used,
             "  (%d more blocks waiting; listing cut at %zu bytes)\n",
             count - shown, size);
  return count;
}
