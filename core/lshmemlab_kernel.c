/*
** lshmemlab_kernel.c -- kernel primitives, part one: how a primitive finds its
** block (k), UB, copies, pipes and flags, vector ops, MTE and DMA engines.
*/
#include "lshmemlab.h"

static const char stale_k[] = "primitive called outside its block's run (a stale k, another "
  "block's k, after the launch, or from a coroutine inside the kernel)";

/* push the machine of k (index 1), the running block's k of machine lm: k[2]
** (a TQue at index 1: its user value 1),
** unless the kernel wrote over it */
static void push_kmach(lua_State *L, lmach *lm) {
  if (lua_type(L, 1) == LUA_TUSERDATA) lua_getiuservalue(L, 1, 1);   /* a TQue's */
  else lua_rawgeti(L, 1, 2);
  if (lua_touserdata(L, -1) != (void *)lm) luaL_error(L, "%s", stale_k);
}

/* 1 when a Lua function's source file lies in a directory named shmemlab
** (its last '/' found from the end: a chunk name holds no NUL) */
static int in_shmemlab(const lua_Debug *ar) {
  const char *src = ar->source, *slash = src + ar->srclen;
  if (src[0] != '@') return 0;
  while (slash > src && *slash != '/') slash--;
  return *slash == '/' && slash - src >= 9 && memcmp(slash - 8, "shmemlab", 8) == 0 &&
         (slash[-9] == '/' || slash[-9] == '@');
}

/* the frame outside lua/shmemlab a primitive called at ar came from, when ar
** is a shared helper of lua/shmemlab (op.copy_gm, ...); 0 when none. The
** frames passed over need only their source ("S"); the line ("l", the costly
** part) is looked up for a frame outside lua/shmemlab alone */
static int site_via(lua_State *L, const lua_Debug *ar, lua_Debug *up) {
  int level = 2;
  if (!in_shmemlab(ar)) return 0;
  while (lua_getstack(L, level++, up) && lua_getinfo(L, "S", up))
    if (!in_shmemlab(up) && lua_getinfo(L, "l", up) && up->currentline > 0) return 1;
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
  e->src = lsl_copy_str(ar->source);
  e->vsrc = up != NULL ? lsl_copy_str(up->source) : NULL;
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
void lsl_set_site(lua_State *L, lmach *lm) {
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

/* stop a runaway launch (doc/guard.md "Runaway kernels") with the reason why
** (sl_prim_tick's) and the blocks still at it, at the calling line */
LSL_COLD static void runaway_stop(lua_State *L, lmach *lm, int why) {
  lsl_runaway_blocks(L, lm, why == SL_RUN_SPIN);
  if (why == SL_RUN_SPIN)
    luaL_error(L, "runaway kernel: the launch's blocks called more than %I primitives in a row with "
               "nothing new (no copy or scalar read but repeats of their last ones, no vector "
               "op, no signal or UB value changed, no block ended: spinning, polling a value no "
               "one writes, or repeating the same copy; the machine option spin_limit); the "
               "blocks at it, by line:%s",
               (lua_Integer)sl_machine_params(lm->m)->spin_limit, lua_tostring(L, -1));
  luaL_error(L, "runaway kernel: the block called more than %I primitives in this launch "
             "(the machine option primitive_limit); the blocks at it, by line:%s",
             (lua_Integer)sl_machine_params(lm->m)->primitive_limit, lua_tostring(L, -1));
}

/* count the running primitive; a runaway launch is stopped (runaway_stop) */
static inline void runaway_check(lua_State *L, lmach *lm, int blk) {
  int why = sl_prim_tick(lm->m, blk);
  if (why != SL_RUN_OK) runaway_stop(L, lm, why);
}

/* what every primitive of the running block does once it may run: its site
** (checked runs), the runaway guard's count, the budget and the watchdog */
static void prim_counted(lua_State *L, lmach *lm, int blk) {
  if (lm->check) lsl_set_site(L, lm);
  runaway_check(L, lm, blk);
  lm->budget_left = lm->budget;                             /* the budget restarts */
  atomic_store_explicit(&lm->wd.prog, atomic_load_explicit(&lm->wd.prog, memory_order_relaxed) + 1u,
                        memory_order_relaxed);
  if (atomic_load_explicit(&lm->wd.armed, memory_order_relaxed)) lsl_wd_disarm(lm, L);
}

/* lsl_kcheck when k is not the running block's own table: k (index 1) must name
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

/* the primitive running now (level 0: the C function itself, or its
** continuation, which runs in its frame) */
static lua_CFunction running_prim(lua_State *L) {
  lua_Debug ar;
  lua_CFunction f = NULL;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "f", &ar)) {
    f = lua_tocfunction(L, -1);
    lua_pop(L, 1);
  }
  if (f == NULL) luaL_error(L, "a primitive that is not a C function");
  return f;
}

/* the block caught up: the primitive (kept at ctx, above its arguments) runs
** from its start, in its own frame, as if called now */
static int rerun(lua_State *L, int status, lua_KContext ctx) {
  lua_CFunction f;
  (void)status;
  lua_settop(L, (int)ctx);               /* what the resume passed goes */
  f = lua_tocfunction(L, (int)ctx);
  lua_settop(L, (int)ctx - 1);           /* its arguments, as they were */
  return f(L);
}

/* a block that ran ahead of another block's wake-up (sl_block_ahead) calls a
** primitive that reads or writes what other blocks see: it yields first, at
** its clock, and the primitive again (the running one when NULL, looked up
** once, here) runs when it resumes, kept on the stack for rerun */
static void catch_up(lua_State *L, lmach *lm, int blk, lua_CFunction again) {
  if (!sl_must_yield(lm->m, blk)) return;   /* nothing came before it after all */
  luaL_checkstack(L, 1, "catch up");
  lua_pushcfunction(L, again != NULL ? again : running_prim(L));  /* fails here, not after */
  lua_yieldk(L, 0, (lua_KContext)lua_gettop(L), rerun);
}

/* a scalar access's arguments as its catch-up test read them (read: 1), so
** the access reads them once: the view at 2 (v, NULL when none) and the
** index at 3 (i, when isint); ahead 1 when sl_scalar_ahead_at said the
** element may run ahead (so it did not catch up), else -1 */
typedef struct sarg { lview *v; lua_Integer i; int isint, read, ahead; } sarg;

