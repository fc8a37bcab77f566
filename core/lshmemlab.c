/*
** lshmemlab.c -- the Lua binding: the module shmemlab.core.
** Machines and views are userdata; a block's context `k` is a table whose
** methods are the primitives. The launch runs one coroutine per (PE, block)
** and resumes them in the order the engine's clock gives.
** This is the only file of the core that knows Lua.
*/
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

/* a Lua line set_site resolved: the calling line and, for a primitive called
** from a shared helper of lua/shmemlab, the line outside it (vsrc NULL: none) */
typedef struct lsite {
  char *src, *vsrc;         /* copies of the chunks' sources */
  int line, vline;
  int32_t id;
} lsite;
#define NSITES 256          /* set_site's cache, direct-mapped */
/* the watchdog's view of one machine: the coroutine inside lua_resume
** (NULL outside), a count of the primitives it called, what the watchdog
** saw last, and whether it armed the count hook */
typedef struct wdslot {
  _Atomic(lua_State *) co;
  atomic_uint prog;
  lua_State *seen_co;
  unsigned seen_prog;
  atomic_int armed;
  atomic_int want;          /* the watchdog asks the owner thread to arm */
  pthread_t owner;          /* the thread that launches (wd_mu) */
  int listed;
  struct wdslot *next;
} wdslot;

/* hard event names a machine remembers (set_flag / wait_flag) */
#define EV_SEEN 4

/* a machine as Lua sees it */
typedef struct lmach {
  uint32_t magic;           /* MACH_MAGIC: a cheap identity check */
  sl_machine *m;
  int cur;                  /* running block, -1 when none */
  lua_State *cur_co;        /* its coroutine */
  const void *cur_k;        /* its k table (lua_topointer) */
  int cur_pe;               /* its PE */
  int n_pes;                /* the machine's PEs */
  int npool;                /* coroutines of ended blocks kept (user value 4) */
  int64_t budget_left;      /* Lua instructions it may still run */
  int64_t budget;           /* the machine's instruction_budget */
  int check;                /* the machine's check bits */
  lsite *sites;             /* checked runs: NSITES resolved lines, or NULL */
  wdslot wd;                /* the runaway watchdog's view (instruction_budget) */
  struct lrun *run;         /* the running launch's blocks (NULL outside one) */
  const void *ev_s[EV_SEEN];  /* hard event names seen last (their string objects, */
  int ev_n[EV_SEEN];          /* kept alive in user value 3) and their numbers */
} lmach;

/* what this thread is resuming: the machine of the innermost launch and the
** watchdog slot of the block it runs (NULL: none); one thread-local, so a
** function finds both with one lookup */
typedef struct lhere { lmach *lm; wdslot *wd; } lhere;
static _Thread_local lhere here_tls;

/* sub-views a view keeps (user values 2.., their windows in sub_off, sub_n) */
#define SUB_CACHE 2

/* a typed window on memory */
typedef struct lview {
  uint32_t magic;           /* VIEW_MAGIC: a cheap identity check */
  uint32_t gen;             /* UB: launch it belongs to */
  lmach *lm;
  sl_loc l;                 /* l.pe = -1: every PE (host) / own PE (kernel) */
  int64_t n;                /* elements in the window */
  int32_t host;             /* a host buffer's (a buffer's space never changes) */
  int32_t sub_next;         /* the sub-view cache's slot to fill next; -1: a
                               sub-view, which keeps none (no chain of views) */
  int64_t sub_off[SUB_CACHE], sub_n[SUB_CACHE];   /* its windows (n -1: empty) */
} lview;



/* ------------------------------------------------------------------ */
/* checks                                                              */
/* ------------------------------------------------------------------ */

/* the machine at index i, not closed */
static lmach *checkmach(lua_State *L, int i) {
  lmach *lm = (lmach *)luaL_checkudata(L, i, MACHINE_MT);
  if (lm->m == NULL) luaL_argerror(L, i, "machine is closed");
  return lm;
}

/* a dtype name at index i (an unknown one names every dtype of the table) */
static int checkdtype(lua_State *L, int i) {
  const char *name = luaL_checkstring(L, i);
  int t = sl_dtype_find(name);
  if (t < 0) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "unknown dtype '%s' (", name);
    luaL_addvalue(&b);
    for (t = 0; t < SL_NDTYPES; t++) {
      if (t > 0) luaL_addchar(&b, ' ');
      luaL_addstring(&b, sl_dtype_name((sl_dtype)t));
    }
    luaL_addchar(&b, ')');
    luaL_pushresult(&b);
    luaL_argerror(L, i, lua_tostring(L, -1));
  }
  return t;
}

/* the view at index i, or NULL: a full userdata of our size carrying the
** magic is one of our views (luaL_testudata's metatable check costs a
** registry lookup by name; a light userdata or another value has a
** different raw length, so the magic is read only from one of our size) */
static lview *toview(lua_State *L, int i) {
  lview *v = (lview *)lua_touserdata(L, i);
  if (v == NULL || lua_rawlen(L, i) != sizeof(lview) || v->magic != VIEW_MAGIC) return NULL;
  return v;
}

/* a view at index i, its machine open or not */
static lview *checkanyview(lua_State *L, int i) {
  lview *v = toview(L, i);
  return v != NULL ? v : (lview *)luaL_checkudata(L, i, VIEW_MT);
}

/* a view at index i */
static lview *checkview(lua_State *L, int i) {
  lview *v = checkanyview(L, i);
  if (v->lm->m == NULL) luaL_argerror(L, i, "machine is closed");
  return v;
}

/* the allocation mode at index i: nil, or "backed" (bytes in a timing-only run) */
static int checkmode(lua_State *L, int i) {
  static const char *const modes[] = { "backed", NULL };
  if (lua_isnoneornil(L, i)) return 0;
  luaL_checkoption(L, i, NULL, modes);
  return SL_ALLOC_BACKED;
}

/* raise the engine's last error as a Lua error (arg errors Lua-style) */
static int engine_error(lua_State *L, sl_machine *m, int st, int argbase) {
  if (st == SL_ESKIP) return 0;         /* checked run: reported and skipped */
  if (st == SL_EARG && sl_machine_err_arg(m) > 0)
    return luaL_argerror(L, sl_machine_err_arg(m) + argbase, sl_machine_err(m));
  return luaL_error(L, "%s", sl_machine_err(m));
}

/* push a new view; keeps: it keeps its last sub-views (not for a sub-view) */
static lview *newview(lua_State *L, int machine_idx, lmach *lm, const sl_loc *l,
                      int64_t n, int keeps) {
  lview *v = (lview *)lua_newuserdatauv(L, sizeof(lview), keeps ? 1 + SUB_CACHE : 1);
  int i;
  for (i = 0; i < SUB_CACHE; i++) v->sub_n[i] = -1;
  v->sub_next = keeps ? 0 : -1;
  v->magic = VIEW_MAGIC;
  v->lm = lm;
  v->l = *l;
  v->n = n;
  v->gen = 0;
  v->host = l->buf >= 0 && sl_getbuf(lm->m, l->buf)->space == SL_SPACE_HOST;
  lua_getiuservalue(L, machine_idx < 0 ? machine_idx - 1 : machine_idx, 2);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, machine_idx < 0 ? machine_idx - 1 : machine_idx);
  lua_setiuservalue(L, -2, 1);
  return v;
}

/* ------------------------------------------------------------------ */
/* the runaway watchdog                                               */
/* ------------------------------------------------------------------ */

#define HOOK_STEP 10000
#define WD_TICK_MS 20

/* count hook of a kernel coroutine, armed by the watchdog: a block that runs
** its budget of Lua instructions without calling a primitive (an endless
** loop) is stopped */
static void budget_hook(lua_State *co, lua_Debug *ar) {
  lmach *lm = *(lmach **)lua_getextraspace(co);
  (void)ar;
  if (lm != NULL && lm->cur_co == co && (lm->budget_left -= HOOK_STEP) < 0)
    luaL_error(co, "instruction budget exceeded: the block ran more Lua instructions "
               "than the machine option instruction_budget without calling a "
               "primitive (an endless loop?)");
}

/*
** The watchdog. A count hook makes Lua 5.4 trap every instruction, so no
** hook is set while blocks run: one thread per process looks at the running
** block of every machine each WD_TICK_MS and, when it has called no
** primitive since the last look, asks the thread running it to arm the count
** hook: it sets the slot's want and sends WD_SIGNAL to that thread, whose
** handler calls lua_sethook on the coroutine it is running. lua_sethook may
** be called from a signal handler of the running thread (lua.c does so); it
** may not be called from another thread, which would walk the coroutine's
** call chain while it changes. The next primitive disarms the hook. The lock
** is taken by the watchdog for each look, and by the Lua side only to list a
** machine (or a new launching thread), to unlist it, and when a coroutine
** ends (so that no look still uses it). SIGURG is ignored by default, so a
** late signal after the handler is gone does nothing.
*/
#define WD_SIGNAL SIGURG
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static wdslot *wd_list;
static int wd_started, wd_stop;
static pthread_t wd_thread;
static struct sigaction wd_oldact;      /* WD_SIGNAL's action before ours */

/* WD_SIGNAL on a launching thread: arm the count hook of the block it runs,
** if the watchdog asked for it (async-signal-safe: atomics and lua_sethook) */
static void wd_on_signal(int sig) {
  wdslot *w = here_tls.wd;
  lua_State *co;
  (void)sig;
  if (w == NULL || !atomic_exchange(&w->want, 0)) return;
  if ((co = atomic_load(&w->co)) == NULL) return;
  atomic_store(&w->armed, 1);
  lua_sethook(co, budget_hook, LUA_MASKCOUNT, HOOK_STEP);
}

/* one look at every listed machine (wd_mu held) */
static void wd_look(void) {
  wdslot *w;
  for (w = wd_list; w != NULL; w = w->next) {
    lua_State *co = atomic_load(&w->co);
    unsigned prog = atomic_load_explicit(&w->prog, memory_order_relaxed);
    if (co != NULL && co == w->seen_co && prog == w->seen_prog && !atomic_load(&w->armed)) {
      atomic_store(&w->want, 1);
      pthread_kill(w->owner, WD_SIGNAL);
    }
    w->seen_co = co;
    w->seen_prog = prog;
  }
}

/* the watchdog thread: a look every WD_TICK_MS until told to stop */
static void *wd_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wd_mu);
  while (!wd_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += WD_TICK_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&wd_cv, &wd_mu, &ts);
    if (!wd_stop) wd_look();
  }
  pthread_mutex_unlock(&wd_mu);
  return NULL;
}

/* list a machine for the watchdog (starting it and its signal handler) with
** the calling thread as its owner; 0 when no thread could start */
static int wd_list_add(lmach *lm) {
  int ok = 1;
  if (lm->wd.listed && pthread_equal(lm->wd.owner, pthread_self())) return 1;
  pthread_mutex_lock(&wd_mu);
  if (!wd_started) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = wd_on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ok = sigaction(WD_SIGNAL, &sa, &wd_oldact) == 0;
    wd_stop = 0;
    wd_started = ok && pthread_create(&wd_thread, NULL, wd_main, NULL) == 0;
    if (ok && !wd_started) sigaction(WD_SIGNAL, &wd_oldact, NULL);
    ok = wd_started;
  }
  if (ok) {
    lm->wd.owner = pthread_self();
    if (!lm->wd.listed) {
      lm->wd.next = wd_list;
      wd_list = &lm->wd;
      lm->wd.listed = 1;
    }
  }
  pthread_mutex_unlock(&wd_mu);
  return ok;
}

/* take a machine off the watchdog's list */
static void wd_list_remove(lmach *lm) {
  wdslot **p;
  if (!lm->wd.listed) return;
  pthread_mutex_lock(&wd_mu);
  for (p = &wd_list; *p != NULL; p = &(*p)->next)
    if (*p == &lm->wd) { *p = lm->wd.next; break; }
  lm->wd.listed = 0;
  pthread_mutex_unlock(&wd_mu);
}

/* __gc of the module's sentinel: the watchdog thread ends before the
** library can be unloaded */
static int wd_shutdown(lua_State *L) {
  (void)L;
  pthread_mutex_lock(&wd_mu);
  if (wd_started) {
    wd_stop = 1;
    pthread_cond_signal(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
    pthread_join(wd_thread, NULL);
    sigaction(WD_SIGNAL, &wd_oldact, NULL);
    pthread_mutex_lock(&wd_mu);
    wd_started = 0;
  }
  pthread_mutex_unlock(&wd_mu);
  return 0;
}

/* the primitive of block co ran: disarm the hook the watchdog armed */
static void wd_disarm(lmach *lm, lua_State *co) {
  atomic_store(&lm->wd.armed, 0);
  lua_sethook(co, NULL, 0, 0);
}

/* ------------------------------------------------------------------ */
/* machine                                                             */
/* ------------------------------------------------------------------ */

typedef struct pfield { const char *name; size_t off; char kind; } pfield;
#define PF(n, f, k) { n, offsetof(sl_params, f), k }
static const pfield pfields[] = {
  PF("pes", n_pes, 'i'), PF("aiv_cores", cores, 'i'),
  PF("ub_bytes", ub_bytes, 'l'), PF("pes_per_server", pes_per_server, 'i'),
  PF("dies_per_card", dies_per_card, 'i'), PF("hccs_switch", hccs_switch, 'b'),
  PF("supernode_dies", supernode_dies, 'i'),
  PF("core_ghz", core_ghz, 'd'), PF("cycle2us", cycle2us, 'd'),
  PF("mte2_bytes_per_cycle", mte2_bytes_per_cycle, 'd'),
  PF("mte3_bytes_per_cycle", mte3_bytes_per_cycle, 'd'),
  PF("mte_setup_ns", mte_setup_ns, 'd'), PF("issue_ns", issue_ns, 'd'),
  PF("l2_bytes", l2_bytes, 'l'), PF("l2_read_bytes_per_cycle", l2_read_bytes_per_cycle, 'd'),
  PF("scalar_ns", scalar_ns, 'd'),
  PF("vec_bytes_per_cycle", vec_bytes_per_cycle, 'd'),
  PF("vec_setup_ns", vec_setup_ns, 'd'), PF("hbm_GBps", hbm_GBps, 'd'),
  PF("local_alpha_ns", local_alpha_ns, 'd'), PF("hccs_GBps", hccs_GBps, 'd'),
  PF("hccs_alpha_ns", hccs_alpha_ns, 'd'),
  PF("hccs_read_eff", hccs_read_eff, 'd'),
  PF("hccs_write_eff", hccs_write_eff, 'd'), PF("sio_GBps", sio_GBps, 'd'),
  PF("sio_alpha_ns", sio_alpha_ns, 'd'), PF("rdma_GBps", rdma_GBps, 'd'),
  PF("rdma_alpha_ns", rdma_alpha_ns, 'd'), PF("signal_ns", signal_ns, 'd'),
  PF("sdma_GBps", sdma_GBps, 'd'), PF("sdma_setup_ns", sdma_setup_ns, 'd'),
  PF("rdma_setup_ns", rdma_setup_ns, 'd'), PF("udma_GBps", udma_GBps, 'd'),
  PF("udma_setup_ns", udma_setup_ns, 'd'), PF("sdma_task_ns", sdma_task_ns, 'd'),
  PF("rdma_task_ns", rdma_task_ns, 'd'), PF("udma_task_ns", udma_task_ns, 'd'),
  PF("dma_queue_depth", dma_queue_depth, 'i'),
  PF("poll_ns", poll_ns, 'd'), PF("pipe_barrier_ns", pipe_barrier_ns, 'd'),
  PF("queue_depth", queue_depth, 'i'),
  PF("barrier_base_ns", barrier_base_ns, 'd'),
  PF("sync_all_ns", sync_all_ns, 'd'), PF("launch_us", launch_us, 'd'),
  PF("host_GBps", host_GBps, 'd'), PF("host_setup_us", host_setup_us, 'd'),
  PF("sym_heap_bytes", sym_heap_bytes, 'l'), PF("prof_pe", prof_pe, 'i'),
  PF("time_limit_us", time_limit_us, 'l'), PF("check", check, 'i'),
  PF("instruction_budget", instruction_budget, 'l'),
  PF("spin_limit", spin_limit, 'l'), PF("primitive_limit", primitive_limit, 'l'),
  PF("scalar_amo", scalar_amo, 'b'),
  PF("timing_only", timing_only, 'b'),
  { NULL, 0, 0 }
};

/* core.new(params): a machine from a flat table of every timing figure */
static int l_new(lua_State *L) {
  sl_params p;
  const pfield *f;
  lmach *lm;
  int st;
  luaL_checktype(L, 1, LUA_TTABLE);
  memset(&p, 0, sizeof(p));
  for (f = pfields; f->name; f++) {
    char *at = (char *)&p + f->off;
    int t = lua_getfield(L, 1, f->name);
    if (t == LUA_TNIL)
      return luaL_error(L, "bad argument #1 to 'new' (field '%s' missing)", f->name);
    if (f->kind == 'b') *(int *)at = lua_toboolean(L, -1);
    else if (f->kind == 'd') {
      int ok;
      double d = (double)lua_tonumberx(L, -1, &ok);
      if (!ok) return luaL_error(L, "bad argument #1 to 'new' (field '%s' "
                                 "must be a number)", f->name);
      *(double *)at = d;
    } else {
      int ok;
      lua_Integer n = lua_tointegerx(L, -1, &ok);
      if (!ok) return luaL_error(L, "bad argument #1 to 'new' (field '%s' "
                                 "must be an integer)", f->name);
      if (f->kind == 'i') {
        if (n < -2147483647 || n > 2147483647)
          return luaL_error(L, "bad argument #1 to 'new' (field '%s' out of "
                            "range)", f->name);
        *(int *)at = (int)n;
      } else *(int64_t *)at = (int64_t)n;
    }
    lua_pop(L, 1);
  }
  lm = (lmach *)lua_newuserdatauv(L, sizeof(lmach), 4);
  lm->magic = MACH_MAGIC;
  lm->run = NULL;
  lm->m = NULL;
  lm->cur = -1;
  lm->sites = NULL;
  memset(&lm->wd, 0, sizeof(lm->wd));
  luaL_setmetatable(L, MACHINE_MT);
  lm->m = sl_machine_new(&p, &st);
  if (lm->m == NULL) {
    if (st == SL_EARG)
      return luaL_error(L, "bad argument #1 to 'new' (profile figure '%s' is "
                        "out of range)", sl_params_check(&p));
    return luaL_error(L, "not enough memory for a machine of %d PEs", p.n_pes);
  }
  lm->budget = p.instruction_budget;
  lm->n_pes = p.n_pes;
  lm->check = p.check;
  lua_newtable(L);                       /* the facade's own fields */
  lua_setiuservalue(L, -2, 1);
  luaL_getmetatable(L, VIEW_MT);         /* its views' metatable, at hand for newview */
  lua_setiuservalue(L, -2, 2);
  memset(lm->ev_s, 0, sizeof(lm->ev_s));
  lua_createtable(L, EV_SEEN, 0);        /* the event names of ev_s */
  lua_setiuservalue(L, -2, 3);
  lm->npool = 0;
  lua_newtable(L);                       /* the coroutines of ended blocks */
  lua_setiuservalue(L, -2, 4);
  return 1;
}

/* forget set_site's cache */
static void sites_free(lmach *lm) {
  int i;
  if (lm->sites == NULL) return;
  for (i = 0; i < NSITES; i++) { free(lm->sites[i].src); free(lm->sites[i].vsrc); }
  free(lm->sites);
  lm->sites = NULL;
}

/* a copy of a string (NULL when out of memory) */
static char *copy_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

/* __gc / __close / close: free the engine (idempotent) */
static int m_close(lua_State *L) {
  lmach *lm = (lmach *)luaL_checkudata(L, 1, MACHINE_MT);
  if (lm->m != NULL && !sl_running(lm->m)) {
    wd_list_remove(lm);
    sl_machine_free(lm->m);
    lm->m = NULL;
    sites_free(lm);
    lm->npool = 0;                        /* its kept coroutines may go */
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 4);
  }
  return 0;
}

