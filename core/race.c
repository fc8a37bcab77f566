/*
** race.c -- racecheck: accesses judged by happens-before, not by the order a
** run happened to take. Every block has four threads (its pipes S, V, MTE2,
** MTE3), each with a vector clock. Edges: program order within a pipe; an
** issue from S carries what S has acquired (not S's own stores); set_flag /
** wait_flag; PipeBarrier; a signal wait that observed the signalling write
** (or a polled flag that observed its writer); barrier_all; sync_all;
** shmem_sync_all (S only); a copy of a signal word, from its landing. A
** fifth thread per block is its DMA engines (SDMA, RDMA, UDMA): an engine
** transfer issued from S is ordered after what S knows, and S learns of it
** at an engine's quiet, at quiet / fence and at barrier_all (they wait for
** the engines); PipeBarrier and SyncAll do not.
** A shadow per 32-byte granule holds the last writes and the last reads (four
** of each), with the bytes each touched (so neighbours sharing a granule do
** not collide; a fifth forgets the oldest, never blames another thread); an
** access unordered with a conflicting one is a race, reported once per
** (line, other line, buffer) with a count. Granules come in 4 KiB chunks: a
** chunk whose granules all hold the same is one cell, expanded when an access
** covers part of it, and a chunk of an earlier launch reads as empty, so the
** cost follows the accesses, not the buffers' sizes.
*/
#include <stdlib.h>
#include <string.h>

#include "sli.h"

#define NONE 0xffffffffu
#define GRAIN 32
#define SLOTS 4                  /* writers (and readers) kept per granule */
#define CG 128                   /* granules per chunk */
#define CHUNK (CG * GRAIN)
#define PAGE 64                  /* chunks per lazily allocated page */

/* one access remembered by a granule: thread, clock, bytes, Lua line */
typedef struct rc_acc {
  uint32_t t, c, m;
  int32_t s;
  int32_t atomic;
} rc_acc;

/* the shadow of one 32-byte granule: four writers and four readers (slices of
** several blocks or PEs often meet inside a granule), and the release of the
** last signal */
typedef struct rc_cell {
  rc_acc w[SLOTS], r[SLOTS];
  int32_t snap;
} rc_cell;

/* 4 KiB of shadow: one cell for all granules while cells is NULL; a chunk
** of an earlier launch (epoch) is empty */
typedef struct rc_chunk {
  rc_cell one;
  rc_cell *cells;           /* CG granules, when they differ */
  uint32_t epoch;
} rc_chunk;

/* the chunks of a buffer (all copies) or of a UB, in pages made when touched */
typedef struct rc_shadow {
  rc_chunk **page;
  size_t npage;
  int64_t per;              /* chunks per copy (a UB: one copy) */
} rc_shadow;

struct sl_race {
  uint32_t nt;              /* threads: 4 per block */
  uint32_t *vc;             /* [nt][nt] */
  uint32_t *snap;           /* flag snapshots [capsnap][nt] */
  int32_t nsnap, capsnap;
  int32_t *fsnap;           /* [block][event][id] -> snapshot */
  rc_shadow *gm;            /* per buffer */
  int ngm;
  rc_shadow *ub;            /* per core */
  uint32_t epoch;           /* the launch */
  rc_cell **pool;           /* granule arrays of collapsed chunks, for reuse */
  size_t npool, cappool;
};

#define TPB 5u                   /* threads per block: S V MTE2 MTE3 DMA */
#define TID(blk, pipe) ((uint32_t)(blk) * TPB + (uint32_t)(pipe))
#define VC(r, t) ((r)->vc + (size_t)(t) * (r)->nt)

/* free the chunks of a shadow */
static void shadow_free(rc_shadow *sh) {
  size_t p, k;
  for (p = 0; p < sh->npage; p++) {
    if (sh->page[p] == NULL) continue;
    for (k = 0; k < PAGE; k++) free(sh->page[p][k].cells);
    free(sh->page[p]);
  }
  free(sh->page);
  memset(sh, 0, sizeof(*sh));
}