/* a scalar access's UB element (arguments 2 and 3, read into a) may run
** ahead (sl_scalar_ahead_at); 0 when they are not a UB view of this launch
** and an integer (it catches up, and fails after) */
static int scalar_here(lua_State *L, lmach *lm, int blk, sarg *a) {
  lview *v = a->v = lsl_toview(L, 2);
  a->i = lua_tointegerx(L, 3, &a->isint);
  a->read = 1;
  if (v == NULL || v->lm != lm || v->l.buf >= 0 || v->gen != sl_machine_gen(lm->m) || !a->isint)
    return 0;
  if (!sl_scalar_ahead_at(lm->m, blk, &v->l, (int64_t)a->i)) return 0;
  a->ahead = 1;                           /* no catch-up: the access is told (a catch-up */
  return 1;                               /* may land what changes the answer: not told) */
}

/* the machine and the block of the running primitive (the cached one when
** the call comes from it, else kcheck_slow's checks) */
static inline lmach *krunning(lua_State *L, int *blk) {
  lmach *lm = lsl_here.lm;
  if (lm == NULL || lm->cur_co != L || lua_topointer(L, 1) != lm->cur_k) lm = kcheck_slow(L);
  *blk = lm->cur;
  return lm;
}

/* the machine and block of the running primitive: the running block's own
** coroutine calling with its own k is told by two pointer compares (lsl_here,
** cur_co, cur_k); anything else goes through kcheck_slow. A primitive that
** only queues work to the block's pipes (lsl_kcheck_q) may run while the
** block is ahead, and so may a scalar UB access (queue_only 2) of bytes no
** pending pipe work of the block touches (sl_scalar_ahead_at), and a signal_op
** (queue_only 3) where sl_signal_ahead says so; any other catches up first
** (catch_up: again, when not NULL, is the primitive that runs when it resumes) */
static lmach *kcheck_again(lua_State *L, int *blk, int queue_only, lua_CFunction again,
                           sarg *a) {
  lmach *lm = krunning(L, blk);
  if (queue_only != 1 && sl_block_ahead(lm->m, *blk) &&
      !(queue_only == 2 && scalar_here(L, lm, *blk, a)) &&
      !(queue_only == 3 && sl_signal_ahead(lm->m)))
    catch_up(L, lm, *blk, again);
  prim_counted(L, lm, *blk);
  return lm;
}

/* kcheck_again of the running primitive */
static lmach *kcheck(lua_State *L, int *blk, int queue_only) {
  return kcheck_again(L, blk, queue_only, NULL, NULL);
}

/* kcheck of a primitive that reads or writes what other blocks see; self is
** the primitive (the C function Lua called), which runs again once the block
** caught up: named by the caller, it is not looked up in the call's frame
** (running_prim, a lua_getinfo, when NULL) */
lmach *lsl_kcheck(lua_State *L, int *blk, lua_CFunction self) {
  return kcheck_again(L, blk, 0, self, NULL);
}

/* kcheck of a primitive that only queues work to the block's own pipes (the
** core marks it so: sli_queue_only) */
lmach *lsl_kcheck_q(lua_State *L, int *blk) {
  lmach *lm = krunning(L, blk);           /* kcheck_again's steps that apply: no catch-up */
  prim_counted(L, lm, *blk);
  return lm;
}

/* kcheck of k:signal_op (sl_signal_ahead) */
lmach *lsl_kcheck_s(lua_State *L, int *blk) { return kcheck(L, blk, 3); }

