/*
** race.c -- racecheck: accesses judged by happens-before, not by the order a
** run happened to take. Every block has four threads (its pipes S, V, MTE2,
** MTE3), each with a vector clock. Edges: program order within a pipe; an
** issue from S carries what S has acquired (not S's own stores); set_flag /
** wait_flag; PipeBarrier; a signal wait that observed the signalling write
** (or a polled flag that observed its writer); barrier_all; sync_all.
** A shadow per 32-byte granule holds the last write and the last read, with
** the bytes each touched (so neighbours sharing a granule do not collide); an
** access unordered with a conflicting one is a race, reported once per
** (line, other line, buffer) with a count.
*/
#include <stdlib.h>
#include <string.h>

#include "sli.h"

#define NONE 0xffffffffu
#define GRAIN 32
#define SLOTS 2                  /* writers (and readers) kept per granule */

/* one access remembered by a granule: thread, clock, bytes, Lua line */
typedef struct rc_acc {
  uint32_t t, c, m;
  int32_t s;
  int32_t atomic;
} rc_acc;

/* the shadow of one 32-byte granule: two writers and two readers (slices of
** two blocks often meet inside a granule), and the release of the last signal */
typedef struct rc_cell {
  rc_acc w[SLOTS], r[SLOTS];
  int32_t snap;
} rc_cell;

struct sl_race {
  uint32_t nt;              /* threads: 4 per block */
  uint32_t *vc;             /* [nt][nt] */
  uint32_t *snap;           /* flag snapshots [capsnap][nt] */
  int32_t nsnap, capsnap;
  int32_t *fsnap;           /* [block][event][id] -> snapshot */
  rc_cell **gm;             /* per buffer: [copies][granules] */
  size_t *gmn;
  int ngm;
  rc_cell **ub;             /* per core */
  size_t *ubn;
};

#define TID(blk, pipe) ((uint32_t)(blk) * 4u + (uint32_t)(pipe))
#define VC(r, t) ((r)->vc + (size_t)(t) * (r)->nt)

/* free everything of racecheck */
void sli_race_free(sl_machine *m) {
  sl_race *r = m->race;
  int i;
  size_t c, ncore;
  if (r == NULL) return;
  ncore = (size_t)m->p.n_pes * (size_t)m->p.cores;
  for (i = 0; i < r->ngm; i++) free(r->gm[i]);
  if (r->ub) for (c = 0; c < ncore; c++) free(r->ub[c]);
  free(r->gm); free(r->gmn); free(r->ub); free(r->ubn);
  free(r->vc); free(r->snap); free(r->fsnap);
  free(r);
  m->race = NULL;
}

/* reset every cell of a shadow */
static void cells_clear(rc_cell *c, size_t n) {
  memset(c, 0xff, n * sizeof(*c));
}

/* a new launch: fresh clocks, shadows forgotten (launches are ordered) */
int sli_race_begin(sl_machine *m) {
  sl_race *r = m->race;
  uint32_t t;
  int i;
  size_t c, ncore = (size_t)m->p.n_pes * (size_t)m->p.cores;
  if (!(m->p.check & SL_CHECK_RACE)) return SL_OK;
  if ((size_t)m->nb * 4 > 4096)
    return sli_err(m, SL_EARG, 2, "racecheck follows at most 1024 blocks in all "
                   "(%d PEs x %d blocks asked)", m->p.n_pes, m->block_dim);
  if (r == NULL) {
    r = m->race = calloc(1, sizeof(*r));
    if (r == NULL) return SL_ENOMEM;
    r->ub = calloc(ncore, sizeof(*r->ub));
    r->ubn = calloc(ncore, sizeof(*r->ubn));
    if (!r->ub || !r->ubn) { sli_race_free(m); return SL_ENOMEM; }
  }
  r->nt = (uint32_t)m->nb * 4;
  free(r->vc); free(r->fsnap);
  r->vc = calloc((size_t)r->nt * r->nt, sizeof(uint32_t));
  r->fsnap = malloc((size_t)m->nb * SL_NEVENTS * SL_NEVENT_IDS * sizeof(int32_t));
  free(r->snap);
  r->snap = NULL;
  r->nsnap = r->capsnap = 0;
  if (!r->vc || !r->fsnap) { sli_race_free(m); return SL_ENOMEM; }
  for (t = 0; t < r->nt; t++) VC(r, t)[t] = 1;
  for (i = 0; i < r->ngm; i++) if (r->gm[i]) cells_clear(r->gm[i], r->gmn[i]);
  for (c = 0; c < ncore; c++) if (r->ub[c]) cells_clear(r->ub[c], r->ubn[c]);
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

/* threads [first, first + n) all meet: each knows all, then moves on */
static void meet(sl_race *r, uint32_t first, uint32_t n) {
  uint32_t t, *all = calloc(r->nt, sizeof(uint32_t));
  if (all == NULL) return;
  for (t = first; t < first + n; t++) join(r, all, VC(r, t), NONE);
  for (t = first; t < first + n; t++) {
    memcpy(VC(r, t), all, r->nt * sizeof(uint32_t));
    VC(r, t)[t]++;
  }
  free(all);
}

/* PipeBarrier(ALL) / quiet / fence (pipe = SL_NPIPES), or S waits for a pipe */
void sli_race_barrier(sl_machine *m, int blk, int pipe) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if (pipe == SL_NPIPES) { meet(r, TID(blk, 0), 4); return; }
  join(r, VC(r, TID(blk, SL_PIPE_S)), VC(r, TID(blk, pipe)), NONE);
  VC(r, TID(blk, pipe))[TID(blk, pipe)]++;
}

