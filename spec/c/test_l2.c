/*
** test_l2.c -- the L2's indexes (core/l2.c) answer as a scan of all ranges
** does: a reference model here keeps the ranges in the same arrays and
** finds overlap, the continued range and the oldest range by scanning them;
** after every access of a random sequence the engine's L2 must hold the same
** ranges (buffer, offset, length, stamp, in the same order) and report the
** same hit bytes. Sequences mix buffers, budgets smaller and larger than an
** access, accesses that continue a range, rewrite part of one (splits, equal
** stamps), accesses of a range's bytes again and empty accesses (through
** sli_l2_xfer's path: 0 bytes).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

#include "check.h"

typedef struct ref {
  int64_t off[SL_L2_RANGES], len[SL_L2_RANGES];
  uint64_t stamp[SL_L2_RANGES], clock;
  int32_t buf[SL_L2_RANGES], n;
  int64_t bytes;
} ref;

static void r_move(ref *c, int i, int j) {
  c->buf[i] = c->buf[j]; c->off[i] = c->off[j]; c->len[i] = c->len[j]; c->stamp[i] = c->stamp[j];
}

static void r_drop(ref *c, int i) { c->bytes -= c->len[i]; r_move(c, i, --c->n); }

static int r_oldest(const ref *c) {
  int i, o = 0;
  for (i = 1; i < c->n; i++) if (c->stamp[i] < c->stamp[o]) o = i;
  return o;
}

static int64_t r_cut(ref *c, int32_t buf, int64_t lo, int64_t hi) {
  int64_t hit = 0;
  int i = 0;
  while (i < c->n) {
    int64_t rlo = c->off[i], rhi = c->off[i] + c->len[i];
    if (c->buf[i] != buf || rhi <= lo || rlo >= hi) { i++; continue; }
    hit += (rhi < hi ? rhi : hi) - (rlo > lo ? rlo : lo);
    if (rlo >= lo && rhi <= hi) { r_drop(c, i); continue; }
    if (rlo < lo && rhi > hi && c->n < SL_L2_RANGES) {
      int t = c->n++;
      r_move(c, t, i);
      c->off[t] = hi; c->len[t] = rhi - hi;
    } else if (rlo < lo && rhi > hi) c->bytes -= rhi - hi;
    if (rlo < lo) { c->bytes -= (rhi < hi ? rhi : hi) - lo; c->len[i] = lo - rlo; }
    else { c->bytes -= hi - rlo; c->off[i] = hi; c->len[i] = rhi - hi; }
    i++;
  }
  return hit;
}

static int r_continued(const ref *c, int32_t buf, int64_t at) {
  int i;
  for (i = 0; i < c->n; i++) if (c->buf[i] == buf && c->off[i] + c->len[i] == at) return i;
  return -1;
}

static int r_overlaps(const ref *c, int32_t buf, int64_t lo, int64_t hi) {
  int i;
  for (i = 0; i < c->n; i++)
    if (c->buf[i] == buf && c->off[i] + c->len[i] > lo && c->off[i] < hi) return 1;
  return 0;
}

static int64_t r_touch(ref *c, int64_t budget, int32_t buf, int64_t off, int64_t n) {
  int64_t hit = 0, lo = off, hi = off + n;
  int i;
  if (n > budget) { off += n - budget; n = budget; }
  if (r_overlaps(c, buf, lo, hi)) hit = r_cut(c, buf, lo, hi);
  i = r_continued(c, buf, off);
  if (i >= 0) c->len[i] += n;
  else {
    if (c->n == SL_L2_RANGES) r_drop(c, r_oldest(c));
    i = c->n++;
    c->buf[i] = buf; c->off[i] = off; c->len[i] = n;
  }
  c->stamp[i] = ++c->clock;
  c->bytes += n;
  while (c->bytes > budget) {
    int o = r_oldest(c);
    int64_t over = c->bytes - budget;
    if (c->len[o] <= over) { r_drop(c, o); continue; }
    c->off[o] += over; c->len[o] -= over; c->bytes -= over;
  }
  return hit;
}

static uint64_t seed = 88172645463325252ull;
static uint64_t rnd(void) { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed; }

/* an empty access as sli_l2_xfer makes it: an MTE3 write of 0 bytes */
static void empty_access(sl_machine *m, int32_t buf, int64_t off) {
  sl_event e;
  sl_ins o;
  memset(&e, 0, sizeof(e));
  memset(&o, 0, sizeof(o));
  e.dst.buf = buf; e.dst.pe = 0; e.dst.off = off;
  m->evs = &e;
  o.ev = 0; o.bytes = 0;
  (void)sli_l2_xfer(m, 0, SL_PIPE_MTE3, &o);
  m->evs = NULL;
}

