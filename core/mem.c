/*
** mem.c -- GM buffers on every PE, the symmetric heap, host buffers, UB
** storage per core, bounds checks and timed host copies.
*/
#define _DEFAULT_SOURCE         /* MAP_ANONYMOUS beside _POSIX_C_SOURCE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sli.h"

#if defined(__GLIBC__)
#include <malloc.h>
#define SL_HAVE_SBRK 1
#endif

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* name of a memory space */
const char *sl_space_name(int space) {
  switch (space) {
    case SL_SPACE_GM: return "GM";
    case SL_SPACE_SYM: return "symmetric heap";
    case SL_SPACE_HOST: return "host";
    case SL_SPACE_UB: return "UB";
    default: return "?";
  }
}

/* x rounded up to a multiple of align (a power of two) */
static int64_t align_up(int64_t x, int64_t align) { return (x + align - 1) & ~(align - 1); }

/* find a gap of size bytes at a multiple of align in the symmetric heap
** (first fit); -1 when none */
static int64_t heap_find(sl_machine *m, int64_t size, int64_t align, int *at) {
  int64_t start = 0;
  int i;
  for (i = 0; i < m->nsegs; i++) {
    if (m->segs[i].off - start >= size) { *at = i; return start; }
    start = align_up(m->segs[i].off + m->segs[i].size, align);
  }
  if (m->p.sym_heap_bytes - start >= size) { *at = m->nsegs; return start; }
  return -1;
}

/* reserve size bytes of the heap at a multiple of align; the offset or -1 */
static int64_t heap_alloc(sl_machine *m, int64_t size, int64_t align) {
  int at;
  int64_t off = heap_find(m, size, align, &at);
  if (off < 0) return -1;
  if (m->nsegs == m->capsegs) {
    int cap = m->capsegs ? m->capsegs * 2 : 16;
    sl_seg *ns = realloc(m->segs, (size_t)cap * sizeof(*ns));
    if (ns == NULL) return -2;
    m->segs = ns;
    m->capsegs = cap;
  }
  memmove(m->segs + at + 1, m->segs + at,
          (size_t)(m->nsegs - at) * sizeof(*m->segs));
  m->segs[at].off = off;
  m->segs[at].size = size;
  m->nsegs++;
  m->heap_used += size;
  return off;
}

/* give the heap segment at off back */
static void heap_release(sl_machine *m, int64_t off) {
  int i;
  for (i = 0; i < m->nsegs; i++) {
    if (m->segs[i].off == off) {
      m->heap_used -= m->segs[i].size;
      memmove(m->segs + i, m->segs + i + 1,
              (size_t)(m->nsegs - i - 1) * sizeof(*m->segs));
      m->nsegs--;
      return;
    }
  }
}

/* bytes of the symmetric heap in use */
int64_t sl_heap_used(const sl_machine *m) { return m->heap_used; }

/* The C library's heap (its brk region: the Lua state's objects, the core's
** small arrays) in 2 MiB pages where the system offers them (madvise, as
** glibc's tunable glibc.malloc.hugetlb=1 would): a machine of thousands of
** blocks holds 100 MiB and more there, read at random; in 4 KiB pages nearly
** every such read also misses the TLB and each page's first touch is a
** fault. The heap grows by SL_HEAP_PAD at least (M_TOP_PAD), and each time it
** has grown the new part is advised before more than its first page is
** touched: call sl_heap_huge after every allocation that may have grown it
** (cheap while it has not) */
#define SL_HEAP_PAD (32 << 20)
#define HUGE_MASK ((uintptr_t)SLI_HUGE_PAGE - 1)   /* the offset bits in a huge page */