/* barrier_all (pe < 0) or sync_all of one PE: everyone there meets */
void sli_race_meet(sl_machine *m, int pe) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if (pe < 0) meet(r, 0, r->nt);
  else meet(r, TID(pe * m->block_dim, 0), (uint32_t)m->block_dim * 4);
}

/* a signal write released by S of blk: its snapshot (-1: none) */
int32_t sli_race_release(sl_machine *m, int blk) {
  sl_race *r = m->race;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE)) return -1;
  return snapshot(r, TID(blk, SL_PIPE_S));
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

/* the cells of [off, off + bytes) of an address, growing the shadow */
static rc_cell *cells(sl_machine *m, const sl_addr *a, int64_t bytes, size_t *n) {
  sl_race *r = m->race;
  rc_cell **slot;
  size_t *len, need, first;
  if (a->buf < 0) {
    size_t c = (size_t)a->pe * (size_t)m->p.cores + (size_t)a->core;
    slot = &r->ub[c];
    len = &r->ubn[c];
    need = (size_t)((m->ubcap[c] + GRAIN - 1) / GRAIN);
    first = (size_t)(a->off / GRAIN);
  } else {
    const sl_buf *b = &m->bufs[a->buf];
    size_t per = (size_t)((b->bytes + GRAIN - 1) / GRAIN);
    if (a->buf >= r->ngm) {
      int n2 = m->nbufs;
      rc_cell **ng = realloc(r->gm, (size_t)n2 * sizeof(*ng));
      size_t *nn;
      if (ng == NULL) return NULL;
      r->gm = ng;
      nn = realloc(r->gmn, (size_t)n2 * sizeof(*nn));
      if (nn == NULL) return NULL;
      r->gmn = nn;
      memset(r->gm + r->ngm, 0, (size_t)(n2 - r->ngm) * sizeof(*ng));
      memset(r->gmn + r->ngm, 0, (size_t)(n2 - r->ngm) * sizeof(*nn));
      r->ngm = n2;
    }
    slot = &r->gm[a->buf];
    len = &r->gmn[a->buf];
    need = per * (size_t)(b->space == SL_SPACE_HOST ? 1 : m->p.n_pes);
    first = per * (size_t)a->pe + (size_t)(a->off / GRAIN);
  }
  if (*len < need) {
    rc_cell *nc = realloc(*slot, need * sizeof(rc_cell));
    if (nc == NULL) return NULL;
    cells_clear(nc + *len, need - *len);
    *slot = nc;
    *len = need;
  }
  *n = (size_t)((a->off + bytes + GRAIN - 1) / GRAIN - a->off / GRAIN);
  return *slot + first;
}

/* report a race of the access by thread u with the earlier one (ot, os) */
static void race(sl_machine *m, const sl_addr *a, int64_t bytes, int write,
                 uint32_t u, uint32_t ot, int32_t os, int owrite) {
  sl_loc l;
  int blk = (int)(u / 4);
  memset(&l, 0, sizeof(l));
  l.buf = a->buf; l.pe = a->pe; l.core = a->core; l.off = a->off;
  l.cap = a->buf < 0 ? 0 : m->bufs[a->buf].bytes;
  sli_report_race(m, &l, bytes, write, blk, (int)(u % 4), (int)(ot / 4), (int)(ot % 4),
                  os, owrite);
}