/* lsl_kloc_of's checks in full: the location, or the argument's error */
sl_loc lsl_kloc_full(lua_State *L, lmach *lm, int i, const lview *v) {
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

/* the UB element (location and index) of a scalar access: its arguments 2
** and 3 as a (when read) or the stack holds them, checked */
static sl_loc scalar_arg(lua_State *L, lmach *lm, const sarg *a, lua_Integer *i) {
  sl_loc u;
  if (a->ahead == 1) {                    /* scalar_here found a UB view of this launch */
    *i = a->i;                            /* and an integer: lsl_kloc_of's answer is v->l */
    return a->v->l;
  }
  u = lsl_kloc_of(L, lm, 2, a->read ? a->v : lsl_toview(L, 2));
  *i = a->read && a->isint ? a->i : kint(L, 3);
  return u;
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

/* lsl_kdone of a failed call (status st): the error as it is now, before
** any event, raised once the block may go on */
LSL_COLD static int kdone_fail(lua_State *L, lmach *lm, int blk, int st) {
  sl_machine *m = lm->m;
  lua_pushstring(L, sl_machine_err(m));
  lua_pushinteger(L, st == SL_EARG && sl_machine_err_arg(m) > 0 ? sl_machine_err_arg(m) + 1
                                                                : 0);
  if (sl_must_yield(m, blk)) return lua_yieldk(L, 0, (lua_KContext)(lua_gettop(L) - 1), kraise);
  return kraise(L, LUA_OK, (lua_KContext)(lua_gettop(L) - 1));
}

/* finish a primitive: raise on error, yield when the block must wait. A
** failed call that moved the block's clock (an issue cost, a queue it
** filled) raises only once the block may go on: a kernel that catches the
** error must not run ahead of events its clock has passed (kdone_fail) */
int lsl_kdone(lua_State *L, lmach *lm, int blk, int st, int nret) {
  if (st != SL_OK && st != SL_ESKIP) return kdone_fail(L, lm, blk, st);
  if (sl_must_yield(lm->m, blk)) return lua_yield(L, nret);
  return nret;
}

/* k:ub(dtype, n): a LocalTensor in this core's UB */
static int k_ub(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  int dt = lsl_checkdtype(L, 2);
  lua_Integer n = kint(L, 3);
  int flags = lsl_checkmode(L, 4);
  sl_loc l;
  int st;
  lview *v;
  if (n <= 0) return luaL_argerror(L, 3, "size must be positive");
  push_kmach(L, lm);
  st = sl_ub_alloc(lm->m, blk, dt, (int64_t)n, flags, &l);
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  v = lsl_newview(L, -1, lm, &l, (int64_t)n);
  v->gen = sl_machine_gen(lm->m);
  lua_remove(L, -2);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* shared body of data_copy / data_copy_pad */
static int copy_prim(lua_State *L, int pad) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  sl_loc d = lsl_kloc(L, lm, 2), s = lsl_kloc(L, lm, 3);
  lua_Integer n = kint(L, 4);
  if (d.buf < 0 && s.buf < 0)            /* LocalTensor -> LocalTensor, on V */
    return lsl_kdone(L, lm, blk, sl_vec(lm->m, blk, SL_VEC_COPY, &d, &s, NULL, 0,
                                    (int64_t)n), 0);
  return lsl_kdone(L, lm, blk, sl_data_copy(lm->m, blk, &d, &s, (int64_t)n, pad), 0);
}

/* k:duplicate(dst, value, n): Duplicate, a UB tensor filled with a scalar (V) */
static int k_duplicate(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  sl_loc d = lsl_kloc(L, lm, 2);
  double v = (double)luaL_checknumber(L, 3);
  lua_Integer n = kint(L, 4);
  return lsl_kdone(L, lm, blk, sl_vec(lm->m, blk, SL_VEC_DUP, &d, &d, NULL, v, (int64_t)n), 0);
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

/* an event id at index i (none or nil: 0): one left out is told by the
** stack's top (the flags' calls leave it out), one passed is read as an
** integer first (the copies' and engines' calls pass one), and only one that
** is not an integer is asked whether it is nil: no lua_type call on the way */
static int checkid(lua_State *L, int i) {
  lua_Integer id = 0;
  if (i <= lua_gettop(L)) {
    int isint;
    id = lua_tointegerx(L, i, &isint);
    if (!isint) id = lua_isnil(L, i) ? 0 : luaL_checkinteger(L, i);
  }
  luaL_argcheck(L, id >= 0 && id < SL_NEVENT_IDS, i, "event id must be in 0..7");
  return (int)id;
}

/* k:set_flag(event [, id]) */
static int k_set_flag(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  int ev = checkevent(L, lm, 2), id = checkid(L, 3);
  return lsl_kdone(L, lm, blk, sl_set_flag(lm->m, blk, ev, id), 0);
}

/* k:wait_flag(event [, id]): a wait of a pipe queues; a wait of S runs ahead
** too: parked ahead, it resumes as a caught-up wait would (sli_flag_woken) */
static int k_wait_flag(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  int ev = checkevent(L, lm, 2), id = checkid(L, 3);
  return lsl_kdone(L, lm, blk, sl_wait_flag(lm->m, blk, ev, id), 0);
}

/* k:sync_func's wait_flag once its set_flag's yield is resumed: as if called
** now, with its arguments (what the resume passed goes) */
static int sync_func_wait(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  lua_settop(L, (int)ctx);
  return k_wait_flag(L);
}

/* k:sync_func(event [, id]): SyncFunc<HardEvent::event>, a set_flag then a
** wait_flag of one event id, in one call: the two primitives as two calls
** would issue them (the set_flag's yield resumes into the wait_flag) */
static int k_sync_func(lua_State *L) {
  int blk, st;
  lmach *lm = lsl_kcheck_q(L, &blk);
  int ev = checkevent(L, lm, 2), id = checkid(L, 3);
  st = sl_set_flag(lm->m, blk, ev, id);
  if (st != SL_OK && st != SL_ESKIP) return lsl_kdone(L, lm, blk, st, 0);   /* raises */
  if (sl_must_yield(lm->m, blk))
    return lua_yieldk(L, 0, (lua_KContext)lua_gettop(L), sync_func_wait);
  prim_counted(L, lm, blk);               /* k_wait_flag's checks passed above: as it does */
  return lsl_kdone(L, lm, blk, sl_wait_flag(lm->m, blk, ev, id), 0);
}

/* k:pipe_barrier([pipe]): "ALL" (default), "MTE2", "MTE3", "V" */
static int k_pipe_barrier(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_pipe_barrier);
  const char *name = luaL_optstring(L, 2, "ALL");
  int pipe = sl_pipe_find(name);
  if (pipe < 0 || pipe == SL_PIPE_S)
    return luaL_argerror(L, 2, "pipe must be ALL, V, MTE2 or MTE3 (PIPE_S is a "
                         "hardware error)");
  return lsl_kdone(L, lm, blk, sl_pipe_barrier(lm->m, blk, pipe), 0);
}

/* k:set_atomic(op [, dtype]): atomic add/max/min on UB->GM copies */
static int k_set_atomic(lua_State *L) {
  static const char *const ops[] = { "none", "add", "max", "min", NULL };
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_set_atomic);
  int op = luaL_checkoption(L, 2, NULL, ops);
  int dt = lua_isnoneornil(L, 3) ? -1 : lsl_checkdtype(L, 3);
  return lsl_kdone(L, lm, blk, sl_set_atomic(lm->m, blk, op, dt), 0);
}

/* k:set_atomic_none() */
static int k_set_atomic_none(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_set_atomic_none);
  return lsl_kdone(L, lm, blk, sl_set_atomic(lm->m, blk, SL_OP_NONE, -1), 0);
}

/* k:get_value(ub, i): a UB element, read on the S pipe */
static int k_get_value(lua_State *L) {
  int blk, st;
  sarg a = { NULL, 0, 0, 0, -1 };
  lmach *lm = kcheck_again(L, &blk, 2, k_get_value, &a);
  lua_Integer i;
  sl_loc u = scalar_arg(L, lm, &a, &i);
  double num = 0;
  int64_t iv = 0;
  st = sl_get_value_ahead(lm->m, blk, &u, (int64_t)i, &num, &iv, a.ahead);
  if (st != SL_OK && st != SL_ESKIP) return lsl_engine_error(L, lm->m, st, 1);
  if (sl_dtype_isfloat(u.dtype)) lua_pushnumber(L, (lua_Number)num);
  else lua_pushinteger(L, (lua_Integer)iv);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* k:set_value(ub, i, v): write a UB element on the S pipe */
static int k_set_value(lua_State *L) {
  int blk;
  sarg a = { NULL, 0, 0, 0, -1 };
  lmach *lm = kcheck_again(L, &blk, 2, k_set_value, &a);
  lua_Integer i;
  sl_loc u = scalar_arg(L, lm, &a, &i);
  int isint = lua_isinteger(L, 4);
  double num = isint ? 0 : (double)luaL_checknumber(L, 4);
  int64_t iv = isint ? (int64_t)lua_tointeger(L, 4) : 0;
  return lsl_kdone(L, lm, blk, sl_set_value_ahead(lm->m, blk, &u, (int64_t)i, num, iv, isint,
                                                  a.ahead), 0);
}

/* shared body of the binary vector ops: op is SL_OP_ADD/MAX/MIN, a positive
** code (sl_vec tells binary from one-source ops by the sign, sl.h) */
static int vec_binary(lua_State *L, int op) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  sl_loc d = lsl_kloc(L, lm, 2), a = lsl_kloc(L, lm, 3), b = lsl_kloc(L, lm, 4);
  lua_Integer n = kint(L, 5);
  return lsl_kdone(L, lm, blk, sl_vec(lm->m, blk, op, &d, &a, &b, 0, (int64_t)n), 0);
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
  lmach *lm = lsl_kcheck_q(L, &blk);
  sl_loc d = lsl_kloc(L, lm, 2), a = lsl_kloc(L, lm, 3);
  double s = (double)luaL_checknumber(L, 4);
  lua_Integer n = kint(L, 5);
  return lsl_kdone(L, lm, blk, sl_vec(lm->m, blk, SL_VEC_MULS, &d, &a, NULL, s, (int64_t)n), 0);
}

