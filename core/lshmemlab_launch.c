/*
** lshmemlab_launch.c -- m:launch, one coroutine per (PE, block) resumed in the
** order the engine's clock gives, and the runaway watchdog.
*/
#include "lshmemlab.h"

/* what this thread is resuming (lshmemlab.h) */
_Thread_local lhere lsl_here LSL_TLS;

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
** call chain while it changes. The next primitive disarms the hook. The
** slot names the launching state for the whole launch, not each block's
** coroutine for each resume: the two stores a resume made were seq_cst (an
** xchg each on x86, a full barrier; 6% of a short launch's CPU), and a
** relaxed store is a race to helgrind (spec/engine_runaway_spec.lua). So a
** block that ends without a primitive is no progress to the watchdog: it may
** arm the next block early, which then still runs its whole budget. The
** handler arms the block its own thread runs (lm->cur_co), and only for
** that block's machine: in a launch inside a block of another machine,
** lsl_here names the inner machine and its own slot (or none), and the
** outer machine's request waits until its own block runs again (else the
** inner block, whose budget may be 0: none, was stopped). The lock is
** taken by the watchdog for each look, and by the Lua side only to list a
** machine (or a new launching thread) and to unlist it. SIGURG is ignored
** by default, so a late signal after the handler is gone does nothing.
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
  wdslot *w = lsl_here.wd;
  lmach *lm = lsl_here.lm;
  lua_State *co;
  (void)sig;
  if (w == NULL || lm == NULL || w != &lm->wd) return;   /* another machine's block
                                                           (or lsl_here half written) */
  if (!atomic_exchange(&w->want, 0) || (co = lm->cur_co) == NULL) return;
  atomic_store(&w->armed, 1);
  lua_sethook(co, budget_hook, LUA_MASKCOUNT, HOOK_STEP);
}

