/*
** sli.h -- internal structures of the engine, shared by the core sources only.
*/
#ifndef SLI_H
#define SLI_H

#include "sl.h"

/* Only luaopen_shmemlab_core leaves core.so (nm -D): what the headers declare is hidden. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* kinds of event: a block resumes; a copy, vector op or signal lands; a
** pipe takes its next instruction; the earliest flow completes */
/* EV_WAKE, EV_PIPE and EV_FLOW are keys alone (sim.c): no event record */
enum { EV_WAKE, EV_COPY, EV_VEC, EV_SIGNAL, EV_PIPE, EV_FLOW, EV_DMA, EV_DMAQ };
#define SL_NEVKINDS 8

/* block states: B_FLAG waits for a flag from a pipe, B_DRAIN for pipes to
** drain (then does its act), B_QUEUE for a slot in a full pipe queue,
** B_ENDING has finished its code and waits for its pipes */
enum { B_IDLE, B_READY, B_RUN, B_SIGNAL, B_BARRIER, B_SYNC, B_FLAG, B_DRAIN,
       B_QUEUE, B_ENDING, B_DONE, B_AMO, B_TEAM };

/* what a block does once its pipes drained (B_DRAIN) */
enum { ACT_BARRIER, ACT_SIGNAL, ACT_BAR_ALL, ACT_SYNC_ALL, ACT_PROF, ACT_POLL,
       ACT_TEAM, ACT_END };

/* instructions queued on a pipe */
enum { OP_XFER, OP_VEC, OP_SET, OP_WAIT };

/* pending UB ranges a block keeps (sl_block's pub) */
#define SL_NPUB 24

/* the queued pipes V, MTE2, MTE3: queue index of a pipe */
#define SL_NQ 3
#define QI(pipe) ((pipe) - SL_PIPE_V)

/* a resolved place, enough to reach the bytes at completion */
typedef struct sl_addr {
  int32_t buf, pe, core, dtype;
  int64_t off;
} sl_addr;

/* event payload (the heap orders small keys that point here): 128 bytes,
** two cache lines of a 64-byte aligned pool (sim.c), as a landing reads its
** event long after it was made, out of cache; what a copy reads comes first */
typedef struct sl_event {
  int32_t kind, blk;
  int32_t op, vop;          /* atomic mode (copies), vector op */
  sl_addr dst, src;
  int64_t n;                /* bytes (copy) or elements (vector) */
  int64_t whole;            /* copy: bytes of the whole transfer it is part of,
                            ** negated for an MTE put/get chunk's GM -> UB staging */
  int32_t pipe;             /* copy / vector op: the pipe it ran on; a fetching
                            ** atomic: the path its reply takes */
  int32_t site;             /* checked runs: the issuing Lua line */
  union {
    int32_t snap;           /* racecheck: the release a signal carries */
    int32_t kicks;          /* a pipe's copy or vector op: the EV_PIPEs that ride on
                            ** its landing (pipe.c: kick_at), QI + 1 in 2 bits each,
                            ** first in the low bits */
  };
  union {
    int32_t next_free;      /* a DMA descriptor: the next of its queue (engine.c) */
    int32_t pubi;           /* a pipe's copy or vector op: its entry in its block's
                            ** table of pending UB bytes (pub), when it has one:
                            ** trusted only while that entry's bit is set and the
                            ** entry names this record (pipe.c: pub_drop) */
  };
  double s;                 /* vector scalar */
  union {
    sl_addr src2;           /* vector op: the second source */
    struct {
      int64_t val;          /* signal value */
      int64_t val2;         /* atomic_compare_swap: the value compared with */
    };
  };
} sl_event;

/* a staging copy GM -> UB that landed without moving its bytes: the UB
** range holds the GM range's bytes as they were when it landed (mte.c) */
typedef struct sl_lazy {
  sl_addr ub, gm;
  int64_t n;
  int32_t pos;              /* its entry in the list of gm's PE (sl_lzlist) */
} sl_lazy;
/* the staged records whose GM range is on one PE: entries blk * SL_NLAZY + i
** (record i of block blk), so a GM write looks only at that PE's records */
typedef struct sl_lzlist { int32_t *e, n, cap; } sl_lzlist;
#define SL_NLAZY 2               /* per block: a put's last chunk, the next one's first */

/* one instruction in a pipe's queue (32 bytes: the pipes read thousands of
** blocks' queues, issued long before, out of cache) */
typedef struct sl_ins {
  int32_t next;
  int16_t kind, path;       /* XFER: its path */
  union {
    int32_t ev;             /* XFER / VEC: its landing event (not yet scheduled) */
    int32_t tok;            /* SET / WAIT: the flag token; MARK: the shadow read */
  };
  int32_t gm_pe;            /* XFER: GM side */
  sl_time issue;            /* S time it was issued: it starts no earlier */
  union {
    int64_t bytes;          /* XFER */
    sl_time dur;            /* VEC */
  };
} sl_ins;

/* one set_flag: fired once its source pipe reaches it */
typedef struct sl_tok {
  int32_t fired, wblk, wpipe;   /* the waiter: block and pipe, -1 = none */
  sl_time t;                /* when it fired */
  int32_t next_free;
} sl_tok;

/* a shadow frame read waiting for the pipes to reach it */
/* (no instruction of its own: it waits on each pipe for the instruction that
** was last in the queue when S read, in the pipe's list of marks) */
typedef struct sl_mark {
  int32_t pe, block, frame, end, pending;
  sl_time t;
  int32_t next_free;
  int32_t op[SL_NQ];        /* per pipe: the instruction it waits for */
  int32_t nx[SL_NQ];        /* per pipe: the next mark in the pipe's list */
} sl_mark;

/* a transfer streaming through shared resources at a max-min fair rate */
/* resources one flow may cross: both HBMs, two hops of two ports, an engine */
#define SL_FLOW_RES 8

/* a resource a flow crosses: the capacity each of its bytes takes there, the
** resource, and the flow's place in the resource's list */
typedef struct sl_cross {
  double w;
  int32_t res, pos;
} sl_cross;

