/*
** lshmemlab.h -- what the files of the Lua binding (core/lshmemlab*.c) share:
** the userdata's types and the helpers more than one of them calls.
** Only the binding sees Lua; the engine (sl.h) knows nothing of it.
*/
#ifndef LSHMEMLAB_H
#define LSHMEMLAB_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lua.h"
#include "lauxlib.h"

#include "sl.h"

#define MACHINE_MT "shmemlab.machine"
#define VIEW_MT "shmemlab.view"
#define BLOCK_MT "shmemlab.block"
#define VIEW_MAGIC 0x53484d56u
#define MACH_MAGIC 0x53484d4du

/* a function the binding's files share, hidden outside the module */
#define LSL_FUNC __attribute__((visibility("hidden"))) extern
/* data the binding's files share */
#define LSL_DATA LSL_FUNC
/* a failure path kept out of its caller: every primitive's checks inline
** the cheap test and call this only when it fails, so the caller's frame
** need not hold the registers the error's message takes (some dozen
** instructions a primitive, saved and restored for nothing) */
#define LSL_COLD __attribute__((noinline, cold))
/* a thread-local the binding reads on every primitive: in the static TLS block
** (initial-exec), so a read is one load off the thread pointer instead of a
** __tls_get_addr call; a module loaded later (this one, by require) gets such
** a variable from the surplus the C library keeps for that (lhere: 16 bytes) */
#define LSL_TLS __attribute__((tls_model("initial-exec")))

/* a Lua line set_site resolved: the calling line and, for a primitive called
** from a shared helper of lua/shmemlab, the line outside it (vsrc NULL: none) */
typedef struct lsite {
  char *src, *vsrc;         /* copies of the chunks' sources */
  int line, vline;
  int32_t id;
} lsite;
#define NSITES 256          /* set_site's cache, direct-mapped */
/* the watchdog's view of one machine: the state inside its m:launch (NULL
** outside), a count of the primitives its blocks called, what the watchdog
** saw last, and whether it armed the count hook */
typedef struct wdslot {
  _Atomic(lua_State *) launcher;
  atomic_uint prog;
  lua_State *seen_launcher;
  unsigned seen_prog;
  atomic_int armed;
  atomic_int want;          /* the watchdog asks the owner thread to arm */
  pthread_t owner;          /* the thread that launches (wd_mu) */
  int listed;
  struct wdslot *next;
} wdslot;

/* hard event names a machine remembers (set_flag / wait_flag) */
#define EV_SEEN 4
/* dtype names a machine remembers (v:reinterpret) */
#define DT_SEEN 8

/* a machine as Lua sees it */
typedef struct lmach {
  uint32_t magic;           /* MACH_MAGIC: a cheap identity check */
  sl_machine *m;
  int cur;                  /* running block, -1 when none */
  lua_State *cur_co;        /* its coroutine */
  const void *cur_k;        /* its k table (lua_topointer) */
  int cur_pe;               /* its PE */
  int n_pes;                /* the machine's PEs */
  int64_t budget_left;      /* Lua instructions it may still run */
  int64_t budget;           /* the machine's instruction_budget */
  int check;                /* the machine's check bits */
  lsite *sites;             /* checked runs: NSITES resolved lines, or NULL */
  wdslot wd;                /* the runaway watchdog's view (instruction_budget) */
  struct lrun *run;         /* the running launch's blocks (NULL outside one) */
  int32_t keep_n;           /* views kept for the running launch (lsl_launch_keep) */
  const void *ev_s[EV_SEEN];  /* hard event names seen last (their string objects, */
  int ev_n[EV_SEEN];          /* kept alive in user value 3) and their numbers */
  const char *dt_s[DT_SEEN];  /* v:reinterpret's dtype names seen last (their */
  int dt_n[DT_SEEN];          /* strings, kept alive by it) and their dtypes */
} lmach;

/* what a launch keeps of each block: its coroutine (NULL before its first
** run and after its end; anchored in the machine's user value 4, or past
** POOL_MAX blocks in the launch's table at run->cos) and its k table
** (anchored at the bottom of the coroutine's stack), the event ids its live
** TQues hold (qids: bit i for id i, k:tque); and, in
** px[blk], the pipelined chain it issues (k:mte_get_pipelined: a block runs
** one at a time, so one each, kept across the chain's yields) */
typedef struct lblock { lua_State *co; const void *k; unsigned qids; } lblock;
typedef struct lrun {
  lblock *b;
  sl_pipe_xfer *px;
  int pool;                 /* the machine's kept coroutines (blk + 1) and blocks (0) */
  int cos, nblk, nargs;
  int kt;                   /* the machine's kept k tables (then the block metatable, */
                            /* and k's field names) */
  const void *kmt;          /* the block metatable's address (k_reusable) */
} lrun;

/* what this thread is resuming: the machine of the innermost launch and the
** watchdog slot of the block it runs (NULL: none); one thread-local, so a
** function finds both with one lookup */
typedef struct lhere { lmach *lm; wdslot *wd; } lhere;
LSL_DATA _Thread_local lhere lsl_here LSL_TLS;

/* the metatable of a view's table of sub-views (weak values), in the registry */
#define SUBS_MT "shmemlab.subviews"

/* a typed window on memory */
typedef struct lview {
  uint32_t magic;           /* VIEW_MAGIC: a cheap identity check */
  uint32_t gen;             /* UB: launch it belongs to */
  lmach *lm;
  sl_loc l;                 /* l.pe = -1: every PE (host) / own PE (kernel) */
  int64_t n;                /* elements in the window */
  int32_t host;             /* a host buffer's (a buffer's space never changes) */
  int32_t subs;             /* 1: a root view (user value 1: its machine),
                               which keeps the sub-views made from it and from
                               them (user value 2, made when first needed);
                               0: a sub-view (its one user value: its root,
                               which keeps the machine; no chain of views) */
  int64_t last_key;         /* a root of UB: the key in its table of sub-views */
                            /* of the view it holds in user value 3, the one it */
                            /* made last (LAST_NONE: none) */
} lview;

