/*
** pipe.c -- the instruction queues of an AIV core's V, MTE2 and MTE3 pipes.
**
** The S pipe (the block's Lua code) issues instructions into the queues and
** goes on; each pipe runs its queue in order: a transfer streams as a flow
** (flow.c) and lands setup + path latency after its last byte, while the
** pipe takes the next one; a vector op runs for its fixed time; set_flag
** fires when its pipe reaches it, with the time all earlier work of that
** pipe has landed; wait_flag holds its pipe until the flag fired. When S must
** wait for a pipe (wait_flag to S, pipe_barrier, quiet, barrier_all, the end
** of the kernel) the block parks and resumes when the pipes get there.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

/* an instruction is half a cache line (the pool is 64-byte aligned) */
_Static_assert(sizeof(sl_ins) == 32, "sl_ins is 32 bytes");
_Static_assert(sizeof(sl_mark) == 64, "sl_mark is 64 bytes");

/* grow a pool of items of size sz; 0 when out of memory */
static int pool_grow(void **items, int32_t *cap, size_t sz) {
  int32_t nc = *cap ? 2 * *cap : 256;
  void *ni = realloc(*items, (size_t)nc * sz);
  if (ni == NULL) return 0;
  *items = ni;
  *cap = nc;
  return 1;
}

/* forget every op, token and mark and the merge's held key (a launch begins or ends) */
void sli_pools_reset(sl_machine *m) {
  sli_lazy_reset(m);
  sli_chain_reset(m);
  m->nops = m->ntoks = m->nmarks = 0;
  m->fop.n = m->ftok.n = m->fmark.n = 0;
  m->nkq = m->kqh = m->kbusy = 0;
  m->hold = 0;                          /* merge: no key held, none taken yet */
  m->mt = 0;
  m->mseq = 0;
}

/* a new op of kind (its index, and *o to fill), -1 when out of memory */
int sli_op_new(sl_machine *m, int kind, sl_ins **o) {
  int32_t i;
  if ((i = sli_free_take(&m->fop)) < 0) {
    if (m->nops == m->capops) {        /* aligned: an instruction in one cache line */
      int32_t cap = m->capops ? 2 * m->capops : 256;
      if (!sli_free_room(&m->fop, cap) ||
          !sli_pool_grow64(&m->ops_mem, (void **)&m->ops, m->nops, cap, sizeof(*m->ops)))
        return -1;
      m->capops = cap;
    }
    i = m->nops++;
  }
  if (sli_prefetching(m)) sli_free_prefetch(&m->fop, m->ops, sizeof(*m->ops));
  *o = &m->ops[i];
  memset(*o, 0, sizeof(**o));
  (*o)->kind = kind;
  (*o)->next = -1;
  (*o)->ev = -1;                        /* (tok: the same field) */
  return i;
}

/* a new unfired token; SL_OK or SL_ENOMEM */
int sli_tok_new(sl_machine *m, int32_t *tok) {
  int32_t i;
  if ((i = sli_free_take(&m->ftok)) < 0) {
    if (m->ntoks == m->captoks) {
      int32_t cap = m->captoks ? 2 * m->captoks : 256;
      if (!sli_free_room(&m->ftok, cap) ||
          !sli_pool_grow64(&m->toks_mem, (void **)&m->toks, m->ntoks, cap, sizeof(*m->toks)))
        return SL_ENOMEM;
      m->captoks = cap;
    }
    i = m->ntoks++;
  }
  if (sli_prefetching(m)) sli_free_prefetch(&m->ftok, m->toks, sizeof(*m->toks));
  m->toks[i].fired = 0;
  m->toks[i].wblk = m->toks[i].wpipe = -1;
  m->toks[i].t = 0;
  *tok = i;
  return SL_OK;
}

/* give a token back */
static void tok_free(sl_machine *m, int32_t tok) {
  sli_free_give(&m->ftok, tok);
}

static void kick_at(sl_machine *m, int blk, int pipe, sl_time t, int hold);

_Static_assert(SL_NPUB <= 32, "pubset has a bit for each entry of pub");

/* the lowest entry of the pub table not in use (some is) */
static int pub_free(uint32_t set) {
#if defined(__GNUC__)
  return __builtin_ctz(~set);
#else
  int i = 0;
  for (; set & 1; set >>= 1) i++;
  return i;
#endif
}