typedef struct sl_flow {
  /* what the solver reads of every flow on a resource: the first cache line */
  double rate, cap;         /* bytes per ps: current, and the most it can have (the core's
                               MTE rate, or what one resource it crosses carries alone) */
  double rem;               /* bytes still to move */
  int32_t mark, frozen;
  int32_t bneck;            /* the full resource its rate tops (-1: at its cap) */
  int32_t nres;
  sl_time t;                /* when rem was brought up to date */
  sl_time end;              /* predicted completion */
  int32_t next_free;
  int32_t fillk;            /* solver scratch: bit k set when at[k] can bind (a settle's fills
                            ** cross it), as the settle that re-rates it found */
  sl_cross at[SL_FLOW_RES]; /* the resources it crosses (the first four in one line) */
  uint64_t seq;             /* tie break of equal ends */
  int32_t eng, ev, sig;     /* DMA engine (-1: an MTE pipe's), landing and signal events */
  int32_t blk, pipe;
  int32_t gm_pe;            /* an MTE transfer's GM side (-1: a DMA engine's) */
  sl_time lat;              /* DMA: from the last byte streamed to its landing */
  double hitshare;          /* MTE2: the share of its bytes read from the L2 (its cap) */
  double csize;             /* a chain's (chain.c): bytes of each chunk */
  double clast;             /* a chain's: bytes of its last chunk (0: csize) */
  int64_t cn;               /* a chain's: chunks after the current one (0: a plain flow) */
  int64_t gn;               /* a chain's: its other leg's chunks (ghosts) not started yet */
  sl_time glat;             /* a chain's: from a chunk's end to its ghost's start */
  sl_time gdue;             /* a chain's: when the ghost of the chunk before the current one
                               starts (-1: that ghost has started) */
} sl_flow;

/* how close to max-min fair the solver keeps every flow: at its cap, or on a
** resource full to within SL_FAIR_TOL of its capacity where no flow has more
** than 1 + SL_FAIR_TOL times its rate */
#define SL_FAIR_TOL 1e-9

/* an entry of the solver's end heap: key, tie break (sequence), flow */
typedef struct sl_hent {
  int64_t k;
  uint64_t tie;
  int32_t id;
} sl_hent;

/* an indexed binary heap: its n entries, and the place of each id in it (-1:
** not in it) in an array of its own, so that a move touches few cache lines */
typedef struct sl_heap {
  sl_hent *h;
  int32_t *pos;
  int32_t n;
} sl_heap;

/* during a fill, its resources not yet full: the key of the level each fills
** at (the bits of a non-negative double), its id, and the place of each id
** (-1: not in it). A fill of up to m->rs_tree (tens to a few hundred: about 45
** a fill at 256 PEs x 48 blocks exact) keeps them unordered, and a walk finds
** the least (its compares predict well); a larger fill keeps a tournament
** tree of them (the leaves n..2n, node j < n holding a copy of the entry of
** its children 2j, 2j + 1 that comes first), whose keys may lag below their
** levels: a freeze raises the keys of several, and only the top is brought up
** to date when it is read (measured: a tree is slower on the small fills) */
typedef struct sl_rset {
  int64_t *k;
  int32_t *id, *pos;
  int32_t *gone, ngone;     /* a tree's leaves taken out since its top was read */
  int32_t n;
  int32_t tree;             /* a tree by (key, id) (a fill of many), else unordered */
} sl_rset;

/* a pending event: its time, its tie break (sl_key_tie: the block it
** belongs to, then its count of that block's keys), its kind and
** what it names: the block (EV_WAKE), block * 4 + pipe (EV_PIPE), nothing
** (EV_FLOW), block * SL_NENG + engine (EV_DMAQ), or the event record (the
** other kinds) */
#define SL_TIE_BITS 40              /* a block's count of keys: the low bits of a tie */
typedef struct sl_key {
  sl_time t;
  uint64_t seq;
  int32_t ev, kind;
} sl_key;

/* a 4-ary heap of keys (sim.c). Keys stay whole (24 bytes): 16-byte keys,
** with what they name in a second array, cost more instructions a pop than
** their fewer cache lines saved CPU time at 128 PEs */
typedef struct sl_kheap {
  sl_key *h;
  int32_t n, cap;
} sl_kheap;

/* the lanes (sim.c): in-order queues beside the fifo and the wake-ups' one
** for keys that come in order among themselves but not with those: a pipe
** copy's landing goes in the lane of its path */
#define SL_NLANES SL_NPATHS

/* keys in (time, tie) order: k[head .. head + n) (sim.c) */
typedef struct sl_kfifo {
  sl_key *k;
  int32_t head, n, cap;
} sl_kfifo;

/* one block's queue on a DMA engine (engine.c), as a STARS SQ runs it: its
** descriptors stream one after another in order; up to dma_queue_depth of
** them are in the engine at once, so the next one's setup runs under the
** current one's stream; after each stream the engine spends the engine's
** task time on that descriptor before it streams the next */
typedef struct sl_dmaq {
  int32_t head, tail;       /* descriptors not streaming yet, in order (EV_DMA
                            ** records linked by next_free; whole = set up at) */
  int32_t nwait, nadm;      /* how many; how many of the first are set up (admitted) */
  int32_t cur, streaming;   /* a descriptor holds the engine (streams, or its task) */
  sl_time free_at;          /* the engine takes the next stream then */
  sl_time kick;             /* an EV_DMAQ is due then (-1 none) */
} sl_dmaq;

/* a PE's L2 (l2.c): address ranges of its GM, least recent first out; range
** i is [off[i], off[i] + len[i]) of buffer buf[i], used at stamp[i] (larger:
** more recent). Two indexes of the ranges spare an access the scan of all of
** them: the ranges by recency (a ring through lnext and lprev from the head
** SL_L2_RANGES, least recent first: a range used moves to the end without
** shifting the others) and at (by buffer and place; kept while no range is
** empty, when the ranges of a buffer are disjoint) */
#define SL_L2_RANGES 128
typedef struct sl_l2 {
  int64_t off[SL_L2_RANGES], len[SL_L2_RANGES];
  uint64_t stamp[SL_L2_RANGES];
  int32_t buf[SL_L2_RANGES];
  int32_t n;
  int64_t bytes;            /* held, at most l2_bytes */
  uint64_t clock;
  uint8_t lnext[SL_L2_RANGES + 1], lprev[SL_L2_RANGES + 1];   /* by stamp (a ring) */
  uint8_t at[SL_L2_RANGES];    /* the ranges by (buf, off), when sorted */
  int32_t nempty, sorted;   /* ranges of no bytes; at is in order (none empty) */
} sl_l2;
_Static_assert(SL_L2_RANGES < 256, "l2 indexes are bytes, the ring's head one more");

#define SL_FSTACK 16