/* shared body of the one-source vector ops: op(dst, src, n); op is an
** SL_VEC_* code, zero or negative (the sign tells it from a binary op) */
static int vec_unary(lua_State *L, int op) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  sl_loc d = lsl_kloc(L, lm, 2), a = lsl_kloc(L, lm, 3);
  lua_Integer n = kint(L, 4);
  return lsl_kdone(L, lm, blk, sl_vec(lm->m, blk, op, &d, &a, NULL, 0, (int64_t)n), 0);
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
  lmach *lm = lsl_kcheck(L, &blk, k_system_cycle);
  int64_t c = sl_system_cycle(lm->m, blk);
  lua_pushinteger(L, (lua_Integer)c);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* a PE number at index i */
int lsl_checkpe(lua_State *L, lmach *lm, int i) {
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
  lmach *lm = lsl_kcheck_q(L, &blk);
  sl_loc d = lsl_kloc(L, lm, 2), s = lsl_kloc(L, lm, 3), u;
  if ((get ? d.buf : s.buf) < 0) {
    lua_Integer n = kint(L, 4);
    int pe = lsl_checkpe(L, lm, 5);
    checkid(L, 6);
    return lsl_kdone(L, lm, blk, sl_mte_ub(lm->m, blk, get, get ? &s : &d, get ? &d : &s,
                                       (int64_t)n, pe), 0);
  }
  u = lsl_kloc(L, lm, 4);
  lua_Integer ub_bytes = kint(L, 5);
  lua_Integer n = kint(L, 6);
  int pe = lsl_checkpe(L, lm, 7), id = checkid(L, 8);
  return lsl_kdone(L, lm, blk, sl_mte(lm->m, blk, get, &d, &s, &u, (int64_t)ub_bytes,
                                  (int64_t)n, pe, id), 0);
}

/* k:mte_put_nbi(dst, src, ub, ub_bytes, elems, pe, sync_id) */
static int k_mte_put_nbi(lua_State *L) { return mte_prim(L, 0); }

/* k:mte_get_nbi(dst, src, ub, ub_bytes, elems, pe, sync_id) */
static int k_mte_get_nbi(lua_State *L) { return mte_prim(L, 1); }

/* a pipelined chain's argument for each of sl_mte's (error positions) */
static const int pipe_args[8] = { 0, 1, 2, 3, 3, 4, 5, 6 };

static int pipe_cont(lua_State *L, int status, lua_KContext ctx);

/* issue the chain x (the block's, lm->run->px[blk]) one primitive at a time, each as its
** own call would be (lsl_kcheck_q: every step only queues to the block's own
** pipes, so a block ahead goes on; then lsl_kdone's yield when the block must
** wait): the block yields and goes on between them where the chunked calls did */
static int pipe_run(lua_State *L, lmach *lm, int blk, sl_pipe_xfer *x, int ctx) {
  for (;;) {
    int st = sl_mte_pipe_step(lm->m, blk, x);
    if (st == SL_EARG) sl_machine_map_err_arg(lm->m, pipe_args, 8);
    if (st != SL_OK || x->step == PX_DONE) return lsl_kdone(L, lm, blk, st, 0);
    if (sl_must_yield(lm->m, blk)) return lua_yieldk(L, 0, ctx, pipe_cont);
    lm = lsl_kcheck_q(L, &blk);
  }
}

/* a chain goes on after a yield: the next primitive is a call of its own */
static int pipe_cont(lua_State *L, int status, lua_KContext ctx) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  (void)status;
  lua_settop(L, (int)ctx);               /* what the resume passed goes */
  return pipe_run(L, lm, blk, &lm->run->px[blk], (int)ctx);
}

/* k:mte_get_pipelined / k:mte_put_pipelined(dst, src, ub, count, pe [, bufs]):
** count elements of PE pe's src to dst (get) or of src to PE pe's dst (put)
** through ub in chunks, double-buffered (bufs 2, default) or not (1): the
** chain op.get_pipelined / put_pipelined issue (sl_pipe_xfer) */
static int pipelined(lua_State *L, int get) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  lview *uv = lsl_toview(L, 4);
  sl_pipe_xfer *x;
  lua_Integer n, bufs;
  int pe;
  if (uv == NULL) luaL_typeerror(L, 4, "tensor view");
  n = kint(L, 5);
  pe = lsl_checkpe(L, lm, 6);
  bufs = luaL_optinteger(L, 7, 2);
  luaL_argcheck(L, bufs >= 1 && bufs <= SL_NEVENT_IDS, 7, "bufs must be in 1..8");
  if (uv->n < bufs)
    luaL_argerror(L, 4, lua_pushfstring(L, "UB tensor of %I elements holds no %I buffers",
                                        (lua_Integer)uv->n, bufs));
  if (lm->run == NULL) return luaL_error(L, "%s", stale_k);
  x = &lm->run->px[blk];
  memset(x, 0, sizeof(*x));
  x->dst = lsl_kloc(L, lm, 2);
  x->src = lsl_kloc(L, lm, 3);
  x->ub = lsl_kloc(L, lm, 4);
  x->count = n > 0 ? (int64_t)n : 0;
  x->half = uv->n / bufs;
  x->get = get;
  x->pe = pe;
  x->bufs = (int32_t)bufs;
  x->step = PX_WAIT;
  return pipe_run(L, lm, blk, x, lua_gettop(L));
}

/* k:mte_get_pipelined(dst, src, ub, count, pe [, bufs]) */
static int k_mte_get_pipelined(lua_State *L) { return pipelined(L, 1); }

/* k:mte_put_pipelined(dst, src, ub, count, pe [, bufs]) */
static int k_mte_put_pipelined(lua_State *L) { return pipelined(L, 0); }

/* how a call through the scratch UB ends (bits of its continuation context) */
enum { STAGE_GET = 1, STAGE_NBI = 2, STAGE_SIGNAL = 4 };

static int staged_body(lua_State *L, int how, int resumed);

/* sl_mte's argument positions as putmem/getmem/put_signal number them (the
** UB, its size and the event id are the call's own) */
static const int mte_args[8] = { 0, 1, 2, 0, 0, 3, 0, 0 };
/* and sl_signal_op's (signal, value, op, pe) as put_signal's */
static const int put_signal_args[5] = { 0, 4, 5, 6, 7 };

