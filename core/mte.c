/*
** mte.c -- data movement and local compute: the timing of MTE transfers
** (pipes, HBM, links, latency), data_copy, MTE put/get through UB, vector
** ops, scalar UB access, and the landing of copies at their completion.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* latency of a path */
sl_time sli_alpha(const sl_machine *m, int path) { return m->ps.alpha[path]; }

/* the landing event of a copy (sli_copy_event); SLI_HOT_INLINE, as transfer
** below: a small put makes two transfers, and the calls' nine arguments each
** cost more than the stores of copy_event or transfer's own work (about 145
** instructions a put at 1x1) */
static SLI_HOT_INLINE int copy_event(sl_machine *m, int blk, int pipe, const sl_loc *dst,
                                  const sl_loc *src, int64_t bytes, int op, int64_t whole,
                                  int32_t *id) {
  sl_event *e = sli_event_new(m, EV_COPY, blk, id);
  if (e == NULL) return sli_err(m, SL_ENOMEM, 0, "not enough memory for an event");
  e->op = op;
  e->n = bytes;
  e->whole = whole;
  e->pipe = pipe;
  sli_addr(dst, &e->dst);
  sli_addr(src, &e->src);
  return SL_OK;
}

/* the landing event of a copy, allocated now and scheduled by its pipe (or
** its DMA engine); |whole| bytes are the transfer it is part of, a put/get
** chunk's staging when whole < 0 */
int sli_copy_event(sl_machine *m, int blk, int pipe, const sl_loc *dst,
                   const sl_loc *src, int64_t bytes, int op, int64_t whole,
                   int32_t *id) {
  return copy_event(m, blk, pipe, dst, src, bytes, op, whole, id);
}

/* queue one transfer of bytes on an MTE pipe of block blk between its UB
** and GM of gm_pe: src lands on dst when it has streamed through; it is
** part of a transfer of |whole| bytes, a put/get chunk's staging when
** whole < 0 */
static SLI_HOT_INLINE int transfer(sl_machine *m, int blk, int pipe, int gm_pe,
                               const sl_loc *dst, const sl_loc *src, int64_t bytes, int op,
                               int64_t whole) {
  sl_block *b = &m->blocks[blk];
  sl_ins *o;
  int32_t ev, id;
  int st;
  if (op != SL_OP_NONE && dst->dtype == SL_FP64)
    return sli_err(m, SL_EARG, 1, "fp64: the MTE atomic unit has no double accumulate "
                   "(set_atomic_none before this copy)");
  st = copy_event(m, blk, pipe, dst, src, bytes, op, whole, &ev);
  if (st != SL_OK) return st;
  if ((id = sli_op_new(m, OP_XFER, &o)) < 0)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for an instruction");
  o->ev = ev;
  o->gm_pe = gm_pe;
  o->path = sl_path(m, b->pe, gm_pe);
  o->bytes = bytes;
  m->path_bytes[o->path] += bytes;
  return sli_enqueue(m, blk, pipe, id);
}

/* queue set_flag / wait_flag of event ev (id) on pipe for a chained copy */
static int chain_flag(sl_machine *m, sl_block *b, int ev, int id) {
  int st = sli_flag_set(m, b, ev, id);
  return st == SL_OK ? sli_flag_wait(m, b, ev, id) : st;
}

/* racecheck: an MTE copy issued from S, reading src and writing dst */
static void race_copy_any(sl_machine *m, int blk, int pipe, const sl_loc *dst,
                          const sl_loc *src, int64_t bytes, int op) {
  sli_race_issue(m, blk, pipe);
  sli_race_access(m, blk, pipe, src, bytes, 0);
  sli_race_access(m, blk, pipe, dst, bytes, op != SL_OP_NONE ? 2 : 1);
}

/* race_copy_any when racecheck is on (the test inline: every copy asks) */
static inline void race_copy(sl_machine *m, int blk, int pipe, const sl_loc *dst,
                             const sl_loc *src, int64_t bytes, int op) {
  if (m->p.check & SL_CHECK_RACE) race_copy_any(m, blk, pipe, dst, src, bytes, op);
}

/* a data_copy GM -> UB from this size on lands as a record (see below) */
#define SL_STAGE_BYTES 4096

/* transfers from this size on land with streaming stores: they do not fit
** in a core's cache anyway, and streaming skips the read for ownership */
#define SL_STREAM_BYTES (4 * 1024 * 1024)

/* a copy from this size on compares each block before it writes it */
#define SL_SAME_BYTES (64 * 1024)
#define SL_SAME_BLOCK 4096

/* copy n bytes from s to d (apart), leaving the leading blocks that hold
** the bytes already unwritten: a write needs their cache lines read
** anyway, and a line left clean is never written back (the iterations of a
** benchmark land the same bytes again and again); from the first block
** that differs on, one plain copy, so new bytes cost one block's compare;
** 1 when it wrote */
static int same_copy(uint8_t *d, const uint8_t *s, size_t n) {
  size_t i, k;
  for (i = 0; i < n; i += k) {
    k = n - i < SL_SAME_BLOCK ? n - i : SL_SAME_BLOCK;
    if (memcmp(d + i, s + i, k) != 0) {
      memcpy(d + i, s + i, n - i);
      return 1;
    }
  }
  return 0;
}

/* copy n bytes into GM, part of a transfer of whole bytes: a large one
** with streaming stores, as a DMA engine writes memory past the cache; a
** small one stays in the cache, where the kernel will read it, and from
** SL_SAME_BYTES on skips the blocks that hold its bytes already; 1 when it
** wrote */
static int gm_copy(uint8_t *d, const uint8_t *s, size_t n, int64_t whole) {
#if defined(__SSE2__)
  if (whole >= SL_STREAM_BYTES && n >= 65536 && (d + n <= s || s + n <= d)) {
    size_t head = (16 - ((uintptr_t)d & 15)) & 15, i;
    memcpy(d, s, head);
    d += head; s += head; n -= head;
    for (i = 0; i + 64 <= n; i += 64) {
      __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
      __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
      __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
      __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
      _mm_stream_si128((__m128i *)(void *)(d + i), a);
      _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
      _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
      _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
    }
    _mm_sfence();
    memcpy(d + i, s + i, n - i);
    return 1;
  }
#else
  (void)whole;
#endif
  if (n >= SL_SAME_BYTES && (d + n <= s || s + n <= d)) return same_copy(d, s, n);
  memmove(d, s, n);
  return 1;
}

/*
** Known copies. A copy of SL_SAME_BYTES or more from GM to GM (a staged
** chunk's UB -> GM copy reads its GM source) that left its destination
** holding its source's bytes is remembered with both buffers' write
** generations (sl_buf.gen, moved by every write of a buffer's bytes:
** sli_gm_written). The same copy again while neither buffer moved lands
** nothing: its bytes are there, which same_copy's compare would have found
** at the cost of reading both. A table of SL_SAME_SLOTS copies, one a slot.
*/
#define SL_SAME_SLOTS 64

