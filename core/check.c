/*
** check.c -- checked runs in the manner of mssanitizer / compute-sanitizer:
** reports (deduplicated, counted), memcheck and synccheck records, initcheck's
** shadow of initialised bytes (sparse: what was touched), and the clean end of a stuck checked launch.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

/* the Lua line of the primitive being run */
void sl_set_site(sl_machine *m, int32_t site) { m->site = site; }

/* number of distinct reports */
size_t sl_report_count(const sl_machine *m) { return m->nreports; }

/* report i */
const sl_report *sl_report_get(const sl_machine *m, size_t i) {
  return i < m->nreports ? &m->reports[i] : NULL;
}

/* forget the reports */
void sl_report_clear(sl_machine *m) { m->nreports = 0; }

/* the same report: a synccheck one by kind, line, pipe, flag and signal
** (its text names the state of the moment: block counts, queues, values),
** any other by kind, line, other line, buffer, access and message */
static int same_report(const sl_report *o, const sl_report *r) {
  if (o->kind != r->kind || o->site != r->site || o->buf != r->buf) return 0;
  if (r->kind == SL_R_SYNC) return o->pipe == r->pipe && o->flag == r->flag;
  return o->o_site == r->o_site && o->write == r->write && strcmp(o->msg, r->msg) == 0;
}

/* add r, or count it again when the same report exists */
static int add_report(sl_machine *m, const sl_report *r) {
  size_t i;
  for (i = 0; i < m->nreports; i++) {
    if (same_report(&m->reports[i], r)) {
      m->reports[i].count++;
      return SL_ESKIP;
    }
  }
  if (m->nreports == m->capreports) {
    size_t cap = m->capreports ? m->capreports * 2 : 16;
    sl_report *nr = realloc(m->reports, cap * sizeof(*nr));
    if (nr == NULL) return SL_ESKIP;           /* counted as skipped anyway */
    m->reports = nr;
    m->capreports = cap;
  }
  m->reports[m->nreports] = *r;
  m->reports[m->nreports].count = 1;
  m->nreports++;
  return SL_ESKIP;
}

/* the fields every report has: what block blk (pipe, or -1) touched at l */
static void report_base(sl_machine *m, sl_report *r, int kind, const sl_loc *l,
                        int64_t bytes, int write, int blk, int pipe) {
  memset(r, 0, sizeof(*r));
  r->kind = kind;
  r->write = write;
  r->buf = l ? l->buf : -1;
  r->space = l == NULL ? -1 : l->buf < 0 ? SL_SPACE_UB : m->bufs[l->buf].space;
  r->pe = l ? l->pe : -1;
  r->off = l ? l->off : 0;
  r->cap = l ? l->cap : 0;
  r->bytes = bytes;
  r->pipe = pipe;
  r->site = m->site;
  r->o_site = -1;
  r->o_pe = r->o_block = r->o_pipe = -1;
  r->flag = -1;
  if (blk >= 0 && blk < m->nb) {
    r->by_pe = m->blocks[blk].pe;
    r->by_block = m->blocks[blk].b;
    r->frame = sl_block_frame(m, blk);
    r->time_us = (double)(m->blocks[blk].t - m->t0) / SL_PS_PER_US;
  } else {
    r->by_pe = r->by_block = r->frame = -1;
  }
}

/* record a report about an access of block blk (pipe, or -1) to l */
int sli_report(sl_machine *m, int kind, const sl_loc *l, int64_t bytes, int write,
               int blk, int pipe, const char *msg) {
  sl_report r;
  report_base(m, &r, kind, l, bytes, write, blk, pipe);
  if (msg) snprintf(r.msg, sizeof(r.msg), "%.*s", (int)sizeof(r.msg) - 1, msg);
  return add_report(m, &r);
}

/* a synccheck report about flag (event * SL_NEVENT_IDS + id) of block blk's pipe */
int sli_report_flag(sl_machine *m, int blk, int pipe, int flag, const char *msg) {
  sl_report r;
  report_base(m, &r, SL_R_SYNC, NULL, 0, 0, blk, pipe);
  r.flag = flag;
  snprintf(r.msg, sizeof(r.msg), "%.*s", (int)sizeof(r.msg) - 1, msg);
  return add_report(m, &r);
}

/* a race of blk's pipe with an earlier access of oblk's opipe at line osite */
void sli_report_race(sl_machine *m, const sl_loc *l, int64_t bytes, int write, int blk,
                     int pipe, int oblk, int opipe, int32_t osite, int owrite) {
  sl_report r;
  report_base(m, &r, SL_R_RACE, l, bytes, write, blk, pipe);
  r.o_pe = m->blocks[oblk].pe;
  r.o_block = m->blocks[oblk].b;
  r.o_pipe = opipe;
  r.o_site = osite;
  r.o_write = owrite;
  add_report(m, &r);
}