/* a pending XFER / VEC of the block with landing record ev: its UB bytes go
** in the table (beyond it, counted in pover); the record names the entry,
** so its landing finds it without a search (ops of two pipes land out of
** the order they were issued in: a search went through half the table) */
static void pub_add(sl_machine *m, sl_block *b, int32_t ev) {
  int64_t lo, hi;
  int i;
  if (!sli_ub_span(&m->evs[ev], &lo, &hi)) return;
  if (b->pubset == (uint32_t)(((uint64_t)1 << SL_NPUB) - 1) || lo < 0 || hi > INT32_MAX) {
    b->pover++;
    return;
  }
  i = pub_free(b->pubset);
  b->pubset |= (uint32_t)1 << i;
  b->pub[i].ev = ev;
  b->pub[i].lo = (int32_t)lo;
  b->pub[i].hi = (int32_t)hi;
  m->evs[ev].pubi = i;
}

/* the pending op of record ev landed: its UB bytes leave the table */
static void pub_drop(sl_machine *m, sl_block *b, int32_t ev) {
  int64_t lo, hi;
  int i = m->evs[ev].pubi;
  if (i >= 0 && i < SL_NPUB && (b->pubset >> i & 1) && b->pub[i].ev == ev) {
    b->pubset &= ~((uint32_t)1 << i);
    return;
  }
  if (sli_ub_span(&m->evs[ev], &lo, &hi)) b->pover--;
}

static void merge(sl_machine *m, int blk, int pipe, sl_time issue);

/* append op to block blk's pipe; the pipe starts it if it is idle (when the
** block runs ahead of other keys, at its clock through an EV_PIPE) */
int sli_enqueue(sl_machine *m, int blk, int pipe, int32_t op) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe), kind = m->ops[op].kind;
  m->ops[op].issue = b->t;
  if (kind == OP_XFER || kind == OP_VEC) {
    b->nq[q]++;
    pub_add(m, b, m->ops[op].ev);
    if (kind == OP_XFER && b->qhead[q] >= 0 && b->qhead[q] == b->qtail[q] &&
        b->kick[q] == m->ops[b->qhead[q]].issue && b->ahead)
      merge(m, blk, pipe, b->t);
  }
  if (b->qhead[q] < 0) { b->qhead[q] = b->qtail[q] = op; }
  else { m->ops[b->qtail[q]].next = op; b->qtail[q] = op; }
  if (!b->busy[q] && b->qhead[q] == op) {
    if (b->ahead)                         /* earlier keys are due: as a key (held: merge) */
      kick_at(m, blk, pipe, b->t, kind == OP_WAIT && pipe != SL_PIPE_V && m->ps.settle == 0);
    else sli_pipe_kick(m, blk, pipe, b->t);
  }
  return SL_OK;
}

static void marks_reached(sl_machine *m, sl_block *b, int q, int32_t op);

/* drop the head op of a queue; the shadow reads that waited for it are reached */
static inline void pop(sl_machine *m, sl_block *b, int q) {
  int32_t op = b->qhead[q];
  b->qhead[q] = m->ops[op].next;
  if (b->qhead[q] < 0) b->qtail[q] = -1;
  sli_free_give(&m->fop, op);
  if (b->mhead[q] >= 0 && b->mwait[q] == op) marks_reached(m, b, q, op);
}

/* a token fired at t: its waiter (a pipe, or S) goes on */
static void tok_fire(sl_machine *m, int32_t tok, sl_time t, sl_time now) {
  sl_tok *k = &m->toks[tok];
  k->fired = 1;
  k->t = t;
  if (k->wblk < 0) return;
  if (k->wpipe == SL_PIPE_S) {
    sl_block *b = &m->blocks[k->wblk];
    tok_free(m, tok);
    if (b->state == B_FLAG && b->wtok == tok) sli_flag_woken(m, k->wblk, t, now);
    return;
  }
  sli_pipe_kick(m, k->wblk, k->wpipe, now);
}