/* free everything of racecheck */
void sli_race_free(sl_machine *m) {
  sl_race *r = m->race;
  int i;
  size_t c, ncore;
  if (r == NULL) return;
  ncore = (size_t)m->p.n_pes * (size_t)m->p.cores;
  for (i = 0; i < r->ngm; i++) shadow_free(&r->gm[i]);
  if (r->ub) for (c = 0; c < ncore; c++) shadow_free(&r->ub[c]);
  while (r->npool > 0) free(r->pool[--r->npool]);
  free(r->gm); free(r->ub); free(r->pool);
  free(r->vc); free(r->snap); free(r->fsnap);
  free(r);
  m->race = NULL;
}

/* reset every cell of a shadow */
static void cells_clear(rc_cell *c, size_t n) {
  memset(c, 0xff, n * sizeof(*c));
}

/* the shadows of buffers freed since: no access can reach them again */
static void drop_freed(sl_machine *m) {
  sl_race *r = m->race;
  int i;
  for (i = 0; i < r->ngm && i < m->nbufs; i++)
    if (m->bufs[i].freed && r->gm[i].page != NULL) shadow_free(&r->gm[i]);
}

/* a new launch: fresh clocks, shadows forgotten (launches are ordered) */
int sli_race_begin(sl_machine *m) {
  sl_race *r = m->race;
  uint32_t t;
  size_t ncore = (size_t)m->p.n_pes * (size_t)m->p.cores;
  if (!(m->p.check & SL_CHECK_RACE)) return SL_OK;
  if ((size_t)m->nb > 1024)
    return sli_err(m, SL_EARG, 2, "racecheck follows at most 1024 blocks in all "
                   "(%d PEs x %d blocks asked)", m->p.n_pes, m->block_dim);
  if (r == NULL) {
    r = m->race = calloc(1, sizeof(*r));
    if (r == NULL) return SL_ENOMEM;
    r->ub = calloc(ncore, sizeof(*r->ub));
    if (!r->ub) { sli_race_free(m); return SL_ENOMEM; }
  }
  r->nt = (uint32_t)m->nb * TPB;
  free(r->vc); free(r->fsnap);
  r->vc = calloc((size_t)r->nt * r->nt, sizeof(uint32_t));
  r->fsnap = malloc((size_t)m->nb * SL_NEVENTS * SL_NEVENT_IDS * sizeof(int32_t));
  free(r->snap);
  r->snap = NULL;
  r->nsnap = r->capsnap = 0;
  if (!r->vc || !r->fsnap) { sli_race_free(m); return SL_ENOMEM; }
  for (t = 0; t < r->nt; t++) VC(r, t)[t] = 1;
  r->epoch++;                           /* every chunk of before reads as empty */
  drop_freed(m);
  return SL_OK;
}

/* dst = max(dst, src) over all threads, or all but `skip` */
static void join(const sl_race *r, uint32_t *dst, const uint32_t *src, uint32_t skip) {
  uint32_t j;
  for (j = 0; j < r->nt; j++)
    if (j != skip && src[j] > dst[j]) dst[j] = src[j];
}

/* an instruction issued from S to pipe: it knows what S has acquired */
void sli_race_issue(sl_machine *m, int blk, int pipe) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || pipe == SL_PIPE_S) return;
  join(r, VC(r, TID(blk, pipe)), VC(r, TID(blk, SL_PIPE_S)), TID(blk, SL_PIPE_S));
}

/* a new, unfilled snapshot slot (-1 when out of memory) */
static int32_t snapshot_blank(sl_race *r) {
  if (r->nsnap == r->capsnap) {
    int32_t cap = r->capsnap ? r->capsnap * 2 : 64;
    uint32_t *ns = realloc(r->snap, (size_t)cap * r->nt * sizeof(uint32_t));
    if (ns == NULL) return -1;
    r->snap = ns;
    r->capsnap = cap;
  }
  return r->nsnap++;
}