/* m:state(): the facade's table kept with the machine */
static int m_state(lua_State *L) {
  luaL_checkudata(L, 1, MACHINE_MT);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/* allocate in a space: (dtype, n [, name [, mode]]) from argument a on, at
** a multiple of align bytes of the heap, zeroed for initcheck too (calloc) */
static int alloc_at(lua_State *L, int space, int a, int64_t align, int zeroed) {
  lmach *lm = checkmach(L, 1);
  int dt = checkdtype(L, a);
  lua_Integer n = luaL_checkinteger(L, a + 1);
  const char *name = luaL_optstring(L, a + 2, NULL);
  int flags = checkmode(L, a + 3);
  const sl_buf *b;
  sl_loc l;
  int id;
  if (n <= 0) return luaL_argerror(L, a + 1, "size must be positive");
  if (sl_running(lm->m)) return luaL_error(L, "cannot allocate during a launch");
  id = sl_alloc_sym(lm->m, space, dt, (int64_t)n, name, flags, align, zeroed);
  if (id < 0) return engine_error(L, lm->m, -id, 1);
  b = sl_getbuf(lm->m, id);
  memset(&l, 0, sizeof(l));
  l.buf = id;
  l.pe = -1;
  l.dtype = dt;
  l.cap = b->bytes;
  newview(L, 1, lm, &l, b->n, 1);
  return 1;
}

/* m:alloc(dtype, n [, name [, mode]]): GM buffer on every PE */
static int m_alloc(lua_State *L) { return alloc_at(L, SL_SPACE_GM, 2, 16, 0); }

/* m:malloc(dtype, n [, name [, mode]]): symmetric heap buffer */
static int m_malloc(lua_State *L) { return alloc_at(L, SL_SPACE_SYM, 2, 16, 0); }

/* m:calloc(dtype, n [, name [, mode]]): aclshmem_calloc, zeroed (and written,
** for initcheck) */
static int m_calloc(lua_State *L) { return alloc_at(L, SL_SPACE_SYM, 2, 16, 1); }

/* m:align(alignment, dtype, n [, name [, mode]]): aclshmem_align, at a
** multiple of alignment bytes of the heap (a power of two; 16 at least in effect) */
static int m_align(lua_State *L) {
  lua_Integer a = luaL_checkinteger(L, 2);
  luaL_argcheck(L, a > 0 && (a & (a - 1)) == 0 && a <= ((lua_Integer)1 << 40), 2,
                "alignment must be a power of two up to 2^40");
  return alloc_at(L, SL_SPACE_SYM, 3, a < 16 ? 16 : (int64_t)a, 0);
}

/* m:host(dtype, n [, name [, mode]]): host buffer */
static int m_host(lua_State *L) { return alloc_at(L, SL_SPACE_HOST, 2, 16, 0); }

/* m:free(buf): aclshmem_free; free(nil) does nothing */
static int m_free(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  lview *v;
  const sl_buf *b;
  int st;
  if (lua_isnoneornil(L, 2)) return 0;
  v = checkview(L, 2);
  if (v->lm != lm || v->l.buf < 0)
    return luaL_argerror(L, 2, "not a buffer of this machine");
  b = sl_getbuf(lm->m, v->l.buf);
  if (b->space != SL_SPACE_SYM && b->space != SL_SPACE_GM && b->space != SL_SPACE_HOST)
    return luaL_argerror(L, 2, "not a buffer");
  if ((st = sl_free_view(lm->m, &v->l, v->n * (int64_t)sl_dtype_size(v->l.dtype))) != SL_OK)
    return engine_error(L, lm->m, st, 1);
  return 0;
}

/* m:params(): the figures in force */
static int m_params(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  const sl_params *p = sl_machine_params(lm->m);
  const pfield *f;
  lua_newtable(L);
  for (f = pfields; f->name; f++) {
    const char *at = (const char *)p + f->off;
    if (f->kind == 'b') lua_pushboolean(L, *(const int *)at);
    else if (f->kind == 'd') lua_pushnumber(L, (lua_Number)*(const double *)at);
    else if (f->kind == 'i') lua_pushinteger(L, *(const int *)at);
    else lua_pushinteger(L, (lua_Integer)*(const int64_t *)at);
    lua_setfield(L, -2, f->name);
  }
  return 1;
}

/* m:now(): virtual time in microseconds */
static int m_now(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  lua_pushnumber(L, (lua_Number)sl_machine_now(lm->m) / SL_PS_PER_US);
  return 1;
}

/* m:events(): events the scheduler handled since the machine was made */
static int m_events(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  lua_pushinteger(L, (lua_Integer)sl_machine_events(lm->m));
  return 1;
}

/* m:flow_stats(): {starts, continued, settles, rerated, fills, filled} of the
** flow solver since the machine was made: transfers started, those that went
** on in their pipe's last flow, instants settled, flows re-rated, fills, and
** the flows those fills filled (widening fills again with more) */
static int m_flow_stats(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  sl_flow_stats s;
  sl_machine_flow_stats(lm->m, &s);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)s.starts); lua_setfield(L, -2, "starts");
  lua_pushinteger(L, (lua_Integer)s.continued); lua_setfield(L, -2, "continued");
  lua_pushinteger(L, (lua_Integer)s.settles); lua_setfield(L, -2, "settles");
  lua_pushinteger(L, (lua_Integer)s.rerated); lua_setfield(L, -2, "rerated");
  lua_pushinteger(L, (lua_Integer)s.fills); lua_setfield(L, -2, "fills");
  lua_pushinteger(L, (lua_Integer)s.filled); lua_setfield(L, -2, "filled");
  return 1;
}

/* m:heap_used(): bytes of the symmetric heap in use */
static int m_heap_used(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  lua_pushinteger(L, (lua_Integer)sl_heap_used(lm->m));
  return 1;
}

/* m:path_bytes(): bytes moved so far per kind of path */
static int m_path_bytes(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int i;
  lua_createtable(L, 0, SL_NPATHS);
  for (i = 0; i < SL_NPATHS; i++) {
    lua_pushinteger(L, (lua_Integer)sl_path_bytes(lm->m, i));
    lua_setfield(L, -2, sl_path_name(i));
  }
  return 1;
}

/* m:path(a, b): kind of path between two PEs */
static int m_path(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int n = sl_machine_params(lm->m)->n_pes;
  lua_Integer a = luaL_checkinteger(L, 2), b = luaL_checkinteger(L, 3);
  luaL_argcheck(L, a >= 0 && a < n, 2, "PE out of range");
  luaL_argcheck(L, b >= 0 && b < n, 3, "PE out of range");
  lua_pushstring(L, sl_path_name(sl_path(lm->m, (int)a, (int)b)));
  return 1;
}

/* the rows of one PE (on top, the machine's state below its tasks table) at
** twice the state's task_rows: the oldest half goes (m:tasks returns the
** last task_rows; 0 keeps all) */
static void task_trim(lua_State *L) {
  lua_Integer cap, n = (lua_Integer)lua_rawlen(L, -1), i;
  lua_getfield(L, -3, "task_rows");
  cap = lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (cap <= 0 || n < 2 * cap) return;
  for (i = 1; i <= cap; i++) {
    lua_rawgeti(L, -1, n - cap + i);
    lua_rawseti(L, -2, i);
  }
  for (i = n; i > cap; i--) {
    lua_pushnil(L);
    lua_rawseti(L, -2, i);
  }
}

/* append a task row {name, type, stream_id, task_id, start_us, stop_us} to
** state.tasks[pe] of the machine at index mi (msprof's task_time rows) */
static void add_task(lua_State *L, int mi, int pe, const char *name,
                     const char *type, double start, double stop) {
  lua_Integer id;
  lua_getiuservalue(L, mi, 1);
  lua_getfield(L, -1, "task_id");
  id = lua_tointeger(L, -1) + 1;
  lua_pop(L, 1);
  lua_pushinteger(L, id);
  lua_setfield(L, -2, "task_id");
  if (lua_getfield(L, -1, "tasks") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "tasks");
  }
  if (lua_rawgeti(L, -1, pe) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, pe);
  }
  lua_createtable(L, 0, 6);
  lua_pushstring(L, name); lua_setfield(L, -2, "name");
  lua_pushstring(L, type); lua_setfield(L, -2, "type");
  lua_pushinteger(L, 1); lua_setfield(L, -2, "stream_id");
  lua_pushinteger(L, id); lua_setfield(L, -2, "task_id");
  lua_pushnumber(L, (lua_Number)start); lua_setfield(L, -2, "start_us");
  lua_pushnumber(L, (lua_Number)stop); lua_setfield(L, -2, "stop_us");
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  task_trim(L);
  lua_pop(L, 3);
}

/* m:memcpy(dst, src [, n]): aclrtMemcpy host<->device; returns its cost */
static int m_memcpy(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  lview *d = checkview(L, 2), *s = checkview(L, 3);
  lua_Integer n = luaL_optinteger(L, 4, d->n < s->n ? d->n : s->n);
  sl_loc dl = d->l, sl = s->l;
  double cost = 0, before;
  int st;
  if (d->lm != lm || s->lm != lm) return luaL_error(L, "views of another machine");
  if (dl.buf < 0 || sl.buf < 0) return luaL_error(L, "UB is not reachable by memcpy");
  if (dl.dtype != sl.dtype) return luaL_argerror(L, 2, "dtype mismatch");
  if ((dl.pe < 0 && sl_getbuf(lm->m, dl.buf)->space != SL_SPACE_HOST) ||
      (sl.pe < 0 && sl_getbuf(lm->m, sl.buf)->space != SL_SPACE_HOST))
    return luaL_error(L, "memcpy names one PE: use buf:on(pe)");
  if (dl.pe < 0) dl.pe = 0;
  if (sl.pe < 0) sl.pe = 0;
  if (n <= 0 || n > ((lua_Integer)1 << 40)) return luaL_argerror(L, 4, "count must be in 1..2^40");
  before = (double)sl_machine_now(lm->m) / SL_PS_PER_US;
  st = sl_memcpy(lm->m, &dl, &sl, (int64_t)n * (int64_t)sl_dtype_size(dl.dtype),
                 &cost);
  if (st != SL_OK) return engine_error(L, lm->m, st, 1);
  sl_mark_init(lm->m, &dl, (int64_t)n * (int64_t)sl_dtype_size(dl.dtype));
  {                        /* a task of the device side's PE */
    int host_dst = sl_getbuf(lm->m, dl.buf)->space == SL_SPACE_HOST;
    double now = (double)sl_machine_now(lm->m) / SL_PS_PER_US;
    add_task(L, 1, host_dst ? sl.pe : dl.pe, "aclrtMemcpy", "MEMCPY_ASYNC", before, now);
  }
  lua_pushnumber(L, cost);
  return 1;
}

/* m:prof_pe([pe]): get, or set (-1 = off), the profiled PE */
static int m_prof_pe(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer pe = luaL_checkinteger(L, 2);
    int st;
    if (pe < -1 || pe >= sl_machine_params(lm->m)->n_pes)
      return luaL_argerror(L, 2, lua_pushfstring(L, "PE %I out of range 0..%d", pe,
                                                 sl_machine_params(lm->m)->n_pes - 1));
    st = sl_prof_set_pe(lm->m, (int)pe);
    if (st != SL_OK) return engine_error(L, lm->m, st, 1);
  }
  lua_pushinteger(L, sl_prof_pe(lm->m));
  return 1;
}

/* m:reset_prof() */
static int m_reset_prof(lua_State *L) {
  sl_prof_reset(checkmach(L, 1)->m);
  return 0;
}

/* one counter row {block=, frame=, cycles=, count= [, pe=]} */
static void prof_row(lua_State *L, int pe, int b, int f, int64_t cy, int64_t ct) {
  lua_createtable(L, 0, 5);
  if (pe >= 0) { lua_pushinteger(L, pe); lua_setfield(L, -2, "pe"); }
  lua_pushinteger(L, b); lua_setfield(L, -2, "block");
  lua_pushinteger(L, f); lua_setfield(L, -2, "frame");
  lua_pushinteger(L, (lua_Integer)cy); lua_setfield(L, -2, "cycles");
  lua_pushinteger(L, (lua_Integer)ct); lua_setfield(L, -2, "count");
}

/* m:prof_rows(): counters of the profiled PE with a non-zero count */
static int m_prof_rows(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int b, f, n = 0;
  lua_newtable(L);
  for (b = 0; b < SL_PROF_MAX_BLOCK; b++)
    for (f = 0; f < SL_PROF_MAX_FRAME; f++) {
      int64_t cy, ct;
      if (!sl_prof_get(lm->m, b, f, &cy, &ct) || ct == 0) continue;
      prof_row(L, -1, b, f, cy, ct);
      lua_rawseti(L, -2, ++n);
    }
  return 1;
}

/* m:shadow_rows(): frame counters of every PE (frames < 16) */
static int m_shadow_rows(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int pe, b, f, n = 0, npes = sl_machine_params(lm->m)->n_pes;
  lua_newtable(L);
  for (pe = 0; pe < npes; pe++)
    for (b = 0; b < SL_PROF_MAX_BLOCK; b++)
      for (f = 0; f < SL_SHADOW_FRAMES; f++) {
        int64_t cy, ct;
        if (!sl_shadow_get(lm->m, pe, b, f, &cy, &ct)) return 1;
        if (ct == 0) continue;
        prof_row(L, pe, b, f, cy, ct);
        lua_rawseti(L, -2, ++n);
      }
  return 1;
}

/* m:trace(max): start recording (0 = off) */
static int m_trace(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  sl_trace_enable(lm->m, (int64_t)luaL_optinteger(L, 2, 1000000));
  return 0;
}