/* schedule an EV_PIPE for the block's pipe at t (once); hold: a lone
** wait_flag's, held back from the heap (m->hold) until a key is looked at or
** the transfer queued next takes its place (merge). When the block's
** last key is the landing of one of its copies or vector ops at t (lkn ==
** nkey, not landed yet), the EV_PIPE's key would come right after it: keys
** of one time run by block, then by the block's count, so no key comes
** between the two (flow ends of that time come before both, and a settle
** waits for a later time). The pipe then moves when the landing is handled,
** after all the landing does (sli_landed): what the EV_PIPE would do, in
** the same order, without its key. Its tie is taken all the same: every
** later key of the block has the tie it had */
static void kick_at(sl_machine *m, int blk, int pipe, sl_time t, int hold) {
  sl_block *b = &m->blocks[blk];
  if (b->kick[QI(pipe)] == t) return;
  sli_merge_due(m, blk);                 /* nkey as it would be (merge) */
  b->kick[QI(pipe)] = t;
  if (b->lkt == t && b->lkn == b->nkey) {
    int32_t *k = &m->evs[b->lkev].kicks;
    int n = *k == 0 ? 0 : *k < 4 ? 1 : 2;      /* the EV_PIPEs riding on it already */
    *k |= (QI(pipe) + 1) << (2 * n);
    b->lkn = ++b->nkey;                       /* the next one rides too */
    return;
  }
  if (hold) {                            /* a lone wait_flag's: held back (merge) */
    if (m->hold) sli_hold_flush(m);
    m->hold = blk * 4 + pipe + 1;
    m->ht = t;
    m->htie = sli_block_tie(m, blk);
    return;
  }
  if (sli_schedule_pipe(m, t, blk, pipe) != SL_OK) m->oom = 1;
}

/* the landing of record ev, of block b's pipes, was scheduled at t: the
** block's last key (kick_at) */
static inline void land_key(sl_block *b, sl_time t, int32_t ev) {
  b->lkt = t;
  b->lkn = b->nkey;
  b->lkev = ev;
}

/* start the transfer at the head of the pipe at now */
static void xfer_start(sl_machine *m, int blk, int pipe, sl_ins *o, sl_time now) {
  sl_block *b = &m->blocks[blk];
  int64_t hit = m->l2 != NULL ? sli_l2_xfer(m, blk, pipe, o) : 0;
  b->xstart[QI(pipe)] = now;
  b->busy[QI(pipe)] = 1;
  if (m->chains != NULL) sli_chain_arm(m, blk, (int32_t)(o - m->ops));
  if (sli_flow_start(m, blk, pipe, o->gm_pe, o->path, hit, o->bytes, now) != SL_OK) {
    m->oom = 1;                         /* no memory: it ends at once */
    sli_xfer_done(m, blk, pipe, now);
  }
}

/* start the vector op at the head of the V pipe */
static void vec_start(sl_machine *m, sl_block *b, sl_ins *o, sl_time now) {
  sl_time start = o->issue, end;
  if (b->pipe[SL_PIPE_V] > start) start = b->pipe[SL_PIPE_V];
  if (now > start) start = now;
  end = start + o->dur;
  b->busy[QI(SL_PIPE_V)] = 1;
  b->pipe[SL_PIPE_V] = end;
  if (end > b->done[SL_PIPE_V]) b->done[SL_PIPE_V] = end;
  if (end > b->inflight) b->inflight = end;
  if (sli_schedule_as(m, end, o->ev, EV_VEC, (int)(b - m->blocks)) != SL_OK) m->oom = 1;
  land_key(b, end, o->ev);
}

/* the pipe reached a shadow read: one pipe fewer to wait for */
static void mark_reached(sl_machine *m, int32_t mk, sl_time done) {
  sl_mark *k = &m->marks[mk];
  if (done > k->t) k->t = done;
  if (--k->pending > 0) return;
  sli_shadow_add(m, k->pe, k->block, k->frame, k->end, k->t);
  sli_free_give(&m->fmark, mk);
}

/* queue q of block b dropped instruction op: the shadow reads that waited
** for it are reached, with the time its pipe's work has landed (what the
** pipe had when it came to them in its queue) */
static void marks_reached(sl_machine *m, sl_block *b, int q, int32_t op) {
  int32_t mk = b->mhead[q];
  sl_time done = b->done[q + SL_PIPE_V];
  while (mk >= 0 && m->marks[mk].op[q] == op) {
    int32_t next = m->marks[mk].nx[q];
    mark_reached(m, mk, done);
    mk = next;
  }
  b->mhead[q] = mk;
  if (mk >= 0) b->mwait[q] = m->marks[mk].op[q];
}

