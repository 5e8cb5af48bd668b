/* ag_util.c - error reporting and growable-array support shared by the engine. */
#include "ag_util.h"

#include <stdio.h>
#include <time.h>

int ag_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int ag_cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

double ag_now(void) {
  struct timespec ts;
  if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0.0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ag_status ag_check_deadline(double deadline, ag_error *err) {
  if (deadline > 0 && ag_now() > deadline)
    return ag_fail(err, AG_ERR_TIMEOUT, -1, "the token mask ran past its time budget");
  return AG_OK;
}

ag_status ag_fail(ag_error *err, ag_status status, int32_t rule, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = (int)status;
    err->rule = rule;
  }
  return status;
}

bool ag_grow(void **data, size_t *cap, size_t need, size_t elem_size) {
  if (need <= *cap) return true;
  size_t cap2 = *cap ? *cap : 8;
  while (cap2 < need) {
    if (cap2 > SIZE_MAX / 2) return false;
    cap2 *= 2;
  }
  if (cap2 > SIZE_MAX / elem_size) return false;
  void *p = realloc(*data, cap2 * elem_size);
  if (!p) return false;
  *data = p;
  *cap = cap2;
  return true;
}