/* m:trace_records([clear]): recorded slices as tables, times in us */
static int m_trace_records(lua_State *L) {
  static const char *const kinds[] = { "mte", "frame", "signal", "wake" };
  lmach *lm = checkmach(L, 1);
  size_t i, n = sl_trace_count(lm->m);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const sl_trace_rec *r = sl_trace_get(lm->m, i);
    lua_createtable(L, 0, 9);
    lua_pushstring(L, kinds[r->kind]); lua_setfield(L, -2, "kind");
    lua_pushnumber(L, (lua_Number)r->start / SL_PS_PER_US); lua_setfield(L, -2, "ts");
    lua_pushnumber(L, (lua_Number)(r->end - r->start) / SL_PS_PER_US);
    lua_setfield(L, -2, "dur");
    lua_pushinteger(L, r->pe); lua_setfield(L, -2, "pe");
    lua_pushinteger(L, r->block); lua_setfield(L, -2, "block");
    if (r->kind == 1) { lua_pushinteger(L, r->path); lua_setfield(L, -2, "frame"); }
    else if (r->kind != 3) {
      lua_pushstring(L, sl_path_name(r->path)); lua_setfield(L, -2, "path");
      lua_pushinteger(L, (lua_Integer)r->bytes); lua_setfield(L, -2, "bytes");
      lua_pushinteger(L, r->peer_pe); lua_setfield(L, -2, "peer_pe");
      if (r->kind == 0) {
        lua_pushstring(L, sl_pipe_name(r->peer_block)); lua_setfield(L, -2, "pipe");
      }
    } else {
      lua_pushinteger(L, r->peer_pe); lua_setfield(L, -2, "peer_pe");
      lua_pushinteger(L, r->peer_block); lua_setfield(L, -2, "peer_block");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  if (lua_toboolean(L, 2)) sl_trace_clear(lm->m);
  return 1;
}

/* m:check_reports([clear]): the reports of checked runs (sites as ids) */
static int m_check_reports(lua_State *L) {
  static const char *const kinds[] = { "out_of_bounds", "use_after_free",
                                       "uninitialized_read", "race", "sync" };
  lmach *lm = checkmach(L, 1);
  int clear = lua_toboolean(L, 2);
  size_t i, n = sl_report_count(lm->m);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const sl_report *r = sl_report_get(lm->m, i);
    lua_createtable(L, 0, 20);
    lua_pushstring(L, kinds[r->kind]); lua_setfield(L, -2, "kind");
    lua_pushinteger(L, (lua_Integer)r->count); lua_setfield(L, -2, "count");
    lua_pushboolean(L, r->write); lua_setfield(L, -2, "write");
    lua_pushinteger(L, (lua_Integer)r->bytes); lua_setfield(L, -2, "bytes");
    if (r->space >= 0) {
      lua_pushstring(L, sl_space_name(r->space)); lua_setfield(L, -2, "space");
      lua_pushstring(L, r->buf < 0 ? "UB" : sl_getbuf(lm->m, r->buf)->name);
      lua_setfield(L, -2, "buffer");
      lua_pushinteger(L, r->pe); lua_setfield(L, -2, "pe");
      lua_pushinteger(L, (lua_Integer)r->off); lua_setfield(L, -2, "offset");
      lua_pushinteger(L, (lua_Integer)r->cap); lua_setfield(L, -2, "size");
    }
    lua_pushinteger(L, r->by_pe); lua_setfield(L, -2, "by_pe");
    lua_pushinteger(L, r->by_block); lua_setfield(L, -2, "by_block");
    if (r->pipe >= 0) { lua_pushstring(L, sl_pipe_name(r->pipe)); lua_setfield(L, -2, "pipe"); }
    lua_pushinteger(L, r->frame); lua_setfield(L, -2, "frame");
    lua_pushnumber(L, (lua_Number)r->time_us); lua_setfield(L, -2, "time_us");
    lua_pushinteger(L, r->site); lua_setfield(L, -2, "site");
    if (r->o_site >= 0 || r->o_pe >= 0) {
      lua_pushinteger(L, r->o_site); lua_setfield(L, -2, "other_site");
      lua_pushinteger(L, r->o_pe); lua_setfield(L, -2, "other_pe");
      lua_pushinteger(L, r->o_block); lua_setfield(L, -2, "other_block");
      if (r->o_pipe >= 0) {
        lua_pushstring(L, sl_pipe_name(r->o_pipe)); lua_setfield(L, -2, "other_pipe");
      }
      lua_pushboolean(L, r->o_write); lua_setfield(L, -2, "other_write");
    }
    if (r->msg[0]) { lua_pushstring(L, r->msg); lua_setfield(L, -2, "what"); }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  if (clear) sl_report_clear(lm->m);
  return 1;
}

/* __tostring of a machine */
static int m_tostring(lua_State *L) {
  lmach *lm = (lmach *)luaL_checkudata(L, 1, MACHINE_MT);
  const sl_params *p;
  if (lm->m == NULL) { lua_pushliteral(L, "shmemlab machine (closed)"); return 1; }
  p = sl_machine_params(lm->m);
  lua_getiuservalue(L, 1, 1);
  lua_getfield(L, -1, "soc");
  lua_pushfstring(L, "shmemlab machine %s: %d PEs (%d per server), %d AIV cores "
                  "of %d KiB UB, heap %d of %d KiB used, t = %f us",
                  lua_isstring(L, -1) ? lua_tostring(L, -1) : "custom", p->n_pes,
                  p->pes_per_server, p->cores, (int)(p->ub_bytes / 1024),
                  (int)(sl_heap_used(lm->m) / 1024),
                  (int)(p->sym_heap_bytes / 1024),
                  (lua_Number)sl_machine_now(lm->m) / SL_PS_PER_US);
  return 1;
}

/* ------------------------------------------------------------------ */
/* launch                                                              */
/* ------------------------------------------------------------------ */

/* push the context table k of block blk */
static void push_k(lua_State *L, int mi, int blk, sl_machine *m) {
  int pe, b;
  sl_block_where(m, blk, &pe, &b);
  lua_createtable(L, 2, 4);
  lua_pushinteger(L, blk); lua_rawseti(L, -2, 1);
  lua_pushvalue(L, mi); lua_rawseti(L, -2, 2);
  lua_pushinteger(L, pe); lua_setfield(L, -2, "pe");
  lua_pushinteger(L, b); lua_setfield(L, -2, "block");
  lua_pushinteger(L, sl_machine_params(m)->n_pes); lua_setfield(L, -2, "n_pes");
  lua_pushinteger(L, sl_block_dim(m)); lua_setfield(L, -2, "block_num");
  luaL_setmetatable(L, BLOCK_MT);
}

/* raise a launch failure after cleaning up */
static int launch_fail(lua_State *L, lmach *lm, const char *msg) {
  sl_launch_abort(lm->m);
  lm->cur = -1;
  lm->run = NULL;
  return luaL_error(L, "%s", msg);
}

/* the text of a kernel fault: where, when, what, and the traceback */
static const char *fault_text(lua_State *L, lua_State *co, lmach *lm, int blk) {
  int pe, b, frame = sl_block_frame(lm->m, blk);
  char where[160];
  const char *msg = lua_tostring(co, -1);
  sl_block_where(lm->m, blk, &pe, &b);
  if (frame >= 0)
    snprintf(where, sizeof(where), "kernel fault on PE %d block %d in frame %d "
             "at %.3f us: ", pe, b, frame, sl_block_time_us(lm->m, blk));
  else
    snprintf(where, sizeof(where), "kernel fault on PE %d block %d at %.3f us: ",
             pe, b, sl_block_time_us(lm->m, blk));
  lua_pushfstring(L, "%s%s", where, msg ? msg : "(error object is not a string)");
  luaL_traceback(L, co, lua_tostring(L, -1), 0);
  return lua_tostring(L, -1);
}

/* the text of a deadlock or time-out */
static const char *stuck_text(lua_State *L, lmach *lm, int timeout) {
  luaL_Buffer B;
  char *p;
  size_t size = 16384;
  const sl_params *pr = sl_machine_params(lm->m);
  luaL_buffinit(L, &B);
  if (timeout)
    lua_pushfstring(L, "virtual-time limit of %I us reached; blocks still "
                    "waiting:\n", (lua_Integer)pr->time_limit_us);
  else
    lua_pushfstring(L, "deadlock at %f us of the kernel: every block waits and "
                    "nothing is pending:\n", (lua_Number)sl_kernel_now_us(lm->m));
  luaL_addvalue(&B);
  p = luaL_prepbuffsize(&B, size);
  sl_describe_waits(lm->m, p, size);
  luaL_addsize(&B, strlen(p));
  luaL_pushresult(&B);
  return lua_tostring(L, -1);
}

/* m:launch's arguments: the kernel function left at index 2, its block_dim;
** a kernel table's name and type are pushed above the kernel arguments (at
** *ni, *ni + 1), so they stay alive for the whole launch */
static int launch_args(lua_State *L, lmach *lm, int *nargs, int *ni) {
  int top = lua_gettop(L);
  lua_Integer bd;
  *nargs = top - 3;
  *ni = top + 1;
  if (lua_istable(L, 2)) {
    if (lua_getfield(L, 2, "name") != LUA_TSTRING) {
      lua_pop(L, 1); lua_pushliteral(L, "kernel");
    }
    if (lua_getfield(L, 2, "type") != LUA_TSTRING) {
      lua_pop(L, 1); lua_pushliteral(L, "AIV");
    }
    lua_getfield(L, 2, "kernel");
    if (!lua_isfunction(L, -1))
      return luaL_argerror(L, 2, "kernel table needs a function in field 'kernel'");
    lua_replace(L, 2);                    /* the strings stay on the stack above */
  } else {
    lua_pushliteral(L, "kernel");
    lua_pushliteral(L, "AIV");
  }
  luaL_checktype(L, 2, LUA_TFUNCTION);
  bd = luaL_checkinteger(L, 3);
  luaL_argcheck(L, bd >= 1 && bd <= sl_machine_params(lm->m)->cores, 3,
                lua_pushfstring(L, "block_dim must be in 1..%d (AIV cores per PE), got %I",
                                sl_machine_params(lm->m)->cores, bd));
  return (int)bd;
}

/* what a launch keeps of each block: its coroutine (NULL before its first
** run and after its end) and its k table; both are anchored in the launch's
** table at index run->cos (the coroutine at blk + 1, k at nblk + blk + 1) */
typedef struct lblock { lua_State *co; const void *k; } lblock;
typedef struct lrun { lblock *b; int cos, nblk, nargs; } lrun;

/* the values block blk's coroutine co resumes with (a result the engine
** kept while it waited), pushed on co; their number */
static int resume_values(sl_machine *m, int blk, lua_State *co) {
  int64_t v;
  int kind = sl_block_result(m, blk, &v);
  if (kind == SL_RES_YIELDED) return (int)v;          /* still on co */
  if (kind == SL_RES_INT) { lua_pushinteger(co, (lua_Integer)v); return 1; }
  if (kind == SL_RES_NUM) {
    double d;
    memcpy(&d, &v, sizeof(d));
    lua_pushnumber(co, (lua_Number)d);
    return 1;
  }
  return 0;
}

/* a coroutine for a block, pushed: one an ended block of an earlier launch
** left (its stack and call records already grown), or a new one */
static lua_State *block_co(lua_State *L, lmach *lm) {
  lua_State *co;
  if (lm->npool == 0) return lua_newthread(L);
  lua_getiuservalue(L, 1, 4);
  lua_rawgeti(L, -1, lm->npool);
  co = lua_tothread(L, -1);
  lua_pushnil(L);
  lua_rawseti(L, -3, lm->npool--);
  lua_remove(L, -2);
  return co;
}

/* the coroutine of block blk, made on its first run (kernel, k and the
** arguments pushed), with the number of values it resumes with in *nres */
static lua_State *launch_co(lua_State *L, lmach *lm, lrun *run, int blk, int *nres) {
  lua_State *co = run->b[blk].co;
  int i;
  if (co != NULL) {                                   /* resumed */
    *nres = resume_values(lm->m, blk, co);
    if (lua_status(co) != LUA_YIELD || lua_gettop(co) < *nres) {   /* closed by a kernel */
      lua_settop(co, 0);
      lua_pushliteral(co, "the block's coroutine was closed while it waited "
                      "(coroutine.close on a kernel's coroutine)");
      launch_fail(L, lm, fault_text(L, co, lm, blk));
    }
    return co;
  }
  luaL_checkstack(L, run->nargs + 4, "too many kernel arguments");
  co = block_co(L, lm);
  if (!lua_checkstack(co, run->nargs + 4)) return NULL;
  *(lmach **)lua_getextraspace(co) = lm;   /* the primitives find their machine */
  lua_sethook(co, NULL, 0, 0);               /* not the creator's (an armed hook) */
  lua_rawseti(L, run->cos, blk + 1);
  lua_pushvalue(L, 2);
  push_k(L, 1, blk, lm->m);
  run->b[blk].co = co;
  run->b[blk].k = lua_topointer(L, -1);
  lua_pushvalue(L, -1);
  lua_rawseti(L, run->cos, run->nblk + blk + 1);
  for (i = 0; i < run->nargs; i++) lua_pushvalue(L, 4 + i);
  lua_xmove(L, co, 2 + run->nargs);
  *nres = 1 + run->nargs;
  return co;
}

/* coroutines a machine keeps for its next launches (a machine of more
** blocks makes the rest anew each launch) */
#define POOL_MAX 4096

/* distinct open frames a machine keeps (open_frames in its state) */
#define OPEN_FRAMES_MAX 64

/* block blk ended with frames open (a prof_start with no prof_end): noted in
** the state table of the machine (index 1) as open_frames[key] = {pe, block,
** frame, depth, site, launches}, one per PE, block, frame and site */
static void open_frame_note(lua_State *L, lmach *lm, int blk) {
  int frame, pe, b, depth, top = lua_gettop(L);
  int32_t site;
  if ((depth = sl_block_open_frames(lm->m, blk, &frame, &site)) == 0) return;
  sl_block_where(lm->m, blk, &pe, &b);
  luaL_checkstack(L, 8, "open frames");
  lua_getiuservalue(L, 1, 1);
  if (lua_getfield(L, -1, "open_frames") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "open_frames");
  }
  lua_pushfstring(L, "%d %d %d %d", pe, b, frame, (int)site);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, -3) == LUA_TTABLE) {
    lua_getfield(L, -1, "launches");
    lua_pushinteger(L, lua_tointeger(L, -1) + 1);
    lua_setfield(L, -3, "launches");
  } else if (lua_rawlen(L, -3) < OPEN_FRAMES_MAX) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, pe); lua_setfield(L, -2, "pe");
    lua_pushinteger(L, b); lua_setfield(L, -2, "block");
    lua_pushinteger(L, frame); lua_setfield(L, -2, "frame");
    lua_pushinteger(L, depth); lua_setfield(L, -2, "depth");
    lua_pushinteger(L, 1); lua_setfield(L, -2, "launches");
    if (site > 0 && lua_getfield(L, -4, "sites") == LUA_TTABLE) {
      lua_rawgeti(L, -1, site);
      lua_setfield(L, -3, "site");
    }
    lua_settop(L, top + 4);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -4, (lua_Integer)lua_rawlen(L, -4) + 1);   /* in order, */
    lua_rawset(L, -3);                                         /* and by key */
  }
  lua_settop(L, top);
}

/* block blk ended: its k may go, its coroutine (returned, its stack emptied)
** is kept for a block of a later launch */
static void launch_block_done(lua_State *L, lmach *lm, lrun *run, int blk) {
  open_frame_note(L, lm, blk);
  sl_block_done(lm->m, blk);
  if (lm->npool < POOL_MAX) {
    lua_settop(run->b[blk].co, 0);
    lua_getiuservalue(L, 1, 4);
    lua_rawgeti(L, run->cos, blk + 1);
    lua_rawseti(L, -2, ++lm->npool);
    lua_pop(L, 1);
  }
  run->b[blk].co = NULL;
  run->b[blk].k = NULL;
  lua_pushnil(L);
  lua_rawseti(L, run->cos, blk + 1);
  lua_pushnil(L);
  lua_rawseti(L, run->cos, run->nblk + blk + 1);
}

/* run block blk on co until it yields or ends; a fault raises */
static void launch_resume(lua_State *L, lmach *lm, lrun *run, int blk, lua_State *co,
                          int nres) {
  sl_machine *m = lm->m;
  lhere *here = &here_tls, outer = *here;
  int b, nout, st;
  lm->cur = blk;
  lm->cur_co = co;
  lm->cur_k = run->b[blk].k;
  sl_block_where(m, blk, &lm->cur_pe, &b);
  lm->budget_left = lm->budget;
  if (lm->wd.listed) { here->wd = &lm->wd; atomic_store(&lm->wd.co, co); }
  here->lm = lm;
  st = lua_resume(co, L, nres, &nout);
  *here = outer;
  lm->cur = -1;
  lm->cur_co = NULL;
  lm->cur_k = NULL;
  if (lm->wd.listed) {
    atomic_store(&lm->wd.co, NULL);
    if (st != LUA_YIELD) {                  /* co may go: no look may still use it */
      pthread_mutex_lock(&wd_mu);
      pthread_mutex_unlock(&wd_mu);
    }
    if (atomic_load(&lm->wd.armed)) wd_disarm(lm, co);
  }
  if (st == LUA_OK) {
    launch_block_done(L, lm, run, blk);
  } else if (st == LUA_YIELD) {
    if (nout > 0) sl_block_stash(m, blk, SL_RES_YIELDED, nout);
    if (sl_block_running(m, blk) && !sl_must_yield(m, blk)) {
      lua_pushliteral(co, "coroutine.yield() inside a kernel: a block "
                      "yields only through the engine's primitives");
      launch_fail(L, lm, fault_text(L, co, lm, blk));
    }
  } else {
    launch_fail(L, lm, fault_text(L, co, lm, blk));
  }
}

/* the result table of a finished launch (kernel_us per PE, e2e, start), its
** tasks added to the machine's records under the kernel's name and type */
static int launch_result(lua_State *L, lmach *lm, const char *kname, const char *ktype) {
  int i, npes = sl_machine_params(lm->m)->n_pes;
  double *kus, e2e, start, mx = 0;
  kus = (double *)lua_newuserdatauv(L, sizeof(double) * (size_t)npes, 0);
  sl_launch_end(lm->m, kus, &e2e, &start);
  lua_createtable(L, 0, 4);
  lua_createtable(L, npes, 0);
  for (i = 0; i < npes; i++) {
    lua_pushnumber(L, (lua_Number)kus[i]);
    lua_rawseti(L, -2, i + 1);
    if (kus[i] > mx) mx = kus[i];
  }
  lua_setfield(L, -2, "kernel_us");
  lua_pushnumber(L, (lua_Number)mx); lua_setfield(L, -2, "max_kernel_us");
  lua_pushnumber(L, (lua_Number)e2e); lua_setfield(L, -2, "e2e_us");
  lua_pushnumber(L, (lua_Number)start); lua_setfield(L, -2, "start_us");
  for (i = 0; i < npes; i++)
    add_task(L, 1, i, kname, ktype, start, start + kus[i]);
  return 1;
}

/* m:runaway_counts(): the last launch's primitives (all blocks) and its
** longest run of primitives with no progress, the count spin_limit bounds */
static int m_runaway_counts(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int64_t prims, quiet;
  sl_guard_stats(lm->m, &prims, &quiet);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)prims); lua_setfield(L, -2, "primitives");
  lua_pushinteger(L, (lua_Integer)quiet); lua_setfield(L, -2, "quiet_max");
  return 1;
}

/* m:launch(kernel, block_dim, ...): run kernel on every (PE, block); kernel
** is a function or {name =, kernel = fn, type = "AIV"} (the msprof task) */
static int m_launch(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  sl_machine *m = lm->m;
  int ni, st;
  lrun run;
  int block_dim = launch_args(L, lm, &run.nargs, &ni);
  if (sl_running(m)) return luaL_error(L, "launch inside a running launch");
  if (lm->budget > 0 && !wd_list_add(lm))
    return luaL_error(L, "cannot start the runaway watchdog thread (instruction_budget)");
  if ((st = sl_launch_begin(m, block_dim)) != SL_OK)
    return engine_error(L, m, st, 1);
  run.nblk = sl_block_dim(m) * sl_machine_params(m)->n_pes;
  run.b = (lblock *)lua_newuserdatauv(L, sizeof(lblock) * (size_t)run.nblk, 0);
  memset(run.b, 0, sizeof(lblock) * (size_t)run.nblk);
  lua_createtable(L, 2 * run.nblk, 0);
  run.cos = lua_gettop(L);
  lm->run = &run;
  for (;;) {
    int blk, nres, r = sl_step(m, &blk);
    lua_State *co;
    if (r == SL_STEP_DONE) break;
    if (r == SL_STEP_NOMEM)
      return launch_fail(L, lm, "not enough memory: the launch was abandoned (its timing "
                         "could not be kept)");
    if ((r == SL_STEP_DEADLOCK || r == SL_STEP_TIMEOUT) &&
        (sl_machine_params(m)->check & SL_CHECK_SYNC)) {
      sl_launch_salvage(m);               /* reported; the launch ends here */
      break;
    }
    if (r == SL_STEP_DEADLOCK || r == SL_STEP_TIMEOUT)
      return launch_fail(L, lm, stuck_text(L, lm, r == SL_STEP_TIMEOUT));
    if ((co = launch_co(L, lm, &run, blk, &nres)) == NULL)
      return launch_fail(L, lm, "too many kernel arguments");
    launch_resume(L, lm, &run, blk, co, nres);
  }
  lm->run = NULL;
  return launch_result(L, lm, lua_tostring(L, ni), lua_tostring(L, ni + 1));
}