/* a block's state, hot first: an event or a primitive of a machine of
** thousands of blocks finds its block out of cache, so what the primitives,
** a resume and the pipes read sits in the first five cache lines; what only
** waits, checked runs and reports read comes after */
typedef struct sl_block {
  /* line 0: every primitive and resume (the array is 64-byte aligned) */
  _Alignas(64) sl_time t;   /* S pipe: where the block's code is */
  int32_t state, pe, b;
  int32_t retkind;          /* value handed back when it resumes */
  int64_t ret;
  /* runaway guard: primitives it called since something last landed */
  int64_t spin;
  int64_t spin_land;        /* the machine's landing count when spin restarted */
  int64_t nprims;           /* primitives it has called in this launch */
  int32_t atomic, atomic_dtype;
  /* line 1: the pipes' clocks */
  sl_time pipe[SL_NPIPES];  /* free_at of each pipe: when it takes the next one */
  sl_time done[SL_NPIPES];  /* when all a pipe's work has landed (flags fire) */
  /* line 2: queues of V, MTE2, MTE3, and the shadow reads (sl_mark) waiting
  ** for their instructions, in order (-1 none), with the instruction the
  ** first of each queue waits for */
  int32_t qhead[SL_NQ], qtail[SL_NQ];
  int32_t nq[SL_NQ];        /* XFER / VEC issued and not landed (queue depth) */
  uint8_t busy[SL_NQ];      /* the head instruction runs */
  uint8_t mg;               /* pipe.c merge, by queue (bit QI): its merged kick pending
                               (bits 0-2), the replaced key's place not yet passed (4-6) */
  int32_t mhead[SL_NQ], mwait[SL_NQ];
  /* line 3 */
  sl_time inflight;         /* latest completion of what it issued */
  sl_time fence;            /* remote writes land no earlier than this */
  int32_t act, dmask;       /* B_DRAIN: what to do, which pipes (bit per pipe) */
  int32_t wtok, wflag;      /* B_FLAG: the token, its event * 8 + id */
  int32_t nlz;              /* staged records (lz) */
  int32_t fdepth;           /* frames open (fr) */
  sl_time xstart[SL_NQ];    /* when the running transfer began streaming (trace) */
  /* line 4 */
  sl_time kick[SL_NQ];      /* an EV_PIPE is due then (-1 none) */
  uint64_t nkey;            /* keys scheduled for it: the last part of their order */
  /* the landing (EV_COPY / EV_VEC) its pipes scheduled last: its time, record,
  ** and the block's nkey after its key (lkn, 0 none: nkey is 1 or more once
  ** the launch woke it), left when it lands; while lkn == nkey it is the
  ** block's last key (pipe.c: kick_at) */
  sl_time lkt;
  uint64_t lkn;
  int32_t lkev;
  int32_t qonly;            /* the primitive just run only queued to its own pipes */
  int32_t ahead;            /* it ran ahead of a wake-up due before its clock (sim.c) */
  int32_t mtail[SL_NQ];     /* the last shadow read waiting in each queue */
  uint16_t flagset[SL_NEVENTS];           /* set in program order, not waited */
  /* what it waits for */
  sl_addr w;
  int32_t wcmp, wnext;
  int32_t wsite;            /* checked runs: the line it waits at */
  int64_t wval;
  int64_t wlen;             /* bytes from w whose writes wake it (one element, or a set) */
  int32_t wset;             /* 1: it waits on the set ws (a p2p_sync wait) */
  int64_t wcur;             /* SL_WS_ALL: the element it waits on (the library waits in order) */
  int32_t wteam, wsync;     /* B_TEAM: its team, its SL_TEAM_* kind */
  sl_addr wub;              /* polling wait: UB that receives the flag */
  int64_t wbytes;
  sl_time wfirst, wperiod;  /* first poll completion, poll period (0: none) */
  sl_time dma_done[SL_NENG];      /* latest landing of each engine's transfers */
  sl_time end;
  int32_t pev;              /* ACT_SIGNAL: the signal event, sent once drained */
  int32_t lzpos;            /* its place in the machine's lzb (nlz > 0) */
  int32_t dma_pending[SL_NENG];   /* DMA transfers issued and not landed */
  int32_t scratch_id;       /* the event id the staged calls chain with */
  sl_dmaq dq[SL_NENG];      /* its queue on each DMA engine */
  int64_t ub_top;
  int64_t scratch;          /* UB offset of the scratch, -1 = none */
  int64_t scratch_bytes;    /* its size (set_mte_config may name another) */
  /* runaway guard: the last copies it landed and scalar reads it made (a hash
  ** of each one's places and size), so repeating one of them is no progress */
  uint64_t gsig[4];
  int32_t gsig_i;
  /* the UB bytes [lo, hi) each pending XFER / VEC (issued, not landed) reads
  ** or writes, by its landing record ev, in the entries of pubset (a bit
  ** each; the record names its entry: pubi), and how many more pending ones
  ** touch UB than the table holds (pover): a scalar access of bytes none of
  ** them touches may run ahead (sl_scalar_ahead_at) */
  uint32_t pubset;
  int32_t pover;
  /* B_FLAG parked by a wait_flag of S while ahead (wahead): its clock then
  ** (wat) and the tie of the wake-up its catch-up would have yielded with
  ** (wtie; 0 while wait_inline has not yet come to where the catch-up would
  ** have stopped), so a firing tells whether a caught-up wait would have
  ** found the flag fired; fired before that place (wfired), the clock it
  ** resumes with there (wclock) */
  int32_t wahead, wfired;
  sl_time wat, wclock;
  uint64_t wtie;
  /* the rest, most of a block's bytes, is not cleared when a launch begins
  ** (machine.c blocks_clear: up to flagsite, and flagsite too in synccheck
  ** runs, the one place that reads it): each part is read only below a count
  ** or under a flag of the part above, which start at zero, so only where
  ** this launch wrote it */
  int32_t flagsite[SL_NEVENTS][SL_NEVENT_IDS]; /* the set_flag's line, under flagset */
  int32_t tok[SL_NEVENTS][SL_NEVENT_IDS];  /* the pending set_flag's token, under flagset
                                              or a set op queued (chain.c mte3_clear) */
  struct { int32_t id, site; sl_time start; } fr[SL_FSTACK];  /* frames open (fdepth);
                                                                 site: of prof_start */
  sl_lazy lz[SL_NLAZY];     /* staged chunks whose bytes did not move yet (nlz) */
  sl_wset ws;               /* the set it waits on (wset) */
  struct { int32_t ev, lo, hi; } pub[SL_NPUB];  /* pending UB ranges (pubset) */
  /* merged kicks (pipe.c merge; mg above says which queues), read only while
  ** one is open: the earliest place not yet passed (mgmt, mgmtie, its queue
  ** mgmq); per queue the replaced key's time and tie, the merged key's tie,
  ** and the count the key the replaced one made would have had (mgn2) */
  _Alignas(64) sl_time mgmt;
  uint64_t mgmtie;
  sl_time mgt[SL_NQ];
  uint64_t mgtie1[SL_NQ], mgtie[SL_NQ], mgn2[SL_NQ];
  int32_t mgmq;
} sl_block;

/* a shared resource (HBM, link, port, NIC) and the flows through it */
/* a flow on a resource, with the capacity each of its bytes takes there and
** what the solver reads of it when it walks the resource's flows (copies of
** the flow's rate and mark, and whether this resource holds it back). 24
** bytes: the flow's id and that bit share fb (SL_SLOT_BN, the top bit: ids
** are below 2^31), so a walk over a resource's flows reads a quarter less */
typedef struct sl_slot {
  double w, rate;
  uint32_t fb;              /* the flow's id, | SL_SLOT_BN when this resource holds it back */
  int32_t mark;
} sl_slot;
#define SL_SLOT_BN 0x80000000u
/* the flow of slot s, and whether its resource holds it back */
static inline int32_t sl_slot_f(const sl_slot *s) { return (int32_t)(s->fb & ~SL_SLOT_BN); }
static inline int sl_slot_bn(const sl_slot *s) { return (s->fb & SL_SLOT_BN) != 0; }