/* the merged kick of queue q of block b reaches the place of the key it
** replaced: the count that key's handling would have given the next one
** (the merged key's own, merge) is taken now; the earliest place still
** open is found again */
static void merge_close(sl_block *b, int q) {
  int r;
  b->mgn2[q] = b->nkey++;
  b->mg &= (uint8_t)~(1u << (q + 4));
  for (r = 0; r < SL_NQ; r++)
    if ((b->mg >> (r + 4) & 1) && (!(b->mg >> 4 & ((1u << r) - 1)) || b->mgt[r] < b->mgmt ||
                              (b->mgt[r] == b->mgmt && b->mgtie1[r] < b->mgmtie))) {
      b->mgmt = b->mgt[r];
      b->mgmtie = b->mgtie1[r];
      b->mgmq = r;
    }
}

/* the places of block blk's replaced kicks that the key taken last has
** passed (merge), in their order: their counts are taken first */
void sli_merge_close_due(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  while ((b->mg & 0x70) && sli_passed(m, b->mgmt, b->mgmtie)) merge_close(b, b->mgmq);
}

/* the wait_flag at the head of queue q, whose kick was merged, is popped
** before the replaced key's place (a stale rider moved the pipe): the kick
** that pop makes would take its count here */
static void merge_popped(sl_machine *m, int blk, int q) {
  sl_block *b = &m->blocks[blk];
  sli_merge_due(m, blk);
  if (b->mg >> (q + 4) & 1) merge_close(b, q);
}

/* run the pipe's queue as far as it goes at now; 0 when it stopped */
static int step(sl_machine *m, int blk, int pipe, sl_time now) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe);
  int32_t op = b->qhead[q];
  sl_ins *o = &m->ops[op];
  sl_time start;
  switch (o->kind) {
    case OP_SET: {
      int32_t tok = o->tok;
      if (o->issue > now) { kick_at(m, blk, pipe, o->issue, 0); return 0; }   /* S not there yet */
      pop(m, b, q);
      tok_fire(m, tok, b->done[pipe], now);
      return 1;
    }
    case OP_WAIT: {
      sl_tok *k = &m->toks[o->tok];
      if (!k->fired) { k->wblk = blk; k->wpipe = pipe; return 0; }
      if (k->t > b->pipe[pipe]) b->pipe[pipe] = k->t;
      if (k->t > b->done[pipe]) b->done[pipe] = k->t;   /* a later flag or drain waits too */
      if (b->mg >> (q + 4) & 1) merge_popped(m, blk, q);
      tok_free(m, o->tok);
      pop(m, b, q);
      return 1;
    }
    case OP_VEC:
      vec_start(m, b, o, now);
      return 0;
    default:                            /* OP_XFER */
      start = o->issue > b->pipe[pipe] ? o->issue : b->pipe[pipe];
      if (start > now) { kick_at(m, blk, pipe, start, 0); return 0; }
      xfer_start(m, blk, pipe, o, now);
      return 0;
  }
}

/* advance one pipe; a block waiting for its pipes to drain may go on
** (inline: its one caller runs it for each pipe kicked) */
static inline void advance(sl_machine *m, int blk, int pipe, sl_time now) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe);
  sl_time t;
  while (!b->busy[q] && b->qhead[q] >= 0 && step(m, blk, pipe, now)) {}
  if ((b->state == B_DRAIN || b->state == B_ENDING) && (b->dmask & (1 << pipe)) &&
      sli_drained(m, b, b->dmask, &t))
    sli_drain_done(m, blk, t, 1);
}

/* advance block blk's pipe at now (queued when called from inside a pipe) */
void sli_pipe_kick(sl_machine *m, int blk, int pipe, sl_time now) {
  if (!m->kbusy) {                      /* the queue is empty: this pipe first */
    m->kbusy = 1;
    for (;;) {                          /* (one call of advance: inlined once) */
      advance(m, blk, pipe, now);
      if (m->kqh >= m->nkq) break;
      blk = m->kq[m->kqh] / 4;
      pipe = m->kq[m->kqh++] % 4;
    }
    m->kqh = m->nkq = 0;
    m->kbusy = 0;
    return;
  }
  if (m->nkq == m->capkq) {
    if (m->kqh > 0) {
      memmove(m->kq, m->kq + m->kqh, (size_t)(m->nkq - m->kqh) * sizeof(*m->kq));
      m->nkq -= m->kqh;
      m->kqh = 0;
    }
    if (m->nkq == m->capkq && !pool_grow((void **)&m->kq, &m->capkq, sizeof(*m->kq))) {
      m->oom = 1;
      return;
    }
  }
  m->kq[m->nkq++] = blk * 4 + pipe;     /* a pipe is running: after it */
}

