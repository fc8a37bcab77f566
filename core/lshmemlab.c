/*
** lshmemlab.c -- the Lua binding's module, shmemlab.core: the typed argument
** checks every part uses, dtype queries, the references for bench/ and
** luaopen_shmemlab_core, which puts the parts' method tables together.
*/
#include "lshmemlab.h"

/* the machine at index i, not closed */
lmach *lsl_checkmach(lua_State *L, int i) {
  lmach *lm = (lmach *)luaL_checkudata(L, i, MACHINE_MT);
  if (lm->m == NULL) luaL_argerror(L, i, "machine is closed");
  return lm;
}

/* the dtype lsl_checkdtype found last: only a hint, tried first and checked
** by one strcmp (sl_dtype_find's scan of the table is ~160 instructions for
** "int32", and a kernel names one dtype in k:ub and its views again and
** again); relaxed, as any thread's value is as good a guess */
static _Atomic int dtype_hint;

/* a dtype name at index i (an unknown one names every dtype of the table) */
int lsl_checkdtype(lua_State *L, int i) {
  const char *name = luaL_checkstring(L, i);
  int t = atomic_load_explicit(&dtype_hint, memory_order_relaxed);
  if (strcmp(name, sl_dtype_name((sl_dtype)t)) == 0) return t;
  t = sl_dtype_find(name);
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
  atomic_store_explicit(&dtype_hint, t, memory_order_relaxed);
  return t;
}

/* a view at index i, its machine open or not */
lview *lsl_checkanyview(lua_State *L, int i) {
  lview *v = lsl_toview(L, i);
  return v != NULL ? v : (lview *)luaL_checkudata(L, i, VIEW_MT);
}

/* a view at index i */
lview *lsl_checkview(lua_State *L, int i) {
  lview *v = lsl_checkanyview(L, i);
  if (v->lm->m == NULL) luaL_argerror(L, i, "machine is closed");
  return v;
}

/* the allocation mode at index i: nil, or "backed" (bytes in a timing-only run) */
int lsl_checkmode(lua_State *L, int i) {
  static const char *const modes[] = { "backed", NULL };
  if (lua_isnoneornil(L, i)) return 0;
  luaL_checkoption(L, i, NULL, modes);
  return SL_ALLOC_BACKED;
}

/* raise the engine's last error as a Lua error (arg errors Lua-style) */
int lsl_engine_error(lua_State *L, sl_machine *m, int st, int argbase) {
  if (st == SL_ESKIP) return 0;         /* checked run: reported and skipped */
  if (st == SL_EARG && sl_machine_err_arg(m) > 0)
    return luaL_argerror(L, sl_machine_err_arg(m) + argbase, sl_machine_err(m));
  return luaL_error(L, "%s", sl_machine_err(m));
}

/* push a new root view, which keeps the sub-views made from it (user value
** 2: their table; 3: the one made last, see v:sub; sub-views are made by
** v:sub) */
lview *lsl_newview(lua_State *L, int machine_idx, lmach *lm, const sl_loc *l, int64_t n) {
  lview *v = (lview *)lua_newuserdatauv(L, sizeof(lview), 3);
  v->subs = 1;
  v->last_key = LAST_NONE;
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

/* core.dtype_size(name): bytes of one element */
static int l_dtype_size(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)sl_dtype_size(lsl_checkdtype(L, 1)));
  return 1;
}

/* core.dtype_cann(name): the library's name of a dtype in its typed calls */
static int l_dtype_cann(lua_State *L) {
  lua_pushstring(L, sl_dtype_cann(lsl_checkdtype(L, 1)));
  return 1;
}
/* ------------------------------------------------------------------ */
/* references for bench/ (the same bytes, without the engine)          */
/* ------------------------------------------------------------------ */

/* core.bench_memcpy(dst, src): plain memcpy of two host-side windows */
static int b_memcpy(lua_State *L) {
  lview *d = lsl_checkview(L, 1), *s = lsl_checkview(L, 2);
  int64_t bytes = d->n * lsl_esize(d);
  luaL_argcheck(L, s->n * lsl_esize(s) == bytes, 2, "size mismatch");
  (void)lsl_view_ptr(L, d, d->l.pe < 0 ? 0 : d->l.pe, d->n, 0);   /* refuses no bytes */
  memcpy(lsl_view_ptr(L, d, d->l.pe < 0 ? 0 : d->l.pe, d->n, 1),   /* a write: marked */
         lsl_view_ptr(L, s, s->l.pe < 0 ? 0 : s->l.pe, s->n, 0), (size_t)bytes);
  return 0;
}