/* a snapshot of thread t's clock, which then moves on (-1: out of memory) */
static int32_t snapshot(sl_race *r, uint32_t t) {
  int32_t j = snapshot_blank(r);
  if (j < 0) return -1;
  memcpy(r->snap + (size_t)j * r->nt, VC(r, t), r->nt * sizeof(uint32_t));
  VC(r, t)[t]++;                        /* later accesses are after the release */
  return j;
}

/* set_flag(SRC_DST, id): SRC releases (and synccheck keeps the line) */
void sli_race_set_flag(sl_machine *m, int blk, int ev, int id, int src) {
  sl_race *r = m->race;
  m->blocks[blk].flagsite[ev][id] = m->site;    /* synccheck's "left set" names it */
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  r->fsnap[((size_t)blk * SL_NEVENTS + (size_t)ev) * SL_NEVENT_IDS + (size_t)id] =
      snapshot(r, TID(blk, src));
}

/* wait_flag(SRC_DST, id): DST acquires what SRC released */
void sli_race_wait_flag(sl_machine *m, int blk, int ev, int id, int dst) {
  sl_race *r = m->race;
  int32_t s;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  s = r->fsnap[((size_t)blk * SL_NEVENTS + (size_t)ev) * SL_NEVENT_IDS + (size_t)id];
  if (s >= 0) join(r, VC(r, TID(blk, dst)), r->snap + (size_t)s * r->nt, NONE);
}

/* the first np threads (1: S; SL_NPIPES: S V MTE2 MTE3; TPB: and the DMA
** engines) of blocks [first, first + n) all meet: each knows all, then
** moves on; the threads left out keep their clocks (their work in flight is
** not ordered) */
static void meet(sl_race *r, uint32_t first, uint32_t n, uint32_t np) {
  uint32_t blk, p, *all = calloc(r->nt, sizeof(uint32_t));
  if (all == NULL) return;
  for (blk = first; blk < first + n; blk++)
    for (p = 0; p < np; p++) join(r, all, VC(r, TID(blk, p)), NONE);
  for (blk = first; blk < first + n; blk++)
    for (p = 0; p < np; p++) {
      memcpy(VC(r, TID(blk, p)), all, r->nt * sizeof(uint32_t));
      VC(r, TID(blk, p))[TID(blk, p)]++;
    }
  free(all);
}

/* PipeBarrier(ALL) / quiet / fence (pipe = SL_NPIPES), or S waits for a pipe */
void sli_race_barrier(sl_machine *m, int blk, int pipe) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if (pipe == SL_NPIPES) { meet(r, (uint32_t)blk, 1, SL_NPIPES); return; }
  join(r, VC(r, TID(blk, SL_PIPE_S)), VC(r, TID(blk, pipe)), NONE);
  VC(r, TID(blk, pipe))[TID(blk, pipe)]++;
}

/* an engine's quiet: S learns what the block's DMA engines did */
void sli_race_dma_quiet(sl_machine *m, int blk) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  join(r, VC(r, TID(blk, SL_PIPE_S)), VC(r, TID(blk, SL_PIPE_DMA)), NONE);
  VC(r, TID(blk, SL_PIPE_DMA))[TID(blk, SL_PIPE_DMA)]++;
}

/* barrier_all (pe < 0) or sync_all of one PE: everyone there meets */
void sli_race_meet(sl_machine *m, int pe) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if (pe < 0) meet(r, 0, (uint32_t)m->nb, TPB);       /* after quiets: engines too */
  else meet(r, (uint32_t)(pe * m->block_dim), (uint32_t)m->block_dim, SL_NPIPES);
}

/* shmem_sync_all: the S threads of every block meet; the pipes keep
** their own clocks (their work in flight is not ordered by it) */
void sli_race_meet_s(sl_machine *m) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  meet(r, 0, (uint32_t)m->nb, 1);
}

