/*
** sync.c -- synchronisation: hard-event flags between pipes, pipe barriers,
** signals and their waiters, quiet/fence, barrier_all and sync_all.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

static const char *const ev_names[SL_NEVENTS] = {
  "S_V", "S_MTE2", "S_MTE3", "V_S", "V_MTE2", "V_MTE3", "MTE2_S", "MTE2_V",
  "MTE2_MTE3", "MTE3_S", "MTE3_V", "MTE3_MTE2"
};
/* source and destination pipe of each event */
static const int ev_src[SL_NEVENTS] = {
  SL_PIPE_S, SL_PIPE_S, SL_PIPE_S, SL_PIPE_V, SL_PIPE_V, SL_PIPE_V,
  SL_PIPE_MTE2, SL_PIPE_MTE2, SL_PIPE_MTE2, SL_PIPE_MTE3, SL_PIPE_MTE3,
  SL_PIPE_MTE3
};
static const int ev_dst[SL_NEVENTS] = {
  SL_PIPE_V, SL_PIPE_MTE2, SL_PIPE_MTE3, SL_PIPE_S, SL_PIPE_MTE2, SL_PIPE_MTE3,
  SL_PIPE_S, SL_PIPE_V, SL_PIPE_MTE3, SL_PIPE_S, SL_PIPE_V, SL_PIPE_MTE2
};
static const char *const pipe_names[SL_NPIPES] = { "S", "V", "MTE2", "MTE3" };

/* the pipe that waits for hard event ev (-1: no such event) */
int sl_event_dst(int ev) { return ev >= 0 && ev < SL_NEVENTS ? ev_dst[ev] : -1; }

/* name of a hard event */
const char *sl_event_name(int ev) {
  return (ev >= 0 && ev < SL_NEVENTS) ? ev_names[ev] : "?";
}

/* hard event by name, -1 when not one of the 12 legal AIV events */
int sl_event_find(const char *name) {
  int i;
  for (i = 0; i < SL_NEVENTS; i++) if (strcmp(name, ev_names[i]) == 0) return i;
  return -1;
}

/* name of a pipe */
const char *sl_pipe_name(int pipe) {
  if (pipe == SL_PIPE_DMA) return "DMA";
  return (pipe >= 0 && pipe < SL_NPIPES) ? pipe_names[pipe] : "ALL";
}

/* pipe by name; SL_NPIPES for "ALL", -1 when unknown */
int sl_pipe_find(const char *name) {
  int i;
  if (strncmp(name, "PIPE_", 5) == 0) name += 5;
  if (strcmp(name, "ALL") == 0) return SL_NPIPES;
  for (i = 0; i < SL_NPIPES; i++) if (strcmp(name, pipe_names[i]) == 0) return i;
  return -1;
}

/* queue a SET or WAIT of token tok, of flag (event * SL_NEVENT_IDS + id), on pipe */
static int queue_flag(sl_machine *m, sl_block *b, int pipe, int kind, int32_t tok, int flag) {
  sl_ins *o;
  int32_t op = sli_op_new(m, kind, &o);
  if (op < 0) return sli_err(m, SL_ENOMEM, 0, "not enough memory for an instruction");
  o->tok = tok;
  o->path = (int16_t)flag;              /* which flag (chain.c reads a set's) */
  return sli_enqueue(m, (int)(b - m->blocks), pipe, op);
}

