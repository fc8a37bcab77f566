/*
** l2.c -- the L2 cache of each PE (die), as the CANN platform ini gives it:
** l2_size bytes in front of HBM, read by the AIV cores at l2_read_rate
** bytes per cycle where HBM gives ddr_read_rate.
**
** The model: an LRU over address ranges per PE with a byte budget of
** l2_bytes. An MTE transfer that writes a PE's GM (a local or a remote
** write: it lands through that PE's L2) and an MTE2 read of the block's own
** PE's GM make their bytes the most recent; bytes past the budget leave,
** least recent first. An MTE2 read of its own PE's GM streams the bytes
** that were in the L2 at l2_read_bytes_per_cycle, the rest at
** mte2_bytes_per_cycle (the HBM rate), and takes HBM bandwidth only for the
** rest. Ranges, not lines: at most SL_L2_RANGES per PE (the least recent
** range leaves whole when a new one finds no room); an access that
** continues a range of the same buffer extends it, so a block streaming
** through a buffer costs one range. The L2
** starts empty at each launch (the launches of a benchmark time the same).
** Remote reads, DMA engines and UB are not cached here.
*/
#include <stdlib.h>
#include <string.h>

#include "sli.h"

/* the state of every PE's L2, NULL when the profile has none (l2_bytes 0) */
int sli_l2_new(sl_machine *m) {
  if (m->p.l2_bytes <= 0) return SL_OK;
  m->l2 = calloc((size_t)m->p.n_pes, sizeof(*m->l2));
  if (m->l2 == NULL) return SL_ENOMEM;
  sli_l2_reset(m);
  return SL_OK;
}

/* forget every PE's L2 (a launch begins) */
void sli_l2_reset(sl_machine *m) {
  int i;
  if (m->l2 == NULL) return;
  for (i = 0; i < m->p.n_pes; i++) {
    sl_l2 *c = &m->l2[i];
    c->n = 0, c->bytes = 0, c->clock = 0, c->nempty = 0, c->sorted = 1;
    c->lnext[SL_L2_RANGES] = c->lprev[SL_L2_RANGES] = SL_L2_RANGES;   /* the ring: its head */
  }
}

#define HEAD SL_L2_RANGES       /* the recency ring's head: lnext[HEAD] is the least recent */

/* range i leaves the recency ring */
static void ring_out(sl_l2 *c, int i) {
  c->lnext[c->lprev[i]] = c->lnext[i];
  c->lprev[c->lnext[i]] = c->lprev[i];
}

/* range i joins the recency ring right after range a (after lprev[HEAD]:
** as the most recent) */
static void ring_in(sl_l2 *c, int a, int i) {
  c->lnext[i] = c->lnext[a];
  c->lprev[i] = (uint8_t)a;
  c->lprev[c->lnext[a]] = (uint8_t)i;
  c->lnext[a] = (uint8_t)i;
}

/* range j, in the ring, takes number i's place there (i is not in it) */
static void ring_rename(sl_l2 *c, int j, int i) {
  c->lnext[i] = c->lnext[j];
  c->lprev[i] = c->lprev[j];
  c->lnext[c->lprev[i]] = (uint8_t)i;
  c->lprev[c->lnext[i]] = (uint8_t)i;
}

/* the place of range v in index a of n ranges (it is there) */
static int ix_find(const uint8_t *a, int n, int v) {
  const uint8_t *p = memchr(a, v, (size_t)n);
  return (int)(p - a);
}

/* range v leaves index a of n ranges */
static void ix_del(uint8_t *a, int n, int v) {
  int p = ix_find(a, n, v);
  memmove(a + p, a + p + 1, (size_t)(n - p - 1));
}

/* range v joins index a of n ranges at place p */
static void ix_ins(uint8_t *a, int n, int p, int v) {
  memmove(a + p + 1, a + p, (size_t)(n - p));
  a[p] = (uint8_t)v;
}