/* core.bench_yardstick(dst, src): dst[i] += src[i] by the vectorised
** yardstick loop (int32, fp32, fp16, bf16 windows of one size) */
static int b_yardstick(lua_State *L) {
  lview *d = lsl_checkview(L, 1), *s = lsl_checkview(L, 2);
  int dt = d->l.dtype;
  luaL_argcheck(L, (dt == SL_INT32 || dt == SL_FP32 || dt == SL_FP16 || dt == SL_BF16) &&
                s->l.dtype == dt && d->n == s->n, 2,
                "two int32, fp32, fp16 or bf16 windows of one dtype and size expected");
  (void)lsl_view_ptr(L, d, d->l.pe < 0 ? 0 : d->l.pe, d->n, 0);   /* refuses no bytes */
  sl_yardstick_add((sl_dtype)dt, lsl_view_ptr(L, d, d->l.pe < 0 ? 0 : d->l.pe, d->n, 1),
                   lsl_view_ptr(L, s, s->l.pe < 0 ? 0 : s->l.pe, s->n, 0), (size_t)d->n);
  return 0;
}

/* ------------------------------------------------------------------ */
/* module                                                              */
/* ------------------------------------------------------------------ */

/* the machine's methods, from the files that define them */
static const luaL_Reg *const machine_parts[] = {
  lsl_machine_methods, lsl_launch_methods, lsl_report_methods, lsl_team_methods, NULL
};

/* the primitives of a block's k, from the files that define them */
static const luaL_Reg *const block_parts[] = { lsl_kernel_methods, lsl_sync_methods,
                                                lsl_scalar_methods, NULL };

/* push a table of every hard event's name -> its number */
static void push_events(lua_State *L) {
  int i;
  lua_createtable(L, 0, SL_NEVENTS);
  for (i = 0; i < SL_NEVENTS; i++) {
    lua_pushinteger(L, i);
    lua_setfield(L, -2, sl_event_name(i));
  }
}

/* make the metatables of machines, views and blocks (each with its methods,
** from the parts that define them) and the watchdog's sentinel */
static void open_metatables(lua_State *L) {
  int i;
  luaL_newmetatable(L, MACHINE_MT);
  luaL_setfuncs(L, lsl_machine_meta, 0);
  lua_newtable(L);
  for (i = 0; machine_parts[i] != NULL; i++) luaL_setfuncs(L, machine_parts[i], 0);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "methods");
  lua_pop(L, 1);

  lsl_open_view(L);

  luaL_newmetatable(L, BLOCK_MT);
  lua_pushcfunction(L, lsl_k_newindex);    /* a key added to k: it is not kept */
  lua_setfield(L, -2, "__newindex");
  push_events(L);                          /* the primitives' upvalue: name -> number */
  lua_newtable(L);
  for (i = 0; block_parts[i] != NULL; i++) {
    lua_pushvalue(L, -2);
    luaL_setfuncs(L, block_parts[i], 1);
  }
  lua_remove(L, -2);
  lsl_p2p_register(L);
  lsl_amo_register(L);
  luaL_getmetatable(L, MACHINE_MT);
  lua_getfield(L, -1, "methods");
  lsl_team_register(L, lua_absindex(L, -1), lua_absindex(L, -3));
  lua_pop(L, 2);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "methods");
  lua_pop(L, 1);

  if (luaL_newmetatable(L, "shmemlab.watchdog")) {  /* stops the thread at lua_close */
    lua_pushcfunction(L, lsl_wd_shutdown);
    lua_setfield(L, -2, "__gc");
    lua_newuserdatauv(L, 1, 0);
    lua_pushvalue(L, -2);
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "shmemlab.watchdog.sentinel");
  }
  lua_pop(L, 1);
}