typedef struct sl_same {
  sl_addr dst, src;
  int64_t n;
  uint64_t dgen, sgen;      /* the buffers' generations when it landed */
} sl_same;

/* the slot of the copy of n bytes src -> dst (NULL when out of memory) */
static sl_same *same_slot(sl_machine *m, const sl_addr *dst, const sl_addr *src, int64_t n) {
  uint64_t h = 1469598103934665603u;
  const int64_t f[] = { dst->buf, dst->pe, dst->off, src->buf, src->pe, src->off, n };
  size_t i;
  if (m->same == NULL && (m->same = calloc(SL_SAME_SLOTS, sizeof(*m->same))) == NULL)
    return NULL;
  for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) h = (h ^ (uint64_t)f[i]) * 1099511628211u;
  return &m->same[(h >> 32) % SL_SAME_SLOTS];
}

/* 1 when z is the copy of n bytes src -> dst and neither buffer was written since */
static int same_known(const sl_machine *m, const sl_same *z, const sl_addr *dst,
                      const sl_addr *src, int64_t n) {
  return z->n == n && z->dst.buf == dst->buf && z->dst.pe == dst->pe &&
         z->dst.off == dst->off && z->src.buf == src->buf && z->src.pe == src->pe &&
         z->src.off == src->off && z->dgen == m->bufs[dst->buf].gen &&
         z->sgen == m->bufs[src->buf].gen;
}

/* land a plain copy of e's n bytes s -> d into GM; from: the GM bytes s
** are (buf -1: UB bytes) */
static void land_gm(sl_machine *m, const sl_event *e, uint8_t *d, const uint8_t *s,
                    const sl_addr *from) {
  int64_t whole = e->whole < 0 ? -e->whole : e->whole;
  sl_same *z = NULL;
  if (e->n >= SL_SAME_BYTES && whole < SL_STREAM_BYTES && from->buf >= 0 &&
      (d + e->n <= s || s + e->n <= d)) {
    z = same_slot(m, &e->dst, from, e->n);
    if (z != NULL && same_known(m, z, &e->dst, from, e->n)) return;  /* there already */
  }
  if (gm_copy(d, s, (size_t)e->n, whole)) sli_gm_written(m, &e->dst);
  if (z != NULL) {
    z->dst = e->dst;
    z->src = *from;
    z->n = e->n;
    z->dgen = m->bufs[e->dst.buf].gen;
    z->sgen = m->bufs[from->buf].gen;
  }
}

/*
** Staged chunks that move no bytes (issue 11). An MTE put/get stages each
** chunk GM -> UB -> GM; only the last chunk's UB content can ever be seen.
** So the GM -> UB copy lands as a record (sl_lazy: the UB range holds the
** GM range's bytes as they were), and the UB -> GM copy of those bytes
** reads the GM source itself: each byte moves once. The record turns into
** real UB bytes first whenever anything else touches the UB range or
** writes the GM range (sli_lazy_touch), so everything lands as before.
*/

/* 1 when [a, a+an) and [b, b+bn) are bytes of the same memory */
static int overlaps(const sl_addr *a, int64_t an, const sl_addr *b, int64_t bn) {
  return a->buf == b->buf && a->pe == b->pe && (a->buf >= 0 || a->core == b->core) &&
         a->off < b->off + bn && b->off < a->off + an;
}

/* the block whose UB a is */
static sl_block *ub_block(sl_machine *m, const sl_addr *a) {
  return &m->blocks[a->pe * m->block_dim + a->core];
}

/* room for one more entry in the record list of PE pe; 0 when out of memory
** (or pe is no PE: that record is not made) */
static int lzp_room(sl_machine *m, int pe) {
  sl_lzlist *l;
  if (pe < 0 || pe >= m->p.n_pes) return 0;
  if (m->lzp == NULL && (m->lzp = calloc((size_t)m->p.n_pes, sizeof(*m->lzp))) == NULL)
    return 0;
  l = &m->lzp[pe];
  if (l->n == l->cap) {
    int32_t cap = l->cap ? l->cap * 2 : 16;
    int32_t *ne = realloc(l->e, (size_t)cap * sizeof(*ne));
    if (ne == NULL) return 0;
    l->e = ne;
    l->cap = cap;
  }
  return 1;
}

/* record i of block blk is listed under its GM range's PE */
static void lzp_add(sl_machine *m, int32_t blk, int i) {
  sl_lazy *z = &m->blocks[blk].lz[i];
  sl_lzlist *l = &m->lzp[z->gm.pe];
  z->pos = l->n;
  l->e[l->n++] = blk * SL_NLAZY + i;
}

/* record z leaves its PE's list (the last entry takes its place) */
static void lzp_del(sl_machine *m, const sl_lazy *z) {
  sl_lzlist *l = &m->lzp[z->gm.pe];
  int32_t last = l->e[--l->n];
  if (z->pos < l->n) {
    l->e[z->pos] = last;
    m->blocks[last / SL_NLAZY].lz[last % SL_NLAZY].pos = z->pos;
  }
}

/* drop record i of block b (moving its bytes first when keep) */
static void lazy_drop(sl_machine *m, sl_block *b, int i, int keep) {
  sl_lazy *z = &b->lz[i];
  if (keep) memmove(sli_ptr(m, &z->ub), sli_ptr(m, &z->gm), (size_t)z->n);
  m->bufs[z->gm.buf].lazy_src--;
  lzp_del(m, z);
  b->lz[i] = b->lz[--b->nlz];
  if (i < b->nlz)                        /* the last record moved to i */
    m->lzp[b->lz[i].gm.pe].e[b->lz[i].pos] = (int32_t)(b - m->blocks) * SL_NLAZY + i;
  if (b->nlz == 0) {                     /* off the machine's list */
    int32_t last = m->lzb[--m->nlzb];
    m->blocks[last].lzpos = b->lzpos;
    m->lzb[b->lzpos] = last;
  }
}

/* the UB range a (bytes) is touched: records overlapping it move their
** bytes; with drop (the range is rewritten), a record inside it is dropped
** and one that sticks out at one end keeps only that end */
static void lazy_ub(sl_machine *m, const sl_addr *a, int64_t bytes, int drop) {
  sl_block *b = ub_block(m, a);
  int i = b->nlz;
  while (i-- > 0) {
    sl_lazy *z = &b->lz[i];
    int64_t lo = a->off, hi = a->off + bytes, zlo = z->ub.off, zhi = z->ub.off + z->n;
    if (!overlaps(&z->ub, z->n, a, bytes)) continue;
    if (drop && zlo >= lo && zhi <= hi) lazy_drop(m, b, i, 0);
    else if (drop && zlo >= lo) {        /* its tail stays */
      z->ub.off += hi - zlo;
      z->gm.off += hi - zlo;
      z->n = zhi - hi;
    }
    else if (drop && zhi <= hi) z->n = lo - zlo;   /* its head stays */
    else lazy_drop(m, b, i, 1);
  }
}