/* and sl_dma's (dst, src, ub, elems, pe) as putmem / getmem number theirs */
static const int engine_args[6] = { 0, 1, 2, 0, 3, 4 };

/* the engine the library's putmem / getmem take to PE pe besides MTE: SDMA,
** then UDMA, when the init named it and it reaches pe (topo_list); -1: none */
static int rma_engine(sl_machine *m, int blk, int pe) {
  int me, b;
  unsigned reach;
  sl_block_where(m, blk, &me, &b);
  reach = sl_reach(m, me, pe);
  if (reach & SL_DOP_SDMA) return SL_ENG_SDMA;
  if (reach & SL_DOP_UDMA) return SL_ENG_UDMA;
  return -1;
}

/* putmem / getmem (_nbi) over engine eng: one transfer with the scratch UB
** as its workspace, then (blocking) that engine's quiet */
static int rma_over(lua_State *L, lmach *lm, int blk, int eng, int how, const sl_loc *d,
                    const sl_loc *s, const sl_loc *u, int64_t n, int pe) {
  int st = sl_dma(lm->m, blk, eng, how & STAGE_GET, d, s, u, n, pe, -1, NULL, 0);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, engine_args, 6);
  else if (st == SL_OK && !(how & STAGE_NBI)) st = sl_dma_quiet(lm->m, blk, eng);
  return lsl_kdone(L, lm, blk, st, 0);
}

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
  int blk, st, get = how & STAGE_GET, pe, id, eng;
  lmach *lm = lsl_kcheck(L, &blk, NULL);
  sl_loc d = lsl_kloc(L, lm, 2), s = lsl_kloc(L, lm, 3), g, u;
  lua_Integer n = kint(L, 4), v = 0, op = 0;
  if (how & STAGE_SIGNAL) {
    g = lsl_kloc(L, lm, 5);
    v = kint(L, 6);
    op = kint(L, 7);
    luaL_argcheck(L, op == SL_SIGNAL_SET || op == SL_SIGNAL_ADD, 7,
                  "signal op must be SIGNAL_SET or SIGNAL_ADD");
    pe = lsl_checkpe(L, lm, 8);
  } else {
    pe = lsl_checkpe(L, lm, 5);
    if ((get ? d.buf : s.buf) < 0) {      /* the ub2gm forms: a UB dst (get) or src (put) */
      st = sl_mte_ub(lm->m, blk, get, get ? &s : &d, get ? &d : &s, (int64_t)n, pe);
      if (st == SL_OK && !(how & STAGE_NBI)) st = sl_pipe_barrier(lm->m, blk, SL_NPIPES);   /* aclshmemx_mte_quiet */
      return lsl_kdone(L, lm, blk, st, 0);
    }
  }
  if ((st = sl_ub_scratch(lm->m, blk, d.dtype, &u, &id)) != SL_OK)
    return lsl_engine_error(L, lm->m, st, 1);
  if (!resumed && sl_must_yield(lm->m, blk)) return lua_yieldk(L, 0, how, staged_cont);
  if (!(how & STAGE_SIGNAL) && (eng = rma_engine(lm->m, blk, pe)) >= 0)
    return rma_over(L, lm, blk, eng, how, &d, &s, &u, (int64_t)n, pe);
  st = sl_mte(lm->m, blk, get, &d, &s, &u, u.cap, (int64_t)n, pe, id);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, mte_args, 8);
  else if (st == SL_OK && (how & STAGE_SIGNAL)) {
    if ((st = sl_signal_op(lm->m, blk, &g, (int64_t)v, (int)op, pe, 1)) == SL_EARG)
      sl_machine_map_err_arg(lm->m, put_signal_args, 5);
  } else if (st == SL_OK && !(how & STAGE_NBI)) st = sl_pipe_barrier(lm->m, blk, SL_NPIPES);   /* aclshmemx_mte_quiet */
  return lsl_kdone(L, lm, blk, st, 0);
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
  sl_loc u = lsl_kloc(L, lm, i);
  if (u.buf >= 0) luaL_argerror(L, i, "UB tensor expected, got GM");
  if (bytes < 0) bytes = u.cap - u.off;
  if (bytes < min || bytes > u.cap - u.off)
    luaL_argerror(L, bi, lua_pushfstring(L, "the engine's UB workspace needs %d bytes at "
                  "least (the tensor holds %d)", (int)min, (int)(u.cap - u.off)));
  return u;
}

/* shared body of the engines' put_nbi / get_nbi: (dst, src, ub, [ub_bytes,]
** elems, pe [, relay_pe] [, sync_id]); SDMA's pointer form (ub_bytes, 64
** at least) is told from its tensor form by the argument count; self is
** the primitive (lsl_kcheck) */
static int dma_prim(lua_State *L, lua_CFunction self, int eng, int get, int relay) {
  int blk, st, pe, rp = -1, ptr = eng == SL_ENG_SDMA && lua_gettop(L) >= 8, a = ptr ? 5 : 4;
  lmach *lm = lsl_kcheck(L, &blk, self);
  sl_loc d = lsl_kloc(L, lm, 2), s = lsl_kloc(L, lm, 3), u;
  lua_Integer n;
  u = dma_ub(L, lm, 4, ptr ? kint(L, 5) : -1, ptr ? 5 : 4,
             eng == SL_ENG_SDMA ? 64 : 1);
  n = kint(L, a + 1);
  pe = lsl_checkpe(L, lm, a + 2);
  if (relay) rp = lsl_checkpe(L, lm, a + 3);
  if (eng == SL_ENG_SDMA) kint(L, a + 3);      /* sync_id: not optional */
  checkid(L, a + 3 + relay);
  st = sl_dma(lm->m, blk, eng, get, &d, &s, &u, (int64_t)n, pe, rp, NULL, 0);
  if (st == SL_EARG && ptr) sl_machine_map_err_arg(lm->m, sdma_ptr_args, 9);
  return lsl_kdone(L, lm, blk, st, 0);
}