/* SetFlag: the flag fires when the source pipe's earlier work ends */
int sli_flag_set(sl_machine *m, sl_block *b, int ev, int id) {
  uint16_t bit = (uint16_t)(1u << id);
  int src = ev_src[ev];
  if ((b->flagset[ev] & bit) && (m->p.check & SL_CHECK_SYNC)) {
    char msg[96];
    snprintf(msg, sizeof(msg), "set_flag(%s, %d): the flag is already set (set twice "
             "without a wait_flag)", ev_names[ev], id);
    return sli_report_flag(m, (int)(b - m->blocks), src, ev * SL_NEVENT_IDS + id, msg);
  }
  if (b->flagset[ev] & bit)
    return sli_err(m, SL_EFLAG, 1,
        "set_flag(%s, %d) on PE %d block %d: the flag is already set "
        "(set twice without a wait_flag)", ev_names[ev], id, (int)b->pe,
        (int)b->b);
  if (sli_tok_new(m, &b->tok[ev][id]) != SL_OK)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for a flag");
  b->flagset[ev] |= bit;
  sli_race_set_flag(m, (int)(b - m->blocks), ev, id, src);
  if (src == SL_PIPE_S) {               /* S's earlier work has ended: now */
    m->toks[b->tok[ev][id]].fired = 1;
    m->toks[b->tok[ev][id]].t = b->t;
    return SL_OK;
  }
  return queue_flag(m, b, src, OP_SET, b->tok[ev][id], ev * SL_NEVENT_IDS + id);
}

/* WaitFlag: the destination pipe holds until the flag fired */
int sli_flag_wait(sl_machine *m, sl_block *b, int ev, int id) {
  uint16_t bit = (uint16_t)(1u << id);
  int dst = ev_dst[ev];
  int32_t tok;
  if (!(b->flagset[ev] & bit) && (m->p.check & SL_CHECK_SYNC)) {
    char msg[120];
    snprintf(msg, sizeof(msg), "wait_flag(%s, %d) without a matching set_flag: the %s "
             "pipe would wait forever", ev_names[ev], id, pipe_names[dst]);
    return sli_report_flag(m, (int)(b - m->blocks), dst, ev * SL_NEVENT_IDS + id, msg);
  }
  if (!(b->flagset[ev] & bit))
    return sli_err(m, SL_EFLAG, 1,
        "wait_flag(%s, %d) on PE %d block %d without a matching set_flag: "
        "the %s pipe would wait forever", ev_names[ev], id, (int)b->pe,
        (int)b->b, pipe_names[dst]);
  b->flagset[ev] &= (uint16_t)~bit;
  tok = b->tok[ev][id];
  sli_race_wait_flag(m, (int)(b - m->blocks), ev, id, dst);
  if (dst != SL_PIPE_S) return queue_flag(m, b, dst, OP_WAIT, tok, ev * SL_NEVENT_IDS + id);
  if (!m->toks[tok].fired) {            /* S waits for the source pipe */
    m->toks[tok].wblk = (int)(b - m->blocks);
    m->toks[tok].wpipe = SL_PIPE_S;
    b->wtok = tok;
    b->wflag = ev * SL_NEVENT_IDS + id;
    b->state = B_FLAG;
    b->wsite = m->site;
    b->wahead = b->ahead;               /* ahead: where its catch-up would resume */
    b->wat = b->t;
    b->wtie = 0;
    b->wfired = 0;
    return SL_OK;
  }
  if (b->t < m->toks[tok].t) b->t = m->toks[tok].t;
  sli_free_give(&m->ftok, tok);
  return SL_OK;
}

/* the flag a parked wait_flag of S waits for fired at now, with the time t
** its pipe's work landed: the block resumes. Parked while ahead (wahead), it
** resumes where the wait's catch-up would have when the firing comes before
** that place, with what a caught-up wait would have found there (the flag
** fired: the issue cost after the flag's time, not before a park). Before
** that place is known (wtie 0: wait_inline is still handling what the
** catch-up would have), the firing comes before it
** (sli_flag_ahead_step resumes the block there) */
void sli_flag_woken(sl_machine *m, int blk, sl_time t, sl_time now) {
  sl_block *b = &m->blocks[blk];
  if (b->wahead) {
    sl_time c = (t > b->wat ? t : b->wat) + m->ps.issue;
    if (b->wtie == 0) {
      b->wfired = 1;
      b->wclock = c;
      b->wtok = -1;
      return;
    }
    b->wahead = 0;
    if (sli_handling_before(m, now, b->wat, b->wtie)) {
      sli_wake_key(m, blk, b->wat, b->wtie, c);
      return;
    }
  }
  sli_wake(m, blk, t > b->t ? t : b->t);
}