/* lview.last_key of a root that holds no view in user value 3 (no key is) */
#define LAST_NONE INT64_MIN

/* lshmemlab.c */
LSL_FUNC lmach *lsl_checkmach(lua_State *L, int i);
LSL_FUNC int lsl_checkdtype(lua_State *L, int i);
LSL_FUNC lview *lsl_checkanyview(lua_State *L, int i);
LSL_FUNC lview *lsl_checkview(lua_State *L, int i);
LSL_FUNC int lsl_checkmode(lua_State *L, int i);
LSL_FUNC int lsl_engine_error(lua_State *L, sl_machine *m, int st, int argbase);
LSL_FUNC lview *lsl_newview(lua_State *L, int machine_idx, lmach *lm, const sl_loc *l, int64_t n);

/* lshmemlab_machine.c */
LSL_FUNC char *lsl_copy_str(const char *s);
LSL_FUNC void lsl_runaway_blocks(lua_State *L, lmach *lm, int quiet);
LSL_FUNC void lsl_add_task(lua_State *L, int mi, int pe, const char *name, const char *type, double start, double stop);
LSL_FUNC void lsl_add_launch_tasks(lua_State *L, int mi, int ni, int npes, double start,
                                   const double *kus);

/* lshmemlab_launch.c */
LSL_FUNC void lsl_wd_list_remove(lmach *lm);
LSL_FUNC void lsl_launch_keep(lua_State *L, lmach *lm, int mi);
LSL_FUNC int lsl_wd_shutdown(lua_State *L);
LSL_FUNC int lsl_k_newindex(lua_State *L);
LSL_FUNC void lsl_wd_disarm(lmach *lm, lua_State *co);

/* lshmemlab_view.c */
LSL_FUNC uint8_t *lsl_view_ptr(lua_State *L, lview *v, int pe, int64_t elems, int write);
LSL_FUNC void lsl_push_pe_view(lua_State *L, int i, lview *v, int pe);

/* lshmemlab_kernel.c */
LSL_FUNC void lsl_set_site(lua_State *L, lmach *lm);
LSL_FUNC lmach *lsl_kcheck(lua_State *L, int *blk, lua_CFunction self);
LSL_FUNC lmach *lsl_kcheck_q(lua_State *L, int *blk);
LSL_FUNC lmach *lsl_kcheck_s(lua_State *L, int *blk);
LSL_FUNC sl_loc lsl_kloc_full(lua_State *L, lmach *lm, int i, const lview *v);
LSL_FUNC int lsl_kdone(lua_State *L, lmach *lm, int blk, int st, int nret);
LSL_FUNC int lsl_checkpe(lua_State *L, lmach *lm, int i);

/* lshmemlab_sync.c */
LSL_FUNC void lsl_p2p_register(lua_State *L);
LSL_FUNC void lsl_amo_register(lua_State *L);
LSL_FUNC void lsl_team_register(lua_State *L, int mi, int bi);

/* lshmemlab_route.c */
LSL_FUNC int lsl_route_uniform(lua_State *L);
LSL_FUNC int lsl_route_count(lua_State *L);

/* the method tables luaopen_shmemlab_core puts together */
LSL_FUNC int lsl_new(lua_State *L);
LSL_FUNC void lsl_open_view(lua_State *L);
LSL_FUNC void lsl_push_tque_methods(lua_State *L);
LSL_DATA const luaL_Reg lsl_machine_methods[], lsl_machine_meta[], lsl_launch_methods[],
  lsl_report_methods[], lsl_team_methods[], lsl_kernel_methods[], lsl_sync_methods[],
  lsl_scalar_methods[];

/* integer argument i of a primitive: luaL_checkinteger, without its extra
** call when the argument is an integer */
static inline lua_Integer kint(lua_State *L, int i) {
  int ok;
  lua_Integer v = lua_tointegerx(L, i, &ok);
  return ok ? v : luaL_checkinteger(L, i);
}

/* the view at index i, or NULL: a full userdata of our size carrying the
** magic is one of our views (luaL_testudata's metatable check costs a
** registry lookup by name; a light userdata or another value has a
** different raw length, so the magic is read only from one of our size) */
static inline lview *lsl_toview(lua_State *L, int i) {
  lview *v = (lview *)lua_touserdata(L, i);
  if (v == NULL || lua_rawlen(L, i) != sizeof(lview) || v->magic != VIEW_MAGIC) return NULL;
  return v;
}

/* location of view v (argument i; NULL: not a view) as seen by the running
** block: a view of this machine's GM (its own PE's when it names none) or of
** UB of this launch inline, anything else checked by lsl_kloc_full */
static inline sl_loc lsl_kloc_of(lua_State *L, lmach *lm, int i, const lview *v) {
  if (v != NULL && v->lm == lm &&
      (v->l.buf >= 0 ? !v->host : v->gen == sl_machine_gen(lm->m))) {
    sl_loc l = v->l;
    if (l.buf >= 0 && l.pe < 0) l.pe = lm->cur_pe;
    return l;
  }
  return lsl_kloc_full(L, lm, i, v);
}

/* location of view argument i as seen by the running block */
static inline sl_loc lsl_kloc(lua_State *L, lmach *lm, int i) {
  return lsl_kloc_of(L, lm, i, lsl_toview(L, i));
}

/* bytes of one element of a view */
static inline int64_t lsl_esize(const lview *v) { return (int64_t)sl_dtype_size(v->l.dtype); }

#endif