/* the first place of the first n entries of c->at whose range is at or
** after (buf, off) */
static int at_bound(const sl_l2 *c, int n, int32_t buf, int64_t off) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2, r = c->at[mid];
    if (c->buf[r] < buf || (c->buf[r] == buf && c->off[r] < off)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* c->at made anew (no range is empty: the keys are distinct) */
static void at_sort(sl_l2 *c) {
  int i, j;
  for (i = 0; i < c->n; i++) {
    int p = at_bound(c, i, c->buf[i], c->off[i]);
    for (j = i; j > p; j--) c->at[j] = c->at[j - 1];
    c->at[p] = (uint8_t)i;
  }
  c->sorted = 1;
}

/* range j of c becomes range i */
static void move(sl_l2 *c, int i, int j) {
  c->buf[i] = c->buf[j];
  c->off[i] = c->off[j];
  c->len[i] = c->len[j];
  c->stamp[i] = c->stamp[j];
}

/* drop range i of c (the last range takes its number) */
static void drop(sl_l2 *c, int i) {
  int last = c->n - 1;
  c->bytes -= c->len[i];
  if (c->len[i] <= 0) c->nempty--;
  ring_out(c, i);
  if (c->sorted) ix_del(c->at, c->n, i);
  c->n--;
  if (i == last) return;
  move(c, i, last);
  ring_rename(c, last, i);
  if (c->sorted) c->at[ix_find(c->at, c->n, last)] = (uint8_t)i;
}

/* range i was used now: the most recent */
static void used(sl_l2 *c, int i) {
  c->stamp[i] = ++c->clock;
  if (c->lprev[HEAD] == i) return;
  ring_out(c, i);
  ring_in(c, c->lprev[HEAD], i);
}

/* the least recent range of c, the first of them when stamps are equal
** (a range split in two keeps its stamp in both: then they are looked at) */
static int oldest(const sl_l2 *c) {
  int i, o = 0, a = c->lnext[HEAD];
  if (c->n < 2 || c->stamp[a] != c->stamp[c->lnext[a]]) return a;
  for (i = 1; i < c->n; i++)
    if (c->stamp[i] < c->stamp[o]) o = i;
  return o;
}

/* [lo, hi) leaves range i of c, which holds bytes of it: adds them to
** *hit; 1 when the whole range left (the last range took its number) */
static int cut_one(sl_l2 *c, int i, int64_t lo, int64_t hi, int64_t *hit) {
  int64_t rlo = c->off[i], rhi = c->off[i] + c->len[i];
  *hit += (rhi < hi ? rhi : hi) - (rlo > lo ? rlo : lo);
  if (rlo >= lo && rhi <= hi) { drop(c, i); return 1; }
  if (rlo < lo && rhi > hi && c->n < SL_L2_RANGES) {   /* its tail stays too */
    int t = c->n;
    move(c, t, i);                      /* as recent as i: next to it in the ring */
    ring_in(c, i, t);
    if (c->sorted) ix_ins(c->at, t, ix_find(c->at, t, i) + 1, t);
    c->n++;
    c->off[t] = hi;
    c->len[t] = rhi - hi;
  } else if (rlo < lo && rhi > hi) c->bytes -= rhi - hi;   /* no room: the tail leaves */
  if (rlo < lo) { c->bytes -= (rhi < hi ? rhi : hi) - lo; c->len[i] = lo - rlo; }
  else { c->bytes -= hi - rlo; c->off[i] = hi; c->len[i] = rhi - hi; }
  return 0;
}

/* cut with c->at in order (p: where (buf, lo) goes in it): the ranges of
** buf that hold bytes of [lo, hi) lie together in c->at, from the last one
** that starts before lo, so only they are looked at, in the order of cut's
** scan of every range (by number; a dropped range's number goes to the last
** range, looked at next) */
static int64_t cut_sorted(sl_l2 *c, int32_t buf, int64_t lo, int64_t hi, int p) {
  uint8_t s[SL_L2_RANGES];
  int64_t hit = 0;
  int k = 0, j, m, r;
  if (p > 0 && c->buf[r = c->at[p - 1]] == buf && c->off[r] + c->len[r] > lo) s[k++] = (uint8_t)r;
  for (j = p; j < c->n && c->buf[r = c->at[j]] == buf && c->off[r] < hi; j++) s[k++] = (uint8_t)r;
  while (k > 0) {
    for (m = 0, j = 1; j < k; j++) if (s[j] < s[m]) m = j;   /* the least number */
    r = s[m];
    s[m] = s[--k];
    if (!cut_one(c, r, lo, hi, &hit)) continue;
    for (j = 0; j < k; j++) if (s[j] == c->n) s[j] = (uint8_t)r;   /* the last one moved */
  }
  return hit;
}

/* [lo, hi) of buf leaves c; the bytes of it that were there. p: where
** (buf, lo) goes in c->at when it is in order */
static int64_t cut(sl_l2 *c, int32_t buf, int64_t lo, int64_t hi, int p) {
  int64_t hit = 0;
  int i = 0;
  if (c->sorted) return cut_sorted(c, buf, lo, hi, p);
  while (i < c->n) {
    int64_t rlo = c->off[i], rhi = c->off[i] + c->len[i];
    if (c->buf[i] != buf || rhi <= lo || rlo >= hi) { i++; continue; }
    if (!cut_one(c, i, lo, hi, &hit)) i++;
  }
  return hit;
}

/* with c->at in order: the range of buf that ends at at, -1 none; p: where
** (buf, at) goes in c->at (it is the one that starts last before at) */
static int ends_at(const sl_l2 *c, int32_t buf, int64_t at, int p) {
  int r;
  if (p == 0) return -1;
  r = c->at[p - 1];
  return c->buf[r] == buf && c->off[r] + c->len[r] == at ? r : -1;
}

/* the first range of c that buf's bytes from at continue, -1 none */
static int continued(const sl_l2 *c, int32_t buf, int64_t at) {
  int i;
  if (c->sorted) return ends_at(c, buf, at, at_bound(c, c->n, buf, at));
  for (i = 0; i < c->n; i++)
    if (c->buf[i] == buf && c->off[i] + c->len[i] == at) return i;
  return -1;
}

/* does any range of c hold bytes of [lo, hi) of buf (lo < hi)? *cont:
** continued(c, buf, at) when none does. With c->at in order (p: where
** (buf, lo) goes in it) the ranges of buf are disjoint and none is empty:
** only the last one that starts before lo and the first one that starts at
** or after it can hold such bytes */
static int overlaps(const sl_l2 *c, int32_t buf, int64_t lo, int64_t hi, int64_t at,
                    int p, int *cont) {
  int i, any = 0;
  if (c->sorted) {
    if (p > 0) { i = c->at[p - 1]; any |= c->buf[i] == buf && c->off[i] + c->len[i] > lo; }
    if (p < c->n) { i = c->at[p]; any |= c->buf[i] == buf && c->off[i] < hi; }
    *cont = any ? -1 : at == lo ? ends_at(c, buf, at, p) : continued(c, buf, at);
    return any;
  }
  *cont = -1;
  for (i = 0; i < c->n; i++) {
    int64_t rlo, rhi;
    if (c->buf[i] != buf) continue;
    rlo = c->off[i];
    rhi = rlo + c->len[i];
    any |= rhi > lo && rlo < hi;
    if (rhi == at && *cont < 0) *cont = i;
  }
  return any;
}

/* with c->at in order (p: where (buf, lo) goes in it): the range that holds
** exactly [lo, hi) of buf when no range of buf ends at lo, else -1. An access
** of it again (a small put's source and target, each time) would cut it
** whole, find no range to continue and append it anew as the last range */
static int again(const sl_l2 *c, int32_t buf, int64_t lo, int64_t hi, int p) {
  int r;
  if (p == c->n) return -1;
  r = c->at[p];
  if (c->buf[r] != buf || c->off[r] != lo || c->len[r] != hi - lo) return -1;
  return ends_at(c, buf, lo, p) < 0 ? r : -1;
}

/* what cut's drop of range r and append's range of the same bytes leave
** (again): r and the last range swap numbers, in the ring and at as well; the
** last number returned */
static int relast(sl_l2 *c, int r) {
  int last = c->n - 1, a, b;
  int32_t buf = c->buf[r];
  int64_t off = c->off[r], len = c->len[r];
  uint64_t stamp = c->stamp[r];
  if (r == last) return r;
  move(c, r, last);
  c->buf[last] = buf, c->off[last] = off, c->len[last] = len, c->stamp[last] = stamp;
  ring_out(c, r);                       /* as drop(r) and append: last's place is r's, */
  ring_rename(c, last, r);              /* last the most recent */
  ring_in(c, c->lprev[HEAD], last);
  a = ix_find(c->at, c->n, r), b = ix_find(c->at, c->n, last);
  c->at[a] = (uint8_t)last, c->at[b] = (uint8_t)r;
  return last;
}

/* a new range (buf, off) finds room in c: when c is full the least recent
** range leaves. p: where (buf, off) goes in c->at when it is in order,
** returned as it is after */
static int make_room(sl_l2 *c, int32_t buf, int64_t off, int p) {
  int o;
  if (c->n < SL_L2_RANGES) return p;
  o = oldest(c);
  if (c->sorted && (c->buf[o] < buf || (c->buf[o] == buf && c->off[o] < off))) p--;
  drop(c, o);
  return p;
}

/* the new range (buf, off, n) as range c->n; p: where (buf, off) goes in
** c->at when it is in order */
static int append(sl_l2 *c, int32_t buf, int64_t off, int64_t n, int p) {
  int i = c->n;
  if (n <= 0) c->nempty++, c->sorted = 0;   /* at: till none is empty */
  else if (c->sorted) ix_ins(c->at, i, p, i);
  ring_in(c, c->lprev[HEAD], i);
  c->buf[i] = buf;
  c->off[i] = off;
  c->len[i] = n;
  c->n++;
  return i;
}

/* bytes [off, off + n) of buf on PE pe become the L2's most recent;
** returns how many of them were there */
static int64_t touch(sl_machine *m, int pe, int32_t buf, int64_t off, int64_t n) {
  sl_l2 *c = &m->l2[pe];
  int64_t budget = m->p.l2_bytes, hit = 0, lo = off, hi = off + n;
  int i, p = 0;
  if (n > budget) { off += n - budget; n = budget; }   /* only the last bytes stay */
  if (!c->sorted && c->nempty == 0) at_sort(c);
  if (n <= 0) c->sorted = 0;            /* an empty access: every range looked at */
  if (c->sorted) p = at_bound(c, c->n, buf, lo);
  if (c->sorted && off == lo && (i = again(c, buf, lo, hi, p)) >= 0) {
    hit = n;                            /* its bytes leave and come back */
    c->bytes -= n;
    i = relast(c, i);
  } else {
    if (overlaps(c, buf, lo, hi, off, p, &i)) {   /* bytes of it were there: they leave first */
      hit = cut(c, buf, lo, hi, p);     /* (it leaves c->at before p as it was) */
      i = c->sorted && off == lo ? ends_at(c, buf, off, p) : continued(c, buf, off);
    }
    if (c->sorted && off != lo) p = at_bound(c, c->n, buf, off);
    if (i >= 0) {                       /* it continues a range */
      if (c->len[i] <= 0 && c->len[i] + n > 0) c->nempty--;
      c->len[i] += n;
    } else i = append(c, buf, off, n, make_room(c, buf, off, p));
  }
  used(c, i);
  c->bytes += n;
  while (c->bytes > budget) {           /* least recent first */
    int o = oldest(c);
    int64_t over = c->bytes - budget;
    if (c->len[o] <= over) { drop(c, o); continue; }
    c->off[o] += over;
    c->len[o] -= over;
    c->bytes -= over;
  }
  return hit;
}

/* an MTE transfer o of block blk's pipe starts: its GM bytes pass the L2;
** returns the bytes of an MTE2 read of the block's own PE that hit */
int64_t sli_l2_xfer(sl_machine *m, int blk, int pipe, const sl_ins *o) {
  const sl_event *e = &m->evs[o->ev];
  if (pipe == SL_PIPE_MTE2) {
    if (o->path != SL_PATH_LOCAL || e->src.buf < 0 || e->src.pe != m->blocks[blk].pe) return 0;
    return touch(m, e->src.pe, e->src.buf, e->src.off, o->bytes);
  }
  if (e->dst.buf >= 0 && e->dst.pe >= 0 && e->dst.pe < m->p.n_pes)
    touch(m, e->dst.pe, e->dst.buf, e->dst.off, o->bytes);
  return 0;
}

/* bytes [off, off + n) of buffer buf on PE pe were read or written through
** the L2 (a pipelined chain's chunks outside the flow solver, chain.c) */
void sli_l2_touch(sl_machine *m, int pe, int32_t buf, int64_t off, int64_t n) {
  if (m->l2 != NULL && n > 0) (void)touch(m, pe, buf, off, n);
}

/* bytes [off, off + n) of buffer buf on PE pe are read through the L2 (a
** pipelined chain's ghost read, chain.c); returns how many of them hit */
int64_t sli_l2_read(sl_machine *m, int pe, int32_t buf, int64_t off, int64_t n) {
  return m->l2 != NULL && n > 0 ? touch(m, pe, buf, off, n) : 0;
}