/* wait_inline of block blk, parked ahead by a wait_flag of S with its place
** not yet known, is to handle the key of time t (other_wake: another block's
** wake-up). The catch-up (sl_must_yield) would have stopped at a key past
** the wait's clock without yielding: the block goes on there (1: it resumes
** inline, fired; 0: it waits on, parked). It would have yielded at another
** block's wake-up by then: the place is that wake-up's tie, and a block
** fired before it resumes there (its wake-up goes to the queue: the caller
** must not hold it) */
int sli_flag_ahead_step(sl_machine *m, int blk, sl_time t, int other_wake) {
  sl_block *b = &m->blocks[blk];
  if (t > b->wat) {
    b->wahead = 0;
    if (!b->wfired) return 0;
    if (b->t < b->wclock) b->t = b->wclock;
    return 1;
  }
  if (!other_wake) return 0;
  b->wtie = sli_block_tie(m, blk);
  if (b->wfired) {
    b->wahead = 0;
    sli_wake_key(m, blk, b->wat, b->wtie, b->wclock);
  }
  return 0;
}

/* check an event and id given by the user */
static int check_event(sl_machine *m, int ev, int id) {
  if (ev < 0 || ev >= SL_NEVENTS)
    return sli_err(m, SL_EARG, 1, "not one of the 12 AIV hard events");
  if (id < 0 || id >= SL_NEVENT_IDS)
    return sli_err(m, SL_EARG, 2, "event id must be in 0..7, got %d", id);
  return SL_OK;
}

/* set_flag from kernel code */
int sl_set_flag(sl_machine *m, int blk, int ev, int id) {
  sl_block *b = &m->blocks[blk];
  int st = check_event(m, ev, id);
  if (st == SL_OK) st = sli_flag_set(m, b, ev, id);
  b->t += m->ps.issue;
  sli_queue_only(m, blk);
  return st;
}

/* wait_flag from kernel code */
int sl_wait_flag(sl_machine *m, int blk, int ev, int id) {
  sl_block *b = &m->blocks[blk];
  int st = check_event(m, ev, id);
  if (st == SL_OK) st = sli_flag_wait(m, b, ev, id);
  b->t += m->ps.issue;
  sli_queue_only(m, blk);
  return st;
}

/* PipeBarrier<pipe>: S waits for that pipe (SL_NPIPES = all) */
int sl_pipe_barrier(sl_machine *m, int blk, int pipe) {
  if (pipe < 0 || pipe > SL_NPIPES)
    return sli_err(m, SL_EARG, 1, "unknown pipe");
  sli_race_barrier(m, blk, pipe);
  if (pipe == SL_PIPE_S) { m->blocks[blk].t += m->ps.pipe_barrier; return SL_OK; }
  return sli_drain(m, blk, pipe == SL_NPIPES ? SL_DRAIN_ALL : 1 << pipe, ACT_BARRIER);
}

/* quiet: every transfer this block issued has completed, as aclshmem_quiet
** documents: its pipes and its DMA engines (PipeBarrier(ALL) alone leaves
** the engines going) */
int sl_quiet(sl_machine *m, int blk) {
  sli_race_quiet(m, blk);
  return sli_drain(m, blk, SL_DRAIN_ALL | SL_DRAIN_ENGINES, ACT_BARRIER);
}

/* fence: same as quiet in CANN SHMEM (ordering and completion) */
int sl_fence(sl_machine *m, int blk) {
  return sl_quiet(m, blk);
}

/* signals and flags steer control flow: their memory must hold bytes; the
** error of one that holds none (sli_backed tests) */
int sli_unbacked(sl_machine *m, const sl_loc *l, int arg, const char *fn) {
  if (l->buf < 0)
    return sli_err(m, SL_EUNBACKED, arg, "%s: UB that holds no data in a timing-only run; "
                   "allocate it k:ub(dtype, n, \"backed\")", fn);
  return sli_err(m, SL_EUNBACKED, arg, "%s: buffer '%s' holds no data in a timing-only run; "
                 "allocate signals and flags backed (m:malloc(dtype, n, name, \"backed\"))",
                 fn, m->bufs[l->buf].name);
}