/* ------------------------------------------------------------------ */
/* views (host side)                                                   */
/* ------------------------------------------------------------------ */

/* bytes of one element of a view */
static int64_t esize(const lview *v) { return (int64_t)sl_dtype_size(v->l.dtype); }

/* number of PE copies a host-side operation on v covers, and the first PE */
static int view_pes(lua_State *L, const lview *v, int *first) {
  const sl_buf *b;
  if (v->l.buf < 0) luaL_error(L, "UB is not reachable from the host");
  b = sl_getbuf(v->lm->m, v->l.buf);
  if (b->space == SL_SPACE_HOST) { *first = 0; return 1; }
  if (v->l.pe >= 0) { *first = v->l.pe; return 1; }
  *first = 0;
  return sl_machine_params(v->lm->m)->n_pes;
}

/* host pointer to the window of v on pe (raises on error); NULL for a write
** to a buffer with no bytes (timing-only): the caller writes nothing */
static uint8_t *view_ptr(lua_State *L, lview *v, int pe, int64_t elems, int write) {
  sl_loc l = v->l;
  uint8_t *p;
  if (l.buf < 0) luaL_error(L, "UB is not reachable from the host");
  if (sl_running(v->lm->m) && v->lm->cur >= 0)
    luaL_error(L, "host-side access inside a kernel: use the block's primitives");
  l.pe = pe;
  if (sl_host_ptr(v->lm->m, &l, sl_nbytes(elems, esize(v)), write, &p) != SL_OK)
    luaL_error(L, "%s", sl_machine_err(v->lm->m));
  if (write && p != NULL) sl_mark_init(v->lm->m, &l, elems * esize(v));
  return p;
}

/* v:sub(offset [, n]): a window offset elements further */
static int v_sub(lua_State *L) {
  lview *v = checkview(L, 1);
  lua_Integer off = luaL_checkinteger(L, 2);
  lua_Integer n;
  lview *nv;
  int i;
  luaL_argcheck(L, off >= 0, 2, "offset must be >= 0");
  luaL_argcheck(L, off <= ((lua_Integer)1 << 40), 2, "offset must be at most 2^40");
  n = luaL_optinteger(L, 3, off <= v->n ? v->n - off : 0);
  luaL_argcheck(L, n >= 0 && n <= ((lua_Integer)1 << 40), 3, "size must be in 0..2^40");
  if (off == 0 && n == v->n) {            /* the same window: the view itself */
    lua_settop(L, 1);
    return 1;
  }
  for (i = 0; i < SUB_CACHE; i++)          /* one of the last ones made (views never change) */
    if (v->sub_off[i] == off && v->sub_n[i] == n) {
      lua_getiuservalue(L, 1, 2 + i);
      return 1;
    }
  lua_getiuservalue(L, 1, 1);
  nv = newview(L, -1, v->lm, &v->l, (int64_t)n, 0);
  nv->gen = v->gen;
  nv->l.off += (int64_t)off * esize(v);
  if ((i = v->sub_next) < 0) return 1;
  v->sub_next = (i + 1) % SUB_CACHE;
  v->sub_off[i] = off;
  v->sub_n[i] = n;
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, 1, 2 + i);
  return 1;
}

/* v:on(pe): the copy of a buffer on one PE (host side) */
static int v_on(lua_State *L) {
  lview *v = checkview(L, 1);
  lua_Integer pe = luaL_checkinteger(L, 2);
  int n = sl_machine_params(v->lm->m)->n_pes;
  lview *nv;
  luaL_argcheck(L, pe >= 0 && pe < n, 2, "PE out of range");
  if (v->l.buf < 0) return luaL_argerror(L, 1, "UB has no per-PE copies");
  if (sl_getbuf(v->lm->m, v->l.buf)->space == SL_SPACE_HOST)
    return luaL_argerror(L, 1, "a host buffer has one copy, not one per PE");
  lua_getiuservalue(L, 1, 1);
  nv = newview(L, -1, v->lm, &v->l, v->n, 1);
  nv->l.pe = (int32_t)pe;
  return 1;
}

/* v:fill(pattern [, a [, b]]): pattern "const" "iota" "iota_pe" "pe"
** "random", a table of values, or a string of raw bytes; on every PE */
static int v_fill(lua_State *L) {
  lview *v = checkview(L, 1);
  int first, npes = view_pes(L, v, &first), pe;
  int64_t n = v->n, es = esize(v);
  if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), "bytes") == 0) {
    size_t len;
    const char *s = luaL_checklstring(L, 3, &len);
    if ((int64_t)len % es != 0)
      return luaL_argerror(L, 2, lua_pushfstring(L, "%d bytes are not whole %s elements",
                           (int)len, sl_dtype_name(v->l.dtype)));
    if ((int64_t)len > n * es) return luaL_argerror(L, 2, "string longer than the view");
    for (pe = first; pe < first + npes; pe++) {
      uint8_t *p = view_ptr(L, v, pe, (int64_t)len / es, 1);
      if (p != NULL) memcpy(p, s, len);
    }
    lua_settop(L, 1);
    return 1;
  }
  if (lua_istable(L, 2)) {
    lua_Integer len = luaL_len(L, 2), i;
    if (len > n) return luaL_argerror(L, 2, "table longer than the view");
    for (pe = first; pe < first + npes; pe++) {
      uint8_t *p = view_ptr(L, v, pe, len, 1);
      for (i = 0; p != NULL && i < len; i++) {
        lua_rawgeti(L, 2, i + 1);
        if (lua_isinteger(L, -1)) sl_set_int(v->l.dtype, p, (size_t)i, lua_tointeger(L, -1));
        else if (lua_type(L, -1) == LUA_TNUMBER)
          sl_set_num(v->l.dtype, p, (size_t)i, (double)lua_tonumber(L, -1));
        else return luaL_argerror(L, 2, "table of numbers expected");
        lua_pop(L, 1);
      }
    }
    lua_settop(L, 1);
    return 1;
  } else {
    static const char *const pats[] = { "const", "zero", "iota", "iota_pe", "pe",
                                        "random", NULL };
    int pat = luaL_checkoption(L, 2, NULL, pats);
    double a = (double)luaL_optnumber(L, 3, 0);
    double b = (double)luaL_optnumber(L, 4, pat == 5 ? 100 : 1);
    lua_Integer seed = luaL_optinteger(L, 5, 1);
    for (pe = first; pe < first + npes; pe++) {
      uint8_t *p = view_ptr(L, v, pe, n, 1);
      if (p == NULL) continue;
      switch (pat) {
        case 0: sl_fill_pattern(v->l.dtype, p, (size_t)n, SL_FILL_CONST, a, 0, 0, 0); break;
        case 1: memset(p, 0, (size_t)(n * es)); break;
        case 2: sl_fill_pattern(v->l.dtype, p, (size_t)n, SL_FILL_IOTA, a, b, 0, 0); break;
        case 3: sl_fill_pattern(v->l.dtype, p, (size_t)n, SL_FILL_IOTA, a, b, 0,
                                (int64_t)pe * n); break;
        case 4: sl_fill_pattern(v->l.dtype, p, (size_t)n, SL_FILL_CONST, a + pe, 0, 0, 0);
                break;
        default: sl_fill_pattern(v->l.dtype, p, (size_t)n, SL_FILL_RANDOM, a, b,
                                 (uint64_t)seed + (uint64_t)pe, 0); break;
      }
    }
  }
  lua_settop(L, 1);
  return 1;
}

/* push element i of p as a Lua number (integers exact) */
static void push_elem(lua_State *L, int dt, const uint8_t *p, size_t i) {
  if (sl_dtype_isfloat(dt)) lua_pushnumber(L, (lua_Number)sl_get_num(dt, p, i));
  else lua_pushinteger(L, (lua_Integer)sl_get_int(dt, p, i));
}

/* the PE a host read of v means */
static int read_pe(lua_State *L, lview *v) {
  int first;
  if (view_pes(L, v, &first) != 1 && sl_machine_params(v->lm->m)->n_pes > 1)
    luaL_error(L, "buffer '%s' is on every PE: read from buf:on(pe)",
               sl_getbuf(v->lm->m, v->l.buf)->name);
  return first;
}

/* v:read(i): element i; v:read(i, n): a table of n elements */
static int v_read(lua_State *L) {
  lview *v = checkview(L, 1);
  lua_Integer i = luaL_optinteger(L, 2, 0);
  int single = lua_isnoneornil(L, 3);
  lua_Integer n = luaL_optinteger(L, 3, 1), k;
  int pe = read_pe(L, v);
  const uint8_t *p;
  luaL_argcheck(L, i >= 0, 2, "index must be >= 0");
  luaL_argcheck(L, n >= 0 && n <= 100000000, 3, "count out of range");
  if (i > v->n || n > v->n - i) return luaL_argerror(L, single ? 2 : 3,
      lua_pushfstring(L, "reads past the view (%d elements)", (int)v->n));
  p = view_ptr(L, v, pe, i + n, 0) + i * esize(v);
  if (single) { push_elem(L, v->l.dtype, p, 0); return 1; }
  lua_createtable(L, (int)n, 0);
  for (k = 0; k < n; k++) {
    push_elem(L, v->l.dtype, p, (size_t)k);
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}

/* v:raw(): the raw bytes of the window on one PE, as a string */
static int v_bytes(lua_State *L) {
  lview *v = checkview(L, 1);
  int pe = read_pe(L, v);
  lua_pushlstring(L, (const char *)view_ptr(L, v, pe, v->n, 0), (size_t)(v->n * esize(v)));
  return 1;
}

/* v:checksum(): digest of the window on every PE (hex string) */
static int v_checksum(lua_State *L) {
  lview *v = checkview(L, 1);
  int first, npes = view_pes(L, v, &first), pe;
  uint64_t h = (uint64_t)v->l.dtype + 1;
  char out[17];
  for (pe = first; pe < first + npes; pe++)
    h = sl_checksum(view_ptr(L, v, pe, v->n, 0), (size_t)(v->n * esize(v)), h);
  snprintf(out, sizeof(out), "%016llx", (unsigned long long)h);
  lua_pushstring(L, out);
  return 1;
}

/* v:compare(expected): wrong count, then first index, PE, expected, actual */
static int v_compare(lua_State *L) {
  lview *v = checkview(L, 1), *e = checkview(L, 2);
  int first, npes = view_pes(L, v, &first), efirst, enpes = view_pes(L, e, &efirst), k;
  size_t wrong = 0;
  if (e->l.dtype != v->l.dtype) return luaL_argerror(L, 2, "dtype mismatch");
  if (e->n != v->n) return luaL_argerror(L, 2, "size mismatch");
  if (enpes != npes && enpes != 1)
    return luaL_argerror(L, 2, "expected covers another set of PEs");
  for (k = 0; k < npes; k++) {
    const uint8_t *a = view_ptr(L, v, first + k, v->n, 0);
    const uint8_t *x = view_ptr(L, e, enpes == 1 ? efirst : efirst + k, e->n, 0);
    size_t at = 0, w = sl_compare(v->l.dtype, x, a, (size_t)v->n, &at);
    if (w > 0 && wrong == 0) {
      wrong = w;
      lua_pushinteger(L, (lua_Integer)at);
      lua_pushinteger(L, first + k);
      push_elem(L, v->l.dtype, x, at);
      push_elem(L, v->l.dtype, a, at);
      continue;
    }
    wrong += w;
  }
  if (wrong == 0) { lua_pushinteger(L, 0); return 1; }
  lua_pushinteger(L, (lua_Integer)wrong);
  lua_insert(L, -5);
  return 5;
}

/* v:copy(src [, op]): untimed host-side dst = src (or op-reduce into dst) */
static int v_copy(lua_State *L) {
  static const char *const ops[] = { "none", "add", "max", "min", NULL };
  lview *d = checkview(L, 1), *s = checkview(L, 2);
  int op = luaL_checkoption(L, 3, "none", ops);
  int first, npes = view_pes(L, d, &first), sfirst, snpes = view_pes(L, s, &sfirst), k;
  if (d->l.dtype != s->l.dtype) return luaL_argerror(L, 2, "dtype mismatch");
  if (d->n != s->n) return luaL_argerror(L, 2, "size mismatch");
  if (snpes != npes && snpes != 1) return luaL_argerror(L, 2, "PE sets differ");
  for (k = 0; k < npes; k++) {
    uint8_t *dp = view_ptr(L, d, first + k, d->n, 1);
    const uint8_t *sp = dp == NULL ? NULL : view_ptr(L, s, snpes == 1 ? sfirst : sfirst + k, s->n, 0);
    if (dp == NULL) continue;
    if (op == 0) memmove(dp, sp, (size_t)(d->n * esize(d)));
    else sl_reduce(d->l.dtype, (sl_op)op, dp, sp, (size_t)d->n);
  }
  lua_settop(L, 1);
  return 1;
}

/* v:reinterpret(dtype): ReinterpretCast, the same bytes as another dtype
** (whole elements of it; the window must start on one) */
static int v_reinterpret(lua_State *L) {
  lview *v = checkview(L, 1);
  int dt = checkdtype(L, 2);
  int64_t ns = (int64_t)sl_dtype_size((sl_dtype)dt);
  lview *nv;
  if (v->l.off % ns != 0)
    return luaL_argerror(L, 1, "window does not start on a whole element of the new dtype");
  lua_getiuservalue(L, 1, 1);
  nv = newview(L, -1, v->lm, &v->l, v->n * esize(v) / ns, 1);
  nv->gen = v->gen;
  nv->l.dtype = dt;
  return 1;
}

/* q:quant_int8(src, scale): host reference of the INT8 dispatch
** quantisation of one token (sl_quant_int8): q int8 (n), src fp16, bf16
** or fp32 (n), scale fp32 (1); on every PE of q */
static int v_quant_int8(lua_State *L) {
  lview *q = checkview(L, 1), *s = checkview(L, 2), *sc = checkview(L, 3);
  int first, npes = view_pes(L, q, &first), sfirst, snpes = view_pes(L, s, &sfirst), k;
  int cfirst, cnpes = view_pes(L, sc, &cfirst);
  if (q->l.dtype != SL_INT8) return luaL_argerror(L, 1, "int8 view expected");
  if (!sl_dtype_isfloat(s->l.dtype)) return luaL_argerror(L, 2, "fp16, bf16 or fp32 view expected");
  if (sc->l.dtype != SL_FP32 || sc->n < 1) return luaL_argerror(L, 3, "fp32 view expected");
  if (q->n != s->n || q->n < 1) return luaL_argerror(L, 2, "size mismatch");
  if ((snpes != npes && snpes != 1) || cnpes != npes) return luaL_argerror(L, 2, "PE sets differ");
  for (k = 0; k < npes; k++) {
    uint8_t *qp = view_ptr(L, q, first + k, q->n, 1);
    const uint8_t *sp;
    uint8_t *cp = view_ptr(L, sc, cfirst + k, 1, 1);
    float scale;
    if (qp == NULL || cp == NULL) continue;
    sp = view_ptr(L, s, snpes == 1 ? sfirst : sfirst + k, s->n, 0);
    sl_quant_int8(s->l.dtype, sp, (size_t)q->n, (int8_t *)qp, &scale);
    memcpy(cp, &scale, sizeof scale);
  }
  lua_settop(L, 1);
  return 1;
}

/* the fields of a view, as v_index's second upvalue numbers them */
static const char *const view_fields[] = { "n", "dtype", "pe", "offset", "bytes",
                                           "heap_offset", "space", "name", NULL };

/* __index of a view: methods (upvalue 1), then fields (upvalue 2: name ->
** its index in view_fields), both found by the key itself (no string made) */
static int v_index(lua_State *L) {
  lview *v;
  int f;
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  v = checkanyview(L, 1);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TNUMBER) {
    luaL_checkstring(L, 2);               /* a key of another type: the error it was */
    lua_pushnil(L);
    return 1;
  }
  f = (int)lua_tointeger(L, -1);
  if (v->lm->m == NULL && f >= 5) return luaL_error(L, "machine is closed");  /* reads its buffers */
  switch (f) {
    case 0: lua_pushinteger(L, (lua_Integer)v->n); break;
    case 1: lua_pushstring(L, sl_dtype_name(v->l.dtype)); break;
    case 2: if (v->l.pe < 0) lua_pushnil(L); else lua_pushinteger(L, v->l.pe); break;
    case 3: lua_pushinteger(L, (lua_Integer)((v->l.off) / esize(v))); break;
    case 4: lua_pushinteger(L, (lua_Integer)sl_nbytes(v->n, esize(v))); break;
    case 5: {                                /* bytes from the heap base: the address */
      const sl_buf *b = v->l.buf < 0 ? NULL : sl_getbuf(v->lm->m, v->l.buf);
      if (b == NULL || b->space != SL_SPACE_SYM) lua_pushnil(L);
      else lua_pushinteger(L, (lua_Integer)(b->sym_off + v->l.off));
      break;
    }
    case 6: lua_pushstring(L, v->l.buf < 0 ? "UB"
                           : sl_space_name(sl_getbuf(v->lm->m, v->l.buf)->space)); break;
    default: lua_pushstring(L, v->l.buf < 0 ? "ub" : sl_getbuf(v->lm->m, v->l.buf)->name);
  }
  return 1;
}

/* #v: elements in the window */
static int v_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)checkview(L, 1)->n);
  return 1;
}