/* the bytes of granule i (of n, the access starting lo bytes into the first
** granule and ending hi bytes into the last) as a mask */
static uint32_t grain_mask(size_t i, size_t n, int lo, int hi) {
  uint32_t m = 0xffffffffu;
  if (i == 0) m &= 0xffffffffu << lo;
  if (i == n - 1 && hi < GRAIN) m &= 0xffffffffu >> (GRAIN - hi);
  return m;
}

/* remember access x in one of the slots (oldest first): bytes it covers
** leave the others; with every slot taken, the oldest merges into x */
static void remember(rc_acc *slot, const rc_acc *x) {
  int i, n = 0;
  for (i = 0; i < SLOTS; i++) {         /* drop what x covers, keep the order */
    if (slot[i].t == NONE) continue;
    slot[i].m &= ~x->m;
    if (slot[i].m != 0) slot[n++] = slot[i];
  }
  for (i = n; i < SLOTS; i++) slot[i].t = NONE;
  if (n < SLOTS) { slot[n] = *x; return; }
  {
    uint32_t old = slot[0].m;
    for (i = 1; i < SLOTS; i++) slot[i - 1] = slot[i];
    slot[SLOTS - 1] = *x;
    slot[SLOTS - 1].m |= old;
  }
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

/* an access by pipe of blk to [a, a + bytes): check it, then record it;
** write = 2 is an atomic accumulate (unordered atomics do not race) */
void sli_race_access(sl_machine *m, int blk, int pipe, const sl_loc *l, int64_t bytes,
                     int write) {
  sl_race *r = m->race;
  sl_addr a;
  rc_cell *c;
  size_t i, n;
  uint32_t u, *vu;
  int reported = 0, lo, hi;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || bytes <= 0) return;
  sli_addr(l, &a);
  if ((c = cells(m, &a, bytes, &n)) == NULL) return;
  lo = (int)(a.off % GRAIN);
  hi = (int)((a.off + bytes - 1) % GRAIN) + 1;
  u = TID(blk, pipe);
  vu = VC(r, u);
  for (i = 0; i < n; i++, c++) {
    rc_acc x;
    x.t = u; x.c = vu[u]; x.m = grain_mask(i, n, lo, hi); x.s = m->site;
    x.atomic = write == 2;
    if (!reported) {
      const rc_acc *o = conflict(c->w, u, vu, x.m, write == 2);
      int owrite = 1;
      if (o == NULL && write) { o = conflict(c->r, u, vu, x.m, 0); owrite = 0; }
      if (o != NULL) {
        race(m, &a, bytes, write, u, o->t, o->s, owrite);
        reported = 1;
      }
    }
    if (write) {
      int j;
      remember(c->w, &x);
      for (j = 0; j < SLOTS; j++) {
        c->r[j].m &= ~x.m;
        if (c->r[j].m == 0) c->r[j].t = NONE;
      }
    } else {
      remember(c->r, &x);
    }
  }
}

/* a signal landed at a with release snap: waits that see it later acquire it.
** SIGNAL_ADD is a read-modify-write: it continues the release sequence, so a
** counter waited for carries the releases of every signal that added to it */
void sli_race_signal(sl_machine *m, const sl_addr *a, int32_t snap, int add) {
  sl_race *r = m->race;
  size_t n;
  rc_cell *c;
  if (r == NULL || !(m->p.check & SL_CHECK_RACE) || snap < 0) return;
  if ((c = cells(m, a, 1, &n)) == NULL) return;
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

/* S of blk observed the value at a (a satisfied wait): it acquires the last
** signal's release there, or what the flag's last writer knows now */
void sli_race_observe(sl_machine *m, int blk, const sl_addr *a) {
  size_t n;
  int i;
  rc_cell *c;
  if (m->race == NULL || !(m->p.check & SL_CHECK_RACE)) return;
  if ((c = cells(m, a, 1, &n)) == NULL) return;
  if (c->snap >= 0) sli_race_acquire(m, blk, c->snap);
  for (i = 0; i < SLOTS; i++)
    if (c->w[i].t != NONE) sli_race_acquire_thread(m, blk, c->w[i].t);
}

/* a team barrier (s_only 0: every pipe, drained) or sync (1: S alone) of the
** blocks of PEs first, first + stride, ... (n of them): they all meet */
void sli_race_meet_pes(sl_machine *m, int first, int stride, int n, int s_only) {
  sl_race *r = m->race;
  uint32_t *all, t, t0, nt = s_only ? 1u : 4u;
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