/* set the module's functions and method tables (on the table on top) */
static void open_functions(lua_State *L) {
  int i;
  lua_pushcfunction(L, lsl_new); lua_setfield(L, -2, "new");
  lua_pushcfunction(L, l_dtype_size); lua_setfield(L, -2, "dtype_size");
  lua_pushcfunction(L, l_dtype_cann); lua_setfield(L, -2, "dtype_cann");
  lua_pushcfunction(L, lsl_route_uniform); lua_setfield(L, -2, "route_uniform");
  lua_pushcfunction(L, lsl_route_count); lua_setfield(L, -2, "route_count");
  lua_pushcfunction(L, b_memcpy); lua_setfield(L, -2, "bench_memcpy");
  lua_pushcfunction(L, b_yardstick); lua_setfield(L, -2, "bench_yardstick");
  luaL_getmetatable(L, MACHINE_MT); lua_getfield(L, -1, "methods");
  lua_setfield(L, -3, "machine_methods"); lua_pop(L, 1);
  luaL_getmetatable(L, VIEW_MT); lua_getfield(L, -1, "methods");
  lua_setfield(L, -3, "view_methods"); lua_pop(L, 1);
  luaL_getmetatable(L, BLOCK_MT); lua_getfield(L, -1, "methods");
  lua_setfield(L, -3, "block_methods"); lua_pop(L, 1);
  lsl_push_tque_methods(L); lua_setfield(L, -2, "tque_methods");
  lua_createtable(L, SL_NEVENTS, 0);
  for (i = 0; i < SL_NEVENTS; i++) {
    lua_pushstring(L, sl_event_name(i));
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "events");
  push_events(L);
  lua_setfield(L, -2, "EVENT");
}

/* open the module */
/* the Lua state's allocator, wrapped so that the C library's heap it grows
** is advised into huge pages (sl_heap_huge), asked every HUGE_EVERY growths:
** the heap grows by 32 MiB at a time, and what that many allocations touch
** of a new part before it is advised stays in 4 KiB pages */
#define HUGE_EVERY 64
static lua_Alloc base_alloc;
static void *base_ud;
static unsigned huge_calls;

/* small blocks the state freed, kept by their exact size (a multiple of 8
** up to KEPT_MAX bytes, at most KEPT_N of each: about 4 MiB at worst) for
** its next allocation of that size. Launches make and drop many objects of
** one size (k:ub's views, the task rows, result tables): the collector
** frees hundreds of them in one sweep, more than the C library's
** per-thread cache of a size holds (7), so the rest went through its slow
** path (_int_malloc, _int_free, unlink_chunk: 13% of a 16-block launch's
** CPU in perf, 1% with this). A kept block is the one a free of that size
** gave back, so it holds the size asked for */
#define KEPT_MAX 256
#define KEPT_N 1024
static void *kept[KEPT_MAX / 8][KEPT_N];
static int nkept[KEPT_MAX / 8];

/* the allocator: a kept block for a small new object, a small freed one
** kept (else the base allocator), the heap advised as it grows */
static void *huge_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  void *p;
  if (ptr == NULL && nsize - 1 < KEPT_MAX && nsize % 8 == 0 && nkept[nsize / 8 - 1] > 0)
    return kept[nsize / 8 - 1][--nkept[nsize / 8 - 1]];
  if (nsize == 0 && ptr != NULL && osize - 1 < KEPT_MAX && osize % 8 == 0 &&
      nkept[osize / 8 - 1] < KEPT_N) {
    kept[osize / 8 - 1][nkept[osize / 8 - 1]++] = ptr;
    return NULL;
  }
  p = base_alloc(ud, ptr, osize, nsize);
  if ((ptr == NULL || nsize > osize) && ++huge_calls % HUGE_EVERY == 0) sl_heap_huge();
  if (nsize >= SL_HEAP_BLOCK && nsize > osize) sl_heap_block(p, nsize);
  return p;
}

/* give the kept blocks back to the base allocator */
static void kept_free(void) {
  size_t c;
  for (c = 0; c < KEPT_MAX / 8; c++)
    while (nkept[c] > 0) base_alloc(base_ud, kept[c][--nkept[c]], (c + 1) * 8, 0);
}

/* the state closes: its allocator again before the C library of this
** module is unloaded (the package library's finalizer, which runs after this
** one: it was set first) */
static int huge_alloc_gc(lua_State *L) {
  if (base_alloc != NULL && lua_getallocf(L, NULL) == huge_alloc) {
    lua_setallocf(L, base_alloc, base_ud);
    kept_free();
  }
  base_alloc = NULL;
  return 0;
}

/* wrap the allocator of the first state that opens the module */
static void huge_alloc_open(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f == huge_alloc || base_alloc != NULL) return;
  base_alloc = f;
  base_ud = ud;
  lua_newuserdatauv(L, 1, 0);
  lua_newtable(L);
  lua_pushcfunction(L, huge_alloc_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "shmemlab.huge_alloc");
  lua_setallocf(L, huge_alloc, ud);
  sl_heap_huge();
}

int luaopen_shmemlab_core(lua_State *L);
int luaopen_shmemlab_core(lua_State *L) {
  int i;
  huge_alloc_open(L);
  open_metatables(L);
  lua_newtable(L);
  open_functions(L);
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