/* k:sdma_reduce_nbi(dst, src, ub, elems, pe, op), k:roce_reduce_nbi(...): a put
** whose descriptor reduces as it lands (op "add" | "max" | "min": HCCL's SDMA
** inline reduce, RDMA write with reduce), timed as the put; self is the
** primitive (lsl_kcheck) */
static int reduce_prim(lua_State *L, lua_CFunction self, int eng) {
  static const char *const ops[] = { "none", "add", "max", "min", NULL };
  int blk, pe, op;
  lmach *lm = lsl_kcheck(L, &blk, self);
  sl_loc d = lsl_kloc(L, lm, 2), s = lsl_kloc(L, lm, 3), u;
  lua_Integer n;
  u = dma_ub(L, lm, 4, -1, 4, eng == SL_ENG_SDMA ? 64 : 1);
  n = kint(L, 5);
  pe = lsl_checkpe(L, lm, 6);
  op = luaL_checkoption(L, 7, NULL, ops);
  return lsl_kdone(L, lm, blk, sl_dma_reduce(lm->m, blk, eng, &d, &s, &u, (int64_t)n, pe, op), 0);
}
static int k_sdma_reduce_nbi(lua_State *L) {
  return reduce_prim(L, k_sdma_reduce_nbi, SL_ENG_SDMA);
}
static int k_roce_reduce_nbi(lua_State *L) {
  return reduce_prim(L, k_roce_reduce_nbi, SL_ENG_RDMA);
}

/* k:sdma_put_nbi(dst, src, ub, ub_bytes, elems, pe, sync_id) or (dst, src, ub, elems, pe, sync_id) */
static int k_sdma_put_nbi(lua_State *L) { return dma_prim(L, k_sdma_put_nbi, SL_ENG_SDMA, 0, 0); }
/* k:sdma_get_nbi(...): the same from PE pe's copy of a symmetric src */
static int k_sdma_get_nbi(lua_State *L) { return dma_prim(L, k_sdma_get_nbi, SL_ENG_SDMA, 1, 0); }
/* k:roce_put_nbi(dst, src, ub, elems, pe [, sync_id]): RDMA through the NICs */
static int k_roce_put_nbi(lua_State *L) { return dma_prim(L, k_roce_put_nbi, SL_ENG_RDMA, 0, 0); }
/* k:roce_get_nbi(dst, src, ub, elems, pe [, sync_id]) */
static int k_roce_get_nbi(lua_State *L) { return dma_prim(L, k_roce_get_nbi, SL_ENG_RDMA, 1, 0); }
/* k:udma_put_nbi(dst, src, ub, elems, pe [, sync_id]): Ascend950's UDMA */
static int k_udma_put_nbi(lua_State *L) { return dma_prim(L, k_udma_put_nbi, SL_ENG_UDMA, 0, 0); }
/* k:udma_get_nbi(dst, src, ub, elems, pe [, sync_id]) */
static int k_udma_get_nbi(lua_State *L) { return dma_prim(L, k_udma_get_nbi, SL_ENG_UDMA, 1, 0); }
/* k:udma_relay_put_nbi(dst, src, ub, elems, pe, relay_pe [, sync_id]) */
static int k_udma_relay_put_nbi(lua_State *L) {
  return dma_prim(L, k_udma_relay_put_nbi, SL_ENG_UDMA, 0, 1);
}
/* k:udma_relay_get_nbi(dst, src, ub, elems, pe, relay_pe [, sync_id]) */
static int k_udma_relay_get_nbi(lua_State *L) {
  return dma_prim(L, k_udma_relay_get_nbi, SL_ENG_UDMA, 1, 1);
}

/* k:udma_put_signal_nbi(dst, src, elems, sig, value, pe [, ub [, sync_id]]):
** the put, then sig on PE pe set to value, in the engine's order */
static int k_udma_put_signal_nbi(lua_State *L) {
  int blk, st, has_ub = !lua_isnoneornil(L, 8), pe;
  lmach *lm = lsl_kcheck(L, &blk, k_udma_put_signal_nbi);
  sl_loc d = lsl_kloc(L, lm, 2), s = lsl_kloc(L, lm, 3), g = lsl_kloc(L, lm, 5), u;
  lua_Integer n = kint(L, 4), v = kint(L, 6);
  pe = lsl_checkpe(L, lm, 7);
  if (has_ub) u = dma_ub(L, lm, 8, -1, 8, 1);
  checkid(L, 9);
  st = sl_dma(lm->m, blk, SL_ENG_UDMA, 0, &d, &s, has_ub ? &u : NULL, (int64_t)n, pe, -1,
              &g, (int64_t)v);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, udma_signal_args, 9);
  return lsl_kdone(L, lm, blk, st, 0);
}

/* ---- TQue: a TQueBind<VECIN, VECOUT> of depth buffers (InitBuffer(que,
** depth, len)) between MTE2 and MTE3, each method one primitive: the flags a
** kernel would set and wait itself, on the buffer's event id. As TPipe's
** InitBuffer does, a queue takes an event id of its own for each buffer (the
** lowest the block's live queues do not hold) and its buffers start on 32-byte
** boundaries; free_all_event gives the ids back */

#define TQUE_MT "shmemlab.tque"
#define TQUE_MAGIC 0x53485451u
#define TQUE_MAX 8                        /* buffers a queue holds at most */

typedef struct ltque {
  uint32_t magic;
  uint32_t gen;                           /* its launch */
  lmach *lm;
  int blk;                                /* the block that made it */
  int depth, allocs, frees;               /* buffers; AllocTensors, FreeTensors so far */
  int head, queued;                       /* en_que'd, not yet de_que'd: a ring */
  int ring[TQUE_MAX];
  int id[TQUE_MAX];                       /* each buffer's event id; -1: given back */
  const lview *buf[TQUE_MAX];             /* its buffers' views (user values 2.. keep them) */
} ltque;

/* the queue at index 1, used by the block that made it in its launch, before
** its free_all_event; when
** prim, the block's primitive counted (its flags only queue to its own pipes:
** no catch-up) */
static ltque *tque_check(lua_State *L, lmach **lmp, int prim) {
  ltque *q = (ltque *)lua_touserdata(L, 1);
  lmach *lm = lsl_here.lm;
  if (q == NULL || lua_rawlen(L, 1) != sizeof(ltque) || q->magic != TQUE_MAGIC)
    q = (ltque *)luaL_checkudata(L, 1, TQUE_MT);
  if (lm == NULL || lm != q->lm || lm->m == NULL || lm->cur_co != L || lm->cur != q->blk ||
      sl_machine_gen(lm->m) != q->gen)
    luaL_error(L, "a TQue is used by the block that made it (k:tque), in its launch");
  if (q->id[0] < 0) luaL_error(L, "a TQue is not used after its free_all_event");
  if (prim) prim_counted(L, lm, q->blk);
  *lmp = lm;
  return q;
}