/* sli_lazy_touch when some block holds records */
void sli_lazy_touch_any(sl_machine *m, const sl_addr *a, int64_t bytes) {
  int32_t j;
  if (a->buf < 0) { lazy_ub(m, a, bytes, 0); return; }
  if (m->bufs[a->buf].lazy_src == 0) return;
  if (a->pe < 0 || a->pe >= m->p.n_pes) return;     /* no record is there */
  for (j = m->lzp[a->pe].n; j-- > 0;) {  /* a drop moves a visited entry to j */
    int32_t v = m->lzp[a->pe].e[j];
    sl_block *b = &m->blocks[v / SL_NLAZY];
    int i = v % SL_NLAZY;
    if (overlaps(&b->lz[i].gm, b->lz[i].n, a, bytes)) lazy_drop(m, b, i, 1);
  }
}

/* a staged chunk lands on exactly the UB range of the block's last record,
** from GM of the same PE (a put that stages through one UB buffer, again and
** again): that record becomes the chunk's in place. The records being
** disjoint, lazy_add would drop it alone (bytes not moved) and append the new
** one at the same index; only its entry in the PE's list keeps its place,
** an order nothing depends on. 1 when it did */
static int lazy_again(sl_machine *m, sl_block *b, const sl_event *e) {
  sl_lazy *z;
  if (b->nlz == 0) return 0;
  z = &b->lz[b->nlz - 1];
  if (z->ub.off != e->dst.off || z->n != e->n || e->n <= 0 || z->gm.pe != e->src.pe)
    return 0;
  m->bufs[z->gm.buf].lazy_src--;
  z->ub = e->dst;
  z->gm = e->src;
  m->bufs[e->src.buf].lazy_src++;
  return 1;
}

/* record a staged chunk landing on the UB at e->dst; 0 when it must copy */
static int lazy_add(sl_machine *m, const sl_event *e) {
  sl_block *b = ub_block(m, &e->dst);
  sl_lazy *z;
  if (lazy_again(m, b, e)) return 1;
  lazy_ub(m, &e->dst, e->n, 1);
  if (b->nlz == SL_NLAZY) lazy_drop(m, b, 0, 1);
  if (!lzp_room(m, e->src.pe)) return 0;  /* no record: the copy moves its bytes */
  if (b->nlz == 0) {
    if (m->nlzb == m->caplzb) {
      int32_t cap = m->caplzb ? m->caplzb * 2 : 64;
      int32_t *nl = sli_realloc(m->lzb, (size_t)cap * sizeof(*nl));
      if (nl == NULL) return 0;           /* no record: the copy moves its bytes */
      m->lzb = nl;
      m->caplzb = cap;
    }
    b->lzpos = m->nlzb;
    m->lzb[m->nlzb++] = (int32_t)(b - m->blocks);
  }
  z = &b->lz[b->nlz++];
  z->ub = e->dst;
  z->gm = e->src;
  z->n = e->n;
  lzp_add(m, (int32_t)(b - m->blocks), b->nlz - 1);
  m->bufs[e->src.buf].lazy_src++;
  return 1;
}

/* the bytes a copy from the UB at a reads: the GM source of the record
** holding them (*from: its address), or the UB (records overlapping it
** partly move their bytes; from->buf -1) */
static const uint8_t *lazy_src(sl_machine *m, const sl_addr *a, int64_t bytes,
                               sl_addr *from) {
  sl_block *b;
  int i;
  from->buf = -1;
  if (m->nlzb == 0) return sli_ptr(m, a);
  b = ub_block(m, a);
  for (i = 0; i < b->nlz; i++) {
    const sl_lazy *z = &b->lz[i];
    if (z->ub.off <= a->off && a->off + bytes <= z->ub.off + z->n) {
      *from = z->gm;
      from->off += a->off - z->ub.off;
      return sli_ptr(m, from);
    }
  }
  lazy_ub(m, a, bytes, 0);
  return sli_ptr(m, a);
}

/* forget every record (a launch begins or was abandoned): no UB of it can
** be read any more */
void sli_lazy_reset(sl_machine *m) {
  int i;
  if (m->nlzb == 0) return;
  for (i = 0; i < m->nbufs; i++) m->bufs[i].lazy_src = 0;
  for (i = 0; i < m->p.n_pes; i++) m->lzp[i].n = 0;
  m->nlzb = 0;
}

/* free the per-PE record lists and the known copies (the machine goes) */
void sli_lazy_free(sl_machine *m) {
  int i;
  free(m->same);
  m->same = NULL;
  if (m->lzp == NULL) return;
  for (i = 0; i < m->p.n_pes; i++) free(m->lzp[i].e);
  free(m->lzp);
  m->lzp = NULL;
}

/* the runaway guard: a copy that lands is progress unless it repeats one of
** its block's last accesses (sli_guard_access) */
static void guard_copy(sl_machine *m, const sl_event *e) {
  const int64_t f[] = { e->src.buf, e->src.pe, e->src.core, e->src.off,
                        e->dst.buf, e->dst.pe, e->dst.core, e->dst.off, e->n };
  sli_guard_access(m, e->blk, f, sizeof(f) / sizeof(f[0]));
}

/* a copy lands: the one place where a transfer's bytes move */
static void land_copy(sl_machine *m, const sl_event *e, int32_t id, sl_time t) {
  const uint8_t *s;
  uint8_t *d;
  sl_addr from;
  guard_copy(m, e);
  if (m->p.check & SL_CHECK_INIT) {
    sli_init_read(m, &e->src, e->n, e->blk, e->pipe, e->site);
    sli_init_write(m, &e->dst, e->n);
  }
  if (e->whole < 0 && sli_ptr(m, &e->dst) != NULL && sli_ptr(m, &e->src) != NULL &&
      lazy_add(m, e)) {                   /* the bytes move with the UB -> GM copy */
    sli_landed(m, e->blk, e->pipe, 0, id, t);
    return;
  }
  sli_lazy_touch(m, &e->dst, e->n);
  d = sli_ptr(m, &e->dst);
  from = e->src;
  s = e->src.buf < 0 ? lazy_src(m, &e->src, e->n, &from) : sli_ptr(m, &e->src);
  if (d == NULL) {}                     /* timing-only: unbacked, nothing lands */
  else if (e->op == SL_OP_NONE && e->dst.buf >= 0 && s != NULL) land_gm(m, e, d, s, &from);
  else {
    if (s == NULL) memset(d, 0, (size_t)e->n);   /* unbacked reads as zeros */
    else if (e->op == SL_OP_NONE) memmove(d, s, (size_t)e->n);
    else sl_reduce((sl_dtype)e->dst.dtype, (sl_op)e->op, d, s,
                   (size_t)e->n / sl_dtype_size((sl_dtype)e->dst.dtype));
    sli_gm_written(m, &e->dst);
  }
  if (e->dst.buf >= 0 && m->bufs[e->dst.buf].waiters > 0)
    sli_notify(m, &e->dst, e->n, t, e->blk);
  if (m->race) sli_race_copy_read(m, e->blk, e->pipe, &e->src, e->n);
  if (e->pipe == SL_PIPE_DMA) sli_dma_landed(m, e->blk, e->vop, t);
  else sli_landed(m, e->blk, e->pipe, 0, id, t);
}

