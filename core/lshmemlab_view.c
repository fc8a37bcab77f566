/*
** lshmemlab_view.c -- views, typed windows on memory as the host sees them:
** sub-views, fill, read, compare, copy, fields.
*/
#include "lshmemlab.h"

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
uint8_t *lsl_view_ptr(lua_State *L, lview *v, int pe, int64_t elems, int write) {
  sl_loc l = v->l;
  uint8_t *p;
  if (l.buf < 0) luaL_error(L, "UB is not reachable from the host");
  if (sl_running(v->lm->m) && v->lm->cur >= 0)
    luaL_error(L, "host-side access inside a kernel: use the block's primitives");
  l.pe = pe;
  if (sl_host_ptr(v->lm->m, &l, sl_nbytes(elems, lsl_esize(v)), write, &p) != SL_OK)
    luaL_error(L, "%s", sl_machine_err(v->lm->m));
  if (write && p != NULL) sl_mark_init(v->lm->m, &l, elems * lsl_esize(v));
  return p;
}

/* the key of the sub-view (off, n) in its root's table: off and n in one
** integer when n < 2^23 (off < 2^40, so the product stays below 2^63), else
** -1 - off (its n then checked) */
static lua_Integer sub_key(lua_Integer off, lua_Integer n) {
  if (n < ((lua_Integer)1 << 23)) return off * ((lua_Integer)1 << 23) + n;
  return -1 - off;
}

/* the table of sub-views of the root view at (absolute) index i (its user
** value 2, made when first needed), pushed */
static void push_subs(lua_State *L, int i) {
  if (lua_getiuservalue(L, i, 2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 4);
    luaL_setmetatable(L, SUBS_MT);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, i, 2);
  }
}

/* the view at the top, just made in the table of sub-views of the root at
** index ri under key (a sub-view's key of n < 2^23, or the root's own
** reinterpretation's: either names the view), also held by that root in user
** value 3 when it is of UB: a UB root (a TQue buffer, a UB tensor, its
** reinterpretation) is asked for the same window row after row, which then
** costs no table look-up; a GM root's windows mostly move with the row */
static void keep_last(lua_State *L, int ri, lview *root, lua_Integer key) {
  if (root->l.buf >= 0) return;
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, ri, 3);
  root->last_key = key;
}

/* push a new sub-view of the root at index ri: the window of n elements off
** elements into v (the view v:sub was called on); its one user value is the
** root (which keeps the machine alive), its metatable the root's */
static void new_sub(lua_State *L, int ri, const lview *v, int64_t off, int64_t n) {
  lview *nv = (lview *)lua_newuserdatauv(L, sizeof(lview), 1);
  nv->magic = VIEW_MAGIC;
  nv->gen = v->gen;
  nv->lm = v->lm;
  nv->l = v->l;
  nv->l.off += off * lsl_esize(v);
  nv->n = n;
  nv->host = v->host;
  nv->subs = 0;
  nv->last_key = LAST_NONE;
  lua_getmetatable(L, ri);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, ri);
  lua_setiuservalue(L, -2, 1);
}