typedef struct sl_res {
  /* what a freeze reads and writes, together (a fill's inner loop) */
  int32_t mark;             /* the settle (stamp) whose fill it is in */
  int32_t bind;             /* capsum > C: it can limit its flows */
  double in, inmax, inmin;  /* solver scratch: what the re-rated flows use, the most any
                            ** has, the least one it holds back has */
  double left, wfree;       /* solver scratch: capacity left at level base, */
  double base, key;         /* the weight of unfrozen flows, the level it fills at */
  /* what a scan reads and writes */
  sl_slot *fl;              /* its flows */
  int32_t nfl, capfl;
  int32_t fbeg, fcnt;       /* solver scratch: where its re-rated flows are listed (ids) */
  int32_t scan;             /* the settle (stamp) whose re-rated flows those are: a fill
                            ** of that settle reads them again only after a flow joined */
  int32_t dirty;
  double wmark;             /* solver scratch: the weight of its re-rated flows */
  double out, outmax, outmin;  /* solver scratch: what the flows not re-rated use, the
                               ** most any has, the least one it holds back has */
  double C;                 /* capacity, bytes per ps */
  double capsum;            /* sum of w * cap of its flows: > C when it can bind */
  double use;               /* sum of w * rate of its flows (kept up to date, rounding drifts) */
  double lo, hi;            /* widening: a flow it holds back below lo, or any flow above
                            ** hi, breaks max-min fairness */
} sl_res;

typedef struct sl_seg { int64_t off, size; } sl_seg;

/* the records of a pool given back, last first: a stack of their indexes
** apart from the records, so taking one reads no record (a record given back
** long ago is out of cache, and the one taken is written, not read: a
** store that misses does not hold the core up as a load does). Room for the
** pool's every record (sli_free_room when it grows), so a push never fails */
typedef struct sl_freelist { int32_t *id, n, cap; } sl_freelist;

/* the block a 64-byte aligned pool lives in (sli_pool_grow64): mapped is its
** length when it is a mapping of its own (from SLI_HUGE_PAGE bytes on, where
** the system can move one: sli_pool_free64 unmaps it), else 0 (malloc'd) */
typedef struct sl_poolmem { void *base; size_t mapped; } sl_poolmem;

/* start loading the line at p, to read (SLI_PREFETCH) or to write (SLI_PREFETCH_W): a
** load only, so a hint that is wrong costs a load and changes nothing */
#if defined(__GNUC__)
#define SLI_PREFETCH(p) __builtin_prefetch(p)
#define SLI_PREFETCH_W(p) __builtin_prefetch(p, 1)
#else
#define SLI_PREFETCH(p) ((void)(p))
#define SLI_PREFETCH_W(p) ((void)(p))
#endif
/* SLI_HOT_INLINE: a function of a hot path inlined where it is called (a
** small put's transfers and flows, the solver's inner loops: each call's
** argument passing and register saves cost about as much as its work);
** SLI_SLOW_PATH: kept out of line (a pool's growth, a rare branch), so the
** inlined path around it stays short */
#if defined(__GNUC__)
#define SLI_HOT_INLINE inline __attribute__((always_inline))
#define SLI_SLOW_PATH __attribute__((noinline))
#else
#define SLI_HOT_INLINE inline
#define SLI_SLOW_PATH
#endif
/* the record last given back, -1 none */
static inline int32_t sli_free_take(sl_freelist *f) { return f->n > 0 ? f->id[--f->n] : -1; }
static inline void sli_free_give(sl_freelist *f, int32_t i) { f->id[f->n++] = i; }
/* start loading, for writing, the record of a pool (items of size sz) that
** f gives next: records are taken in bursts (a block issues a chunk's
** instructions), so the next one's miss overlaps the work on this one */
static inline void sli_free_prefetch(const sl_freelist *f, const void *items, size_t sz) {
  if (f->n > 0) SLI_PREFETCH_W((const char *)items + (size_t)f->id[f->n - 1] * sz);
}

/* timing-only: the backed UB allocations of a core in this launch, each at
** byte at of the core's arena (m->ub) */
typedef struct sl_ubrange { int64_t base, bytes, at; } sl_ubrange;
typedef struct sl_ubmap {
  uint32_t gen;             /* launch the ranges belong to */
  int32_t n, cap;
  int32_t sorted;           /* 1: each range lies past the one before (a bump allocator's) */
  int64_t top;              /* arena bytes in use */
  int64_t gap_lo, gap_hi;   /* sorted: the bytes between two ranges sli_ub_backed found */
                            /* last (a landing asks again for the same unbacked buffer) */
  sl_ubrange *r;
} sl_ubmap;

typedef struct sl_race sl_race;   /* racecheck state (race.c) */
typedef struct sl_team sl_team;   /* a team (team.c) */

/* figures of the profile in picoseconds, computed once */
typedef struct sl_ps {
  sl_time issue, scalar, signal, poll, pipe_barrier, barrier_base, sync_all,
          vec_setup, mte_setup;
  sl_time settle;           /* the flow solver's window (0: exact) */
  sl_time alpha[SL_NPATHS];
  sl_time dma_setup[SL_NENG], dma_task[SL_NENG];
} sl_ps;