/* a vector op lands: the UB it reads and writes holds its bytes */
static void vec_touch(sl_machine *m, const sl_event *e) {
  int64_t es = (int64_t)sl_dtype_size((sl_dtype)e->src.dtype);
  sli_lazy_touch(m, &e->src, e->n * es);
  if (SL_VEC_IS_BINARY(e->vop)) sli_lazy_touch(m, &e->src2, e->n * es);
  sli_lazy_touch(m, &e->dst, e->n * (int64_t)sl_dtype_size((sl_dtype)e->dst.dtype));
}

/* apply a landed event (copy, vector op, DMA: a copy of it, as waking a waiter
** may grow the pool) */
void sli_apply(sl_machine *m, sl_event *ev, sl_time t) {
  sl_event copy, *e = &copy;
  int32_t id = (int32_t)(ev - m->evs);
  uint8_t *d;
  if (ev->kind == EV_SIGNAL) {          /* a signal, p or atomic (amo.c): makes no event */
    sli_elem_land(m, ev, t);
    return;
  }
  if (ev->kind == EV_COPY && m->p.check == 0 && m->race == NULL) {
    land_copy(m, ev, id, t);            /* unchecked, it makes an event only at its */
    return;                             /* last step (sli_landed's kick) */
  }
  copy = *ev;                           /* the others may grow m->evs */
  if (e->kind == EV_DMA) { sli_dma_start(m, e, t); return; }
  d = sli_ptr(m, &e->dst);
  switch (e->kind) {
    case EV_COPY:
      land_copy(m, e, id, t);
      break;
    case EV_VEC: {
      const uint8_t *a;
      sl_dtype dt = (sl_dtype)e->dst.dtype;
      if (m->nlzb > 0) vec_touch(m, e);
      a = sli_ptr(m, &e->src);
      if (m->p.check & SL_CHECK_INIT) {
        int64_t es = (int64_t)sl_dtype_size((sl_dtype)e->src.dtype);
        if (e->vop != SL_VEC_DUP)
          sli_init_read(m, &e->src, e->n * es, e->blk, SL_PIPE_V, e->site);
        if (SL_VEC_IS_BINARY(e->vop)) sli_init_read(m, &e->src2, e->n * es, e->blk, SL_PIPE_V, e->site);
        sli_init_write(m, &e->dst, (e->vop == SL_VEC_RMAX ? 1 : e->n) *
                       (int64_t)sl_dtype_size(dt));
      }
      if (d == NULL) {}                 /* timing-only: unbacked, nothing lands */
      else if ((a == NULL && e->vop != SL_VEC_DUP) ||
               (SL_VEC_IS_BINARY(e->vop) && sli_ptr(m, &e->src2) == NULL))
        memset(d, 0, (size_t)(e->vop == SL_VEC_RMAX ? 1 : e->n) * sl_dtype_size(dt));
      else if (e->vop == SL_VEC_MULS) sl_muls(dt, d, a, e->s, (size_t)e->n);
      else if (e->vop == SL_VEC_CAST) sl_cast(dt, d, (sl_dtype)e->src.dtype, a, (size_t)e->n);
      else if (e->vop == SL_VEC_CAST_RINT)
        sl_cast_rint(dt, d, (sl_dtype)e->src.dtype, a, (size_t)e->n);
      else if (e->vop == SL_VEC_ABS) sl_abs(dt, d, a, (size_t)e->n);
      else if (e->vop == SL_VEC_RMAX) sl_reduce_max(dt, d, a, (size_t)e->n);
      else if (e->vop == SL_VEC_DUP)
        sl_fill_pattern(dt, d, (size_t)e->n, SL_FILL_CONST, e->s, 0, 0, 0);
      else if (e->vop == SL_VEC_COPY) memmove(d, a, (size_t)e->n * sl_dtype_size(dt));
      else sl_binary(dt, (sl_op)e->vop, d, a, sli_ptr(m, &e->src2), (size_t)e->n);
      if (d != NULL) sli_gm_written(m, &e->dst);   /* (a vector op writes UB) */
      sli_progress(m);
      sli_landed(m, e->blk, SL_PIPE_V, 1, id, t);
      break;
    }
    default:
      break;
  }
}

/* the UB of the block's core: a new 32-byte aligned allocation */
int sl_ub_alloc(sl_machine *m, int blk, int dtype, int64_t n, int flags, sl_loc *out) {
  sl_block *b = &m->blocks[blk];
  int64_t bytes, top;
  if (dtype < 0 || dtype >= SL_NDTYPES) return sli_err(m, SL_EARG, 1, "unknown dtype");
  if (n <= 0) return sli_err(m, SL_EARG, 2, "size must be positive");
  bytes = sl_nbytes(n, (int64_t)sl_dtype_size((sl_dtype)dtype));
  top = bytes > m->p.ub_bytes ? INT64_MAX : b->ub_top + ((bytes + 31) & ~(int64_t)31);
  if (top > m->p.ub_bytes)
    return sli_err(m, SL_EARG, 2,
        "UB overflow: %lld bytes asked, %lld of %lld bytes used, %lld free",
        (long long)bytes, (long long)b->ub_top, (long long)m->p.ub_bytes,
        (long long)(m->p.ub_bytes - b->ub_top));
  if ((m->ubmap ? (flags & SL_ALLOC_BACKED) ? sli_ub_back(m, b->pe, b->b, b->ub_top, bytes)
       : SL_OK : sli_ub_reserve(m, b->pe, b->b, top)) != SL_OK)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for UB");
  out->buf = -1;
  out->pe = b->pe;
  out->core = b->b;
  out->dtype = dtype;
  out->base = b->ub_top;
  out->off = 0;
  out->cap = bytes;
  b->ub_top = top;
  if (m->ubinit) {                      /* a new allocation holds nothing yet */
    sl_addr a;
    sli_addr(out, &a);
    sli_init_clear(m, &a, bytes);
  }
  b->t += m->ps.issue;
  sli_queue_only(m, blk);               /* its own UB's top alone: it may run ahead */
  return SL_OK;
}