/* v:sub(offset [, n]): a window offset elements further. A root view (a
** buffer, a UB tensor, v:on, k:ptr, v:reinterpret) keeps every sub-view made from
** it or from its sub-views, directly or not, in a table of weak values (user
** value 2; a sub-view's user value 1 is its root): a window asked for again
** (every PE's blocks take the same windows of a buffer, a loop the same UB
** halves, a chunk loop the same chunks of a sub-view) is the same view, made
** once while it lives; a root of UB holds the one it made last (keep_last).
** Views never change, and a kept one has the fields a fresh one would have,
** so which of the two a call gets cannot be told */
static int v_sub(lua_State *L) {
  lview *v = lsl_toview(L, 1), *root;
  lua_Integer off, n, at, key;
  int isint, t, ri = 1, mi = 0;           /* ri: the root's index; mi: the machine's */
  if (v == NULL || v->lm->m == NULL) v = lsl_checkview(L, 1);   /* raises */
  root = v;
  off = lua_tointegerx(L, 2, &isint);     /* integers read without luaL's extra calls */
  if (!isint) off = luaL_checkinteger(L, 2);
  luaL_argcheck(L, off >= 0, 2, "offset must be >= 0");
  luaL_argcheck(L, off <= ((lua_Integer)1 << 40), 2, "offset must be at most 2^40");
  n = lua_tointegerx(L, 3, &isint);
  if (!isint) n = luaL_optinteger(L, 3, off <= v->n ? v->n - off : 0);
  luaL_argcheck(L, n >= 0 && n <= ((lua_Integer)1 << 40), 3, "size must be in 0..2^40");
  if (off == 0 && n == v->n) {            /* the same window: the view itself */
    lua_settop(L, 1);
    return 1;
  }
  at = off;                               /* the arguments stay: what is pushed returns */
  if (!v->subs) {                         /* a sub-view: the window in its root, which */
    if (lua_getiuservalue(L, 1, 1) != LUA_TUSERDATA)   /* takes the offset's place (v */
      return luaL_error(L, "sub-view without its root");   /* stays: its fields are read) */
    lua_replace(L, 2);
    ri = 2;
    root = (lview *)lua_touserdata(L, 2);
    at = off + (v->l.off - root->l.off) / lsl_esize(v);
    if (at == 0 && n == root->n) {
      lua_settop(L, 2);
      return 1;
    }
  }
  if (at >= ((lua_Integer)1 << 40)) {     /* past the packed key: made, not kept */
    new_sub(L, ri, v, off, n);
    return 1;
  }
  key = sub_key(at, n);                   /* a key of n < 2^23 names n, else it is checked */
  if (key == root->last_key) {            /* a UB root's last window */
    lua_getiuservalue(L, ri, 3);
    return 1;
  }
  push_subs(L, ri);
  if (lua_rawgeti(L, -1, key) == LUA_TUSERDATA &&
      (key >= 0 || ((lview *)lua_touserdata(L, -1))->n == n))
    return 1;
  lua_pop(L, 1);
  t = lua_gettop(L);
  if (root->l.pe < 0 && root->l.buf >= 0 && !root->host) {   /* every PE's window: */
    lua_getiuservalue(L, ri, 1);          /* the launch keeps it (the machine's table) */
    mi = t + 1;
  }
  new_sub(L, ri, v, off, n);
  lua_pushvalue(L, -1);
  lua_rawseti(L, t, key);
  if (mi > 0) lsl_launch_keep(L, v->lm, mi);
  else if (key >= 0) keep_last(L, ri, root, key);
  return 1;
}

/* push the view of v (at index i, of a buffer with a copy per PE) on PE pe, a
** root view of its own: the one a root v keeps for pe in its table of
** sub-views (weakly, under a key below every window's: -2^41 - pe), made when
** it has none; a sub-view's is made each time */
void lsl_push_pe_view(lua_State *L, int i, lview *v, int pe) {
  lua_Integer key = -((lua_Integer)1 << 41) - pe;
  lview *nv;
  i = lua_absindex(L, i);
  if (v->subs) {
    push_subs(L, i);
    if (lua_rawgeti(L, -1, key) == LUA_TUSERDATA) {
      lua_remove(L, -2);
      return;
    }
    lua_pop(L, 1);
    lua_getiuservalue(L, i, 1);           /* the machine */
  } else {                                /* a sub-view: its root's machine */
    lua_getiuservalue(L, i, 1);
    lua_getiuservalue(L, -1, 1);
    lua_remove(L, -2);
  }
  nv = lsl_newview(L, -1, v->lm, &v->l, v->n);
  nv->l.pe = (int32_t)pe;
  lua_remove(L, -2);                      /* the machine */
  if (v->subs) {
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, key);
    lua_remove(L, -2);                    /* the table */
  }
}

/* v:on(pe): the copy of a buffer on one PE (host side) */
static int v_on(lua_State *L) {
  lview *v = lsl_checkview(L, 1);
  lua_Integer pe = luaL_checkinteger(L, 2);
  int n = sl_machine_params(v->lm->m)->n_pes;
  luaL_argcheck(L, pe >= 0 && pe < n, 2, "PE out of range");
  if (v->l.buf < 0) return luaL_argerror(L, 1, "UB has no per-PE copies");
  if (sl_getbuf(v->lm->m, v->l.buf)->space == SL_SPACE_HOST)
    return luaL_argerror(L, 1, "a host buffer has one copy, not one per PE");
  lsl_push_pe_view(L, 1, v, (int)pe);
  return 1;
}