/* block blk, ahead, queues a transfer issued at issue on an MTE pipe behind
** a lone wait_flag whose flag has fired, and that wait's EV_PIPE (K1, at the
** wait's issue t1) is still held back (kick_at: no key looked at since it
** was made). K1 would pop the wait and, the transfer's start s (its issue,
** the flag's time or the pipe's, the latest) being later than t1, schedule
** an EV_PIPE at s (K2) with the block's count then. Here K1 is not made and
** the merged key, at s with K1's tie, pops the wait and starts the transfer
** as K2 would (the queue and
** the pipe's clocks keep the wait until then: nothing reads them between,
** the pipe being held by the transfer's start). The count K2 would take is
** taken where K1 would have been handled (merge_close: once a later key was
** taken), so every other key keeps its tie; a key of the block at s whose
** tie lies between the two sends the merged key to K2's tie (sli_pipe_key).
** Exact runs alone (sli_enqueue holds K1 only then): a window settles when a
** step looks at a key past its end, and a block catching up looks at the next
** key, then runs on before it; K1 gone, that key can lie past the end where
** K1 did not, and the window settles before the block's flows of its clock */
static void merge(sl_machine *m, int blk, int pipe, sl_time issue) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe);
  const sl_ins *w = &m->ops[b->qhead[q]];
  sl_time s, t1 = w->issue;
  uint64_t tie;
  if (w->kind != OP_WAIT || b->busy[q] || b->mhead[q] >= 0 || ((b->mg >> 4 | b->mg) >> q & 1) ||
      !m->toks[w->tok].fired)
    return;
  s = b->pipe[pipe] > m->toks[w->tok].t ? b->pipe[pipe] : m->toks[w->tok].t;
  if (issue > s) s = issue;
  if (s <= t1 || m->hold != blk * 4 + pipe + 1 || m->ht != t1) return;
  tie = m->htie;                         /* K1, held back: it is not made */
  m->hold = 0;
  if (sli_passed(m, t1, tie) || sli_schedule_pipe_tie(m, s, tie, blk, pipe) != SL_OK) {
    if (sli_schedule_pipe_tie(m, t1, tie, blk, pipe) != SL_OK) m->oom = 1;   /* K1 back */
    return;
  }
  b->kick[q] = s;
  b->mgt[q] = t1;
  b->mgtie1[q] = b->mgtie[q] = tie;
  if (!(b->mg & 0x70) || t1 < b->mgmt || (t1 == b->mgmt && tie < b->mgmtie)) {
    b->mgmt = t1;
    b->mgmtie = tie;
    b->mgmq = q;
  }
  b->mg |= (uint8_t)(0x11u << q);       /* pending, and its place open */
}

/* EV_PIPE of tie tie at t. The merged key of a queue (merge) runs as K2
** would: at once when no key of the block at t lies between its tie and
** K2's, else it goes to K2's tie */
void sli_pipe_key(sl_machine *m, int blk, int pipe, sl_time t, uint64_t tie) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe);
  if ((b->mg >> q & 1) && b->mgtie[q] == tie) {
    const sl_key *n;
    uint64_t tie2;
    sli_merge_due(m, blk);               /* this key is past K1's place */
    tie2 = ((uint64_t)(blk + 1) << SL_TIE_BITS) | b->mgn2[q];
    if (tie2 > tie + 1 && (n = sli_next_key(m)) != NULL && n->t == t && n->seq < tie2) {
      b->mgtie[q] = tie2;                 /* a key of the block comes between */
      if (sli_schedule_pipe_tie(m, t, tie2, blk, pipe) != SL_OK) m->oom = 1;
      return;
    }
    b->mg &= (uint8_t)~(1u << q);
  }
  sli_pipe_due(m, blk, pipe, t);
}