/* quiet / fence: the block's pipes and DMA engines all meet */
void sli_race_quiet(sl_machine *m, int blk) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  meet(r, (uint32_t)blk, 1, TPB);
}

/* a signal write released by S of blk: its snapshot (-1: none) */
int32_t sli_race_release(sl_machine *m, int blk) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return -1;
  return snapshot(r, TID(blk, SL_PIPE_S));
}

/* the release of what thread pipe of blk knows now (-1: none) */
int32_t sli_race_release_pipe(sl_machine *m, int blk, int pipe) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return -1;
  return snapshot(r, TID(blk, pipe));
}

/* S of blk acquires a snapshot (a signal it observed) */
void sli_race_acquire(sl_machine *m, int blk, int32_t snap) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || snap < 0) return;
  join(r, VC(r, TID(blk, SL_PIPE_S)), r->snap + (size_t)snap * r->nt, NONE);
}

/* S of blk acquires what thread `from` (a block's pipe) knows now: a polled
** flag written by it (slightly generous: it also learns what came after) */
void sli_race_acquire_thread(sl_machine *m, int blk, uint32_t from) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || from >= r->nt) return;
  join(r, VC(r, TID(blk, SL_PIPE_S)), VC(r, from), NONE);
}

/* put a granule array back for reuse (freed when the pool cannot grow) */
static void pool_put(sl_race *r, rc_cell *c) {
  if (r->npool == r->cappool) {
    size_t cap = r->cappool ? r->cappool * 2 : 16;
    rc_cell **np = realloc(r->pool, cap * sizeof(*np));
    if (np == NULL) { free(c); return; }
    r->pool = np;
    r->cappool = cap;
  }
  r->pool[r->npool++] = c;
}

/* the shadow of an address, and where it is: pos its byte in the shadow's
** chunks, ngr the granules of one copy (0: a UB, whose chunks are all whole) */
static rc_shadow *shadow_of(sl_machine *m, const sl_addr *a, int64_t *pos, int64_t *ngr) {
  sl_race *r = m->race;
  const sl_buf *b;
  rc_shadow *sh;
  if (a->buf < 0) {
    *pos = a->off;
    *ngr = 0;
    return &r->ub[(size_t)a->pe * (size_t)m->p.cores + (size_t)a->core];
  }
  if (a->buf >= r->ngm) {
    rc_shadow *ng = realloc(r->gm, (size_t)m->nbufs * sizeof(*ng));
    if (ng == NULL) return NULL;
    memset(ng + r->ngm, 0, (size_t)(m->nbufs - r->ngm) * sizeof(*ng));
    r->gm = ng;
    r->ngm = m->nbufs;
  }
  b = &m->bufs[a->buf];
  sh = &r->gm[a->buf];
  sh->per = (b->bytes + CHUNK - 1) / CHUNK;
  *ngr = (b->bytes + GRAIN - 1) / GRAIN;
  *pos = sh->per * CHUNK * (b->space == SL_SPACE_HOST ? 0 : a->pe) + a->off;
  return sh;
}

/* chunk idx of a shadow, emptied when it belongs to an earlier launch
** (NULL when out of memory) */
static rc_chunk *chunk_at(sl_race *r, rc_shadow *sh, size_t idx) {
  size_t p = idx / PAGE;
  rc_chunk *k;
  if (p >= sh->npage) {
    size_t n = p + 1 > sh->npage * 2 ? p + 1 : sh->npage * 2;
    rc_chunk **np = realloc(sh->page, n * sizeof(*np));
    if (np == NULL) return NULL;
    memset(np + sh->npage, 0, (n - sh->npage) * sizeof(*np));
    sh->page = np;
    sh->npage = n;
  }
  if (sh->page[p] == NULL && (sh->page[p] = calloc(PAGE, sizeof(rc_chunk))) == NULL)
    return NULL;
  k = &sh->page[p][idx % PAGE];
  if (k->epoch != r->epoch) {
    if (k->cells != NULL) pool_put(r, k->cells);
    k->cells = NULL;
    cells_clear(&k->one, 1);
    k->epoch = r->epoch;
  }
  return k;
}