/* initcheck's shadow: per 4 KiB chunk nothing written (NULL), everything
** written (BM_ALL) or one byte per byte, so it costs what was touched */
#define BM_CHUNK 4096
struct sl_bytemap {
  size_t n;                 /* chunks */
  uint8_t **ch;
};
static uint8_t bm_all_mark;
#define BM_ALL (&bm_all_mark)

/* a shadow of bytes bytes, nothing written */
sl_bytemap *sli_bmap_new(int64_t bytes) {
  sl_bytemap *b = calloc(1, sizeof(*b));
  if (b != NULL && sli_bmap_grow(b, bytes) != SL_OK) { free(b); b = NULL; }
  return b;
}

/* free a shadow */
void sli_bmap_free(sl_bytemap *b) {
  size_t i;
  if (b == NULL) return;
  for (i = 0; i < b->n; i++) if (b->ch[i] != BM_ALL) free(b->ch[i]);
  free(b->ch);
  free(b);
}

/* cover bytes bytes (the new ones not written) */
int sli_bmap_grow(sl_bytemap *b, int64_t bytes) {
  size_t n = (size_t)((bytes + BM_CHUNK - 1) / BM_CHUNK);
  uint8_t **nc;
  if (n <= b->n && b->ch != NULL) return SL_OK;
  nc = realloc(b->ch, (n ? n : 1) * sizeof(*nc));
  if (nc == NULL) return SL_ENOMEM;
  if (n > b->n) memset(nc + b->n, 0, (n - b->n) * sizeof(*nc));
  b->ch = nc;
  if (n > b->n) b->n = n;
  return SL_OK;
}

/* mark [off, off + len) written (v = 1) or not (v = 0) */
static int bm_set(sl_bytemap *b, int64_t off, int64_t len, int v) {
  uint8_t *want = v ? BM_ALL : NULL;
  while (len > 0) {
    size_t c = (size_t)(off / BM_CHUNK);
    int64_t at = off % BM_CHUNK, k = BM_CHUNK - at < len ? BM_CHUNK - at : len;
    uint8_t **p = &b->ch[c];
    if (k == BM_CHUNK) {
      if (*p != BM_ALL) free(*p);
      *p = want;
    } else if (*p != want) {
      if (*p == NULL || *p == BM_ALL) {
        uint8_t *map = malloc(BM_CHUNK);
        if (map == NULL) return SL_ENOMEM;
        memset(map, *p == BM_ALL, BM_CHUNK);
        *p = map;
      }
      memset(*p + at, v, (size_t)k);
      if (v ? memchr(*p, 0, BM_CHUNK) == NULL : memchr(*p, 1, BM_CHUNK) == NULL) {
        free(*p);
        *p = want;
      }
    }
    off += k;
    len -= k;
  }
  return SL_OK;
}

/* the first byte of [off, off + len) never written, relative to off; -1: none */
static int64_t bm_first_unset(const sl_bytemap *b, int64_t off, int64_t len) {
  int64_t done = 0;
  while (done < len) {
    const uint8_t *p = b->ch[(size_t)((off + done) / BM_CHUNK)];
    int64_t at = (off + done) % BM_CHUNK;
    int64_t k = BM_CHUNK - at < len - done ? BM_CHUNK - at : len - done;
    if (p == NULL) return done;
    if (p != BM_ALL) {
      const uint8_t *z = memchr(p + at, 0, (size_t)k);
      if (z != NULL) return done + (z - (p + at));
    }
    done += k;
  }
  return -1;
}

/* the initcheck shadow of an address and the offset in it (NULL when none) */
static sl_bytemap *init_map(sl_machine *m, const sl_addr *a, int64_t *at) {
  if (!(m->p.check & SL_CHECK_INIT)) return NULL;
  if (a->buf < 0) {
    size_t i = (size_t)a->pe * (size_t)m->p.cores + (size_t)a->core;
    *at = a->off;
    return m->ubinit ? m->ubinit[i] : NULL;
  }
  *at = m->bufs[a->buf].stride * a->pe + a->off;
  return m->bufs[a->buf].init;
}

/* bytes at a were written (initcheck on: sli_init_write) */
void sli_init_write_any(sl_machine *m, const sl_addr *a, int64_t bytes) {
  int64_t at;
  sl_bytemap *b = init_map(m, a, &at);
  if (b != NULL && bm_set(b, at, bytes, 1) != SL_OK) m->oom = 1;
}

/* bytes at a hold nothing any more (a new UB allocation) */
void sli_init_clear(sl_machine *m, const sl_addr *a, int64_t bytes) {
  int64_t at;
  sl_bytemap *b = init_map(m, a, &at);
  if (b != NULL && bm_set(b, at, bytes, 0) != SL_OK) m->oom = 1;
}