/* EV_PIPE at t: the block's pipe takes its next instruction */
void sli_pipe_due(sl_machine *m, int blk, int pipe, sl_time t) {
  if (m->blocks[blk].kick[QI(pipe)] == t) m->blocks[blk].kick[QI(pipe)] = -1;
  sli_pipe_kick(m, blk, pipe, t);
}

/* the transfer at the head of the pipe streamed its last byte at t */
void sli_xfer_done(sl_machine *m, int blk, int pipe, sl_time t) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe);
  sl_ins *o = &m->ops[b->qhead[q]];
  sl_time land = t + m->ps.mte_setup + sli_alpha(m, o->path);
  if (land > b->done[pipe]) b->done[pipe] = land;
  if (land > b->inflight) b->inflight = land;
  b->pipe[pipe] = t;
  if (SLI_TRACING(m))
    sli_trace(m, b->xstart[q], t, b->pe, b->b, 0, o->path, o->bytes, o->gm_pe, pipe);
  if (sli_schedule_land(m, land, o->ev, blk, o->path) != SL_OK) m->oom = 1;
  land_key(b, land, o->ev);
  b->busy[q] = 0;
  pop(m, b, q);
  sli_pipe_kick(m, blk, pipe, t);
}

/* a copy or vector op (landing record ev) of the block's pipe landed at t;
** last, the EV_PIPEs that rode on it (kick_at), in the order they were made */
void sli_landed(sl_machine *m, int blk, int pipe, int vec, int32_t ev, sl_time t) {
  sl_block *b = &m->blocks[blk];
  int q = QI(pipe);
  int32_t kicks = m->evs[ev].kicks;
  if (b->lkev == ev) b->lkn = 0;        /* landed: nothing rides on it any more */
  b->nq[q]--;
  pub_drop(m, b, ev);
  if (vec) {
    b->busy[q] = 0;
    pop(m, b, q);
    sli_pipe_kick(m, blk, pipe, t);
  }
  if (b->state == B_QUEUE && !sli_queue_full(m, blk)) sli_wake(m, blk, t);
  for (; kicks != 0; kicks >>= 2) sli_pipe_due(m, blk, SL_PIPE_V + (kicks & 3) - 1, t);
}

/* 1 when the pipes of mask are empty and idle; *t = when S may go on */
int sli_drained(const sl_machine *m, const sl_block *b, int mask, sl_time *t) {
  sl_time x = b->t;
  int pipe;
  (void)m;
  for (pipe = SL_PIPE_V; pipe < SL_NPIPES; pipe++) {
    if (!(mask & (1 << pipe))) continue;
    if (b->qhead[QI(pipe)] >= 0 || b->busy[QI(pipe)]) return 0;
    if (b->done[pipe] > x) x = b->done[pipe];
  }
  for (pipe = 0; pipe < SL_NENG; pipe++) {      /* the DMA engines asked for */
    if (!(mask & SL_DRAIN_DMA(pipe))) continue;
    if (b->dma_pending[pipe] > 0) return 0;
    if (b->dma_done[pipe] > x) x = b->dma_done[pipe];
  }
  if ((mask & SL_DRAIN_ALL) == SL_DRAIN_ALL && b->inflight > x) x = b->inflight;
  *t = x;
  return 1;
}

/* S waits for the pipes of mask, then does act (now, or when they drain) */
int sli_drain(sl_machine *m, int blk, int mask, int act) {
  sl_block *b = &m->blocks[blk];
  sl_time t;
  if (b->state == B_QUEUE) b->state = B_RUN;   /* the drain waits longer */
  b->act = act;
  b->dmask = mask;
  if (sli_drained(m, b, mask, &t)) { sli_drain_done(m, blk, t, 0); return SL_OK; }
  b->state = act == ACT_END ? B_ENDING : B_DRAIN;
  b->wsite = m->site;
  return SL_OK;
}