/* a signal location must be an integer GM/symmetric element */
static int check_sig(sl_machine *m, const sl_loc *sig, int arg, const sl_block *b,
                     int write) {
  int st;
  if (sig->buf < 0) return sli_err(m, SL_EARG, arg, "signal must be in GM, not UB");
  if (sl_dtype_isfloat((sl_dtype)sig->dtype))
    return sli_err(m, SL_EARG, arg, "signal must be an integer element, got %s",
                   sl_dtype_name((sl_dtype)sig->dtype));
  st = sli_bounds(m, sig, (int64_t)sl_dtype_size((sl_dtype)sig->dtype), write,
                  write ? "signal_op" : "signal_wait_until", arg, b->pe, b->b);
  return st == SL_OK ? sli_backed(m, sig, arg, write ? "signal_op" : "signal_wait_until") : st;
}

/* aclshmemx_signal_op: the write lands after the path latency; with
** after_mte3 (put_signal) it is ordered after the block's transfers */
int sl_signal_op(sl_machine *m, int blk, const sl_loc *sig, int64_t v,
                 int op, int pe, int after_mte3) {
  sl_block *b = &m->blocks[blk];
  sl_loc l = *sig;
  sl_event *e;
  int32_t id;
  int st;
  if (op != SL_SIGNAL_SET && op != SL_SIGNAL_ADD)
    return sli_err(m, SL_EARG, 3, "signal op must be SIGNAL_SET or SIGNAL_ADD");
  if (pe < 0 || pe >= m->p.n_pes)
    return sli_err(m, SL_EARG, 4, "PE %d out of range 0..%d", pe, m->p.n_pes - 1);
  l.pe = pe;
  if (sig->buf < 0) return sli_err(m, SL_EARG, 1, "signal must be in GM, not UB");
  if (m->bufs[sig->buf].space != SL_SPACE_SYM && pe != b->pe)
    return sli_err(m, SL_EARG, 1, "a remote signal must be a symmetric address");
  if ((st = check_sig(m, &l, 1, b, 1)) != SL_OK) return st;
  if ((e = sli_event_new(m, EV_SIGNAL, blk, &id)) == NULL)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for an event");
  e->op = op;
  e->val = v;
  if (after_mte3) sli_race_barrier(m, blk, SL_NPIPES);
  e->snap = m->race != NULL ? sli_race_release(m, blk) : -1;
  sli_addr(&l, &e->dst);
  b->pev = id;
  if (after_mte3) return sli_drain(m, blk, SL_DRAIN_ALL, ACT_SIGNAL);
  sli_signal_send(m, blk);
  if (sl_signal_ahead(m)) sli_queue_only(m, blk);
  return SL_OK;
}

/* 1 when a signal_op (not put_signal's) may run while its block is ahead
** (sl_must_yield): it reads nothing another block writes (its checks read
** the buffer's shape) and what it does is stamped with the block's clock,
** a landing of its own block's; unless the machine traces, as its trace
** record is made when it is called */
int sl_signal_ahead(const sl_machine *m) { return !SLI_TRACING(m); }

/* send the block's prepared signal from its S pipe now */
void sli_signal_send(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  const sl_event *e = &m->evs[b->pev];
  int pe = e->dst.pe, path = pe == b->pe ? SL_PATH_LOCAL : sl_path(m, b->pe, pe);
  sl_time land;
  b->t += m->ps.signal;
  land = b->t + m->ps.alpha[path];
  if (land > b->inflight) b->inflight = land;
  if (SLI_TRACING(m)) sli_trace(m, b->t, land, b->pe, b->b, 2, path, 4, pe, -1);
  if (sli_schedule(m, land, b->pev) != SL_OK) m->oom = 1;
}

/* cost of one poll of a signal from block b */
static sl_time poll_cost(const sl_machine *m, const sl_block *b, int pe) {
  int path = sl_path(m, b->pe, pe);
  return m->ps.poll + (path == SL_PATH_LOCAL ? 0 : 2 * sli_alpha(m, path));
}

