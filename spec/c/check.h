/*
** check.h -- the CHECK macro and pass/fail counts of the C tests in spec/c/
** (each test prints "N passed, N failed" last and exits 1 on any failure).
*/
#ifndef SPEC_C_CHECK_H
#define SPEC_C_CHECK_H

#include <stdio.h>

static int npass, nfail;

#define CHECK(c, ...) do { \
    if (c) npass++; \
    else { \
      nfail++; \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__); \
      printf("\n"); \
    } \
  } while (0)

#endif