/* scratch UB for putmem/getmem/put_signal, viewed as dtype */
int sl_ub_scratch(sl_machine *m, int blk, int dtype, sl_loc *out, int *id) {
  sl_block *b = &m->blocks[blk];
  int64_t esz = (int64_t)sl_dtype_size((sl_dtype)dtype);
  if (b->scratch < 0) {
    sl_loc l;
    /* backed in a timing-only run: atomic_add's operand goes through it */
    int st = sl_ub_alloc(m, blk, SL_UINT8, SL_SCRATCH_BYTES, SL_ALLOC_BACKED, &l);
    if (st != SL_OK) return st;
    b->scratch = l.base;
    b->scratch_bytes = SL_SCRATCH_BYTES;
    b->scratch_id = SL_SCRATCH_ID;
  }
  out->buf = -1;
  out->pe = b->pe;
  out->core = b->b;
  out->dtype = dtype;
  out->base = b->scratch;
  out->off = 0;
  out->cap = b->scratch_bytes / esz * esz;
  *id = b->scratch_id;
  if (out->cap == 0)
    return sli_err(m, SL_EARG, 1, "the staging UB (set_mte_config) holds %lld bytes, "
                   "less than one %s", (long long)b->scratch_bytes,
                   sl_dtype_name((sl_dtype)dtype));
  return SL_OK;
}

/* aclshmemx_set_mte_config: the staging UB of the block's staged calls
** (putmem, getmem, put, get, their _nbi forms, put_signal) for the rest of
** the launch: ub_bytes of the UB tensor ub, and the event id they chain with */
int sl_set_mte_config(sl_machine *m, int blk, const sl_loc *ub, int64_t ub_bytes, int id) {
  sl_block *b = &m->blocks[blk];
  int st;
  if ((st = sli_own_ub(m, b, ub, 1)) != SL_OK) return st;
  if (ub_bytes <= 0 || ub->off < 0 || ub_bytes > ub->cap - ub->off)
    return sli_err(m, SL_EARG, 2, "ub_size must be in 1..%lld (the bytes of the UB tensor)",
                   (long long)(ub->cap - ub->off));
  if (id < 0 || id >= SL_NEVENT_IDS)
    return sli_err(m, SL_EARG, 3, "event id must be in 0..7, got %d", id);
  b->scratch = ub->base + ub->off;
  b->scratch_bytes = ub_bytes;
  b->scratch_id = id;
  b->t += m->ps.issue;
  return SL_OK;
}

/* the error of a UB location that is not this block's own (sli_own_ub) */
int sli_own_ub_err(sl_machine *m, const sl_block *b, const sl_loc *l, int arg) {
  if (l->buf >= 0) return sli_err(m, SL_EARG, arg, "UB tensor expected, got GM");
  if (l->pe != b->pe || l->core != b->b)
    return sli_err(m, SL_EARG, arg,
        "UB of PE %d core %d is not reachable from PE %d block %d",
        (int)l->pe, (int)l->core, (int)b->pe, (int)b->b);
  return SL_OK;
}

/* DataCopy / DataCopyPad between GM and UB */
int sl_data_copy(sl_machine *m, int blk, const sl_loc *dst, const sl_loc *src,
                 int64_t elems, int pad) {
  sl_block *b = &m->blocks[blk];
  const char *fn = pad ? "data_copy_pad" : "data_copy";
  int64_t esz, bytes;
  int st, pipe, gm_pe, op = SL_OP_NONE;
  if (elems <= 0) return sli_err(m, SL_EARG, 3, "count must be positive");
  if ((dst->buf < 0) == (src->buf < 0))
    return sli_err(m, SL_EARG, 1, dst->buf < 0
        ? "UB to UB copies are not supported by %s"
        : "GM to GM copies stage through UB (%s GM->UB, then UB->GM)", fn);
  if (dst->dtype != src->dtype)
    return sli_err(m, SL_EARG, 2, "dtype mismatch: %s to %s",
                   sl_dtype_name((sl_dtype)src->dtype),
                   sl_dtype_name((sl_dtype)dst->dtype));
  esz = (int64_t)sl_dtype_size((sl_dtype)dst->dtype);
  bytes = sl_nbytes(elems, esz);
  if (!pad && bytes % 32 != 0 && bytes != INT64_MAX)
    return sli_err(m, SL_EARG, 3,
        "data_copy moves whole 32-byte blocks: %lld %s are %lld bytes "
        "(hardware would round down to %lld); use data_copy_pad",
        (long long)elems, sl_dtype_name((sl_dtype)dst->dtype),
        (long long)bytes, (long long)(bytes / 32 * 32));
  if (src->buf < 0) {                   /* UB -> GM on MTE3 */
    if ((st = sli_own_ub(m, b, src, 2)) != SL_OK) return st;
    pipe = SL_PIPE_MTE3;
    gm_pe = dst->pe;
    op = b->atomic;
  } else {                              /* GM -> UB on MTE2 */
    if ((st = sli_own_ub(m, b, dst, 1)) != SL_OK) return st;
    pipe = SL_PIPE_MTE2;
    gm_pe = src->pe;
  }
  if ((st = sli_bounds(m, src, bytes, 0, fn, 2, b->pe, b->b)) != SL_OK) return st;
  if ((st = sli_bounds(m, dst, bytes, 1, fn, 1, b->pe, b->b)) != SL_OK) return st;
  if (op != SL_OP_NONE && b->atomic_dtype != dst->dtype && b->atomic_dtype >= 0)
    return sli_err(m, SL_EARG, 1, "atomic mode set for %s, copy of %s",
                   sl_dtype_name((sl_dtype)b->atomic_dtype),
                   sl_dtype_name((sl_dtype)dst->dtype));
  if (gm_pe < 0 || gm_pe >= m->p.n_pes) gm_pe = 0;   /* host: no such copy */
  race_copy(m, blk, pipe, dst, src, bytes, op);
  /* a large GM -> UB copy stages like an MTE chunk: its bytes move when a
  ** UB -> GM copy reads them (the CpGM2GM pattern) or anything else looks */
  st = transfer(m, blk, pipe, gm_pe, dst, src, bytes, op,
                pipe == SL_PIPE_MTE2 && bytes >= SL_STAGE_BYTES ? -bytes : bytes);
  b->t += m->ps.issue;
  sli_queue_park(m, blk);
  sli_queue_only(m, blk);
  return st;
}

/* SetAtomicAdd/Max/Min<T> (op, dtype) or SetAtomicNone (op = SL_OP_NONE) */
int sl_set_atomic(sl_machine *m, int blk, int op, int dtype) {
  sl_block *b = &m->blocks[blk];
  b->atomic = op;
  b->atomic_dtype = dtype;
  b->t += m->ps.issue;
  return SL_OK;
}

/* offset view of a location, elements further (inline: a scalar access
** takes its offset) */
static inline sl_loc loc_at(const sl_loc *l, int64_t elems) {
  sl_loc r = *l;
  int64_t d = sl_nbytes(elems, (int64_t)sl_dtype_size((sl_dtype)l->dtype));
  r.off = (d == INT64_MAX || (d > 0 && r.off > INT64_MAX - d)) ? -1 : r.off + d;
  return r;
}