/* aclshmem_signal_wait_until: returns at once when satisfied, else parks */
int sl_signal_wait(sl_machine *m, int blk, const sl_loc *sig, int cmp,
                   int64_t v, int64_t *got) {
  sl_block *b = &m->blocks[blk];
  sl_addr a;
  int64_t cur;
  int st;
  if ((cmp < 0 || cmp >= SL_NCMP) && (m->p.check & SL_CHECK_SYNC)) {
    char msg[96];
    snprintf(msg, sizeof(msg), "signal_wait_until: comparison code %d out of range "
             "(CMP_EQ..CMP_LE = 0..5); returns -1 at once", cmp);
    *got = -1;
    return sli_report(m, SL_R_SYNC, sig, 0, 0, blk, SL_PIPE_S, msg);
  }
  if (cmp < 0 || cmp >= SL_NCMP)
    return sli_err(m, SL_EARG, 2, "comparison must be one of CMP_EQ..CMP_LE (0..5), "
                   "got %d", cmp);
  if ((st = check_sig(m, sig, 1, b, 0)) != SL_OK) return st;
  sli_addr(sig, &a);
  cur = sl_get_int((sl_dtype)sig->dtype, sli_ptr(m, &a), 0);
  b->t += poll_cost(m, b, sig->pe);
  if (sli_cmp_int(cmp, cur, v)) { *got = cur; sli_race_observe(m, blk, &a); return SL_OK; }
  b->state = B_SIGNAL;
  b->wsite = m->site;
  b->w = a;
  b->wperiod = 0;
  b->wcmp = cmp;
  b->wval = v;
  if (sli_park(m, blk, &a) != SL_OK)
    return sli_err(m, SL_ENOMEM, 0, "not enough memory for a waiter");
  return SL_OK;
}

/* poll a GM flag into UB until it satisfies cmp (see sl.h) */
int sl_poll_until(sl_machine *m, int blk, const sl_loc *flag, const sl_loc *ub,
                  int64_t elems, int cmp, int64_t v, int64_t *got) {
  sl_block *b = &m->blocks[blk];
  int64_t bytes;
  int st, path;
  if (cmp < 0 || cmp >= SL_NCMP)
    return sli_err(m, SL_EARG, 4, "comparison must be one of CMP_EQ..CMP_LE (0..5)");
  if (flag->buf < 0) return sli_err(m, SL_EARG, 1, "flag must be in GM");
  if (ub->buf >= 0 || ub->pe != b->pe || ub->core != b->b)
    return sli_err(m, SL_EARG, 2, "UB tensor of this block expected");
  if (flag->dtype != ub->dtype || sl_dtype_isfloat((sl_dtype)flag->dtype))
    return sli_err(m, SL_EARG, 2, "flag and UB must be of one integer dtype");
  if (elems <= 0) return sli_err(m, SL_EARG, 3, "count must be positive");
  bytes = sl_nbytes(elems, (int64_t)sl_dtype_size((sl_dtype)flag->dtype));
  if ((st = sli_bounds(m, flag, bytes, 0, "wait_signal_value", 1, b->pe, b->b)))
    return st;
  if ((st = sli_bounds(m, ub, bytes, 1, "wait_signal_value", 2, b->pe, b->b)))
    return st;
  if ((st = sli_backed(m, flag, 1, "wait_signal_value")) ||
      (st = sli_backed(m, ub, 2, "wait_signal_value")))
    return st;
  /* one poll: issue, the MTE2 copy, the MTE2_S flag, GetValue */
  path = sl_path(m, b->pe, flag->pe);
  b->wperiod = m->ps.issue * 3 + m->ps.mte_setup + m->ps.alpha[path] + m->ps.scalar +
               (sl_time)llround((double)bytes * 1000.0 /
                                (m->p.mte2_bytes_per_cycle * m->p.core_ghz));
  sli_addr(flag, &b->w);
  sli_addr(ub, &b->wub);
  b->wcmp = cmp;
  b->wval = v;
  b->wbytes = bytes;
  b->wsite = m->site;
  if ((st = sli_drain(m, blk, 1 << SL_PIPE_MTE2, ACT_POLL)) != SL_OK) return st;
  if (b->state == B_RUN) { *got = b->ret; b->retkind = SL_RES_NONE; }
  return m->oom ? sli_err(m, SL_ENOMEM, 0, "not enough memory for a waiter") : SL_OK;
}