/* the buffer index of the tensor at index i: one the queue handed out */
static int tque_buf(lua_State *L, const ltque *q, int i) {
  const void *t = lua_touserdata(L, i);
  int h;
  for (h = 0; h < q->depth; h++)
    if (t == (const void *)q->buf[h]) return h;
  return luaL_argerror(L, i, "not a tensor of this TQue (its alloc_tensor's)");
}

static void tque_meta(lua_State *L);

/* push buffer h's view (the queue's user value 2 + h) */
static void tque_push(lua_State *L, int h) {
  lua_getiuservalue(L, 1, 2 + h);
}

/* event ids block blk's live TQues leave free */
static int tque_free_ids(const lmach *lm, int blk) {
  unsigned held = lm->run->b[blk].qids;
  int i, n = 0;
  for (i = 0; i < SL_NEVENT_IDS; i++) n += !(held & (1u << i));
  return n;
}

/* the lowest event id free in block blk, now held (tque_free_ids said one is) */
static int tque_take_id(lmach *lm, int blk) {
  int i = 0;
  while (lm->run->b[blk].qids & (1u << i)) i++;
  lm->run->b[blk].qids |= 1u << i;
  return i;
}

/* k:tque(dtype, depth, len): the queue and its depth buffers of len elements
** in one UB allocation (each 32-byte aligned), their views made once */
static int k_tque(lua_State *L) {
  int blk, h, dt, st;
  lmach *lm = lsl_kcheck_q(L, &blk);
  lua_Integer depth, len;
  int64_t esize, pitch;
  sl_loc l;
  ltque *q;
  dt = lsl_checkdtype(L, 2);
  depth = kint(L, 3);
  len = kint(L, 4);
  luaL_argcheck(L, depth >= 1 && depth <= TQUE_MAX, 3, "depth must be in 1..8");
  luaL_argcheck(L, len >= 1 && len <= ((lua_Integer)1 << 32), 4, "size must be in 1..2^32");
  luaL_argcheck(L, tque_free_ids(lm, blk) >= depth, 3,
                "the block's live TQues hold the other event ids (8 in all)");
  esize = (int64_t)sl_dtype_size((sl_dtype)dt);
  pitch = ((int64_t)len * esize + 31) / 32 * 32;           /* InitBuffer's alignment */
  lua_settop(L, 4);
  push_kmach(L, lm);                                        /* 5 */
  st = sl_ub_alloc(lm->m, blk, dt, (int64_t)depth * pitch / esize, 0, &l);
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 2);
  q = (ltque *)lua_newuserdatauv(L, sizeof(ltque), 1 + (int)depth);   /* 6 */
  memset(q, 0, sizeof(*q));
  q->magic = TQUE_MAGIC;
  q->gen = sl_machine_gen(lm->m);
  q->lm = lm;
  q->blk = blk;
  q->depth = (int)depth;
  tque_meta(L);
  lua_setmetatable(L, 6);
  for (h = 0; h < depth; h++) {                            /* the buffers: user values 2.. */
    sl_loc lh = l;
    lview *v;
    lh.off += (int64_t)h * pitch;
    v = lsl_newview(L, 5, lm, &lh, (int64_t)len);
    v->gen = q->gen;
    q->buf[h] = v;
    q->id[h] = tque_take_id(lm, blk);
    lua_setiuservalue(L, 6, 2 + h);
  }
  lua_pushvalue(L, 5);                                      /* the machine: push_kmach */
  lua_setiuservalue(L, 6, 1);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* q:alloc_tensor(): the next buffer; from the (depth + 1)-th AllocTensor on,
** once its last FreeTensor passed (wait_flag MTE3_MTE2 on its id) */
static int q_alloc_tensor(lua_State *L) {
  lmach *lm;
  ltque *q = tque_check(L, &lm, 0);
  int h = q->allocs % q->depth, st;
  if (q->allocs < q->depth) {             /* no flag: not a primitive */
    q->allocs++;
    tque_push(L, h);
    return 1;
  }
  prim_counted(L, lm, q->blk);            /* tque_check's counting (its checks passed above) */
  st = sl_wait_flag(lm->m, q->blk, SL_EV_MTE3_MTE2, q->id[h]);
  if (st == SL_OK || st == SL_ESKIP) {
    q->allocs++;
    tque_push(L, h);
  }
  return lsl_kdone(L, lm, q->blk, st, 1);
}

/* q:en_que(t): EnQue, t from MTE2 to MTE3 (set_flag MTE2_MTE3 on its id) */
static int q_en_que(lua_State *L) {
  lmach *lm;
  ltque *q = tque_check(L, &lm, 1);
  int h = tque_buf(L, q, 2), st;
  if (q->queued >= q->depth) return luaL_error(L, "EnQue of a full TQue (depth %d)", q->depth);
  st = sl_set_flag(lm->m, q->blk, SL_EV_MTE2_MTE3, q->id[h]);
  if (st == SL_OK || st == SL_ESKIP) q->ring[(q->head + q->queued++) % q->depth] = h;
  return lsl_kdone(L, lm, q->blk, st, 0);
}

/* q:de_que(): DeQue, the tensor en_que'd first, once MTE2 is done with it
** (wait_flag MTE2_MTE3 on its id) */
static int q_de_que(lua_State *L) {
  lmach *lm;
  ltque *q = tque_check(L, &lm, 1);
  int h, st;
  if (q->queued == 0) return luaL_error(L, "DeQue of an empty TQue");
  h = q->ring[q->head];
  st = sl_wait_flag(lm->m, q->blk, SL_EV_MTE2_MTE3, q->id[h]);
  if (st == SL_OK || st == SL_ESKIP) {
    q->head = (q->head + 1) % q->depth;
    q->queued--;
    tque_push(L, h);
  }
  return lsl_kdone(L, lm, q->blk, st, 1);
}

/* q:free_tensor(t): FreeTensor, t back to the queue once MTE3 is done with it
** (set_flag MTE3_MTE2 on its id) */
static int q_free_tensor(lua_State *L) {
  lmach *lm;
  ltque *q = tque_check(L, &lm, 1);
  int h = tque_buf(L, q, 2), st = sl_set_flag(lm->m, q->blk, SL_EV_MTE3_MTE2, q->id[h]);
  if (st == SL_OK || st == SL_ESKIP) q->frees++;
  return lsl_kdone(L, lm, q->blk, st, 0);
}

/* the queue's ids given back to its block; the queue starts over, empty */
static void tque_reset(ltque *q) {
  int h;
  for (h = 0; h < q->depth; h++)
    if (q->id[h] >= 0) {
      q->lm->run->b[q->blk].qids &= ~(1u << q->id[h]);
      q->id[h] = -1;
    }
  q->allocs = q->frees = q->head = q->queued = 0;
}