/* __tostring of a view */
static int v_tostring(lua_State *L) {
  lview *v = checkanyview(L, 1);
  const char *dt = sl_dtype_name(v->l.dtype);
  if (v->lm->m == NULL) { lua_pushliteral(L, "view (machine closed)"); return 1; }
  if (v->l.buf < 0)
    lua_pushfstring(L, "%s[%I] in UB of PE %d core %d (+%I bytes)", dt,
                    (lua_Integer)v->n, v->l.pe, v->l.core,
                    (lua_Integer)(v->l.base + v->l.off));
  else {
    const sl_buf *b = sl_getbuf(v->lm->m, v->l.buf);
    lua_pushfstring(L, "%s[%I] %s%s (%s, ", dt, (lua_Integer)v->n, b->name,
                    b->freed ? " (freed)" : "", sl_space_name(b->space));
    if (b->space == SL_SPACE_HOST) lua_pushliteral(L, "host");
    else if (v->l.pe < 0) lua_pushliteral(L, "every PE");
    else lua_pushfstring(L, "PE %d", v->l.pe);
    lua_pushfstring(L, ") +%I", (lua_Integer)(v->l.off / esize(v)));
    lua_concat(L, 3);
  }
  return 1;
}

/* ------------------------------------------------------------------ */
/* kernel primitives                                                   */
/* ------------------------------------------------------------------ */

/* integer argument i of a primitive: luaL_checkinteger, without its extra
** call when the argument is an integer */
static lua_Integer kint(lua_State *L, int i) {
  int ok;
  lua_Integer v = lua_tointegerx(L, i, &ok);
  return ok ? v : luaL_checkinteger(L, i);
}

static const char stale_k[] = "primitive called outside its block's run (a stale k, another "
  "block's k, after the launch, or from a coroutine inside the kernel)";

/* push the machine of k (index 1), the running block's k of machine lm: k[2],
** unless the kernel wrote over it */
static void push_kmach(lua_State *L, lmach *lm) {
  lua_rawgeti(L, 1, 2);
  if (lua_touserdata(L, -1) != (void *)lm) luaL_error(L, "%s", stale_k);
}

/* 1 when a Lua function's source file lies in a directory named shmemlab */
static int in_shmemlab(const lua_Debug *ar) {
  const char *slash = strrchr(ar->source, '/');
  return ar->source[0] == '@' && slash != NULL && slash - ar->source >= 9 &&
         strncmp(slash - 8, "shmemlab", 8) == 0 && (slash[-9] == '/' || slash[-9] == '@');
}

/* the frame outside lua/shmemlab a primitive called at ar came from, when ar
** is a shared helper of lua/shmemlab (op.copy_gm, ...); 0 when none */
static int site_via(lua_State *L, const lua_Debug *ar, lua_Debug *up) {
  int level = 2;
  if (!in_shmemlab(ar)) return 0;
  while (lua_getstack(L, level++, up) && lua_getinfo(L, "Sl", up))
    if (up->currentline > 0 && !in_shmemlab(up)) return 1;
  return 0;
}

/* the site text of a primitive called at ar (via up: from a shared helper,
** "ops/x.lua:12 (via lua/shmemlab/op.lua:88)") */
static void push_site_text(lua_State *L, const lua_Debug *ar, const lua_Debug *up) {
  if (up != NULL)
    lua_pushfstring(L, "%s:%d (via %s:%d)", up->short_src, up->currentline,
                    ar->short_src, ar->currentline);
  else
    lua_pushfstring(L, "%s:%d", ar->short_src, ar->currentline);
}

/* the id of the site text of ar (and up), interned in the machine's state
** table (sites[text] = id, sites[id] = text); k is at index 1 */
static int32_t site_intern(lua_State *L, lmach *lm, const lua_Debug *ar, const lua_Debug *up) {
  int32_t id;
  int top = lua_gettop(L);
  push_kmach(L, lm);
  lua_getiuservalue(L, -1, 1);
  if (lua_getfield(L, -1, "sites") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "sites");
  }
  push_site_text(L, ar, up);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, -3) == LUA_TNUMBER) id = (int32_t)lua_tointeger(L, -1);
  else {
    id = (int32_t)lua_rawlen(L, -3) + 1;
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, id);                 /* sites[id] = text */
    lua_pushinteger(L, id);
    lua_rawset(L, -3);                      /* sites[text] = id */
  }
  lua_settop(L, top);                       /* both branches: as it was */
  return id;
}

/* the cache entry of the site (ar, up), and whether it holds that site */
static lsite *site_slot(lmach *lm, const lua_Debug *ar, const lua_Debug *up, int *hit) {
  size_t h = (size_t)ar->currentline * 31u + ((size_t)(uintptr_t)ar->source >> 4);
  lsite *e;
  *hit = 0;
  if (lm->sites == NULL && (lm->sites = calloc(NSITES, sizeof(lsite))) == NULL) return NULL;
  if (up != NULL)
    h = h * 131u + (size_t)up->currentline + ((size_t)(uintptr_t)up->source >> 4);
  e = &lm->sites[h % NSITES];
  *hit = e->src != NULL && e->line == ar->currentline && strcmp(e->src, ar->source) == 0 &&
         (up == NULL ? e->vsrc == NULL : e->vsrc != NULL && e->vline == up->currentline &&
                                        strcmp(e->vsrc, up->source) == 0);
  return e;
}

/* remember in e that the site (ar, up) has id */
static void site_keep(lsite *e, const lua_Debug *ar, const lua_Debug *up, int32_t id) {
  free(e->src);
  free(e->vsrc);
  e->src = copy_str(ar->source);
  e->vsrc = up != NULL ? copy_str(up->source) : NULL;
  e->line = ar->currentline;
  e->vline = up != NULL ? up->currentline : 0;
  e->id = id;
  if (e->src == NULL || (up != NULL && e->vsrc == NULL)) {   /* no memory: no entry */
    free(e->src); free(e->vsrc);
    e->src = e->vsrc = NULL;
  }
}

/* checked runs: tell the engine the Lua line calling the primitive (the
** lines seen last are cached, so the text is made once per line) */
static void set_site(lua_State *L, lmach *lm) {
  lua_Debug ar, up;
  int32_t id = -1;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) {
    const lua_Debug *via = site_via(L, &ar, &up) ? &up : NULL;
    int hit;
    lsite *e = site_slot(lm, &ar, via, &hit);
    if (hit) id = e->id;
    else {
      id = site_intern(L, lm, &ar, via);
      if (e != NULL) site_keep(e, &ar, via, id);
    }
  }
  sl_set_site(lm->m, id);
}

/* where a block's code is: "file:line: in name" of co's innermost Lua
** frame and the primitive it called (co is suspended in one, or running it) */
static void block_line(lua_State *L, lua_State *co) {
  lua_Debug ar, prim;
  int lvl;
  const char *name = NULL;
  if (lua_getstack(co, 0, &prim) && lua_getinfo(co, "Sn", &prim) && prim.what[0] == 'C')
    name = prim.name;
  for (lvl = 0; lua_getstack(co, lvl, &ar); lvl++) {
    if (lua_getinfo(co, "Sl", &ar) && ar.currentline > 0) {
      lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline,
                      name ? name : "(no primitive)");
      return;
    }
  }
  lua_pushliteral(L, "(no Lua line)");
}

/* the group of block blk in the groups table at index g (line -> index in
** the array at g + 1), made when new: {blocks, primitives, "PE p block b",
** line}; left on the stack */
static void runaway_group(lua_State *L, int g, lua_State *co, int pe, int b) {
  block_line(L, co);
  lua_pushvalue(L, -1);
  if (lua_rawget(L, g) == LUA_TNUMBER) {
    lua_rawgeti(L, g + 1, lua_tointeger(L, -1));
    lua_replace(L, -3);
    lua_pop(L, 1);
    lua_pushfstring(L, "PE %d block %d", pe, b);
    lua_rawseti(L, -2, 5);                             /* the last one so far */
    return;
  }
  lua_pop(L, 1);
  lua_createtable(L, 5, 0);
  lua_pushinteger(L, 0); lua_rawseti(L, -2, 1);
  lua_pushinteger(L, 0); lua_rawseti(L, -2, 2);
  lua_pushfstring(L, "PE %d block %d", pe, b); lua_rawseti(L, -2, 3);
  lua_pushvalue(L, -2); lua_rawseti(L, -2, 4);
  lua_pushvalue(L, -2);                                /* line -> index */
  lua_pushinteger(L, (lua_Integer)lua_rawlen(L, g + 1) + 1);
  lua_rawset(L, g);
  lua_pushvalue(L, -1);
  lua_rawseti(L, g + 1, (lua_Integer)lua_rawlen(L, g + 1) + 1);
  lua_replace(L, -2);
}

/* add n to integer field i of the table on top */
static void group_add(lua_State *L, int i, int64_t n) {
  lua_rawgeti(L, -1, i);
  lua_pushinteger(L, lua_tointeger(L, -1) + (lua_Integer)n);
  lua_rawseti(L, -3, i);
  lua_pop(L, 1);
}

/* the groups of the array at index a as text, the most blocks first (at most
** 8 groups, the others counted), pushed */
static void runaway_text(lua_State *L, int a) {
  int i, k, n = (int)lua_rawlen(L, a), shown = 0;
  luaL_Buffer B;
  luaL_buffinit(L, &B);
  for (k = 0; k < n && k < 8; k++) {
    lua_Integer best = 0;
    int at = 0;
    for (i = 1; i <= n; i++) {
      lua_Integer c;
      lua_rawgeti(L, a, i);
      lua_rawgeti(L, -1, 1);
      c = lua_tointeger(L, -1);
      lua_pop(L, 2);
      if (c > best) best = c, at = i;
    }
    if (at == 0) break;
    lua_rawgeti(L, a, at);
    lua_rawgeti(L, -1, 4); lua_rawgeti(L, -2, 3); lua_rawgeti(L, -3, 5); lua_rawgeti(L, -4, 2);
    lua_pushfstring(L, "\n  %I block%s at %s (%s%s%s), %I primitives", best,
                    best > 1 ? "s" : "", lua_tostring(L, -4), lua_tostring(L, -3),
                    best > 1 ? " to " : "", best > 1 ? lua_tostring(L, -2) : "",
                    lua_tointeger(L, -1));
    luaL_addvalue(&B);
    lua_pop(L, 4);
    lua_pushinteger(L, 0); lua_rawseti(L, -2, 1);      /* taken */
    lua_pop(L, 1);
    shown++;
  }
  if (n > shown) {
    lua_pushfstring(L, "\n  and %d more lines", n - shown);
    luaL_addvalue(&B);
  }
  luaL_pushresult(&B);
}

/* the blocks a runaway stop names (README "Runaway kernels"): the live
** blocks that called primitives in the count that tripped (quiet: since
** something last landed; else: in this launch), grouped by the line and
** primitive they are at, pushed as one string */
static void runaway_blocks(lua_State *L, lmach *lm, int quiet) {
  int blk, nb = lm->run != NULL ? lm->run->nblk : 0, g;
  luaL_checkstack(L, 12, "runaway report");
  lua_newtable(L);
  g = lua_gettop(L);
  lua_newtable(L);
  for (blk = 0; blk < nb; blk++) {
    lua_State *co = lm->run->b[blk].co;
    int64_t launch, q, n;
    int pe, b;
    if (co == NULL) continue;                          /* not started, or ended */
    sl_block_prims(lm->m, blk, &launch, &q);
    n = quiet ? q : launch;
    if (n == 0) continue;
    sl_block_where(lm->m, blk, &pe, &b);
    runaway_group(L, g, co, pe, b);
    group_add(L, 1, 1);
    group_add(L, 2, n);
    lua_pop(L, 1);
  }
  runaway_text(L, g + 1);
  lua_replace(L, g);
  lua_settop(L, g);
}

/* count the running primitive; a runaway launch (README "Runaway kernels") is
** stopped with the reason and the blocks still at it, at the calling line */
static void runaway_check(lua_State *L, lmach *lm, int blk) {
  int why = sl_prim_tick(lm->m, blk);
  if (why == SL_RUN_OK) return;
  runaway_blocks(L, lm, why == SL_RUN_SPIN);
  if (why == SL_RUN_SPIN)
    luaL_error(L, "runaway kernel: the launch's blocks called more than %I primitives in a row with "
               "nothing new (no copy but repeats of their last ones, no vector op, no signal "
               "or UB value changed, no block ended: spinning, polling a value no one writes, "
               "or repeating the same copy; the machine option spin_limit); the blocks at it, "
               "by line:%s",
               (lua_Integer)sl_machine_params(lm->m)->spin_limit, lua_tostring(L, -1));
  luaL_error(L, "runaway kernel: the block called more than %I primitives in this launch "
             "(the machine option primitive_limit); the blocks at it, by line:%s",
             (lua_Integer)sl_machine_params(lm->m)->primitive_limit, lua_tostring(L, -1));
}

/* kcheck when k is not the running block's own table: k (index 1) must name
** the machine, the calling coroutine be the running block's own, and k that
** block's (the extra space of threads not made here is not ours to read) */
static lmach *kcheck_slow(lua_State *L) {
  lmach *lm = NULL;
  if (!lua_istable(L, 1))
    luaL_error(L, "calling a primitive without its block: use k:name(...)");
  if (lua_rawgeti(L, 1, 2) == LUA_TUSERDATA && lua_rawlen(L, -1) == sizeof(lmach)) {
    lm = (lmach *)lua_touserdata(L, -1);
    if (lm->magic != MACH_MAGIC) lm = NULL;
  }
  if (lm == NULL || lm->m == NULL || lm->cur_co != L)
    luaL_error(L, "%s", stale_k);
  if (lua_rawgeti(L, 1, 1) != LUA_TNUMBER || lua_tointeger(L, -1) != lm->cur)
    luaL_error(L, "%s", stale_k);
  lua_pop(L, 2);
  return lm;
}

/* the machine and block of the running primitive: the running block's own
** coroutine calling with its own k is told by two pointer compares (here_tls,
** cur_co, cur_k); anything else goes through kcheck_slow */
static lmach *kcheck(lua_State *L, int *blk) {
  lmach *lm = here_tls.lm;
  if (lm == NULL || lm->cur_co != L || lua_topointer(L, 1) != lm->cur_k) lm = kcheck_slow(L);
  *blk = lm->cur;
  if (lm->check) set_site(L, lm);
  runaway_check(L, lm, *blk);
  lm->budget_left = lm->budget;                             /* the budget restarts */
  atomic_store_explicit(&lm->wd.prog, atomic_load_explicit(&lm->wd.prog, memory_order_relaxed) + 1u,
                        memory_order_relaxed);
  if (atomic_load_explicit(&lm->wd.armed, memory_order_relaxed)) wd_disarm(lm, L);
  return lm;
}

/* location of view argument i as seen by the running block */
static sl_loc kloc(lua_State *L, lmach *lm, int i) {
  lview *v = toview(L, i);
  sl_loc l;
  if (v == NULL) luaL_typeerror(L, i, "tensor view");
  if (v->lm != lm) luaL_argerror(L, i, "view of another machine");
  l = v->l;
  if (l.buf < 0) {
    if (v->gen != sl_machine_gen(lm->m))
      luaL_argerror(L, i, "UB tensor of an earlier launch");
  } else if (v->host) {
    luaL_argerror(L, i, "host buffers are not reachable from a kernel "
                  "(m:memcpy them to GM first)");
  } else if (l.pe < 0) {
    l.pe = lm->cur_pe;
  }
  return l;
}

/* continuation of a failed primitive that had to yield first: raise the
** error kept on the stack (message at ctx, argument position above it) */
static int kraise(lua_State *L, int status, lua_KContext ctx) {
  int arg = (int)lua_tointeger(L, (int)ctx + 1);
  (void)status;
  lua_settop(L, (int)ctx);
  if (arg > 0) return luaL_argerror(L, arg, lua_tostring(L, -1));
  return luaL_error(L, "%s", lua_tostring(L, -1));
}

/* finish a primitive: raise on error, yield when the block must wait. A
** failed call that moved the block's clock (an issue cost, a queue it
** filled) raises only once the block may go on: a kernel that catches the
** error must not run ahead of events its clock has passed */
static int kdone(lua_State *L, lmach *lm, int blk, int st, int nret) {
  if (st != SL_OK && st != SL_ESKIP) {   /* the error as it is now, before any event */
    sl_machine *m = lm->m;
    lua_pushstring(L, sl_machine_err(m));
    lua_pushinteger(L, st == SL_EARG && sl_machine_err_arg(m) > 0 ? sl_machine_err_arg(m) + 1
                                                                  : 0);
    if (sl_must_yield(m, blk)) return lua_yieldk(L, 0, (lua_KContext)(lua_gettop(L) - 1), kraise);
    return kraise(L, LUA_OK, (lua_KContext)(lua_gettop(L) - 1));
  }
  if (sl_must_yield(lm->m, blk)) return lua_yield(L, nret);
  return nret;
}

/* k:ub(dtype, n): a LocalTensor in this core's UB */
static int k_ub(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  int dt = checkdtype(L, 2);
  lua_Integer n = kint(L, 3);
  int flags = checkmode(L, 4);
  sl_loc l;
  int st;
  lview *v;
  if (n <= 0) return luaL_argerror(L, 3, "size must be positive");
  push_kmach(L, lm);
  st = sl_ub_alloc(lm->m, blk, dt, (int64_t)n, flags, &l);
  if (st != SL_OK) return engine_error(L, lm->m, st, 1);
  v = newview(L, -1, lm, &l, (int64_t)n, 1);
  v->gen = sl_machine_gen(lm->m);
  lua_remove(L, -2);
  return kdone(L, lm, blk, SL_OK, 1);
}

/* shared body of data_copy / data_copy_pad */
static int copy_prim(lua_State *L, int pad) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), s = kloc(L, lm, 3);
  lua_Integer n = kint(L, 4);
  if (d.buf < 0 && s.buf < 0)            /* LocalTensor -> LocalTensor, on V */
    return kdone(L, lm, blk, sl_vec(lm->m, blk, SL_VEC_COPY, &d, &s, NULL, 0,
                                    (int64_t)n), 0);
  return kdone(L, lm, blk, sl_data_copy(lm->m, blk, &d, &s, (int64_t)n, pad), 0);
}