/* give chunk k one cell per granule, all as its single one (-1: no memory) */
static int expand(sl_race *r, rc_chunk *k) {
  rc_cell *c;
  int i;
  if (k->cells != NULL) return 0;
  c = r->npool > 0 ? r->pool[--r->npool] : malloc(CG * sizeof(rc_cell));
  if (c == NULL) return -1;
  for (i = 0; i < CG; i++) c[i] = k->one;
  k->cells = c;
  return 0;
}

/* back to one cell when the first ng granules of chunk k hold the same */
static void collapse(sl_race *r, rc_chunk *k, int ng) {
  int i;
  for (i = 1; i < ng; i++)
    if (memcmp(&k->cells[i], &k->cells[0], sizeof(rc_cell)) != 0) return;
  k->one = k->cells[0];
  pool_put(r, k->cells);
  k->cells = NULL;
}

/* the cell of the granule at a (edit: one of its own, expanding its chunk) */
static rc_cell *cell_at(sl_machine *m, const sl_addr *a, int edit) {
  int64_t pos, ngr;
  rc_shadow *sh = shadow_of(m, a, &pos, &ngr);
  rc_chunk *k = sh ? chunk_at(m->race, sh, (size_t)(pos / CHUNK)) : NULL;
  if (k == NULL) return NULL;
  if (k->cells == NULL && (!edit || expand(m->race, k) != 0)) return edit ? NULL : &k->one;
  return &k->cells[(pos % CHUNK) / GRAIN];
}
/* report a race of the access by thread u with the earlier one (ot, os) */
static void race(sl_machine *m, const sl_addr *a, int64_t bytes, int write,
                 uint32_t u, uint32_t ot, int32_t os, int owrite) {
  sl_loc l;
  int blk = (int)(u / TPB);
  memset(&l, 0, sizeof(l));
  l.buf = a->buf; l.pe = a->pe; l.core = a->core; l.off = a->off;
  l.cap = a->buf < 0 ? 0 : m->bufs[a->buf].bytes;
  sli_report_race(m, &l, bytes, write, blk, (int)(u % TPB), (int)(ot / TPB), (int)(ot % TPB),
                  os, owrite);
}

/* forget a remembered access */
static void slot_clear(rc_acc *o) { memset(o, 0xff, sizeof(*o)); }

/* remember access x in one of the slots (oldest first): bytes it covers
** leave the others; with every slot taken, the oldest is forgotten (a race
** with it may go unseen, but no access is ever judged against a thread that
** did not make it) */
static void remember(rc_acc *slot, const rc_acc *x) {
  int i, n = 0;
  for (i = 0; i < SLOTS; i++) {         /* drop what x covers, keep the order */
    if (slot[i].t == NONE) continue;
    slot[i].m &= ~x->m;
    if (slot[i].m != 0) slot[n++] = slot[i];
  }
  for (i = n; i < SLOTS; i++) slot_clear(&slot[i]);
  if (n == SLOTS) {
    for (i = 1; i < SLOTS; i++) slot[i - 1] = slot[i];
    n = SLOTS - 1;
  }
  slot[n] = *x;
}

/* is access x (by thread u, bytes mask) unordered with a remembered one? */
static const rc_acc *conflict(const rc_acc *slot, uint32_t u, const uint32_t *vu,
                              uint32_t mask, int atomic) {
  int i;
  for (i = 0; i < SLOTS; i++) {
    const rc_acc *o = &slot[i];
    if (o->t == NONE || o->t == u || !(o->m & mask)) continue;
    if (atomic && o->atomic) continue;    /* unordered atomics do not race */
    if (vu[o->t] < o->c) return o;
  }
  return NULL;
}