struct sl_machine {
  sl_params p;
  sl_ps ps;
  char err[512];
  int err_arg;
  sl_time now;
  /* buffers */
  sl_buf *bufs;
  int nbufs, capbufs;
  sl_seg *segs;             /* symmetric heap, sorted by offset */
  int nsegs, capsegs;
  int64_t heap_used;
  /* UB storage per (pe, core), grown to the high-water mark */
  uint8_t **ub;
  int64_t *ubcap;
  uint8_t *ubregion;        /* data mode: every core's UB, backed as it is touched */
  sl_ubmap *ubmap;          /* timing-only: backed UB ranges per (pe, core); NULL otherwise */
  /* shared resources */
  sl_res *hbm, *hccs, *sio, *nic;
  sl_l2 *l2;                /* per PE (NULL: no L2 in the profile) */
  sl_res *dma;              /* per PE: its SDMA engines, its UDMA engines */
  int nhccs;
  sl_res *allres;           /* every resource, for clean-up */
  size_t nres;
  int64_t path_bytes[SL_NPATHS];
  struct sl_chains *chains; /* chain.c's table (NULL until a chain asks) */
  int32_t chain_armed;      /* chain.c: 1 + the steady-leg queue (2 x block + MTE3) whose flow is starting, 0: none */
  /* flows and the pipes' instructions (reset at each launch) */
  sl_flow *flows;
  int32_t nflows, capflows, free_flow;
  sl_heap fh;               /* flows by predicted end */
  int32_t *dirty, ndirty, capdirty;   /* resources whose flows changed */
  int32_t *scr, capscr;     /* solver scratch: flows, resources, slots per resource */
  sl_rset rs;               /* solver scratch: the fill's resources not yet full */
  int32_t rs_tree;          /* a fill of more resources than this keeps them in a tree */
  int32_t nslots;           /* solver scratch: slot entries listed in this settle */
  int32_t stamp;
  sl_time flow_ev_t;        /* time of the scheduled EV_FLOW (INT64_MAX none) */
  sl_time settle_t;         /* the flows changed at this time, not yet settled */
  sl_time settled_t;        /* the last settle's time: a window (settle_ns) from it */
  uint64_t flow_seq;
  int32_t ended;            /* a flow that ended, still on its resources while its
                               pipe may start the same transfer again (-1: none) */
  sl_ins *ops;               /* 64-byte aligned in ops_mem (sli_pool_grow64) */
  sl_poolmem ops_mem;
  int32_t nops, capops;
  sl_freelist fop;          /* instructions given back */
  sl_tok *toks;              /* 64-byte aligned in toks_mem (sli_pool_grow64) */
  sl_poolmem toks_mem;
  int32_t ntoks, captoks;
  sl_freelist ftok;
  sl_mark *marks;            /* 64-byte aligned in marks_mem: a mark is one cache line */
  sl_poolmem marks_mem;
  int32_t nmarks, capmarks;
  sl_freelist fmark;
  int32_t *kq, kqh, nkq, capkq, kbusy;   /* pipes to advance (block * 4 + pipe) */
  int oom;                  /* the launch ran out of memory: sl_step ends it */
  int32_t *lzb, nlzb, caplzb;   /* blocks with staged chunks (sl_lazy) */
  sl_lzlist *lzp;           /* per PE: the records whose GM range is there (NULL: none yet) */
  struct sl_same *same;     /* copies known to have landed unchanged bytes (mte.c; NULL: none) */
  /* events */
  sl_event *evs;             /* 64-byte aligned in evs_mem (sli_pool_grow64) */
  sl_poolmem evs_mem;
  int32_t nevs, capevs;
  sl_freelist fev;
  sl_kheap heap;             /* keys out of order (sim.c) */
  sl_kheap fheap;            /* the flows' EV_FLOW keys (live and superseded) */
  const sl_key *hmin;        /* the earliest of the two heaps' tops and lmin (NULL: none) */
  sl_kfifo lq[SL_NLANES];    /* the lanes: more in-order queues (a path's landings) */
  const sl_key *lmin;        /* the earliest of their heads (NULL: all empty), of lq[lminq] */
  int32_t lminq, lmask;      /* (lmask: bit p set when lane p holds keys) */
  sl_key *fifo;              /* keys scheduled in (time, seq) order: no heap work */
  int32_t fhead, fn, fcap;
  sl_key *wfifo;             /* the same for wake-ups: blocks yield in clock order */
  int32_t wfhead, wfn, wfcap;
  uint64_t nkey;            /* keys scheduled that belong to no block (EV_FLOW) */
  sl_time kt;               /* the key being handled: its time and tie (0 while */
  uint64_t kseq;            /* flows settle before the next key) */
  sl_time mt;               /* the latest key taken so far (a wake-up held back */
  uint64_t mseq;            /* too), its time and tie (pipe.c merge) */
  /* an EV_PIPE held back from the heap (pipe.c hold): block * 4 + pipe + 1
  ** (0 none), its time and tie; it goes on the heap before any key is looked
  ** at (sli_hold_flush), or a merge takes its place */
  int32_t hold;
  sl_time ht;
  uint64_t htie;
  int64_t nevents;          /* events handled since the machine was made */
  int64_t nkind[SL_NEVKINDS];   /* the same by kind (EV_*) */
  /* runaway guard (machine.c sl_prim_tick): new effects since the machine
  ** was made (sli_progress: a copy other than the block's last ones landed, a
  ** vector op landed, a signal or set_value changed a value, a block ended),
  ** primitives of all blocks since that count last moved, and primitives of
  ** all blocks in the launch */
  int64_t nland, quiet, quiet_land, lprims;
  int64_t quiet_max;        /* the launch's longest quiet streak (sl_guard_stats) */
  sl_flow_stats fstats;     /* the flow solver's counts since then (flow.c) */
  /* the block waiting inline plus 1 (sim.c wait_inline; 0 none) and its
  ** own wake-up while it is held back from the queue (self_pending) */
  int32_t self, self_pending;
  sl_key self_key;
  /* the launch */
  int running, block_dim, nb, ndone;
  int capblocks;            /* blocks kept from earlier launches */
  int cur;                  /* the block resumed last */
  sl_block *blocks;          /* 64-byte aligned in blocks_mem (sli_pool_grow64) */
  sl_poolmem blocks_mem;
  int32_t bar_count;
  int32_t bar_noquiet;       /* a block arrived by shmem_sync_all (no quiet) */
  sl_time bar_tmax;
  int32_t *sync_count;
  sl_time *sync_tmax;
  sl_time t0;
  sl_time tlimit;           /* the launch's virtual-time limit (sli_time_limit at t0) */
  uint32_t gen;             /* launch generation (UB views expire) */
  /* profiling */
  int64_t *prof_cycles, *prof_count;       /* [64][1024] */
  int64_t *shadow;                          /* [pe][64][16][2] */
  /* checked runs */
  int32_t site;             /* Lua line of the primitive being run */
  sl_report *reports;
  size_t nreports, capreports;
  sl_bytemap **ubinit;      /* initcheck: initialised bytes of each UB */
  sl_race *race;            /* racecheck: clocks and shadows */
  sl_team *teams;           /* teams by handle (team.c); 0 is TEAM_WORLD */
  int nteams;
  /* trace */
  sl_trace_rec *trace;
  size_t ntrace, captrace, maxtrace;
};

/* a launch of fewer blocks than this keeps the records its keys and pipes
** name in cache: loading them ahead (sim.c take, the pools' free lists) only
** costs instructions, about 170 a small put at one block. The loads pay from
** thousands of blocks on; 16 is not where they start to pay (not measured)
** but a bound that leaves launches of 16 blocks and more as they were. Only
** the cost depends on it: the loads change nothing the run computes */
#define SLI_PREFETCH_BLOCKS 16
/* are records loaded ahead in this launch? */
static inline int sli_prefetching(const sl_machine *m) { return m->nb >= SLI_PREFETCH_BLOCKS; }

/* machine.c */
int sli_domain(const sl_params *p);

