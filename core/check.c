/*
** check.c -- checked runs in the manner of mssanitizer / compute-sanitizer:
** reports (deduplicated, counted), memcheck and synccheck records, initcheck's
** shadow of initialised bytes, and the clean end of a stuck checked launch.
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

/* initcheck shadow bytes of an address (NULL when none) */
uint8_t *sli_init_ptr(sl_machine *m, const sl_addr *a) {
  if (a->buf < 0) {
    size_t i = (size_t)a->pe * (size_t)m->p.cores + (size_t)a->core;
    return m->ubinit && m->ubinit[i] ? m->ubinit[i] + a->off : NULL;
  }
  if (m->bufs[a->buf].init == NULL) return NULL;
  return m->bufs[a->buf].init + m->bufs[a->buf].stride * a->pe + a->off;
}

/* bytes at a were written */
void sli_init_write(sl_machine *m, const sl_addr *a, int64_t bytes) {
  uint8_t *p;
  if (!(m->p.check & SL_CHECK_INIT) || (p = sli_init_ptr(m, a)) == NULL) return;
  memset(p, 1, (size_t)bytes);
}

/* bytes at a are read: report the first never-written byte, once per read */
int sli_init_read(sl_machine *m, const sl_addr *a, int64_t bytes, int blk, int pipe,
                  int32_t site) {
  const uint8_t *p;
  const void *z;
  if (!(m->p.check & SL_CHECK_INIT) || (p = sli_init_ptr(m, a)) == NULL) return SL_OK;
  z = memchr(p, 0, (size_t)bytes);
  if (z != NULL) {
    sl_loc l;
    int32_t saved = m->site;
    char msg[96];
    int64_t first = (const uint8_t *)z - p;
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