/* one access being checked: where, by whom, and whether it raced already */
typedef struct rc_visit {
  sl_machine *m;
  const sl_addr *a;
  int64_t bytes;
  int write, reported;
  const uint32_t *vu;
  rc_acc x;
} rc_visit;

/* the access meets the granule c on the bytes of mask: check, then remember */
static void visit(rc_visit *v, rc_cell *c, uint32_t mask) {
  rc_acc x = v->x;
  x.m = mask;
  if (!v->reported) {
    const rc_acc *o = conflict(c->w, x.t, v->vu, mask, v->write == 2);
    int owrite = 1;
    if (o == NULL && v->write) { o = conflict(c->r, x.t, v->vu, mask, 0); owrite = 0; }
    if (o != NULL) {
      race(v->m, v->a, v->bytes, v->write, x.t, o->t, o->s, owrite);
      v->reported = 1;
    }
  }
  if (v->write) {
    int j;
    remember(c->w, &x);
    for (j = 0; j < SLOTS; j++) {
      c->r[j].m &= ~mask;
      if (c->r[j].m == 0) slot_clear(&c->r[j]);
    }
  } else {
    remember(c->r, &x);
  }
}

/* the granules [a0, a1] of chunk k (ng of them exist; the access spans the
** granules [g0, g1], starting lo bytes into g0 and ending hi bytes into g1) */
static void visit_chunk(rc_visit *v, rc_chunk *k, size_t base, int ng, size_t a0,
                        size_t a1, size_t g0, size_t g1, int lo, int hi) {
  sl_race *r = v->m->race;
  size_t g;
  int whole = a0 == base && a1 == base + (size_t)ng - 1 && (a0 != g0 || lo == 0) &&
              (a1 != g1 || hi == GRAIN);
  if (whole && k->cells == NULL) { visit(v, &k->one, 0xffffffffu); return; }
  if (expand(r, k) != 0) return;
  for (g = a0; g <= a1; g++) {
    uint32_t mask = 0xffffffffu;
    if (g == g0) mask &= 0xffffffffu << lo;
    if (g == g1 && hi < GRAIN) mask &= 0xffffffffu >> (GRAIN - hi);
    visit(v, &k->cells[g - base], mask);
  }
  if (whole) collapse(r, k, ng);
}

/* an access by pipe of blk to [a, a + bytes): check it, then record it;
** write = 2 is an atomic accumulate (unordered atomics do not race) */
void sli_race_access(sl_machine *m, int blk, int pipe, const sl_loc *l, int64_t bytes,
                     int write) {
  sl_race *r = m->race;
  sl_addr a;
  rc_shadow *sh;
  rc_visit v;
  int64_t pos, ngr;
  size_t g0, g1, c;
  uint32_t u;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || bytes <= 0) return;
  sli_addr(l, &a);
  if ((sh = shadow_of(m, &a, &pos, &ngr)) == NULL) return;
  u = TID(blk, pipe);
  v.m = m; v.a = &a; v.bytes = bytes; v.write = write; v.reported = 0;
  v.vu = VC(r, u);
  v.x.t = u; v.x.c = v.vu[u]; v.x.s = m->site; v.x.atomic = write == 2;
  g0 = (size_t)(pos / GRAIN);
  g1 = (size_t)((pos + bytes - 1) / GRAIN);
  for (c = g0 / CG; c <= g1 / CG; c++) {
    rc_chunk *k = chunk_at(r, sh, c);
    size_t base = c * CG;
    int64_t left = ngr - (int64_t)(c % (size_t)(sh->per ? sh->per : 1)) * CG;
    int ng = ngr == 0 || left >= CG ? CG : (int)left;
    if (k == NULL) return;
    visit_chunk(&v, k, base, ng, g0 > base ? g0 : base,
                g1 < base + CG - 1 ? g1 : base + CG - 1, g0, g1,
                (int)(pos % GRAIN), (int)((pos + bytes - 1) % GRAIN) + 1);
  }
}