/* k:duplicate(dst, value, n): Duplicate, a UB tensor filled with a scalar (V) */
static int k_duplicate(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2);
  double v = (double)luaL_checknumber(L, 3);
  lua_Integer n = kint(L, 4);
  return kdone(L, lm, blk, sl_vec(lm->m, blk, SL_VEC_DUP, &d, &d, NULL, v, (int64_t)n), 0);
}

/* k:data_copy(dst, src, count) */
static int k_data_copy(lua_State *L) { return copy_prim(L, 0); }

/* k:data_copy_pad(dst, src, count) */
static int k_data_copy_pad(lua_State *L) { return copy_prim(L, 1); }

/* a hard event at index i: its integer (core.EVENT.MTE3_S, ...) or its name,
** looked up in the methods' upvalue (name -> integer), not by comparing
** strings; the names seen last are known by their string object (kept alive
** in the machine's user value 3, so no other object can take its address) */
static int checkevent(lua_State *L, lmach *lm, int i) {
  const void *p = lua_topointer(L, i);
  int h = (int)(((uintptr_t)p >> 4) % EV_SEEN);
  lua_Integer ev = -1;
  if (p != NULL && lm->ev_s[h] == p) return lm->ev_n[h];
  if (lua_type(L, i) == LUA_TNUMBER) {
    int isint;
    ev = lua_tointegerx(L, i, &isint);
    luaL_argcheck(L, isint && ev >= 0 && ev < SL_NEVENTS, i, "hard event number out of range");
    return (int)ev;
  }
  if (lua_type(L, i) == LUA_TSTRING) {
    lua_pushvalue(L, i);
    if (lua_rawget(L, lua_upvalueindex(1)) == LUA_TNUMBER) ev = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  if (ev < 0) {
    const char *name = luaL_checkstring(L, i);
    luaL_argerror(L, i, lua_pushfstring(L, "'%s' is not an AIV hard event (S_V "
                  "S_MTE2 S_MTE3 V_S V_MTE2 V_MTE3 MTE2_S MTE2_V MTE2_MTE3 MTE3_S "
                  "MTE3_V MTE3_MTE2)", name));
  }
  push_kmach(L, lm);                      /* remember the name */
  lua_getiuservalue(L, -1, 3);
  lua_pushvalue(L, i);
  lua_rawseti(L, -2, h + 1);
  lua_pop(L, 2);
  lm->ev_s[h] = p;
  lm->ev_n[h] = (int)ev;
  return (int)ev;
}

/* an event id at index i */
static int checkid(lua_State *L, int i) {
  lua_Integer id = lua_isnoneornil(L, i) ? 0 : kint(L, i);
  luaL_argcheck(L, id >= 0 && id < SL_NEVENT_IDS, i, "event id must be in 0..7");
  return (int)id;
}

/* k:set_flag(event [, id]) */
static int k_set_flag(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  int ev = checkevent(L, lm, 2), id = checkid(L, 3);
  return kdone(L, lm, blk, sl_set_flag(lm->m, blk, ev, id), 0);
}

/* k:wait_flag(event [, id]) */
static int k_wait_flag(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  int ev = checkevent(L, lm, 2), id = checkid(L, 3);
  return kdone(L, lm, blk, sl_wait_flag(lm->m, blk, ev, id), 0);
}

/* k:pipe_barrier([pipe]): "ALL" (default), "MTE2", "MTE3", "V" */
static int k_pipe_barrier(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  const char *name = luaL_optstring(L, 2, "ALL");
  int pipe = sl_pipe_find(name);
  if (pipe < 0 || pipe == SL_PIPE_S)
    return luaL_argerror(L, 2, "pipe must be ALL, V, MTE2 or MTE3 (PIPE_S is a "
                         "hardware error)");
  return kdone(L, lm, blk, sl_pipe_barrier(lm->m, blk, pipe), 0);
}

/* k:set_atomic(op [, dtype]): atomic add/max/min on UB->GM copies */
static int k_set_atomic(lua_State *L) {
  static const char *const ops[] = { "none", "add", "max", "min", NULL };
  int blk;
  lmach *lm = kcheck(L, &blk);
  int op = luaL_checkoption(L, 2, NULL, ops);
  int dt = lua_isnoneornil(L, 3) ? -1 : checkdtype(L, 3);
  return kdone(L, lm, blk, sl_set_atomic(lm->m, blk, op, dt), 0);
}

/* k:set_atomic_none() */
static int k_set_atomic_none(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_set_atomic(lm->m, blk, SL_OP_NONE, -1), 0);
}

/* k:get_value(ub, i): a UB element, read on the S pipe */
static int k_get_value(lua_State *L) {
  int blk, st;
  lmach *lm = kcheck(L, &blk);
  sl_loc u = kloc(L, lm, 2);
  lua_Integer i = kint(L, 3);
  double num = 0;
  int64_t iv = 0;
  st = sl_get_value(lm->m, blk, &u, (int64_t)i, &num, &iv);
  if (st != SL_OK && st != SL_ESKIP) return engine_error(L, lm->m, st, 1);
  if (sl_dtype_isfloat(u.dtype)) lua_pushnumber(L, (lua_Number)num);
  else lua_pushinteger(L, (lua_Integer)iv);
  return kdone(L, lm, blk, SL_OK, 1);
}

/* k:set_value(ub, i, v): write a UB element on the S pipe */
static int k_set_value(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc u = kloc(L, lm, 2);
  lua_Integer i = kint(L, 3);
  int isint = lua_isinteger(L, 4);
  double num = isint ? 0 : (double)luaL_checknumber(L, 4);
  int64_t iv = isint ? (int64_t)lua_tointeger(L, 4) : 0;
  return kdone(L, lm, blk, sl_set_value(lm->m, blk, &u, (int64_t)i, num, iv, isint), 0);
}

/* shared body of the binary vector ops: op is SL_OP_ADD/MAX/MIN, a positive
** code (sl_vec tells binary from one-source ops by the sign, sl.h) */
static int vec_binary(lua_State *L, int op) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), a = kloc(L, lm, 3), b = kloc(L, lm, 4);
  lua_Integer n = kint(L, 5);
  return kdone(L, lm, blk, sl_vec(lm->m, blk, op, &d, &a, &b, 0, (int64_t)n), 0);
}

/* k:add(dst, a, b, n) */
static int k_add(lua_State *L) { return vec_binary(L, SL_OP_ADD); }
/* k:max(dst, a, b, n) */
static int k_max(lua_State *L) { return vec_binary(L, SL_OP_MAX); }
/* k:min(dst, a, b, n) */
static int k_min(lua_State *L) { return vec_binary(L, SL_OP_MIN); }

/* k:muls(dst, a, s, n) */
static int k_muls(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), a = kloc(L, lm, 3);
  double s = (double)luaL_checknumber(L, 4);
  lua_Integer n = kint(L, 5);
  return kdone(L, lm, blk, sl_vec(lm->m, blk, SL_VEC_MULS, &d, &a, NULL, s, (int64_t)n), 0);
}

/* shared body of the one-source vector ops: op(dst, src, n); op is an
** SL_VEC_* code, zero or negative (the sign tells it from a binary op) */
static int vec_unary(lua_State *L, int op) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), a = kloc(L, lm, 3);
  lua_Integer n = kint(L, 4);
  return kdone(L, lm, blk, sl_vec(lm->m, blk, op, &d, &a, NULL, 0, (int64_t)n), 0);
}

/* k:cast(dst, src, n [, round]): round "trunc" (default: float -> int
** truncates, wraps) or "rint" (nearest even, saturating: CAST_RINT) */
static int k_cast(lua_State *L) {
  static const char *const modes[] = { "trunc", "rint", NULL };
  int rint = luaL_checkoption(L, 5, "trunc", modes);
  return vec_unary(L, rint ? SL_VEC_CAST_RINT : SL_VEC_CAST);
}

/* k:abs(dst, src, n): Abs (V) */
static int k_abs(lua_State *L) { return vec_unary(L, SL_VEC_ABS); }

/* k:reduce_max(dst, src, n): ReduceMax without index, dst[0] = max (V) */
static int k_reduce_max(lua_State *L) { return vec_unary(L, SL_VEC_RMAX); }

/* k:system_cycle(): the system counter */
static int k_system_cycle(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  int64_t c = sl_system_cycle(lm->m, blk);
  lua_pushinteger(L, (lua_Integer)c);
  return kdone(L, lm, blk, SL_OK, 1);
}

/* a PE number at index i */
static int checkpe(lua_State *L, lmach *lm, int i) {
  lua_Integer pe = kint(L, i);
  int n = lm->n_pes;
  if (pe < 0 || pe >= n)
    luaL_argerror(L, i, lua_pushfstring(L, "PE %d out of range 0..%d", (int)pe, n - 1));
  return (int)pe;
}

/* shared body of mte_put_nbi / mte_get_nbi; with a UB tensor as the source
** of a put (dst, ub, elems, pe [, sync_id]) or the destination of a get
** (ub, src, elems, pe [, sync_id]) it is the UB form: one copy */
static int mte_prim(lua_State *L, int get) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), s = kloc(L, lm, 3), u;
  if ((get ? d.buf : s.buf) < 0) {
    lua_Integer n = kint(L, 4);
    int pe = checkpe(L, lm, 5);
    checkid(L, 6);
    return kdone(L, lm, blk, sl_mte_ub(lm->m, blk, get, get ? &s : &d, get ? &d : &s,
                                       (int64_t)n, pe), 0);
  }
  u = kloc(L, lm, 4);
  lua_Integer ub_bytes = kint(L, 5);
  lua_Integer n = kint(L, 6);
  int pe = checkpe(L, lm, 7), id = checkid(L, 8);
  return kdone(L, lm, blk, sl_mte(lm->m, blk, get, &d, &s, &u, (int64_t)ub_bytes,
                                  (int64_t)n, pe, id), 0);
}

/* k:mte_put_nbi(dst, src, ub, ub_bytes, elems, pe, sync_id) */
static int k_mte_put_nbi(lua_State *L) { return mte_prim(L, 0); }

/* k:mte_get_nbi(dst, src, ub, ub_bytes, elems, pe, sync_id) */
static int k_mte_get_nbi(lua_State *L) { return mte_prim(L, 1); }

/* how a call through the scratch UB ends (bits of its continuation context) */
enum { STAGE_GET = 1, STAGE_NBI = 2, STAGE_SIGNAL = 4 };

static int staged_body(lua_State *L, int how, int resumed);

/* sl_mte's argument positions as putmem/getmem/put_signal number them (the
** UB, its size and the event id are the call's own) */
static const int mte_args[8] = { 0, 1, 2, 0, 0, 3, 0, 0 };
/* and sl_signal_op's (signal, value, op, pe) as put_signal's */
static const int put_signal_args[5] = { 0, 4, 5, 6, 7 };

/* a staged call goes on after the yield its scratch UB asked for */
static int staged_cont(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  return staged_body(L, (int)ctx, 1);
}

/* shared body of putmem / getmem / put / get (and their _nbi forms) and of
** put_signal (_nbi): through the library's own scratch UB (16 KiB, the
** library's default mte_config), then a quiet (blocking forms), the signal
** after a fence (put_signal), or nothing (_nbi); with a UB dst (get) or src
** (put) they are the ub2gm forms, one copy without the scratch. The first call carves the
** scratch (an issue on S): when that took the block past a pending event it
** yields, and goes on (resumed) at its clock */
static int staged_body(lua_State *L, int how, int resumed) {
  int blk, st, get = how & STAGE_GET, pe, id;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), s = kloc(L, lm, 3), g, u;
  lua_Integer n = kint(L, 4), v = 0, op = 0;
  if (how & STAGE_SIGNAL) {
    g = kloc(L, lm, 5);
    v = kint(L, 6);
    op = kint(L, 7);
    luaL_argcheck(L, op == SL_SIGNAL_SET || op == SL_SIGNAL_ADD, 7,
                  "signal op must be SIGNAL_SET or SIGNAL_ADD");
    pe = checkpe(L, lm, 8);
  } else {
    pe = checkpe(L, lm, 5);
    if ((get ? d.buf : s.buf) < 0) {      /* the ub2gm forms: a UB dst (get) or src (put) */
      st = sl_mte_ub(lm->m, blk, get, get ? &s : &d, get ? &d : &s, (int64_t)n, pe);
      if (st == SL_OK && !(how & STAGE_NBI)) st = sl_pipe_barrier(lm->m, blk, SL_NPIPES);   /* aclshmemx_mte_quiet */
      return kdone(L, lm, blk, st, 0);
    }
  }
  if ((st = sl_ub_scratch(lm->m, blk, d.dtype, &u, &id)) != SL_OK)
    return engine_error(L, lm->m, st, 1);
  if (!resumed && sl_must_yield(lm->m, blk)) return lua_yieldk(L, 0, how, staged_cont);
  st = sl_mte(lm->m, blk, get, &d, &s, &u, u.cap, (int64_t)n, pe, id);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, mte_args, 8);
  else if (st == SL_OK && (how & STAGE_SIGNAL)) {
    if ((st = sl_signal_op(lm->m, blk, &g, (int64_t)v, (int)op, pe, 1)) == SL_EARG)
      sl_machine_map_err_arg(lm->m, put_signal_args, 5);
  } else if (st == SL_OK && !(how & STAGE_NBI)) st = sl_pipe_barrier(lm->m, blk, SL_NPIPES);   /* aclshmemx_mte_quiet */
  return kdone(L, lm, blk, st, 0);
}

/* k:putmem(dst, src, elems, pe), k:put: blocking put */
static int k_putmem(lua_State *L) { return staged_body(L, 0, 0); }

/* k:getmem(dst, src, elems, pe), k:get: blocking get */
static int k_getmem(lua_State *L) { return staged_body(L, STAGE_GET, 0); }

/* k:putmem_nbi(dst, src, elems, pe), k:put_nbi: put left in flight */
static int k_putmem_nbi(lua_State *L) { return staged_body(L, STAGE_NBI, 0); }

/* k:getmem_nbi(dst, src, elems, pe), k:get_nbi: get left in flight */
static int k_getmem_nbi(lua_State *L) { return staged_body(L, STAGE_GET | STAGE_NBI, 0); }

/* k:put_signal(dst, src, elems, sig, value, op, pe): put, quiet, signal;
** k:put_signal_nbi: put, fence, signal (fence and quiet are one
** PipeBarrier(ALL) here, as in the library, so both time alike) */
static int k_put_signal(lua_State *L) { return staged_body(L, STAGE_SIGNAL, 0); }

/* sl_dma's argument positions (dst 1, src 2, ub 3, elems 4, pe 5, relay 6,
** sig 7, value 8) as SDMA's pointer form and udma_put_signal_nbi number them */
static const int sdma_ptr_args[9] = { 0, 1, 2, 3, 5, 6, 0, 0, 0 };
static const int udma_signal_args[9] = { 0, 1, 2, 7, 3, 6, 0, 4, 5 };

/* the UB workspace of an engine call at index i: the block's own UB of at
** least min bytes (bytes asked, or the whole tensor when bytes < 0) */
static sl_loc dma_ub(lua_State *L, lmach *lm, int i, lua_Integer bytes, int bi, int64_t min) {
  sl_loc u = kloc(L, lm, i);
  if (u.buf >= 0) luaL_argerror(L, i, "UB tensor expected, got GM");
  if (bytes < 0) bytes = u.cap - u.off;
  if (bytes < min || bytes > u.cap - u.off)
    luaL_argerror(L, bi, lua_pushfstring(L, "the engine's UB workspace needs %d bytes at "
                  "least (the tensor holds %d)", (int)min, (int)(u.cap - u.off)));
  return u;
}

/* shared body of the engines' put_nbi / get_nbi: (dst, src, ub, [ub_bytes,]
** elems, pe [, relay_pe] [, sync_id]); SDMA's pointer form (ub_bytes, 64
** at least) is told from its tensor form by the argument count */
static int dma_prim(lua_State *L, int eng, int get, int relay) {
  int blk, st, pe, rp = -1, ptr = eng == SL_ENG_SDMA && lua_gettop(L) >= 8, a = ptr ? 5 : 4;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), s = kloc(L, lm, 3), u;
  lua_Integer n;
  u = dma_ub(L, lm, 4, ptr ? kint(L, 5) : -1, ptr ? 5 : 4,
             eng == SL_ENG_SDMA ? 64 : 1);
  n = kint(L, a + 1);
  pe = checkpe(L, lm, a + 2);
  if (relay) rp = checkpe(L, lm, a + 3);
  if (eng == SL_ENG_SDMA) kint(L, a + 3);      /* sync_id: not optional */
  checkid(L, a + 3 + relay);
  st = sl_dma(lm->m, blk, eng, get, &d, &s, &u, (int64_t)n, pe, rp, NULL, 0);
  if (st == SL_EARG && ptr) sl_machine_map_err_arg(lm->m, sdma_ptr_args, 9);
  return kdone(L, lm, blk, st, 0);
}

/* k:sdma_put_nbi(dst, src, ub, ub_bytes, elems, pe, sync_id) or (dst, src, ub, elems, pe, sync_id) */
static int k_sdma_put_nbi(lua_State *L) { return dma_prim(L, SL_ENG_SDMA, 0, 0); }
/* k:sdma_get_nbi(...): the same from PE pe's copy of a symmetric src */
static int k_sdma_get_nbi(lua_State *L) { return dma_prim(L, SL_ENG_SDMA, 1, 0); }
/* k:roce_put_nbi(dst, src, ub, elems, pe [, sync_id]): RDMA through the NICs */
static int k_roce_put_nbi(lua_State *L) { return dma_prim(L, SL_ENG_RDMA, 0, 0); }
/* k:roce_get_nbi(dst, src, ub, elems, pe [, sync_id]) */
static int k_roce_get_nbi(lua_State *L) { return dma_prim(L, SL_ENG_RDMA, 1, 0); }
/* k:udma_put_nbi(dst, src, ub, elems, pe [, sync_id]): Ascend950's UDMA */
static int k_udma_put_nbi(lua_State *L) { return dma_prim(L, SL_ENG_UDMA, 0, 0); }
/* k:udma_get_nbi(dst, src, ub, elems, pe [, sync_id]) */
static int k_udma_get_nbi(lua_State *L) { return dma_prim(L, SL_ENG_UDMA, 1, 0); }
/* k:udma_relay_put_nbi(dst, src, ub, elems, pe, relay_pe [, sync_id]) */
static int k_udma_relay_put_nbi(lua_State *L) { return dma_prim(L, SL_ENG_UDMA, 0, 1); }
/* k:udma_relay_get_nbi(dst, src, ub, elems, pe, relay_pe [, sync_id]) */
static int k_udma_relay_get_nbi(lua_State *L) { return dma_prim(L, SL_ENG_UDMA, 1, 1); }