/* aclshmemx_mte_put_nbi / _get_nbi: through UB in chunks of ub_bytes */
int sl_mte(sl_machine *m, int blk, int get, const sl_loc *dst,
           const sl_loc *src, const sl_loc *ub, int64_t ub_bytes,
           int64_t elems, int pe, int id) {
  sl_block *b = &m->blocks[blk];
  const char *fn = get ? "mte_get_nbi" : "mte_put_nbi";
  sl_loc rdst = *dst, rsrc = *src;
  int64_t esz, chunk, done = 0;
  int st;
  if (pe < 0 || pe >= m->p.n_pes)
    return sli_err(m, SL_EARG, 6, "PE %d out of range 0..%d", pe, m->p.n_pes - 1);
  if (id < 0 || id >= SL_NEVENT_IDS)
    return sli_err(m, SL_EARG, 7, "event id must be in 0..7, got %d", id);
  if (elems <= 0) return sli_err(m, SL_EARG, 5, "element count must be positive");
  if (dst->buf < 0 || src->buf < 0)
    return sli_err(m, SL_EARG, dst->buf < 0 ? 1 : 2, "GM address expected, got UB");
  if ((st = sli_own_ub(m, b, ub, 3)) != SL_OK) return st;
  if (dst->dtype != src->dtype || ub->dtype != src->dtype)
    return sli_err(m, SL_EARG, ub->dtype == dst->dtype ? 2 : ub->dtype == src->dtype ? 1 : 3,
        "dtype mismatch (dst %s, src %s, ub %s)", sl_dtype_name((sl_dtype)dst->dtype),
        sl_dtype_name((sl_dtype)src->dtype), sl_dtype_name((sl_dtype)ub->dtype));
  esz = (int64_t)sl_dtype_size((sl_dtype)src->dtype);
  if (ub_bytes < esz || ub->off < 0 || ub_bytes > ub->cap - ub->off)
    return sli_err(m, SL_EARG, 4,
        "UB buffer too small: ub_bytes %lld, the UB tensor holds %lld bytes "
        "and one %s is %lld", (long long)ub_bytes,
        (long long)(ub->cap - ub->off), sl_dtype_name((sl_dtype)src->dtype),
        (long long)esz);
  if (get) {
    if (m->bufs[src->buf].space != SL_SPACE_SYM)
      return sli_err(m, SL_EARG, 2, "source must be a symmetric address");
    rsrc.pe = pe;
  } else {
    if (m->bufs[dst->buf].space != SL_SPACE_SYM)
      return sli_err(m, SL_EARG, 1, "destination must be a symmetric address");
    rdst.pe = pe;
  }
  if (b->atomic != SL_OP_NONE && b->atomic_dtype >= 0 && b->atomic_dtype != dst->dtype)
    return sli_err(m, SL_EARG, 1, "atomic mode set for %s, copy of %s",
                   sl_dtype_name((sl_dtype)b->atomic_dtype),
                   sl_dtype_name((sl_dtype)dst->dtype));
  if ((st = sli_bounds(m, &rsrc, sl_nbytes(elems, esz), 0, fn, 2, b->pe, b->b)) != SL_OK)
    return st;
  if ((st = sli_bounds(m, &rdst, sl_nbytes(elems, esz), 1, fn, 1, b->pe, b->b)) != SL_OK)
    return st;
  chunk = ub_bytes / esz;
  while (done < elems) {     /* the library's loop: in, flag, out, flag */
    int64_t n = elems - done < chunk ? elems - done : chunk;
    race_copy(m, blk, SL_PIPE_MTE2, ub, &rsrc, n * esz, SL_OP_NONE);
    if ((st = transfer(m, blk, SL_PIPE_MTE2, rsrc.pe, ub, &rsrc, n * esz, SL_OP_NONE,
                       -elems * esz)) ||
        (st = chain_flag(m, b, SL_EV_MTE2_MTE3, id)))
      return st;
    race_copy(m, blk, SL_PIPE_MTE3, &rdst, ub, n * esz, b->atomic);
    if ((st = transfer(m, blk, SL_PIPE_MTE3, rdst.pe, &rdst, ub, n * esz, b->atomic,
                       elems * esz)))
      return st;
    done += n;
    if (done == elems) break;             /* the last MTE3 stays in flight */
    rsrc.off += n * esz;                  /* the next chunk: inside the ranges */
    rdst.off += n * esz;                  /* checked above, so no overflow */
    if ((st = chain_flag(m, b, SL_EV_MTE3_MTE2, id))) return st;
  }
  b->t += m->ps.issue;
  sli_queue_park(m, blk);
  sli_queue_only(m, blk);
  return SL_OK;
}

/* the next primitive of a pipelined chain (sl_pipe_xfer), as op.lua's loop
** of one call per primitive issued it: [wait_flag(MTE3_MTE2, h)] from the
** second round on, the chunk's mte_put_nbi / mte_get_nbi through buffer h,
** set_flag(MTE3_MTE2, h); after the last chunk MTE2 waits for the flags of
** the last writes. Exactly those calls, in that order, with their issue
** costs: the chain times as the chunked calls do, at any settle window */
int sl_mte_pipe_step(sl_machine *m, int blk, sl_pipe_xfer *x) {
  int h = (int)(x->c % x->bufs), one, st;
  for (;;) switch (x->step) {
    case PX_WAIT:                         /* the loop's head: a chunk left? */
      if (x->done >= x->count) { x->step = PX_DRAIN; continue; }
      if (x->c == 0 && m->p.chain_flow &&    /* the whole chain as one flow (chain.c) */
          ((st = sli_chain_issue(m, blk, x, &one)) != SL_OK || one))
        return st;
      x->step = PX_MOVE;
      if (x->c >= x->bufs) return sl_wait_flag(m, blk, SL_EV_MTE3_MTE2, h);
      continue;
    case PX_MOVE: {
      int64_t n = x->count - x->done < x->half ? x->count - x->done : x->half;
      sl_loc d = loc_at(&x->dst, x->done), s = loc_at(&x->src, x->done);
      sl_loc u = loc_at(&x->ub, (int64_t)h * x->half);
      x->done += n;
      x->step = PX_SET;
      return sl_mte(m, blk, x->get, &d, &s, &u,
                    x->half * (int64_t)sl_dtype_size((sl_dtype)x->ub.dtype), n, x->pe, h);
    }
    case PX_SET:
      x->c++;
      x->step = PX_WAIT;
      return sl_set_flag(m, blk, SL_EV_MTE3_MTE2, h);
    case PX_DRAIN: {                      /* the last writes of each buffer land */
      int32_t k = x->drained++, last = x->c < x->bufs ? x->c : x->bufs;
      if (k >= last) { x->step = PX_DONE; return SL_OK; }
      if (k + 1 == last) x->step = PX_DONE;   /* the caller finishes with this one */
      return sl_wait_flag(m, blk, SL_EV_MTE3_MTE2, (int)((x->c - 1 - k) % x->bufs));
    }
    default: return SL_OK;
  }
}