/* the polls of wait_signal_value begin (the MTE2 pipe is free): the first
** one that sees the value ends it; a satisfied wait leaves it in b->ret */
void sli_poll_resume(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  sl_time first = (b->t > b->pipe[SL_PIPE_MTE2] ? b->t : b->pipe[SL_PIPE_MTE2]) + b->wperiod;
  int64_t cur = sl_get_int((sl_dtype)b->w.dtype, sli_ptr(m, &b->w), 0);
  if (sli_cmp_int(b->wcmp, cur, b->wval)) {   /* the first poll sees it */
    sli_lazy_touch(m, &b->wub, b->wbytes);
    memcpy(sli_ptr(m, &b->wub), sli_ptr(m, &b->w), (size_t)b->wbytes);
    sli_init_write(m, &b->wub, b->wbytes);
    b->t = b->pipe[SL_PIPE_MTE2] = b->done[SL_PIPE_MTE2] = first;
    sli_race_observe(m, blk, &b->w);
    b->wperiod = 0;
    b->retkind = SL_RES_INT;
    b->ret = cur;
    return;
  }
  b->state = B_SIGNAL;
  b->wfirst = first;
  if (sli_park(m, blk, &b->w) != SL_OK) m->oom = 1;
}

/* block blk waits on the element at a: it joins the list of a's PE copy */
int sli_park(sl_machine *m, int blk, const sl_addr *a) {
  sl_buf *bf = &m->bufs[a->buf];
  if (bf->wait_heads == NULL) {
    int p, copies = bf->space == SL_SPACE_HOST ? 1 : m->p.n_pes;
    bf->wait_heads = malloc((size_t)copies * sizeof(*bf->wait_heads));
    if (bf->wait_heads == NULL) return SL_ENOMEM;
    for (p = 0; p < copies; p++) bf->wait_heads[p] = -1;
  }
  m->blocks[blk].wnext = bf->wait_heads[a->pe];
  m->blocks[blk].wlen = (int64_t)sl_dtype_size((sl_dtype)a->dtype);
  m->blocks[blk].wset = 0;
  bf->wait_heads[a->pe] = blk;
  bf->waiters++;
  return SL_OK;
}

/* forget every waiter (a launch ends or is abandoned) */
void sli_unpark_all(sl_machine *m) {
  int i, p;
  for (i = 0; i < m->nbufs; i++) {
    sl_buf *bf = &m->bufs[i];
    if (bf->waiters == 0 || bf->wait_heads == NULL) continue;
    for (p = 0; p < (bf->space == SL_SPACE_HOST ? 1 : m->p.n_pes); p++) bf->wait_heads[p] = -1;
    bf->waiters = 0;
  }
}

/* a write landed on [a, a+bytes): wake the waiters it satisfies */
void sli_notify(sl_machine *m, const sl_addr *a, int64_t bytes, sl_time t,
                int from_blk) {
  sl_buf *bf = &m->bufs[a->buf];
  int32_t *link;
  if (bf->wait_heads == NULL) return;
  link = &bf->wait_heads[a->pe];
  while (*link >= 0) {
    int32_t i = *link;
    sl_block *b = &m->blocks[i];
    if (b->w.off < a->off + bytes && a->off < b->w.off + b->wlen) {
      const uint8_t *p = sli_ptr(m, &b->w);
      int64_t cur = 0;
      if (b->wset ? sli_ws_eval(m, i, &b->ws, &b->wcur, &cur, 0)
                  : sli_cmp_int(b->wcmp, cur = sl_get_int((sl_dtype)b->w.dtype, p, 0), b->wval)) {
        sl_time at = t + poll_cost(m, b, b->w.pe);
        if (b->wperiod > 0) {          /* the first poll completing after t */
          sl_time k = t <= b->wfirst ? 0
                    : (t - b->wfirst + b->wperiod - 1) / b->wperiod;
          at = b->wfirst + k * b->wperiod;
          sli_lazy_touch(m, &b->wub, b->wbytes);
          memcpy(sli_ptr(m, &b->wub), p, (size_t)b->wbytes);
          sli_init_write(m, &b->wub, b->wbytes);
          b->pipe[SL_PIPE_MTE2] = b->done[SL_PIPE_MTE2] = at;
          b->wperiod = 0;
        }
        const sl_block *f = &m->blocks[from_blk];
        *link = b->wnext;
        b->wnext = -1;
        bf->waiters--;
        b->retkind = b->wset && b->ws.mode == SL_WS_ALL ? SL_RES_NONE : SL_RES_INT;
        b->ret = cur;
        sli_trace(m, t, at, f->pe, f->b, 3, 0, 0, b->pe, b->b);
        if (!b->wset) sli_race_observe(m, i, &b->w);   /* a set observed its own */
        sli_wake(m, i, at);
        continue;
      }
    }
    link = &b->wnext;
  }
}