/* k:udma_put_signal_nbi(dst, src, elems, sig, value, pe [, ub [, sync_id]]):
** the put, then sig on PE pe set to value, in the engine's order */
static int k_udma_put_signal_nbi(lua_State *L) {
  int blk, st, has_ub = !lua_isnoneornil(L, 8), pe;
  lmach *lm = kcheck(L, &blk);
  sl_loc d = kloc(L, lm, 2), s = kloc(L, lm, 3), g = kloc(L, lm, 5), u;
  lua_Integer n = kint(L, 4), v = kint(L, 6);
  pe = checkpe(L, lm, 7);
  if (has_ub) u = dma_ub(L, lm, 8, -1, 8, 1);
  checkid(L, 9);
  st = sl_dma(lm->m, blk, SL_ENG_UDMA, 0, &d, &s, has_ub ? &u : NULL, (int64_t)n, pe, -1,
              &g, (int64_t)v);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, udma_signal_args, 9);
  return kdone(L, lm, blk, st, 0);
}

/* k:sdma_quiet(ub [, ub_bytes], sync_id): the block's SDMA transfers landed */
static int k_sdma_quiet(lua_State *L) {
  int blk, ptr = lua_gettop(L) >= 4;
  lmach *lm = kcheck(L, &blk);
  dma_ub(L, lm, 2, ptr ? kint(L, 3) : -1, ptr ? 3 : 2, 64);
  kint(L, ptr ? 4 : 3);
  checkid(L, ptr ? 4 : 3);
  return kdone(L, lm, blk, sl_dma_quiet(lm->m, blk, SL_ENG_SDMA), 0);
}

/* k:roce_quiet(pe, ub, sync_id): the block's RDMA transfers landed */
static int k_roce_quiet(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  checkpe(L, lm, 2);
  dma_ub(L, lm, 3, -1, 3, 1);
  checkid(L, 4);
  return kdone(L, lm, blk, sl_dma_quiet(lm->m, blk, SL_ENG_RDMA), 0);
}

/* k:udma_quiet(pe): the block's UDMA transfers landed */
static int k_udma_quiet(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  checkpe(L, lm, 2);
  return kdone(L, lm, blk, sl_dma_quiet(lm->m, blk, SL_ENG_UDMA), 0);
}

/* k:signal_op(sig, value, op, pe) */
static int k_signal_op(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc g = kloc(L, lm, 2);
  lua_Integer v = kint(L, 3);
  lua_Integer op = kint(L, 4);
  luaL_argcheck(L, op == SL_SIGNAL_SET || op == SL_SIGNAL_ADD, 4,
                "signal op must be SIGNAL_SET or SIGNAL_ADD");
  int pe = checkpe(L, lm, 5);
  return kdone(L, lm, blk, sl_signal_op(lm->m, blk, &g, (int64_t)v, (int)op, pe, 0), 0);
}

/* k:signal_wait_until(sig, cmp, value): the value that satisfied it */
static int k_signal_wait_until(lua_State *L) {
  int blk, st;
  lmach *lm = kcheck(L, &blk);
  sl_loc g = kloc(L, lm, 2);
  lua_Integer cmp = kint(L, 3);
  lua_Integer v = kint(L, 4);
  int64_t got = 0;
  if ((cmp < 0 || cmp >= SL_NCMP) && !(sl_machine_params(lm->m)->check & SL_CHECK_SYNC))
    return luaL_argerror(L, 3, lua_pushfstring(L, "comparison must be CMP_EQ..CMP_LE "
                         "(0..5), got %d", (int)cmp));
  st = sl_signal_wait(lm->m, blk, &g, (int)cmp, (int64_t)v, &got);
  if (st != SL_OK && st != SL_ESKIP) return engine_error(L, lm->m, st, 1);
  if (sl_block_parked(lm->m, blk)) return lua_yield(L, 0);  /* value at wake */
  lua_pushinteger(L, (lua_Integer)got);
  return kdone(L, lm, blk, SL_OK, 1);
}

/* the p2p_sync calls (shmem_device_p2p_sync.h): a set form takes (ivars,
** nelems, [indices,] status|nil, cmp, value|cmp_values), a single one
** (ivar, cmp, value) or, for wait, (ivar, value) with CMP_NE */
typedef struct p2p_form {
  const char *name;
  int mode, test, vec, some, single, ne;
} p2p_form;
static const p2p_form p2p_forms[] = {
  {"wait_until", SL_WS_ALL, 0, 0, 0, 1, 0}, {"wait", SL_WS_ALL, 0, 0, 0, 1, 1},
  {"wait_until_all", SL_WS_ALL, 0, 0, 0, 0, 0},
  {"wait_until_any", SL_WS_ANY, 0, 0, 0, 0, 0},
  {"wait_until_some", SL_WS_SOME, 0, 0, 1, 0, 0},
  {"wait_until_all_vector", SL_WS_ALL, 0, 1, 0, 0, 0},
  {"wait_until_any_vector", SL_WS_ANY, 0, 1, 0, 0, 0},
  {"wait_until_some_vector", SL_WS_SOME, 0, 1, 1, 0, 0},
  {"test", SL_WS_ALL, 1, 0, 0, 1, 0}, {"test_all", SL_WS_ALL, 1, 0, 0, 0, 0},
  {"test_any", SL_WS_ANY, 1, 0, 0, 0, 0}, {"test_some", SL_WS_SOME, 1, 0, 1, 0, 0},
  {"test_all_vector", SL_WS_ALL, 1, 1, 0, 0, 0},
  {"test_any_vector", SL_WS_ANY, 1, 1, 0, 0, 0},
  {"test_some_vector", SL_WS_SOME, 1, 1, 1, 0, 0},
  {NULL, 0, 0, 0, 0, 0, 0}
};
/* the type names of ACLSHMEM_P2P_SYNC_TYPE_FUNC and the lab's dtypes */
static const char *const p2p_types[][2] = {
  {"float", "fp32"}, {"int8", "int8"}, {"int16", "int16"}, {"int32", "int32"},
  {"int64", "int64"}, {"uint8", "uint8"}, {"uint16", "uint16"}, {"uint32", "uint32"},
  {"uint64", "uint64"}, {"char", "int8"}, {NULL, NULL}
};

/* the comparison value at index i into w (the set's dtype decides its type) */
static void p2p_value(lua_State *L, lmach *lm, const p2p_form *f, sl_wset *w, int i) {
  if (f->vec) {
    w->vals = kloc(L, lm, i);
    w->has_vals = 1;
  } else if (sl_dtype_isfloat((sl_dtype)w->ivars.dtype)) {
    w->fval = (double)luaL_checknumber(L, i);
  } else {
    w->ival = (int64_t)kint(L, i);
  }
}

/* the arguments of a p2p_sync call into w; *map gets sl_wait_set's error
** argument (1 ivars 2 n 3 status 4 cmp 5 value 6 idx) -> the call's */
static void p2p_args(lua_State *L, lmach *lm, const p2p_form *f, int dt, sl_wset *w,
                     int *map) {
  int a = 3;
  memset(w, 0, sizeof(*w));
  w->mode = f->mode;
  w->name = f->name;
  w->ivars = kloc(L, lm, 2);
  if (dt >= 0 && w->ivars.dtype != dt)
    luaL_argerror(L, 2, lua_pushfstring(L, "%s view expected, got %s", sl_dtype_name(dt),
                  sl_dtype_name(w->ivars.dtype)));
  map[1] = 1;
  if (f->single) {
    w->n = 1;
    w->cmp = f->ne ? SL_CMP_NE : (int)kint(L, a++);
    map[4] = 2; map[5] = a - 1;
    p2p_value(L, lm, f, w, a);
    return;
  }
  w->n = (int64_t)kint(L, a++);
  map[2] = 2;
  if (f->some) { w->idx = kloc(L, lm, a++); w->has_idx = 1; map[6] = 3; }
  if (!lua_isnoneornil(L, a)) { w->status = kloc(L, lm, a); w->has_status = 1; }
  map[3] = a++ - 1;
  w->cmp = (int)kint(L, a++);
  map[4] = a - 2;
  p2p_value(L, lm, f, w, a);
  map[5] = a - 1;
}

/* every p2p_sync call: upvalue 1 the form, 2 the dtype its name fixes (-1 none) */
static int k_p2p(lua_State *L) {
  int blk, st, map[7] = { 0, 0, 0, 0, 0, 0, 0 };
  lmach *lm = kcheck(L, &blk);
  const p2p_form *f = &p2p_forms[lua_tointeger(L, lua_upvalueindex(1))];
  sl_wset w;
  int64_t ret = 0;
  p2p_args(L, lm, f, (int)lua_tointeger(L, lua_upvalueindex(2)), &w, map);
  st = sl_wait_set(lm->m, blk, &w, f->test, &ret);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, map, 7);
  if (st != SL_OK && st != SL_ESKIP) return kdone(L, lm, blk, st, 0);
  if (sl_block_parked(lm->m, blk)) return lua_yield(L, 0);  /* the result at wake */
  if (!f->test && f->mode == SL_WS_ALL) return kdone(L, lm, blk, SL_OK, 0);
  lua_pushinteger(L, (lua_Integer)ret);
  return kdone(L, lm, blk, SL_OK, 1);
}

/* register the p2p_sync calls in the table at the top: each form untyped
** (any p2p dtype) and under every type name the library has ("float_test") */
static void p2p_register(lua_State *L) {
  int i, j;
  for (i = 0; p2p_forms[i].name != NULL; i++) {
    lua_pushinteger(L, i);
    lua_pushinteger(L, -1);
    lua_pushcclosure(L, k_p2p, 2);
    lua_setfield(L, -2, p2p_forms[i].name);
    for (j = 0; p2p_types[j][0] != NULL; j++) {
      int dt = sl_dtype_find(p2p_types[j][1]);
      if (dt < 0) continue;                 /* a type the lab does not have yet */
      lua_pushinteger(L, i);
      lua_pushinteger(L, dt);
      lua_pushcclosure(L, k_p2p, 2);
      lua_pushfstring(L, "%s_%s", p2p_types[j][0], p2p_forms[i].name);
      lua_insert(L, -2);
      lua_settable(L, -3);
    }
  }
}

/* the value argument i for an element of dtype dt: *iv or *fv */
static void elem_value(lua_State *L, int i, int dt, int64_t *iv, double *fv) {
  if (sl_dtype_isfloat((sl_dtype)dt)) *fv = (double)luaL_checknumber(L, i);
  else *iv = (int64_t)kint(L, i);
}

/* the view at i, of the dtype upvalue 2 names (-1: any) */
static sl_loc typed_loc(lua_State *L, lmach *lm, int i) {
  sl_loc l = kloc(L, lm, i);
  int dt = (int)lua_tointeger(L, lua_upvalueindex(2));
  if (dt >= 0 && l.dtype != dt)
    luaL_argerror(L, i, lua_pushfstring(L, "%s view expected, got %s", sl_dtype_name(dt),
                  sl_dtype_name(l.dtype)));
  return l;
}

/* k:p(dst, value, pe) / k:NAME_p: one element to PE pe (upvalue 1: 0 p, 1 g) */
static int k_pg(lua_State *L) {
  int blk, st;
  lmach *lm = kcheck(L, &blk);
  sl_loc l = typed_loc(L, lm, 2);
  int64_t iv = 0;
  double fv = 0;
  if (lua_tointeger(L, lua_upvalueindex(1)) == 0) {
    elem_value(L, 3, l.dtype, &iv, &fv);
    return kdone(L, lm, blk, sl_p(lm->m, blk, &l, iv, fv, checkpe(L, lm, 4)), 0);
  }
  st = sl_g(lm->m, blk, &l, checkpe(L, lm, 3), &iv, &fv);
  if (st != SL_OK) return kdone(L, lm, blk, st, 0);
  if (sl_dtype_isfloat((sl_dtype)l.dtype)) lua_pushnumber(L, (lua_Number)fv);
  else lua_pushinteger(L, (lua_Integer)iv);
  return kdone(L, lm, blk, SL_OK, 1);
}

static int amo_body(lua_State *L, int resumed);

/* an atomic goes on after the yield its scratch UB asked for */
static int amo_cont(lua_State *L, int status, lua_KContext ctx) {
  (void)status; (void)ctx;
  return amo_body(L, 1);
}

/* every atomic (upvalue 1: its sl_amo_forms index, 2: the dtype its name
** fixes or -1, 3: the engine an engine's own call names, none = by the
** topology): (dst, [cond,] [value,] pe); atomic_add's UB + MTE3 path
** carves the scratch UB first, as blocking_body does */
static int amo_body(lua_State *L, int resumed) {
  int blk, st, a = 3, map[4] = { 0, 1, 0, 0 };
  lmach *lm = kcheck(L, &blk);
  const sl_amo_form *f = &sl_amo_forms[lua_tointeger(L, lua_upvalueindex(1))];
  sl_loc d = typed_loc(L, lm, 2), u;
  int64_t iv = 0, cond = 0;
  double fv = 0;
  int pe;
  if (f->op == SL_AMO_CAS) cond = (int64_t)kint(L, a++);
  if (f->op != SL_AMO_INC && f->op != SL_AMO_FETCH) elem_value(L, a++, d.dtype, &iv, &fv);
  pe = checkpe(L, lm, a);
  map[3] = a - 1;
  if (f->op == SL_AMO_ADD && !f->fetch) {
    int id;                              /* atomic_add chains with event id 0 (sl_amo) */
    if ((st = sl_ub_scratch(lm->m, blk, d.dtype, &u, &id)) != SL_OK)
      return engine_error(L, lm->m, st, 1);
    if (!resumed && sl_must_yield(lm->m, blk)) return lua_yieldk(L, 0, 0, amo_cont);
  }
  st = sl_amo(lm->m, blk, f, (int)lua_tointeger(L, lua_upvalueindex(3)), &d,
              f->op == SL_AMO_ADD && !f->fetch ? &u : NULL, iv, fv, cond, pe);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, map, 4);
  if (st == SL_OK && f->fetch) return lua_yield(L, 0);   /* the old value at wake */
  return kdone(L, lm, blk, st, 0);
}

/* k:atomic_*(...) */
static int k_amo(lua_State *L) { return amo_body(L, 0); }

/* register name, and NAME_name for every dtype of mask, as closures of fn
** with upvalues (index, dtype) in the table at the top */
static void typed_register(lua_State *L, const char *name, lua_CFunction fn, int index,
                           unsigned mask) {
  int dt;
  lua_pushinteger(L, index);
  lua_pushinteger(L, -1);
  lua_pushcclosure(L, fn, 2);
  lua_setfield(L, -2, name);
  for (dt = 0; dt < SL_NDTYPES; dt++) {
    if (!(mask & (1u << dt))) continue;
    lua_pushfstring(L, "%s_%s", sl_dtype_cann(dt), name);
    lua_pushinteger(L, index);
    lua_pushinteger(L, dt);
    lua_pushcclosure(L, fn, 2);
    lua_settable(L, -3);
    if (dt == SL_INT8) {                     /* the library's char is int8 here */
      lua_pushfstring(L, "char_%s", name);
      lua_pushinteger(L, index);
      lua_pushinteger(L, dt);
      lua_pushcclosure(L, fn, 2);
      lua_settable(L, -3);
    }
  }
}

/* register p, g and the atomics, untyped and typed, and the engines' own
** atomics (mte_atomic_add, roce_atomic_fetch_xor, udma_atomic_swap, ...) */
static void amo_register(lua_State *L) {
  static const char *const engines[] = { NULL, "mte", "roce", "udma" };
  int i, e;
  typed_register(L, "p", k_pg, 0, ~0u);
  typed_register(L, "g", k_pg, 1, ~0u);
  for (i = 0; sl_amo_forms[i].name != NULL; i++) {
    typed_register(L, sl_amo_forms[i].name, k_amo, i,
                   sl_amo_forms[i].mte | sl_amo_forms[i].rdma);
    for (e = SL_ENGINE_MTE; e <= SL_ENGINE_UDMA; e++) {
      if (!(sl_amo_forms[i].engines & (1u << e))) continue;
      lua_pushfstring(L, "%s_%s", engines[e], sl_amo_forms[i].name);
      lua_pushinteger(L, i);
      lua_pushinteger(L, -1);
      lua_pushinteger(L, e);
      lua_pushcclosure(L, k_amo, 3);
      lua_settable(L, -3);
    }
  }
}

/* k:wait_signal_value(flag, ub, count [, cmp [, value]]): hcomm's soft-sync
** Wait; polls the GM flag into UB until flag[0] cmp value; returns flag[0] */
static int k_wait_signal_value(lua_State *L) {
  int blk, st;
  lmach *lm = kcheck(L, &blk);
  sl_loc f = kloc(L, lm, 2), u = kloc(L, lm, 3);
  lua_Integer n = kint(L, 4);
  lua_Integer cmp = kint(L, 5);
  lua_Integer v = kint(L, 6);
  int64_t got = 0;
  st = sl_poll_until(lm->m, blk, &f, &u, (int64_t)n, (int)cmp, (int64_t)v, &got);
  if (st != SL_OK && st != SL_ESKIP) return engine_error(L, lm->m, st, 1);
  if (sl_block_parked(lm->m, blk)) return lua_yield(L, 0);  /* value at wake */
  lua_pushinteger(L, (lua_Integer)got);
  return kdone(L, lm, blk, SL_OK, 1);
}

/* k:quiet() */
static int k_quiet(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_quiet(lm->m, blk), 0);
}