/* sim.c */
int sli_pool_grow64(sl_poolmem *pm, void **items, int32_t n, int32_t cap, size_t sz);
void sli_pool_free64(sl_poolmem *pm);
void *sli_huge_map(size_t size, int rw);
void *sli_realloc(void *p, size_t n);
/* the size of a huge page (a transparent huge page of x86-64 and arm64 with
** 4 KiB base pages): what the engine's large blocks, pools and buffers are
** aligned to and advised in (mem.c, sim.c) */
#define SLI_HUGE_PAGE ((size_t)2 << 20)
int sli_free_room(sl_freelist *f, int32_t cap);
int sli_push(sl_machine *m, sl_time t, const sl_event *e);
sl_event *sli_newev(sl_machine *m, int32_t *id);
void sli_ev_release(sl_machine *m, int32_t id);

/* l2.c */
int sli_l2_new(sl_machine *m);
void sli_l2_reset(sl_machine *m);
int64_t sli_l2_xfer(sl_machine *m, int blk, int pipe, const sl_ins *o);
int64_t sli_l2_read(sl_machine *m, int pe, int32_t buf, int64_t off, int64_t n);
void sli_l2_touch(sl_machine *m, int pe, int32_t buf, int64_t off, int64_t n);
sl_event *sli_event_new(sl_machine *m, int kind, int blk, int32_t *id);
int sli_schedule(sl_machine *m, sl_time t, int32_t id);
int sli_schedule_as(sl_machine *m, sl_time t, int32_t id, int kind, int blk);
int sli_schedule_land(sl_machine *m, sl_time t, int32_t id, int blk, int path);
int sli_schedule_pipe(sl_machine *m, sl_time t, int blk, int pipe);
int sli_schedule_pipe_tie(sl_machine *m, sl_time t, uint64_t tie, int blk, int pipe);
void sli_hold_flush(sl_machine *m);
const sl_key *sli_next_key(sl_machine *m);
int sli_schedule_flow(sl_machine *m, sl_time t);
void sli_kheap_free(sl_kheap *hp);
void sli_wake(sl_machine *m, int blk, sl_time t);
sl_time sli_time_limit(const sl_machine *m, sl_time t0);
/* sync.c: the flag a parked wait_flag of S waits for fired */
void sli_flag_woken(sl_machine *m, int blk, sl_time t, sl_time now);
int sli_flag_ahead_step(sl_machine *m, int blk, sl_time t, int other_wake);
/* a tie of block blk's keys, taken now for a key made later */
uint64_t sli_block_tie(sl_machine *m, int32_t blk);
/* wake block blk with its key at (t, tie), its clock at clock (>= t) */
void sli_wake_key(sl_machine *m, int blk, sl_time t, uint64_t tie, sl_time clock);
/* 1 when the key being handled comes before (t, tie) */
int sli_handling_before(const sl_machine *m, sl_time now, sl_time t, uint64_t tie);
void sli_queue_only(sl_machine *m, int blk);
sl_time sli_top(sl_machine *m);
void sli_clear_events(sl_machine *m);
int sli_err(sl_machine *m, int code, int arg, const char *fmt, ...);
int sli_wait_what(const sl_machine *m, int blk, char *out, size_t size);
#define SLI_TRACING(m) ((m)->maxtrace > 0)
void sli_trace(sl_machine *m, sl_time start, sl_time end, int pe, int block,
               int kind, int path, int64_t bytes, int ppe, int pblock);

/* mem.c */
uint8_t *sli_ub_backed(sl_machine *m, const sl_addr *a);
uint8_t *sli_ub_run(sl_machine *m, const sl_addr *a, int64_t bytes);
int sli_bounds_check(sl_machine *m, const sl_loc *l, int64_t bytes, int write,
                     const char *what, int arg, int by_pe, int by_block);

/* bytes at an address (checked beforehand); NULL when unbacked (timing-only):
** every data path tests this one result (inline: every primitive asks) */
static inline uint8_t *sli_ptr(sl_machine *m, const sl_addr *a) {
  if (a->buf < 0) {
    if (m->ubmap) return sli_ub_backed(m, a);
    return m->ub[(size_t)a->pe * (size_t)m->p.cores + (size_t)a->core] + a->off;
  }
  if (m->bufs[a->buf].data == NULL) return NULL;
  return m->bufs[a->buf].data + m->bufs[a->buf].stride * a->pe + a->off;
}

/* the address of a location */
static inline void sli_addr(const sl_loc *l, sl_addr *a) {
  a->buf = l->buf;
  a->pe = l->pe;
  a->core = l->core;
  a->dtype = l->dtype;
  a->off = l->buf < 0 ? l->base + l->off : l->off;
}

/* SL_OK when bytes at l may be accessed, else the error or report of
** sli_bounds_check (mem.c); the passing case inline, the rest there */
static inline int sli_bounds(sl_machine *m, const sl_loc *l, int64_t bytes, int write,
                             const char *what, int arg, int by_pe, int by_block) {
  if (l->buf >= 0) {
    const sl_buf *b;
    if (l->buf >= m->nbufs) goto full;
    b = &m->bufs[l->buf];
    if (b->freed || (b->space != SL_SPACE_HOST && (l->pe < 0 || l->pe >= m->p.n_pes)))
      goto full;
  }
  if (bytes < 0 || l->off < 0 || l->off > l->cap || bytes > l->cap - l->off) goto full;
  return SL_OK;
full:
  return sli_bounds_check(m, l, bytes, write, what, arg, by_pe, by_block);
}
int sli_ub_reserve(sl_machine *m, int pe, int core, int64_t top);
int sli_ub_back(sl_machine *m, int pe, int core, int64_t base, int64_t bytes);
void sli_ub_free(sl_machine *m);
void sli_buf_data_free(sl_buf *b);   /* the bytes of buffer b go (mem.c) */

/* mte.c */
void sli_apply(sl_machine *m, sl_event *e, sl_time t);
/* the runaway guard's progress count: something new happened (sl_prim_tick) */
static inline void sli_progress(sl_machine *m) { m->nland++; }
/* the runaway guard: an access (a copy that lands, a scalar read) of block
** blk named by the fields f[0..n) is progress unless it repeats one of the
** last four its block made (the same places and size: a poll of a flag, a
** put of the same bytes to the same place again); a scan of new addresses
** ends (at its buffer's end), so it is not a spin. Inline: its callers' n is
** a constant, so the hash is unrolled */
static inline void sli_guard_access(sl_machine *m, int blk, const int64_t *f, size_t n) {
  sl_block *b = &m->blocks[blk];
  uint64_t h = 1469598103934665603u;
  size_t i;
#pragma GCC unroll 16   /* n is a constant at each call: a chain of xor-multiplies */
  for (i = 0; i < n; i++) h = (h ^ (uint64_t)f[i]) * 1099511628211u;
  if (b->gsig[0] == h || b->gsig[1] == h || b->gsig[2] == h || b->gsig[3] == h) return;
  b->gsig[b->gsig_i] = h;
  b->gsig_i = (b->gsig_i + 1) & 3;
  sli_progress(m);
}

