/*
** test_pool.c -- the engine's 64-byte aligned record pools (core/sim.c,
** sli_pool_grow64): pools of the engine's record sizes (32-byte ops, 64-byte
** marks, 128-byte events, 2560-byte blocks) doubled from 256 records past
** several huge-page doublings, two of them at once so that one's growth
** finds the range after it taken (where the pool is a mapping, it moves,
** elsewhere it grows in place). After every doubling each record written so
** far must hold its bytes, the start must stay 64-byte aligned, and a pool
** of SLI_HUGE_PAGE bytes or more must start on a huge page where it is a
** mapping of its own (mapped: whole huge pages, at least the pool's bytes).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

#include "check.h"

typedef struct pool {
  sl_poolmem pm;
  uint8_t *items;
  int32_t n, cap;
  size_t sz;
} pool;

/* the byte at offset j of record i of a pool with tag t */
static uint8_t pattern(int t, int32_t i, size_t j) {
  return (uint8_t)((uint32_t)i * 2654435761u >> 13 ^ (uint32_t)j * 31u ^ (uint32_t)t);
}

/* write record i of pool p (tag t) */
static void put(pool *p, int t, int32_t i) {
  size_t j;
  for (j = 0; j < p->sz; j++) p->items[(size_t)i * p->sz + j] = pattern(t, i, j);
}

/* do records 0..n-1 of pool p (tag t) hold their bytes? (their first and
** last bytes and one in between: every record, cheaply) */
static int intact(const pool *p, int t) {
  int32_t i;
  for (i = 0; i < p->n; i++) {
    const uint8_t *r = p->items + (size_t)i * p->sz;
    size_t mid = (size_t)i % p->sz;
    if (r[0] != pattern(t, i, 0) || r[mid] != pattern(t, i, mid) ||
        r[p->sz - 1] != pattern(t, i, p->sz - 1)) return 0;
  }
  return 1;
}

/* double pool p (tag t) and check it after the growth */
static void grow(pool *p, int t) {
  int32_t cap = p->cap ? p->cap * 2 : 256;
  size_t bytes = (size_t)cap * p->sz;
  CHECK(sli_pool_grow64(&p->pm, (void **)&p->items, p->n, cap, p->sz), "grow to %d x %zu",
        cap, p->sz);
  p->cap = cap;
  CHECK(((uintptr_t)p->items & 63) == 0, "%d x %zu: start %p not 64-byte aligned", cap, p->sz,
        (void *)p->items);
  CHECK(intact(p, t), "%d x %zu: records lost in the growth", cap, p->sz);
  if (p->pm.mapped > 0) {
    CHECK(p->pm.mapped >= bytes && p->pm.mapped % SLI_HUGE_PAGE == 0,
          "%d x %zu: mapped %zu", cap, p->sz, p->pm.mapped);
    CHECK(((uintptr_t)p->items & (SLI_HUGE_PAGE - 1)) == 0, "%d x %zu: not on a huge page",
          cap, p->sz);
  }
}

/* fill pools a and b (records of sa and sb bytes) at once, each doubled when
** full, until a holds more than bytes */
static void fill_two(size_t sa, size_t sb, size_t bytes) {
  pool a = { { NULL, 0 }, NULL, 0, 0, sa }, b = { { NULL, 0 }, NULL, 0, 0, sb };
  while ((size_t)a.n * sa <= bytes) {
    if (a.n == a.cap) grow(&a, 1);
    if (b.n == b.cap) grow(&b, 2);
    put(&a, 1, a.n++);
    put(&b, 2, b.n++);
  }
  CHECK(intact(&a, 1) && intact(&b, 2), "%zu / %zu: records lost at the end", sa, sb);
  sli_pool_free64(&a.pm);
  sli_pool_free64(&b.pm);
  CHECK(a.pm.base == NULL && a.pm.mapped == 0, "%zu: freed pool keeps its block", sa);
}

/* a pool grown with nothing to keep (the blocks' pool at a launch), past a
** huge page and again */
static void grow_empty(void) {
  pool p = { { NULL, 0 }, NULL, 0, 0, 2560 };
  int k;
  for (k = 0; k < 6; k++) {
    grow(&p, 3);
    memset(p.items, 0xa5, (size_t)p.cap * p.sz);   /* every byte of the pool is writable */
  }
  sli_pool_free64(&p.pm);
}

int main(void) {
  fill_two(128, 32, 20u << 20);     /* events beside ops: 2, 4, 8, 16, 32 MiB */
  fill_two(64, 2560, 9u << 20);     /* marks beside blocks */
  fill_two(32, 128, 5u << 20);
  grow_empty();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail > 0;
}