/* element i of a UB tensor for a scalar access on the S pipe: checked
** (bounds; initcheck and racecheck see the access); NULL when skipped */
static uint8_t *ub_elem(sl_machine *m, int blk, const sl_loc *ub, int64_t i, int write,
                        int *st) {
  sl_block *b = &m->blocks[blk];
  int64_t esz = (int64_t)sl_dtype_size((sl_dtype)ub->dtype);
  sl_loc l;
  sl_addr a;
  uint8_t *p;
  if ((*st = sli_own_ub(m, b, ub, 1)) != SL_OK) return NULL;
  l = loc_at(ub, i);
  *st = sli_bounds(m, &l, esz, write, write ? "set_value" : "get_value", 2, b->pe, b->b);
  if (*st != SL_OK) return NULL;
  sli_addr(&l, &a);
  sli_lazy_touch(m, &a, esz);
  if (m->p.check & SL_CHECK_INIT) {     /* the calls do nothing with initcheck off */
    if (write) sli_init_write(m, &a, esz);
    else sli_init_read(m, &a, esz, blk, SL_PIPE_S, m->site);
  }
  if (m->race) sli_race_access(m, blk, SL_PIPE_S, &l, esz, write);
  b->t += m->ps.scalar;
  if ((p = sli_ptr(m, &a)) == NULL && !write)
    *st = sli_err(m, SL_EUNBACKED, 1, "get_value of UB that holds no data in a timing-only "
                  "run: allocate it k:ub(dtype, n, \"backed\") when its value steers the "
                  "kernel");
  return p;
}

/* MTE put from UB / get into UB (the UB forms of mte_put_nbi and
** mte_get_nbi): one UB -> GM copy on MTE3 to PE pe's copy of the symmetric
** gm, or one GM -> UB copy on MTE2 from it; left in flight. Arguments are
** numbered as the calls take them: put (gm, ub, ...), get (ub, gm, ...) */
int sl_mte_ub(sl_machine *m, int blk, int get, const sl_loc *gm, const sl_loc *ub,
              int64_t elems, int pe) {
  sl_block *b = &m->blocks[blk];
  const char *fn = get ? "mte_get_nbi" : "mte_put_nbi";
  int ga = get ? 2 : 1, ua = get ? 1 : 2, pipe = get ? SL_PIPE_MTE2 : SL_PIPE_MTE3;
  int op = get ? SL_OP_NONE : b->atomic;
  sl_loc rgm = *gm;
  int64_t bytes;
  int st;
  if (pe < 0 || pe >= m->p.n_pes)
    return sli_err(m, SL_EARG, 4, "PE %d out of range 0..%d", pe, m->p.n_pes - 1);
  if (elems <= 0) return sli_err(m, SL_EARG, 3, "element count must be positive");
  if (gm->buf < 0) return sli_err(m, SL_EARG, ga, "GM address expected, got UB");
  if (m->bufs[gm->buf].space != SL_SPACE_SYM)
    return sli_err(m, SL_EARG, ga, get ? "source must be a symmetric address"
                                       : "destination must be a symmetric address");
  if ((st = sli_own_ub(m, b, ub, ua)) != SL_OK) return st;
  if (gm->dtype != ub->dtype) return sli_err(m, SL_EARG, 2, "dtype mismatch");
  rgm.pe = pe;
  bytes = sl_nbytes(elems, (int64_t)sl_dtype_size((sl_dtype)ub->dtype));
  if ((st = sli_bounds(m, get ? &rgm : ub, bytes, 0, fn, 2, b->pe, b->b)) != SL_OK) return st;
  if ((st = sli_bounds(m, get ? ub : &rgm, bytes, 1, fn, 1, b->pe, b->b)) != SL_OK)
    return st;
  race_copy(m, blk, pipe, get ? ub : &rgm, get ? &rgm : ub, bytes, op);
  st = transfer(m, blk, pipe, pe, get ? ub : &rgm, get ? &rgm : ub, bytes, op, bytes);
  b->t += m->ps.issue;
  sli_queue_park(m, blk);
  sli_queue_only(m, blk);
  return st;
}

/* 1 when a scalar access of block blk's UB may run ahead of other blocks'
** wake-ups: none of its V, MTE2 or MTE3 work is pending (issued and not
** landed). Its UB is written and read only by its own S and those queues
** (another block, PE or flow reaches no UB of it; a polling wait fills it
** while the block is parked), so with them empty no key due before its
** clock reads or writes what the access does, and the access moves only the
** S clock: the value and the time are those of a caught-up access */
int sl_scalar_ahead(const sl_machine *m, int blk) {
  const sl_block *b = &m->blocks[blk];
  int q;
  for (q = 0; q < SL_NQ; q++) if (b->nq[q] != 0) return 0;
  return 1;
}

/* the UB bytes [*lo, *hi) the vector op of record e reads or writes, from
** the lowest to the highest of its operands (sli_ub_span, which tells a
** copy's itself) */
int sli_vec_ub_span(const sl_event *e, int64_t *lo, int64_t *hi) {
  int64_t es, ds, n;
  es = (int64_t)sl_dtype_size((sl_dtype)e->src.dtype);
  ds = (int64_t)sl_dtype_size((sl_dtype)e->dst.dtype);
  if (es <= 0) es = 1;
  if (ds <= 0) ds = 1;
  n = e->vop == SL_VEC_RMAX ? 1 : e->n;
  *lo = e->dst.off;
  *hi = e->dst.off + sl_nbytes(n, ds);
  if (e->vop != SL_VEC_DUP) {
    if (e->src.off < *lo) *lo = e->src.off;
    if (e->src.off + sl_nbytes(e->n, es) > *hi) *hi = e->src.off + sl_nbytes(e->n, es);
  }
  if (SL_VEC_IS_BINARY(e->vop)) {
    if (e->src2.off < *lo) *lo = e->src2.off;
    if (e->src2.off + sl_nbytes(e->n, es) > *hi) *hi = e->src2.off + sl_nbytes(e->n, es);
  }
  return 1;
}

/* 1 when a scalar access of element i of ub (the block's UB) may run ahead
** of other blocks' wake-ups: none of the block's pending V, MTE2 or MTE3
** work (issued and not landed) reads or writes its bytes. What sl_scalar_ahead
** says of the whole UB holds of those bytes: no key due before the block's
** clock reads or writes them (the pending ops that touch UB are in the
** block's table, or counted beyond it, and then it says 0) */
int sl_scalar_ahead_at(const sl_machine *m, int blk, const sl_loc *ub, int64_t i) {
  const sl_block *b = &m->blocks[blk];
  int64_t esz = (int64_t)sl_dtype_size((sl_dtype)ub->dtype), lo, hi, d;
  uint32_t set;
  int k;
  if (b->pover > 0 || ub->buf >= 0 || i < 0 || esz <= 0) return 0;
  d = sl_nbytes(i, esz);
  if (d == INT64_MAX || ub->off > INT64_MAX / 2 - d) return 0;
  lo = ub->base + ub->off + d;
  hi = lo + esz;
  for (k = 0, set = b->pubset; set != 0; k++, set >>= 1)
    if ((set & 1) && b->pub[k].lo < hi && lo < b->pub[k].hi) return 0;
  return 1;
}