/* a signal landed at a with release snap: waits that see it later acquire it.
** SIGNAL_ADD is a read-modify-write: it continues the release sequence, so a
** counter waited for carries the releases of every signal that added to it */
void sli_race_signal(sl_machine *m, const sl_addr *a, int32_t snap, int add) {
  sl_race *r = m->race;
  rc_cell *c;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || snap < 0) return;
  if ((c = cell_at(m, a, 1)) == NULL) return;
  /* SIGNAL_SET joins too: the cell is a 32-byte granule that may hold other
  ** signals, and a wait on one of them must still see its own release */
  (void)add;
  if (c->snap >= 0 && c->snap < r->nsnap) {
    int32_t j = snapshot_blank(r);
    if (j < 0) return;
    memcpy(r->snap + (size_t)j * r->nt, r->snap + (size_t)c->snap * r->nt,
           r->nt * sizeof(uint32_t));
    join(r, r->snap + (size_t)j * r->nt, r->snap + (size_t)snap * r->nt, NONE);
    c->snap = j;
  } else {
    c->snap = snap;
  }
}

/* the largest copy whose reading of signal words is an acquire: flag polls
** read a word or a 32-byte slot; a bulk copy is not a poll */
#define COPY_READ_MAX 1024

/* a copy on pipe of blk landed, having read [a, a + bytes): it saw what the
** signals there left, so its pipe acquires their releases (a flag polled by a
** copy into UB, read by S after a barrier or flag, orders what the signaller
** did before it, as a signal wait does) */
void sli_race_copy_read(sl_machine *m, int blk, int pipe, const sl_addr *a, int64_t bytes) {
  sl_race *r = m->race;
  sl_addr g = *a;
  const rc_cell *c;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || bytes <= 0 || a->buf < 0) return;
  if (bytes > COPY_READ_MAX) return;       /* a flag poll reads a word or a slot */
  for (g.off = a->off - a->off % GRAIN; g.off < a->off + bytes; g.off += GRAIN)
    if ((c = cell_at(m, &g, 0)) != NULL && c->snap >= 0 && c->snap < r->nsnap)
      join(r, VC(r, TID(blk, pipe)), r->snap + (size_t)c->snap * r->nt, NONE);
}

/* S of blk observed the value at a (a satisfied wait): it acquires the last
** signal's release there, or what the flag's last writer knows now */
void sli_race_observe(sl_machine *m, int blk, const sl_addr *a) {
  int i;
  const rc_cell *c;
  if (m->race == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if ((c = cell_at(m, a, 0)) == NULL) return;
  if (c->snap >= 0) sli_race_acquire(m, blk, c->snap);
  for (i = 0; i < SLOTS; i++)
    if (c->w[i].t != NONE) sli_race_acquire_thread(m, blk, c->w[i].t);
}

/* a team barrier (s_only 0: every pipe, drained) or sync (1: S alone) of the
** blocks of PEs first, first + stride, ... (n of them): they all meet */
void sli_race_meet_pes(sl_machine *m, int first, int stride, int n, int s_only) {
  sl_race *r = m->race;
  uint32_t *all, t, t0, nt = s_only ? 1u : TPB;     /* after a quiet: engines too */
  int i, b;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if ((all = calloc(r->nt, sizeof(uint32_t))) == NULL) return;
  for (i = 0; i < n; i++)
    for (b = 0; b < m->block_dim; b++) {
      t0 = TID((first + i * stride) * m->block_dim + b, 0);
      for (t = t0; t < t0 + nt; t++) join(r, all, VC(r, t), NONE);
    }
  for (i = 0; i < n; i++)
    for (b = 0; b < m->block_dim; b++) {
      t0 = TID((first + i * stride) * m->block_dim + b, 0);
      for (t = t0; t < t0 + nt; t++) {
        join(r, VC(r, t), all, NONE);
        VC(r, t)[t]++;
      }
    }
  free(all);
}