/* v:fill(pattern [, a [, b]]): pattern "const" "iota" "iota_pe" "pe"
** "random", a table of values, or a string of raw bytes; on every PE */
static int v_fill(lua_State *L) {
  lview *v = lsl_checkview(L, 1);
  int first, npes = view_pes(L, v, &first), pe;
  int64_t n = v->n, es = lsl_esize(v);
  if (lua_type(L, 2) == LUA_TSTRING && strcmp(lua_tostring(L, 2), "bytes") == 0) {
    size_t len;
    const char *s = luaL_checklstring(L, 3, &len);
    if ((int64_t)len % es != 0)
      return luaL_argerror(L, 2, lua_pushfstring(L, "%d bytes are not whole %s elements",
                           (int)len, sl_dtype_name(v->l.dtype)));
    if ((int64_t)len > n * es) return luaL_argerror(L, 2, "string longer than the view");
    for (pe = first; pe < first + npes; pe++) {
      uint8_t *p = lsl_view_ptr(L, v, pe, (int64_t)len / es, 1);
      if (p != NULL) memcpy(p, s, len);
    }
    lua_settop(L, 1);
    return 1;
  }
  if (lua_istable(L, 2)) {
    lua_Integer len = luaL_len(L, 2), i;
    if (len > n) return luaL_argerror(L, 2, "table longer than the view");
    for (pe = first; pe < first + npes; pe++) {
      uint8_t *p = lsl_view_ptr(L, v, pe, len, 1);
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
      uint8_t *p = lsl_view_ptr(L, v, pe, n, 1);
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
  lview *v = lsl_checkview(L, 1);
  lua_Integer i = luaL_optinteger(L, 2, 0);
  int single = lua_isnoneornil(L, 3);
  lua_Integer n = luaL_optinteger(L, 3, 1), k;
  int pe = read_pe(L, v);
  const uint8_t *p;
  luaL_argcheck(L, i >= 0, 2, "index must be >= 0");
  luaL_argcheck(L, n >= 0 && n <= 100000000, 3, "count out of range");
  if (i > v->n || n > v->n - i) return luaL_argerror(L, single ? 2 : 3,
      lua_pushfstring(L, "reads past the view (%d elements)", (int)v->n));
  p = lsl_view_ptr(L, v, pe, i + n, 0) + i * lsl_esize(v);
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
  lview *v = lsl_checkview(L, 1);
  int pe = read_pe(L, v);
  lua_pushlstring(L, (const char *)lsl_view_ptr(L, v, pe, v->n, 0), (size_t)(v->n * lsl_esize(v)));
  return 1;
}

/* v:checksum(): digest of the window on every PE (hex string) */
static int v_checksum(lua_State *L) {
  lview *v = lsl_checkview(L, 1);
  int first, npes = view_pes(L, v, &first), pe;
  uint64_t h = (uint64_t)v->l.dtype + 1;
  char out[17];
  for (pe = first; pe < first + npes; pe++)
    h = sl_checksum(lsl_view_ptr(L, v, pe, v->n, 0), (size_t)(v->n * lsl_esize(v)), h);
  snprintf(out, sizeof(out), "%016llx", (unsigned long long)h);
  lua_pushstring(L, out);
  return 1;
}

/* v:compare(expected): wrong count, then first index, PE, expected, actual */
static int v_compare(lua_State *L) {
  lview *v = lsl_checkview(L, 1), *e = lsl_checkview(L, 2);
  int first, npes = view_pes(L, v, &first), efirst, enpes = view_pes(L, e, &efirst), k;
  size_t wrong = 0;
  if (e->l.dtype != v->l.dtype) return luaL_argerror(L, 2, "dtype mismatch");
  if (e->n != v->n) return luaL_argerror(L, 2, "size mismatch");
  if (enpes != npes && enpes != 1)
    return luaL_argerror(L, 2, "expected covers another set of PEs");
  for (k = 0; k < npes; k++) {
    const uint8_t *a = lsl_view_ptr(L, v, first + k, v->n, 0);
    const uint8_t *x = lsl_view_ptr(L, e, enpes == 1 ? efirst : efirst + k, e->n, 0);
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
  lview *d = lsl_checkview(L, 1), *s = lsl_checkview(L, 2);
  int op = luaL_checkoption(L, 3, "none", ops);
  int first, npes = view_pes(L, d, &first), sfirst, snpes = view_pes(L, s, &sfirst), k;
  if (d->l.dtype != s->l.dtype) return luaL_argerror(L, 2, "dtype mismatch");
  if (d->n != s->n) return luaL_argerror(L, 2, "size mismatch");
  if (snpes != npes && snpes != 1) return luaL_argerror(L, 2, "PE sets differ");
  for (k = 0; k < npes; k++) {
    uint8_t *dp = lsl_view_ptr(L, d, first + k, d->n, 1);
    const uint8_t *sp = dp == NULL ? NULL : lsl_view_ptr(L, s, snpes == 1 ? sfirst : sfirst + k, s->n, 0);
    if (dp == NULL) continue;
    if (op == 0) memmove(dp, sp, (size_t)(d->n * lsl_esize(d)));
    else sl_reduce(d->l.dtype, (sl_op)op, dp, sp, (size_t)d->n);
  }
  lua_settop(L, 1);
  return 1;
}

/* the key of the reinterpreted view of the window at byte at of a root as
** dtype dt in the root's table of sub-views: below every window's and PE
** view's key (at < 2^44 bytes: an offset below 2^40 elements of at most 8
** bytes) */
static lua_Integer reinterpret_key(int64_t at, int dt) {
  return -((lua_Integer)1 << 50) - ((lua_Integer)at * 64 + dt);
}
_Static_assert(SL_NDTYPES <= 64, "reinterpret_key packs a dtype in 6 bits");

/* the dtype at index 2 of v:reinterpret on a view of machine lm: a name
** the machine saw last (lm->dt_s, by lua_tolstring's address: only a string
** has one, a number being made one in place as luaL_checkstring would; each
** name seen is kept alive in the function's upvalue, so an address names one
** string while it is there) compares no strings and looks nothing up */
static int reinterpret_dtype(lua_State *L, lmach *lm) {
  const char *s = lua_tolstring(L, 2, NULL);
  int h = (int)(((uintptr_t)s >> 4) % DT_SEEN), dt;
  if (s != NULL && lm->dt_s[h] == s) return lm->dt_n[h];
  dt = lsl_checkdtype(L, 2);              /* raises on a bad one, as before */
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    lua_pushboolean(L, 1);
    lua_rawset(L, lua_upvalueindex(1));
    lm->dt_s[h] = s;
    lm->dt_n[h] = dt;
  }
  return dt;
}

/* v:reinterpret(dtype): ReinterpretCast, the same bytes as another dtype
** (whole elements of it; the window must start on one). The view is a root
** of its own (it keeps its sub-views), kept weakly by v's root like a
** sub-view (and by a UB root as its last, keep_last): a loop that
** reinterprets the same UB row (a TQue buffer's triple, a row's scale) gets
** the same view, and its sub-views, each time */
static int v_reinterpret(lua_State *L) {
  lview *v = lsl_toview(L, 1), *root, *nv;
  int dt;
  int64_t ns, n;
  sl_loc l;
  lmach *lm;
  uint32_t gen;
  lua_Integer key;
  if (v == NULL || v->lm->m == NULL) v = lsl_checkview(L, 1);   /* raises */
  dt = reinterpret_dtype(L, v->lm);
  ns = (int64_t)sl_dtype_size((sl_dtype)dt);
  n = v->n * lsl_esize(v) / ns;
  if (v->l.off % ns != 0)
    return luaL_argerror(L, 1, "window does not start on a whole element of the new dtype");
  if (v->subs && reinterpret_key(0, dt) == v->last_key) {
    lua_getiuservalue(L, 1, 3);           /* a UB root's last: this one */
    return 1;
  }
  l = v->l;                               /* v may go once its root replaces it below */
  lm = v->lm;
  gen = v->gen;
  root = v;
  lua_settop(L, 1);
  if (!v->subs) {                         /* a sub-view: kept by its root */
    if (lua_getiuservalue(L, 1, 1) != LUA_TUSERDATA)
      return luaL_error(L, "sub-view without its root");
    root = (lview *)lua_touserdata(L, 2);
    lua_replace(L, 1);
  }
  key = reinterpret_key(l.off - root->l.off, dt);
  push_subs(L, 1);
  if (lua_rawgeti(L, 2, key) == LUA_TUSERDATA) {
    nv = (lview *)lua_touserdata(L, -1);
    if (nv->n == n) return 1;
  }
  lua_pop(L, 1);
  lua_getiuservalue(L, 1, 1);
  nv = lsl_newview(L, -1, lm, &l, n);
  nv->gen = gen;
  nv->l.dtype = dt;
  lua_pushvalue(L, -1);
  lua_rawseti(L, 2, key);
  if (root == v) keep_last(L, 1, root, key);   /* its own: the key names n */
  return 1;
}

/* q:quant_int8(src, scale): host reference of the INT8 dispatch
** quantisation of one token (sl_quant_int8): q int8 (n), src fp16, bf16
** or fp32 (n), scale fp32 (1); on every PE of q */
static int v_quant_int8(lua_State *L) {
  lview *q = lsl_checkview(L, 1), *s = lsl_checkview(L, 2), *sc = lsl_checkview(L, 3);
  int first, npes = view_pes(L, q, &first), sfirst, snpes = view_pes(L, s, &sfirst), k;
  int cfirst, cnpes = view_pes(L, sc, &cfirst);
  if (q->l.dtype != SL_INT8) return luaL_argerror(L, 1, "int8 view expected");
  if (!sl_dtype_isfloat(s->l.dtype)) return luaL_argerror(L, 2, "fp16, bf16 or fp32 view expected");
  if (sc->l.dtype != SL_FP32 || sc->n < 1) return luaL_argerror(L, 3, "fp32 view expected");
  if (q->n != s->n || q->n < 1) return luaL_argerror(L, 2, "size mismatch");
  if ((snpes != npes && snpes != 1) || cnpes != npes) return luaL_argerror(L, 2, "PE sets differ");
  for (k = 0; k < npes; k++) {
    uint8_t *qp = lsl_view_ptr(L, q, first + k, q->n, 1);
    const uint8_t *sp;
    uint8_t *cp = lsl_view_ptr(L, sc, cfirst + k, 1, 1);
    float scale;
    if (qp == NULL || cp == NULL) continue;
    sp = lsl_view_ptr(L, s, snpes == 1 ? sfirst : sfirst + k, s->n, 0);
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
  v = lsl_checkanyview(L, 1);
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
    case 3: lua_pushinteger(L, (lua_Integer)((v->l.off) / lsl_esize(v))); break;
    case 4: lua_pushinteger(L, (lua_Integer)sl_nbytes(v->n, lsl_esize(v))); break;
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
  lua_pushinteger(L, (lua_Integer)lsl_checkview(L, 1)->n);
  return 1;
}

/* __tostring of a view */
static int v_tostring(lua_State *L) {
  lview *v = lsl_checkanyview(L, 1);
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
    lua_pushfstring(L, ") +%I", (lua_Integer)(v->l.off / lsl_esize(v)));
    lua_concat(L, 3);
  }
  return 1;
}

/* a view's methods (reinterpret a placeholder: its closure is set by lsl_open_view) */
static const luaL_Reg view_methods[] = {
  {"sub", v_sub}, {"on", v_on}, {"fill", v_fill}, {"read", v_read},
  {"raw", v_bytes}, {"checksum", v_checksum}, {"compare", v_compare},
  {"copy", v_copy}, {"reinterpret", NULL}, {"quant_int8", v_quant_int8},
  {NULL, NULL}
};

/* make the views' metatable: __index finds a field or a method (two
** upvalues: the methods, the fields' numbers), __len and __tostring */
void lsl_open_view(lua_State *L) {
  int i;
  luaL_newmetatable(L, VIEW_MT);
  luaL_newlib(L, view_methods);
  lua_newtable(L);                        /* reinterpret's names seen, kept */
  lua_pushcclosure(L, v_reinterpret, 1);
  lua_setfield(L, -2, "reinterpret");
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
  luaL_newmetatable(L, SUBS_MT);          /* a view's sub-views: weak values */
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_pop(L, 1);
}