/* GetValue on UB (S pipe): reads what has landed by now */
int sl_get_value(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                 double *num, int64_t *ival) {
  return sl_get_value_ahead(m, blk, ub, i, num, ival, -1);
}

/* SetValue on UB (S pipe): writes now */
int sl_set_value(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                 double num, int64_t ival, int isint) {
  return sl_set_value_ahead(m, blk, ub, i, num, ival, isint, -1);
}

/* sl_get_value, told sl_scalar_ahead_at's answer (ahead >= 0) */
int sl_get_value_ahead(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                       double *num, int64_t *ival, int ahead) {
  int st;
  uint8_t *p = ub_elem(m, blk, ub, i, 0, &st);
  if (p == NULL) return st;
  if (sl_dtype_isfloat((sl_dtype)ub->dtype)) *num = sl_get_num((sl_dtype)ub->dtype, p, 0);
  else *ival = sl_get_int((sl_dtype)ub->dtype, p, 0);
  sli_guard_read(m, blk, ub, i);        /* a read of a new place is progress */
  if (ahead < 0 ? sl_scalar_ahead_at(m, blk, ub, i) : ahead) sli_queue_only(m, blk);
  return SL_OK;
}

/* sl_set_value, told sl_scalar_ahead_at's answer (ahead >= 0) */
int sl_set_value_ahead(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                       double num, int64_t ival, int isint, int ahead) {
  int st;
  uint8_t *p = ub_elem(m, blk, ub, i, 1, &st), old[8];
  size_t esz = sl_dtype_size((sl_dtype)ub->dtype);
  if (st == SL_OK && (ahead < 0 ? sl_scalar_ahead_at(m, blk, ub, i) : ahead))
    sli_queue_only(m, blk);
  if (p == NULL) {                      /* skipped, or unbacked: the write is dropped */
    if (st == SL_OK) sli_progress(m);   /* a write the runaway guard cannot compare */
    return st;
  }
  memcpy(old, p, esz);
  if (isint) sl_set_int((sl_dtype)ub->dtype, p, 0, ival);
  else sl_set_num((sl_dtype)ub->dtype, p, 0, num);
  if (memcmp(old, p, esz) != 0) sli_progress(m);   /* the UB changed */
  return SL_OK;
}

/* queue a vector op of dur on the V pipe; it applies when it ends */
static int vec_queue(sl_machine *m, int blk, int op, const sl_loc *dst, const sl_loc *a,
                     const sl_loc *bb, double s, int64_t n, sl_time dur) {
  sl_block *b = &m->blocks[blk];
  sl_ins *o;
  int32_t ev, id;
  sl_event *e = sli_event_new(m, EV_VEC, blk, &ev);
  if (e == NULL) return sli_err(m, SL_ENOMEM, 0, "not enough memory for an event");
  e->vop = op;
  e->n = n;
  e->s = s;
  e->pipe = SL_PIPE_V;
  sli_addr(dst, &e->dst);
  sli_addr(a, &e->src);
  if (SL_VEC_IS_BINARY(op)) sli_addr(bb, &e->src2);
  if ((id = sli_op_new(m, OP_VEC, &o)) < 0)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for an instruction");
  o->ev = ev;
  o->dur = dur;
  sli_enqueue(m, blk, SL_PIPE_V, id);
  b->t += m->ps.issue;
  sli_queue_park(m, blk);
  sli_queue_only(m, blk);
  return SL_OK;
}

/* vector op on UB (V pipe): op is a binary SL_OP_ADD/MAX/MIN (positive,
** two sources) or a one-source SL_VEC_* (zero or negative): see sl.h */
int sl_vec(sl_machine *m, int blk, int op, const sl_loc *dst,
           const sl_loc *a, const sl_loc *bb, double s, int64_t n) {
  sl_block *b = &m->blocks[blk];
  int st;
  int64_t dbytes, abytes;
  if (n <= 0) return sli_err(m, SL_EARG, SL_VEC_IS_BINARY(op) ? 4 : 3, "count must be positive");
  if ((st = sli_own_ub(m, b, dst, 1)) != SL_OK) return st;
  if (op == SL_VEC_DUP) a = dst;        /* Duplicate reads no tensor */
  if ((st = sli_own_ub(m, b, a, 2)) != SL_OK) return st;
  if (SL_VEC_IS_BINARY(op) && (st = sli_own_ub(m, b, bb, 3)) != SL_OK) return st;
  if (op != SL_VEC_COPY && (dst->dtype == SL_FP64 || a->dtype == SL_FP64))
    return sli_err(m, SL_EARG, dst->dtype == SL_FP64 ? 1 : 2, "fp64: the AIV vector unit "
                   "has no double arithmetic (DataCopy and the MTE move it)");
  if (op != SL_VEC_CAST && op != SL_VEC_CAST_RINT &&
      (a->dtype != dst->dtype || (SL_VEC_IS_BINARY(op) && bb->dtype != dst->dtype)))
    return sli_err(m, SL_EARG, 2, "dtype mismatch");
  dbytes = sl_nbytes(op == SL_VEC_RMAX ? 1 : n, (int64_t)sl_dtype_size((sl_dtype)dst->dtype));
  abytes = sl_nbytes(n, (int64_t)sl_dtype_size((sl_dtype)a->dtype));
  if ((st = sli_bounds(m, dst, dbytes, 1, "vector op", 1, b->pe, b->b)) != SL_OK)
    return st;
  if (op != SL_VEC_DUP &&
      (st = sli_bounds(m, a, abytes, 0, "vector op", 2, b->pe, b->b)) != SL_OK)
    return st;
  if (SL_VEC_IS_BINARY(op) && (st = sli_bounds(m, bb, abytes, 0, "vector op", 3, b->pe, b->b)))
    return st;
  if (m->p.check & SL_CHECK_RACE) {
    sli_race_issue(m, blk, SL_PIPE_V);
    if (op != SL_VEC_DUP) sli_race_access(m, blk, SL_PIPE_V, a, abytes, 0);
    if (SL_VEC_IS_BINARY(op)) sli_race_access(m, blk, SL_PIPE_V, bb, abytes, 0);
    sli_race_access(m, blk, SL_PIPE_V, dst, dbytes, 1);
  }
  return vec_queue(m, blk, op, dst, a, bb, s, n,
                   m->ps.vec_setup + (sl_time)llround((double)(dbytes > abytes ? dbytes : abytes) *
                                                      1000.0 / (m->p.vec_bytes_per_cycle *
                                                                m->p.core_ghz)));
}