/* ceil(log2(n)) */
static int log2up(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

/* what a barrier of size PEs from PE first to PE last costs after its last
** arrival: base + 2 * ceil(log2(size)) alphas of the widest path it spans */
sl_time sli_barrier_cost(const sl_machine *m, int first, int last, int size) {
  int dom = sli_domain(&m->p);
  int path = first / dom != last / dom ? SL_PATH_RDMA : size > 1 ? SL_PATH_HCCS : SL_PATH_LOCAL;
  return m->ps.barrier_base + (sl_time)log2up(size) * 2 * sli_alpha(m, path);
}

/* barrier_all: every block of every PE (quiet first) */
int sl_barrier_all(sl_machine *m, int blk) {
  m->blocks[blk].wsite = m->site;
  return sli_drain(m, blk, SL_DRAIN_ALL | SL_DRAIN_ENGINES, ACT_BAR_ALL);
}

/* a drained block arrives at barrier_all; the last one releases all */
void sli_arrive_all(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  b->state = B_BARRIER;
  if (b->t > m->bar_tmax) m->bar_tmax = b->t;
  if (++m->bar_count == m->nb) {
    sl_time at = m->bar_tmax + sli_barrier_cost(m, 0, m->p.n_pes - 1, m->p.n_pes);
    int i;
    m->bar_count = 0;
    m->bar_tmax = 0;
    if (m->bar_noquiet) sli_race_meet_s(m);    /* in-flight copies stay unordered */
    else sli_race_meet(m, -1);
    m->bar_noquiet = 0;
    for (i = 0; i < m->nb; i++)
      if (m->blocks[i].state == B_BARRIER) sli_wake(m, i, at);
  }
}

/* aclshmem_sync_all: every block of every PE meets, without the quiet of
** barrier_all: what its pipes still have in flight is not waited for, and
** racecheck orders only what S did before (it shares barrier_all's count) */
int sl_shmem_sync_all(sl_machine *m, int blk) {
  m->blocks[blk].wsite = m->site;
  m->bar_noquiet = 1;
  sli_arrive_all(m, blk);
  return SL_OK;
}

/* sync_all: every block of this PE (pipes drained first) */
int sl_sync_all(sl_machine *m, int blk) {
  m->blocks[blk].wsite = m->site;
  return sli_drain(m, blk, SL_DRAIN_ALL, ACT_SYNC_ALL);
}

/* a drained block arrives at sync_all; the last of its PE releases them */
void sli_arrive_pe(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  int pe = b->pe;
  b->state = B_SYNC;
  if (b->t > m->sync_tmax[pe]) m->sync_tmax[pe] = b->t;
  if (++m->sync_count[pe] == m->block_dim) {
    sl_time at = m->sync_tmax[pe] + m->ps.sync_all;
    int i, first = pe * m->block_dim;
    m->sync_count[pe] = 0;
    m->sync_tmax[pe] = 0;
    sli_race_meet(m, pe);
    for (i = first; i < first + m->block_dim; i++)
      if (m->blocks[i].state == B_SYNC) sli_wake(m, i, at);
  }
}