/* the runaway guard's record of a GetValue of element i of ub (UB) by block blk */
static inline void sli_guard_read(sl_machine *m, int blk, const sl_loc *ub, int64_t i) {
  const int64_t f[] = { -1, ub->base, ub->off, i, ub->dtype };
  sli_guard_access(m, blk, f, sizeof(f) / sizeof(f[0]));
}
void sli_lazy_touch_any(sl_machine *m, const sl_addr *a, int64_t bytes);
/* bytes at a are written or (UB) read: the staging records that see them
** move their bytes before (the tests for no record inline: every landing
** asks, and a put's GM destination is seldom a staging source) */
static inline void sli_lazy_touch(sl_machine *m, const sl_addr *a, int64_t bytes) {
  if (m->nlzb > 0 && (a->buf < 0 || m->bufs[a->buf].lazy_src != 0))
    sli_lazy_touch_any(m, a, bytes);
}
void sli_lazy_reset(sl_machine *m);
/* the bytes of GM at a change (any write: a copy knows its bytes are there
** only while neither buffer moved, mte.c) */
static inline void sli_gm_written(sl_machine *m, const sl_addr *a) {
  if (a->buf >= 0) m->bufs[a->buf].gen++;
}
void sli_lazy_free(sl_machine *m);
sl_time sli_ps(double ns);
sl_time sli_alpha(const sl_machine *m, int path);

/* flow.c: max-min fair sharing of resources by transfers */
void sli_res_init(sl_machine *m);
void sli_res_clear(sl_machine *m, int release);
int sli_flow_start(sl_machine *m, int blk, int pipe, int gm_pe, int path, int64_t hit,
                   int64_t bytes, sl_time now);
/* a DMA engine's transfer from src_pe to dst_pe (through relay, -1: none)
** starts streaming now; at its end ev lands (and sig) lat later */
int sli_flow_start_dma(sl_machine *m, int blk, int eng, int get, int src_pe, int dst_pe,
                       int relay, int64_t bytes, sl_time now, int32_t ev, int32_t sig,
                       sl_time lat);
void sli_flow_settle(sl_machine *m, sl_time now);
void sli_flow_settle_due(sl_machine *m, sl_time next, int flow_next);
void sli_flow_due(sl_machine *m, sl_time t);

/* pipe.c: the instruction queues of V, MTE2 and MTE3 */
int sli_op_new(sl_machine *m, int kind, sl_ins **o);
int sli_enqueue(sl_machine *m, int blk, int pipe, int32_t op);
/* 1 when one of the block's queues holds more than queue_depth instructions */
static inline int sli_queue_full(const sl_machine *m, int blk) {
  const sl_block *b = &m->blocks[blk];
  int q;
  for (q = 0; q < SL_NQ; q++) if (b->nq[q] > m->p.queue_depth) return 1;
  return 0;
}
/* park the running block when a queue is over its depth (inline: every
** instruction S issues asks) */
static inline void sli_queue_park(sl_machine *m, int blk) {
  if (m->blocks[blk].state == B_RUN && sli_queue_full(m, blk))
    m->blocks[blk].state = B_QUEUE;
}
void sli_pipe_kick(sl_machine *m, int blk, int pipe, sl_time now);
/* chain.c: a pipelined chain as one flow (chain_flow) */
int sli_chain_issue(sl_machine *m, int blk, sl_pipe_xfer *x, int *taken);
void sli_chain_arm(sl_machine *m, int blk, int32_t op);
void sli_chain_give(sl_machine *m, sl_flow *fl);
double sli_chain_rest(const sl_flow *fl, double d);
void sli_chain_pass(sl_flow *fl, sl_time now);
int sli_chain_due(sl_machine *m, int32_t f, sl_time t);
/* a chain's ghost flow (its other leg's chunk, chain.c) is of this engine */
#define SLI_ENG_GHOST SL_NENG
/* flow.c: a ghost flow of block blk's pipe to or from GM of gm_pe (hit of its
** bytes, an MTE2 read, from the L2) starts now
** (its id, -1: out of memory); one ends; a chain flow goes back in the end heap */
int32_t sli_flow_ghost(sl_machine *m, int blk, int pipe, int gm_pe, int64_t hit,
                       int64_t bytes, sl_time now);
void sli_flow_ghost_end(sl_machine *m, int32_t f);
int sli_flow_chain_due(sl_machine *m, int32_t f, sl_time t);
int sli_flow_chain_only(const sl_machine *m, sl_time t);
void sli_flow_rekey(sl_machine *m, int32_t f);
void sli_chain_reset(sl_machine *m);
void sli_chain_free(sl_machine *m);
/* a flow starts: plain, or the chain flow armed */
static inline void sli_chain_take(sl_machine *m, sl_flow *fl) {
  fl->csize = fl->clast = 0;
  fl->cn = fl->gn = 0;
  fl->glat = 0;
  fl->gdue = -1;
  if (m->chain_armed) sli_chain_give(m, fl);
}
void sli_pipe_due(sl_machine *m, int blk, int pipe, sl_time t);
void sli_pipe_key(sl_machine *m, int blk, int pipe, sl_time t, uint64_t tie);
void sli_merge_close_due(sl_machine *m, int blk);

/* 1 when a key later than (t, tie) was taken (the latest key taken comes
** after it): a key (t, tie) on the heap would have been handled by now */
static inline int sli_passed(const sl_machine *m, sl_time t, uint64_t tie) {
  return t < m->mt || (t == m->mt && tie < m->mseq);
}

/* block b's merged kicks whose replaced key's place a taken key passed
** close (pipe.c merge): before the block's count is read or taken */
static inline void sli_merge_due(sl_machine *m, int blk) {
  const sl_block *b = &m->blocks[blk];
  if ((b->mg & 0x70) && sli_passed(m, b->mgmt, b->mgmtie)) sli_merge_close_due(m, blk);
}
void sli_xfer_done(sl_machine *m, int blk, int pipe, sl_time t);
/* engine.c: a DMA flow streamed its last byte; its transfer landed; EV_DMA */
void sli_dma_done(sl_machine *m, int blk, int eng, int32_t ev, int32_t sig, sl_time lat,
                  sl_time t);
void sli_dma_landed(sl_machine *m, int blk, int eng, sl_time t);
void sli_dma_start(sl_machine *m, const sl_event *e, sl_time t);
void sli_dma_due(sl_machine *m, int blk, int eng, sl_time t);
/* mte.c: the landing event of a copy of bytes from src to dst on pipe */
int sli_copy_event(sl_machine *m, int blk, int pipe, const sl_loc *dst, const sl_loc *src,
                   int64_t bytes, int op, int64_t whole, int32_t *id);