/* bytes at a are read: report the first never-written byte, once per read */
int sli_init_read(sl_machine *m, const sl_addr *a, int64_t bytes, int blk, int pipe,
                  int32_t site) {
  int64_t at, first;
  const sl_bytemap *b = init_map(m, a, &at);
  if (b != NULL && (first = bm_first_unset(b, at, bytes)) >= 0) {
    sl_loc l;
    int32_t saved = m->site;
    char msg[96];
    memset(&l, 0, sizeof(l));
    l.buf = a->buf; l.pe = a->pe; l.core = a->core; l.dtype = a->dtype;
    l.off = a->off;
    l.cap = a->buf < 0 ? 0 : m->bufs[a->buf].bytes;
    snprintf(msg, sizeof(msg), "first uninitialised byte at +%lld", (long long)first);
    m->site = site;
    sli_report(m, SL_R_UNINIT, &l, bytes, 0, blk, pipe, msg);
    m->site = saved;
    return SL_ESKIP;
  }
  return SL_OK;
}

/* the host wrote bytes at l */
void sl_mark_init(sl_machine *m, const sl_loc *l, int64_t bytes) {
  sl_addr a;
  sli_addr(l, &a);
  sli_init_write(m, &a, bytes);
}

/* synccheck at a block's end: flags it left set */
void sli_check_block_done(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  int ev, id;
  if (!(m->p.check & SL_CHECK_SYNC)) return;
  for (ev = 0; ev < SL_NEVENTS; ev++) {
    if (b->flagset[ev] == 0) continue;
    for (id = 0; id < SL_NEVENT_IDS; id++) {
      if (b->flagset[ev] & (1u << id)) {
        char msg[96];
        int32_t saved = m->site;
        snprintf(msg, sizeof(msg), "flag %s id %d left set at kernel end "
                 "(a set_flag without its wait_flag)", sl_event_name(ev), id);
        m->site = b->flagsite[ev][id];  /* the set_flag, not the last primitive */
        sli_report_flag(m, blk, -1, ev * SL_NEVENT_IDS + id, msg);
        m->site = saved;
      }
    }
  }
}

/* the synccheck line of stuck block i (finished: blocks that ended before the
** salvage); returns its flag (event * SL_NEVENT_IDS + id) or -1 */
static int stuck_line(sl_machine *m, int i, int finished, char *line, size_t size) {
  sl_block *b = &m->blocks[i];
  if (b->state == B_BARRIER) {
    snprintf(line, size, "barrier_all not reached by every block: %d of %d "
             "arrived, %d finished without it", (int)m->bar_count, m->nb, finished);
  } else if (b->state == B_SYNC) {
    snprintf(line, size, "sync_all not reached by every block of PE %d: %d of "
             "%d arrived", (int)b->pe, (int)m->sync_count[b->pe], m->block_dim);
  } else if (b->state == B_TEAM) {
    int n = snprintf(line, size, "team barrier not reached by every block of its group: ");
    sli_team_what(m, b, line + n, size - (size_t)n);
  } else if (b->state == B_SIGNAL && b->wset) {
    int n = snprintf(line, size, "signal wait can never be satisfied, nothing pending: ");
    sli_ws_what(m, b, line + n, size - (size_t)n);
  } else if (b->state == B_SIGNAL) {
    const sl_buf *bf = &m->bufs[b->w.buf];
    int64_t cur = sl_get_int((sl_dtype)bf->dtype,
                             bf->data + bf->stride * b->w.pe + b->w.off, 0);
    snprintf(line, size, "signal wait can never be satisfied: %s[%lld] on PE "
             "%d %s %lld, current value %lld, nothing pending",
             bf->name, (long long)(b->w.off / (int64_t)sl_dtype_size(bf->dtype)),
             (int)b->w.pe, sl_cmp_name(b->wcmp), (long long)b->wval, (long long)cur);
  } else if (b->state == B_READY || b->state == B_IDLE || b->state == B_RUN) {
    snprintf(line, size, "block stopped at the virtual-time limit");
  } else {                              /* its pipes were still at work */
    int n = snprintf(line, size, "block stopped at the virtual-time limit waiting for ");
    sli_wait_what(m, i, line + n, size - (size_t)n);
  }
  return b->state == B_FLAG ? b->wflag : -1;
}

/* a stuck checked launch: one synccheck report per waiting block, then every
** block ends where it is and the launch can be finished normally */
void sl_launch_salvage(sl_machine *m) {
  int i, finished = 0;
  char line[256];
  for (i = 0; i < m->nb; i++) finished += m->blocks[i].state == B_DONE;
  for (i = 0; i < m->nb; i++) {
    sl_block *b = &m->blocks[i];
    int flag;
    if (b->state == B_DONE) continue;
    flag = stuck_line(m, i, finished, line, sizeof(line));
    m->site = b->state == B_READY ? -1 : b->wsite;
    if (flag >= 0) sli_report_flag(m, i, -1, flag, line);
    else sli_report(m, SL_R_SYNC, NULL, 0, 0, i, -1, line);
    b->state = B_DONE;
    b->end = b->t;
    m->ndone++;
  }
  sli_clear_events(m);
  sli_unpark_all(m);
  sli_res_clear(m, 0);                  /* flows and queued instructions of the stuck pipes */
  sli_pools_reset(m);
}