/* the engine's indexes hold each range once: the recency ring by stamp
** (both ways round), at (when in order) by (buffer, offset) */
static int indexes_ok(const sl_l2 *c) {
  int seen[SL_L2_RANGES] = { 0 }, i, k, ok = 1;
  for (i = c->lnext[SL_L2_RANGES], k = 0; ok && i != SL_L2_RANGES && k <= c->n; i = c->lnext[i], k++) {
    ok &= i < c->n && seen[i]++ == 0 && c->lprev[c->lnext[i]] == i;
    if (c->lnext[i] != SL_L2_RANGES) ok &= c->stamp[i] <= c->stamp[c->lnext[i]];
  }
  ok &= k == c->n && c->lprev[c->lnext[SL_L2_RANGES]] == SL_L2_RANGES;
  if (!ok || !c->sorted) return ok;
  for (i = 0; i < c->n; i++) ok &= seen[c->at[i]]++ == 1;
  for (i = 1; i < c->n; i++) {
    int a = c->at[i - 1], b = c->at[i];
    ok &= c->buf[a] < c->buf[b] || (c->buf[a] == c->buf[b] && c->off[a] < c->off[b]);
  }
  return ok;
}

/* one random sequence; 0 when engine and model parted (reported) */
static int sequence(int trial, int steps) {
  static const int64_t budgets[] = { 1000, 5000, 100000, (int64_t)1 << 40 };
  sl_machine *m = calloc(1, sizeof(*m));
  ref r;
  int nbuf = 1 + (int)(rnd() % 4), empties = rnd() % 3 == 0, s, i, ok = 1;
  int64_t span = 64 + (int64_t)(rnd() % 20000), maxlen = 1 + (int64_t)(rnd() % 3000);
  memset(&r, 0, sizeof(r));
  m->p.n_pes = 1;
  m->p.l2_bytes = budgets[rnd() % 4];
  if (sli_l2_new(m) != SL_OK) { free(m); return 0; }
  sli_l2_reset(m);
  for (s = 0; s < steps && ok; s++) {
    const sl_l2 *c = &m->l2[0];
    int32_t buf = (int32_t)(rnd() % (uint64_t)nbuf);
    int64_t off = (int64_t)(rnd() % (uint64_t)span), n = 1 + (int64_t)(rnd() % (uint64_t)maxlen);
    int64_t h1 = 0, h2 = 0;
    if (rnd() % 4 == 0 && r.n > 0) { i = (int)(rnd() % (uint64_t)r.n); buf = r.buf[i]; off = r.off[i] + r.len[i]; }
    else if (rnd() % 3 == 0 && r.n > 0) {   /* a range's bytes again (l2.c again) */
      i = (int)(rnd() % (uint64_t)r.n);
      buf = r.buf[i]; off = r.off[i]; n = r.len[i] > 0 ? r.len[i] : n;
    }
    if (empties && rnd() % 10 == 0) {
      empty_access(m, buf, off);
      (void)r_touch(&r, m->p.l2_bytes, buf, off, 0);
    } else {
      h1 = sli_l2_read(m, 0, buf, off, n);
      h2 = r_touch(&r, m->p.l2_bytes, buf, off, n);
    }
    ok = h1 == h2 && c->n == r.n && c->bytes == r.bytes;
    for (i = 0; ok && i < r.n; i++)
      ok = c->buf[i] == r.buf[i] && c->off[i] == r.off[i] && c->len[i] == r.len[i] &&
           c->stamp[i] == r.stamp[i];
    ok = ok && indexes_ok(c);
    CHECK(ok, "trial %d step %d: the L2 parted from the scan's model (hit %lld / %lld, "
          "ranges %d / %d)", trial, s, (long long)h1, (long long)h2, (int)c->n, (int)r.n);
  }
  free(m->l2);
  free(m);
  return ok;
}

int main(void) {
  int t;
  for (t = 0; t < 60; t++) sequence(t, 2000);
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail > 0;
}