/* a shadow frame read at the point every pipe reaches what S issued so far */
int sli_mark(sl_machine *m, int blk, int frame, int end) {
  sl_block *b = &m->blocks[blk];
  int32_t mk;
  int pipe;
  sl_mark *k;
  if ((mk = sli_free_take(&m->fmark)) < 0) {
    if (m->nmarks == m->capmarks) {
      int32_t cap = m->capmarks ? 2 * m->capmarks : 256;
      if (!sli_free_room(&m->fmark, cap) ||
          !sli_pool_grow64(&m->marks_mem, (void **)&m->marks, m->nmarks, cap,
                           sizeof(*m->marks))) return SL_ENOMEM;
      m->capmarks = cap;
    }
    mk = m->nmarks++;
  }
  k = &m->marks[mk];
  k->pe = b->pe; k->block = b->b; k->frame = frame; k->end = end;
  k->t = b->t > b->inflight ? b->t : b->inflight;   /* signals landed, as a barrier waits */
  k->pending = 1;                       /* held until every pipe is asked */
  for (pipe = SL_PIPE_V; pipe < SL_NPIPES; pipe++) {
    int q = QI(pipe);
    if (b->qhead[q] < 0 && !b->busy[q]) {
      if (b->done[pipe] > k->t) k->t = b->done[pipe];
      continue;
    }
    k->pending++;                       /* reached when its last instruction goes */
    k->op[q] = b->qtail[q];
    k->nx[q] = -1;
    if (b->mhead[q] < 0) { b->mhead[q] = mk; b->mwait[q] = k->op[q]; }
    else m->marks[b->mtail[q]].nx[q] = mk;
    b->mtail[q] = mk;
  }
  mark_reached(m, mk, 0);
  return SL_OK;
}

/* the pipes a draining block waits for are empty at t: it does its act;
** deferred, from an event (the block is parked and resumes) */
void sli_drain_done(sl_machine *m, int blk, sl_time t, int deferred) {
  sl_block *b = &m->blocks[blk];
  if (t > b->t) b->t = t;
  if (deferred) b->state = B_RUN;
  switch (b->act) {
    case ACT_END:
      b->end = b->t;
      b->state = B_DONE;
      m->ndone++;
      sli_check_block_done(m, blk);
      return;
    case ACT_BAR_ALL: sli_arrive_all(m, blk); return;
    case ACT_SYNC_ALL: sli_arrive_pe(m, blk); return;
    case ACT_TEAM: sli_team_arrive(m, blk); return;
    case ACT_SIGNAL: sli_signal_send(m, blk); break;
    case ACT_PROF: sli_prof_read(m, blk); break;
    case ACT_POLL:
      sli_poll_resume(m, blk);
      if (b->state != B_RUN) return;    /* it waits for the value */
      break;
    default: b->t += m->ps.pipe_barrier; break;
  }
  if (deferred) sli_wake(m, blk, b->t);
}

/* what a draining block does once drained (deadlock and salvage texts) */
const char *sli_act_name(const sl_block *b) {
  static const char *const names[] = { "pipe_barrier or quiet", "put_signal's signal",
                                       "barrier_all", "sync_all", "a profiling frame",
                                       "wait_signal_value", "a team barrier",
                                       "the end of its kernel" };
  return b->act >= 0 && b->act <= ACT_END ? names[b->act] : "?";
}

/* the instructions queued on each pipe of a block, and the pipes whose head
** waits for a flag ("V 0, MTE2 2, MTE3 2 queued; MTE3 behind a wait_flag") */
sli_text sli_queues_text(const sl_machine *m, const sl_block *b) {
  sli_text t;
  char held[32] = "";
  size_t used = 0, nheld = 0;
  int pipe;
  for (pipe = SL_PIPE_V; pipe < SL_NPIPES; pipe++) {
    int32_t op = b->qhead[QI(pipe)], n = 0, mk;
    const sl_ins *h = op >= 0 ? &m->ops[op] : NULL;
    for (; op >= 0; op = m->ops[op].next) n++;
    if (b->qhead[QI(pipe)] >= 0)        /* a shadow read waiting there counts as one */
      for (mk = b->mhead[QI(pipe)]; mk >= 0 && mk < m->nmarks; mk = m->marks[mk].nx[QI(pipe)]) n++;
    used += (size_t)snprintf(t.s + used, sizeof(t.s) - used, "%s%s %d",
                             pipe == SL_PIPE_V ? "" : ", ", sl_pipe_name(pipe), (int)n);
    if (h && h->kind == OP_WAIT && !m->toks[h->tok].fired)
      nheld += (size_t)snprintf(held + nheld, sizeof(held) - nheld, "%s%s",
                                nheld ? ", " : "", sl_pipe_name(pipe));
  }
  snprintf(t.s + used, sizeof(t.s) - used, " queued%s%s%s", nheld ? "; " : "", held,
           nheld ? " behind a wait_flag" : "");
  return t;
}