/* q:free_all_event() from its ctx-th wait on: the waits (wait_flag MTE3_MTE2)
** for the FreeTensors no AllocTensor waited for, the newest first, each a
** primitive (a yield between two resumes here); then its ids go back */
static int q_free_all_from(lua_State *L, int status, lua_KContext ctx) {
  lmach *lm;
  ltque *q = tque_check(L, &lm, 0);
  int i, n = q->allocs < q->depth ? q->allocs : q->depth, st = SL_OK;
  (void)status;
  lua_settop(L, 1);
  for (i = (int)ctx; i < n; i++) {
    tque_check(L, &lm, 1);
    st = sl_wait_flag(lm->m, q->blk, SL_EV_MTE3_MTE2, q->id[(q->allocs - 1 - i) % q->depth]);
    if (st != SL_OK && st != SL_ESKIP) return lsl_kdone(L, lm, q->blk, st, 0);   /* raises */
    if (i + 1 < n && sl_must_yield(lm->m, q->blk))
      return lua_yieldk(L, 0, i + 1, q_free_all_from);
  }
  tque_reset(q);
  return n > 0 ? lsl_kdone(L, lm, q->blk, st, 0) : 0;
}

/* q:free_all_event(): FreeAllEvent, the queue's end: every tensor freed and
** none queued, else an error naming what is left (see q_free_all_from) */
static int q_free_all_event(lua_State *L) {
  lmach *lm;
  ltque *q = tque_check(L, &lm, 0);
  if (q->allocs != q->frees || q->queued > 0)
    return luaL_error(L, "FreeAllEvent of a TQue with %d tensor(s) not freed (%d queued)",
                      q->allocs - q->frees, q->queued);
  return q_free_all_from(L, LUA_OK, 0);
}

/* a TQue's methods (its metatable's __index: a table, so a call looks a
** method up without a metamethod) */
static const luaL_Reg tque_methods[] = {
  {"alloc_tensor", q_alloc_tensor}, {"en_que", q_en_que}, {"de_que", q_de_que},
  {"free_tensor", q_free_tensor}, {"free_all_event", q_free_all_event}, {NULL, NULL}
};

/* push the TQues' metatable (made the first time) */
static void tque_meta(lua_State *L) {
  if (luaL_newmetatable(L, TQUE_MT)) {
    luaL_newlib(L, tque_methods);
    lua_setfield(L, -2, "__index");
  }
}

/* push the TQues' methods (core.tque_methods: a kernel's row loop calls them
** as locals, as deepep.sync is k:sync_func) */
void lsl_push_tque_methods(lua_State *L) {
  tque_meta(L);
  lua_getfield(L, -1, "__index");
  lua_remove(L, -2);
}

/* k:sdma_quiet(ub [, ub_bytes], sync_id): the block's SDMA transfers landed */
static int k_sdma_quiet(lua_State *L) {
  int blk, ptr = lua_gettop(L) >= 4;
  lmach *lm = lsl_kcheck(L, &blk, k_sdma_quiet);
  dma_ub(L, lm, 2, ptr ? kint(L, 3) : -1, ptr ? 3 : 2, 64);
  kint(L, ptr ? 4 : 3);
  checkid(L, ptr ? 4 : 3);
  return lsl_kdone(L, lm, blk, sl_dma_quiet(lm->m, blk, SL_ENG_SDMA), 0);
}

/* k:roce_quiet(pe, ub, sync_id): the block's RDMA transfers landed */
static int k_roce_quiet(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_roce_quiet);
  lsl_checkpe(L, lm, 2);
  dma_ub(L, lm, 3, -1, 3, 1);
  checkid(L, 4);
  return lsl_kdone(L, lm, blk, sl_dma_quiet(lm->m, blk, SL_ENG_RDMA), 0);
}

/* k:udma_quiet(pe): the block's UDMA transfers landed */
static int k_udma_quiet(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_udma_quiet);
  lsl_checkpe(L, lm, 2);
  return lsl_kdone(L, lm, blk, sl_dma_quiet(lm->m, blk, SL_ENG_UDMA), 0);
}

/* the kernel primitives of this file (upvalue: event name -> number) */
const luaL_Reg lsl_kernel_methods[] = {
  {"ub", k_ub}, {"data_copy", k_data_copy}, {"duplicate", k_duplicate},
  {"data_copy_pad", k_data_copy_pad}, {"set_flag", k_set_flag}, {"wait_flag", k_wait_flag},
  {"sync_func", k_sync_func}, {"tque", k_tque},
  {"pipe_barrier", k_pipe_barrier}, {"set_atomic", k_set_atomic},
  {"set_atomic_none", k_set_atomic_none}, {"get_value", k_get_value},
  {"set_value", k_set_value}, {"add", k_add}, {"max", k_max}, {"min", k_min},
  {"muls", k_muls}, {"cast", k_cast}, {"abs", k_abs}, {"reduce_max", k_reduce_max},
  {"system_cycle", k_system_cycle},
  {"mte_put_nbi", k_mte_put_nbi}, {"mte_get_nbi", k_mte_get_nbi},
  {"mte_put_pipelined", k_mte_put_pipelined}, {"mte_get_pipelined", k_mte_get_pipelined},
  {"putmem", k_putmem}, {"getmem", k_getmem}, {"put", k_putmem}, {"get", k_getmem},
  {"putmem_nbi", k_putmem_nbi}, {"getmem_nbi", k_getmem_nbi},
  {"put_nbi", k_putmem_nbi}, {"get_nbi", k_getmem_nbi},
  {"put_signal", k_put_signal}, {"put_signal_nbi", k_put_signal},
  {"sdma_put_nbi", k_sdma_put_nbi}, {"sdma_get_nbi", k_sdma_get_nbi},
  {"sdma_quiet", k_sdma_quiet}, {"roce_put_nbi", k_roce_put_nbi},
  {"roce_get_nbi", k_roce_get_nbi}, {"roce_quiet", k_roce_quiet},
  {"sdma_reduce_nbi", k_sdma_reduce_nbi}, {"roce_reduce_nbi", k_roce_reduce_nbi},
  {"udma_put_nbi", k_udma_put_nbi}, {"udma_get_nbi", k_udma_get_nbi},
  {"udma_relay_put_nbi", k_udma_relay_put_nbi}, {"udma_relay_get_nbi", k_udma_relay_get_nbi},
  {"udma_put_signal_nbi", k_udma_put_signal_nbi}, {"udma_quiet", k_udma_quiet},
  {NULL, NULL}
};