/* one look at every listed machine (wd_mu held) */
static void wd_look(void) {
  wdslot *w;
  for (w = wd_list; w != NULL; w = w->next) {
    lua_State *l = atomic_load(&w->launcher);
    unsigned prog = atomic_load_explicit(&w->prog, memory_order_relaxed);
    if (l != NULL && l == w->seen_launcher && prog == w->seen_prog && !atomic_load(&w->armed)) {
      atomic_store(&w->want, 1);
      pthread_kill(w->owner, WD_SIGNAL);
    }
    w->seen_launcher = l;
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
void lsl_wd_list_remove(lmach *lm) {
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
int lsl_wd_shutdown(lua_State *L) {
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
void lsl_wd_disarm(lmach *lm, lua_State *co) {
  atomic_store(&lm->wd.armed, 0);
  lua_sethook(co, NULL, 0, 0);
}

/* ------------------------------------------------------------------ */
/* launch                                                              */
/* ------------------------------------------------------------------ */

/*
** The context tables k. A machine keeps each block's k for its later
** launches (user value 5: kt[blk + 1]; kt[-1 .. -K_FIELDS] the field names,
** kt[0] the metatable, so refilling one hashes no C string). A kept k is
** used again only when it is exactly what a new one would be once its four
** fields are written again: its metatable is the block metatable, k[1] and
** k[2] still name its block and machine, and it has no other key. A key
** added to k goes through the block metatable's __newindex
** (lsl_k_newindex: every key but the six is absent from a kept k), which
** drops k from kt, so no launch iterates k (rawset, which bypasses
** __newindex, is the one way past it). The four fields are written at each
** reuse rather than read back and compared: half the Lua API calls.
*/
#define K_FIELDS 4
#define K_KEPT_MAX 65536          /* blocks whose k a machine keeps */
static const char *const k_names[K_FIELDS] = { "pe", "block", "n_pes", "block_num" };

/* write the four fields of k (on top); kt at index kt, the field names at
** kt + 2 .. (k_kept) */
static void k_fields(lua_State *L, int kt, const lua_Integer *f) {
  int i;
  for (i = 0; i < K_FIELDS; i++) {
    lua_pushvalue(L, kt + 2 + i);
    lua_pushinteger(L, f[i]);
    lua_rawset(L, -3);
  }
}

/* 1 when the value at index i is the integer v */
static int is_int(lua_State *L, int i, lua_Integer v) {
  return lua_isinteger(L, i) && lua_tointeger(L, i) == v;
}

/* __newindex of the block metatable: k[key] = value for a key k lacks; a
** kept k that gains a key is no longer what a new one would be, so it
** leaves the machine's kept-k table (k[1], k[2]: its block and machine) */
int lsl_k_newindex(lua_State *L) {
  lua_settop(L, 3);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, 1);                       /* a nil or NaN key raises, as k[key] = v would */
  if (lua_rawgeti(L, 1, 2) == LUA_TUSERDATA && luaL_testudata(L, 4, MACHINE_MT) != NULL &&
      lua_rawgeti(L, 1, 1) == LUA_TNUMBER && lua_isinteger(L, 5)) {
    lua_Integer i = lua_tointeger(L, 5) + 1;
    lua_getiuservalue(L, 4, 5);
    if (lua_type(L, 6) == LUA_TTABLE && i > 0 && lua_rawgeti(L, 6, i) == LUA_TTABLE &&
        lua_rawequal(L, 7, 1)) {
      lua_pushnil(L);
      lua_rawseti(L, 6, i);
    }
  }
  return 0;
}

/* 1 when the kept k on top may serve block blk again (k_fields rewrites its
** fields; its other keys: lsl_k_newindex); the stack as it was. Its
** metatable and k[2] are told by their addresses (the block metatable's,
** run->kmt, and the machine's userdata, lm): the identities lua_rawequal
** compares, at a third of its cost, twice a block */
static int k_reusable(lua_State *L, const lrun *run, const lmach *lm, int blk) {
  int ok, top = lua_gettop(L);
  if (!lua_getmetatable(L, top)) return 0;
  ok = lua_topointer(L, -1) == run->kmt && lua_rawgeti(L, top, 1) == LUA_TNUMBER &&
       is_int(L, top + 2, blk) && lua_rawgeti(L, top, 2) == LUA_TUSERDATA &&
       lua_touserdata(L, top + 3) == (const void *)lm;
  lua_settop(L, top);
  return ok;
}

/* the kept-k table of the machine at index 1, pushed with the block
** metatable and the K_FIELDS field names above it */
static int k_kept(lua_State *L) {
  int i, kt;
  luaL_checkstack(L, 2 + K_FIELDS, "launch");
  lua_getiuservalue(L, 1, 5);
  kt = lua_gettop(L);
  if (lua_rawgeti(L, kt, 0) != LUA_TTABLE) {
    lua_pop(L, 1);
    for (i = 0; i < K_FIELDS; i++) {
      lua_pushstring(L, k_names[i]);
      lua_rawseti(L, kt, -1 - i);
    }
    luaL_getmetatable(L, BLOCK_MT);
    lua_pushvalue(L, -1);
    lua_rawseti(L, kt, 0);
  }
  for (i = 0; i < K_FIELDS; i++) lua_rawgeti(L, kt, -1 - i);
  return kt;
}

/* push the context table k of block blk (the machine lm at index 1; the
** kept-k table at run->kt, the block metatable above it) */
static void push_k(lua_State *L, int blk, const lmach *lm, const lrun *run) {
  int pe, b, kt = run->kt;
  sl_machine *m = lm->m;
  lua_Integer f[K_FIELDS];
  sl_block_where(m, blk, &pe, &b);
  f[0] = pe; f[1] = b; f[2] = sl_machine_params(m)->n_pes; f[3] = sl_block_dim(m);
  if (lua_rawgeti(L, kt, blk + 1) == LUA_TTABLE && k_reusable(L, run, lm, blk)) {
    k_fields(L, kt, f);
    return;
  }
  lua_pop(L, 1);
  lua_createtable(L, 2, K_FIELDS);
  lua_pushinteger(L, blk); lua_rawseti(L, -2, 1);
  lua_pushvalue(L, 1); lua_rawseti(L, -2, 2);
  k_fields(L, kt, f);
  lua_pushvalue(L, kt + 1);
  lua_setmetatable(L, -2);
  if (blk < K_KEPT_MAX) {
    lua_pushvalue(L, -1);
    lua_rawseti(L, kt, blk + 1);
  }
}

/* views the running launch keeps: a table in the machine's user value 4 at
** KEEP_KEY, at most KEEP_MAX views (about 100 bytes each) */
#define KEEP_KEY (-1)
#define GUARD_KEY (-2)          /* the launch's guard (launch_guard) */
#define KEEP_MAX (1 << 18)

/* keep the view at the top of L's stack for the running launch (none: not
** kept), the machine at index mi: a window of a buffer's own-PE view, which
** every PE's blocks take alike. Its root keeps it weakly, and a collection
** between two PEs' asks would make it again (DeepEP's dispatch at EP128 made
** each row's windows 128 times) */
void lsl_launch_keep(lua_State *L, lmach *lm, int mi) {
  if (lm->run == NULL || lm->keep_n >= KEEP_MAX) return;
  lua_getiuservalue(L, mi, 4);
  if (lua_rawgeti(L, -1, KEEP_KEY) == LUA_TTABLE) {
    lua_pushvalue(L, -3);
    lua_rawseti(L, -2, ++lm->keep_n);
  }
  lua_pop(L, 2);
}

/* the launch's table of kept views, made at its start (pool: user value 4) */
static void keep_begin(lua_State *L, lmach *lm, lrun *run) {
  lua_newtable(L);
  lua_rawseti(L, run->pool, KEEP_KEY);
  lm->keep_n = 0;
}

/* the kept views go when the launch ends or fails */
static void keep_end(lua_State *L, int pool) {
  lua_pushnil(L);
  lua_rawseti(L, pool, KEEP_KEY);
}

/* abandon the launch under way (launch_fail; guard_close): the watchdog
** told, the kept views dropped (pool: the index of the pool table, 0 when
** none was fetched yet), the engine's launch aborted */
static void launch_abandon(lua_State *L, lmach *lm, int pool) {
  if (lm->wd.listed) atomic_store(&lm->wd.launcher, NULL);
  if (pool != 0) keep_end(L, pool);
  sl_launch_abort(lm->m);
  lm->cur = -1;
  lm->run = NULL;
}

/* raise a launch failure after cleaning up */
static int launch_fail(lua_State *L, lmach *lm, const char *msg) {
  launch_abandon(L, lm, lm->run != NULL ? lm->run->pool : 0);
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

/* the blocks a runaway stop names (doc/guard.md "Runaway kernels"): the live
** blocks that called primitives in the count that tripped (quiet: since
** something last landed; else: in this launch), grouped by the line and
** primitive they are at, pushed as one string */
void lsl_runaway_blocks(lua_State *L, lmach *lm, int quiet) {
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

/* coroutines a machine keeps for its next launches: block blk's in its
** user value 4 at blk + 1 (a machine of more blocks makes the rest anew each
** launch, anchored in the launch's table at run->cos) */
#define POOL_MAX 4096

/* the coroutine of block blk, anchored (not pushed): the one the block left
** in an earlier launch when it ended (its stack and call records already
** grown), or a new one */
static lua_State *block_co(lua_State *L, lrun *run, int blk) {
  lua_State *co;
  if (blk >= POOL_MAX) {
    co = lua_newthread(L);
    lua_rawseti(L, run->cos, blk + 1);
    return co;
  }
  if (lua_rawgeti(L, run->pool, blk + 1) == LUA_TTHREAD) {
    co = lua_tothread(L, -1);
    lua_pop(L, 1);
    if (lua_status(co) == LUA_OK && lua_gettop(co) == 0) return co;   /* ended */
  } else {
    lua_pop(L, 1);
  }
  co = lua_newthread(L);                  /* first run, or a faulted or abandoned one */
  lua_rawseti(L, run->pool, blk + 1);
  return co;
}

/* the coroutine of block blk, made on its first run (k below the kernel as
** its anchor for the launch, then the kernel, k and the arguments), with the
** number of values it resumes with in *nres; L's stack has room for them
** (m_launch checks once: each turn of its loop leaves L's top as it found it) */
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
  co = block_co(L, run, blk);
  if (!lua_checkstack(co, run->nargs + 5)) return NULL;
  *(lmach **)lua_getextraspace(co) = lm;   /* the primitives find their machine */
  lua_sethook(co, NULL, 0, 0);               /* not the creator's (an armed hook) */
  push_k(L, blk, lm, run);
  run->b[blk].co = co;
  run->b[blk].k = lua_topointer(L, -1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -2);                      /* k (the anchor, out of the kernel's
                                                reach), kernel, k */
  for (i = 0; i < run->nargs; i++) lua_pushvalue(L, 4 + i);
  lua_xmove(L, co, 3 + run->nargs);
  *nres = 1 + run->nargs;
  return co;
}

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

/* block blk ended: its k may go, its coroutine (its stack emptied) stays
** for the block's next launch */
static void launch_block_done(lua_State *L, lmach *lm, lrun *run, int blk) {
  open_frame_note(L, lm, blk);
  sl_block_done(lm->m, blk);
  lua_settop(run->b[blk].co, 0);
  if (blk >= POOL_MAX) {
    lua_pushnil(L);
    lua_rawseti(L, run->cos, blk + 1);
  }
  run->b[blk].co = NULL;
  run->b[blk].k = NULL;
}

/* run block blk on co until it yields or ends; a fault raises */
static void launch_resume(lua_State *L, lmach *lm, lrun *run, int blk, lua_State *co,
                          int nres) {
  sl_machine *m = lm->m;
  lhere *here = &lsl_here, outer = *here;
  int b, nout, st;
  lm->cur = blk;
  lm->cur_co = co;
  lm->cur_k = run->b[blk].k;
  sl_block_where(m, blk, &lm->cur_pe, &b);
  lm->budget_left = lm->budget;
  here->wd = lm->wd.listed ? &lm->wd : NULL;   /* never an outer machine's (wd_on_signal) */
  here->lm = lm;
  st = lua_resume(co, L, nres, &nout);
  *here = outer;
  lm->cur = -1;
  lm->cur_co = NULL;
  lm->cur_k = NULL;
  if (lm->wd.listed && atomic_load(&lm->wd.armed)) lsl_wd_disarm(lm, co);
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
** tasks added to the machine's records under the kernel's name and type (the
** strings at ni, ni + 1) */
static int launch_result(lua_State *L, lmach *lm, int ni) {
  int i, npes = sl_machine_params(lm->m)->n_pes;
  double few[64], *kus = few, e2e, start, mx = 0;
  if (npes > 64) kus = (double *)lua_newuserdatauv(L, sizeof(double) * (size_t)npes, 0);
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
  lsl_add_launch_tasks(L, 1, ni, npes, start, kus);
  return 1;
}

/* the launch's blocks (run->b, run->px: one userdata the machine keeps in
** its user value 4 at 0, grown when a launch has more blocks) and its
** tables, pushed: user value 4 (run->pool) and, for a launch of more than
** POOL_MAX blocks, the table anchoring the rest of the coroutines (run->cos) */
static void launch_blocks(lua_State *L, lrun *run) {
  size_t per = sizeof(lblock) + sizeof(sl_pipe_xfer), n = (size_t)run->nblk;
  lua_getiuservalue(L, 1, 4);
  run->pool = lua_gettop(L);
  if (lua_rawgeti(L, run->pool, 0) != LUA_TUSERDATA || lua_rawlen(L, -1) < per * n) {
    lua_pop(L, 1);
    lua_newuserdatauv(L, per * n, 0);
    lua_pushvalue(L, -1);
    lua_rawseti(L, run->pool, 0);
  }
  run->b = (lblock *)lua_touserdata(L, -1);
  lua_pop(L, 1);                          /* anchored in user value 4 */
  memset(run->b, 0, sizeof(lblock) * n);
  run->px = (sl_pipe_xfer *)(void *)(run->b + n);       /* set by each chain */
  run->cos = 0;
  if (run->nblk > POOL_MAX) {
    lua_createtable(L, run->nblk, 0);
    run->cos = lua_gettop(L);
  }
}

/* __close of a launch's guard (at m:launch's return, or when an error that
** no launch_fail raised leaves it: a full stack, a memory error): a launch
** still under way is abandoned as launch_fail abandons it (launch_abandon),
** so that the machine can launch again; after an end or a launch_fail it
** does nothing. The guard's user value 1 is the pool (user value 4): the
** frame of m:launch, its lrun included, is gone when an error closes it */
static int guard_close(lua_State *L) {
  lmach *lm = *(lmach **)lua_touserdata(L, 1);
  if (!sl_running(lm->m)) return 0;
  lua_getiuservalue(L, 1, 1);
  launch_abandon(L, lm, lua_gettop(L));
  return 0;
}

/* push the machine's launch guard (kept in the pool at GUARD_KEY, made on
** the first launch) and mark it to be closed when m:launch returns or fails */
static void launch_guard(lua_State *L, lmach *lm) {
  lua_getiuservalue(L, 1, 4);
  if (lua_rawgeti(L, -1, GUARD_KEY) != LUA_TUSERDATA) {
    lua_pop(L, 1);
    *(lmach **)lua_newuserdatauv(L, sizeof(lmach *), 1) = lm;
    lua_pushvalue(L, -2);
    lua_setiuservalue(L, -2, 1);
    if (luaL_newmetatable(L, "shmemlab.launch_guard")) {
      lua_pushcfunction(L, guard_close);
      lua_setfield(L, -2, "__close");
    }
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, GUARD_KEY);
  }
  lua_remove(L, -2);
  lua_toclose(L, -1);
}

/* m:launch(kernel, block_dim, ...): run kernel on every (PE, block); kernel
** is a function or {name =, kernel = fn, type = "AIV"} (the msprof task) */
static int m_launch(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  sl_machine *m = lm->m;
  int ni, st;
  lrun run;
  int block_dim = launch_args(L, lm, &run.nargs, &ni);
  if (sl_running(m)) return luaL_error(L, "launch inside a running launch");
  if (lm->budget > 0 && !wd_list_add(lm))
    return luaL_error(L, "cannot start the runaway watchdog thread (instruction_budget)");
  launch_guard(L, lm);
  if ((st = sl_launch_begin(m, block_dim)) != SL_OK)
    return lsl_engine_error(L, m, st, 1);
  run.nblk = sl_block_dim(m) * sl_machine_params(m)->n_pes;
  launch_blocks(L, &run);
  keep_begin(L, lm, &run);
  run.kt = k_kept(L);
  run.kmt = lua_topointer(L, run.kt + 1);
  luaL_checkstack(L, run.nargs + 4, "too many kernel arguments");   /* launch_co's */
  lm->run = &run;
  if (lm->wd.listed) atomic_store(&lm->wd.launcher, L);
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
  if (lm->wd.listed) atomic_store(&lm->wd.launcher, NULL);
  keep_end(L, run.pool);
  lm->run = NULL;
  return launch_result(L, lm, ni);
}

/* the machine's launch method */
const luaL_Reg lsl_launch_methods[] = { {"launch", m_launch}, {NULL, NULL} };