void sl_heap_huge(void) {
#if defined(MADV_HUGEPAGE) && defined(SL_HAVE_SBRK)
  static uintptr_t advised;             /* the heap below this is advised */
  uintptr_t end = (uintptr_t)sbrk(0);
  if (end <= advised || end == (uintptr_t)-1) return;
  if (advised == 0) {                   /* the first call: from here on */
#ifdef M_TOP_PAD
    (void)mallopt(M_TOP_PAD, SL_HEAP_PAD);
#endif
    advised = end;
    return;
  }
  (void)madvise((void *)(advised & ~HUGE_MASK), end - (advised & ~HUGE_MASK),
                MADV_HUGEPAGE);         /* a hint: without it, 4 KiB pages */
  advised = end;
#endif
}

/* ask for huge pages under the whole 2 MiB pages of the block [p, p + n):
** blocks this large are mappings of their own in the C library (above its
** mmap threshold), which the heap's advice does not reach */
void sl_heap_block(void *p, size_t n) {
#if defined(MADV_HUGEPAGE)
  uintptr_t lo = ((uintptr_t)p + HUGE_MASK) & ~HUGE_MASK;
  uintptr_t hi = ((uintptr_t)p + n) & ~HUGE_MASK;
  if (p != NULL && n >= SL_HEAP_BLOCK && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p; (void)n;
#endif
}

/* realloc, the result in huge pages when it is large (sl_heap_block): the
** engine's arrays that grow with the launch (flows, keys, heaps) */
void *sli_realloc(void *p, size_t n) {
  void *q = realloc(p, n);
  sl_heap_block(q, n);
  return q;
}

/* allocate n elements in a space; returns the buffer id or -(status) */
int sl_alloc(sl_machine *m, int space, int dtype, int64_t n, const char *name, int flags) {
  return sl_alloc_sym(m, space, dtype, n, name, flags, 16, 0);
}

/* a buffer of SL_HUGE_WHOLE bytes or more whose copy on one PE holds
** SL_HUGE_COPY or more is mapped in huge pages where the system offers them
** (madvise): an output a collective writes whole faults in 2 MiB at a time,
** 512 times fewer page faults than in 4 KiB pages (at 256 PEs of a data-mode
** allgather a third of the run's CPU time), and its landings, spread over
** every PE's copy, miss the TLB far less (the server relay's window of 124 /
** 252 KiB a PE at 256 / 512 PEs: a quarter of the run's user time). A huge
** page holds the bytes of at most 32 PEs' copies, and a buffer touched in one
** place per PE commits at most all of its bytes (what runner.memory_need
** counts anyway) */
#define SL_HUGE_WHOLE ((int64_t)64 << 20)
#define SL_HUGE_COPY ((int64_t)64 << 10)

/* A buffer of SL_PAGED_WHOLE bytes or more that is not a mapping of its own
** starts on a page of its calloc: calloc placed it 16 bytes past the buffer
** before it modulo 4096 (consecutive blocks of the heap), and a copy from one
** to the other had its destination 16 bytes past its source, where a CPU takes
** each load for one of the stores just issued (4K aliasing: memcpy of 1 MiB at
** 2/3 of its speed on a Xeon), and where a buffer fell hung on the heap's
** history. Now every such buffer's copies start at one offset of a page (0),
** whatever ran before; the heap's memory is reused as before (no fresh pages) */
#define SL_PAGED_WHOLE ((int64_t)256 << 10)
#define SL_PAGE ((uintptr_t)4096)

/* the zeroed bytes of a buffer that is not a mapping of its own; *lead: their
** offset in the calloc (sli_buf_data_free frees from there) */
static uint8_t *buf_data_calloc(int64_t copies, int64_t bytes, int32_t *lead) {
  uint8_t *p;
  *lead = 0;
  if (copies > INT64_MAX / bytes || copies * bytes < SL_PAGED_WHOLE)
    return calloc((size_t)copies, (size_t)bytes);
  if ((p = calloc(1, (size_t)(copies * bytes) + SL_PAGE)) == NULL) return NULL;
  *lead = (int32_t)((SL_PAGE - ((uintptr_t)p & (SL_PAGE - 1))) & (SL_PAGE - 1));
  return p + *lead;
}

/* a private anonymous mapping of size bytes that starts on a huge page
** (mapped with a huge page more, its lead and tail given back), readable and
** writable and advised in huge pages when rw (a hint: refused, 4 KiB pages),
** else a reservation that no access may touch; NULL when out of memory or
** where there is no anonymous mapping */
void *sli_huge_map(size_t size, int rw) {
#ifdef MAP_ANONYMOUS
  size_t len = size + SLI_HUGE_PAGE, lead;
  uint8_t *p = mmap(NULL, len, rw ? PROT_READ | PROT_WRITE : PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  lead = (SLI_HUGE_PAGE - ((uintptr_t)p & HUGE_MASK)) & HUGE_MASK;
  if (lead > 0) munmap(p, lead);
  munmap(p + lead + size, len - lead - size);   /* len - lead >= size + 1 page */
  p += lead;
#ifdef MADV_HUGEPAGE
  if (rw) (void)madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
#else
  (void)size; (void)rw;
  return NULL;
#endif
}

/* zeroed bytes of copies x bytes for buffer b: b->mapped is their size when
** they are a mapping of their own (sli_buf_data_free unmaps them), else 0
** and b->lead their offset in their calloc */
static uint8_t *buf_data_new(int64_t copies, int64_t bytes, sl_buf *b) {
  size_t *mapped = &b->mapped;
  *mapped = 0;
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
  if (bytes >= SL_HUGE_COPY && copies <= INT64_MAX / bytes && copies * bytes >= SL_HUGE_WHOLE) {
    size_t size = (size_t)copies * (size_t)bytes;
    uint8_t *p = sli_huge_map(size, 1);
    if (p != NULL) {
      *mapped = size;
      return p;
    }
  }
#endif
  return buf_data_calloc(copies, bytes, &b->lead);
}

/* release the bytes of buffer b (NULL: none) */
void sli_buf_data_free(sl_buf *b) {
#ifdef MAP_ANONYMOUS
  if (b->mapped > 0 && b->data != NULL) {
    munmap(b->data, b->mapped);
    b->data = NULL;
    b->mapped = 0;
    return;
  }
#endif
  if (b->data != NULL) free(b->data - b->lead);
  b->data = NULL;
  b->lead = 0;
}

/* aclshmem_align / aclshmem_calloc: symmetric buffers at a multiple of
** align bytes of the heap (a power of two), zeroed (all are) and, with
** zeroed, initialised for initcheck; other spaces ignore align */
int sl_alloc_sym(sl_machine *m, int space, int dtype, int64_t n, const char *name,
                 int flags, int64_t align, int zeroed) {
  sl_buf *b;
  int64_t bytes, copies, sym_off = 0;
  if (dtype < 0 || dtype >= SL_NDTYPES)
    return -sli_err(m, SL_EARG, 1, "unknown dtype");
  if (n <= 0) return -sli_err(m, SL_EARG, 2, "size must be positive");
  if (n > ((int64_t)1 << 40) / (int64_t)sl_dtype_size((sl_dtype)dtype))
    return -sli_err(m, SL_EARG, 2, "size too large: %lld elements",
                    (long long)n);
  bytes = n * (int64_t)sl_dtype_size((sl_dtype)dtype);
  copies = space == SL_SPACE_HOST ? 1 : m->p.n_pes;
  if (align < 16 || (align & (align - 1)) != 0 || align > ((int64_t)1 << 40))
    return -sli_err(m, SL_EARG, 1, "alignment must be a power of two up to 2^40, got %lld",
                    (long long)align);
  if (space == SL_SPACE_SYM) {
    int64_t rounded = (bytes + 15) & ~(int64_t)15;
    sym_off = heap_alloc(m, rounded, align);
    if (sym_off == -2) return -sli_err(m, SL_ENOMEM, 0, "not enough memory");
    if (sym_off < 0)
      return -sli_err(m, SL_EHEAP, 2,
          "symmetric heap exhausted: %lld bytes asked, %lld of %lld in use "
          "(machine option sym_heap_bytes)", (long long)rounded,
          (long long)m->heap_used, (long long)m->p.sym_heap_bytes);
  }
  if (m->nbufs == m->capbufs) {
    int cap = m->capbufs ? m->capbufs * 2 : 16;
    sl_buf *nb = realloc(m->bufs, (size_t)cap * sizeof(*nb));
    if (nb == NULL) goto nomem;
    m->bufs = nb;
    m->capbufs = cap;
  }
  b = &m->bufs[m->nbufs];
  memset(b, 0, sizeof(*b));
  if (!m->p.timing_only || (flags & SL_ALLOC_BACKED)) {
    b->data = buf_data_new(copies, bytes, b);
    if (b->data == NULL) goto nomem;
  }
  if ((m->p.check & SL_CHECK_INIT) && space != SL_SPACE_HOST) {
    b->init = sli_bmap_new(copies * bytes);
    if (b->init == NULL) { sli_buf_data_free(b); goto nomem; }
  }
  b->space = space;
  b->dtype = dtype;
  b->n = n;
  b->bytes = bytes;
  b->stride = space == SL_SPACE_HOST ? 0 : bytes;
  b->sym_off = sym_off;
  b->waiters = 0;
  b->wait_heads = NULL;
  if (name != NULL && name[0] != '\0')
    snprintf(b->name, sizeof(b->name), "%s", name);
  else
    snprintf(b->name, sizeof(b->name), "%s#%d",
             space == SL_SPACE_SYM ? "sym" : space == SL_SPACE_HOST ? "host"
             : "gm", m->nbufs);
  if (zeroed && b->init != NULL) {       /* calloc: written, for initcheck */
    sl_addr a;
    memset(&a, 0, sizeof(a));
    a.buf = m->nbufs;
    for (a.pe = 0; a.pe < (int32_t)copies; a.pe++) sli_init_write(m, &a, bytes);
  }
  return m->nbufs++;
nomem:
  if (space == SL_SPACE_SYM) heap_release(m, sym_off);
  return -sli_err(m, SL_ENOMEM, 0, "not enough memory for %lld bytes",
                  (long long)(bytes * copies));
}

/* free a symmetric buffer (its id stays, marked freed) */
int sl_free(sl_machine *m, int id) {
  sl_buf *b;
  if (id < 0 || id >= m->nbufs) return sli_err(m, SL_EARG, 1, "no such buffer");
  b = &m->bufs[id];
  if (b->freed) return sli_err(m, SL_EFREED, 1, "buffer '%s' freed twice", b->name);
  if (m->running) return sli_err(m, SL_ESTATE, 1, "cannot free during a launch");
  if (b->space == SL_SPACE_SYM) heap_release(m, b->sym_off);
  sli_buf_data_free(b);
  sli_bmap_free(b->init);
  free(b->wait_heads);
  b->wait_heads = NULL;
  b->data = NULL;
  b->init = NULL;
  b->freed = 1;
  return SL_OK;
}

/* free the buffer a view of bytes at l spans; a sub-view is refused (it would
** free the whole buffer under views of its other parts) */
int sl_free_view(sl_machine *m, const sl_loc *l, int64_t bytes) {
  const sl_buf *b = sl_getbuf(m, l->buf);
  if (b == NULL || b->freed) return sl_free(m, l->buf);
  if (l->off != 0 || bytes != b->bytes)
    return sli_err(m, SL_EARG, 1, "a sub-view (byte offset %lld, %lld of %lld bytes) of "
                   "buffer '%s': free the buffer itself", (long long)l->off,
                   (long long)bytes, (long long)b->bytes, b->name);
  if (l->pe >= 0 && b->space != SL_SPACE_HOST)
    return sli_err(m, SL_EARG, 1, "a view of PE %d's copy of buffer '%s' (freeing it would "
                   "free every PE's): free the buffer itself", (int)l->pe, b->name);
  if (l->dtype != b->dtype)
    return sli_err(m, SL_EARG, 1, "a view as %s of buffer '%s' (%s): free the buffer itself",
                   sl_dtype_name((sl_dtype)l->dtype), b->name,
                   sl_dtype_name((sl_dtype)b->dtype));
  return sl_free(m, l->buf);
}

/* buffer record */
const sl_buf *sl_getbuf(const sl_machine *m, int id) {
  return (id >= 0 && id < m->nbufs) ? &m->bufs[id] : NULL;
}

/* a zeroed region of size bytes whose pages are backed only when first
** touched (an anonymous mapping; calloc where there is none); NULL when out
** of memory */
static uint8_t *region_new(size_t size) {
#ifdef MAP_ANONYMOUS
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : (uint8_t *)p;
#else
  return calloc(1, size);
#endif
}

/* bytes of the data-mode UB region: ub_bytes for every (pe, core) */
static size_t ub_region_size(const sl_machine *m) {
  return (size_t)m->p.n_pes * (size_t)m->p.cores * (size_t)m->p.ub_bytes;
}

/* release the data-mode UB region (the machine is freed) */
void sli_ub_free(sl_machine *m) {
  if (m->ubregion == NULL) return;
#ifdef MAP_ANONYMOUS
  munmap(m->ubregion, ub_region_size(m));
#else
  free(m->ubregion);
#endif
  m->ubregion = NULL;
}

/* the UB bytes of (pe, core) reach top: in data mode each core's UB is its
** slot of one region made at the first UB allocation and never zero-filled
** (a page is backed when a copy or a store first touches it, so a 190 KiB
** staging buffer that moves 4 KiB costs a page); timing-only keeps a small
** arena of the backed allocations, grown here */
static int ub_grow(sl_machine *m, size_t i, int64_t top) {
  uint8_t *nu;
  if (m->ubmap == NULL) {
    if (m->ubregion == NULL && (m->ubregion = region_new(ub_region_size(m))) == NULL)
      return SL_ENOMEM;
    m->ub[i] = m->ubregion + i * (size_t)m->p.ub_bytes;
    return SL_OK;
  }
  if ((nu = realloc(m->ub[i], (size_t)top)) == NULL) return SL_ENOMEM;
  memset(nu + m->ubcap[i], 0, (size_t)(top - m->ubcap[i]));
  m->ub[i] = nu;
  return SL_OK;
}

/* grow the UB storage of (pe, core) to top bytes */
int sli_ub_reserve(sl_machine *m, int pe, int core, int64_t top) {
  size_t i = (size_t)pe * (size_t)m->p.cores + (size_t)core;
  if (top > m->ubcap[i]) {
    if (ub_grow(m, i, top) != SL_OK) return SL_ENOMEM;
    if (m->ubinit) {
      if (m->ubinit[i] == NULL) m->ubinit[i] = sli_bmap_new(top);
      if (m->ubinit[i] == NULL || sli_bmap_grow(m->ubinit[i], top) != SL_OK)
        return SL_ENOMEM;
    }
    m->ubcap[i] = top;
  }
  return SL_OK;
}

/* timing-only: back the UB allocation of bytes at base of (pe, core) in its
** arena of backed bytes (the map restarts with every launch) */
int sli_ub_back(sl_machine *m, int pe, int core, int64_t base, int64_t bytes) {
  size_t i = (size_t)pe * (size_t)m->p.cores + (size_t)core;
  sl_ubmap *u = &m->ubmap[i];
  if (u->gen != m->gen) { u->gen = m->gen; u->n = 0; u->top = 0; u->sorted = 1; }
  u->gap_lo = u->gap_hi = 0;            /* the ranges change */
  if (u->n == u->cap) {
    int cap = u->cap ? 2 * u->cap : 4;
    sl_ubrange *nr = realloc(u->r, (size_t)cap * sizeof(*nr));
    if (nr == NULL) return SL_ENOMEM;
    u->r = nr;
    u->cap = cap;
  }
  if (sli_ub_reserve(m, pe, core, u->top + bytes) != SL_OK) return SL_ENOMEM;
  if (u->n > 0 && base < u->r[u->n - 1].base + u->r[u->n - 1].bytes) u->sorted = 0;
  u->r[u->n].base = base;
  u->r[u->n].bytes = bytes;
  u->r[u->n].at = u->top;
  u->n++;
  u->top += bytes;
  return SL_OK;
}

/* the bytes between the ranges of u (sorted) around off, which holds none */
static void ub_gap(sl_ubmap *u, int64_t off) {
  int k = 0;
  while (k < u->n && u->r[k].base <= off) k++;
  u->gap_lo = k > 0 ? u->r[k - 1].base + u->r[k - 1].bytes : 0;
  u->gap_hi = k < u->n ? u->r[k].base : INT64_MAX;
}

/* timing-only: the backed bytes of a UB address, or NULL: the first range
** holding it, looked for in order (a block's few buffers, the ones it
** allocated first first) unless it lies in the gap found last */
uint8_t *sli_ub_backed(sl_machine *m, const sl_addr *a) {
  size_t i = (size_t)a->pe * (size_t)m->p.cores + (size_t)a->core;
  sl_ubmap *u = &m->ubmap[i];
  const sl_ubrange *r = u->r;
  int k;
  if (u->gen != m->gen) return NULL;
  if ((uint64_t)(a->off - u->gap_lo) < (uint64_t)(u->gap_hi - u->gap_lo)) return NULL;
  for (k = 0; k < u->n; k++)            /* base <= off < base + bytes, in one test */
    if ((uint64_t)(a->off - r[k].base) < (uint64_t)r[k].bytes)
      return m->ub[i] + r[k].at + (a->off - r[k].base);
  if (u->sorted) ub_gap(u, a->off);
  return NULL;
}

/* the bytes of a's first `bytes` bytes (UB) when sli_ptr would give each of
** them at one offset from the first (one range holds them all, no earlier
** range nor the map's last gap overlaps them: sli_ub_backed's answer for each
** byte), else NULL */
uint8_t *sli_ub_run(sl_machine *m, const sl_addr *a, int64_t bytes) {
  size_t i = (size_t)a->pe * (size_t)m->p.cores + (size_t)a->core;
  const sl_ubmap *u;
  int k, j;
  if (m->ubmap == NULL) return sli_ptr(m, a);   /* one linear arena */
  u = &m->ubmap[i];
  if (u->gen != m->gen || u->gap_lo > u->gap_hi
      || (a->off < u->gap_hi && u->gap_lo < a->off + bytes)) return NULL;
  for (k = 0; k < u->n; k++)
    if ((uint64_t)(a->off - u->r[k].base) < (uint64_t)u->r[k].bytes) break;
  if (k == u->n || a->off + bytes > u->r[k].base + u->r[k].bytes) return NULL;
  for (j = 0; j < k; j++)
    if (u->r[j].base < a->off + bytes && a->off < u->r[j].base + u->r[j].bytes) return NULL;
  return m->ub[i] + u->r[k].at + (a->off - u->r[k].base);
}

/* name of the memory a location lies in */
static void loc_name(const sl_machine *m, const sl_loc *l, char *out,
                     size_t size) {
  if (l->buf < 0)
    snprintf(out, size, "UB of PE %d core %d", (int)l->pe, (int)l->core);
  else {
    const sl_buf *b = &m->bufs[l->buf];
    snprintf(out, size, "%s buffer '%s' on PE %d", sl_space_name(b->space),
             b->name, b->space == SL_SPACE_HOST ? 0 : (int)l->pe);
  }
}

/* check that [off, off+bytes) lies inside the allocation of l */
int sli_bounds_check(sl_machine *m, const sl_loc *l, int64_t bytes, int write,
                     const char *what, int arg, int by_pe, int by_block) {
  char where[96];
  if (l->buf >= 0) {
    const sl_buf *b;
    if (l->buf >= m->nbufs) return sli_err(m, SL_EARG, arg, "no such buffer");
    b = &m->bufs[l->buf];
    if (b->freed) {
      if ((m->p.check & SL_CHECK_MEM) && m->running && by_pe >= 0)
        return sli_report(m, SL_R_FREED, l, bytes, write, m->cur, -1, what);
      return sli_err(m, SL_EFREED, arg,
          "%s of freed buffer '%s' (PE %d block %d)", what, b->name, by_pe,
          by_block);
    }
    if (b->space != SL_SPACE_HOST && (l->pe < 0 || l->pe >= m->p.n_pes))
      return sli_err(m, SL_EARG, arg, "PE %d out of range", (int)l->pe);
  }
  if (bytes < 0 || l->off < 0 || l->off > l->cap || bytes > l->cap - l->off) {
    if ((m->p.check & SL_CHECK_MEM) && m->running && by_pe >= 0 && bytes >= 0)
      return sli_report(m, SL_R_OOB, l, bytes, write, m->cur, -1, what);
    char by[48];
    loc_name(m, l, where, sizeof(where));
    if (by_pe < 0) snprintf(by, sizeof(by), "by the host");
    else snprintf(by, sizeof(by), "by PE %d block %d", by_pe, by_block);
    return sli_err(m, SL_EOOB, arg,
        "out of bounds: %s %s of %lld bytes at byte offset %lld of %s "
        "(%lld bytes) %s", write ? "write" : "read", what,
        (long long)bytes, (long long)l->off, where, (long long)l->cap, by);
  }
  return SL_OK;
}

/* checked host pointer to bytes at l (see sl.h: unbacked buffers) */
int sl_host_ptr(sl_machine *m, const sl_loc *l, int64_t bytes, int write, uint8_t **p) {
  sl_addr a;
  int st;
  *p = NULL;
  if (l->buf < 0) return sli_err(m, SL_EARG, 1, "UB is not reachable from the host");
  if ((st = sli_bounds(m, l, bytes, write, "host access", 1, -1, -1)) != SL_OK) return st;
  sli_addr(l, &a);
  *p = sli_ptr(m, &a);
  if (write) sli_gm_written(m, &a);     /* the host writes what it asked to */
  if (*p == NULL && !write)
    return sli_err(m, SL_EUNBACKED, 1, "buffer '%s' has no data in a timing-only run "
                   "(lab.machine{data = false}, --timing-only): only buffers allocated "
                   "\"backed\" can be read", m->bufs[l->buf].name);
  return SL_OK;
}

/* host<->device copy (aclrtMemcpy): moves bytes now, advances the clock */
int sl_memcpy(sl_machine *m, const sl_loc *dst, const sl_loc *src,
              int64_t bytes, double *cost_us) {
  uint8_t *d, *s;
  int st;
  if (m->running) return sli_err(m, SL_ESTATE, 0, "memcpy during a launch");
  if (bytes <= 0) return sli_err(m, SL_EARG, 3, "size must be positive");
  if ((st = sli_bounds(m, dst, bytes, 1, "memcpy", 1, -1, -1)) != SL_OK) return st;
  if ((st = sli_bounds(m, src, bytes, 0, "memcpy", 2, -1, -1)) != SL_OK) return st;
  if ((st = sl_host_ptr(m, dst, bytes, 1, &d)) != SL_OK) return st;
  if (d != NULL) {                      /* an unbacked destination takes nothing */
    if ((st = sl_host_ptr(m, src, bytes, 0, &s)) != SL_OK) return st;
    memmove(d, s, (size_t)bytes);
  }
  *cost_us = m->p.host_setup_us + (double)bytes / (m->p.host_GBps * 1e3);
  m->now += sli_ps(*cost_us * 1000.0);
  return SL_OK;
}