/* k:set_mte_config(ub [, ub_bytes [, sync_id]]): aclshmemx_set_mte_config,
** the staging UB (default: the whole tensor) and event id (default 7) of the
** block's staged calls for the rest of the launch */
static int k_set_mte_config(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  sl_loc u = kloc(L, lm, 2);
  lua_Integer bytes = luaL_optinteger(L, 3, u.buf < 0 ? u.cap - u.off : 1);
  lua_Integer id = luaL_optinteger(L, 4, SL_SCRATCH_ID);
  return kdone(L, lm, blk, sl_set_mte_config(lm->m, blk, &u, (int64_t)bytes, (int)id), 0);
}

/* k:mte_quiet(): aclshmemx_mte_quiet, PipeBarrier(ALL): the block's MTE work
** landed (its DMA engines' transfers are not waited for) */
static int k_mte_quiet(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_pipe_barrier(lm->m, blk, SL_NPIPES), 0);
}

/* k:fence() */
static int k_fence(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_fence(lm->m, blk), 0);
}

/* k:barrier_all() */
static int k_barrier_all(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_barrier_all(lm->m, blk), 0);
}

/* k:shmem_sync_all(): aclshmem_sync_all, every block of every PE (no quiet) */
static int k_shmem_sync_all(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_shmem_sync_all(lm->m, blk), 0);
}

/* k:ascendc_sync_all(), k:sync_all(): Ascend C's SyncAll, the blocks of this PE */
static int k_sync_all(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  return kdone(L, lm, blk, sl_sync_all(lm->m, blk), 0);
}

/* k:my_pe() */
static int k_my_pe(lua_State *L) {
  int blk, pe, b;
  lmach *lm = kcheck(L, &blk);
  sl_block_where(lm->m, blk, &pe, &b);
  lua_pushinteger(L, pe);
  return 1;
}

/* k:ptr(buf, pe): the symmetric buffer's copy on PE pe */
static int k_ptr(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  lview *v = checkanyview(L, 2), *nv;
  int pe = checkpe(L, lm, 3);
  if (v->lm != lm) return luaL_argerror(L, 2, "view of another machine");
  if (v->l.buf < 0 || sl_getbuf(lm->m, v->l.buf)->space != SL_SPACE_SYM)
    return luaL_argerror(L, 2, "not a symmetric buffer (allocate it with m:malloc)");
  lua_getiuservalue(L, 2, 1);
  nv = newview(L, -1, lm, &v->l, v->n, 1);
  nv->l.pe = pe;
  return 1;
}

/* shared body of prof_start / prof_end */
static int prof_prim(lua_State *L, int end) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  lua_Integer f = kint(L, 2);
  luaL_argcheck(L, f >= 0, 2, "frame must be >= 0");
  if (!end && !lm->check) set_site(L, lm);   /* a frame left open names its prof_start */
  return kdone(L, lm, blk, sl_prof(lm->m, blk, f > 1000000 ? 1000000 : (int)f, end), 0);
}

/* k:prof_start(frame) */
static int k_prof_start(lua_State *L) { return prof_prim(L, 0); }

/* k:prof_end(frame) */
static int k_prof_end(lua_State *L) { return prof_prim(L, 1); }

/* core.dtype_size(name): bytes of one element */
static int l_dtype_size(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)sl_dtype_size(checkdtype(L, 1)));
  return 1;
}

/* core.dtype_cann(name): the library's name of a dtype in its typed calls */
static int l_dtype_cann(lua_State *L) {
  lua_pushstring(L, sl_dtype_cann(checkdtype(L, 1)));
  return 1;
}

/* ------------------------------------------------------------------ */
/* teams                                                               */
/* ------------------------------------------------------------------ */

/* m:team_split_strided(parent, start, stride, size): the new team */
static int m_team_split_strided(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int t, st = sl_team_split_strided(lm->m, (int)luaL_checkinteger(L, 2),
                                    (int)luaL_checkinteger(L, 3), (int)luaL_checkinteger(L, 4),
                                    (int)luaL_checkinteger(L, 5), &t);
  if (st != SL_OK) return engine_error(L, lm->m, st, 1);
  lua_pushinteger(L, t);
  return 1;
}

/* m:team_split_2d(parent, x_range): the x team and the y team */
static int m_team_split_2d(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int x, y, st = sl_team_split_2d(lm->m, (int)luaL_checkinteger(L, 2),
                                  (int)luaL_checkinteger(L, 3), &x, &y);
  if (st != SL_OK) return engine_error(L, lm->m, st, 1);
  lua_pushinteger(L, x);
  lua_pushinteger(L, y);
  return 2;
}

/* m:team_destroy(team) */
static int m_team_destroy(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int st = sl_team_destroy(lm->m, (int)luaL_checkinteger(L, 2));
  if (st != SL_OK) return engine_error(L, lm->m, st, 1);
  return 0;
}

/* the answer to team query kind (0 my_pe, 1 n_pes, 2 translate_pe, 3
** pe_mapping) as PE pe sees it, its arguments from index i on */
static lua_Integer team_answer(lua_State *L, lmach *lm, int kind, int i, int pe) {
  int t = (int)luaL_checkinteger(L, i);
  switch (kind) {
    case 0: return sl_team_my_pe(lm->m, t, pe);
    case 1: return sl_team_n_pes(lm->m, t, pe);
    case 2: return sl_team_translate(lm->m, t, (int)luaL_checkinteger(L, i + 1),
                                     (int)luaL_checkinteger(L, i + 2), pe);
    default: return sl_team_global(lm->m, t, (int)luaL_checkinteger(L, i + 1), pe);
  }
}

/* m:team_my_pe(team, pe), m:team_n_pes(team, pe), m:team_translate_pe(src,
** src_pe, dest, pe) (upvalue: the kind of team_answer) */
static int m_team_query(lua_State *L) {
  lmach *lm = checkmach(L, 1);
  int kind = (int)lua_tointeger(L, lua_upvalueindex(1));
  /* the PE asked for: every PE sees its own group of a team */
  lua_pushinteger(L, team_answer(L, lm, kind, 2, checkpe(L, lm, kind == 2 ? 5 : 3)));
  return 1;
}

/* k:team_my_pe(team), k:team_n_pes(team), k:team_translate_pe(src, src_pe,
** dest), k:team_pe_mapping(team, n) (upvalue: the kind of team_answer) */
static int k_team_query(lua_State *L) {
  int blk, pe, b;
  lmach *lm = kcheck(L, &blk);
  sl_block_where(lm->m, blk, &pe, &b);
  lua_pushinteger(L, team_answer(L, lm, (int)lua_tointeger(L, lua_upvalueindex(1)), 2, pe));
  return 1;
}

/* k:barrier(team) / k:sync(team) (upvalue: 0 barrier, 1 sync) */
static int k_team_barrier(lua_State *L) {
  int blk;
  lmach *lm = kcheck(L, &blk);
  int t = (int)luaL_checkinteger(L, 2);
  return kdone(L, lm, blk, sl_team_barrier(lm->m, blk, t,
                                           (int)lua_tointeger(L, lua_upvalueindex(1))), 0);
}

/* register the team calls: machine methods at index mi, block methods at bi */
static void team_register(lua_State *L, int mi, int bi) {
  static const struct { const char *name; lua_CFunction fn; int up, block; } calls[] = {
    {"team_my_pe", m_team_query, 0, 0}, {"team_n_pes", m_team_query, 1, 0},
    {"team_translate_pe", m_team_query, 2, 0},
    {"team_my_pe", k_team_query, 0, 1}, {"team_n_pes", k_team_query, 1, 1},
    {"team_translate_pe", k_team_query, 2, 1}, {"team_pe_mapping", k_team_query, 3, 1},
    {"barrier", k_team_barrier, 0, 1}, {"sync", k_team_barrier, 1, 1},
    {NULL, NULL, 0, 0}
  };
  int i;
  for (i = 0; calls[i].name != NULL; i++) {
    lua_pushinteger(L, calls[i].up);
    lua_pushcclosure(L, calls[i].fn, 1);
    lua_setfield(L, calls[i].block ? bi : mi, calls[i].name);
  }
}

/* ------------------------------------------------------------------ */
/* references for bench/ (the same bytes, without the engine)          */
/* ------------------------------------------------------------------ */

/* core.bench_memcpy(dst, src): plain memcpy of two host-side windows */
static int b_memcpy(lua_State *L) {
  lview *d = checkview(L, 1), *s = checkview(L, 2);
  int64_t bytes = d->n * esize(d);
  luaL_argcheck(L, s->n * esize(s) == bytes, 2, "size mismatch");
  memcpy(view_ptr(L, d, d->l.pe < 0 ? 0 : d->l.pe, d->n, 0),
         view_ptr(L, s, s->l.pe < 0 ? 0 : s->l.pe, s->n, 0), (size_t)bytes);
  return 0;
}

/* core.bench_yardstick(dst, src): dst[i] += src[i] by the vectorised
** yardstick loop (int32, fp32, fp16, bf16 windows of one size) */
static int b_yardstick(lua_State *L) {
  lview *d = checkview(L, 1), *s = checkview(L, 2);
  int dt = d->l.dtype;
  luaL_argcheck(L, (dt == SL_INT32 || dt == SL_FP32 || dt == SL_FP16 || dt == SL_BF16) &&
                s->l.dtype == dt && d->n == s->n, 2,
                "two int32, fp32, fp16 or bf16 windows of one dtype and size expected");
  sl_yardstick_add((sl_dtype)dt, view_ptr(L, d, d->l.pe < 0 ? 0 : d->l.pe, d->n, 0),
                   view_ptr(L, s, s->l.pe < 0 ? 0 : s->l.pe, s->n, 0), (size_t)d->n);
  return 0;
}

/* ------------------------------------------------------------------ */
/* module                                                              */
/* ------------------------------------------------------------------ */

static const luaL_Reg machine_methods[] = {
  {"alloc", m_alloc}, {"malloc", m_malloc}, {"calloc", m_calloc}, {"align", m_align},
  {"host", m_host}, {"free", m_free},
  {"launch", m_launch}, {"memcpy", m_memcpy}, {"params", m_params},
  {"now", m_now}, {"events", m_events}, {"flow_stats", m_flow_stats},
  {"heap_used", m_heap_used}, {"path_bytes", m_path_bytes},
  {"path", m_path}, {"prof_pe", m_prof_pe}, {"reset_prof", m_reset_prof},
  {"prof_rows", m_prof_rows}, {"shadow_rows", m_shadow_rows},
  {"trace", m_trace}, {"trace_records", m_trace_records},
  {"state", m_state}, {"close", m_close}, {"runaway_counts", m_runaway_counts}, {"check_reports", m_check_reports},
  {"team_split_strided", m_team_split_strided}, {"team_split_2d", m_team_split_2d},
  {"team_destroy", m_team_destroy},
  {NULL, NULL}
};

static const luaL_Reg machine_meta[] = {
  {"__gc", m_close}, {"__close", m_close}, {"__tostring", m_tostring},
  {"__index", NULL}, {NULL, NULL}
};

static const luaL_Reg view_methods[] = {
  {"sub", v_sub}, {"on", v_on}, {"fill", v_fill}, {"read", v_read},
  {"raw", v_bytes}, {"checksum", v_checksum}, {"compare", v_compare},
  {"copy", v_copy}, {"reinterpret", v_reinterpret}, {"quant_int8", v_quant_int8},
  {NULL, NULL}
};

static const luaL_Reg block_methods[] = {
  {"ub", k_ub}, {"data_copy", k_data_copy}, {"duplicate", k_duplicate}, {"data_copy_pad", k_data_copy_pad},
  {"set_flag", k_set_flag}, {"wait_flag", k_wait_flag},
  {"pipe_barrier", k_pipe_barrier}, {"set_atomic", k_set_atomic},
  {"set_atomic_none", k_set_atomic_none}, {"get_value", k_get_value},
  {"set_value", k_set_value}, {"add", k_add}, {"max", k_max}, {"min", k_min},
  {"muls", k_muls}, {"cast", k_cast}, {"abs", k_abs}, {"reduce_max", k_reduce_max},
  {"system_cycle", k_system_cycle},
  {"mte_put_nbi", k_mte_put_nbi}, {"mte_get_nbi", k_mte_get_nbi},
  {"putmem", k_putmem}, {"getmem", k_getmem}, {"put", k_putmem}, {"get", k_getmem},
  {"putmem_nbi", k_putmem_nbi}, {"getmem_nbi", k_getmem_nbi},
  {"put_nbi", k_putmem_nbi}, {"get_nbi", k_getmem_nbi},
  {"put_signal", k_put_signal}, {"put_signal_nbi", k_put_signal},
  {"signal_op", k_signal_op}, {"signal_wait_until", k_signal_wait_until},
  {"wait_signal_value", k_wait_signal_value}, {"quiet", k_quiet}, {"fence", k_fence}, {"barrier_all", k_barrier_all},
  {"sync_all", k_sync_all}, {"ascendc_sync_all", k_sync_all},
  {"shmem_sync_all", k_shmem_sync_all}, {"my_pe", k_my_pe},
  {"sdma_put_nbi", k_sdma_put_nbi}, {"sdma_get_nbi", k_sdma_get_nbi},
  {"sdma_quiet", k_sdma_quiet}, {"mte_quiet", k_mte_quiet},
  {"set_mte_config", k_set_mte_config}, {"roce_put_nbi", k_roce_put_nbi},
  {"roce_get_nbi", k_roce_get_nbi}, {"roce_quiet", k_roce_quiet},
  {"udma_put_nbi", k_udma_put_nbi}, {"udma_get_nbi", k_udma_get_nbi},
  {"udma_relay_put_nbi", k_udma_relay_put_nbi}, {"udma_relay_get_nbi", k_udma_relay_get_nbi},
  {"udma_put_signal_nbi", k_udma_put_signal_nbi}, {"udma_quiet", k_udma_quiet},
  {"ptr", k_ptr}, {"prof_start", k_prof_start}, {"prof_end", k_prof_end},
  {NULL, NULL}
};

/* push a table of every hard event's name -> its number */
static void push_events(lua_State *L) {
  int i;
  lua_createtable(L, 0, SL_NEVENTS);
  for (i = 0; i < SL_NEVENTS; i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, sl_event_name(i));
  }
}

/* open the module */
int luaopen_shmemlab_core(lua_State *L);
int luaopen_shmemlab_core(lua_State *L) {
  int i;
  luaL_newmetatable(L, MACHINE_MT);
  luaL_setfuncs(L, machine_meta, 0);
  luaL_newlib(L, machine_methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "methods");
  lua_pop(L, 1);

  luaL_newmetatable(L, VIEW_MT);
  luaL_newlib(L, view_methods);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods");
  lua_createtable(L, 0, 8);
  for (i = 0; view_fields[i] != NULL; i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, view_fields[i]);
  }
  lua_pushcclosure(L, v_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, v_len); lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, v_tostring); lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);

  luaL_newmetatable(L, BLOCK_MT);
  luaL_newlibtable(L, block_methods);
  push_events(L);                          /* the primitives' upvalue: name -> number */
  luaL_setfuncs(L, block_methods, 1);
  p2p_register(L);
  amo_register(L);
  luaL_getmetatable(L, MACHINE_MT);
  lua_getfield(L, -1, "methods");
  team_register(L, lua_absindex(L, -1), lua_absindex(L, -3));
  lua_pop(L, 2);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "methods");
  lua_pop(L, 1);

  if (luaL_newmetatable(L, "shmemlab.watchdog")) {  /* stops the thread at lua_close */
    lua_pushcfunction(L, wd_shutdown);
    lua_setfield(L, -2, "__gc");
    lua_newuserdatauv(L, 1, 0);
    lua_pushvalue(L, -2);
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "shmemlab.watchdog.sentinel");
  }
  lua_pop(L, 1);

  lua_newtable(L);
  lua_pushcfunction(L, l_new); lua_setfield(L, -2, "new");
  lua_pushcfunction(L, l_dtype_size); lua_setfield(L, -2, "dtype_size");
  lua_pushcfunction(L, l_dtype_cann); lua_setfield(L, -2, "dtype_cann");
  lua_pushcfunction(L, b_memcpy); lua_setfield(L, -2, "bench_memcpy");
  lua_pushcfunction(L, b_yardstick); lua_setfield(L, -2, "bench_yardstick");
  luaL_getmetatable(L, MACHINE_MT); lua_getfield(L, -1, "methods");
  lua_setfield(L, -3, "machine_methods"); lua_pop(L, 1);
  luaL_getmetatable(L, VIEW_MT); lua_getfield(L, -1, "methods");
  lua_setfield(L, -3, "view_methods"); lua_pop(L, 1);
  luaL_getmetatable(L, BLOCK_MT); lua_getfield(L, -1, "methods");
  lua_setfield(L, -3, "block_methods"); lua_pop(L, 1);
  lua_createtable(L, SL_NEVENTS, 0);
  for (i = 0; i < SL_NEVENTS; i++) {
    lua_pushstring(L, sl_event_name(i));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "events");
  push_events(L);
  lua_setfield(L, -2, "EVENT");
  lua_pushinteger(L, SL_SIGNAL_SET); lua_setfield(L, -2, "SIGNAL_SET");
  lua_pushinteger(L, SL_SIGNAL_ADD); lua_setfield(L, -2, "SIGNAL_ADD");
  for (i = 0; i < SL_NCMP; i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, sl_cmp_name(i));
  }
  lua_pushinteger(L, SL_PROF_MAX_FRAME); lua_setfield(L, -2, "PROF_MAX_FRAME");
  lua_pushinteger(L, SL_PROF_MAX_BLOCK); lua_setfield(L, -2, "PROF_MAX_BLOCK");
  lua_pushinteger(L, SL_SHADOW_FRAMES); lua_setfield(L, -2, "SHADOW_FRAMES");
  lua_pushinteger(L, SL_SCRATCH_BYTES); lua_setfield(L, -2, "SCRATCH_BYTES");
  lua_pushinteger(L, -1); lua_setfield(L, -2, "SIZE_MAX");   /* C's SIZE_MAX, as 64 bits */
  lua_pushinteger(L, SL_TEAM_WORLD); lua_setfield(L, -2, "TEAM_WORLD");
  lua_pushinteger(L, SL_TEAM_INVALID); lua_setfield(L, -2, "TEAM_INVALID");
  return 1;
}