/* signals and flags steer control flow: their memory must hold bytes (sync.c) */
int sli_unbacked(sl_machine *m, const sl_loc *l, int arg, const char *fn);
/* SL_OK when l has bytes, else sli_unbacked's error (the test inline) */
static inline int sli_backed(sl_machine *m, const sl_loc *l, int arg, const char *fn) {
  sl_addr a;
  sli_addr(l, &a);
  return sli_ptr(m, &a) != NULL ? SL_OK : sli_unbacked(m, l, arg, fn);
}
/* a UB location must be the block's own: SL_OK when it is, inline; else the
** error of sli_own_ub_err (mte.c) */
int sli_own_ub_err(sl_machine *m, const sl_block *b, const sl_loc *l, int arg);
static inline int sli_own_ub(sl_machine *m, const sl_block *b, const sl_loc *l, int arg) {
  if (l->buf < 0 && l->pe == b->pe && l->core == b->b) return SL_OK;
  return sli_own_ub_err(m, b, l, arg);
}
void sli_landed(sl_machine *m, int blk, int pipe, int vec, int32_t ev, sl_time t);
/* the UB bytes [*lo, *hi) the copy or vector op of record e reads or writes
** (0: none): a copy's inline (each pending copy is added and dropped by its
** pipe's table, two a small put), a vector op's in mte.c */
int sli_vec_ub_span(const sl_event *e, int64_t *lo, int64_t *hi);
static inline int sli_ub_span(const sl_event *e, int64_t *lo, int64_t *hi) {
  const sl_addr *u;
  if (e->kind != EV_COPY) return sli_vec_ub_span(e, lo, hi);
  u = e->dst.buf < 0 ? &e->dst : e->src.buf < 0 ? &e->src : NULL;
  if (u == NULL) return 0;
  *lo = u->off;
  *hi = u->off + e->n;
  return 1;
}
int sli_drained(const sl_machine *m, const sl_block *b, int mask, sl_time *t);
int sli_drain(sl_machine *m, int blk, int mask, int act);
void sli_drain_done(sl_machine *m, int blk, sl_time t, int deferred);
int sli_mark(sl_machine *m, int blk, int frame, int end);
typedef struct sli_text { char s[96]; } sli_text;
sli_text sli_queues_text(const sl_machine *m, const sl_block *b);
const char *sli_act_name(const sl_block *b);
void sli_shadow_add(sl_machine *m, int pe, int block, int frame, int end, sl_time t);
int sli_tok_new(sl_machine *m, int32_t *tok);
void sli_pools_reset(sl_machine *m);
#define SL_DRAIN_ALL 0xE          /* V, MTE2, MTE3 */
#define SL_DRAIN_DMA(eng) (1 << (4 + (eng)))   /* a DMA engine's transfers */
#define SL_DRAIN_ENGINES 0x70     /* every DMA engine's */

/* check.c */
int sli_report(sl_machine *m, int kind, const sl_loc *l, int64_t bytes, int write,
               int blk, int pipe, const char *msg);
void sli_init_write_any(sl_machine *m, const sl_addr *a, int64_t bytes);
/* bytes at a were written (initcheck; inline when it is off) */
static inline void sli_init_write(sl_machine *m, const sl_addr *a, int64_t bytes) {
  if (m->p.check & SL_CHECK_INIT) sli_init_write_any(m, a, bytes);
}
int sli_init_read(sl_machine *m, const sl_addr *a, int64_t bytes, int blk, int pipe,
                  int32_t site);
void sli_check_block_done(sl_machine *m, int blk);
void sli_init_clear(sl_machine *m, const sl_addr *a, int64_t bytes);
sl_bytemap *sli_bmap_new(int64_t bytes);
void sli_bmap_free(sl_bytemap *b);
int sli_bmap_grow(sl_bytemap *b, int64_t bytes);

/* race.c */
void sli_race_free(sl_machine *m);
int sli_race_begin(sl_machine *m);
void sli_race_issue(sl_machine *m, int blk, int pipe);
void sli_race_set_flag(sl_machine *m, int blk, int ev, int id, int src);
void sli_race_wait_flag(sl_machine *m, int blk, int ev, int id, int dst);
void sli_race_barrier(sl_machine *m, int blk, int pipe);
void sli_race_meet(sl_machine *m, int pe);
void sli_race_meet_pes(sl_machine *m, int first, int stride, int n, int s_only);
void sli_race_meet_s(sl_machine *m);
void sli_race_dma_quiet(sl_machine *m, int blk);
void sli_race_quiet(sl_machine *m, int blk);
int32_t sli_race_release(sl_machine *m, int blk);
/* the release of what thread pipe of blk knows now (a DMA engine's signal) */
int32_t sli_race_release_pipe(sl_machine *m, int blk, int pipe);
void sli_race_acquire(sl_machine *m, int blk, int32_t snap);
void sli_race_acquire_thread(sl_machine *m, int blk, uint32_t from);
void sli_race_access(sl_machine *m, int blk, int pipe, const sl_loc *l, int64_t bytes,
                     int write);
void sli_race_signal(sl_machine *m, const sl_addr *a, int32_t snap, int add);
void sli_race_observe(sl_machine *m, int blk, const sl_addr *a);
void sli_race_copy_read(sl_machine *m, int blk, int pipe, const sl_addr *a, int64_t bytes);
void sli_report_race(sl_machine *m, const sl_loc *l, int64_t bytes, int write, int blk,
                     int pipe, int oblk, int opipe, int32_t osite, int owrite);
/* a synccheck report about flag (event * SL_NEVENT_IDS + id) of block blk's pipe */
int sli_report_flag(sl_machine *m, int blk, int pipe, int flag, const char *msg);

/* amo.c */
void sli_elem_land(sl_machine *m, const sl_event *e, sl_time t);

/* team.c */
int sli_team_world(sl_machine *m);
void sli_team_free(sl_machine *m);
void sli_team_reset(sl_machine *m);
void sli_team_arrive(sl_machine *m, int blk);
int sli_team_what(const sl_machine *m, const sl_block *b, char *out, size_t size);

/* p2p.c */
int sli_cmp_int(int cmp, int64_t v, int64_t x);
int sli_ws_eval(sl_machine *m, int blk, const sl_wset *w, int64_t *cur, int64_t *ret,
                int test);
int sli_ws_what(const sl_machine *m, const sl_block *b, char *out, size_t size);

/* sync.c */
void sli_notify(sl_machine *m, const sl_addr *a, int64_t bytes, sl_time t,
                int from_blk);
int sli_flag_set(sl_machine *m, sl_block *b, int ev, int id);
int sli_flag_wait(sl_machine *m, sl_block *b, int ev, int id);
int sli_park(sl_machine *m, int blk, const sl_addr *a);
void sli_signal_send(sl_machine *m, int blk);
void sli_arrive_all(sl_machine *m, int blk);
sl_time sli_barrier_cost(const sl_machine *m, int first, int last, int size);
void sli_arrive_pe(sl_machine *m, int blk);
void sli_poll_resume(sl_machine *m, int blk);
void sli_prof_read(sl_machine *m, int blk);
void sli_unpark_all(sl_machine *m);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
